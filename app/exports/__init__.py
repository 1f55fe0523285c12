"""Exports of a collection's judgments (qrels, top-k, pairs)."""
