"""JSON Lines documents: one object per line.

Accepted keys: the id as ``doc_id`` (or ``docno`` / ``id``), optional ``title``, and the body as
``text`` *or* ``html``. Unknown keys are ignored (corpora carry urls, dates, ...). Every
problem names the file and line; duplicate ids are errors.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from labeling.identifiers import identifier_problem, normal_identifier, text_problem
from labeling.sources.base import (
    IssueCollector,
    SourceDocument,
    as_lines,
    numbered_lines,
    parse_json_line,
)

ID_KEYS = ("doc_id", "docno", "id")


def parse_jsonl_docs(
    data: str | bytes | Iterable[str | bytes], *, file: str = "docs.jsonl"
) -> Iterator[SourceDocument]:
    """Yield :class:`SourceDocument` per line; raise one SourceError at the end if any line was
    bad (so consume it completely before storing anything)."""
    lines = as_lines(data)
    issues = IssueCollector(file)
    seen: dict[str, int] = {}
    for number, text in numbered_lines(lines, file):
        if not text.strip():
            continue
        obj, problem = parse_json_line(text)
        if problem is not None:
            issues.add(number, f"not valid JSON ({problem})")
            continue
        if not isinstance(obj, dict):
            issues.add(number, "expected a JSON object")
            continue
        key = next((k for k in ID_KEYS if k in obj), None)
        if key is None:
            issues.add(number, "missing document id (doc_id, docno or id)")
            continue
        raw_id = obj[key]
        if isinstance(raw_id, bool) or not isinstance(raw_id, str | int) or str(raw_id) == "":
            issues.add(number, f"{key} must be a non-empty string or integer")
            continue
        doc_id = normal_identifier(str(raw_id))
        problem = identifier_problem(doc_id)
        if problem is not None:
            issues.add(number, f"{key} {problem}")
            continue
        bad = [
            k
            for k in ("title", "text", "html")
            if k in obj and obj[k] is not None and not isinstance(obj[k], str)
        ]
        if bad:
            issues.add(number, f"{', '.join(bad)} must be text")
            continue
        unclean = [(k, p) for k in ("title", "text", "html") if (p := _text_problem(obj.get(k)))]
        if unclean:
            issues.add(number, "; ".join(f"{k} {p}" for k, p in unclean))
            continue
        text_v, html_v = obj.get("text"), obj.get("html")
        if text_v is not None and html_v is not None:
            issues.add(number, "give either text or html, not both")
            continue
        if doc_id in seen:
            issues.add(number, f"duplicate document id {doc_id} (first on line {seen[doc_id]})")
            continue
        seen[doc_id] = number
        yield SourceDocument(
            doc_id,
            obj.get("title"),
            text_v if html_v is None else None,
            html_v,
            number,
        )
    if not seen and not issues:
        issues.add(1, "no documents found")
    issues.raise_if_any()


def _text_problem(value: str | None) -> str | None:
    return text_problem(value) if value is not None else None
