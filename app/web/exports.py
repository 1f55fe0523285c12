"""Admin page: the export form's download (``GET /admin/collections/{id}/export``); errors
are shown on the collection page, the form keeping its values (docs/exports.md)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse
from starlette.concurrency import iterate_in_threadpool, run_in_threadpool

from app.exports import service as exports
from app.http.deps import DbDep
from app.kernel.errors import DomainError
from app.web.admin import admin_session
from app.web.collections import collection_response
from app.web.forms import error_text

router = APIRouter()

#: The export form's fields (those of the REST export endpoint).
EXPORT_FIELDS = ("format", "labels", "source", "assessor", "missing_features", "plan")


@router.get("/admin/collections/{collection_id}/export")
async def export_download(request: Request, collection_id: int, db: DbDep) -> Response:
    """The export form's target (a GET: a download changes nothing). Validates like the REST
    endpoint, before any byte: on success the file is downloaded; on an error the collection
    page comes back with the message next to the form, which keeps its values. Empty fields
    mean "not given" (the form always sends every field)."""
    resolved, early = await admin_session(request, db)
    if early is not None:
        return early
    assert resolved is not None
    values = {
        name: request.query_params.get(name, "").strip()
        for name in EXPORT_FIELDS
        if request.query_params.get(name, "").strip()
    }
    req = exports.ExportRequest(
        collection_id=collection_id,
        format=values.get("format", "qrels"),
        labels=values.get("labels"),
        source=values.get("source", "first"),
        assessor=values.get("assessor"),
        missing_features=values.get("missing_features", "error"),
        plan=values.get("plan"),
    )
    try:
        body = await run_in_threadpool(exports.export_stream, db=db, req=req)
    except DomainError as exc:
        return await collection_response(
            request,
            resolved,
            db,
            collection_id,
            export_form=values,
            export_error=error_text(exc),
            status=exc.status_code,
        )
    req = exports.resolve(req)
    return StreamingResponse(
        iterate_in_threadpool(body),
        media_type=exports.FORMATS[req.format].media_type,
        headers={"Content-Disposition": f'attachment; filename="{exports.download_name(req)}"'},
    )
