"""Learning-to-rank training runs and their job queue."""
