"""Pure numpy learning-to-rank: data IO, metrics, losses, models, trainers, experiments.

Imports neither FastAPI nor SQLAlchemy (docs/architecture.md).
"""
