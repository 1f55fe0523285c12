"""Text hygiene at the edge, identifiers and strict types, through real HTTP requests
(docs/security.md#text-hygiene).

Lone surrogates reach the server as JSON escapes (``"\\ud800"``), which ``json.dumps`` writes
by default (``ensure_ascii``); httpx's ``json=`` would refuse to encode them, so bodies go as
raw bytes. Every case runs on SQLite and on PostgreSQL, for bearer and cookie callers of the
judging loop (the bearer path is the hot path), and checks that nothing was stored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.auth import sessions
from app.users import service as users
from tests.app.conftest import Api
from tests.app.judging.support import make_task, ndjson, pool

LONE = "\ud800"


def raw(obj: Any) -> bytes:
    """JSON with every non-ASCII character escaped (a lone surrogate as ``\\ud800``)."""
    return json.dumps(obj).encode("ascii")


JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def world(api: Api) -> dict[str, Any]:
    api.add_user("hyg")
    r = api.post("admin", "/api/v1/collections", json={"name": "hygiene"})
    cid = r.json()["id"]
    assert api.post("admin", f"/api/v1/collections/{cid}/import", content=ndjson(pool("h1", 6)))
    tid = make_task(api, cid, "h1", "hyg", k=2)
    hyg = users.get_user(db=api.db, username="hyg")
    cookie, csrf = sessions.create_web_session(api.db, hyg)
    cookie_headers = {
        "Cookie": f"{sessions.SESSION_COOKIE}={cookie}",
        "X-CSRF-Token": csrf,
        "Sec-Fetch-Site": "same-origin",
    }
    return {"cid": cid, "tid": tid, "cookie": cookie_headers}


def _pending(api: Api, tid: int) -> dict[str, Any]:
    r = api.get("hyg", f"/api/v1/tasks/{tid}/next")
    assert r.status_code == 200, r.text
    return r.json()


def _assert_refused(r: httpx.Response, status: int = 422, *, mentions: str = "") -> Any:
    """A 4xx whose body is UTF-8 JSON ``{"detail": str | list}`` (so it was rendered, not a
    dropped connection) and mentions ``mentions``."""
    assert r.status_code == status, r.text
    body = json.loads(r.content.decode("utf-8"))
    assert isinstance(body["detail"], str | list)
    assert mentions in r.text
    return body


@pytest.mark.parametrize("caller", ["bearer", "cookie"])
@pytest.mark.parametrize("field", ["left", "right"])
def test_lone_surrogate_in_a_judgment_is_422(
    api: Api, world: dict[str, Any], caller: str, field: str
) -> None:
    tid = world["tid"]
    q = _pending(api, tid)
    body = {
        "seq": q["seq"],
        "left": q["pair"]["left"]["doc_id"],
        "right": q["pair"]["right"]["doc_id"],
        "outcome": "left",
        field: LONE,
    }
    headers = {**JSON, **(api.auth("hyg") if caller == "bearer" else world["cookie"])}
    r = api.client.post(f"/api/v1/tasks/{tid}/judgments", content=raw(body), headers=headers)
    detail = _assert_refused(r, mentions="lone surrogate U+D800")["detail"]
    assert any(f"body.{field} contains a lone surrogate" in item["msg"] for item in detail)
    # The echo of the input is escaped, never the raw character.
    assert "\\ud800" in r.content.decode("utf-8")
    after = _pending(api, tid)
    assert after["seq"] == q["seq"] and after["progress"]["judgments"] == q["progress"]["judgments"]


def test_issue_example_judgment_with_surrogate(api: Api, world: dict[str, Any]) -> None:
    body = b'{"seq":0,"left":"\\ud800","right":"d1","outcome":"left"}'
    r = api.client.post(
        f"/api/v1/tasks/{world['tid']}/judgments", content=body, headers={**JSON, **api.auth("hyg")}
    )
    _assert_refused(r, mentions="body.left contains a lone surrogate")


# Every JSON body of the API with a surrogate in one of its text fields (or a key).
SURROGATE_BODIES = [
    ("/api/v1/collections", {"name": f"c{LONE}"}, "body.name"),
    ("/api/v1/collections", {"name": "fine", "description": LONE}, "body.description"),
    ("/api/v1/users", {"username": f"u{LONE}", "password": "a long passphrase"}, "body.username"),
    ("/api/v1/users", {"username": "sur", "password": f"a long pass{LONE}"}, "body.password"),
    ("/api/v1/admin/users/hyg/password", {"password": f"x{LONE}yz long"}, "body.password"),
    ("/api/v1/admin/plans", {"collection_id": 1, "name": f"p{LONE}"}, "body.name"),
    ("/api/v1/admin/plans/preview", {"collection_id": 1, "assessors": [LONE]}, "body.assessors[0]"),
    ("/api/v1/training-runs", {"collection_id": 1, "model": f"m{LONE}"}, "body.model"),
    ("/api/v1/training-runs", {"collection_id": 1, "model": "m", "params": {LONE: 1}}, "a key"),
]


@pytest.mark.parametrize(("path", "body", "where"), SURROGATE_BODIES)
def test_lone_surrogates_in_any_json_body_are_422(
    api: Api, world: dict[str, Any], path: str, body: dict[str, Any], where: str
) -> None:
    before = api.get("admin", "/api/v1/users").json()
    collections = api.get("admin", "/api/v1/collections").json()
    r = api.post("admin", path, content=raw(body), headers=JSON)
    _assert_refused(r, mentions=f"{where}")
    assert "lone surrogate" in r.text
    assert api.get("admin", "/api/v1/users").json() == before
    assert api.get("admin", "/api/v1/collections").json() == collections


def test_lone_surrogates_in_task_fields_and_options(api: Api, world: dict[str, Any]) -> None:
    base = {"collection_id": world["cid"], "query_id": "h1", "assessor": "hyg", "method": "topk"}
    for body, where in [
        ({**base, "query_id": LONE}, "body.query_id"),
        ({**base, "assessor": f"hyg{LONE}"}, "body.assessor"),
        ({**base, "plan": LONE}, "body.plan"),
        ({**base, "options": {"initial_order": ["d000", LONE]}}, "body.options.initial_order[1]"),
    ]:
        r = api.post("admin", "/api/v1/tasks", content=raw(body), headers=JSON)
        _assert_refused(r, mentions=where)
    r = api.client.patch(
        f"/api/v1/admin/collections/{world['cid']}",
        content=raw({"description": LONE}),
        headers={**JSON, **api.auth("admin")},
    )
    _assert_refused(r, mentions="body.description")
    assert api.get("admin", f"/api/v1/collections/{world['cid']}").json()["description"] == ""


def test_lone_surrogates_and_nul_in_ndjson_imports(api: Api, world: dict[str, Any]) -> None:
    cid = world["cid"]
    good = {"query_id": "s1", "query": "q", "doc_id": "s-a", "text": "fine"}
    lines = [
        raw(good),
        raw({**good, "doc_id": "s-b", "text": f"bad {LONE} text"}),
        raw({**good, "doc_id": "s-c", "title": "nul \x00 title"}),
        raw({**good, "doc_id": f"s-{LONE}"}),
        raw({**good, "query": LONE, "doc_id": "s-d"}),
    ]
    r = api.post("admin", f"/api/v1/collections/{cid}/import", content=b"\n".join(lines))
    detail = _assert_refused(r)["detail"]
    msgs = {item["line"]: item["msg"] for item in detail}
    assert "text contains a lone surrogate U+D800 at character 5" in msgs[2]
    assert "title contains a NUL character at character 5" in msgs[3]
    assert msgs[4].startswith("doc_id contains a lone surrogate U+D800 at character 3")
    assert "query contains a lone surrogate" in msgs[5]
    assert 1 not in msgs
    queries = api.get("admin", f"/api/v1/collections/{cid}/queries").json()
    assert [q["query_id"] for q in queries] == ["h1"]


FORGED = [
    ("x\ny 9 FAKE 4", "U+000A"),
    ("tab\tid", "U+0009"),
    ("space id", "U+0020 (SPACE)"),
    ("zero\u200bwidth", "U+200B (ZERO WIDTH SPACE)"),
    ("nbsp\u00a0id", "U+00A0 (NO-BREAK SPACE)"),
    ("line\u2028sep", "U+2028 (LINE SEPARATOR)"),
    ("", "is empty"),
]


@pytest.mark.parametrize(("bad", "shown"), FORGED)
@pytest.mark.parametrize("key", ["doc_id", "query_id"])
def test_ndjson_identifiers_cannot_forge_export_lines(
    api: Api, world: dict[str, Any], key: str, bad: str, shown: str
) -> None:
    rows = [
        {"query_id": "f1", "query": "q", "doc_id": "f-ok"},
        {"query_id": "f1", "query": "q", "doc_id": "f-ok2", key: bad},
    ]
    r = api.post("admin", f"/api/v1/collections/{world['cid']}/import", content=ndjson(rows))
    detail = _assert_refused(r)["detail"]
    assert [item["line"] for item in detail] == [2]
    assert detail[0]["msg"].startswith(f"{key} ") and shown in detail[0]["msg"]
    queries = api.get("admin", f"/api/v1/collections/{world['cid']}/queries").json()
    assert "f1" not in {q["query_id"] for q in queries}


def _upload(api: Api, cid: int, kind: str, files: dict[str, tuple[str, bytes]]) -> httpx.Response:
    return api.client.post(
        f"/api/v1/admin/collections/{cid}/import-files?kind={kind}&pairing=all",
        files={part: (name, data, "text/plain") for part, (name, data) in files.items()},
        headers=api.auth("admin"),
    )


def test_trec_and_jsonl_uploads_refuse_bad_identifiers_with_file_and_line(
    api: Api, world: dict[str, Any]
) -> None:
    cid = world["cid"]
    topics = b"<top>\n<num> Number: 301\n<title> solar\n</top>\n"
    docs = (
        b"<DOC>\n<DOCNO> D-1 </DOCNO>\n<TEXT>one</TEXT>\n</DOC>\n"
        b"<DOC>\n<DOCNO> D 2 9 FAKE 4 </DOCNO>\n<TEXT>two</TEXT>\n</DOC>\n"
    )
    r = _upload(api, cid, "trec", {"topics": ("t.txt", topics), "documents": ("d.sgml", docs)})
    detail = _assert_refused(r)["detail"]
    assert detail[0]["file"] == "d.sgml" and detail[0]["line"] == 5
    assert detail[0]["msg"].startswith("DOCNO contains U+0020 (SPACE) at character 2")
    bad_topic = "<top>\n<num> Number: 30\u200b1\n<title> solar\n</top>\n".encode()
    r = _upload(api, cid, "trec", {"topics": ("t.txt", bad_topic), "documents": ("d.sgml", docs)})
    items = {(i["file"], i["line"]): i["msg"] for i in _assert_refused(r)["detail"]}
    assert items[("t.txt", 2)].startswith("topic number contains U+200B (ZERO WIDTH SPACE)")
    jsonl = raw({"doc_id": "J-1", "text": "a"}) + b"\n" + raw({"doc_id": "J\t2", "text": "b"})
    jsonl += b"\n" + raw({"doc_id": "J-3", "title": LONE, "text": "c"}) + b"\n"
    r = _upload(api, cid, "trec", {"topics": ("t.txt", topics), "documents": ("d.jsonl", jsonl)})
    items = {(i["file"], i["line"]): i["msg"] for i in _assert_refused(r)["detail"]}
    assert items[("d.jsonl", 2)].startswith("doc_id contains U+0009 at character 2")
    assert items[("d.jsonl", 3)].startswith("title contains a lone surrogate U+D800")
    queries = api.get("admin", f"/api/v1/collections/{cid}/queries").json()
    assert [q["query_id"] for q in queries] == ["h1"]


def test_letor_reader_refuses_bad_identifiers(tmp_path: Path) -> None:
    from labeling.sources import SourceError
    from labeling.sources.letor import read_letor_features

    path = tmp_path / "f.txt"
    path.write_text("1 qid:10 1:0.5 2:0.1 #docid = GX-1\n0 qid:10 1:0.2 2:0.3 #docid = GX\u200b2\n")
    with pytest.raises(SourceError) as err:
        read_letor_features(path, file="f.txt")
    [issue] = err.value.issues
    assert (issue.file, issue.line) == ("f.txt", 2)
    assert issue.message.startswith("docid contains U+200B (ZERO WIDTH SPACE) at character 3")


STRICT_CASES = [
    ("/api/v1/tasks", {"k": True}, "k"),
    ("/api/v1/tasks", {"k": "5"}, "k"),
    ("/api/v1/tasks", {"k": 5.0}, "k"),
    ("/api/v1/tasks", {"seed": "7"}, "seed"),
    ("/api/v1/tasks", {"collection_id": "1"}, "collection_id"),
]


@pytest.mark.parametrize(("path", "change", "field"), STRICT_CASES)
def test_numbers_must_be_json_integers(
    api: Api, world: dict[str, Any], path: str, change: dict[str, Any], field: str
) -> None:
    body = {
        "collection_id": world["cid"],
        "query_id": "h1",
        "assessor": "hyg",
        "method": "topk",
        **change,
    }
    before = len(api.get("admin", f"/api/v1/tasks?collection_id={world['cid']}").json())
    r = api.post("admin", path, json=body)
    detail = _assert_refused(r)["detail"]
    assert [item["loc"] for item in detail] == [["body", field]]
    after = len(api.get("admin", f"/api/v1/tasks?collection_id={world['cid']}").json())
    assert after == before


@pytest.mark.parametrize("caller", ["bearer", "cookie"])
@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"seq": 1e3}, "seq"),
        ({"seq": True}, "seq"),
        ({"seq": "0"}, "seq"),
        ({"active_ms": 5.5}, "active_ms"),
    ],
)
def test_judgment_numbers_are_strict(
    api: Api, world: dict[str, Any], caller: str, change: dict[str, Any], field: str
) -> None:
    tid = world["tid"]
    q = _pending(api, tid)
    body = {
        "seq": q["seq"],
        "left": q["pair"]["left"]["doc_id"],
        "right": q["pair"]["right"]["doc_id"],
        "outcome": "left",
        **change,
    }
    headers = api.auth("hyg") if caller == "bearer" else world["cookie"]
    r = api.client.post(f"/api/v1/tasks/{tid}/judgments", json=body, headers=headers)
    detail = _assert_refused(r)["detail"]
    assert [item["loc"] for item in detail] == [["body", field]]
    assert _pending(api, tid)["progress"]["judgments"] == q["progress"]["judgments"]


def test_booleans_must_be_json_booleans(api: Api, world: dict[str, Any]) -> None:
    url = f"/api/v1/admin/collections/{world['cid']}"
    for value in (0, 1, "true", "false"):
        r = api.client.patch(url, json={"archived": value}, headers=api.auth("admin"))
        detail = _assert_refused(r)["detail"]
        assert [item["loc"] for item in detail] == [["body", "archived"]]
    assert api.get("admin", f"/api/v1/collections/{world['cid']}").json()["archived"] is False
    r = api.client.patch(url, json={"archived": False}, headers=api.auth("admin"))
    assert r.status_code == 200


def test_names_are_one_line(api: Api, world: dict[str, Any]) -> None:
    r = api.post("admin", "/api/v1/collections", json={"name": "two\nlines"})
    _assert_refused(r, mentions="name contains U+000A at character 4")
    r = api.client.patch(
        f"/api/v1/admin/collections/{world['cid']}",
        json={"name": "tab\there"},
        headers=api.auth("admin"),
    )
    _assert_refused(r, mentions="name contains U+0009")
    r = api.post("admin", "/api/v1/collections", json={"name": "spaces and Ünïcode are fine"})
    assert r.status_code == 201, r.text


def test_identifiers_stored_before_the_rule_stay_readable_and_judgeable(api: Api) -> None:
    """Rows an older version accepted (a doc id with a space) still list, judge and export:
    the identifier rule applies where identifiers are created, references only need clean
    text."""
    from sqlalchemy import update

    from app.kernel.models import Document

    api.add_user("legacy")
    cid = api.post("admin", "/api/v1/collections", json={"name": "legacy ids"}).json()["id"]
    rows = [{"query_id": "lq", "query": "q", "doc_id": f"old{i}"} for i in range(3)]
    assert api.post("admin", f"/api/v1/collections/{cid}/import", content=ndjson(rows))
    with api.db.write() as s:
        s.execute(
            update(Document)
            .where(Document.collection_id == cid, Document.external_id == "old1")
            .values(external_id="old doc 1")
        )
    tid = make_task(api, cid, "lq", "legacy", k=1)
    seen: set[str] = set()
    for _ in range(10):
        q = api.get("legacy", f"/api/v1/tasks/{tid}/next").json()
        if q["done"]:
            break
        pair = q["pair"]
        seen |= {pair["left"]["doc_id"], pair["right"]["doc_id"]}
        body = {"seq": q["seq"], "left": pair["left"]["doc_id"], "right": pair["right"]["doc_id"]}
        r = api.post("legacy", f"/api/v1/tasks/{tid}/judgments", json={**body, "outcome": "left"})
        assert r.status_code == 200, r.text
    assert "old doc 1" in seen
    assert api.get("legacy", f"/api/v1/tasks/{tid}/result").status_code == 200
    queries = api.get("admin", f"/api/v1/collections/{cid}/queries").json()
    assert queries == [{"query_id": "lq", "title": "q", "description": "", "documents": 3}]


def test_live_server_keeps_the_connection_after_a_surrogate(tmp_path: Path) -> None:
    """Against a real uvicorn: the 422 for a surrogate is rendered (no UnicodeEncodeError in
    the log) and the client's next request on the same keep-alive connection is answered."""
    from app.collections import service as collections
    from tests.e2e.web_support import LiveServer, init_db, seed_task

    db = init_db(tmp_path / "live.db")
    user = users.create_user(
        db=db, username="live", password="live server passphrase", role="admin"
    )
    task = seed_task(db, assessor_id=user.id, docs=[{"doc_id": f"d{i}"} for i in range(4)])
    cid = collections.create_collection(db=db, name="live-c").id
    db.dispose()
    server = LiveServer(tmp_path / "live.db").start()
    try:
        with httpx.Client(base_url=server.url, timeout=20) as client:
            form = {"username": "live", "password": "live server passphrase"}
            token = client.post("/api/v1/auth/token", data=form).json()["access_token"]
            auth = {"Authorization": f"Bearer {token}", **JSON}
            url = f"/api/v1/tasks/{task.task_id}/judgments"
            bodies = [
                (url, b'{"seq":0,"left":"\\ud800","right":"d1","outcome":"left"}'),
                ("/api/v1/collections", raw({"name": f"n{LONE}"})),
                (
                    f"/api/v1/collections/{cid}/import",
                    raw({"query_id": LONE, "query": "q", "doc_id": "d"}),
                ),
            ]
            for path, body in bodies:
                r = client.post(path, content=body, headers=auth)
                assert r.status_code == 422, r.text
                assert "lone surrogate" in r.json()["detail"][0]["msg"]
                after = client.get(f"/api/v1/tasks/{task.task_id}/next", headers=auth)
                assert after.status_code == 200 and after.json()["seq"] == 0
    finally:
        server.stop()
    log = server.log()
    assert "Traceback" not in log and "UnicodeEncodeError" not in log, log
