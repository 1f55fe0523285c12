"""The admin pages' forms: what a posted form holds (fields, integers, the files chosen) and
why a form was refused, as the page lists it (:class:`FormErrors`): file, line, message; the
first :data:`MAX_LISTED_ERRORS`, then "and M more"."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from starlette.datastructures import FormData, UploadFile

from app.kernel.errors import DomainError, Invalid

#: Name of the plan form's run upload (a TREC run for pooling).
RUN_UPLOAD = "pool_run"
#: The file each form needs, by its field name, as the page labels it.
FILE_LABELS = {
    "topics": "Topics",
    "queries": "Queries",
    "documents": "Documents",
    "qrels": "Qrels",
    "features": "LETOR file",
    "run": "TREC run",
    "ndjson": "NDJSON file",
    RUN_UPLOAD: "TREC run for pooling",
    "runs": "TREC runs",
}

#: Errors listed under a refused form; the rest are counted ("and M more").
MAX_LISTED_ERRORS = 10


@dataclass(frozen=True, slots=True)
class FormErrors:
    """Why a form was refused, as the page lists it."""

    summary: str
    items: list[str] = field(default_factory=list)
    more: int = 0
    """Errors not listed (beyond :data:`MAX_LISTED_ERRORS`, or beyond what the service
    reported)."""


def form_errors(exc: DomainError, summary: str, *, file: str = "") -> FormErrors:
    """The service error ``exc`` as a list: ``"file, line N: message"`` per located item
    (``file`` names items that carry none, e.g. the NDJSON import's), plain messages otherwise.
    The total comes from the service's ``"N error(s); ..."`` message when it capped its list."""
    detail = exc.detail
    if not isinstance(detail, list):
        return FormErrors(summary, [str(detail)])
    texts: list[str] = []
    for item in detail:
        if not isinstance(item, dict):
            texts.append(str(item))
            continue
        msg = str(item.get("msg", item.get("message", item)))
        line = item.get("line")
        if line:
            where = item.get("file") or file
            texts.append(f"{where}, line {line}: {msg}" if where else f"line {line}: {msg}")
        elif not msg.startswith("..."):  # the service's own "... and N more": counted below
            texts.append(msg)
    total = len(texts)
    counted = re.match(r"(\d+) error", str(exc.extra.get("message", "")))
    if counted:
        total = max(total, int(counted.group(1)))
    listed = texts[:MAX_LISTED_ERRORS]
    return FormErrors(summary, listed, total - len(listed))


def error_text(exc: DomainError) -> str:
    """The service error ``exc`` in one line (a flash message, a page's error text)."""
    detail = exc.detail
    if isinstance(detail, list):
        parts = []
        for item in detail[:8]:
            if isinstance(item, dict) and "line" in item and not item["line"]:
                parts.append(str(item.get("msg", "")))  # a summary, not a place
            elif isinstance(item, dict) and "line" in item:
                parts.append(f"{item.get('file', '')}:{item['line']}: {item.get('msg', '')}")
            elif isinstance(item, dict):
                parts.append(str(item.get("message", item)))
            else:
                parts.append(str(item))
        more = len(detail) - 8
        return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")
    return str(detail)


def posted_values(form: FormData) -> dict[str, Any]:
    """A posted form's text fields (``assessors`` as a list), to refill it after an error."""
    values: dict[str, Any] = {
        k: v for k, v in form.items() if isinstance(v, str) and k not in ("csrf_token", "create")
    }
    values["assessors"] = [v for v in form.getlist("assessors") if isinstance(v, str)]
    return values


def chosen_files(form: FormData) -> list[str]:
    """The files chosen in a posted form as "Label: file name" (to be chosen again: a browser
    never refills a file input)."""
    return [
        f"{FILE_LABELS.get(key, key)}: {value.filename}"
        for key, value in form.multi_items()
        if isinstance(value, UploadFile) and value.filename
    ]


def form_field(form: FormData, name: str, default: str = "") -> str:
    """A text field, stripped (``default`` when it was not posted)."""
    value = form.get(name)
    return value.strip() if isinstance(value, str) else default


def form_int(form: FormData, name: str) -> int | None:
    """An optional integer field; Invalid (shown as a message) if it is not a plain decimal
    integer ('²'.isdigit() is True, yet int('²') fails, so no isdigit() checks)."""
    value = form_field(form, name)
    if not value:
        return None
    if not value.isascii() or not value.lstrip("-").isdigit():
        raise Invalid(f"{name} must be an integer, got {value[:20]!r}")
    return int(value)
