"""Repositories: the SQL of a use case, as named statements over one transaction's cursor."""
