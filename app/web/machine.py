"""Admin pages of the machine judge (docs/admin-guide.md#prompt-templates,
docs/machine-judges.md#when-the-machine-fails).

``GET /admin/machine/prompts`` shows the judge's configuration (model, endpoint, the template
it asks, its version, the *name* of the API key's environment variable; never the key) and
every template: key, kind, hash, document cut-off, the system and user text as they are sent
and an example rendering. The figures are :func:`app.machine.prompts.prompt_templates`'s, as
``GET /api/v1/admin/machine/prompts`` answers them; the texts are autoescaped in ``<pre>``.

``GET /admin/machine`` shows the machine's health: a button that checks the endpoint
(``POST /admin/machine/check``, a CSRF-checked form, admin only by its dependencies:
:func:`app.machine.check.check_endpoint`, the result shown on the page), every open machine
alarm and every study with failed calls and its last error
(:func:`app.machine.service.machine_health`).

``POST /admin/collections/{id}/machine/alarms/{alarm_id}/resume`` (the *Resume the machine*
button of an active audit alarm on the collection's progress section; CSRF-checked, admin
only) resumes the machine after recalibration (:func:`app.machine.alarms.resume_alarm`, as
the REST endpoint of the same path under ``/api/v1`` and ``heapjudge admin machine-resume``)
and goes back to the collection page with what happened (an unknown alarm or one resumed
already: an error message, nothing changed).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from app.http.deps import DbDep, require_csrf_form
from app.kernel.errors import DomainError, Forbidden
from app.machine.alarms import resume_alarm
from app.machine.check import check_endpoint
from app.machine.prompts import judge_config, prompt_templates
from app.machine.service import machine_health
from app.web.admin import admin_page, admin_session, back
from app.web.forms import error_text

router = APIRouter()


@router.get("/admin/machine/prompts")
async def prompts_page(request: Request, db: DbDep) -> Response:
    resolved, early = await admin_session(request, db)
    if early is not None:
        return early
    assert resolved is not None
    report = prompt_templates(settings=db.settings)
    return admin_page(request, resolved, "machine/prompts.html", {"report": report})


async def _health(db: Any, check: dict[str, Any] | None) -> dict[str, Any]:
    found = await run_in_threadpool(machine_health, db)
    return {"judge": judge_config(db.settings), "check": check, **found}


@router.get("/admin/machine")
async def machine_page(request: Request, db: DbDep) -> Response:
    resolved, early = await admin_session(request, db)
    if early is not None:
        return early
    assert resolved is not None
    return admin_page(request, resolved, "machine/health.html", await _health(db, None))


async def require_admin_form(request: Request) -> None:
    """After :func:`app.http.deps.require_csrf_form`: the form's session is an admin's (403
    otherwise), so the check's route cannot forget the role."""
    if request.state.web_session.user.role != "admin":
        raise Forbidden("admin role required")


@router.post(
    "/admin/machine/check",
    dependencies=[Depends(require_csrf_form), Depends(require_admin_form)],
)
async def machine_check(request: Request, db: DbDep) -> Response:
    """Check the endpoint (one example pair) and show the page with the result."""
    report = await run_in_threadpool(check_endpoint, db.settings)
    resolved = request.state.web_session
    return admin_page(request, resolved, "machine/health.html", await _health(db, report))


@router.post(
    "/admin/collections/{collection_id}/machine/alarms/{alarm_id}/resume",
    dependencies=[Depends(require_csrf_form), Depends(require_admin_form)],
)
async def machine_resume(
    request: Request, collection_id: int, alarm_id: int, db: DbDep
) -> Response:
    """Resume the machine after alarm ``alarm_id`` of the collection (module docstring)."""
    by = request.state.web_session.user.username
    url = f"/admin/collections/{collection_id}"
    try:
        await run_in_threadpool(
            resume_alarm, db=db, collection_id=collection_id, alarm_id=alarm_id, by=by
        )
    except DomainError as exc:
        return back(request, url, f"The machine was not resumed: {error_text(exc)}", "error")
    return back(
        request,
        url,
        f"Machine alarm {alarm_id} resumed: the machine answers again where its evidence "
        "allows, and the audits are tested afresh from now on.",
    )
