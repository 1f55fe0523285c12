"""The API's typed contracts: response schemas, the one error shape, and ``Allow`` headers.

- every JSON operation under ``/api/v1`` documents its success body with a named schema (a
  model or a list of models), not a bare ``object``;
- every error status an operation declares has the ``ErrorOut`` schema, every operation
  declares the statuses any route can answer, and every status the error mapping can give
  is described in one table;
- real error answers (a request validation 422, an import's ``line`` items, a plan's
  violations, the judging loop's 409 with ``current``) fit ``ErrorOut``;
- a 405 (every ``OPTIONS`` request) names in ``Allow`` every method the path documents.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

import pytest

from app.http import errors as http_errors
from app.http import openapi
from app.http.openapi import ErrorOut
from app.judging.schemas import QuestionOut
from app.kernel import errors as domain_errors
from tests.app.admin_support import make_collection
from tests.app.conftest import Api, concrete

METHODS = ("get", "post", "put", "patch", "delete")


def _operations(api: Api) -> list[tuple[str, str, dict[str, Any]]]:
    paths = api.client.get("/openapi.json").json()["paths"]
    return [
        (path, method, op)
        for path, item in paths.items()
        if path.startswith("/api/v1/")
        for method, op in item.items()
        if method in METHODS
    ]


def _named(schema: dict[str, Any]) -> bool:
    """A ``$ref`` to a component, or an array of them."""
    if "$ref" in schema:
        return True
    return schema.get("type") == "array" and "$ref" in schema.get("items", {})


def test_every_json_operation_has_a_named_response_schema(api: Api) -> None:
    ops = _operations(api)
    assert len(ops) > 30
    streamed = []
    for path, method, op in ops:
        ok = {s: r for s, r in op["responses"].items() if s.startswith("2")}
        assert len(ok) == 1, (method, path, ok)
        content = next(iter(ok.values())).get("content", {})
        if "application/json" not in content:
            streamed.append(path)  # exports and diagrams: files in their own formats
            continue
        schema = content["application/json"].get("schema", {})
        assert _named(schema), (method, path, schema)
    assert all(p.endswith(("/export", ".svg")) for p in streamed), streamed


def test_every_error_status_is_declared_with_the_error_shape(api: Api) -> None:
    for path, method, op in _operations(api):
        statuses = {int(s) for s in op["responses"]}
        assert set(openapi.ANY_ROUTE) <= statuses, (method, path)
        for status, response in op["responses"].items():
            if int(status) < 400:
                continue
            schema = response["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/ErrorOut"}, (method, path, status)
            assert response["description"], (method, path, status)
    # Spot checks of the derivation: login throttles, the judging loop conflicts, an admin
    # route forbids, a read of one object may not find it.
    paths = api.client.get("/openapi.json").json()["paths"]
    assert {"401", "429"} <= set(paths["/api/v1/auth/token"]["post"]["responses"])
    assert "409" in paths["/api/v1/tasks/{task_id}/judgments"]["post"]["responses"]
    assert "403" in paths["/api/v1/admin/users/workload"]["get"]["responses"]
    assert "404" in paths["/api/v1/tasks/{task_id}"]["get"]["responses"]
    assert "404" not in paths["/api/v1/users/me"]["get"]["responses"]


def test_every_mapped_status_is_described() -> None:
    """Each status the error mapping can answer has its description (and so a declaration)."""
    domain = {
        cls.status_code
        for _name, cls in inspect.getmembers(domain_errors, inspect.isclass)
        if issubclass(cls, domain_errors.DomainError)
    }
    labeling = {status for _cls, status in http_errors.LABELING_STATUS}
    assert domain | labeling | {400, 413, 503} <= set(openapi.ERROR_STATUSES)
    assert {401, 403, 404, 409, 413, 422, 429} <= domain


def test_real_error_answers_fit_the_declared_shape(api: Api) -> None:
    if "assessor_c" not in api.tokens:
        api.add_user("assessor_c")
    cid, _scores = make_collection(api, "contracts", queries=1, docs=4)
    # Request validation: pydantic's items.
    r = api.post("admin", "/api/v1/tasks", json={"collection_id": "1"})
    assert r.status_code == 422
    body = ErrorOut.model_validate(r.json())
    assert isinstance(body.detail, list) and body.detail[0].loc is not None
    # An import: one item per bad line, with the line number, and a summary.
    bad = b'{"query_id": "q", "query": "x", "doc_id": "a"}\nnot json\n'
    r = api.post(
        "admin",
        f"/api/v1/collections/{cid}/import",
        content=bad,
        headers={"Content-Type": "application/x-ndjson"},
    )
    assert r.status_code == 422, r.text
    body = ErrorOut.model_validate(r.json())
    assert isinstance(body.detail, list) and [i.line for i in body.detail] == [2]
    assert body.message is not None and body.message.startswith("1 error")
    # A plan that violates its constraints: each violation is an item with msg and code.
    plan = {
        "collection_id": cid,
        "scheme": "csv",
        "csv": "assessor,query_id,method\nghost,101,topk\n",
        "query_ids": ["101"],
    }
    r = api.post("admin", "/api/v1/admin/plans", json=plan)
    assert r.status_code == 422, r.text
    body = ErrorOut.model_validate(r.json())
    assert isinstance(body.detail, list) and body.detail
    assert all(i.code and i.msg == i.message for i in body.detail)
    # The judging loop's 409 carries the pending question.
    r = api.post(
        "admin",
        "/api/v1/tasks",
        json={"collection_id": cid, "query_id": "101", "assessor": "assessor_c", "method": "topk"},
    )
    assert r.status_code == 201, r.text
    task_id = r.json()["id"]
    r = api.post("assessor_c", f"/api/v1/tasks/{task_id}/undo")
    assert r.status_code == 409, r.text
    body = ErrorOut.model_validate(r.json())
    assert body.current is not None
    assert QuestionOut.model_validate(body.current).task_id == task_id
    # Not authenticated.
    r = api.client.get("/api/v1/users/me")
    assert r.status_code == 401 and ErrorOut.model_validate(r.json()).detail


@pytest.mark.parametrize("method", ["OPTIONS", "PUT"])
def test_405_allows_every_documented_method_of_the_path(api: Api, method: str) -> None:
    paths = api.client.get("/openapi.json").json()["paths"]
    several = 0
    for path, item in paths.items():
        documented = sorted(m.upper() for m in item if m in METHODS)
        if method.lower() in item:
            continue
        r = api.client.request(method, concrete(path), headers=api.auth("admin"))
        assert r.status_code == 405, (method, path, r.status_code)
        assert sorted(r.headers["allow"].split(", ")) == documented, (path, r.headers["allow"])
        assert isinstance(json.loads(r.text)["detail"], str)
        several += len(documented) > 1
    assert several >= 3  # e.g. GET and POST /api/v1/tasks, served by two routes
