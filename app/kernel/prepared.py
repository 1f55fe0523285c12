"""Prepared statements: a SQLAlchemy Core statement compiled once per dialect and run on the
raw DB-API cursor of a pooled connection.

Why: the judging loop runs four or five small statements per judgment, and SQLAlchemy's
per-execution machinery (execution context, events, parameter construction, result metadata)
cost several times the statements themselves (py-spy on ``benchmarks/api_load.py``: about a
quarter of the server's CPU per judgment). The statement is still written with Core (the same
tables, so a schema change cannot silently drift from it) and compiled by SQLAlchemy for the
dialect; what is skipped is only the per-call plumbing. Types keep working: every parameter
goes through its column type's bind processor and every result column through its result
processor (``TypeEngine.dialect_impl(dialect)``: UTC datetimes on SQLite, JSON columns, ...),
exactly as SQLAlchemy applies them.

Limits, checked at compile time: no expanding (``IN``) parameters; every parameter either has
a literal value in the statement or is given by name at execution.
"""

from __future__ import annotations

import re
from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import type_coerce
from sqlalchemy.engine import Dialect
from sqlalchemy.sql import ClauseElement, ColumnElement
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.types import NullType

Processor = Callable[[Any], Any] | None


class Prepared:
    """``stmt`` compiled for ``dialect``: :meth:`params` builds the driver's parameters from
    a mapping (names as in the statement's ``bindparam``/``values``), :meth:`rows` runs it on
    a DB-API cursor and returns named tuples with processed values."""

    __slots__ = (
        "_bind",
        "_defaults",
        "_dialect",
        "_order",
        "_positional",
        "_result",
        "_row",
        "_types",
        "sql",
    )

    def __init__(self, stmt: ClauseElement, dialect: Dialect) -> None:
        compiled = stmt.compile(dialect=dialect)
        if not isinstance(compiled, SQLCompiler):  # e.g. DDL, which has no bind parameters
            raise TypeError(f"prepared statements need a SQL statement, got {type(stmt).__name__}")
        if any(b.expanding or b.literal_execute for b in compiled.binds.values()):
            raise ValueError("prepared statements cannot have expanding/literal parameters")
        self.sql: str = compiled.string
        self._positional = bool(compiled.positional)
        names = (
            list(compiled.positiontup or ())
            if self._positional
            else list(dict.fromkeys(compiled.bind_names.values()))
        )
        self._order: tuple[str, ...] = tuple(names)
        self._defaults: dict[str, Any] = {}
        self._bind: dict[str, Processor] = {}
        self._dialect = dialect
        self._types = {name: bind.type for bind, name in compiled.bind_names.items()}
        for bind, name in compiled.bind_names.items():
            if not bind.required:
                self._defaults[name] = bind.effective_value
            self._bind[name] = bind.type.dialect_impl(dialect).bind_processor(dialect)
        columns = list(getattr(stmt, "selected_columns", ()))
        returning = getattr(compiled, "returning", None) or ()
        if not columns and returning:
            columns = list(returning)
        self._result: tuple[Processor, ...] = tuple(
            c.type.dialect_impl(dialect).result_processor(dialect, None) for c in columns
        )
        keys = [getattr(c, "key", None) or f"c{i}" for i, c in enumerate(columns)]
        self._row: type[tuple[Any, ...]] | None = (
            namedtuple("Row", keys, rename=True) if keys else None
        )

    def params(self, values: Mapping[str, Any]) -> Sequence[Any] | dict[str, Any]:
        """The driver parameters for ``values`` (missing names: the statement's literals)."""
        out = []
        for name in self._order:
            value = values[name] if name in values else self._defaults[name]
            processor = self._bind[name]
            out.append(processor(value) if processor is not None else value)
        return tuple(out) if self._positional else dict(zip(self._order, out, strict=True))

    def named_params(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """:meth:`params` of a named (pyformat) statement, as a dict."""
        params = self.params(values)
        if not isinstance(params, dict):
            raise ValueError("a positional statement has no named parameters")
        return params

    def server_prepare(self, name: str) -> str:
        """Postgres: ``PREPARE name (types) AS <this statement>``, its parameters as ``$1``,
        ``$2``, ... in :meth:`params` order, typed as their columns. For a connection that
        sends its statements in one simple query (several statements in one message, which the
        extended protocol cannot), where the driver prepares nothing itself: the server then
        plans the statement once per connection, not at every call."""
        if self._positional:
            raise ValueError("server_prepare expects a named (pyformat) statement")
        index = {n: i for i, n in enumerate(self._order, start=1)}
        body = re.sub(r"%\((\w+)\)s", lambda m: f"${index[m[1]]}", self.sql)
        types = ", ".join(self._types[n].compile(dialect=self._dialect) for n in self._order)
        return f"PREPARE {name} ({types}) AS {body}"

    def server_execute(self, name: str) -> str:
        """``EXECUTE name(...)`` of :meth:`server_prepare`, its arguments as named (pyformat)
        placeholders for the driver's client-side binding of :meth:`params` (psycopg's
        ``ClientCursor``: each value quoted by libpq as a literal)."""
        return f"EXECUTE {name}({', '.join(f'%({n})s' for n in self._order)})"

    def rows(self, cursor: Any, values: Mapping[str, Any] | None = None) -> list[Any]:
        """Execute on ``cursor`` and return all rows (named tuples; [] without a result)."""
        self.send(cursor, values)
        return self.fetch(cursor)

    def send(self, cursor: Any, values: Mapping[str, Any] | None = None) -> None:
        """Execute on ``cursor`` without reading the result: in psycopg's pipeline mode the
        statement is only queued, and travels with the next ones (:meth:`fetch` reads it)."""
        cursor.execute(self.sql, self.params(values or {}))

    def fetch(self, cursor: Any) -> list[Any]:
        """The rows of the statement last executed on ``cursor`` (see :meth:`rows`)."""
        if self._row is None:
            return []
        # fetchall first: in pipeline mode the result (description included) arrives with it.
        return self.made(cursor.fetchall())

    def made(self, raw_rows: Sequence[Sequence[Any]]) -> list[Any]:
        """Driver rows as this statement's named tuples, each value through its processor."""
        assert self._row is not None
        processors = self._result
        # typeshed types a namedtuple() built at run time as type[tuple], without _make.
        make = self._row._make  # type: ignore[attr-defined]
        return [
            make(p(v) if p is not None else v for p, v in zip(processors, raw, strict=True))
            for raw in raw_rows
        ]

    def fetch_one(self, cursor: Any) -> Any:
        """The one row (or None) of the statement last executed on ``cursor``."""
        found = self.fetch(cursor)
        if len(found) > 1:
            raise ValueError("more than one row")
        return found[0] if found else None

    def one_or_none(self, cursor: Any, values: Mapping[str, Any] | None = None) -> Any:
        self.send(cursor, values)
        return self.fetch_one(cursor)

    def execute(self, cursor: Any, values: Mapping[str, Any] | None = None) -> int:
        """Execute a statement without a result; returns the driver's rowcount."""
        cursor.execute(self.sql, self.params(values or {}))
        return int(cursor.rowcount)


def native(column: ColumnElement[Any]) -> ColumnElement[Any]:
    """``column`` read as the driver returns it, labelled with its own name: for ``Float``
    columns, whose result processor on psycopg needs the result's type code, which a
    prepared statement compiled ahead does not know (both drivers return floats natively)."""
    return type_coerce(column, NullType()).label(getattr(column, "key", None) or "value")
