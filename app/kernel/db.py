"""Engine and session factory, with the transaction discipline the judging log relies on.

One :class:`Database` per app (held on ``app.state.db``; no module-level engine). Services own
their transactions::

    with db.write() as s:      # SQLite: BEGIN IMMEDIATE; Postgres: BEGIN (READ COMMITTED)
        s.add(...)             # commits on exit, rolls back on any exception
    with db.read() as s:       # plain deferred read transaction, rolled back on exit
        s.scalars(...)

SQLite (``docs/architecture.md#sqlite``): every connection gets ``journal_mode=WAL``,
``busy_timeout``, ``foreign_keys=ON`` and ``synchronous=NORMAL``. pysqlite's own implicit
transaction handling is switched off (``isolation_level = None``) and the ``begin`` event emits
``BEGIN`` itself, following the SQLAlchemy pysqlite recipe ("Serializable isolation /
Savepoints / Transactional DDL"). Write transactions use ``BEGIN IMMEDIATE`` so they take the
write lock up front: a deferred transaction that reads and then writes gets SQLITE_BUSY
despite the busy timeout, and ``SELECT ... FOR UPDATE`` is a no-op on SQLite. The connection
of :meth:`Database.no_wait` (commits on the event loop) never checkpoints the WAL in a commit:
a passive checkpoint runs on a thread of its own instead (:data:`LOOP_CHECKPOINT_EVERY`).

Postgres goes through psycopg 3 (``postgresql+psycopg://``); ``postgres://`` and
``postgresql://`` URLs are rewritten to that driver.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.exc import DBAPIError, DisconnectionError
from sqlalchemy.orm import Session, sessionmaker

from app.kernel.settings import Settings

#: Execution option naming the SQLite BEGIN mode ("DEFERRED" or "IMMEDIATE").
SQLITE_BEGIN_OPTION = "heapjudge_sqlite_begin"

#: Commits of the event loop's write connection (:meth:`Database.no_wait`) between two WAL
#: checkpoints, each run on a thread of its own (``PRAGMA wal_checkpoint(PASSIVE)``). That
#: connection never checkpoints in a commit (``wal_autocheckpoint=0``): SQLite's automatic
#: checkpoint runs in whichever commit takes the WAL past 1,000 pages, and on the loop its copy
#: back and two fsyncs stalled every request the loop serves (docs/performance.md#pool-builds).
#: A submit writes a few pages, so about SQLite's default interval.
LOOP_CHECKPOINT_EVERY = 256


def normalise_url(url: str) -> str:
    """Route Postgres URLs to psycopg 3 (the only Postgres driver we install)."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


_BEGIN = {"DEFERRED": "BEGIN DEFERRED", "IMMEDIATE": "BEGIN IMMEDIATE"}


def _install_sqlite_listeners(engine: Engine, busy_timeout_ms: int) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take transaction control away from pysqlite; _on_begin emits BEGIN itself.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA synchronous=NORMAL")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        mode = connection.get_execution_options().get(SQLITE_BEGIN_OPTION, "DEFERRED")
        # Straight to the driver: exec_driver_sql's statement machinery cost more than the
        # BEGIN itself, and this runs for every transaction (three per judgment).
        connection.connection.dbapi_connection.execute(_BEGIN[mode])


def make_engine(
    url: str,
    *,
    pool_size: int = 10,
    max_overflow: int = 20,
    busy_timeout_ms: int = 10_000,
    echo: bool = False,
) -> Engine:
    """Create an engine with the pragmas/driver described in the module docstring."""
    url = normalise_url(url)
    if url.startswith("sqlite"):
        # Every connection SQLite opens is kept (same total as pool_size + max_overflow):
        # overflow connections are closed when returned, and reopening one (file open plus
        # four PRAGMAs) under load cost more than the queries it then ran.
        engine = create_engine(
            url,
            echo=echo,
            connect_args={"check_same_thread": False},
            pool_size=pool_size + max_overflow,
            max_overflow=0,
        )
        _install_sqlite_listeners(engine, busy_timeout_ms)
        return engine
    engine = create_engine(url, echo=echo, pool_size=pool_size, max_overflow=max_overflow)
    _install_idle_ping(engine)
    return engine


def check_writable(url: str) -> None:
    """Raise :class:`sqlalchemy.exc.SQLAlchemyError` if the database at ``url`` refuses
    writes (a read-only SQLite file, a read-only Postgres role or replica): a no-op update
    of the migrations' version row, rolled back. Reads alone would not tell: SQLite opens a
    file it cannot write read-only without a word."""
    engine = make_engine(url, pool_size=1, max_overflow=0)
    try:
        with engine.connect() as conn:
            conn.execute(text("UPDATE alembic_version SET version_num = version_num"))
            conn.rollback()
    finally:
        engine.dispose()


#: A pooled connection unused for longer than this is pinged before it is handed out.
PING_AFTER_IDLE_SECONDS = 10.0

_IDLE_SINCE = "heapjudge_idle_since"


def _install_idle_ping(engine: Engine) -> None:
    """Ping a pooled connection before use only if it sat idle in the pool for more than
    :data:`PING_AFTER_IDLE_SECONDS` (SQLAlchemy's "pessimistic disconnect handling" recipe
    with a custom checkout event); a dead one is replaced (``DisconnectionError`` makes the
    pool connect afresh).

    Why not ``pool_pre_ping``: it pings at every checkout, and with psycopg outside
    autocommit a ping is two round trips (``BEGIN``, ``SELECT 1``), as many as a judgment's
    own work. A connection in steady use has just shown that it works; if the server went
    away in between, the request fails once (503, "retry": ``app.http.errors``) and the broken
    connection is dropped (``Database._raw``; SQLAlchemy does it for its own sessions)."""

    @event.listens_for(engine, "checkin")
    def _on_checkin(_dbapi_connection: Any, record: Any) -> None:
        record.info[_IDLE_SINCE] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        idle_since = record.info.get(_IDLE_SINCE)
        if idle_since is None or time.monotonic() - idle_since <= PING_AFTER_IDLE_SECONDS:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
            dbapi_connection.rollback()  # the ping began a transaction
        except engine.dialect.loaded_dbapi.Error as exc:
            raise DisconnectionError(f"pooled connection is dead: {exc}") from exc


class WouldBlock(Exception):
    """A transaction could not start without waiting, inside :meth:`Database.no_wait`:
    someone else holds SQLite's write lock (``busy`` True), or the transaction is of a kind
    that always may wait (``busy`` False). Raised before anything is done in it."""

    def __init__(self, *, busy: bool = True) -> None:
        super().__init__("busy" if busy else "not applicable")
        self.busy = busy


#: Set by :meth:`Database.no_wait` for the work it encloses (per thread and task: a context
#: variable, so work handed to a worker thread never inherits it).
_NO_WAIT: ContextVar[bool] = ContextVar("heapjudge_no_wait", default=False)


class _NoWait:
    """The context of :meth:`Database.no_wait` (a class: it wraps every submit run on the
    event loop, and a generator-based context manager cost ten times the variable's set and
    reset)."""

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token = _NO_WAIT.set(True)

    def __exit__(self, *_exc: object) -> None:
        _NO_WAIT.reset(self._token)


@dataclass(slots=True)
class LoopConnection:
    """A connection of :class:`LoopConnections` (``connection``: a psycopg
    ``AsyncConnection``) with the names of the statements prepared on it (SQL ``PREPARE``:
    they live as long as the connection)."""

    connection: Any
    prepared: set[str] = field(default_factory=set)


class _LoopPool:
    """The idle connections of :class:`LoopConnections` for one event loop, and the number
    that may be in use at once."""

    __slots__ = ("idle", "slots")

    def __init__(self, size: int) -> None:
        self.idle: list[LoopConnection] = []
        self.slots = asyncio.Semaphore(size)


class LoopConnections:
    """Postgres connections for work done on the event loop itself: psycopg
    ``AsyncConnection`` in autocommit mode, opened with the engine's connect arguments. The
    user sends a whole transaction in one message (the protocol's implicit transaction: the
    statements of one simple query), so it is one round trip; outside autocommit, psycopg's
    own ``BEGIN`` would be a round trip of its own.

    Per event loop (a connection waits on the loop that uses it), at most ``size`` in use per
    loop (others wait, on the loop). A connection is kept only if it comes back idle and
    without error; any error closes it, so a dead or half-used connection (or one whose
    prepared statements are in doubt) is never reused.
    """

    def __init__(self, engine: Engine, size: int) -> None:
        _args, self._connect = engine.dialect.create_connect_args(engine.url)
        self._size = size
        self._pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopPool] = (
            weakref.WeakKeyDictionary()
        )

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[LoopConnection]:
        import psycopg

        loop = asyncio.get_running_loop()
        pool = self._pools.get(loop)
        if pool is None:
            pool = self._pools.setdefault(loop, _LoopPool(self._size))
        async with pool.slots:
            conn = pool.idle.pop() if pool.idle else None
            if conn is None:
                raw = await psycopg.AsyncConnection.connect(**self._connect, autocommit=True)
                conn = LoopConnection(raw)
            reusable = False
            try:
                yield conn
                status = conn.connection.info.transaction_status
                reusable = status == psycopg.pq.TransactionStatus.IDLE
            finally:
                if reusable:
                    pool.idle.append(conn)
                else:
                    await conn.connection.close()

    def close(self) -> None:
        """Close the idle connections of every loop (those in use close when returned)."""
        for pool in list(self._pools.values()):
            while pool.idle:
                pool.idle.pop().connection.pgconn.finish()  # synchronous: no loop needed


class Database:
    """The engine plus read/write session factories; passed to services as ``db``."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.url = normalise_url(settings.database_url)
        self.engine = make_engine(
            self.url,
            pool_size=settings.db_pool_size,
            max_overflow=settings.db_max_overflow,
            busy_timeout_ms=settings.sqlite_busy_timeout_ms,
        )

        self.is_sqlite = self.engine.dialect.name == "sqlite"
        write_bind = (
            self.engine.execution_options(**{SQLITE_BEGIN_OPTION: "IMMEDIATE"})
            if self.is_sqlite
            else self.engine
        )
        # SQLite admits one writer at a time. Queueing this process's writers on a lock hands
        # the database over at once, instead of every waiter polling in SQLite's busy handler
        # (which sleeps with back-off and made p99 latency explode under 32 writers);
        # busy_timeout still arbitrates between processes. (Reentrant, so a nested write in one
        # thread fails on SQLite's busy timeout, as it would without the lock, not hangs.)
        self._write_lock = threading.RLock() if self.is_sqlite else None
        #: In-process caches of services, by their :class:`app.kernel.caches.Slot` (read
        #: them through the slot, which types them).
        self.caches: dict[object, Any] = {}
        #: The connection of write transactions under :meth:`no_wait` (SQLite; opened on first
        #: use, used only under the write lock).
        self._nowait: Any = None
        #: Its commits since its last checkpoint, and the thread that runs those checkpoints
        #: (:data:`LOOP_CHECKPOINT_EVERY`).
        self._nowait_commits = 0
        self.checkpointer: threading.Thread | None = None
        self._checkpoint_wanted = threading.Event()
        self._checkpoint_done = threading.Event()
        self._disposed = False
        #: How many of those checkpoints ran, and what the last one answered
        #: (:meth:`checkpoint`).
        self.checkpoints = 0
        self.last_checkpoint: tuple[int, int, int] | None = None
        #: Postgres: connections for the judging loop's work on the event loop
        #: (:mod:`app.kernel.offload`); None on SQLite.
        self.loop_connections = (
            None if self.is_sqlite else LoopConnections(self.engine, settings.db_pool_size)
        )
        self._read = sessionmaker(bind=self.engine, expire_on_commit=False, autoflush=False)
        self._write = sessionmaker(bind=write_bind, expire_on_commit=False, autoflush=False)
        #: Asks the job queue for an ``llm`` task's pair opinions (``want_opinions(task_id)``,
        #: :func:`app.judging.jobs.enqueue_opinions`), called by the judging loop after a
        #: commit. Installed by the composition root (``app.main.create_app``): the judging
        #: loop cannot import the queue, whose job imports the judging loop. None: no one
        #: listens (scripts, workers), and people answer what no opinion covers.
        self.want_opinions: Callable[[int], object] | None = None

    @classmethod
    def from_url(cls, url: str, **overrides: Any) -> Database:
        """A Database for ``url`` with otherwise default (dev) settings; for scripts/tests."""
        return cls(Settings(database_url=url, dev=True, **overrides))

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @contextmanager
    def write(self) -> Iterator[Session]:
        """A write transaction: commits on success, rolls back on error."""
        if _NO_WAIT.get():
            raise WouldBlock(busy=False)
        lock = self._write_lock if self._write_lock is not None else nullcontext()
        with lock, self._write() as session, session.begin():
            yield session

    @contextmanager
    def read(self) -> Iterator[Session]:
        """A read transaction, ended on exit (the pool rolls the connection back). Loaded objects
        stay usable afterwards (closed, not expired). Never takes the SQLite write lock."""
        if _NO_WAIT.get() and not self.is_sqlite:
            raise WouldBlock(busy=False)
        with self._read() as session:
            yield session

    # Raw DB-API cursors for the hot paths' prepared statements (app.kernel.prepared: the judging
    # loop, the token lookup): the same transactions as write()/read(), without the ORM
    # Session's or Core Connection's bookkeeping, which cost more than the statements.

    @contextmanager
    def raw_write(self) -> Iterator[Any]:
        """A DB-API cursor in a write transaction (BEGIN IMMEDIATE and the process write lock
        on SQLite): commits on success, rolls back on error. Under :meth:`no_wait`, raises
        :class:`WouldBlock` instead of waiting for the write lock."""
        if _NO_WAIT.get():
            yield from self._raw_write_without_waiting()
            return
        lock = self._write_lock if self._write_lock is not None else nullcontext()
        with lock:
            yield from self._raw("BEGIN IMMEDIATE")

    @contextmanager
    def raw_read(self) -> Iterator[Any]:
        """A DB-API cursor in a read transaction (deferred on SQLite), rolled back on exit."""
        if _NO_WAIT.get() and not self.is_sqlite:
            raise WouldBlock(busy=False)
        yield from self._raw("BEGIN DEFERRED", commit=False)

    def no_wait(self) -> _NoWait:
        """Run the enclosed work (``with db.no_wait(): ...``) without ever waiting on the
        database: a write transaction that cannot start at once raises :class:`WouldBlock`
        (with nothing done in it).

        For short work run on the event loop thread (:mod:`app.kernel.offload`). Only SQLite
        qualifies: its readers never wait in WAL mode, and a writer gets the process's write
        lock or SQLite's without waiting or not at all (a dedicated connection with
        ``busy_timeout=0``). On Postgres every transaction raises ``WouldBlock(busy=False)``
        (each statement is a network round trip)."""
        return _NoWait()

    def _raw_write_without_waiting(self) -> Iterator[Any]:
        lock = self._write_lock
        if lock is None:
            raise WouldBlock(busy=False)
        if not lock.acquire(blocking=False):
            raise WouldBlock
        try:
            if self._nowait is None:
                self._nowait = self.engine.raw_connection()  # kept out of the pool for good
                self._nowait.driver_connection.execute("PRAGMA busy_timeout=0")
                # Its commits run on the event loop: none of them checkpoints (below).
                self._nowait.driver_connection.execute("PRAGMA wal_autocheckpoint=0")
            conn = self._nowait.driver_connection
            try:
                conn.execute("BEGIN IMMEDIATE")
            except self.engine.dialect.loaded_dbapi.OperationalError as exc:
                raise WouldBlock from exc  # SQLITE_BUSY: another process holds the lock
            yield from self._transaction(conn, commit=True)
            self._nowait_commits += 1
            if self._nowait_commits >= LOOP_CHECKPOINT_EVERY:
                self._checkpoint_aside()
        finally:
            lock.release()

    def _checkpoint_aside(self) -> None:
        """Ask for a passive WAL checkpoint on the checkpoint thread (called under the write
        lock): a flag set, nothing waited for (starting a thread waits until it runs, which on
        a busy machine the loop would wait for). The thread is started once, on first need.
        Passive: it takes no lock a writer or reader waits for, and copies back what no reader
        still needs; the fsyncs wait there, not on the loop."""
        self._nowait_commits = 0
        self._checkpoint_wanted.set()
        if self.checkpointer is None:
            self.checkpointer = threading.Thread(
                target=self._checkpoint_loop, name="heapjudge-wal-checkpoint", daemon=True
            )
            self.checkpointer.start()

    def _checkpoint_loop(self) -> None:
        while True:
            self._checkpoint_wanted.wait()
            self._checkpoint_wanted.clear()
            if self._disposed:
                return
            self.last_checkpoint = self.checkpoint()
            self.checkpoints += 1
            self._checkpoint_done.set()

    def checkpoint(self) -> tuple[int, int, int] | None:
        """``PRAGMA wal_checkpoint(PASSIVE)`` on a pooled connection: (busy, frames in the WAL,
        frames checkpointed), as SQLite answers; None on Postgres or when the database is gone
        (disposed meanwhile)."""
        if not self.is_sqlite:
            return None
        driver = self.engine.dialect.loaded_dbapi
        try:
            proxied = self.engine.raw_connection()
            conn = proxied.driver_connection
            assert conn is not None  # a checked-out connection has its driver connection
            try:
                row = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            finally:
                proxied.close()
        except driver.Error:
            return None
        return (int(row[0]), int(row[1]), int(row[2])) if row is not None else None

    def _raw(self, sqlite_begin: str, *, commit: bool = True) -> Iterator[Any]:
        proxied = self.engine.raw_connection()  # a pooled connection (pool events apply)
        conn = proxied.driver_connection
        assert conn is not None  # a checked-out connection has its driver connection
        invalidate = False
        try:
            if self.is_sqlite:
                # isolation_level is None on our SQLite connections: we BEGIN ourselves.
                try:
                    conn.execute(sqlite_begin)
                except self.engine.dialect.loaded_dbapi.Error as exc:
                    raise self._wrapped(exc) from exc
            yield from self._transaction(conn, commit=commit)
        except DBAPIError as exc:
            # A broken Postgres connection is dropped from the pool.
            driver = self.engine.dialect.loaded_dbapi
            invalidate = not self.is_sqlite and isinstance(
                exc.orig, (driver.OperationalError, driver.InterfaceError)
            )
            raise
        finally:
            if invalidate:
                proxied.invalidate()
            else:
                proxied.close()  # back to the pool (which resets it)

    def _wrapped(self, exc: Exception) -> DBAPIError:
        """A driver error as SQLAlchemy's class for it (DataError, IntegrityError,
        OperationalError, ...), as for every other query: the app's handlers map those."""
        driver = self.engine.dialect.loaded_dbapi
        wrapped = DBAPIError.instance(None, None, exc, driver.Error, dialect=self.engine.dialect)
        assert isinstance(wrapped, DBAPIError)  # a driver error maps to a DBAPIError subclass
        return wrapped

    def _transaction(self, conn: Any, *, commit: bool) -> Iterator[Any]:
        """The body of a raw transaction already begun on ``conn``: yields a cursor, then
        commits (or rolls back); rolls back on any error, driver errors re-raised wrapped."""
        driver = self.engine.dialect.loaded_dbapi
        try:
            try:
                cursor = conn.cursor()
                try:
                    yield cursor
                finally:
                    cursor.close()
                if commit:
                    conn.commit()
                else:
                    conn.rollback()
            except BaseException:
                with contextlib.suppress(driver.Error):
                    conn.rollback()
                raise
        except driver.Error as exc:
            raise self._wrapped(exc) from exc

    def dispose(self) -> None:
        if self.checkpointer is not None:  # its connection is the engine's
            self._disposed = True
            self._checkpoint_wanted.set()
            self.checkpointer.join()
            self.checkpointer = None
        if self.loop_connections is not None:
            self.loop_connections.close()
        if self._nowait is not None:
            self._nowait.invalidate()  # closes it (it never goes back to the pool)
            self._nowait = None
        self.engine.dispose()
