"""Users: accounts, roles, workloads, password resets, and the login/logout API. Who a caller
is (passwords, tokens, sessions, throttling) is :mod:`app.auth`, below the HTTP package."""
