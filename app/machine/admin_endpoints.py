"""REST API v1, admin console: ``GET /admin/collections/{id}/machine/usage``, the LLM judge's
spending per study of a collection (role admin; docs/rest-api.md#machine-usage).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from app.http.deps import DbDep, require_admin
from app.http.openapi import declare_errors
from app.http.schemas import PathId
from app.machine import service
from app.machine.schemas import MachineUsageOut

router = APIRouter(prefix="/admin", tags=["admin"], dependencies=[Depends(require_admin)])


@router.get("/collections/{collection_id}/machine/usage", response_model=MachineUsageOut)
def machine_usage(collection_id: PathId, db: DbDep) -> dict[str, Any]:
    """Requests, cached replies, tokens, malformed, failed and refused prompts of the LLM
    judge per study (a plan, or the collection's tasks without one), with the budget and
    what remains of it."""
    return service.machine_usage(db=db, collection_id=collection_id)


declare_errors(router)
