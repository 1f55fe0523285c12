"""Admin page posts on users (from the admin home): create a user, disable or enable one,
reset a password (:mod:`app.users.service`, :mod:`app.users.manage`)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from app.http.deps import DbDep, require_csrf_form
from app.kernel.errors import DomainError
from app.users import manage as users_manage
from app.users import service as users
from app.web.admin import back, guarded_form, home_response
from app.web.forms import error_text, form_errors, form_field, posted_values

router = APIRouter()


@router.post("/admin/users", dependencies=[Depends(require_csrf_form)])
async def create_user(request: Request, db: DbDep) -> Response:
    resolved, form, early = await guarded_form(request)
    if early is not None:
        return early
    try:
        user = await run_in_threadpool(
            users.create_user,
            db=db,
            username=form_field(form, "username"),
            password=str(form.get("password") or ""),
            role=form_field(form, "role", "assessor"),
        )
    except DomainError as exc:
        values = {k: v for k, v in posted_values(form).items() if k != "password"}
        return await home_response(
            request,
            resolved,
            db,
            forms={"user": values},
            errors={"user": form_errors(exc, "The user was not created.")},
            status=exc.status_code,
        )
    return back(request, "/admin", f"User {user.username!r} created.")


@router.post("/admin/users/{username}/{action}", dependencies=[Depends(require_csrf_form)])
async def user_action(request: Request, username: str, action: str, db: DbDep) -> Response:
    resolved, form, early = await guarded_form(request)
    if early is not None:
        return early
    try:
        if action in ("disable", "enable"):
            if action == "disable" and username == resolved.user.username:
                return back(request, "/admin", "You cannot disable yourself.", "error")
            await run_in_threadpool(
                users.set_disabled,
                db=db,
                username=username,
                disabled=action == "disable",
                actor=resolved.user.username,
            )
            message = f"{username} {action}d."
        elif action == "password":
            await run_in_threadpool(
                users_manage.reset_password,
                db=db,
                username=username,
                password=str(form.get("password") or ""),
            )
            message = f"Password of {username} reset; their sessions ended."
        else:
            return back(request, "/admin", f"Unknown action {action!r}.", "error")
    except DomainError as exc:
        return back(request, "/admin", error_text(exc), "error")
    return back(request, "/admin", message)
