"""REST API v1, admin console: collections (every route requires role admin; 403 for assessors).

* ``PATCH /admin/collections/{id}`` — rename, describe, archive;
* ``POST /admin/collections/{id}/import-files?kind=trec|smart|letor`` — multipart upload of
  the format's files (``topics``/``documents``/``queries``/``qrels``/``run``/``features``);
* ``POST /admin/collections/{id}/attach-grades`` and ``/attach-features`` — multipart file
  ``qrels`` / ``features``.

Validation errors are 422 with ``{"detail": [...{"file", "line", "msg"}]}`` for files.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from pydantic import Field
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from app.collections import attach
from app.collections import imports as admin_imports
from app.collections import manage as collections_manage
from app.collections.imports import MAX_RUN_DEPTH
from app.collections.schemas import AttachOut, CollectionBriefOut, FilesImportOut
from app.collections.uploads import UploadedFile
from app.http.deps import (
    MAX_UPLOAD_FIELDS,
    MAX_UPLOAD_FILES,
    DbDep,
    require_admin,
    upload_form,
)
from app.http.openapi import declare_errors
from app.http.schemas import CollectionName, PathId, StrictModel
from app.kernel.errors import Invalid

router = APIRouter(prefix="/admin", tags=["admin"], dependencies=[Depends(require_admin)])

#: The multipart part that ``attach-grades`` and ``attach-features`` read (the import's parts
#: are ``admin_imports.FILES``, per kind). The handlers and the OpenAPI bodies below both use
#: these names, so the schema cannot list a part the handler does not read.
GRADES_PART = "qrels"
FEATURES_PART = "features"

#: What each uploadable part holds (docs/data-formats.md).
PART_DESCRIPTIONS: dict[str, str] = {
    "topics": "TREC topics file (<top> ... </top>).",
    "documents": "Documents: TREC <DOC> SGML or JSONL (kind=trec); a SMART .I/.T/.A/.B/.W "
    "file such as cran.all.1400 (kind=smart).",
    "queries": "SMART queries (.I/.W), e.g. cran.qry.",
    "qrels": "Qrels in the TREC, three-column or SMART .REL layout (see qrels_format).",
    "run": "A TREC run (qid Q0 docid rank score tag); pairing=run takes its top run_depth.",
    "features": "A LETOR feature file (label qid:Q 1:v ... # docid = D).",
}


def _binary(description: str) -> dict[str, Any]:
    return {"type": "string", "format": "binary", "description": description}


def _multipart_body(
    description: str, properties: dict[str, dict[str, Any]], required: list[str]
) -> dict[str, Any]:
    """An ``openapi_extra`` request body: multipart/form-data with one binary part per file.
    Declared by hand because the handlers read the form themselves (Starlette spools each part
    to disk under the upload limits) instead of through FastAPI's ``File()`` parameters."""
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return {
        "requestBody": {
            "required": True,
            "description": description,
            "content": {"multipart/form-data": {"schema": schema}},
        }
    }


def _import_files_body() -> dict[str, Any]:
    """Every part some kind reads, with ``x-kinds`` saying for which kind it is required or
    optional (no part is required by every kind, so the schema's ``required`` stays empty)."""
    properties: dict[str, dict[str, Any]] = {}
    for kind, (required, optional) in admin_imports.FILES.items():
        for part in (*required, *optional):
            prop = properties.setdefault(part, {**_binary(PART_DESCRIPTIONS[part]), "x-kinds": {}})
            prop["x-kinds"][kind] = "required" if part in required else "optional"
    for prop in properties.values():
        needs = "; ".join(f"{need} for kind={kind}" for kind, need in prop["x-kinds"].items())
        prop["description"] += f" {needs.capitalize()}."
    per_kind = "; ".join(
        f"kind={kind}: {', '.join(required)}"
        + (f" (optional {', '.join(optional)})" if optional else "")
        for kind, (required, optional) in admin_imports.FILES.items()
    )
    return _multipart_body(
        f"One part per file, named after what it holds ({per_kind}).", properties, []
    )


IMPORT_FILES_BODY = _import_files_body()
ATTACH_GRADES_BODY = _multipart_body(
    "The qrels file.", {GRADES_PART: _binary(PART_DESCRIPTIONS["qrels"])}, [GRADES_PART]
)
ATTACH_FEATURES_BODY = _multipart_body(
    "The LETOR feature file.",
    {FEATURES_PART: _binary(PART_DESCRIPTIONS["features"])},
    [FEATURES_PART],
)


class CollectionPatch(StrictModel):
    name: CollectionName | None = Field(default=None, min_length=1, max_length=200)
    description: str | None = Field(default=None, max_length=10_000)
    archived: bool | None = None


def _collection_out(coll: Any) -> dict[str, Any]:
    return {
        "id": coll.id,
        "name": coll.name,
        "description": coll.description,
        "archived": coll.archived,
    }


@router.patch("/collections/{collection_id}", response_model=CollectionBriefOut)
def patch_collection(collection_id: PathId, body: CollectionPatch, db: DbDep) -> dict[str, Any]:
    """Rename, describe, archive or un-archive a collection."""
    coll = collections_manage.update_collection(
        db=db,
        collection_id=collection_id,
        name=body.name,
        description=body.description,
        archived=body.archived,
    )
    return _collection_out(coll)


async def _files(request: Request) -> tuple[dict[str, UploadedFile], dict[str, str]]:
    """The multipart form's files (spooled to disk by Starlette) and its plain fields."""
    content_type = request.headers.get("content-type", "")
    if not content_type.startswith("multipart/form-data"):
        raise Invalid("upload the files as multipart/form-data (one part per file)")
    form, within_limits = await upload_form(request)
    if not within_limits:
        raise Invalid(
            f"too many parts: at most {MAX_UPLOAD_FILES} files and {MAX_UPLOAD_FIELDS} fields"
        )
    files: dict[str, UploadedFile] = {}
    fields: dict[str, str] = {}
    for key, value in form.multi_items():
        if isinstance(value, UploadFile):
            files[key] = UploadedFile(value.filename or key, value.file)
        else:
            fields[key] = value
    return files, fields


async def _one_file(request: Request, part: str, what: str) -> UploadedFile:
    """The file uploaded as multipart part ``part`` (``what`` names it in the error)."""
    files, _ = await _files(request)
    if part not in files:
        raise Invalid(f"upload the {what} file as the multipart part {part!r}")
    return files[part]


@router.post(
    "/collections/{collection_id}/import-files",
    response_model=FilesImportOut,
    openapi_extra=IMPORT_FILES_BODY,
)
async def import_files(
    collection_id: PathId,
    request: Request,
    db: DbDep,
    kind: Literal["trec", "smart", "letor"],
    pairing: Literal["qrels", "all", "run", "bm25"] = "qrels",
    qrels_format: Literal["auto", "trec", "3col", "smart-rel", "cranfield"] = "auto",
    run_depth: Annotated[int | None, Query(ge=1, le=MAX_RUN_DEPTH)] = None,
    unjudged_grade: Annotated[int | None, Query(ge=0, le=4)] = None,
    include_narrative: bool = False,
    ignore_unknown_qrels: bool = False,
) -> dict[str, Any]:
    """Import a collection from TREC, SMART or LETOR files (all or nothing)."""
    files, _fields = await _files(request)
    report = await run_in_threadpool(
        admin_imports.import_files,
        db=db,
        collection_id=collection_id,
        kind=kind,
        files=files,
        pairing=pairing,
        qrels_format=qrels_format,
        run_depth=run_depth,
        unjudged_grade=unjudged_grade,
        include_narrative=include_narrative,
        ignore_unknown_qrels=ignore_unknown_qrels,
    )
    return asdict(report)


@router.post(
    "/collections/{collection_id}/attach-grades",
    response_model=AttachOut,
    openapi_extra=ATTACH_GRADES_BODY,
)
async def attach_grades(
    collection_id: PathId,
    request: Request,
    db: DbDep,
    qrels_format: Literal["auto", "trec", "3col", "smart-rel", "cranfield"] = "auto",
    strict: bool = False,
) -> dict[str, Any]:
    """Attach grades from a qrels file (part ``qrels``) to existing documents."""
    qrels = await _one_file(request, GRADES_PART, "qrels")
    report = await run_in_threadpool(
        attach.attach_grades,
        db=db,
        collection_id=collection_id,
        qrels=qrels,
        qrels_format=qrels_format,
        strict=strict,
    )
    return asdict(report)


@router.post(
    "/collections/{collection_id}/attach-features",
    response_model=AttachOut,
    openapi_extra=ATTACH_FEATURES_BODY,
)
async def attach_features(
    collection_id: PathId, request: Request, db: DbDep, strict: bool = False
) -> dict[str, Any]:
    """Attach LETOR feature vectors (part ``features``) to existing documents."""
    features = await _one_file(request, FEATURES_PART, "LETOR")
    report = await run_in_threadpool(
        attach.attach_features,
        db=db,
        collection_id=collection_id,
        features=features,
        strict=strict,
    )
    return asdict(report)


declare_errors(router)
