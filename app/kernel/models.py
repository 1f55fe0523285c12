"""SQLAlchemy 2 ORM tables: every table of the service (one initial migration covers them).
Long because every table is declared here: importing this one module gives alembic's
comparison and the schema tests the whole metadata.

Conventions: singular table names, ``_at`` suffix for times (UTC, timezone-aware in
Python on both databases), an explicit constraint naming convention, and invariants enforced by
the database itself: CHECK constraints on roles, methods, statuses, outcomes and grades; foreign
keys; and a *partial* unique index on live judgments ``(task_id, seq) WHERE NOT undone`` so that
two racing requests can never store two answers to one question (the judging service inserts
with ON CONFLICT DO NOTHING against it).

The judgment log is the only protocol state: a task's pending question is rebuilt by replaying its
live judgments in ``seq`` order through :func:`labeling.protocol.session.open_session`. Five-grade
(T2) answers are judgments with ``doc_id`` + ``grade``; the ``grade`` view (created by the
migration) lists the live ones.

String identifiers from imported data are ``external_id`` columns (``query.external_id`` is the
NDJSON ``query_id``, ``document.external_id`` its ``doc_id``); integer ``id`` columns are
surrogate keys. Judgments reference documents by external id, exactly as the protocol sees them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    false,
    func,
    text,
    true,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

ROLES = ("assessor", "admin")
METHODS = ("topk", "graded")
TASK_STATUSES = ("pending", "active", "done", "cancelled")
OUTCOMES = ("left", "right", "tie", "not_relevant", "broken")
#: Longest comment on a judgment and longest reason of a broken-document answer (characters).
MAX_COMMENT = 2000
MAX_REASON = 500
TRAINING_STATUSES = ("queued", "running", "done", "failed", "cancelled")
#: A second opinion's life (docs/noise.md#routing-re-asks-to-a-second-assessor): ``open`` in the
#: second assessor's queue; ``answered`` (recorded in the first task's log); ``reclaimed`` (the
#: first assessor asked for it back); ``expired`` (its time ran out: back to the first
#: assessor); ``cancelled`` (the first assessor's undo went back past it, or its task is gone).
SECOND_OPINION_STATUSES = ("open", "answered", "reclaimed", "expired", "cancelled")
#: How a pool from many runs chooses its documents (labeling.study.campaign_pools.METHODS).
POOL_METHODS = ("depth", "mtf", "maxmean", "hedge", "cal")
#: How a pool's budget is spread: per query, or one total over the campaign (``cal`` only).
POOL_ALLOCATIONS = ("query", "campaign")
#: A pool's state (docs/performance.md#pool-builds): ``building`` while its documents are
#: written in batches (no reader uses it), ``ready`` once its last batch is in.
POOL_STATUSES = ("building", "ready")


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on both databases (SQLite stores them naive)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(UTC)
        # SQLite has no time zones: store naive UTC, re-attach UTC on the way out.
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


#: JSON on SQLite, JSONB on Postgres.
JSONType = JSON().with_variant(JSONB(), "postgresql")


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class User(Base):
    __tablename__ = "user"
    __table_args__ = (
        CheckConstraint(_in("role", ROLES), name="role"),
        # Usernames are unique whatever their case (docs/security.md#usernames).
        Index("uq_user_username_lower", func.lower(text("username")), unique=True),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    username: Mapped[str] = mapped_column(String(64), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    role: Mapped[str] = mapped_column(String(16), default="assessor")
    disabled: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ApiToken(Base):
    """A bearer token for scripts; only its sha256 is stored."""

    __tablename__ = "api_token"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("user.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str] = mapped_column(String(100), default="", server_default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class WebSession(Base):
    """A browser session (server-side row, hashed token; docs/security.md)."""

    __tablename__ = "web_session"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    csrf_token: Mapped[str] = mapped_column(String(64))
    user_id: Mapped[int] = mapped_column(ForeignKey("user.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)


class LoginAttempt(Base):
    """One login attempt, for DB-backed throttling (works across workers)."""

    __tablename__ = "login_attempt"
    __table_args__ = (
        Index("ix_login_attempt_username_at", "username", "at"),
        Index("ix_login_attempt_ip_at", "ip", "at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    username: Mapped[str] = mapped_column(String(64))
    ip: Mapped[str] = mapped_column(String(64), default="", server_default="")
    at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    success: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


class Collection(Base):
    __tablename__ = "collection"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    description: Mapped[str] = mapped_column(Text, default="", server_default="")
    archived: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    #: Judging guidelines in Markdown, shown (sanitised) on the judging page.
    guidelines: Mapped[str] = mapped_column(Text, default="", server_default="")
    #: The feature set of the documents' vectors when heapjudge computed them from the texts
    #: (name, version, column names, normalisation; docs/features.md#stored-features); None
    #: when they were imported or there are none.
    feature_set: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)
    #: The last features job on the queue: status, times, error, report (None: never run).
    feature_job: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)

    queries: Mapped[list[Query]] = relationship(back_populates="collection", lazy="raise")


class Query(Base):
    __tablename__ = "query"
    __table_args__ = (UniqueConstraint("collection_id", "external_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    collection_id: Mapped[int] = mapped_column(
        ForeignKey("collection.id", ondelete="CASCADE"), index=True
    )
    external_id: Mapped[str] = mapped_column(String(200))
    title: Mapped[str] = mapped_column(Text)
    description: Mapped[str] = mapped_column(Text, default="", server_default="")

    collection: Mapped[Collection] = relationship(back_populates="queries", lazy="raise")


class Document(Base):
    """One document in one query's pool (the NDJSON unit). Content is per collection: the
    same ``external_id`` must carry the same title/text/html under every query; features and
    the imported grade are per (query, document), as in LETOR."""

    __tablename__ = "document"
    __table_args__ = (
        UniqueConstraint("query_id", "external_id"),
        Index("ix_document_collection_id_external_id", "collection_id", "external_id"),
        CheckConstraint("grade IS NULL OR (grade >= 0 AND grade <= 4)", name="grade"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    collection_id: Mapped[int] = mapped_column(ForeignKey("collection.id", ondelete="CASCADE"))
    query_id: Mapped[int] = mapped_column(ForeignKey("query.id", ondelete="CASCADE"))
    external_id: Mapped[str] = mapped_column(String(200))
    title: Mapped[str] = mapped_column(Text, default="", server_default="")
    text: Mapped[str | None] = mapped_column(Text, nullable=True)
    html: Mapped[str | None] = mapped_column(Text, nullable=True)
    features: Mapped[list[float] | None] = mapped_column(JSONType, nullable=True)
    grade: Mapped[int | None] = mapped_column(Integer, nullable=True)
    content_hash: Mapped[str] = mapped_column(String(64))


class UnpooledGrade(Base):
    """An imported judgment of a document outside its query's pool
    (docs/data-formats.md#judgments-outside-the-pool): a qrels grade for a (query, document)
    the import's pairing did not pool. A label evaluation uses (the ``qrels`` label set with
    the pooled documents' grades), never a document shown to assessors; the document is named
    by its external id only (its text need not be imported)."""

    __tablename__ = "unpooled_grade"
    __table_args__ = (
        UniqueConstraint("query_id", "doc_id"),
        CheckConstraint("grade >= 0 AND grade <= 4", name="grade"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    collection_id: Mapped[int] = mapped_column(
        ForeignKey("collection.id", ondelete="CASCADE"), index=True
    )
    query_id: Mapped[int] = mapped_column(ForeignKey("query.id", ondelete="CASCADE"))
    doc_id: Mapped[str] = mapped_column(String(200))
    grade: Mapped[int] = mapped_column(Integer)


class Task(Base):
    """One assessor's job on one query: the config the protocol is replayed from."""

    __tablename__ = "task"
    __table_args__ = (
        CheckConstraint(_in("method", METHODS), name="method"),
        CheckConstraint(_in("status", TASK_STATUSES), name="status"),
        CheckConstraint("k >= 1", name="k"),
        Index("ix_task_assessor_id_status", "assessor_id", "status"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    collection_id: Mapped[int] = mapped_column(
        ForeignKey("collection.id", ondelete="CASCADE"), index=True
    )
    query_id: Mapped[int] = mapped_column(ForeignKey("query.id", ondelete="CASCADE"), index=True)
    assessor_id: Mapped[int] = mapped_column(ForeignKey("user.id", ondelete="RESTRICT"))
    method: Mapped[str] = mapped_column(String(16))
    k: Mapped[int] = mapped_column(Integer, default=10)
    seed: Mapped[int] = mapped_column(BigInteger)
    options: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    #: The pool snapshot (document external ids) the protocol replays over.
    doc_ids: Mapped[list[str]] = mapped_column(JSONType)
    status: Mapped[str] = mapped_column(String(16), default="pending")
    plan: Mapped[str | None] = mapped_column(String(100), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


#: The judgment row shapes (docs/protocols.md#broken-documents). Written out here and in the
#: migration that introduced the third shape.
JUDGMENT_SHAPE = (
    "(outcome IS NOT NULL AND outcome <> 'broken' AND left_doc IS NOT NULL"
    " AND right_doc IS NOT NULL AND doc_id IS NULL AND grade IS NULL AND reason IS NULL) OR "
    "(left_doc IS NULL AND right_doc IS NULL AND outcome IS NULL"
    " AND doc_id IS NOT NULL AND grade IS NOT NULL AND reason IS NULL) OR "
    "(outcome = 'broken' AND doc_id IS NOT NULL AND grade IS NULL AND reason IS NOT NULL"
    " AND ((left_doc IS NULL AND right_doc IS NULL)"
    " OR (left_doc IS NOT NULL AND right_doc IS NOT NULL)))"
)


#: Who gave a judgment (docs/machine-judges.md#the-service): a person (the task's assessor or
#: a second assessor, ``answered_by``) or the task's machine judge.
JUDGMENT_SOURCES = ("person", "machine")
#: A machine's judgment names its judge (version) and its calibrated probability of being
#: right, and answers a pair left or right; a person's carries none of that.
JUDGMENT_PROVENANCE = (
    "(source = 'person' AND machine_version IS NULL AND probability IS NULL"
    " AND prompt_hash IS NULL) OR "
    "(source = 'machine' AND machine_version IS NOT NULL AND probability IS NOT NULL"
    " AND probability >= 0.5 AND probability <= 1 AND left_doc IS NOT NULL"
    " AND right_doc IS NOT NULL AND outcome IN ('left', 'right'))"
)


class Judgment(Base):
    """One answer in a task's append-only log. Undo marks a row ``undone``; it stays."""

    __tablename__ = "judgment"
    __table_args__ = (
        CheckConstraint("seq >= 0", name="seq"),
        CheckConstraint("active_ms >= 0", name="active_ms"),
        CheckConstraint("outcome IS NULL OR " + _in("outcome", OUTCOMES), name="outcome"),
        CheckConstraint("grade IS NULL OR (grade >= 0 AND grade <= 4)", name="grade"),
        # Exactly one shape: a pair answer, a grade answer, or a broken document (named by
        # doc_id, with a reason; the pair it was shown in for topk, none for graded).
        CheckConstraint(JUDGMENT_SHAPE, name="shape"),
        CheckConstraint(_in("source", JUDGMENT_SOURCES), name="source"),
        CheckConstraint(JUDGMENT_PROVENANCE, name="provenance"),
        Index(
            "uq_judgment_task_id_seq_live",
            "task_id",
            "seq",
            unique=True,
            sqlite_where=text("NOT undone"),
            postgresql_where=text("NOT undone"),
        ),
        Index("ix_judgment_task_id_seq", "task_id", "seq"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    task_id: Mapped[int] = mapped_column(ForeignKey("task.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(Integer)
    left_doc: Mapped[str | None] = mapped_column(String(200), nullable=True)
    right_doc: Mapped[str | None] = mapped_column(String(200), nullable=True)
    outcome: Mapped[str | None] = mapped_column(String(16), nullable=True)
    doc_id: Mapped[str | None] = mapped_column(String(200), nullable=True)
    grade: Mapped[int | None] = mapped_column(Integer, nullable=True)
    active_ms: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    undone: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    undone_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    #: The assessor's optional free-text note on this judgment (docs/assessor-guide.md).
    comment: Mapped[str | None] = mapped_column(Text, nullable=True)
    #: Why the document ``doc_id`` is broken (outcome ``broken`` only).
    reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    #: Who gave the answer when it was not the task's assessor: a second assessor's answer to
    #: a routed repeat (:class:`SecondOpinion`); NULL for the task's own assessor.
    answered_by: Mapped[int | None] = mapped_column(
        ForeignKey("user.id", ondelete="RESTRICT"), nullable=True
    )
    #: ``person`` or ``machine`` (:data:`JUDGMENT_SOURCES`).
    source: Mapped[str] = mapped_column(String(16), default="person", server_default="person")
    #: A machine's answer: its judge and calibration (``JudgeOpinion.version``).
    machine_version: Mapped[str | None] = mapped_column(String(400), nullable=True)
    #: A machine's answer from an LLM prompt: the prompt template's hash.
    prompt_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    #: A machine's answer: its calibrated probability of being right, in [1/2, 1].
    probability: Mapped[float | None] = mapped_column(Float, nullable=True)


class SecondOpinion(Base):
    """A strategy's repeat of a pair routed from a task to a second assessor's queue
    (docs/noise.md#routing-re-asks-to-a-second-assessor).

    The question is question ``seq`` of task ``task_id`` as that task shows it (``left_doc``,
    ``right_doc``: the sides swapped relative to the pair's last showing). The answer, once
    given, is the task's live judgment ``seq`` (``judgment_id``, ``answered_by`` set there);
    this row keeps the routing: who was asked, when, until when, and what became of it. At most
    one row per (task, seq) is undecided (open, reclaimed or expired): the partial unique index
    makes the database the arbiter when two requests route the same question.
    """

    __tablename__ = "second_opinion"
    __table_args__ = (
        CheckConstraint(_in("status", SECOND_OPINION_STATUSES), name="status"),
        CheckConstraint("seq >= 0", name="seq"),
        CheckConstraint("active_ms >= 0", name="active_ms"),
        CheckConstraint(
            "outcome IS NULL OR outcome IN ('left', 'right', 'tie', 'not_relevant')",
            name="outcome",
        ),
        Index(
            "uq_second_opinion_task_id_seq_undecided",
            "task_id",
            "seq",
            unique=True,
            sqlite_where=text("status IN ('open', 'reclaimed', 'expired')"),
            postgresql_where=text("status IN ('open', 'reclaimed', 'expired')"),
        ),
        Index("ix_second_opinion_assignee_id_status", "assignee_id", "status"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    task_id: Mapped[int] = mapped_column(ForeignKey("task.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(Integer)
    left_doc: Mapped[str] = mapped_column(String(200))
    right_doc: Mapped[str] = mapped_column(String(200))
    #: The outcomes the question accepts (those of the repeat in the first task), as a list.
    allowed: Mapped[list[str]] = mapped_column(JSONType)
    assignee_id: Mapped[int] = mapped_column(ForeignKey("user.id", ondelete="RESTRICT"))
    status: Mapped[str] = mapped_column(String(16), default="open")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    #: After this time the question is no longer offered to the assignee; the first
    #: assessor's next request takes it back (status ``expired``).
    deadline_at: Mapped[datetime] = mapped_column(UTCDateTime)
    decided_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    outcome: Mapped[str | None] = mapped_column(String(16), nullable=True)
    active_ms: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    judgment_id: Mapped[int | None] = mapped_column(
        ForeignKey("judgment.id", ondelete="SET NULL"), nullable=True
    )


class TaskMachine(Base):
    """The machine judge of a top-k task with option ``machine``
    (docs/machine-judges.md#the-service): the judge's version, and the study calibration
    frozen for the task when it starts (a :class:`labeling.machine.calibration.Calibrator`'s
    ``to_dict``; NULL until then), so every replay sees the same probabilities."""

    __tablename__ = "task_machine"

    task_id: Mapped[int] = mapped_column(
        ForeignKey("task.id", ondelete="CASCADE"), primary_key=True
    )
    source: Mapped[str] = mapped_column(String(64))
    judge: Mapped[str] = mapped_column(String(300))
    #: The study calibration frozen when the task started (NULL: not started yet).
    calibration: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)
    calibrated_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    #: The model calls made for the task's opinions (``llm``: one per prompt sent), those
    #: that gave no opinion (failed, timed out, malformed), those of them that timed out, and
    #: the last failure's text and time (docs/machine-judges.md#when-the-machine-fails).
    calls: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    calls_failed: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    calls_timed_out: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    last_error: Mapped[str | None] = mapped_column(String(300), nullable=True)
    last_error_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class MachineFailureAlarm(Base):
    """An alarm about a collection's machine (docs/machine-judges.md#when-the-machine-fails):
    its ``kind`` (``calls_failing``: every call of a task's opinion job gave no opinion; other
    checks, such as the audits, add their own kinds), the task it concerns (NULL: the whole
    collection), the evidence as text, when it was raised and last seen, and when it was
    cleared (NULL: open). At most one open alarm per (collection, task, kind) is kept by
    the code that raises it."""

    __tablename__ = "machine_failure_alarm"
    __table_args__ = (
        Index("ix_machine_failure_alarm_collection_open", "collection_id", "cleared_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    collection_id: Mapped[int] = mapped_column(ForeignKey("collection.id", ondelete="CASCADE"))
    task_id: Mapped[int | None] = mapped_column(
        ForeignKey("task.id", ondelete="CASCADE"), nullable=True
    )
    kind: Mapped[str] = mapped_column(String(40))
    evidence: Mapped[str] = mapped_column(Text)
    raised_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    seen_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    cleared_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class MachineScore(Base):
    """A judge's raw score of one document of a task's pool for the task's query (BM25, a
    trained model), computed once when the task is created; a pair's raw P(first better) is
    ``σ((s_first − s_second) / scale)``. A document without a row has no opinion."""

    __tablename__ = "machine_score"

    task_id: Mapped[int] = mapped_column(
        ForeignKey("task.id", ondelete="CASCADE"), primary_key=True
    )
    doc_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    score: Mapped[float] = mapped_column(Float)


class PairOpinion(Base):
    """A judge's raw P(first better) of one ordered pair of a task, prepared ahead by a job
    (an LLM asked both orders; docs/machine-judges.md#the-service). The judging loop reads it;
    a pair without a row has no opinion yet (a person is asked)."""

    __tablename__ = "machine_opinion"
    __table_args__ = (CheckConstraint("probability >= 0 AND probability <= 1", name="probability"),)

    task_id: Mapped[int] = mapped_column(
        ForeignKey("task.id", ondelete="CASCADE"), primary_key=True
    )
    first_doc: Mapped[str] = mapped_column(String(200), primary_key=True)
    second_doc: Mapped[str] = mapped_column(String(200), primary_key=True)
    probability: Mapped[float] = mapped_column(Float)
    prompt_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class MachineAudit(Base):
    """A person's answer to a question the machine had a side on
    (docs/machine-judges.md#audits-that-act): the evidence of its stratum, and, when the audit
    took the question from the machine (``tested``), the P(wrong) the machine claimed there;
    whether the person contradicted it. An undone judgment's row no longer counts."""

    __tablename__ = "machine_audit"
    __table_args__ = (Index("ix_machine_audit_study", "collection_id", "judge", "judgment_id"),)

    judgment_id: Mapped[int] = mapped_column(
        ForeignKey("judgment.id", ondelete="CASCADE"), primary_key=True
    )
    task_id: Mapped[int] = mapped_column(ForeignKey("task.id", ondelete="CASCADE"))
    collection_id: Mapped[int] = mapped_column(ForeignKey("collection.id", ondelete="CASCADE"))
    judge: Mapped[str] = mapped_column(String(300))
    claimed: Mapped[float] = mapped_column(Float)
    wrong: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    #: The question's stratum of the assist rule's bound (confidence bin × stake class,
    #: :func:`labeling.machine.trust.stratum`; NULL on rows stored before strata).
    stratum: Mapped[int | None] = mapped_column(Integer, nullable=True)
    #: An audit the sequential test counts; false: a person's answer that is evidence of its
    #: stratum only (``claimed`` 1: the machine claimed nothing there).
    tested: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())


class MachineAlarm(Base):
    """The audits showed a judge worse than it claimed on a collection: it answers nothing
    there until an admin resumes it (``resumed_at``). The evidence when it was raised: the
    audits counted, how many agreed with the machine, the mean claimed P(wrong) and the test's
    log likelihood ratio; the audits after ``last_judgment_id`` start the next test."""

    __tablename__ = "machine_alarm"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    collection_id: Mapped[int] = mapped_column(
        ForeignKey("collection.id", ondelete="CASCADE"), index=True
    )
    judge: Mapped[str] = mapped_column(String(300))
    task_id: Mapped[int | None] = mapped_column(
        ForeignKey("task.id", ondelete="SET NULL"), nullable=True
    )
    audits: Mapped[int] = mapped_column(Integer)
    agree: Mapped[int] = mapped_column(Integer)
    claimed_wrong: Mapped[float] = mapped_column(Float)
    log_ratio: Mapped[float] = mapped_column(Float)
    last_judgment_id: Mapped[int] = mapped_column(Integer)
    raised_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    resumed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    resumed_by: Mapped[str | None] = mapped_column(String(150), nullable=True)


class MachineGold(Base):
    """A pair of one query's documents whose right answer an admin stated (the gold set,
    docs/machine-judges.md#the-gold-set): ``better_doc`` is more relevant than ``worse_doc``.
    Evidence of the machine's error rate beside people's answers: a task starting afterwards
    freezes the machine's raw opinion on each gold pair with its calibration."""

    __tablename__ = "machine_gold"
    __table_args__ = (UniqueConstraint("query_id", "better_doc", "worse_doc"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    collection_id: Mapped[int] = mapped_column(
        ForeignKey("collection.id", ondelete="CASCADE"), index=True
    )
    query_id: Mapped[int] = mapped_column(ForeignKey("query.id", ondelete="CASCADE"))
    better_doc: Mapped[str] = mapped_column(String(200))
    worse_doc: Mapped[str] = mapped_column(String(200))
    created_by: Mapped[str] = mapped_column(String(150))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class TrainingRun(Base):
    """A training job over a collection's labels (:mod:`app.training.service`)."""

    __tablename__ = "training_run"
    __table_args__ = (CheckConstraint(_in("status", TRAINING_STATUSES), name="status"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    collection_id: Mapped[int] = mapped_column(
        ForeignKey("collection.id", ondelete="CASCADE"), index=True
    )
    model: Mapped[str] = mapped_column(String(64))
    params: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    status: Mapped[str] = mapped_column(String(16), default="queued")
    metrics: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)
    model_json: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # What to train on and how to evaluate: truth source, folds, k (docs/training.md#runs).
    options: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True, default=dict)
    # The job: fold/iteration reached, executions started, the cancel flag, the worker's last
    # sign of life (recovery fails or retries a run whose heartbeat stops) and its time limit.
    progress: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    time_limit_seconds: Mapped[int | None] = mapped_column(Integer, nullable=True)


class LlmResponse(Base):
    """One cached reply of an LLM judge's endpoint (:mod:`app.machine.llm`): asking the same
    prompt again costs nothing. ``cache_key`` is the SHA-256 of (model, template key and
    hash, the full prompt, the request's parameters); the prompt itself is not stored (its
    documents are in the collection). No API key is ever stored."""

    __tablename__ = "llm_response"
    __table_args__ = (
        CheckConstraint("prompt_tokens >= 0 AND completion_tokens >= 0", name="tokens"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    cache_key: Mapped[str] = mapped_column(String(64), unique=True)
    model: Mapped[str] = mapped_column(String(200))
    template: Mapped[str] = mapped_column(String(64))
    prompt_hash: Mapped[str] = mapped_column(String(64))
    reply: Mapped[str] = mapped_column(Text)
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class LlmUsage(Base):
    """An LLM judge's spending per study: the plan (``task.plan``) of a collection, or, for
    tasks without a plan, the collection itself (``plan = ''``). Tokens count requests sent
    (cache hits are free and counted apart); the budget (``llm_token_budget``) is checked
    against ``prompt_tokens + completion_tokens``."""

    __tablename__ = "llm_usage"
    __table_args__ = (
        UniqueConstraint("collection_id", "plan"),
        CheckConstraint(
            "requests >= 0 AND cached >= 0 AND prompt_tokens >= 0 AND completion_tokens >= 0"
            " AND malformed >= 0 AND failed >= 0 AND refused >= 0",
            name="counts",
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    collection_id: Mapped[int] = mapped_column(ForeignKey("collection.id", ondelete="CASCADE"))
    plan: Mapped[str] = mapped_column(String(100), default="", server_default="")
    #: Requests answered by the endpoint, replies served from the cache, tokens of the
    #: answered requests, replies that did not parse (no opinion), prompts that failed after
    #: every retry (no opinion), prompts refused because the budget was spent (no opinion).
    requests: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    cached: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    prompt_tokens: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    completion_tokens: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    malformed: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    failed: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    refused: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    #: Of the failed prompts, those whose last attempt hit the request deadline.
    timeouts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    #: The last failure (a failed or malformed reply): what went wrong and when.
    last_error: Mapped[str | None] = mapped_column(String(300), nullable=True)
    last_error_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Run(Base):
    """A system's run stored on a collection (docs/campaigns.md#runs-on-a-collection): a TREC
    run uploaded by an admin, scored against the collection's label sets. Its entries are in
    :class:`RunQuery`, one row per query."""

    __tablename__ = "run"
    __table_args__ = (UniqueConstraint("collection_id", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    collection_id: Mapped[int] = mapped_column(
        ForeignKey("collection.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(200))
    #: The run tag of the file (the last column of its first line).
    tag: Mapped[str] = mapped_column(String(200), default="", server_default="")
    #: The uploaded file's name.
    file_name: Mapped[str] = mapped_column(String(255), default="", server_default="")
    #: The admin who uploaded it (NULL: the CLI, or a user deleted since).
    uploaded_by: Mapped[int | None] = mapped_column(
        ForeignKey("user.id", ondelete="SET NULL"), nullable=True
    )
    uploaded_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    n_queries: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    n_entries: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class RunQuery(Base):
    """One query's entries of a :class:`Run`, in file order: parallel lists of document
    external ids, the file's ranks and scores. Compact on purpose: a run is only ever read
    whole (scoring, pooling), so one row per query reads a run in as many rows as it has
    queries instead of one per retrieved document (docs/campaigns.md#runs-on-a-collection)."""

    __tablename__ = "run_query"
    __table_args__ = (
        UniqueConstraint("run_id", "query_id"),
        CheckConstraint("position >= 0", name="position"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("run.id", ondelete="CASCADE"))
    query_id: Mapped[int] = mapped_column(ForeignKey("query.id", ondelete="CASCADE"), index=True)
    #: The query's place in the file (order of first appearance), from 0.
    position: Mapped[int] = mapped_column(Integer)
    doc_ids: Mapped[list[str]] = mapped_column(JSONType)
    ranks: Mapped[list[int]] = mapped_column(JSONType)
    scores: Mapped[list[float]] = mapped_column(JSONType)


class CampaignPool(Base):
    """A pool built from many runs (docs/campaigns.md#pools-in-the-service): its settings,
    its runs in run order, and what the build knew (``summary``: counts per query, feedback)."""

    __tablename__ = "pool"
    __table_args__ = (
        UniqueConstraint("collection_id", "name"),
        CheckConstraint(_in("method", POOL_METHODS), name="method"),
        CheckConstraint("depth >= 1", name="depth"),
        CheckConstraint("budget IS NULL OR budget >= 1", name="budget"),
        CheckConstraint(_in("allocation", POOL_ALLOCATIONS), name="allocation"),
        CheckConstraint(_in("status", POOL_STATUSES), name="status"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    collection_id: Mapped[int] = mapped_column(
        ForeignKey("collection.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(100))
    #: How the pool picks (``depth``, ``mtf``, ``maxmean``, ``hedge``, ``cal``): not a task's
    #: method (docs/glossary.md); the column and the REST field keep the name ``method``.
    pool_method: Mapped[str] = mapped_column("method", String(16))
    depth: Mapped[int] = mapped_column(Integer)
    #: Judgments per query (NULL: the whole depth pool); with ``allocation`` ``campaign``, the
    #: documents of all the queries together.
    budget: Mapped[int | None] = mapped_column(Integer, nullable=True)
    #: ``query``: ``budget`` per query; ``campaign``: one budget over the collection's queries.
    allocation: Mapped[str] = mapped_column(String(16), default="query", server_default="query")
    #: The fused score that orders the pool (``rrf60``: reciprocal rank fusion, k = 60).
    fusion: Mapped[str] = mapped_column(String(32))
    runs: Mapped[list[str]] = mapped_column(JSONType)
    summary: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    #: ``building`` until the build's last batch of documents is written, then ``ready``;
    #: only a ready pool is listed with its counts, shown or planned from.
    status: Mapped[str] = mapped_column(String(16), default="ready", server_default="ready")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class PoolDocument(Base):
    """One document of a pool's depth-k union for one query: which runs retrieved it at which
    rank (``hits``: ``[[run, rank], ...]``, ranks 1-based), its fused score and ``position``
    in the fused order (0-based), and ``pick``: its place in the method's judging order when
    the pool selects it (NULL: outside the budget)."""

    __tablename__ = "pool_document"
    __table_args__ = (
        UniqueConstraint("pool_id", "query_id", "doc_id"),
        CheckConstraint("position >= 0", name="position"),
        CheckConstraint("pick IS NULL OR pick >= 0", name="pick"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    pool_id: Mapped[int] = mapped_column(ForeignKey("pool.id", ondelete="CASCADE"))
    query_id: Mapped[int] = mapped_column(ForeignKey("query.id", ondelete="CASCADE"), index=True)
    doc_id: Mapped[str] = mapped_column(String(200))
    position: Mapped[int] = mapped_column(Integer)
    pick: Mapped[int | None] = mapped_column(Integer, nullable=True)
    fused: Mapped[float] = mapped_column(Float)
    hits: Mapped[list[list[Any]]] = mapped_column(JSONType)
