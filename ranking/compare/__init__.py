"""Comparing systems on per-query metric values (docs/campaigns.md).

* :mod:`ranking.compare.significance`  paired tests, bootstrap intervals, multiple-comparison
  corrections and :func:`~ranking.compare.significance.compare_systems` for every pair;
* :mod:`ranking.compare.correlation`  agreement of two system orderings: Kendall's τ-b, τ_AP
  and significant swaps;
* :mod:`ranking.compare.leaderboard`  several runs scored against one label set.

Rank-biased overlap and compatibility are metrics (:mod:`ranking.metrics.rbo`).

Pure numpy/scipy; imports nothing from the service.
"""
