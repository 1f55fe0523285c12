"""What a training run learns from (docs/training.md#truth): the collection's imported grades
with feature vectors, the finished top-k tasks' results (the qrels export's choice of task per
query, :func:`app.exports.service.sources`), or both; and the folds over it (LETOR's own
partitions, or seeded k-fold by query).

The ranking core is imported inside the functions that train: it loads in the worker only, not
in the web process that imports this module through the training use cases."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from app.exports.service import sources
from app.judging.loop import replay_task
from app.judging.repository import live_judgments
from app.kernel.db import Database
from app.kernel.errors import Invalid
from app.training import repository


def _study_truth(db: Database, collection_id: int) -> tuple[dict[str, Any], set[int]]:
    """Per query with a finished top-k task: ``(top, rest)``; and the k values used."""
    truth: dict[str, tuple[list[str], list[str]]] = {}
    ks: set[int] = set()
    with db.read() as s:
        for src in sources(db=db, collection_id=collection_id, method="topk"):
            task = repository.task_by_id(s, src.task_id)
            assert task is not None
            result = replay_task(task, live_judgments(s, task.id)).result()
            truth[src.query_id] = (list(result.top), list(result.rest))
            ks.add(result.k)
    return truth, ks


def _documents(db: Database, collection_id: int) -> dict[str, dict[str, Any]]:
    """Per query (external id): description and ``{doc: (features, grade)}``."""
    out: dict[str, dict[str, Any]] = {}
    with db.read() as s:
        rows = repository.documents(s, collection_id)
        for qid, description, doc, features, grade in rows:
            q = out.setdefault(qid, {"description": description, "docs": {}})
            q["docs"][doc] = (features, grade)
    return out


def _graded_dataset(docs: dict[str, dict[str, Any]], qids: Iterable[str]) -> Any:
    """Imported grades with feature vectors as a graded :class:`QueryDataset`."""
    from ranking.data.dataset import QueryDataset

    X, y, q, ids = [], [], [], []
    for qid in qids:
        for doc, (features, grade) in docs[qid]["docs"].items():
            if grade is None:
                continue  # not judged in the import: no truth for it
            if features is None:
                raise Invalid(
                    f"query {qid!r}: document {doc!r} has a grade but no feature vector "
                    "(import documents with 'features', or attach them)"
                )
            X.append(features)
            y.append(grade)
            q.append(qid)
            ids.append(doc)
    if not X:
        raise Invalid("no imported grades with feature vectors to train on")
    widths = {len(x) for x in X}
    if len(widths) != 1:
        raise Invalid(f"feature vectors of different lengths {sorted(widths)}")
    return QueryDataset.from_arrays(X, y, q, ids)


def _load_dataset(db: Database, collection_id: int, opts: dict[str, Any]) -> tuple[Any, int]:
    """The whole collection's truth as one data set, and the top-k k."""
    from ranking.data.dataset import QueryDataset, dataset_from_topk

    docs = _documents(db, collection_id)
    if opts["truth"] == "imported":
        data = _graded_dataset(docs, docs)
        return data, int(opts["k"] or 10)
    study, ks = _study_truth(db, collection_id)
    if len(ks) > 1:
        raise Invalid(f"the finished top-k tasks use different k values {sorted(ks)}")
    if opts["truth"] == "study" and not study:
        raise Invalid("the collection has no finished top-k task to train on")
    k = int(opts["k"] or (next(iter(ks)) if ks else 10))
    if ks and k not in ks:
        raise Invalid(f"k={k} differs from the k={next(iter(ks))} of the finished top-k tasks")
    parts = []
    if study:
        features: dict[str, dict[str, list[float]]] = {}
        for qid, (top, rest) in study.items():
            feats = {d: f for d, (f, _g) in docs[qid]["docs"].items() if f is not None}
            missing = [d for d in (*top, *rest) if d not in feats]
            if missing:
                raise Invalid(
                    f"query {qid!r}: document {missing[0]!r} has no feature vector "
                    "(import documents with 'features')"
                )
            features[qid] = feats
        parts.append(dataset_from_topk(features, study, k=k))
    if opts["truth"] == "both":
        others = [
            q
            for q in docs
            if q not in study and any(g is not None for _f, g in docs[q]["docs"].values())
        ]
        if others:
            parts.append(_graded_dataset(docs, others).to_topk(k, seed=opts["seed"]))
    if not parts:
        raise Invalid("the collection has neither finished top-k tasks nor imported grades")
    return QueryDataset.concat(parts), k


def load_parts(db: Database, collection_id: int, opts: dict[str, Any]) -> tuple[Any, Any, int, str]:
    """Data parts, the fold scheme over them, k, and the scheme's name (``letor``: the
    collection's own LETOR partitions; ``kfold``: seeded k-fold by query)."""
    from labeling.sources import letor_part
    from ranking.data.folds import letor4_folds, ohsumed_folds, rotation_folds
    from ranking.estimators import experiments as E

    data, k = _load_dataset(db, collection_id, opts)
    with db.read() as s:
        descriptions = repository.query_descriptions(s, collection_id)
    qids = [str(q) for q in data.query_ids]
    part_of = {q: letor_part(descriptions.get(q, "")) for q in qids}
    named = all(p is not None for p in part_of.values())
    if opts["folds"] == "letor" and not named:
        bare = next(q for q, p in part_of.items() if p is None)
        raise Invalid(
            f"folds 'letor' needs every query imported from a LETOR partition file "
            f"(S1.txt..S5.txt); query {bare!r} was not"
        )
    if named and opts["folds"] in ("auto", "letor"):
        names = sorted({p for p in part_of.values() if p is not None})
        index = {q: i for i, q in enumerate(qids)}
        parts = {n: data.subset(sorted(index[q] for q in qids if part_of[q] == n)) for n in names}
        if names == ["S1", "S2", "S3", "S4", "S5"]:
            scheme = letor4_folds()
        elif names == [f"Fold{i}_test" for i in range(1, 6)]:
            scheme = ohsumed_folds()
        elif len(names) >= 3:
            scheme = rotation_folds(names)
        else:
            raise Invalid(f"LETOR parts {names} are too few for folds (need 3 or more)")
        return parts, scheme, k, "letor"
    n = opts["folds"] if isinstance(opts["folds"], int) else min(5, data.n_queries)
    if data.n_queries < max(n, 3):
        raise Invalid(
            f"{data.n_queries} queries with truth are too few for {max(n, 3)} folds "
            "(train, validation and test need one query each)"
        )
    try:
        parts = E.kfold_parts(data, n, seed=opts["seed"])
    except ValueError as exc:
        raise Invalid(str(exc)) from None
    return parts, rotation_folds(list(parts)), k, "kfold"
