"""The machine judge ``model:<training run id>``: a done training run's model over heapjudge's
text features of its collection (docs/machine-judges.md#judges).

:func:`model_judge` rebuilds the run's fitted model and a
:class:`labeling.machine.features.FeatureExtractor` over the collection's distinct documents
(the one :func:`app.training.features.compute_features` stores vectors from), so the judge
scores a query's documents with the numbers the run was trained on: the features normalised
per query over the whole collection. A run trained on imported (LETOR) vectors cannot judge:
its features cannot be computed for a new query. The extractor is kept per collection and
fingerprint of its documents (row count and highest row id) in a small per-process cache.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from app.kernel.db import Database
from app.kernel.errors import Invalid
from app.machine.judges import trained_model
from app.training import repository
from app.training.features import FEATURE_SET, FEATURE_SET_VERSION, collection_extractor
from labeling.machine.features import FeatureExtractor
from labeling.machine.judges import FeatureModelJudge

#: Collections whose extractor stays in memory (per process).
CACHE_SIZE = 4
_cache: OrderedDict[tuple[Any, ...], FeatureExtractor] = OrderedDict()
_lock = threading.Lock()


def _extractor(s: Any, collection_id: int) -> FeatureExtractor:
    rows, top = repository.row_fingerprint(s, collection_id)
    key = (str(s.get_bind().url), collection_id, rows, top)
    with _lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
            return found
    extractor = collection_extractor(repository.distinct_documents(s, collection_id))
    with _lock:
        _cache[key] = extractor
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return extractor


def model_judge(*, db: Database, run_id: int, scale: float = 1.0) -> FeatureModelJudge:
    """The judge ``model:<run_id>`` (module docstring) over the run's model as
    :func:`app.machine.judges.trained_model` checks and rebuilds it (the one place a training
    run becomes a judge): NotFound, Conflict for a run that is not done, Invalid for one that
    did not train on heapjudge's text features."""
    with db.read() as s:
        trained = trained_model(s, run_id)
        fs = trained.features.get("feature_set") or {}
        if (fs.get("name"), fs.get("version")) != (FEATURE_SET, FEATURE_SET_VERSION):
            raise Invalid(
                f"training run {run_id} did not train on heapjudge's text features "
                f"({FEATURE_SET} v{FEATURE_SET_VERSION}), so it cannot judge a query from its "
                'texts: train a run with options.features = "text"'
            )
        extractor = _extractor(s, trained.collection_id)
    return FeatureModelJudge(extractor, trained.ranker, name=f"model:{run_id}", scale=scale)
