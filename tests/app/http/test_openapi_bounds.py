"""The OpenAPI document declares the bounds the server enforces on ids and integers: every
integer a request carries that names a row (an id), a question (``seq``) or a seed declares
its bounds, ids at most int32's maximum (the id columns' width on Postgres: both backends
run the probes), seeds int64's; and the server agrees at the bounds: the largest
declared value is a well-formed request (404 or 409, never 422), one past it a 422.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.http.schemas import MAX_ID, MAX_SEED, MAX_SEQ
from tests.app.conftest import Api
from tests.app.machine_support import machine_collection, machine_task

BOUNDED = ("id", "seq", "to_seq", "seed")


def _integers(node: Any, name: str, out: list[tuple[str, dict[str, Any]]]) -> None:
    if isinstance(node, dict):
        if node.get("type") == "integer":
            out.append((name, node))
        for key, value in node.items():
            if key == "properties":
                for prop, schema in value.items():
                    _integers(schema, prop, out)
            elif key != "$ref":
                _integers(value, name, out)
    elif isinstance(node, list):
        for value in node:
            _integers(value, name, out)


def _request_integers(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(where, name, schema) of every integer in a request: parameters and request bodies
    (with the component schemas they reference, recursively)."""
    components = doc["components"]["schemas"]
    found: list[tuple[str, str, dict[str, Any]]] = []
    seen: set[str] = set()

    def bodies(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if ref and ref.split("/")[-1] not in seen:
                name = ref.split("/")[-1]
                seen.add(name)
                ints: list[tuple[str, dict[str, Any]]] = []
                _integers(components[name], name, ints)
                found.extend((name, n, s) for n, s in ints)
                bodies(components[name])
            for value in node.values():
                bodies(value)
        elif isinstance(node, list):
            for value in node:
                bodies(value)

    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            for p in op.get("parameters", []):
                ints: list[tuple[str, dict[str, Any]]] = []
                _integers(p["schema"], p["name"], ints)
                found.extend((f"{method} {path}", n, s) for n, s in ints)
            bodies(op.get("requestBody", {}))
    return found


def _named(name: str) -> bool:
    return name in BOUNDED or name.endswith("_id")


def test_every_id_seq_and_seed_declares_its_bounds(api: Api) -> None:
    doc = api.client.get("/openapi.json").json()
    integers = [(w, n, s) for w, n, s in _request_integers(doc) if _named(n)]
    assert len(integers) > 20  # the walk finds the path ids, body ids, seqs and seeds

    def has_top(s: dict[str, Any]) -> bool:
        return "maximum" in s or "exclusiveMaximum" in s

    def has_bottom(s: dict[str, Any]) -> bool:
        return "minimum" in s or "exclusiveMinimum" in s

    # Every one declares its top; seqs and seeds their bottom too (a row id's bottom is the
    # database's: any id below 1 is simply absent, a 404).
    unbounded = [
        (w, n) for w, n, s in integers if not has_top(s) or (n in BOUNDED[1:] and not has_bottom(s))
    ]
    assert unbounded == []
    for where, name, s in integers:
        # An exclusiveMaximum 2**31 or 2**63 is exact as a float too; maximum is an integer.
        top = MAX_SEED if name == "seed" else MAX_ID
        if "exclusiveMaximum" in s:
            assert s["exclusiveMaximum"] <= top + 1, (where, name, s)
        else:
            assert s["maximum"] <= top, (where, name, s)
        if name in ("seq", "to_seq"):
            assert s.get("maximum") == MAX_SEQ and s.get("minimum") == 0, (where, name, s)


@pytest.fixture(scope="module")
def task(api: Api) -> int:
    api.add_user("ida")
    cid, _ = machine_collection(api, "bounds", queries=1, docs=6)
    return machine_task(api, cid, "q0", "ida", 2, None)


def test_the_server_agrees_at_the_bounds(api: Api, task: int) -> None:
    assert api.get("admin", f"/api/v1/tasks/{MAX_ID}").status_code == 404
    assert api.get("admin", f"/api/v1/tasks/{MAX_ID + 1}").status_code == 422
    runs = "/api/v1/training-runs"
    assert api.get("admin", runs, params={"collection_id": MAX_ID}).status_code == 200
    assert api.get("admin", runs, params={"collection_id": MAX_ID + 1}).status_code == 422
    body = api.get("ida", f"/api/v1/tasks/{task}/next").json()
    pair = {"left": body["pair"]["left"]["doc_id"], "right": body["pair"]["right"]["doc_id"]}

    def answer(seq: Any) -> int:
        url = f"/api/v1/tasks/{task}/judgments"
        r = api.post("ida", url, json={"seq": seq, **pair, "outcome": "left"})
        return int(r.status_code)

    # Past the question waiting: a stale answer (409) up to the declared top, a 422 past it;
    # a float is a 422 wherever an integer is expected (docs/rest-api.md: integers are
    # written as integers), 878474.0 as 1.5.
    assert answer(878474) == answer(MAX_SEQ) == 409
    assert answer(MAX_SEQ + 1) == answer(-1) == answer(878474.0) == answer(1.5) == 422
    assert answer(body["seq"]) == 200


def test_import_options_are_refused_where_the_schema_says(api: Api) -> None:
    r = api.post("admin", "/api/v1/collections", json={"name": "bounds-import"})
    cid = r.json()["id"]
    url = f"/api/v1/admin/collections/{cid}/import-files"
    files = [("documents", ("d.all", b".I 1\n.W\nword\n", "text/plain"))]
    files.append(("queries", ("q.qry", b".I 1\n.W\nword\n", "text/plain")))
    for params in ({"run_depth": 100_001}, {"run_depth": 0}, {"unjudged_grade": 5}):
        got = api.post(
            "admin", url, params={"kind": "smart", "pairing": "all", **params}, files=files
        )
        assert got.status_code == 422, (params, got.text)
    ok = api.post(
        "admin", url, params={"kind": "smart", "pairing": "bm25", "run_depth": 100_000}, files=files
    )
    assert ok.status_code == 200, ok.text
