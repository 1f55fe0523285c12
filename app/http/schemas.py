"""The REST API v1's shared wire vocabulary: the strict request base, field types and the error body
(they shape /openapi.json; each concept's models live in its own ``schemas`` module).

Request models (:class:`StrictModel`) are checked once, at the edge, for every caller (the
bearer hot path and the cookie routes validate the same models):

- unknown keys are 422s that name the field, instead of silently ignored options;
- types are strict: a number must be a JSON integer (``true``, ``"5"`` and ``1e3`` are not
  integers) and a boolean a JSON boolean (``0`` is not ``false``);
- no string anywhere in the body (keys included, nested options too) may hold a NUL or a lone
  surrogate (``"\\ud800"``), which neither database can store;
- one-line names (collections, plans, models) hold no control or format characters.

The rules and their messages live in :mod:`labeling.identifiers`
(``docs/security.md#text-hygiene``).
"""

from __future__ import annotations

from itertools import islice
from typing import Annotated, Any, ClassVar, Literal

from fastapi import Path, Query
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    model_validator,
)
from pydantic_core import PydanticCustomError

from labeling.identifiers import check_label, text_problem

MethodName = Literal["topk", "graded"]
OutcomeName = Literal["left", "right", "tie", "not_relevant"]
#: Outcomes a request may send: a protocol outcome, or ``broken`` (a broken document).
AnswerOutcomeName = Literal["left", "right", "tie", "not_relevant", "broken"]
TaskStatus = Literal["pending", "active", "done", "cancelled"]

MAX_ACTIVE_MS = 24 * 3600 * 1000


def _check_strings(value: Any, where: str) -> None:
    """Raise ValueError for the first string (key or value) in ``value`` that is not clean
    text (:func:`labeling.identifiers.text_problem`), naming where it is."""
    if isinstance(value, str):
        problem = text_problem(value)
        if problem is not None:
            raise ValueError(f"{where} {problem}")
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                problem = text_problem(key)
                if problem is not None:
                    raise ValueError(f"a key in {where} {problem}")
            _check_strings(item, f"{where}.{key}")  # the key is clean text by now
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _check_strings(item, f"{where}[{i}]")


def _label(field: str) -> AfterValidator:
    return AfterValidator(lambda value: value if value is None else check_label(value, field))


#: The largest row id: the id columns are ``Integer``, a signed 32-bit integer on Postgres
#: (SQLite's are wider, but an id past this one would not fit the Postgres schema). Ids are
#: declared below ``MAX_ID + 1`` (``exclusiveMaximum`` 2**31, exact even where a generator
#: reads it as a float), so a larger one is a 422 the schema foretells on both databases, not
#: a number the database refuses (before, the schema said 2**63 and Postgres refused 2**31).
MAX_ID = 2**31 - 1
#: An id in a path (``/tasks/{task_id}``) or in a body.
PathId = Annotated[int, Path(lt=MAX_ID + 1, examples=[1])]
RowId = Annotated[int, Field(lt=MAX_ID + 1)]
#: An id in a query string (``?collection_id=``).
QueryId = Annotated[int, Query(lt=MAX_ID + 1)]


#: The largest question number: ``judgment.seq`` is a 32-bit integer column.
MAX_SEQ = 2**31 - 1
#: A question number in a body (``seq``, ``to_seq``): 0..MAX_SEQ, written as an integer (``3.0``
#: is a 422 like every float where an integer is expected: docs/rest-api.md).
Seq = Annotated[int, Field(ge=0, le=MAX_SEQ, json_schema_extra={"format": "int32"})]
#: The largest seed: seeds are stored in 64-bit columns (``task.seed``).
MAX_SEED = 2**63 - 1
#: A seed in a body: 0..MAX_SEED, declared below 2**63 as ids are (numpy takes no negative
#: seed).
Seed = Annotated[int, Field(ge=0, lt=MAX_SEED + 1)]

#: What a one-line name may not hold, as a JSON Schema ``pattern`` (documentation for
#: clients and generators; :func:`check_label` decides, with the same classes): control
#: characters (Unicode Cc) and the format characters (Cf) of the Basic Multilingual Plane.
LABEL_PATTERN = (
    "^[^\\x00-\\x1f\\x7f-\\x9f\\xad\\u0600-\\u0605\\u061c\\u06dd\\u070f"
    "\\u0890\\u0891\\u08e2\\u180e\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064"
    "\\u2066-\\u206f\\ufeff\\ufff9-\\ufffb]*$"
)
_LABEL_SCHEMA = Field(json_schema_extra={"pattern": LABEL_PATTERN})

#: A one-line name (collection, plan, training model): see :func:`check_label`.
CollectionName = Annotated[str, _label("name"), _LABEL_SCHEMA]
PlanName = Annotated[str, _label("plan"), _LABEL_SCHEMA]


#: Unknown keys reported one by one (pydantic's ``extra_forbidden`` errors) at most; past
#: this many, one error names the first few and the body is not looked at further.
MAX_UNKNOWN_KEYS = 10


class StrictModel(BaseModel):
    """Request bodies: unknown keys, loosely typed numbers or booleans, and NUL characters or
    lone surrogates anywhere are 422s that say where.

    Unknown keys are counted first, against the field names (a set difference, in C): past
    :data:`MAX_UNKNOWN_KEYS` of them the body is refused with one error at once, so a body
    of many unknown keys costs no error, text check or echo per key.

    ``max_json_bytes``: the longest JSON body the model's route reads, for the models whose
    free-form fields (options) leave the per-string limit unbounded; a longer body is
    refused as it arrives, before a parser sees it, with ``json_bytes_hint`` appended
    (:func:`app.http.json_limits.body_limit`, docs/security.md#request-bodies)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    max_json_bytes: ClassVar[int | None] = None
    json_bytes_hint: ClassVar[str] = ""

    @model_validator(mode="before")
    @classmethod
    def _clean_text(cls, data: Any) -> Any:
        if isinstance(data, dict) and len(data) > MAX_UNKNOWN_KEYS:
            unknown = data.keys() - cls.model_fields.keys()
            if len(unknown) > MAX_UNKNOWN_KEYS:
                first = islice((key for key in data if key in unknown), 3)  # body order
                some = ", ".join(repr(str(key)[:40]) for key in first)
                raise PydanticCustomError(
                    "extra_forbidden",
                    "Extra inputs are not permitted: {count} unknown keys ({some}, ...)",
                    {"count": len(unknown), "some": some},
                )
        _check_strings(data, "body")
        return data


#: The longest TREC run a request may carry as a JSON string (characters). Longer runs are
#: stored on the collection (``POST /admin/collections/{id}/runs``, multipart) and named.
#: At this length the largest legitimate body (:data:`RUN_BODY_BYTES`) parses in a few
#: milliseconds on the event loop (docs/security.md#request-bodies).
MAX_INLINE_RUN_CHARS = 4_000_000
#: The longest JSON body of the routes that take inline runs (plans, task creation): two
#: runs of :data:`MAX_INLINE_RUN_CHARS` ASCII characters and the rest of a plan.
RUN_BODY_BYTES = 8 * 1024 * 1024
#: What a refusal of a long run says to do instead.
STORED_RUN_HINT = (
    "upload a longer run to the collection (POST /api/v1/admin/collections/{id}/runs) and "
    "name it (stored_run, prior_stored_run)"
)


def _inline_run(value: str) -> str:
    if len(value) > MAX_INLINE_RUN_CHARS:
        raise PydanticCustomError(
            "string_too_long",
            "a TREC run sent inline takes at most {max_length} characters; {hint}",
            {"max_length": MAX_INLINE_RUN_CHARS, "hint": STORED_RUN_HINT},
        )
    return value


#: TREC run text sent inline (``qid Q0 docno rank score tag`` lines).
InlineRun = Annotated[
    str,
    AfterValidator(_inline_run),
    Field(json_schema_extra={"maxLength": MAX_INLINE_RUN_CHARS}),
]
#: The name of a run stored on the collection (``GET /admin/collections/{id}/runs``).
StoredRunName = Annotated[str, Field(min_length=1, max_length=200)]


#: How the question in a judgment's or undo's answer carries its documents.
DocumentsShape = Literal["full", "refs"]

#: A one-line reason (a broken document): see :func:`check_label`.
ReasonText = Annotated[str, _label("reason"), _LABEL_SCHEMA]


# The services build the response bodies as dicts (their web pages read the same dicts); the models
# below validate and document them at the API edge. Datetimes the services already give as
# ISO 8601 strings stay strings.

IsoTime = Annotated[str, Field(description="ISO 8601 date and time (UTC).")]
