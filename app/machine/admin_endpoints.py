"""REST API v1, admin console (role admin): ``GET /admin/collections/{id}/machine/usage``, the
LLM judge's spending per study of a collection (docs/rest-api.md#machine-usage);
``GET /admin/collections/{id}/machine/alarms`` and ``POST .../alarms/{alarm_id}/resume``, the
audit alarms that stop a machine (docs/machine-judges.md#audits-that-act);
``GET``/``POST /admin/collections/{id}/machine/gold`` and ``DELETE .../gold/{gold_id}``, the
gold pairs an admin marks as evidence for the machine (docs/machine-judges.md#the-gold-set); and
``GET /admin/machine/prompts[/{key}]``, the LLM judge's versioned prompt templates
(docs/rest-api.md#machine-prompts), and ``POST /admin/machine/check``, one example pair asked
of the LLM endpoint (docs/machine-judges.md#checking-the-endpoint).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path

from app.http.deps import AdminUser, DbDep, SettingsDep, require_admin
from app.http.openapi import declare_errors
from app.http.schemas import PathId
from app.machine import alarms, check, gold, prompts, service
from app.machine.schemas import (
    GoldDeletedOut,
    GoldIn,
    GoldOut,
    MachineAlarmOut,
    MachineAlarmsOut,
    MachineCheckOut,
    MachineUsageOut,
    PromptTemplateOut,
    PromptTemplatesOut,
)

router = APIRouter(prefix="/admin", tags=["admin"], dependencies=[Depends(require_admin)])


@router.get("/collections/{collection_id}/machine/usage", response_model=MachineUsageOut)
def machine_usage(collection_id: PathId, db: DbDep) -> dict[str, Any]:
    """Requests, cached replies, tokens, malformed, failed and refused prompts of the LLM
    judge per study (a plan, or the collection's tasks without one), with the budget and
    what remains of it."""
    return service.machine_usage(db=db, collection_id=collection_id)


@router.get("/collections/{collection_id}/machine/alarms", response_model=MachineAlarmsOut)
def machine_alarms(collection_id: PathId, db: DbDep) -> dict[str, Any]:
    """The collection's machine alarms with their evidence (audited answers, agreement, the
    claimed P(wrong), the test's statistic): an active one stops that judge on the
    collection, and people answer everything."""
    return alarms.collection_alarms(db=db, collection_id=collection_id)


@router.post(
    "/collections/{collection_id}/machine/alarms/{alarm_id}/resume",
    response_model=MachineAlarmOut,
)
def resume_machine(
    collection_id: PathId, alarm_id: PathId, db: DbDep, user: AdminUser
) -> dict[str, Any]:
    """Let the machine answer again after an alarm (once it is recalibrated); the audit test
    starts afresh. 404 for an unknown alarm, 409 for one already resumed."""
    return alarms.resume_alarm(
        db=db, collection_id=collection_id, alarm_id=alarm_id, by=user.username
    )


@router.get("/collections/{collection_id}/machine/gold", response_model=GoldOut)
def machine_gold(collection_id: PathId, db: DbDep) -> dict[str, Any]:
    """The collection's gold pairs: pairs whose right answer an admin stated, evidence of the
    machine's error rate beside people's answers."""
    return gold.list_gold(db=db, collection_id=collection_id)


@router.post("/collections/{collection_id}/machine/gold", response_model=GoldOut, status_code=201)
def add_machine_gold(collection_id: PathId, body: GoldIn, db: DbDep, user: AdminUser) -> Any:
    """Mark pairs as gold, all or none (422 naming ``pairs[i]``: a query or document not in
    the collection, the same document twice, a pair given twice; 409 for a pair marked
    already, either way round). Tasks whose machine starts afterwards use them."""
    pairs = [p.model_dump() for p in body.pairs]
    return gold.add_gold(db=db, collection_id=collection_id, pairs=pairs, by=user.username)


@router.delete("/collections/{collection_id}/machine/gold/{gold_id}", response_model=GoldDeletedOut)
def delete_machine_gold(collection_id: PathId, gold_id: PathId, db: DbDep) -> dict[str, int]:
    """Unmark a gold pair (tasks started meanwhile keep what they froze); 404 if unknown."""
    gold.delete_gold(db=db, collection_id=collection_id, gold_id=gold_id)
    return {"collection_id": collection_id, "deleted": gold_id}


@router.get("/machine/prompts", response_model=PromptTemplatesOut)
def prompt_templates(settings: SettingsDep) -> dict[str, Any]:
    """Every versioned prompt template of the LLM judge (key, kind, hash, system and user
    text, an example rendering; which one the ``llm`` judge asks) and the judge's
    configuration (model, endpoint, the *name* of the API key's environment variable)."""
    return prompts.prompt_templates(settings=settings)


#: A template key, ``name@vVERSION`` (``@`` may be sent as is or as ``%40``).
TemplateKey = Annotated[str, Path(min_length=1, max_length=200, examples=["pairwise@v1"])]


@router.get("/machine/prompts/{key}", response_model=PromptTemplateOut)
def prompt_template(key: TemplateKey) -> dict[str, Any]:
    """One prompt template by key (``pairwise@v1``); 404 naming the known keys."""
    return prompts.prompt_template(key=key)


@router.post("/machine/check", response_model=MachineCheckOut)
def machine_check(settings: SettingsDep) -> dict[str, Any]:
    """Ask the configured LLM endpoint one example pair, once (no cache, no budget, no
    retry): whether it answered (``ok``), the latency, the model configured and the model
    that answered, the answer, and any error. A failed check is a 200 with ``ok: false``:
    the request worked, the endpoint did not."""
    return check.check_endpoint(settings)


declare_errors(router)
