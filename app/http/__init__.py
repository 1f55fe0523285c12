"""HTTP plumbing shared by every concept: dependencies, the lean route, error handlers, OpenAPI
error declarations, middleware, the shared wire vocabulary.
"""
