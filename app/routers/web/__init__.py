"""Server-rendered pages (assessor and admin). ``router`` is included by ``create_app``.

Sub-routers: :mod:`.auth` (login/logout) and :mod:`.assess` (my tasks, judging pages, done
page). Admin pages add theirs below with one ``include_router`` line.
"""

from fastapi import APIRouter

router = APIRouter(include_in_schema=False)

from app.routers.web import analysis, assess, auth  # noqa: E402  (sub-routers need `router` defined first)

router.include_router(auth.router)
router.include_router(assess.router)
router.include_router(analysis.router)
