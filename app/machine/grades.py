"""An LLM's grade of each document of a query: the ``llm`` prior
(docs/machine-judges.md#judges-as-priors).

A prior is resolved once, when a task is created, inside the plan's (or the task's) write
transaction, and no model is ever called inside a request. So the ``llm`` prior has two steps:

1. :func:`grade_documents` (a job on the queue's workers, :func:`app.machine.jobs.enqueue_grades`,
   or ``heapjudge admin llm-grades`` in the command's own process) asks the graded prompt
   template (:data:`GRADE_TEMPLATE`, one digit 0..4) for every document of the chosen queries
   through the collection's :class:`app.machine.llm.LlmClient` (cache, token budget, retries;
   the tokens count on the collection's grades, ``Study(collection, purpose="grades")``,
   whose budget ``llm_grade_token_budget`` is apart from the task opinions');
2. :func:`grade_order`, called by the prior resolver, reads those replies from the response
   cache only (the same cache keys: model, template, prompt, request parameters), reads them as
   the core's grade judge does (:class:`labeling.machine.judges.LlmGrader`) and orders the
   documents by grade, descending, equal grades by document id. A document whose reply is
   malformed has no grade and is left out of the order (the session appends it in seeded
   order); a document not graded yet makes the prior a 422 that says how to grade it.

:func:`grade_status` counts, per query, the documents graded, malformed and still to grade.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.kernel.caches import LRU, Slot
from app.kernel.db import Database
from app.kernel.errors import Invalid, NotFound
from app.kernel.models import Collection, Document, Query
from app.kernel.settings import Settings
from app.machine.llm import LlmClient, cache_key, request_params
from app.machine.repository import Study, cached_replies_in
from labeling.machine.judges import grade_distributions
from labeling.machine.llm_prompts import GRADED_V2, PromptTemplate
from labeling.protocol.prior_orders import score_order
from labeling.retrieval.text import document_text

__all__ = [
    "GRADE_TEMPLATE",
    "QueryGrades",
    "grade_documents",
    "grade_order",
    "grade_status",
]

#: The prompt template of the ``llm`` prior: one digit 0..4 per document.
GRADE_TEMPLATE: PromptTemplate = GRADED_V2


@dataclass(frozen=True, slots=True)
class QueryGrades:
    """One query's documents as the cache holds their grades: ``grades[doc id]`` for the
    readable replies, ``malformed`` (a reply that is not one digit 0..4) and ``missing`` (not
    asked yet, or the call failed: not cached) document ids."""

    query_id: str
    grades: dict[str, int]
    malformed: list[str]
    missing: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "query_id": self.query_id,
            "documents": len(self.grades) + len(self.malformed) + len(self.missing),
            "graded": len(self.grades),
            "malformed": len(self.malformed),
            "missing": len(self.missing),
        }


def _model(settings: Settings) -> str:
    if not settings.llm_model:
        raise Invalid(
            "the llm judge is not configured (set HEAPJUDGE_LLM_MODEL to the model's name and "
            "HEAPJUDGE_LLM_BASE_URL to an OpenAI-compatible endpoint)"
        )
    return settings.llm_model


def _texts(s: Session, query: Query, doc_ids: Sequence[str] | None) -> dict[str, str]:
    """The judged text of the query's documents (all of them when ``doc_ids`` is None), in
    import order."""
    rows = s.execute(
        select(Document.external_id, Document.title, Document.text, Document.html)
        .where(Document.query_id == query.id)
        .order_by(Document.id)
    )
    wanted = None if doc_ids is None else set(doc_ids)
    return {
        d: document_text(title, text, html)
        for d, title, text, html in rows
        if wanted is None or d in wanted
    }


def _prompts(query: Query, texts: dict[str, str]) -> list[list[dict[str, str]]]:
    return [GRADE_TEMPLATE.render(query.title, texts[d]) for d in texts]


#: Per database: the cache keys of a query's graded prompts, by (query, model, parameters,
#: query text, the documents' ids and content hashes), so that the collection page's counts
#: (:func:`grade_status`) do not read and hash every document's text on every view.
_KEYS: Slot[LRU] = Slot("llm grade keys", lambda db: LRU(4096))


def _keys(
    s: Session, settings: Settings, query: Query, memo: LRU | None = None
) -> tuple[list[str], list[str]]:
    """The query's documents (import order) and the cache key of each one's graded prompt;
    with ``memo``, recomputed only when a document or the query changed."""
    model, params = _model(settings), request_params(settings)
    rows = s.execute(
        select(Document.external_id, Document.content_hash)
        .where(Document.query_id == query.id)
        .order_by(Document.id)
    ).all()
    memo_key = (query.id, model, tuple(sorted(params.items())), query.title, tuple(rows))
    found = memo.get(memo_key) if memo is not None else None
    if found is None:
        texts = _texts(s, query, None)
        keys = [cache_key(model, GRADE_TEMPLATE, m, params) for m in _prompts(query, texts)]
        found = (list(texts), keys)
        if memo is not None:
            memo.put(memo_key, found)
    return found


def _read(
    s: Session,
    settings: Settings,
    query: Query,
    doc_ids: Sequence[str] | None = None,
    memo: LRU | None = None,
) -> QueryGrades:
    """The query's documents (those of ``doc_ids``, or all) as the cache holds their grades,
    read as :class:`labeling.machine.judges.LlmGrader` reads a reply
    (:func:`labeling.machine.judges.grade_distributions`): nothing is sent."""
    docs, keys = _keys(s, settings, query, memo)
    if doc_ids is not None:
        wanted = set(doc_ids)
        pairs = [(d, k) for d, k in zip(docs, keys, strict=True) if d in wanted]
        docs, keys = [d for d, _ in pairs], [k for _, k in pairs]
    cached = cached_replies_in(s, keys)
    dist = grade_distributions([cached[k].reply if k in cached else None for k in keys])
    grades: dict[str, int] = {}
    malformed: list[str] = []
    missing: list[str] = []
    for i, (doc, key) in enumerate(zip(docs, keys, strict=True)):
        if key not in cached:
            missing.append(doc)
        elif np.isnan(dist[i]).any():
            malformed.append(doc)
        else:
            grades[doc] = int(dist[i].argmax())
    return QueryGrades(query.external_id, grades, malformed, missing)


def grade_order(
    s: Session, collection_id: int, query: Query, doc_ids: Sequence[str], settings: Settings
) -> list[str]:
    """The ``llm`` prior of a task on ``query`` judging ``doc_ids``: the documents by the LLM's
    cached grade, descending, equal grades by document id; malformed ones left out. Invalid,
    naming the query and the request that grades it, while any document has no reply."""
    found = _read(s, settings, query, doc_ids)
    if found.missing:
        raise Invalid(
            f"prior llm of query {query.external_id}: the LLM ({settings.llm_model}, "
            f"{GRADE_TEMPLATE.key}) has not graded {len(found.missing)} of {len(doc_ids)} "
            f"documents (first: {found.missing[0]!r}); grade them first with POST "
            f"/api/v1/admin/collections/{collection_id}/llm-grades or `heapjudge admin "
            f"llm-grades {collection_id}`, then plan again"
        )
    return score_order(doc_ids, {d: float(g) for d, g in found.grades.items()})


def _queries(s: Session, collection_id: int, query_ids: Sequence[str] | None) -> list[Query]:
    """The collection's queries named by ``query_ids`` (all when None), in id order; 404 for
    no collection, 422 naming unknown query ids."""
    if s.get(Collection, collection_id) is None:
        raise NotFound(f"no collection with id {collection_id}")
    rows = list(
        s.scalars(select(Query).where(Query.collection_id == collection_id).order_by(Query.id))
    )
    if query_ids is None:
        return rows
    by_id = {q.external_id: q for q in rows}
    unknown = [q for q in query_ids if q not in by_id]
    if unknown:
        raise Invalid(
            f"query_ids: collection {collection_id} has no query {unknown[0]!r}"
            + (f" (and {len(unknown) - 1} more unknown)" if len(unknown) > 1 else "")
        )
    return [by_id[q] for q in dict.fromkeys(query_ids)]


def grade_status(
    db: Database, collection_id: int, query_ids: Sequence[str] | None = None
) -> dict[str, Any]:
    """Per query and in total: documents, graded, malformed and missing (not graded yet),
    with the model and template the grades are read for."""
    settings = db.settings
    with db.read() as s:
        memo = _KEYS.of(db)
        rows = [_read(s, settings, q, memo=memo) for q in _queries(s, collection_id, query_ids)]
    per_query = [r.to_dict() for r in rows]
    totals = {
        key: sum(int(r[key]) for r in per_query)
        for key in ("documents", "graded", "malformed", "missing")
    }
    return {
        "collection_id": collection_id,
        "model": settings.llm_model,
        "template": GRADE_TEMPLATE.key,
        "prompt_hash": GRADE_TEMPLATE.hash,
        "queries": per_query,
        **totals,
    }


def grade_documents(
    db: Database, collection_id: int, query_ids: Sequence[str] | None = None
) -> dict[str, Any]:
    """Ask the LLM for the grade of every document of the queries (all of the collection's
    when None) that the cache does not hold yet, query by query, through the collection's
    client (:class:`app.machine.llm.LlmClient`: cached replies cost nothing; past the token
    budget the rest stay missing); returns :func:`grade_status` afterwards. Runs on a worker
    or in the CLI's process, never in a request."""
    settings = db.settings
    _model(settings)
    with db.read() as s:
        work = [(q, _texts(s, q, None)) for q in _queries(s, collection_id, query_ids)]
    with LlmClient(
        db, Study(collection_id, None, "grades"), settings=settings, template=GRADE_TEMPLATE
    ) as client:
        for query, texts in work:
            if texts:
                client.ask(_prompts(query, texts))
    return grade_status(db, collection_id, query_ids)
