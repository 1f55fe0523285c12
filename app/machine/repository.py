"""The SQL of the LLM judge's response cache and its spending per study
(``llm_response``, ``llm_usage``; docs/machine-judges.md#the-llm-client)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal

from sqlalchemy import select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session
from sqlalchemy.sql.expression import Executable

from app.kernel.db import Database
from app.kernel.errors import NotFound
from app.kernel.models import Collection, LlmResponse, LlmUsage, utcnow

__all__ = [
    "GRADES_KEY",
    "CachedReply",
    "LastError",
    "Study",
    "UsageCounts",
    "add_usage",
    "cached_replies",
    "cached_replies_in",
    "collection_usage",
    "failing_studies",
    "read_usage",
    "store_batch",
]


#: The ``llm_usage.plan`` key of a collection's LLM grades (the ``llm`` prior): they spend
#: their own budget (``llm_grade_token_budget``), apart from the tasks' opinions. No plan can
#: be named so: plan names hold no control characters (:func:`app.http.schemas.check_label`).
GRADES_KEY = "\x1fgrades"

Purpose = Literal["opinions", "grades"]


@dataclass(frozen=True, slots=True)
class Study:
    """Whose tokens: a collection's plan (``task.plan``), or the collection itself for tasks
    without a plan (``plan=None``); ``purpose="grades"``: the collection's LLM grades, which
    count apart (:data:`GRADES_KEY`)."""

    collection_id: int
    plan: str | None = None
    purpose: Purpose = "opinions"

    @property
    def plan_key(self) -> str:
        """The ``llm_usage.plan`` value: the plan's name, ``''`` for none,
        :data:`GRADES_KEY` for the grades."""
        if self.purpose == "grades":
            return GRADES_KEY
        return self.plan or ""

    @classmethod
    def of_key(cls, collection_id: int, key: str) -> Study:
        """The study of an ``llm_usage.plan`` value (:attr:`plan_key`'s inverse)."""
        if key == GRADES_KEY:
            return cls(collection_id, None, "grades")
        return cls(collection_id, key or None)


@dataclass(frozen=True, slots=True)
class CachedReply:
    """A stored reply and the tokens it cost when it was asked."""

    reply: str
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True, slots=True)
class UsageCounts:
    """A study's counters (:class:`app.kernel.models.LlmUsage`); all zero before any use."""

    requests: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    malformed: int = 0
    failed: int = 0
    refused: int = 0
    timeouts: int = 0

    @property
    def tokens(self) -> int:
        """Tokens spent: prompt plus completion tokens of the requests answered."""
        return self.prompt_tokens + self.completion_tokens

    def plus(self, other: UsageCounts) -> UsageCounts:
        """The sum of two sets of counters."""
        return UsageCounts(
            **{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)}
        )


_COUNTERS = tuple(f.name for f in fields(UsageCounts))


@dataclass(frozen=True, slots=True)
class LastError:
    """A study's (or a task's) last failed call: what went wrong, and when (ISO 8601)."""

    error: str
    at: str


def cached_replies(db: Database, keys: Iterable[str]) -> dict[str, CachedReply]:
    """The stored replies of the cache keys that have one."""
    with db.read() as tx:
        return cached_replies_in(tx, keys)


def cached_replies_in(tx: Session, keys: Iterable[str]) -> dict[str, CachedReply]:
    """:func:`cached_replies` within the caller's transaction ``tx`` (e.g. a plan's write
    transaction)."""
    wanted = sorted(set(keys))
    out: dict[str, CachedReply] = {}
    for start in range(0, len(wanted), 500):  # bounded IN lists
        rows = tx.execute(
            select(
                LlmResponse.cache_key,
                LlmResponse.reply,
                LlmResponse.prompt_tokens,
                LlmResponse.completion_tokens,
            ).where(LlmResponse.cache_key.in_(wanted[start : start + 500]))
        )
        for key, reply, p_tokens, c_tokens in rows:
            out[key] = CachedReply(reply, p_tokens, c_tokens)
    return out


def _insert_ignoring(db: Database, table: type[LlmResponse] | type[LlmUsage]) -> Executable:
    """INSERT that keeps an existing row on a unique conflict (both dialects have it)."""
    if db.dialect == "postgresql":
        return postgresql.insert(table).on_conflict_do_nothing()
    return sqlite.insert(table).on_conflict_do_nothing()


def store_batch(
    db: Database,
    study: Study,
    replies: Mapping[str, tuple[str, str, str, CachedReply]],
    counts: UsageCounts,
    last_error: str | None = None,
) -> None:
    """In one transaction: cache the new replies (``key -> (model, template key, prompt
    hash, reply)``; a key stored meanwhile by another worker is kept as it is), add
    ``counts`` to the study's counters and, with ``last_error``, record it as the study's
    last failure."""
    now = utcnow()
    failure = {} if last_error is None else {"last_error": last_error[:300], "last_error_at": now}
    with db.write() as tx:
        if replies:
            tx.execute(
                _insert_ignoring(db, LlmResponse),
                [
                    {
                        "cache_key": key,
                        "model": model,
                        "template": template,
                        "prompt_hash": prompt_hash,
                        "reply": cached.reply,
                        "prompt_tokens": cached.prompt_tokens,
                        "completion_tokens": cached.completion_tokens,
                        "created_at": now,
                    }
                    for key, (model, template, prompt_hash, cached) in replies.items()
                ],
            )
        tx.execute(
            _insert_ignoring(db, LlmUsage),
            {"collection_id": study.collection_id, "plan": study.plan_key, "updated_at": now},
        )
        table = LlmUsage.__table__
        tx.execute(
            update(LlmUsage)
            .where(LlmUsage.collection_id == study.collection_id, LlmUsage.plan == study.plan_key)
            .values(
                updated_at=now,
                **failure,
                **{name: table.c[name] + getattr(counts, name) for name in _COUNTERS},
            )
        )


def add_usage(db: Database, study: Study, counts: UsageCounts) -> None:
    """Add ``counts`` to the study's counters (:func:`store_batch` without replies)."""
    store_batch(db, study, {}, counts)


def read_usage(db: Database, study: Study) -> UsageCounts:
    """The study's counters (zeros when it never asked)."""
    with db.read() as tx:
        row = tx.execute(
            select(*(getattr(LlmUsage, name) for name in _COUNTERS)).where(
                LlmUsage.collection_id == study.collection_id, LlmUsage.plan == study.plan_key
            )
        ).first()
    return UsageCounts() if row is None else UsageCounts(*(int(v) for v in row))


def _usage_rows(tx: Session, where: Any) -> list[tuple[Study, UsageCounts, LastError | None]]:
    rows = tx.execute(
        select(
            LlmUsage.collection_id,
            LlmUsage.plan,
            LlmUsage.last_error,
            LlmUsage.last_error_at,
            *(getattr(LlmUsage, name) for name in _COUNTERS),
        )
        .where(where)
        .order_by(LlmUsage.collection_id, LlmUsage.plan)
    ).all()
    found = [
        (
            Study.of_key(int(cid), plan),
            UsageCounts(*(int(v) for v in counts)),
            LastError(error, at.isoformat()) if error and at is not None else None,
        )
        for cid, plan, error, at, *counts in rows
    ]
    return sorted(found, key=lambda row: (row[0].collection_id, row[0].purpose == "grades"))


def failing_studies(db: Database) -> list[tuple[Study, UsageCounts, LastError | None]]:
    """Every study (of any collection) with a failed or malformed call, by collection."""
    with db.read() as tx:
        return _usage_rows(tx, (LlmUsage.failed > 0) | (LlmUsage.malformed > 0))


def collection_usage(
    db: Database, collection_id: int
) -> list[tuple[Study, UsageCounts, LastError | None]]:
    """Every study of the collection that used the LLM judge, its counters and its last
    failure, the collection's own (no plan) first, then by plan name, the grades last; 404
    for an unknown collection."""
    with db.read() as tx:
        if tx.get(Collection, collection_id) is None:
            raise NotFound(f"no collection with id {collection_id}")
        return _usage_rows(tx, LlmUsage.collection_id == collection_id)
