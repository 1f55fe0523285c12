"""Analysis of a collection's judgments (agreement, study figures)."""
