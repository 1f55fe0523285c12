"""REST API v1: streamed exports of a collection's labels and judgments (admin).

* ``GET /collections/{id}/export?format=...`` — every format of
  :data:`app.exports.service.FORMATS` (``docs/exports.md``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from fastapi.responses import StreamingResponse
from starlette.concurrency import iterate_in_threadpool

from app.exports import service as exports
from app.http.deps import DbDep, require_admin
from app.http.openapi import declare_errors
from app.http.schemas import PathId

router = APIRouter(tags=["exports"], dependencies=[Depends(require_admin)])

FORMAT_HELP = "One of the registered formats:\n\n" + "\n".join(
    f"* `{f.name}`: {f.summary}" for f in exports.FORMATS.values()
)
_ENUM = {"enum": list(exports.FORMATS)}

LabelsParam = Annotated[
    str | None,
    Query(
        description="kappa (κ-labels of topk tasks) or grades (graded tasks); default: the "
        "format's own. qrels and topk-jsonl also take hybrid (κ-labels from every answer, a "
        "machine's too: the same as kappa, the default) or human (only the documents no "
        "machine answer touched keep a label; docs/exports.md#machine-answers). trec-prefs "
        "takes hybrid (the default) or human (people's answers only), qrels-jg grades (the "
        "default) or kappa.",
        json_schema_extra={"enum": [*exports.LABELS, *exports.PROVENANCE]},
    ),
]
SourceParam = Annotated[
    str,
    Query(
        description="Whose labels when a query has several finished tasks: first, assessor, "
        "all (one line per task), borda, bt, mean.",
        json_schema_extra={"enum": list(exports.SOURCES)},
    ),
]
AssessorParam = Annotated[
    str | None, Query(description="Only this assessor's tasks (empty: everyone's).")
]
MissingParam = Annotated[
    str,
    Query(
        description="LETOR formats: documents without features are an error, skipped, or "
        "zero vectors.",
        json_schema_extra={"enum": list(exports.MISSING_FEATURES)},
    ),
]
PlanParam = Annotated[
    str | None, Query(description="Only tasks of this plan label, e.g. study:A1 (empty: all).")
]


def export_response(db: DbDep, req: exports.ExportRequest) -> StreamingResponse:
    """Validate (404/422 before any byte), then stream the export as an attachment."""
    body = exports.export_stream(db=db, req=req)
    req = exports.resolve(req)
    headers = {"Content-Disposition": f'attachment; filename="{exports.download_name(req)}"'}
    used = exports.sources_header(db, req)
    if used is not None:
        headers["X-Heapjudge-Sources"] = used
    headers.update(exports.feature_set_headers(db, req))
    return StreamingResponse(
        iterate_in_threadpool(body),
        media_type=exports.FORMATS[req.format].media_type,
        headers=headers,
    )


_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "content": {
            "text/plain": {},
            "application/x-ndjson": {},
            "text/csv": {},
            "application/vnd.apache.parquet": {},
        }
    },
    409: {
        "description": "Nothing to export: no finished task of the labels' method (or no "
        "top-k judgment for the judgment formats) among the selected ones; the detail says "
        "which (docs/exports.md#empty-exports)."
    },
}


@router.get(
    "/collections/{collection_id}/export",
    response_class=StreamingResponse,
    responses=_RESPONSES,
    description=FORMAT_HELP
    + "\n\nFor the qrels formats with one task per query, header `X-Heapjudge-Sources` "
    "lists `query:assessor:task` per query, comma-separated, each part percent-encoded. An "
    "export that would be empty is a 409 saying why, never an empty file. "
    "For `letor` and `svmlight` of a collection with heapjudge's text features, headers "
    "`X-Heapjudge-Feature-Set` (`name/version`) and `X-Heapjudge-Feature-Names` (the column "
    "names in order, comma-separated).",
)
def export_collection(
    collection_id: PathId,
    db: DbDep,
    format: Annotated[str, Query(json_schema_extra=_ENUM)] = "qrels",
    labels: LabelsParam = None,
    source: SourceParam = "first",
    assessor: AssessorParam = None,
    missing_features: MissingParam = "error",
    plan: PlanParam = None,
) -> StreamingResponse:
    """Export the collection's labels or judgments in one of the registered formats."""
    return export_response(
        db,
        exports.ExportRequest(
            collection_id=collection_id,
            format=format,
            labels=labels,
            source=source,
            assessor=assessor,
            missing_features=missing_features,
            plan=plan,
        ),
    )


declare_errors(router)
