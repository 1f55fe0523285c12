"""Upload routes document their request bodies in ``/openapi.json``
(docs/cli.md#upload-routes-in-openapi): the multipart part names, binary type and
required/optional, read from the served schema and then used for real uploads, so the schema
cannot name a part the handler does not read."""

from __future__ import annotations

from typing import Any

import pytest

from app.collections import service as collections
from app.collections.admin_endpoints import FEATURES_PART, GRADES_PART
from app.collections.imports import FILES
from tests.app.conftest import Api

BASE = "/api/v1/admin/collections/{collection_id}"
#: Operations that take no request body at all (actions named by their URL).
NO_BODY = {
    ("post", "/api/v1/admin/users/{username}/disable"),
    ("post", "/api/v1/admin/users/{username}/enable"),
    ("post", "/api/v1/training-runs/{run_id}/cancel"),
    ("post", "/api/v1/admin/machine/check"),
    ("post", "/api/v1/admin/collections/{collection_id}/features"),
    ("post", "/api/v1/tasks/{task_id}/second-opinion/reclaim"),
    ("post", "/api/v1/admin/collections/{collection_id}/machine/alarms/{alarm_id}/resume"),
}
TOPICS = b"<top>\n<num> Number: 1\n<title> heaps\n</top>\n"
DOCS = b'{"doc_id": "a", "text": "heaps"}\n{"doc_id": "b", "text": "sorting"}\n'
QRELS = b"1 0 a 2\n1 0 b 0\n"


@pytest.fixture(scope="module")
def schema(api: Api) -> dict[str, Any]:
    r = api.client.get("/openapi.json")
    assert r.status_code == 200
    return r.json()


def _multipart(schema: dict[str, Any], path: str) -> dict[str, Any]:
    body = schema["paths"][path]["post"]["requestBody"]
    assert body["required"] is True
    assert list(body["content"]) == ["multipart/form-data"]
    return body["content"]["multipart/form-data"]["schema"]


def test_every_write_operation_declares_its_body(schema: dict[str, Any]) -> None:
    missing = {
        (method, path)
        for path, ops in schema["paths"].items()
        for method, op in ops.items()
        if method in ("post", "put", "patch") and "requestBody" not in op
    }
    assert missing == NO_BODY


def test_import_files_declares_every_part_of_every_kind(schema: dict[str, Any]) -> None:
    parts = _multipart(schema, f"{BASE}/import-files")
    expected = {part for req, opt in FILES.values() for part in (*req, *opt)}
    assert set(parts["properties"]) == expected == {
        "topics", "documents", "queries", "qrels", "run", "features"
    }  # fmt: skip
    assert "required" not in parts  # which parts are required depends on ?kind=
    for name, prop in parts["properties"].items():
        assert (prop["type"], prop["format"]) == ("string", "binary")
        for kind, (required, optional) in FILES.items():
            need = "required" if name in required else "optional" if name in optional else None
            assert prop["x-kinds"].get(kind) == need, (name, kind)
            if need:
                assert f"{need} for kind={kind}" in prop["description"].lower()


@pytest.mark.parametrize(
    ("route", "part"), [("attach-grades", GRADES_PART), ("attach-features", FEATURES_PART)]
)
def test_attach_routes_declare_their_one_part(
    schema: dict[str, Any], route: str, part: str
) -> None:
    parts = _multipart(schema, f"{BASE}/{route}")
    assert set(parts["properties"]) == {part} and parts["required"] == [part]
    assert parts["properties"][part]["format"] == "binary"


def test_ndjson_import_declares_its_media_type(schema: dict[str, Any]) -> None:
    body = schema["paths"]["/api/v1/collections/{collection_id}/import"]["post"]["requestBody"]
    assert list(body["content"]) == ["application/x-ndjson"]


def _upload(files: dict[str, bytes]) -> dict[str, Any]:
    return {"files": {k: (f"{k}.txt", v, "text/plain") for k, v in files.items()}}


def test_uploads_under_the_declared_names_are_read(api: Api, schema: dict[str, Any]) -> None:
    """The part names come from the served schema: if the schema and the handler disagreed,
    these uploads would be refused."""
    cid = collections.create_collection(db=api.db, name="openapi-parts").id
    props = _multipart(schema, f"{BASE}/import-files")["properties"]
    trec = {n for n, p in props.items() if p["x-kinds"].get("trec") == "required"}
    content = {"topics": TOPICS, "documents": DOCS, "qrels": QRELS}
    files = {n: content[n] for n in trec | {"qrels"}}
    r = api.post(
        "admin", f"/api/v1/admin/collections/{cid}/import-files?kind=trec", **_upload(files)
    )
    assert r.status_code == 200, r.text
    assert r.json()["rows"] == 2
    (grades_part,) = _multipart(schema, f"{BASE}/attach-grades")["required"]
    url = f"/api/v1/admin/collections/{cid}/attach-grades"
    r = api.post("admin", url, **_upload({grades_part: b"1 0 a 4\n"}))
    assert r.status_code == 200, r.text
    assert r.json()["matched"] == 1
    # Any other name is refused, and the error names the declared part.
    r = api.post("admin", url, **_upload({"grades": b"1 0 a 4\n"}))
    assert r.status_code == 422
    assert repr(grades_part) in r.text
