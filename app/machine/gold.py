"""The machine's gold set (docs/machine-judges.md#the-gold-set): pairs of one query's documents
whose right answer an admin states, stored in ``machine_gold`` (migration
``0032_machine_gold``). They are evidence of the machine's error rate beside people's
answers: a task whose machine starts afterwards freezes the judge's raw opinion on each gold
pair with its study calibration (:func:`app.machine.judges.gold_evidence`), and its
:class:`labeling.machine.opinion.JudgeOpinion` counts them in the assist rule's bound
(docs/machine-judges.md#the-rule), so the machine can earn its share before people have
answered many of its pairs. A task started before a pair was marked keeps what it froze
(its replays never change).

``POST /api/v1/admin/collections/{id}/machine/gold`` (:func:`add_gold`: all or nothing),
``GET`` the same path (:func:`list_gold`), ``DELETE .../gold/{gold_id}`` (:func:`delete_gold`),
``heapjudge admin machine-gold``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import CursorResult, delete, select

from app.kernel.db import Database
from app.kernel.errors import Conflict, Invalid, NotFound
from app.kernel.models import Collection, Document, MachineGold, Query, utcnow

#: At most this many pairs in one request.
MAX_PAIRS = 5000


def _out(row: MachineGold, query: str) -> dict[str, Any]:
    return {
        "id": row.id,
        "query_id": query,
        "better": row.better_doc,
        "worse": row.worse_doc,
        "created_by": row.created_by,
        "created_at": row.created_at.isoformat(),
    }


def list_gold(*, db: Database, collection_id: int) -> dict[str, Any]:
    """The collection's gold pairs, oldest first. 404 for an unknown collection."""
    with db.read() as s:
        if s.get(Collection, collection_id) is None:
            raise NotFound(f"no collection with id {collection_id}")
        rows = s.execute(
            select(MachineGold, Query.external_id)
            .join(Query, Query.id == MachineGold.query_id)
            .where(MachineGold.collection_id == collection_id)
            .order_by(MachineGold.id)
        ).all()
        return {"collection_id": collection_id, "gold": [_out(g, q) for g, q in rows]}


def _checked(pairs: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, str]]:
    """``(query, better, worse)`` of each pair; 422 naming ``pairs[i]`` otherwise."""
    if not pairs:
        raise Invalid("pairs: give at least one pair")
    if len(pairs) > MAX_PAIRS:
        raise Invalid(f"pairs: at most {MAX_PAIRS} pairs in one request, got {len(pairs)}")
    out: list[tuple[str, str, str]] = []
    seen: dict[frozenset[str] | tuple[str, frozenset[str]], int] = {}
    for i, pair in enumerate(pairs):
        q, better, worse = (str(pair.get(k, "")) for k in ("query_id", "better", "worse"))
        if not (q and better and worse):
            raise Invalid(f"pairs[{i}]: query_id, better and worse are required")
        if better == worse:
            raise Invalid(f"pairs[{i}]: better and worse are the same document {better!r}")
        key = (q, frozenset((better, worse)))
        if key in seen:
            raise Invalid(f"pairs[{i}]: the same pair as pairs[{seen[key]}]")
        seen[key] = i
        out.append((q, better, worse))
    return out


def add_gold(
    *, db: Database, collection_id: int, pairs: Sequence[Mapping[str, Any]], by: str
) -> dict[str, Any]:
    """Mark ``pairs`` (``query_id``: the query's external id, ``better``, ``worse``: two of
    its documents) as gold, all or none: 404 for an unknown collection; 422 naming
    ``pairs[i]`` for a missing field, the same document twice, a pair given twice, a query not
    in the collection or a document not in the query's pool; 409 for a pair marked already
    (either way round). The pairs stored, as :func:`list_gold` shows them."""
    wanted = _checked(pairs)
    with db.write() as s:
        if s.get(Collection, collection_id) is None:
            raise NotFound(f"no collection with id {collection_id}")
        names = sorted({q for q, _, _ in wanted})
        queries = dict(
            s.execute(
                select(Query.external_id, Query.id).where(
                    Query.collection_id == collection_id, Query.external_id.in_(names)
                )
            ).all()
        )
        pool = {
            (qid, doc)
            for qid, doc in s.execute(
                select(Document.query_id, Document.external_id).where(
                    Document.query_id.in_(list(queries.values()))
                )
            )
        }
        for i, (q, better, worse) in enumerate(wanted):
            if q not in queries:
                raise Invalid(f"pairs[{i}]: no query {q!r} in collection {collection_id}")
            for doc in (better, worse):
                if (queries[q], doc) not in pool:
                    raise Invalid(f"pairs[{i}]: document {doc!r} is not in query {q!r}'s pool")
        keys = [(queries[q], b, w) for q, b, w in wanted]
        existing = {
            (qid, frozenset((b, w)))
            for qid, b, w in s.execute(
                select(MachineGold.query_id, MachineGold.better_doc, MachineGold.worse_doc).where(
                    MachineGold.query_id.in_(list(queries.values()))
                )
            )
        }
        for i, (qid, b, w) in enumerate(keys):
            if (qid, frozenset((b, w))) in existing:
                raise Conflict(
                    f"pairs[{i}]: {b!r}, {w!r} of query {wanted[i][0]!r} is gold already"
                )
        now = utcnow()
        rows = [
            MachineGold(
                collection_id=collection_id,
                query_id=qid,
                better_doc=b,
                worse_doc=w,
                created_by=by[:150],
                created_at=now,
            )
            for qid, b, w in keys
        ]
        s.add_all(rows)
        s.flush()
        return {
            "collection_id": collection_id,
            "gold": [_out(r, q) for r, (q, _, _) in zip(rows, wanted, strict=True)],
        }


def delete_gold(*, db: Database, collection_id: int, gold_id: int) -> None:
    """Unmark one gold pair (tasks started since it was marked keep what they froze). 404
    for an unknown pair of the collection."""
    with db.write() as s:
        gone = s.execute(
            delete(MachineGold).where(
                MachineGold.id == gold_id, MachineGold.collection_id == collection_id
            )
        )
        # A DML statement without RETURNING gives a CursorResult, which has the rowcount.
        assert isinstance(gone, CursorResult)
        if not gone.rowcount:
            raise NotFound(f"no gold pair {gold_id} on collection {collection_id}")
