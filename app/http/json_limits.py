"""The shape limits of a JSON request body, checked on its bytes before any parser sees it
(docs/security.md#request-bodies).

Parsing and validating JSON costs time and memory in proportion to the number of values it
holds, and a parser recurses once per level of nesting (orjson crashes the process on a body
of a few megabytes of ``[``; the standard parser raises ``RecursionError``). The byte limit
alone admits millions of values in 32 MiB, so every JSON body is also held to
:data:`MAX_JSON_VALUES` values and keys and :data:`MAX_JSON_DEPTH` levels of nesting.

:class:`JsonShape` decides chunk by chunk as the body arrives, with a few passes of
``bytes`` methods over each chunk (C loops, no Python object per value): its cost is linear
in the body's bytes, its memory a copy of one chunk, and the per-character Python loop (the
nesting) runs only near the depth limit, over at most ``2 * MAX_JSON_VALUES`` brackets in
all. The body-size middleware (:class:`app.http.middleware.BodySizeLimitMiddleware`) feeds
it every JSON body but the small ones of one chunk.
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Any

from pydantic import TypeAdapter

#: Values (of arrays, objects and the top level) plus object keys, at most. The largest
#: legitimate bodies are lists of query or document ids (a plan's queries, a task's initial
#: order); TREC runs and guidelines travel as single strings.
MAX_JSON_VALUES = 100_000

#: Levels of nested arrays and objects, at most (the API's models nest four deep).
MAX_JSON_DEPTH = 32

#: Every byte except the four brackets (``bytes.translate`` deletes them).
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")

#: The smallest per-string limit (bytes of JSON text): a body of one small chunk is not
#: checked at all (:data:`app.http.middleware.SMALL_JSON_BODY`), and below this the models'
#: own ``max_length`` errors say more.
MIN_STRING_LIMIT = 64 * 1024

#: JSON text per character at most: ``\\uXXXX`` (a surrogate pair is two of them for a
#: character that Python counts once).
_BYTES_PER_CHAR = 12

LIMITS_MESSAGE = (
    f"JSON body too complex: at most {MAX_JSON_VALUES} values and keys, "
    f"nested at most {MAX_JSON_DEPTH} deep"
)


class JsonShape:
    """The running check of one JSON body fed chunk by chunk as it arrives
    (:meth:`feed`), so a body past the limits is refused at the first chunk that passes
    them and no step works on more than one chunk at a time.

    Exact counts outside strings: every value but the first follows a ``,`` or a ``:`` or
    opens an array or object, so ``1 + commas + colons + brackets`` bounds the values and
    keys; each string is a value or a key (two quotes). Strings are found by their quotes
    once the escapes that could hide a quote (``\\\\`` and ``\\"``) are taken out; a
    chunk ending inside an escape carries it over. On a body that is not JSON the counts
    may be off, never unbounded: the parser refuses such a body where it breaks."""

    def __init__(
        self,
        *,
        checked: bool = True,
        max_string: int | None = None,
        max_bytes: tuple[int, str] | None = None,
    ) -> None:
        """``checked=False``: a body the route does not read as JSON; :meth:`feed` passes it.
        ``max_string``: the bytes of JSON text one string (key or value) may take, None for
        no limit (:func:`string_limit`). ``max_bytes``: the bytes the whole body may take and
        what the refusal adds (:func:`body_limit`), None for the server's limit only."""
        self.values = 1
        self.max_string = max_string
        self.max_bytes = max_bytes
        self.total = 0
        self.open_string = 0  # bytes of the string still open at the end of the last chunk
        self.quotes = 0
        self.depth = 0
        self.in_string = False
        self.escape_pending = False
        # Nothing more to check: not read as JSON, or an unmatched closing bracket (the
        # parser refuses the body there).
        self.broken = not checked

    def feed(self, chunk: bytes) -> str | None:
        """Count ``chunk``; :data:`LIMITS_MESSAGE` once the body is past a limit."""
        if self.broken or not chunk:
            return None
        self.total += len(chunk)
        if self.max_bytes is not None and self.total > self.max_bytes[0]:
            limit, hint = self.max_bytes
            return f"JSON body longer than {limit} bytes, the most this request takes{hint}"
        if self.escape_pending:  # the previous chunk ended with the escape's backslash
            chunk = b"_" + chunk[1:]
            self.escape_pending = False
        if b"\\" in chunk:
            # Escapes that could hide a quote become two neutral bytes: the strings keep
            # their length in JSON text (what parsing them costs).
            chunk = chunk.replace(b"\\\\", b"__")
            if chunk.endswith(b"\\"):
                chunk = chunk[:-1] + b"_"
                self.escape_pending = True
            chunk = chunk.replace(b'\\"', b"__")
        quotes = chunk.count(b'"')
        self.quotes += quotes
        if self.quotes > 2 * MAX_JSON_VALUES:
            return LIMITS_MESSAGE
        if quotes:
            pieces = chunk.split(b'"')
            inside = pieces[0::2] if self.in_string else pieces[1::2]
            outside = b"".join(pieces[1::2] if self.in_string else pieces[0::2])
            if self.max_string is not None and self._long_string(inside, quotes):
                return self.string_message()
            self.in_string ^= quotes % 2 == 1
        elif self.in_string:
            self.open_string += len(chunk)
            if self.max_string is not None and self.open_string > self.max_string:
                return self.string_message()
            return None
        else:
            outside = chunk
        opened = outside.count(b"[") + outside.count(b"{")
        self.values += opened + outside.count(b",") + outside.count(b":")
        if self.values > MAX_JSON_VALUES:
            return LIMITS_MESSAGE
        closed = outside.count(b"]") + outside.count(b"}")
        if self.depth + opened <= MAX_JSON_DEPTH and closed <= self.depth:
            self.depth += opened - closed  # never deeper than the limit within the chunk
            return None
        return self._brackets(outside.translate(None, _NOT_BRACKETS))

    def _long_string(self, inside: list[bytes], quotes: int) -> bool:
        """Whether a string of this chunk's pieces inside quotes (the first continuing the
        string the last chunk left open, if any) passes ``max_string``; notes the length of
        the one left open at the chunk's end."""
        assert self.max_string is not None
        lengths = [len(p) for p in inside]
        if self.in_string:
            lengths[0] += self.open_string
        ends_inside = self.in_string ^ (quotes % 2 == 1)
        self.open_string = lengths[-1] if ends_inside and lengths else 0
        return bool(lengths) and max(lengths) > self.max_string

    def string_message(self) -> str:
        """The refusal of a string past ``max_string``."""
        return (
            f"JSON body too complex: a string longer than {self.max_string} bytes, more than "
            "any field of this request takes"
        )

    def _brackets(self, brackets: bytes) -> str | None:
        """Follow the nesting bracket by bracket (runs over at most ``2 * MAX_JSON_VALUES``
        brackets in all: each opening one is a counted value)."""
        for byte in brackets:
            if byte in b"[{":
                self.depth += 1
                if self.depth > MAX_JSON_DEPTH:
                    return LIMITS_MESSAGE
            else:
                self.depth -= 1
                if self.depth < 0:
                    self.broken = True
                    return None
        return None


def json_shape_problem(raw: bytes) -> str | None:
    """Why ``raw``, a whole JSON body, is past the shape limits, or None when it is within
    them (or is not JSON at all: the parser then refuses it)."""
    return JsonShape().feed(raw)


_STRING_LIMITS: weakref.WeakKeyDictionary[Any, int | None] = weakref.WeakKeyDictionary()


def string_limit(route: object) -> int | None:
    """The bytes of JSON text one string of ``route``'s body may take: the longest
    ``maxLength`` of the strings its body model declares, :data:`_BYTES_PER_CHAR` bytes a
    character (escapes), at least :data:`MIN_STRING_LIMIT`; None (no limit) when a string
    of the model has no ``maxLength`` (or the route has no body model). Longer strings are
    refused before the parser spends time on them (docs/security.md#request-bodies).
    Computed once per route."""
    try:
        return _STRING_LIMITS[route]
    except (KeyError, TypeError):
        pass
    limit: int | None = None
    field = getattr(route, "body_field", None)
    if field is not None:
        try:
            schema = TypeAdapter(field.field_info.annotation).json_schema()
        except Exception:  # a body type without a JSON schema: no limit
            schema = None
        longest = _longest_string(schema) if schema is not None else None
        if longest is not None:
            limit = max(MIN_STRING_LIMIT, _BYTES_PER_CHAR * longest + 16)
    with contextlib.suppress(TypeError):  # a route that is not weakly referenceable
        _STRING_LIMITS[route] = limit
    return limit


def body_limit(route: object) -> tuple[int, str] | None:
    """The bytes the JSON body of ``route`` may take and the hint its refusal adds: the body
    model's ``max_json_bytes`` (:class:`app.http.schemas.StrictModel`), None for no limit but
    the server's. The routes that take TREC runs inline have one: their free-form options
    leave :func:`string_limit` unbounded, and a body of long strings costs its parse on the
    event loop (docs/security.md#request-bodies)."""
    field = getattr(route, "body_field", None)
    model = getattr(getattr(field, "field_info", None), "annotation", None)
    limit = getattr(model, "max_json_bytes", None)
    if not isinstance(limit, int):
        return None
    hint = getattr(model, "json_bytes_hint", "")
    return limit, f"; {hint}" if hint else ""


def _longest_string(schema: Any) -> int | None:
    """The longest ``maxLength`` (or enum/const value) of the string schemas in ``schema``
    (``$defs`` included), or None if one string, or one object's keys, is unbounded."""
    longest = 0
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        kind = node.get("type")
        kinds = kind if isinstance(kind, list) else [kind]
        if "string" in kinds:
            if "maxLength" in node:
                longest = max(longest, int(node["maxLength"]))
            elif "enum" in node or "const" in node:
                values = node.get("enum", [node.get("const")])
                longest = max([longest, *(len(str(v)) for v in values)])
            else:
                return None
        if "object" in kinds and node.get("additionalProperties", True) is not False:
            return None  # a dict: its keys are strings of any length
        stack.extend(v for v in node.values() if isinstance(v, dict | list))
    return longest


def is_json_type(kind: str) -> bool:
    """``application/json`` or ``application/*+json`` (parameters left out, lower case)."""
    return kind == "application/json" or (
        kind.startswith("application/") and kind.endswith("+json")
    )


def reads_json(route: object) -> bool:
    """Whether the matched ``route`` may read its body as JSON: every route but one whose
    request body declares only other media types (``openapi_extra``: the NDJSON import,
    the multipart uploads), which reads its body as a stream of its own format whatever
    the ``Content-Type`` says."""
    extra = getattr(route, "openapi_extra", None) or {}
    declared = extra.get("requestBody", {}).get("content")
    return not declared or any(is_json_type(str(kind).lower()) for kind in declared)


def shape_error(problem: str) -> list[dict[str, object]]:
    """The ``detail`` of the 422 for a body past the limits (one FastAPI-shaped item)."""
    return [{"type": "json_too_complex", "loc": ["body"], "msg": problem, "input": None}]
