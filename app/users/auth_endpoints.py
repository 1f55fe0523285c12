"""REST API v1: authentication (OAuth2 password flow -> bearer token)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.security import OAuth2PasswordRequestForm
from starlette.concurrency import run_in_threadpool

from app.auth import login as tokens
from app.http.deps import DbDep, client_ip
from app.http.openapi import declare_errors, error_responses
from app.users.schemas import TokenOut

router = APIRouter(tags=["auth"])


@router.post("/auth/token", response_model=TokenOut, responses=error_responses(401, 429))
async def login_for_token(
    request: Request, db: DbDep, form: Annotated[OAuth2PasswordRequestForm, Depends()]
) -> TokenOut:
    """Exchange ``username`` + ``password`` (form fields) for a bearer token."""
    raw, expires_in = await run_in_threadpool(
        tokens.issue_token,
        db=db,
        username=form.username,
        password=form.password,
        ip=client_ip(request),
    )
    return TokenOut(access_token=raw, expires_in=expires_in)


declare_errors(router)
