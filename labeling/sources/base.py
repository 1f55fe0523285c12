"""Shared pieces of the source parsers: records, error collection, line reading.

Every parser in :mod:`labeling.sources` reads *lines* (an iterable of ``str`` or ``bytes``) so that
an upload can be parsed while it streams, and reports problems as :class:`ParseIssue` values that
carry the file name and the 1-based line number. A parser does not stop at the first bad record
when it can resynchronise (next line, next ``<DOC>``, next ``.I``): it collects up to
:data:`MAX_ISSUES` issues and raises one :class:`SourceError` at the end, so an admin sees the
whole report in one go. Callers consume a parser completely before storing anything
(all-or-nothing imports).
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from labeling.errors import LabelingError

#: What a parser reads: a whole text, or its lines (``str`` or ``bytes``) as they stream.
Lines = str | bytes | Iterable[str | bytes]

#: Issues kept per parse; more are counted but not listed (a broken 1 GB file should not
#: produce a 1 GB error report).
MAX_ISSUES = 50


@dataclass(frozen=True, slots=True)
class ParseIssue:
    """One problem in an input file: where (file, 1-based line) and what."""

    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


class SourceError(LabelingError):
    """An input file (or several) could not be parsed; ``issues`` lists every problem found."""

    def __init__(self, issues: list[ParseIssue], *, more: int = 0) -> None:
        self.issues = list(issues)
        self.more = more
        text = "; ".join(str(i) for i in self.issues[:5])
        extra = len(self.issues) - 5 + more
        if extra > 0:
            text += f"; and {extra} more"
        super().__init__(text)

    @classmethod
    def single(cls, file: str, line: int, message: str) -> SourceError:
        return cls([ParseIssue(file, line, message)])


@dataclass(slots=True)
class IssueCollector:
    """Collects issues for one file; :meth:`raise_if_any` ends a parse."""

    file: str
    issues: list[ParseIssue] = field(default_factory=list)
    more: int = 0

    def add(self, line: int, message: str) -> None:
        if len(self.issues) < MAX_ISSUES:
            self.issues.append(ParseIssue(self.file, line, message))
        else:
            self.more += 1

    def __bool__(self) -> bool:
        return bool(self.issues)

    def raise_if_any(self) -> None:
        if self.issues:
            raise SourceError(self.issues, more=self.more)


def merge_errors(errors: Iterable[SourceError]) -> SourceError | None:
    """Combine the errors of several files into one report (``None`` when there are none)."""
    issues: list[ParseIssue] = []
    more = 0
    for error in errors:
        issues.extend(error.issues)
        more += error.more
    if not issues and not more:
        return None
    return SourceError(issues, more=more)


def numbered_lines(lines: Iterable[str | bytes], file: str) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` with line endings (LF, CRLF, CR) removed.

    Bytes are decoded as UTF-8 incrementally (a multi-byte character may span two chunks of a
    stream); a byte sequence that is not UTF-8 is an error that names the line. A leading BOM is
    dropped. Cranfield's CRLF files therefore read the same as LF files.
    """
    decoder = codecs.getincrementaldecoder("utf-8")()
    number = 0
    for number, raw in enumerate(lines, start=1):
        if isinstance(raw, bytes):
            try:
                text = decoder.decode(raw)
            except UnicodeDecodeError as exc:
                raise SourceError.single(file, number, f"not valid UTF-8 ({exc.reason})") from None
        else:
            text = raw
        if number == 1 and text.startswith("\ufeff"):
            text = text[1:]
        yield number, text.rstrip("\r\n")


_LINE_BREAK = re.compile(r"(?<=\n)|(?<=\r)(?!\n)")


def split_lines(data: str | bytes) -> list[str] | list[bytes]:
    """Split a whole text (or bytes) into lines keeping the terminators.

    Only LF, CRLF and CR end a line (``str.splitlines`` would also split on form feeds and
    Unicode separators and so disagree with an editor's line numbers).
    """
    if isinstance(data, bytes):
        return data.splitlines(keepends=True)
    return [part for part in _LINE_BREAK.split(data) if part]


def as_lines(data: Lines) -> Iterable[str | bytes]:
    """``data`` as lines: a whole text split by :func:`split_lines`, lines passed through."""
    return split_lines(data) if isinstance(data, str | bytes) else data


def parse_json_line(text: str) -> tuple[Any, str | None]:
    """``json.loads`` for one line of a JSON-lines file: ``(value, None)``, or ``(None, why)``
    for text that is not JSON, including what ``json.loads`` refuses with other errors (an
    integer beyond Python's digit limit, nesting deeper than the recursion limit)."""
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"{exc.msg} at column {exc.colno}"
    except ValueError as exc:
        return None, str(exc)
    except RecursionError:
        return None, "nested too deeply"


def iter_byte_lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """Re-cut a stream of byte chunks (an upload) into lines ending in ``\\n``.

    A CRLF split across two chunks stays one line ending; memory is bounded by the longest line.
    """
    pending = b""
    for chunk in chunks:
        if not chunk:
            continue
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for line in complete:
            yield line + b"\n"
    if pending:
        yield pending


# ---------------------------------------------------------------------------------------------
# Records shared by the parsers (``line`` = where the record starts, for later error reports)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Topic:
    """A query: ``query_id``, its short ``title`` (the query text) and optional longer fields."""

    query_id: str
    title: str
    description: str | None = None
    narrative: str | None = None
    source_id: str | None = None
    """The id printed in the file when it differs from ``query_id`` (Cranfield's ``.I 004``)."""
    line: int = 0


@dataclass(frozen=True, slots=True)
class SourceDocument:
    """A document's content; exactly one of ``text``/``html`` is set (may be empty text)."""

    doc_id: str
    title: str | None = None
    text: str | None = None
    html: str | None = None
    line: int = 0


@dataclass(frozen=True, slots=True)
class QrelsEntry:
    """A relevance judgment from a qrels file, already mapped to heapjudge's 0..4 grades."""

    query_id: str
    doc_id: str
    grade: int
    raw: str
    line: int = 0


@dataclass(frozen=True, slots=True)
class FeatureRow:
    """A LETOR row: the feature vector of ``doc_id`` under ``query_id`` (dense, feature 1 first)."""

    query_id: str
    doc_id: str
    features: tuple[float, ...]
    label: float
    line: int = 0
