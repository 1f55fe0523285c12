"""Pure numpy learning-to-rank: file formats, metrics, losses, learners, estimators.

- :mod:`ranking.io`: TREC runs and qrels, LETOR files, top-k truth and its κ-labels;
- :mod:`ranking.padding`: flat query-grouped rows <-> padded ``(Q, L)`` arrays (the layout
  every other subpackage uses, so it sits below them all);
- :mod:`ranking.metrics`: the metrics and their conventions (public API in the package);
- :mod:`ranking.evaluate`: a run against qrels or top-k truth (``heapjudge evaluate``);
- :mod:`ranking.data`: :class:`~ranking.data.dataset.QueryDataset` and the LETOR folds;
- :mod:`ranking.losses`: the training losses, one signature, a registry;
- :mod:`ranking.learners`: models, solvers, boosting;
- :mod:`ranking.estimators`: the scikit-learn-style rankers (public API in the package), the
  paper's experimental protocol and its figures.

Imports neither FastAPI nor SQLAlchemy nor labeling (docs/architecture.md).
"""
