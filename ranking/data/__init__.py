"""Query-grouped learning-to-rank data in memory: :class:`ranking.data.dataset.QueryDataset`
with the paper's truth conversions, and the LETOR cross-validation folds
(:mod:`ranking.data.folds`).
"""
