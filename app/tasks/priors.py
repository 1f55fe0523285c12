"""Resolve a task's prior source into its initial order, once, when the task is created.

The pure part (the spec grammar, feature and ranking orders) is
:mod:`labeling.protocol.prior_orders`; this
module reads what a source needs from the database inside the caller's transaction: the
collection's BM25 ranking (:mod:`app.retrieval.service`), the documents' LETOR features, a
TREC run (the caller's text, or a run stored on the collection: :func:`load_stored_run`,
read before the transaction through :mod:`app.runs.service`), or a machine judge's opinion
of each document: a training run's model scores (``model:<id>``,
:func:`app.machine.judges.prepare_scores`) or an LLM's cached grades (``llm``,
:func:`app.machine.grades.grade_order`). The result is the pair of
top-k options ``initial_order`` and ``prior`` (``docs/strategies-in-practice.md#priors``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from app.kernel.db import Database
from app.kernel.errors import Invalid, issue_items
from app.kernel.models import Document, Query
from app.kernel.settings import Settings
from app.machine import grades as llm_grades
from app.machine import judges as machine_judges
from app.retrieval import service as retrieval
from app.runs import service as runs
from labeling.errors import ConfigError
from labeling.identifiers import normal_identifier
from labeling.protocol.prior_orders import (
    NO_PRIOR,
    feature_order,
    parse_prior,
    prior_spec,
    ranking_order,
    score_order,
)
from labeling.protocol.spec import parse_source
from labeling.sources import SourceError
from labeling.study.pools import RunEntry, parse_trec_run

#: Sources a caller may ask the service to resolve (``explicit`` is recorded when a caller
#: gives ``initial_order`` itself).
RESOLVABLE = ("none", "bm25", "feature", "run", "model", "llm")


@dataclass(frozen=True, slots=True)
class StoredRun:
    """A run stored on the collection, read as rankings: ``ranking[query id]`` is the
    query's documents best first, in the order :func:`parse_trec_run` gives the uploaded
    file (:func:`app.runs.service.run_rankings`); ``tag`` is the run's tag."""

    name: str
    tag: str
    ranking: dict[str, list[str]]


def load_stored_run(db: Database, collection_id: int, name: str, field: str) -> StoredRun:
    """The run named ``name`` stored on the collection (404 for no collection); a 422 naming
    ``field`` and the name when the collection has no such run (nothing is read further)."""
    wanted = normal_identifier(name.strip())
    infos = {r.name: r for r in runs.list_runs(db=db, collection_id=collection_id)}
    info = infos.get(wanted)
    if info is None:
        some = ", ".join(repr(n) for n in list(infos)[:10]) or "none"
        more = f" and {len(infos) - 10} more" if len(infos) > 10 else ""
        raise Invalid(
            f"{field}: collection {collection_id} has no stored run named {name!r} "
            f"(its runs: {some}{more}; upload one with POST "
            f"/api/v1/admin/collections/{collection_id}/runs)"
        )
    rankings = runs.run_rankings(db=db, collection_id=collection_id, names=[info.name])
    return StoredRun(info.name, info.tag, rankings[info.name])


@dataclass(frozen=True, slots=True)
class PriorSource:
    """A requested prior: ``spec`` is ``none``, ``bm25``, ``feature:<number>``,
    ``model:<training run id>``, ``llm`` or ``run``;
    for ``spec="run"`` either ``run`` holds the TREC run text (lines of other queries are
    ignored) or ``stored`` a run stored on the collection."""

    spec: str = NO_PRIOR
    run: str | None = None
    stored: StoredRun | None = None

    @property
    def source(self) -> str:
        return parse_prior(self.spec)[0]


def check_source(
    spec: str | None, run: str | None = None, stored: StoredRun | None = None
) -> PriorSource:
    """A validated :class:`PriorSource` (``None`` means ``none``); Invalid with the accepted
    forms for anything else, and for a run source without a run (text or ``stored``) or with
    both, or a run given to another source."""
    if spec is None or spec == "":
        spec = NO_PRIOR
    try:
        source, detail = parse_prior(spec)
    except ConfigError as err:
        raise Invalid(str(err)) from None
    if source not in RESOLVABLE:
        raise Invalid(
            f"prior {spec!r} cannot be resolved by the service: give the order itself as "
            "options.initial_order instead"
        )
    if source == "run":
        if detail is not None:
            raise Invalid("prior 'run' takes the run text, not a tag (the run's tag is recorded)")
        if run is not None and stored is not None:
            raise Invalid("prior 'run' takes the run's text or a stored run's name, not both")
        if stored is None and (not run or not run.strip()):
            raise Invalid(
                "prior 'run' needs the TREC run (qid Q0 docno rank score tag lines) or the "
                "name of a run stored on the collection (stored_run)"
            )
    elif run is not None or stored is not None:
        raise Invalid(f"a run was given but the prior is {spec!r}; use prior 'run' to rank by it")
    return PriorSource(prior_spec(source, detail), run, stored)


class PriorResolver:
    """Turns one :class:`PriorSource` into each query's ``(initial_order, prior)`` within a
    database transaction ``s``; the run is parsed and the BM25 rankings computed once for all the
    queries of a plan. A judge's source is checked here (the training run exists, belongs to
    the collection and is done; an LLM is configured): a 422 naming ``prior`` otherwise.
    ``settings`` name the LLM of the ``llm`` prior."""

    def __init__(self, s: Any, collection_id: int, source: PriorSource, settings: Settings) -> None:
        self.s = s
        self.collection_id = collection_id
        self.source = source
        self.settings = settings
        self.kind, detail = parse_prior(source.spec)
        self.feature = int(detail) if self.kind == "feature" and detail else 0
        self._run: dict[str, list[str]] | None = None
        self._tags: dict[str, str] = {}
        self._bm25: dict[str, list[str]] = {}
        if self.kind == "run" and source.stored is not None:
            self._run = source.stored.ranking
            self._tags = dict.fromkeys(self._run, source.stored.tag)
        elif self.kind == "run":
            self._run, self._tags = _run_text(source.run or "")
        elif self.kind in ("model", "llm"):
            try:
                machine_judges.check_source(
                    s, collection_id, parse_source(source.spec, "prior"), self.settings
                )
            except Invalid as err:
                detail = str(err.detail).removeprefix(f"{machine_judges.FIELD}: ")
                raise Invalid(f"prior {source.spec!r}: {detail}") from None

    def prefetch(self, query_ids: Sequence[str]) -> None:
        """Compute the BM25 rankings of ``query_ids`` in one pass (planner: many queries)."""
        if self.kind == "bm25":
            missing = [q for q in query_ids if q not in self._bm25]
            if missing:
                self._bm25.update(retrieval.bm25_rankings(self.s, self.collection_id, missing))

    def resolve(self, query: Query, doc_ids: Sequence[str]) -> tuple[list[str] | None, str]:
        """``(initial_order, prior)`` of a task on ``query`` judging ``doc_ids``; Invalid,
        naming the query, when the source cannot rank them."""
        qid = query.external_id
        if self.kind == NO_PRIOR:
            return None, NO_PRIOR
        if self.kind == "bm25":
            self.prefetch([qid])
            order = ranking_order(doc_ids, self._bm25[qid])
            return order, "bm25"
        if self.kind == "model":
            prepared = machine_judges.prepare_scores(
                self.s,
                self.collection_id,
                query,
                doc_ids,
                parse_source(self.source.spec, "prior"),
                self.settings,
            )
            order = score_order(doc_ids, prepared.scores)
            if not order:
                raise Invalid(
                    f"prior of query {qid}: no document has a feature vector the model of "
                    f"{self.source.spec} takes"
                )
            return order, self.source.spec
        if self.kind == "llm":
            order = llm_grades.grade_order(
                self.s, self.collection_id, query, doc_ids, self.settings
            )
            if not order:
                raise Invalid(f"prior of query {qid}: the LLM's grades were all unreadable")
            return order, "llm"
        if self.kind == "feature":
            features = _document_features(self.s, query.id)
            try:
                return feature_order(doc_ids, features, self.feature), self.source.spec
            except ConfigError as err:
                raise Invalid(f"prior of query {qid}: {err}") from None
        assert self._run is not None
        ranked = self._run.get(qid, [])
        order = ranking_order(doc_ids, ranked)
        if not order:
            what = "has no line for" if not ranked else "ranks none of the documents of"
            raise Invalid(f"prior of query {qid}: the run {what} this query")
        tag = self._tags.get(qid)
        try:
            spec = prior_spec("run", tag) if tag else "run"
            parse_prior(spec)
        except ConfigError:
            spec = "run"  # a tag the record cannot hold (too long) is left out
        return order, spec


def _run_text(text: str) -> tuple[dict[str, list[str]], dict[str, str]]:
    """A run's text as rankings (documents best first, per query) and the tag of each query
    whose lines carry one tag."""
    try:
        parsed: dict[str, list[RunEntry]] = parse_trec_run(text, file="prior run")
    except SourceError as err:
        raise Invalid(
            issue_items(err.issues),
            extra={"message": "the prior run has errors; nothing was created"},
        ) from None
    tags: dict[str, str] = {}
    for qid, entries in parsed.items():
        kinds = {e.tag for e in entries}
        if len(kinds) == 1:
            tags[qid] = kinds.pop()
    return {q: [e.doc_id for e in entries] for q, entries in parsed.items()}, tags


def _document_features(s: Any, query_id: int) -> dict[str, Any]:
    """A query's documents' LETOR feature vectors by external id."""
    rows = s.execute(
        select(Document.external_id, Document.features).where(Document.query_id == query_id)
    )
    return {doc: vector for doc, vector in rows}
