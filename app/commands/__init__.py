"""Sub-commands of the ``heapjudge`` CLI, one module per area.

Each module defines ``register(app: typer.Typer) -> None``. Heavy imports (FastAPI, numpy
models, SQLAlchemy) happen inside the command functions so that ``heapjudge --help`` is fast.
"""
