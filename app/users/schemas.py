"""Pydantic models of the REST API v1: users, tokens and the admin's user actions (they shape
/openapi.json).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from app.http.schemas import IsoTime, StrictModel
from labeling.identifiers import USERNAME_PATTERN

Role = Literal["assessor", "admin"]


class TokenOut(BaseModel):
    access_token: str
    token_type: Literal["bearer"] = "bearer"
    expires_in: int = Field(description="Seconds until the token expires.")


class UserCreate(StrictModel):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"username": "carol", "password": "a long passphrase 42"}]}
    )

    username: str = Field(min_length=1, max_length=64, pattern=USERNAME_PATTERN)
    password: str = Field(
        min_length=1,
        max_length=1024,
        description="At least 12 characters, not the username, not a common or easily guessed "
        "password (docs/security.md#password-policy).",
    )
    role: Role = "assessor"


class UserOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    username: str
    role: Role
    disabled: bool
    created_at: datetime


class WorkloadOut(BaseModel):
    username: str
    role: Role
    disabled: bool
    tasks: dict[str, int] = Field(description="Tasks by status.")
    judgments: int
    active_ms: int
    last_activity: IsoTime | None


class PasswordResetOut(BaseModel):
    username: str
    sessions_revoked: bool


class UserStateOut(BaseModel):
    username: str
    disabled: bool
