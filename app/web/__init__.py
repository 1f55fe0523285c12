"""Server-rendered pages (assessor and admin). ``router`` is included by ``create_app``.

Sub-routers: :mod:`.auth` (login/logout), :mod:`.assess` (my tasks, judging pages, done
page), :mod:`.second_opinions` (second opinions, "ask me instead"); the admin pages:
:mod:`.admin` (the admin home and the section's frame), :mod:`.collections`, :mod:`.imports`,
:mod:`.planning`, :mod:`.pools`, :mod:`.exports`, :mod:`.runs`, :mod:`.users`, :mod:`.training`,
:mod:`.machine` (the LLM judge's prompt templates) and :mod:`.analysis`. Add a page module with
one import and one ``include_router`` line below.
"""

from fastapi import APIRouter

router = APIRouter(include_in_schema=False)

# The sub-modules are imported after `router` exists (they do not import it, but keep it simple).
from app.web import (  # noqa: E402
    admin,
    analysis,
    assess,
    auth,
    collections,
    exports,
    imports,
    machine,
    planning,
    pools,
    runs,
    second_opinions,
    training,
    users,
)

router.include_router(auth.router)
router.include_router(assess.router)
router.include_router(second_opinions.router)
router.include_router(analysis.router)
router.include_router(admin.router)
router.include_router(collections.router)
router.include_router(imports.router)
router.include_router(planning.router)
router.include_router(pools.router)
router.include_router(exports.router)
router.include_router(runs.router)
router.include_router(users.router)
router.include_router(training.router)
router.include_router(machine.router)
