"""The service's kernel: database and transactions, prepared statements, where a call runs, caches,
domain errors, ORM models, settings. Imports no web framework.
"""
