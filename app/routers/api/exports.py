"""REST API v1: streamed exports of a collection's labels (admin)."""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Depends
from fastapi.responses import StreamingResponse
from starlette.concurrency import iterate_in_threadpool

from app.deps import DbDep, require_admin
from app.schemas import ExportFormat
from app.services import exports

router = APIRouter(tags=["exports"], dependencies=[Depends(require_admin)])


@router.get(
    "/collections/{collection_id}/export",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/plain": {}, "application/x-ndjson": {}}}},
)
def export_collection(
    collection_id: int,
    db: DbDep,
    format: ExportFormat = "qrels",
    assessor: str | None = None,
) -> StreamingResponse:
    """``qrels`` (κ-labels of finished topk tasks), ``topk-jsonl``, ``pairs-jsonl``,
    ``grades-qrels``. ``assessor`` picks whose labels (default: the first finished task).

    For the qrels formats, header ``X-Heapjudge-Sources`` lists ``query:assessor:task`` per
    query, comma-separated, each part percent-encoded (UTF-8)."""
    lines = exports.export_lines(
        db=db, collection_id=collection_id, format=format, assessor=assessor
    )
    headers = {
        "Content-Disposition": (
            f'attachment; filename="collection-{collection_id}-{format}.'
            f'{exports.FILE_SUFFIX[format]}"'
        )
    }
    if format in ("qrels", "grades-qrels"):
        method = "topk" if format == "qrels" else "graded"
        used = exports.sources(db=db, collection_id=collection_id, method=method, assessor=assessor)
        # Ids and names are free text: percent-encode each part (UTF-8), so the header is
        # ASCII (no 500 on non-Latin-1 ids), cannot carry CR/LF (no header injection), and
        # ':' / ',' inside an id stay unambiguous.
        headers["X-Heapjudge-Sources"] = ",".join(
            ":".join(quote(str(part), safe="") for part in (s.query_id, s.assessor, s.task_id))
            for s in used
        )[:4000]
    return StreamingResponse(
        iterate_in_threadpool(lines), media_type=exports.MEDIA_TYPES[format], headers=headers
    )
