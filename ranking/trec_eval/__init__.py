"""A drop-in for trec_eval 10.0 (usnistgov/trec_eval): the same measures, flags and output
bytes, computed with numpy over all queries at once (docs/trec-eval.md).

Layout: :mod:`~ranking.trec_eval.readers` (input files, with ``file:line`` errors),
:mod:`~ranking.trec_eval.merge` (trec_eval's ranking rule, one padded row per query),
``m_*`` modules (the measures, by family, with their formulas), :mod:`~ranking.trec_eval.registry`
(names, order, nicknames), :mod:`~ranking.trec_eval.evaluate` (the loop and the output lines),
:mod:`~ranking.trec_eval.cli` (the command line), ``prefs*`` (preference judgments).
"""

from ranking.trec_eval.errors import TrecEvalError

__all__ = ["TrecEvalError"]
