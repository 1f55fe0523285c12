"""Pure labeling core: judging protocols, ground truth, agreement, assignment, simulation.

Imports neither FastAPI nor SQLAlchemy (docs/architecture.md).
"""
