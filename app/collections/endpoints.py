"""REST API v1: collections, their queries, and the NDJSON import."""

from __future__ import annotations

import tempfile
from dataclasses import asdict

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool

from app.collections import service as collections
from app.collections.schemas import (
    CollectionCreate,
    CollectionOut,
    GuidelinesIn,
    GuidelinesOut,
    ImportReportOut,
    QueryOut,
)
from app.http.deps import CurrentUser, DbDep, require_admin
from app.http.openapi import declare_errors
from app.http.schemas import PathId

router = APIRouter(tags=["collections"])
admin = APIRouter(dependencies=[Depends(require_admin)])

#: Uploads larger than this are spooled to a temporary file while they stream in.
SPOOL_IN_MEMORY = 1024 * 1024

NDJSON_BODY = {
    "requestBody": {
        "required": True,
        "description": "One JSON object per line and per (query, document): query_id, query, "
        "description?, doc_id, title?, text? or html?, features? (numbers), grade? (0..4).",
        "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
    }
}


@admin.post("/collections", response_model=CollectionOut, status_code=201)
def create_collection(body: CollectionCreate, db: DbDep) -> CollectionOut:
    """Create a collection (admin)."""
    coll = collections.create_collection(db=db, name=body.name, description=body.description)
    return CollectionOut(
        **asdict(collections.get_collection(db=db, collection_id=coll.id, viewer=None))
    )


@router.get("/collections", response_model=list[CollectionOut])
def list_collections(db: DbDep, user: CurrentUser) -> list[CollectionOut]:
    """The collections with counts: all for an admin; for an assessor, those holding its tasks
    (docs/security.md#roles)."""
    return [CollectionOut(**asdict(c)) for c in collections.list_collections(db=db, viewer=user)]


@router.get("/collections/{collection_id}", response_model=CollectionOut)
def get_collection(collection_id: PathId, db: DbDep, user: CurrentUser) -> CollectionOut:
    """One collection: counts of queries, documents and tasks by status (404 for an assessor
    without a task in it)."""
    found = collections.get_collection(db=db, collection_id=collection_id, viewer=user)
    return CollectionOut(**asdict(found))


@router.get("/collections/{collection_id}/queries", response_model=list[QueryOut])
def list_queries(collection_id: PathId, db: DbDep, user: CurrentUser) -> list[QueryOut]:
    """The collection's queries with their document counts (404 for an assessor without a
    task in it)."""
    found = collections.list_queries(db=db, collection_id=collection_id, viewer=user)
    return [QueryOut(**asdict(q)) for q in found]


@router.get("/collections/{collection_id}/guidelines", response_model=GuidelinesOut)
def get_guidelines(collection_id: PathId, db: DbDep, user: CurrentUser) -> GuidelinesOut:
    """The collection's judging guidelines: Markdown and sanitised HTML (404 for an assessor
    without a task in it)."""
    found = collections.get_guidelines(db=db, collection_id=collection_id, viewer=user)
    return GuidelinesOut(**asdict(found))


@admin.put("/collections/{collection_id}/guidelines", response_model=GuidelinesOut)
def set_guidelines(collection_id: PathId, body: GuidelinesIn, db: DbDep) -> GuidelinesOut:
    """Replace the collection's judging guidelines (admin)."""
    guidelines = collections.set_guidelines(
        db=db, collection_id=collection_id, markdown=body.markdown
    )
    return GuidelinesOut(**asdict(guidelines))


@admin.post(
    "/collections/{collection_id}/import",
    response_model=ImportReportOut,
    openapi_extra=NDJSON_BODY,
)
async def import_documents(collection_id: PathId, request: Request, db: DbDep) -> ImportReportOut:
    """Import NDJSON (admin). All or nothing: any bad line -> 422 listing every line number and
    reason, and nothing is stored. Re-importing identical documents is a no-op."""
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY) as spool:
        # The body streams in (counted by the body-size middleware) and is parsed line by
        # line from the spool: no copy of the whole upload in memory beyond SPOOL_IN_MEMORY.
        async for chunk in request.stream():
            spool.write(chunk)
        spool.seek(0)
        report = await run_in_threadpool(
            collections.import_ndjson, db=db, collection_id=collection_id, data=spool
        )
    return ImportReportOut(**asdict(report))


router.include_router(admin)
declare_errors(router)
