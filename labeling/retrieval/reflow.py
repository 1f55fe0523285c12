"""Reflow of plain-text documents for reading: hard-wrapped lines joined into paragraphs.

Plain-text collections (SMART/Cranfield abstracts, TREC ``<TEXT>`` bodies) keep the line breaks
of their source files: lines of 60–70 characters that look ragged in a frame of any other
width. :func:`paragraphs` turns such text into paragraphs, by these rules (documented for
assessors in ``docs/assessor-guide.md#reflow-and-the-title-rule``):

* a blank line ends a paragraph;
* a line that starts with white space (an indented first line, as in SMART abstracts) or looks
  like a list item (``-``, ``*``, ``•``, ``1.``, ``(a)``) starts a new paragraph;
* the other lines are joined to the previous one with a space; a line ending in a hyphen after a
  letter is joined without a space when the next line starts with a lower-case letter
  (``boundary-`` + ``layer`` gives ``boundary-layer``; the hyphen is kept because it cannot be
  told apart from a word-break hyphen);
* leading lines that together repeat the document's title (compared by words, ignoring case and
  punctuation) are dropped: SMART collections repeat the ``.T`` title as the first lines of the
  ``.W`` text, and the title is already shown above the frame.

This happens when a document is rendered, not when it is imported, so stored documents keep
their text exactly as imported and every exporter sees the original.
"""

from __future__ import annotations

import re

_LIST_ITEM = re.compile(r"^\s*(?:[-*•·]\s+|\d{1,3}[.)]\s+|\([a-zA-Z0-9]{1,3}\)\s+)")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def _words(s: str) -> list[str]:
    return _WORD.findall(s.lower())


def _drop_title(lines: list[str], title: str | None) -> list[str]:
    """``lines`` without the leading non-blank lines whose words are exactly the title's."""
    want = _words(title or "")
    if not want:
        return lines
    got: list[str] = []
    for i, line in enumerate(lines):
        if not line.strip():
            if got:
                return lines  # the first paragraph ended before the title was complete
            continue
        got += _words(line)
        if got == want:
            return lines[i + 1 :]
        if len(got) >= len(want) or want[: len(got)] != got:
            return lines
    return lines


def _join(prev: str, nxt: str) -> str:
    if len(prev) >= 2 and prev.endswith("-") and prev[-2].isalpha() and nxt[:1].islower():
        return prev + nxt
    return prev + " " + nxt


def paragraphs(text: str, title: str | None = None) -> list[str]:
    """The paragraphs of a plain-text document, each one line (see the module docstring)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    lines = _drop_title(lines, title)
    out: list[str] = []
    current: str | None = None
    for line in lines:
        if not line.strip():
            if current is not None:
                out.append(current)
                current = None
            continue
        starts_new = line[:1] in (" ", "\t") or _LIST_ITEM.match(line) is not None
        stripped = " ".join(line.split())
        if current is None:
            current = stripped
        elif starts_new:
            out.append(current)
            current = stripped
        else:
            current = _join(current, stripped)
    if current is not None:
        out.append(current)
    return out
