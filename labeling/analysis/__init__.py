"""Analysis of a labeling study: the plain records it reads (``records``), inter-assessor
agreement (``agreement``), each assessor's consistency (``consistency``), time per judgment and
query (``timing``), aggregated labels of several assessors (``aggregate``) and the small exact
statistics they use (``stats``).
"""
