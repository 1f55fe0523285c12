"""Server-rendered pages (assessor and admin). ``router`` is included by ``create_app``.

Sub-routers: :mod:`.auth` (login/logout), :mod:`.assess` (my tasks, judging pages, done
page), :mod:`.second_opinions` (second opinions, "ask me instead"), :mod:`.analysis` and
:mod:`.admin` (admin pages). Add a page module with one import and
one ``include_router`` line below.
"""

from fastapi import APIRouter

router = APIRouter(include_in_schema=False)

# The sub-modules are imported after `router` exists (they do not import it, but keep it simple).
from app.web import admin, analysis, assess, auth, second_opinions  # noqa: E402

router.include_router(auth.router)
router.include_router(assess.router)
router.include_router(second_opinions.router)
router.include_router(analysis.router)
router.include_router(admin.router)
