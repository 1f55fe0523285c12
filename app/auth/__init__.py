"""Who the caller is: passwords, API tokens with their SQL, browser sessions with their CSRF
token, login throttling and the login itself.

Below the HTTP package (its dependencies authenticate through :mod:`app.auth.tokens` and
:mod:`app.auth.sessions`); accounts, their pages and their API are :mod:`app.users`.
Imports no web framework.
"""
