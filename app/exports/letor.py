"""The LETOR formats (``letor``, ``svmlight`` and LightGBM's ``group`` file): labels with the
documents' feature vectors, written by the ranking core's writer so that they read back with
:func:`ranking.io.letor.read_letor`."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from app.exports import repository
from app.exports.lines import refuse_ids, stream_file, unsafe_in_columns
from app.exports.parquet import letor_schema, parquet_stream
from app.exports.selection import Selection, query_labels
from app.kernel.db import Database
from app.kernel.errors import Invalid
from ranking.io.letor import LetorData, write_letor
from ranking.padding import offsets_from_sizes


def _letor_qid_problem(qid: str) -> str | None:
    if unsafe_in_columns(qid):
        return "query id with whitespace or empty"
    if ":" in qid or "#" in qid:
        return "query id with ':' or '#' (qid:Q ends at the first of them)"
    return None


def _letor_rows(db: Database, req: Selection, *, check_ids: bool = True) -> tuple[Any, list[int]]:
    """Collect labels and feature vectors into a :class:`ranking.io.letor.LetorData` (checked:
    ids unless not ``check_ids``, missing features, widths) and the rows per query."""
    labels: list[float] = []
    qids: list[str] = []
    docids: list[str] = []
    feats: list[list[float]] = []
    sizes: list[int] = []
    missing: list[str] = []
    bad: dict[str, str] = {}
    width: int | None = None
    with db.read() as s:
        for ql in query_labels(s, req):
            docs = repository.query_features(s, req.collection_id, ql.query_id)
            problem = _letor_qid_problem(ql.query_id)
            if problem:
                bad.setdefault(ql.query_id, problem)
            count = 0
            for doc_id, label in ql.labels.items():
                if unsafe_in_columns(doc_id):
                    # "docid = D" in the row's comment: D ends at the first whitespace.
                    bad.setdefault(doc_id, "document id with whitespace or empty")
                vector = docs.get(doc_id)
                if vector is None:
                    if req.missing_features == "error":
                        missing.append(f"{ql.query_id}/{doc_id}")
                        continue
                    if req.missing_features == "skip":
                        continue
                    vector = []
                if width is None and vector:
                    width = len(vector)
                labels.append(float(label))
                qids.append(ql.query_id)
                docids.append(doc_id)
                feats.append(list(vector))
                count += 1
            if count:
                sizes.append(count)
    if check_ids:
        refuse_ids(req.format, bad)
    if missing:
        raise Invalid(
            f"{len(missing)} labelled document(s) have no feature vector (attach a LETOR file, "
            f"or use missing_features=skip|zero): {', '.join(missing[:10])}"
        )
    width = width or 0
    matrix = np.zeros((len(labels), width), dtype=np.float64)
    for i, vector in enumerate(feats):
        if vector:
            if len(vector) != width:
                raise Invalid(
                    f"document {docids[i]} of query {qids[i]} has {len(vector)} features, "
                    f"others have {width}"
                )
            matrix[i] = vector
    data = LetorData(
        labels=np.asarray(labels, dtype=np.float64),
        qids=np.asarray(qids, dtype=str),
        features=matrix,
        offsets=offsets_from_sizes(np.asarray(sizes, dtype=np.int64)),
        comments=np.asarray([f"docid = {d}" for d in docids], dtype=str),
        docids=np.asarray(docids, dtype=str),
        sparse=False,
    )
    return data, sizes


def write_letor_file(db: Database, req: Selection) -> Iterator[bytes]:
    """Write with the ranking writer (so it reads back with :func:`ranking.io.letor.read_letor`)
    into a temporary file that is streamed and deleted."""
    data, _ = _letor_rows(db, req)
    fd, name = tempfile.mkstemp(prefix="heapjudge-export-", suffix=".txt")
    os.close(fd)
    path = Path(name)
    try:
        if data.n_rows:
            write_letor(path, data, sparse=False, write_qid=req.format == "letor")
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return stream_file(path)


def write_group(db: Database, req: Selection) -> Iterator[bytes]:
    """Rows per query, one number per line, in the order of the svmlight export."""
    _, sizes = _letor_rows(db, req)
    return iter([("".join(f"{n}\n" for n in sizes)).encode()])


def write_letor_parquet(db: Database, req: Selection) -> Iterator[bytes]:
    """The letor rows as Parquet (:func:`app.exports.parquet.letor_schema`): one row per
    labelled document with its feature vector; any id fits."""
    data, _ = _letor_rows(db, req, check_ids=False)

    def rows() -> Iterator[dict[str, Any]]:
        for i in range(data.n_rows):
            yield {
                "label": int(data.labels[i]),
                "query_id": str(data.qids[i]),
                "doc_id": str(data.docids[i]),
                "features": data.features[i].tolist(),
            }

    return parquet_stream(letor_schema(), rows())
