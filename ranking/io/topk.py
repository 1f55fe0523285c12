"""Top-k ground truth: the one truth type :class:`TopKTruth`, its JSON Lines file, and the
one definition of κ-labels (:func:`kappa_labels`).

One JSON object per line and per query, as the service exports it::

    {"query_id": "q7", "k": 10, "top": ["d3", "d9", ...], "rest": ["d1", ...], "assessor": "..."}

* ``top``: the ordered top-k, best first (may be shorter than k when the pool had fewer than
  k documents or items were judged not relevant);
* ``rest``: the unordered remainder F;
* any extra keys (assessor, task id, judgments, ...) are kept in :attr:`TopKTruth.extra`.

κ-labels (Niu et al. 2012 §3.2.1; docs/metrics.md#kappa): y_d = k + 1 − pos(d) for d in
top (pos 1-based), 0 for d in rest. :func:`kappa_labels` is the definition over document ids;
:func:`ranking.data.dataset.kappa_from_rank` is its array form over 0-based truth positions
(``k − rank`` in the top k, else 0), for whole data sets at once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ranking.io.trec import FileFormatError

__all__ = ["TopKFormatError", "TopKTruth", "kappa_labels", "read_topk_jsonl", "write_topk_jsonl"]

_REQUIRED = ("query_id", "k", "top", "rest")


def kappa_labels(top: Sequence[str], rest: Sequence[str], k: int) -> dict[str, int]:
    """κ-labels of a top-k ground truth: y_d = k + 1 − pos(d) for d in ``top`` (pos 1-based,
    best first), 0 for d in ``rest`` (Niu et al. 2012 §3.2.1; docs/metrics.md#kappa).

    ``top`` may be shorter than k (fewer than k documents, or items judged not relevant).
    Raises ValueError for k < 1, more than k documents in ``top``, or a document listed twice.
    """
    if isinstance(k, bool) or int(k) != k or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    if len(top) > k:
        raise ValueError(f"top has {len(top)} documents, more than k={k}")
    labels: dict[str, int] = {}
    for pos, d in enumerate(top, start=1):
        if d in labels:
            raise ValueError(f"document {d!r} appears twice in top")
        labels[d] = k + 1 - pos
    for d in rest:
        if d in labels:
            where = "in both top and rest" if labels[d] > 0 else "twice in rest"
            raise ValueError(f"document {d!r} appears {where}")
        labels[d] = 0
    return labels


class TopKFormatError(FileFormatError):
    """A malformed top-k JSONL file; the message names the file and line."""


@dataclass(frozen=True)
class TopKTruth:
    """The top-k ground truth of one query."""

    query_id: str
    k: int
    top: tuple[str, ...]
    rest: tuple[str, ...]
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Reuse the κ-label validation (duplicates, len(top) <= k, disjointness).
        kappa_labels(self.top, self.rest, self.k)

    def kappa_labels(self) -> dict[str, int]:
        """``{doc: k + 1 − pos}`` for the top, 0 for the rest."""
        return kappa_labels(self.top, self.rest, self.k)

    @property
    def documents(self) -> tuple[str, ...]:
        return self.top + self.rest

    def to_json(self) -> dict[str, Any]:
        obj: dict[str, Any] = {
            "query_id": self.query_id,
            "k": self.k,
            "top": list(self.top),
            "rest": list(self.rest),
        }
        for key, value in self.extra.items():
            obj.setdefault(key, value)
        return obj


def _str_list(value: Any, name: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(d, str) and d for d in value):
        raise ValueError(f'"{name}" must be a list of non-empty strings (document ids)')
    return tuple(value)


def parse_topk_object(obj: Any) -> TopKTruth:
    """Validate one decoded JSON object; raises ValueError saying what is wrong."""
    if not isinstance(obj, dict):
        raise ValueError("each line must be a JSON object")
    missing = [key for key in _REQUIRED if key not in obj]
    if missing:
        raise ValueError(f"missing key(s) {missing}")
    qid = obj["query_id"]
    if isinstance(qid, bool) or not isinstance(qid, str | int) or str(qid) == "":
        raise ValueError('"query_id" must be a non-empty string (or an integer)')
    k = obj["k"]
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f'"k" must be a positive integer, got {k!r}')
    top = _str_list(obj["top"], "top")
    rest = _str_list(obj["rest"], "rest")
    extra = {key: v for key, v in obj.items() if key not in _REQUIRED}
    return TopKTruth(str(qid), k, top, rest, extra)


def read_topk_jsonl(path: str | Path) -> list[TopKTruth]:
    """Read a top-k JSONL file (blank lines allowed). Errors name the file and line.

    A query id that appears twice (e.g. two assessors) is an error here: evaluation needs one
    truth per query, so filter the export first.
    """
    p = Path(path)
    out: list[TopKTruth] = []
    first_line: dict[str, int] = {}
    try:
        with p.open(encoding="utf-8-sig") as fh:
            for lineno, raw in enumerate(fh, start=1):
                if not raw.strip():
                    continue
                try:
                    truth = parse_topk_object(json.loads(raw))
                except json.JSONDecodeError as exc:
                    raise TopKFormatError(p, lineno, f"invalid JSON: {exc.msg}") from None
                except ValueError as exc:
                    raise TopKFormatError(p, lineno, str(exc)) from None
                except RecursionError:
                    raise TopKFormatError(p, lineno, "invalid JSON: nested too deeply") from None
                if truth.query_id in first_line:
                    raise TopKFormatError(
                        p,
                        lineno,
                        f"query {truth.query_id} already has a truth on line "
                        f"{first_line[truth.query_id]}; keep one per query",
                    )
                first_line[truth.query_id] = lineno
                out.append(truth)
    except UnicodeDecodeError:
        raise TopKFormatError(p, None, "not UTF-8 text") from None
    return out


def write_topk_jsonl(path: str | Path, truths: Iterable[TopKTruth]) -> None:
    """Write one JSON object per line (keys query_id, k, top, rest, then extras)."""
    lines = [json.dumps(t.to_json(), ensure_ascii=False) for t in truths]
    Path(path).write_text("".join(f"{ln}\n" for ln in lines), encoding="utf-8")
