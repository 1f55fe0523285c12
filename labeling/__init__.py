"""Pure labeling core: judging protocols, strategies, study design, analysis, text and sources.

Imports neither FastAPI nor SQLAlchemy (docs/architecture.md); it may import :mod:`ranking`,
never the reverse. The map:

* ``protocol/`` -- questions and answers, task options, sessions rebuilt from the judgment
  log (``open_session``), the pair cache, the ground truth a session yields, prior orders;
* ``strategies/`` -- the pairwise top-k strategies (heap, tournament, insertion, prior
  tournament), their shared types and ``PairStrategy`` protocol, the registry, the ``robust``
  modifier;
* ``study/`` -- study design: assignment of queries to assessors, pools, simulated assessors;
* ``analysis/`` -- agreement, consistency, timing, aggregation, statistics, over plain records;
* ``retrieval/`` -- text analysis, BM25, highlighting, reflow;
* ``sources/`` -- reading collections, topics, qrels, runs and features from files;
* ``errors`` (the domain errors), ``identifiers`` (the identifier and text rules),
  ``csv_safety`` (CSV formula-injection safety).
"""
