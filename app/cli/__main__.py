"""``python -m app.cli``: what the ``heapjudge`` script runs (``serve`` starts its training
worker this way)."""

from app.cli import main

main()
