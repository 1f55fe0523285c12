"""The service's domain errors: what a use case raises, with the HTTP status it means.

Services raise :class:`DomainError` subclasses (or let :mod:`labeling.errors` propagate);
:mod:`app.http.errors` turns them into JSON answers (docs/rest-api.md#errors). This module
imports no web framework.
"""

from __future__ import annotations

from typing import Any


class DomainError(Exception):
    """Base of the service's domain errors. ``detail`` is shown to the client."""

    status_code = 400

    def __init__(self, detail: Any, *, extra: dict[str, Any] | None = None) -> None:
        super().__init__(detail if isinstance(detail, str) else repr(detail))
        self.detail = detail
        self.extra = extra or {}


class Unauthorized(DomainError):
    status_code = 401


class Forbidden(DomainError):
    status_code = 403


class NotFound(DomainError):
    status_code = 404


class Conflict(DomainError):
    status_code = 409


class PayloadTooLarge(DomainError):
    status_code = 413


class UnsupportedMediaType(DomainError):
    """A body of a kind the endpoint does not take (a form sent to a JSON endpoint)."""

    status_code = 415


class Invalid(DomainError):
    """Bad input: ``detail`` says what and where (line numbers for files)."""

    status_code = 422


def issue_items(issues: Any) -> list[dict[str, Any]]:
    """A parser's ``ParseIssue`` list (``labeling.sources.SourceError.issues``) as the items
    of an :class:`Invalid` detail: ``{"file", "line", "msg"}`` each."""
    return [{"file": i.file, "line": i.line, "msg": i.message} for i in issues]


class TooManyRequests(DomainError):
    status_code = 429
