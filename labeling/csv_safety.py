"""CSV formula-injection safety for every CSV heapjudge writes.

Spreadsheet programs (Excel, LibreOffice, Google Sheets) evaluate a cell as a formula when its
text starts with ``=``, ``+``, ``-`` or ``@``, and some also when it starts with a tab or a
carriage return (OWASP "CSV Injection"). Document ids, query titles and assessor names come from
imported files and users, so any of them could carry ``=HYPERLINK(...)``. We neutralise such a
cell by prefixing a single quote, which spreadsheets display as text and which a program can
strip again with :func:`unneutralise_cell`.

Plain numbers (``-1``, ``-0.5``, ``+3``) cannot be formulas, so they pass through unchanged;
otherwise every negative number in an export would turn into text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: Leading characters that make a spreadsheet treat a cell as a formula.
DANGEROUS_PREFIXES: tuple[str, ...] = ("=", "+", "-", "@", "\t", "\r")

_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def neutralise_cell(value: object) -> str:
    """Return ``value`` as CSV-safe text.

    ``None`` becomes the empty string; ints/floats and plain numeric strings are kept; any other
    text starting with one of :data:`DANGEROUS_PREFIXES` gets a leading ``'``.
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value) if isinstance(value, float) else str(value)
    text = str(value)
    if text.startswith(DANGEROUS_PREFIXES) and not _PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    return text


def neutralise_row(values: Iterable[object]) -> list[str]:
    """:func:`neutralise_cell` over a row."""
    return [neutralise_cell(v) for v in values]


def unneutralise_cell(text: str) -> str:
    """Undo :func:`neutralise_cell` for a cell read back from a heapjudge CSV.

    Only a quote followed by a dangerous prefix is removed, so ordinary text that happens to start
    with a quote (``'tis``) is left alone.
    """
    if len(text) >= 2 and text[0] == "'" and text[1:].startswith(DANGEROUS_PREFIXES):
        return text[1:]
    return text
