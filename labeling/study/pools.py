"""Judging pools: which of a query's documents an assessor will judge.

The paper judged "50 documents sampled at random from each query's associated documents"
(Niu et al. 2012 §4.1). An admin can choose, per query:

* ``all`` — every document of the query;
* ``sample`` — a seeded random sample of ``n`` (the paper's setting, n = 50);
* ``run`` — the top ``n`` of a system run in TREC format (classic pooling); the pool keeps the
  run's order, best first, so it can also feed the heap as its ``initial_order``.

Optionally documents with identical content are judged once (``dedupe``): the first one in pool
order is kept. Content identity is :func:`content_hash` over the normalised title and body.

Everything here is pure; the service stores the resulting doc ids as the task's pool snapshot.
"""

from __future__ import annotations

import hashlib
import random
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from labeling.errors import ConfigError
from labeling.identifiers import identifier_problem, normal_identifier
from labeling.sources.base import IssueCollector, as_lines, numbered_lines
from ranking.io.trec import parse_run_line

PoolMode = Literal["all", "sample", "run"]
POOL_MODES: tuple[PoolMode, ...] = ("all", "sample", "run")

_SPACE = re.compile(r"\s+")


def content_hash(title: str | None = None, text: str | None = None, html: str | None = None) -> str:
    """SHA-256 hex digest of a document's normalised content.

    Normalisation (why: near-identical crawls differ only in these): Unicode NFC, case-folded,
    runs of whitespace collapsed to one space, ends stripped. Title and body are joined with a
    separator that cannot occur after normalisation, so ("a b", "") and ("a", "b") differ.
    HTML is hashed as given (markup included) when there is no text.
    """
    parts = []
    for value in (title, text if text is not None else html):
        norm = unicodedata.normalize("NFC", value or "").casefold()
        parts.append(_SPACE.sub(" ", norm).strip())
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class RunEntry:
    """One line of a TREC run: ``qid Q0 docno rank score tag``."""

    query_id: str
    doc_id: str
    rank: int
    score: float
    tag: str
    line: int


def parse_trec_run(
    data: str | bytes | Iterable[str | bytes],
    *,
    file: str = "run",
    on_entry: Callable[[RunEntry], None] | None = None,
) -> dict[str, list[RunEntry]]:
    """Read a TREC run; per query, entries sorted as trec_eval ranks them.

    trec_eval ignores the rank column and orders by score descending, breaking ties by docno
    descending (docs/metrics.md#ties); we do the same so "top n of the run" means what the
    evaluator would score. Ids are read in Unicode NFC
    (:func:`labeling.identifiers.normal_identifier`), the spelling of imported ones. Errors
    (wrong column count, non-numeric rank/score, a document listed twice for one query) carry
    the line number; the whole file is checked before returning. A score must be finite and
    the ids must follow the identifier rule (:func:`labeling.identifiers.identifier_problem`):
    every upload of a run (stored runs, pools, import pairings, priors) reads it here, so all
    refuse the same lines with the same messages. Each line's columns are read by
    :func:`ranking.io.trec.parse_run_line`, the one strict reader of a run line.

    ``on_entry`` sees each good entry as soon as it is read (an upload's bounds count with it:
    what it raises stops the reading there).
    """
    lines = as_lines(data)
    issues = IssueCollector(file)
    out: dict[str, list[RunEntry]] = {}
    seen: dict[tuple[str, str], int] = {}
    for number, text in numbered_lines(lines, file):
        try:
            fields = parse_run_line(text)
        except ValueError as exc:
            issues.add(number, str(exc))
            continue
        if fields is None:
            continue
        qid, doc, rank, score, tag = fields
        qid, doc = normal_identifier(qid), normal_identifier(doc)
        bad = [
            f"{what} {problem}"
            for what, value in (("query id", qid), ("document id", doc))
            if (problem := identifier_problem(value)) is not None
        ]
        if bad:  # a NUL, a control character or an id over 200 characters: never stored
            for msg in bad:
                issues.add(number, msg)
            continue
        if (qid, doc) in seen:
            issues.add(
                number,
                f"document {doc} listed twice for query {qid} (first on line {seen[(qid, doc)]})",
            )
            continue
        seen[(qid, doc)] = number
        entry = RunEntry(qid, doc, rank, score, tag, number)
        out.setdefault(qid, []).append(entry)
        if on_entry is not None:
            on_entry(entry)
    issues.raise_if_any()
    for entries in out.values():
        # Two stable sorts: docno descending, then score descending (trec_eval's order).
        entries.sort(key=lambda e: e.doc_id, reverse=True)
        entries.sort(key=lambda e: e.score, reverse=True)
    return out


@dataclass(frozen=True, slots=True)
class Pool:
    """The documents to judge for one query, plus what was left out and why."""

    doc_ids: tuple[str, ...]
    duplicates: tuple[str, ...] = ()
    unknown: tuple[str, ...] = field(default=())
    """Run documents that the query does not have (reported, not judged)."""


def _dedupe(
    doc_ids: Sequence[str], hashes: Mapping[str, str] | None
) -> tuple[list[str], list[str]]:
    if hashes is None:
        return list(doc_ids), []
    kept: list[str] = []
    dropped: list[str] = []
    seen: set[str] = set()
    for d in doc_ids:
        h = hashes.get(d)
        if h is not None and h in seen:
            dropped.append(d)
            continue
        if h is not None:
            seen.add(h)
        kept.append(d)
    return kept, dropped


def build_pool(
    doc_ids: Sequence[str],
    *,
    mode: PoolMode = "all",
    n: int | None = None,
    seed: int = 0,
    run: Sequence[str] | None = None,
    hashes: Mapping[str, str] | None = None,
) -> Pool:
    """Select the pool for one query.

    ``doc_ids``: the query's documents in collection order. ``mode``:

    * ``all``: every document (``n`` ignored);
    * ``sample``: ``n`` documents drawn without replacement with ``random.Random(seed)``; kept in
      collection order (the judging session shuffles with its own seed). If the query has at most
      ``n`` documents, all of them;
    * ``run``: the first ``n`` documents of ``run`` (doc ids best first, e.g. from
      :func:`parse_trec_run`) that the query has; ``n=None`` takes the whole run.

    ``hashes`` (doc id -> :func:`content_hash`) enables dedupe *before* selection, so a sample or
    a run cut still yields ``n`` distinct documents when enough exist.
    """
    if len(set(doc_ids)) != len(doc_ids):
        raise ConfigError("document ids of a query must be unique")
    if mode not in POOL_MODES:
        raise ConfigError(f"unknown pool mode {mode!r} (use {', '.join(POOL_MODES)})")
    if n is not None and n < 1:
        raise ConfigError("pool size n must be at least 1")
    if mode == "sample" and n is None:
        raise ConfigError("pool mode 'sample' needs n")
    if mode == "run":
        if run is None:
            raise ConfigError("pool mode 'run' needs a run")
        have = set(doc_ids)
        ranked = list(dict.fromkeys(run))
        unknown = tuple(d for d in ranked if d not in have)
        candidates, dropped = _dedupe([d for d in ranked if d in have], hashes)
        chosen = candidates if n is None else candidates[:n]
        # Duplicates that fell below the cut were never candidates for the pool.
        cut_dropped = [d for d in dropped if n is None or _rank_before(ranked, d, chosen)]
        return Pool(tuple(chosen), tuple(cut_dropped), unknown)
    candidates, dropped = _dedupe(doc_ids, hashes)
    if mode == "all" or n is None or len(candidates) <= n:
        return Pool(tuple(candidates), tuple(dropped))
    picked = set(random.Random(seed).sample(candidates, n))
    return Pool(tuple(d for d in candidates if d in picked), tuple(dropped))


def _rank_before(ranked: list[str], doc: str, chosen: list[str]) -> bool:
    """True when ``doc`` ranks above the last chosen document (so dedupe actually removed it)."""
    if not chosen:
        return True
    return ranked.index(doc) < ranked.index(chosen[-1])
