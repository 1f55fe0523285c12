"""Admin page posts: the collection page's import forms (``POST
/admin/collections/{id}/import``): files of a collection (TREC, LETOR, NDJSON), grades and
features attached to its query-document pairs (:mod:`app.collections.imports`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, UploadFile

from app.auth import sessions
from app.collections import attach
from app.collections import imports as admin_imports
from app.collections import service as collections
from app.collections.uploads import UploadedFile
from app.http.deps import (
    MAX_UPLOAD_FIELDS,
    MAX_UPLOAD_FILES,
    DbDep,
    require_csrf_form,
    upload_form,
)
from app.kernel.errors import DomainError
from app.web.admin import back, guarded_post
from app.web.collections import collection_response
from app.web.forms import (
    FILE_LABELS,
    FormErrors,
    chosen_files,
    form_errors,
    form_field,
    form_int,
    posted_values,
)

router = APIRouter()

#: The import forms' names by ``action`` (their values and errors are kept apart).
IMPORT_FORMS = {"import": "import", "attach-grades": "grades", "attach-features": "features"}


@router.post("/admin/collections/{collection_id}/import", dependencies=[Depends(require_csrf_form)])
async def import_page(request: Request, collection_id: int, db: DbDep) -> Response:
    resolved, early = await guarded_post(request)
    if early is not None:
        return early
    form, within_limits = await upload_form(request)
    url = f"/admin/collections/{collection_id}"
    action = form_field(form, "action", "import")
    name = IMPORT_FORMS.get(action, "import")
    if not within_limits:
        return await _import_refused(
            request,
            resolved,
            db,
            collection_id,
            form,
            name,
            FormErrors(
                "Nothing was imported: too many files or fields "
                f"(at most {MAX_UPLOAD_FILES} files, {MAX_UPLOAD_FIELDS} fields)."
            ),
            413,
        )
    files = {
        key: UploadedFile(value.filename or key, value.file)
        for key, value in form.multi_items()
        if isinstance(value, UploadFile) and value.filename
    }
    try:
        message = await _run_import(db, collection_id, action, form, files)
        summary = await run_in_threadpool(
            collections.get_collection, db=db, collection_id=collection_id, viewer=None
        )
    except KeyError as exc:
        field_name = str(exc.args[0])
        missing = FormErrors(f"Choose the {FILE_LABELS.get(field_name, field_name)} file.")
        return await _import_refused(request, resolved, db, collection_id, form, name, missing)
    except DomainError as exc:
        only = next(iter(files.values())).name if len(files) == 1 else ""
        errors = form_errors(exc, "Nothing was imported.", file=only)
        return await _import_refused(
            request, resolved, db, collection_id, form, name, errors, exc.status_code
        )
    if action == "import":
        message += (
            f" The collection now has {summary.queries} queries, "
            f"{summary.distinct_documents} documents and {summary.documents} "
            "query–document pairs."
        )
    return back(request, url, message)


async def _import_refused(
    request: Request,
    resolved: sessions.ResolvedSession,
    db: Any,
    collection_id: int,
    form: FormData,
    name: str,
    errors: FormErrors,
    status: int = 422,
) -> Response:
    """The collection page with the import form ``name`` as it was posted and its errors."""
    return await collection_response(
        request,
        resolved,
        db,
        collection_id,
        forms={name: posted_values(form)},
        errors={name: errors},
        rechoose=chosen_files(form),
        status=status,
    )


def _pairs(n: int) -> str:
    return f"{n} query–document pair" + ("" if n == 1 else "s")


async def _run_import(
    db: Any,
    collection_id: int,
    action: str,
    form: FormData,
    files: Mapping[str, UploadedFile],
) -> str:
    """Run the import form's ``action`` through its service; the success message. Raises
    KeyError naming a required file that was not chosen, DomainError for the rest."""
    if action == "attach-grades":
        report = await run_in_threadpool(
            attach.attach_grades,
            db=db,
            collection_id=collection_id,
            qrels=files["qrels"],
            qrels_format=form_field(form, "qrels_format", "auto"),
        )
        return (
            f"{report.matched} grades attached to query–document pairs "
            f"({report.unmatched} lines unmatched)."
        )
    if action == "attach-features":
        report = await run_in_threadpool(
            attach.attach_features,
            db=db,
            collection_id=collection_id,
            features=files["features"],
        )
        return (
            f"{report.matched} feature vectors attached to query–document pairs "
            f"({report.unmatched} rows unmatched)."
        )
    kind = form_field(form, "kind", "trec")
    if kind == "ndjson":
        # The REST import's service: one object per (query, document), all or nothing.
        upload = files["ndjson"]
        content = upload.content
        assert not isinstance(content, str | os.PathLike)  # a web upload is a spooled file
        nd = await run_in_threadpool(
            collections.import_ndjson, db=db, collection_id=collection_id, data=content
        )
        return (
            f"Imported {nd.lines} lines of {upload.name}: {nd.queries_created} new queries, "
            f"{_pairs(nd.documents_created)} new ({nd.documents_unchanged} already there "
            "unchanged)."
        )
    imported = await run_in_threadpool(
        admin_imports.import_files,
        db=db,
        collection_id=collection_id,
        kind=kind,
        files=files,
        pairing=form_field(form, "pairing", "qrels"),
        qrels_format=form_field(form, "qrels_format", "auto"),
        run_depth=form_int(form, "run_depth"),
        unjudged_grade=form_int(form, "unjudged_grade"),
        ignore_unknown_qrels=form.get("ignore_unknown_qrels") == "1",
    )
    return " ".join(
        [
            f"Imported {_pairs(imported.rows)}: {imported.queries_created} new queries, "
            f"{_pairs(imported.documents_created)} new "
            f"({imported.documents_unchanged} already there unchanged).",
            *([f"Qrels: {imported.qrels}."] if imported.qrels else []),
            *(
                [
                    f"Judged: {_pairs(imported.judged)}, {imported.judged_pooled} in the pool, "
                    f"{imported.judged_unpooled} outside it (kept as judgments for evaluation, "
                    "shown to no assessor)."
                ]
                if imported.qrels
                else []
            ),
            *(f"Note: {note}." for note in imported.notes),
        ]
    )
