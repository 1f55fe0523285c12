"""The judging loop's on-loop document store: document payloads by task, in process.

Document payloads (title, text, html: what a question shows) are cached per (task id, task
``created_at``, doc id). Documents never change while a task that references them exists:
there is no document update path, deleting a collection deletes its tasks, and a reused
SQLite rowid comes with a new ``created_at``. On the first miss the task's whole pool is read
(up to :data:`PREFETCH_MAX` documents), so a task reads its documents once per process
instead of once per question.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from app.kernel.caches import LRU

Payload = dict[str, Any]

#: ``fetch(query_id, doc_ids)``: the stored documents found, by external id.
Fetch = Callable[[int, Sequence[str]], dict[str, Any]]

#: Pools up to this size are read whole on the first miss.
PREFETCH_MAX = 256


def document_payload(doc: Any, doc_id: str) -> Payload:
    """A document as the client sees it; absent text/html are left out (not null)."""
    if doc is None:  # cannot happen for a consistent database; never fail the loop for it
        return {"doc_id": doc_id, "title": doc_id}
    out: Payload = {"doc_id": doc_id, "title": doc.title}
    if doc.text is not None:
        out["text"] = doc.text
    if doc.html is not None:
        out["html"] = doc.html
    return out


class DocumentCache:
    """Payloads of the documents of tasks (see the module docstring)."""

    def __init__(self, size: int = 4096) -> None:
        self._lru = LRU(size)

    def has(self, task: Any, doc_ids: Sequence[str]) -> bool:
        """Whether the payloads of all ``doc_ids`` of ``task`` are cached (no fetch needed)."""
        return all((task.id, task.created_at, d) in self._lru for d in doc_ids)

    def payloads(self, task: Any, doc_ids: Sequence[str], fetch: Fetch) -> dict[str, Payload]:
        """Payloads of ``doc_ids`` of ``task`` (anything with ``id``, ``created_at``,
        ``query_id`` and ``doc_ids``); what is not cached is read with ``fetch``. Each
        payload is a copy: callers may decorate it."""
        out: dict[str, Payload] = {}
        missing: list[str] = []
        for doc_id in doc_ids:
            cached = self._lru.get((task.id, task.created_at, doc_id))
            if cached is None:
                missing.append(doc_id)
            else:
                out[doc_id] = dict(cached)
        if not missing:
            return out
        pool = list(task.doc_ids or ())
        if len(pool) <= PREFETCH_MAX:
            key = (task.id, task.created_at)
            rest = (d for d in pool if (*key, d) not in self._lru)
            missing = list(dict.fromkeys([*missing, *rest]))
        found = fetch(task.query_id, missing)
        for doc_id in missing:
            doc = found.get(doc_id)
            payload = document_payload(doc, doc_id)
            if doc_id in doc_ids:
                out[doc_id] = payload
            if doc is not None:
                self._lru.put((task.id, task.created_at, doc_id), dict(payload))
        return out
