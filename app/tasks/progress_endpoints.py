"""REST API v1, admin console: ``GET /admin/collections/{id}/progress``, a collection's live
progress (role admin).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from app.http.deps import (
    DbDep,
    require_admin,
)
from app.http.openapi import declare_errors
from app.http.schemas import PathId
from app.tasks import progress
from app.tasks.schemas import CollectionProgressOut as ProgressReportOut

router = APIRouter(prefix="/admin", tags=["admin"], dependencies=[Depends(require_admin)])


@router.get("/collections/{collection_id}/progress", response_model=ProgressReportOut)
def collection_progress(collection_id: PathId, db: DbDep) -> dict[str, Any]:
    """Tasks by status, judgments, active time, estimated remaining and last activity per
    collection, query, assessor and task, plus judgments over time."""
    return progress.collection_progress(db=db, collection_id=collection_id)


declare_errors(router)
