"""Whether a qrels file's grades are written as integers, before the compiled scan reads it.

The compiled scan (:mod:`ranking.trec_eval.fast_read`) parses a grade as a C double, so
``1.0``, ``1e0`` and ``1e1`` come out as the integers 1, 1 and 10, where trec_eval's ``atol``
reads 1, 1 and 1 and the strict reader refuses all three (docs/trec-eval.md#input). A file
whose last fields are not all plain integer text therefore goes to the exact reader, which
names the line (or, with ``--lenient``, reads it as trec_eval does): the fast path never
accepts silently what the exact reader would refuse or read differently.
"""

from __future__ import annotations

import numpy as np

from ranking.trec_eval.fast_merge import compiled_integer_grades

__all__ = ["last_fields_are_integers"]

_DIGITS = np.zeros(256, dtype=bool)
_DIGITS[np.frombuffer(b"0123456789+-", dtype=np.uint8)] = True
_SEPARATOR = np.zeros(256, dtype=bool)
_SEPARATOR[np.frombuffer(b" \t", dtype=np.uint8)] = True
#: The longest grade text looked at; a longer last field sends the file to the exact reader.
_LONGEST = 8


def last_fields_are_integers(path: str) -> bool:
    """True when the last field of every line of ``path`` holds only the characters of an
    integer (digits and signs; the scan rejects a misplaced sign itself) and is at most
    :data:`_LONGEST` characters long; False otherwise, and for standard input or an
    unreadable file (the exact reader then reports it). False only costs the exact reader's
    time, so anything unusual (a CR, an empty line, a long field) answers False. Vectorised
    over the lines: the bytes before each newline, one position at a time, until a space or
    tab."""
    if path == "-":
        return False
    fast = compiled_integer_grades(path)
    if fast is not None:  # the same answer in one pass in C (_rankjoin.integer_grades)
        return fast
    try:
        data = np.fromfile(path, dtype=np.uint8)
    except OSError:
        return False
    if not len(data):
        return False
    ends = np.flatnonzero(data == 10)
    if not len(ends) or ends[-1] != len(data) - 1:
        ends = np.append(ends, len(data))
    open_lines = np.ones(len(ends), dtype=bool)  # no separator reached yet
    for back in range(1, _LONGEST + 2):
        pos = ends[open_lines] - back
        if (pos < 0).any():
            return False
        chars = data[pos]
        if back == 1 and not _DIGITS[chars].all():
            return False  # an empty last field, a CR, a trailing blank...
        separator = _SEPARATOR[chars]
        if not (separator | _DIGITS[chars]).all():
            return False
        open_lines[np.flatnonzero(open_lines)[separator]] = False
        if not open_lines.any():
            return True
    return False
