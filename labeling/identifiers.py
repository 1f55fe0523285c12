"""The identifier rule and the text rule that every input path applies (request models, the
NDJSON import and the file readers of :mod:`labeling.sources`).

Identifiers (``query_id``, ``doc_id``) end up as columns of whitespace-separated export files
(TREC qrels and runs, LETOR comments): an identifier with a space, tab or line break in it would
split into extra columns or forge whole lines. So an identifier is

* 1 to :data:`MAX_IDENTIFIER_CHARS` characters,
* each one *printable and not a space*: no character of the Unicode categories ``Z*``
  (separators: space, no-break space, line and paragraph separators) or ``C*`` (control
  characters such as NUL, tab and newline; format characters such as zero-width spaces and
  bidirectional overrides; lone surrogates; private-use and unassigned code points),
* the first one not a combining mark (categories ``M*``: an accent with nothing to sit on),
* in Unicode NFC: every input path (the NDJSON import, the file readers, the judging
  requests) passes an identifier through :func:`normal_identifier` before anything else, so
  ``é`` written as one code point and as ``e`` + a combining acute accent are one identifier
  (the second spelling is then a duplicate like any other). The rule is checked on that form.
  Identifiers stored before this rule keep their spelling (no migration).

Letters of any script, digits and punctuation are fine (``FBIS3-10082``, ``clueweb09-en0000-00-
00000``, ``q:7``, ``文档-1``). Usernames have a narrower rule of their own (ASCII letters, digits
and ``_.@-``; :data:`USERNAME_PATTERN`).

Free text (query text, titles, document bodies, descriptions, names) may hold any character
except NUL (PostgreSQL text cannot store it; SQLite refuses it too so both backends agree) and a
lone surrogate (``"\\ud800"`` is valid JSON but no valid UTF-8: neither database driver can store
it and no response can echo it). See ``docs/security.md#text-hygiene``.

Pure functions: messages describe the problem and a position, never the offending value itself
(which might be the unencodable character).
"""

from __future__ import annotations

import re
import unicodedata

#: Longest identifier (the ``external_id`` and judgment ``doc`` columns hold 200 characters).
MAX_IDENTIFIER_CHARS = 200

#: Usernames: ASCII letters, digits and ``_ . @ -``, 1 to 64 characters, as an HTML ``pattern``
#: (implicitly anchored). ``-`` is escaped: browsers compile ``pattern`` with JavaScript's ``v``
#: flag, which refuses an unescaped ``-`` in a class (HTML Standard, "The pattern attribute");
#: the escape means the same in Python's ``re`` and in pydantic's regex.
USERNAME_HTML_PATTERN = r"[A-Za-z0-9_.@\-]{1,64}"
USERNAME_PATTERN = rf"^{USERNAME_HTML_PATTERN}$"
USERNAME_RE = re.compile(USERNAME_PATTERN)
USERNAME_RULE = "1-64 characters from ASCII letters, digits and _.@-"

IDENTIFIER_RULE = (
    f"1-{MAX_IDENTIFIER_CHARS} printable characters without spaces, tabs, line breaks or "
    "other control or format characters"
)


def normal_identifier(value: str) -> str:
    """``value`` in Unicode Normalization Form C (canonical composition): the one spelling of
    an identifier that every input path stores and compares (``docs/security.md#text-hygiene``).

    >>> normal_identifier("e\\u0301") == "\\u00e9"
    True
    """
    return value if value.isascii() else unicodedata.normalize("NFC", value)


def same_identifier(sent: str, stored: str) -> bool:
    """Whether ``sent`` names the identifier ``stored``: the same text, or the same
    :func:`normal_identifier` form (a request may use either Unicode spelling, and an
    identifier stored before the NFC rule may be in either)."""
    return sent == stored or normal_identifier(sent) == normal_identifier(stored)


def _describe(char: str) -> str:
    """A safe, readable name for a character: ``U+0009`` plus its Unicode name when it has
    one (surrogates and most control characters have none)."""
    name = unicodedata.name(char, "")
    return f"U+{ord(char):04X}" + (f" ({name})" if name else "")


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored as text (a lone surrogate or a NUL), or None.

    The message gives the character's position (1-based), not the value. Only a
    surrogate makes strict UTF-8 encoding fail, and an ASCII string (a flag of the string,
    no scan) holds none: a long text costs one pass in C, not a regular expression's."""
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return (
                f"contains a lone surrogate {_describe(value[exc.start])} at character "
                f"{exc.start + 1} (not valid Unicode text)"
            )
    nul = value.find("\x00")
    if nul >= 0:
        return f"contains a NUL character at character {nul + 1}"
    return None


def identifier_problem(value: str) -> str | None:
    """Why ``value`` is not a valid identifier (see the module docstring), or None.

    ``value`` is the identifier as it will be stored: :func:`normal_identifier` first. The
    message names a position, never the value.

    >>> identifier_problem("FBIS3-10082") is None
    True
    >>> identifier_problem("x\\ny 9 FAKE 4")
    'contains U+000A at character 2; an identifier is 1-200 printable characters without \
spaces, tabs, line breaks or other control or format characters'
    """
    if not value:
        return f"is empty; an identifier is {IDENTIFIER_RULE}"
    problem = text_problem(value)
    if problem is not None:
        return problem
    if len(value) > MAX_IDENTIFIER_CHARS:
        return f"is too long ({len(value)} characters); an identifier is {IDENTIFIER_RULE}"
    if unicodedata.category(value[0])[0] == "M":
        return (
            f"starts with the combining mark {_describe(value[0])} at character 1 "
            "(a combining mark cannot begin an identifier)"
        )
    for i, char in enumerate(value):
        if not char.isprintable() or char == " ":
            return (
                f"contains {_describe(char)} at character {i + 1}; "
                f"an identifier is {IDENTIFIER_RULE}"
            )
    return None


def label_problem(value: str) -> str | None:
    """Why ``value`` cannot be a one-line label (a collection, plan or model name), or None:
    :func:`text_problem`, or a control or format character (tab, line break, zero-width or
    bidirectional-override characters). Spaces and any script are fine."""
    problem = text_problem(value)
    if problem is not None:
        return problem
    for i, char in enumerate(value):
        if unicodedata.category(char)[0] == "C" or char in "\u2028\u2029":
            return f"contains {_describe(char)} at character {i + 1}; a name is one line of text"
    return None


def check_label(value: str, field: str) -> str:
    """``value`` if :func:`label_problem` finds nothing, else ``ValueError`` naming ``field``."""
    problem = label_problem(value)
    if problem is not None:
        raise ValueError(f"{field} {problem}")
    return value
