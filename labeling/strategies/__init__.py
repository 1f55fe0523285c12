"""Pairwise top-k strategies: what a top-k session asks, question by question.

``base`` holds what they share (``Compare``, ``Winner``, ``ComparisonGenerator`` and the
``PairStrategy`` protocol); ``registry`` names the strategies and modifiers a task may choose;
``heap`` (Algorithm 1 of Niu et al., SIGIR 2012), ``tournament``, ``insertion`` and
``prior_tournament`` are the strategies; ``robust`` is a modifier that knows a strategy only
through ``PairStrategy``.
"""
