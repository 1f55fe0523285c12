"""Users and authentication: accounts, passwords, API tokens, web sessions, login throttling."""
