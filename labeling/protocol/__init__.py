"""The judging protocol: what a task asks and what its answers produce.

Questions and answers (``types``), task options (``options``), what the seed decides
(``seeding``), the sessions rebuilt from the judgment log (``session``: ``open_session``;
``topk``: tool T1; ``graded``: tool T2), the pair cache, the ground truth a finished session
yields (``groundtruth``) and the prior orders a task may start from (``prior_orders``).
"""
