"""REST API v1, admin console: pools from many runs (role admin; 403 for assessors).

* ``POST /admin/collections/{id}/pools?method=&depth=&budget=&allocation=&name=&feedback=`` —
  multipart, one part ``runs`` per TREC run file (the file name, without its suffix, names
  the run); a bad file is a 422 listing ``{file, line, msg}`` and nothing is stored;
  ``allocation=campaign`` (``cal`` with a budget only, else a 422): ``budget`` is one total
  over the collection's queries;
* the same ``POST`` with a JSON body (:class:`app.campaign_pools.schemas.StoredPoolIn`) pools runs
  stored on the collection: ``{"stored_runs": ["name", 7, ...] | "all", "method": ...,
  "depth": ..., "budget": ..., "allocation": ..., "name": ..., "feedback": ...}`` (the
  settings in the body, not the query); a run the collection lacks is a 422 naming it
  (``unknown_runs``), nothing stored;
* ``GET /admin/collections/{id}/pools`` — the collection's pools, newest first;
* ``GET /admin/pools/{pool_id}?query_id=`` — one pool with its documents, their runs and ranks.

A plan uses a pool with ``"pool": {"mode": "runs", "pool_id": ID}`` (``POST /admin/plans``).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from app.campaign_pools import run_input
from app.campaign_pools import service as pools
from app.campaign_pools.schemas import PoolDetailOut, PoolOut, StoredPoolIn
from app.http.deps import MAX_UPLOAD_FIELDS, DbDep, require_admin, upload_form
from app.http.openapi import declare_errors
from app.http.schemas import PathId
from app.kernel.errors import Invalid

router = APIRouter(prefix="/admin", tags=["admin"], dependencies=[Depends(require_admin)])

#: The multipart part each run file is uploaded as (repeated).
RUNS_PART = "runs"
#: Most run files one request may upload.
MAX_RUN_FILES = 100

#: The settings a multipart upload takes as query parameters and a JSON body as its fields.
SETTINGS = ("method", "depth", "budget", "allocation", "name", "feedback")

POOL_BODY = {
    "requestBody": {
        "required": True,
        "description": f"Either one part {RUNS_PART!r} per TREC run file (qid Q0 docno rank "
        f"score tag), at most {MAX_RUN_FILES}; the file name without its suffix names the run; "
        "or a JSON body naming runs stored on the collection, with the settings in it.",
        "content": {
            "application/json": {"schema": StoredPoolIn.model_json_schema()},
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {
                        RUNS_PART: {
                            "type": "array",
                            "items": {"type": "string", "format": "binary"},
                        }
                    },
                    "required": [RUNS_PART],
                }
            },
        },
    }
}


async def uploaded_runs(request: Request) -> tuple[dict[str, Any], dict[str, str]]:
    """Run name → the spooled file of each ``runs`` part, and run name → its file name;
    Invalid for anything else."""
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        raise Invalid(
            f"upload the runs as multipart/form-data, one part {RUNS_PART!r} per file, or name "
            "runs stored on the collection in a JSON body (stored_runs)"
        )
    form, within = await upload_form(request, MAX_RUN_FILES)
    if not within:
        raise Invalid(
            f"too many parts: at most {MAX_RUN_FILES} runs and {MAX_UPLOAD_FIELDS} fields"
        )
    runs: dict[str, Any] = {}
    names: dict[str, str] = {}
    for key, value in form.multi_items():
        if not isinstance(value, UploadFile) or key != RUNS_PART:
            raise Invalid(f"unexpected part {key!r}: upload each run as a part {RUNS_PART!r}")
        name = run_input.run_name(value.filename or "")
        if name in runs:
            raise Invalid(f"two runs are named {name!r} (the file name names a run): rename one")
        runs[name] = value.file
        names[name] = value.filename or name
    if not runs:
        raise Invalid(f"upload at least one run as a part {RUNS_PART!r}")
    return runs, names


def is_json(request: Request) -> bool:
    """Whether the request body is declared as JSON."""
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return media == "application/json"


async def stored_spec(request: Request, collection_id: int) -> pools.BuildSpec:
    """The JSON body's stored runs and settings as a build spec; 422s that say where."""
    given = [k for k in SETTINGS if k in request.query_params]
    if given:
        raise Invalid(
            f"with a JSON body the settings go in the body, not the query: {', '.join(given)}"
        )
    raw = await request.body()
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        raise Invalid("the body is not valid JSON (UTF-8)") from None
    try:
        body = StoredPoolIn.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        raise RequestValidationError([{**e, "loc": ("body", *e["loc"])} for e in errors]) from None
    return pools.BuildSpec(
        collection_id=collection_id,
        stored=body.stored_runs,
        method=body.method,
        depth=body.depth,
        budget=body.budget,
        allocation=body.allocation,
        name=body.name,
        feedback=body.feedback,
    )


def _out(view: pools.PoolView) -> dict[str, Any]:
    return asdict(view)


@router.post(
    "/collections/{collection_id}/pools",
    status_code=201,
    response_model=PoolOut,
    openapi_extra=POOL_BODY,
)
async def create_pool(
    collection_id: PathId,
    request: Request,
    db: DbDep,
    method: Literal["depth", "mtf", "maxmean", "hedge", "cal"] = "depth",
    depth: int = Query(100, ge=1, le=pools.MAX_DEPTH),
    budget: int | None = Query(None, ge=1, le=1_000_000),
    allocation: Literal["query", "campaign"] = "query",
    name: str | None = Query(None, min_length=1, max_length=100),
    feedback: bool = True,
) -> dict[str, Any]:
    """Build a pool and store it (all or nothing): from the uploaded run files (multipart,
    settings in the query), or from runs stored on the collection (a JSON body,
    ``StoredPoolIn``: ``stored_runs`` names or ids, or ``"all"``, and the settings)."""
    if is_json(request):
        stored = await stored_spec(request, collection_id)
        return _out(await run_in_threadpool(pools.build_pool, db=db, spec=stored))
    runs, file_names = await uploaded_runs(request)
    spec = pools.BuildSpec(
        file_names=file_names,
        collection_id=collection_id,
        runs=runs,
        method=method,
        depth=depth,
        budget=budget,
        allocation=allocation,
        name=name,
        feedback=feedback,
    )
    return _out(await run_in_threadpool(pools.build_pool, db=db, spec=spec))


@router.get("/collections/{collection_id}/pools", response_model=list[PoolOut])
def list_pools(collection_id: PathId, db: DbDep) -> list[dict[str, Any]]:
    """The collection's pools from runs, newest first."""
    return [_out(v) for v in pools.list_pools(db=db, collection_id=collection_id)]


@router.get("/pools/{pool_id}", response_model=PoolDetailOut)
def get_pool(
    pool_id: PathId, db: DbDep, query_id: str | None = Query(None, max_length=200)
) -> dict[str, Any]:
    """A pool and its documents (of ``query_id`` only, when given): per document the runs
    that retrieved it and at which rank, its fused score and order, and its pick."""
    view, rows = pools.get_pool(
        db=db, pool_id=pool_id, query_ids=None if query_id is None else [query_id]
    )
    out = _out(view)
    out["documents_shown"] = [
        {
            "query_id": r.query_id,
            "doc_id": r.doc_id,
            "position": r.position,
            "pick": r.pick,
            "fused": r.fused,
            "hits": [{"run": run, "rank": rank} for run, rank in r.hits],
        }
        for r in rows
    ]
    return out


declare_errors(router)
