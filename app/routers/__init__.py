"""HTTP routers: ``api`` (JSON under /api/v1) and ``web`` (server-rendered pages)."""
