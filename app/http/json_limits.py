"""The shape limits of a JSON request body, checked on its bytes before any parser sees it
(docs/security.md#request-bodies).

Parsing and validating JSON costs time and memory in proportion to the number of values it
holds, and a parser recurses once per level of nesting (orjson crashes the process on a body
of a few megabytes of ``[``; the standard parser raises ``RecursionError``). The byte limit
alone admits millions of values in 32 MiB, so every JSON body is also held to
:data:`MAX_JSON_VALUES` values and keys and :data:`MAX_JSON_DEPTH` levels of nesting.

:func:`json_shape_problem` decides with a few passes of ``bytes`` methods (C loops, no Python
object per value): first the upper bounds given by counting the structural characters
anywhere (a body that passes them is within the limits); only past them, the exact counts
outside strings. Its cost is linear in the body's bytes and bounded in memory by a copy of
them; the per-character Python loop (the depth) runs over at most ``2 * MAX_JSON_VALUES``
brackets and stops at the first level too deep.
"""

from __future__ import annotations

#: Values (of arrays, objects and the top level) plus object keys, at most. The largest
#: legitimate bodies are lists of query or document ids (a plan's queries, a task's initial
#: order); TREC runs and guidelines travel as single strings.
MAX_JSON_VALUES = 100_000

#: Levels of nested arrays and objects, at most (the API's models nest four deep).
MAX_JSON_DEPTH = 32

#: Every byte except the four brackets (``bytes.translate`` deletes them).
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")

LIMITS_MESSAGE = (
    f"JSON body too complex: at most {MAX_JSON_VALUES} values and keys, "
    f"nested at most {MAX_JSON_DEPTH} deep"
)


def _depth(brackets: bytes) -> int:
    """The deepest nesting of ``brackets`` (only ``[]{}``), or ``MAX_JSON_DEPTH + 1`` as soon
    as it is passed; an unbalanced closing bracket ends the count (the parser refuses it)."""
    depth = deepest = 0
    for byte in brackets:
        if byte in b"[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_JSON_DEPTH:
                    break
        else:
            depth -= 1
            if depth < 0:
                break
    return deepest


def json_shape_problem(raw: bytes) -> str | None:
    """Why ``raw`` (the bytes of a JSON body) is past the shape limits, or None when it is
    within them (or is not JSON at all: the parser then refuses it, still bounded).

    Outside strings, every value but the first follows a ``,`` or a ``:`` or opens an array
    or object, so ``1 + commas + colons + brackets`` bounds the values and keys. Strings
    are found by their quotes once the escapes that could hide a quote (``\\\\`` and
    ``\\"``) are taken out."""
    containers = raw.count(b"[") + raw.count(b"{")
    if containers <= MAX_JSON_DEPTH and (
        containers + raw.count(b",") + raw.count(b":") < MAX_JSON_VALUES
    ):
        return None  # upper bounds: structural characters inside strings count too
    text = raw.replace(b"\\\\", b"").replace(b'\\"', b"") if b"\\" in raw else raw
    if text.count(b'"') > 2 * MAX_JSON_VALUES:  # each string is a value or a key
        return LIMITS_MESSAGE
    outside = b"".join(text.split(b'"')[::2])
    containers = outside.count(b"[") + outside.count(b"{")
    if 1 + containers + outside.count(b",") + outside.count(b":") > MAX_JSON_VALUES:
        return LIMITS_MESSAGE
    if containers > MAX_JSON_DEPTH and _depth(outside.translate(None, _NOT_BRACKETS)) > (
        MAX_JSON_DEPTH
    ):
        return LIMITS_MESSAGE
    return None
