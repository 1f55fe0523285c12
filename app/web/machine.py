"""Admin page: the LLM judge's versioned prompt templates (docs/admin-guide.md#prompt-templates).

``GET /admin/machine/prompts`` shows the judge's configuration (model, endpoint, the template
it asks, its version, the *name* of the API key's environment variable; never the key) and
every template: key, kind, hash, document cut-off, the system and user text as they are sent
and an example rendering. The figures are :func:`app.machine.prompts.prompt_templates`'s, as
``GET /api/v1/admin/machine/prompts`` answers them; the texts are autoescaped in ``<pre>``.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from app.http.deps import DbDep
from app.machine.prompts import prompt_templates
from app.web.admin import admin_page, admin_session

router = APIRouter()


@router.get("/admin/machine/prompts")
async def prompts_page(request: Request, db: DbDep) -> Response:
    resolved, early = await admin_session(request, db)
    if early is not None:
        return early
    assert resolved is not None
    report = prompt_templates(settings=db.settings)
    return admin_page(request, resolved, "machine/prompts.html", {"report": report})
