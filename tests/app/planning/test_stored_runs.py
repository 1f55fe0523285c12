"""Plans and task priors that name a run stored on the collection (``pool.stored_run``,
``prior_stored_run``, ``prior.stored_run``, ``heapjudge admin plan --stored-run``): the same
pools, priors, costs and tasks as the same run sent inline; an unknown name is a 422 naming
it and nothing is created; an inline run over the limit is a 422 that says to store it."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from typer.testing import CliRunner

from app.cli import cli
from app.http.schemas import MAX_INLINE_RUN_CHARS
from app.kernel.models import Query, Task
from tests.app.admin_support import make_collection
from tests.app.conftest import Api

USERS = ["srun1", "srun2"]
# Query 101: d1 and d2 tie at 8, so trec_eval's order (doc id descending) puts d2 first
# whatever the rank column says; d9 is no document of 101. Two queries, one tag each.
RUN_A = (
    "101 Q0 d0 1 9 A\n101 Q0 d1 2 8 A\n101 Q0 d2 3 8 A\n101 Q0 d3 4 6 A\n101 Q0 d9 5 5 A\n"
    "102 Q0 d5 1 1 A\n102 Q0 d6 2 3 A\n"
)
RUN_B = (
    "101 Q0 d4 1 8 B\n101 Q0 d7 2 8 B\n101 Q0 d0 3 7 B\n101 Q0 d2 4 6 B\n"
    "102 Q0 d6 1 5 B\n102 Q0 d5 2 4 B\n"
)
RUNS = {"A": RUN_A, "B": RUN_B}


@pytest.fixture(scope="module")
def users(api: Api) -> list[str]:
    for u in USERS:
        api.add_user(u)
    return USERS


@pytest.fixture
def pair(api: Api, users: list[str], request: pytest.FixtureRequest) -> tuple[int, int]:
    """Two collections of the same content: the first without runs (plans send the run
    inline), the second with A and B stored on it."""
    tag = request.node.name[-40:].replace("[", "-").replace("]", "")
    inline, _ = make_collection(api, f"inline-{tag}", queries=2, docs=8, features=False)
    stored, _ = make_collection(api, f"stored-{tag}", queries=2, docs=8, features=False)
    parts = [("run", (name, text.encode(), "text/plain")) for name, text in RUNS.items()]
    r = api.post("admin", f"/api/v1/admin/collections/{stored}/runs", files=parts)
    assert r.status_code == 201, r.text
    return int(inline), int(stored)


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Api, int]]:
    """An app with the default body limit (32 MiB) over SQLite, an admin, the assessors and
    a collection (no runs): room for inline runs of the longest length and more."""
    import migrations
    from app.kernel.settings import Settings
    from app.main import create_app

    url = f"sqlite:///{tmp_path_factory.mktemp('runref') / 'big.db'}"
    migrations.upgrade(url)
    settings = Settings(database_url=url, dev=True, public_origin="http://testserver")
    app = create_app(settings)
    with TestClient(app, base_url="http://testserver") as client:
        api = Api(client=client, db=app.state.db, settings=settings)
        for name, role in (("admin", "admin"), *((u, "assessor") for u in USERS)):
            api.add_user(name, role=role)
        cid, _ = make_collection(api, "big-runs", queries=2, docs=8, features=False)
        yield api, int(cid)


def _body(cid: int, **kw: Any) -> dict[str, Any]:
    return {
        "collection_id": cid,
        "assessors": USERS,
        "scheme": "balanced",
        "per_query": {"topk": 1, "graded": 1},
        "k": 2,
        "name": "runref",
        **kw,
    }


def _tasks(api: Api, cid: int) -> list[tuple[Any, ...]]:
    with api.db.read() as s:
        qids = dict(s.execute(select(Query.id, Query.external_id)).all())
        rows = s.scalars(select(Task).where(Task.collection_id == cid).order_by(Task.id))
        return [
            (qids[t.query_id], t.method, t.seed, tuple(t.doc_ids), json.dumps(t.options))
            for t in rows
        ]


CASES = [
    # A pool of the run's top 3 per query; no prior.
    (
        {"pool": {"mode": "run", "n": 3, "run": RUN_A}},
        {"pool": {"mode": "run", "n": 3, "stored_run": "A"}},
    ),
    # Every document, the top-k tasks starting from the run's order.
    ({"prior": "run", "prior_run": RUN_B}, {"prior": "run", "prior_stored_run": "B"}),
    # The pool's run as the prior (run_order).
    (
        {"pool": {"mode": "run", "n": 4, "run": RUN_B, "run_order": True}},
        {"pool": {"mode": "run", "n": 4, "stored_run": "B", "run_order": True}},
    ),
    # One run pools, the other orders.
    (
        {"pool": {"mode": "run", "n": 4, "run": RUN_A}, "prior": "run", "prior_run": RUN_B},
        {
            "pool": {"mode": "run", "n": 4, "stored_run": "A"},
            "prior": "run",
            "prior_stored_run": "B",
        },
    ),
]  # fmt: skip


@pytest.mark.parametrize(("inline", "named"), CASES)
def test_a_stored_run_plans_as_the_same_run_inline(
    api: Api, pair: tuple[int, int], inline: dict[str, Any], named: dict[str, Any]
) -> None:
    """Preview (pools, lost documents, priors' costs, every strategy) and the created tasks
    (pools, seeds, options with the resolved initial order and prior) are equal."""
    cid_inline, cid_stored = pair
    previews = []
    for cid, extra in ((cid_inline, inline), (cid_stored, named)):
        r = api.post("admin", "/api/v1/admin/plans/preview", json=_body(cid, **extra))
        assert r.status_code == 200, r.text
        previews.append(r.json())
    assert previews[0] == previews[1]
    assert previews[0]["ok"] and len(previews[0]["tasks"]) == 4
    for cid, extra in ((cid_inline, inline), (cid_stored, named)):
        r = api.post("admin", "/api/v1/admin/plans", json=_body(cid, **extra))
        assert r.status_code == 201, r.text
    made_inline, made_stored = _tasks(api, cid_inline), _tasks(api, cid_stored)
    assert made_inline == made_stored and len(made_inline) == 4


def test_stored_run_pool_and_prior_by_hand(api: Api, pair: tuple[int, int]) -> None:
    """The values themselves, counted by hand from RUN_A and RUN_B (trec_eval's order)."""
    _, cid = pair
    for query, extra in (
        ("101", {"pool": {"mode": "run", "n": 3, "stored_run": "A"}, "prior": "run"}),
        ("102", {"prior": "run", "prior_stored_run": "B"}),
    ):
        r = api.post("admin", "/api/v1/admin/plans", json=_body(cid, query_ids=[query], **extra))
        assert r.status_code == 201, r.text
    tasks = {(t[0], t[1]): t for t in _tasks(api, cid)}
    # A on 101 by score: d0 (9), then d2 and d1 (8, doc id descending): the top 3, and the
    # pool's run is the prior.
    assert sorted(tasks["101", "topk"][3]) == ["d0", "d1", "d2"]
    options = json.loads(tasks["101", "topk"][4])
    assert options["prior"] == "run:A" and options["initial_order"] == ["d0", "d2", "d1"]
    # Every document of 102, ordered by B: d6 (5), d5 (4); the rest is left to the session.
    assert len(tasks["102", "topk"][3]) == 8
    options = json.loads(tasks["102", "topk"][4])
    assert options["prior"] == "run:B" and options["initial_order"] == ["d6", "d5"]


def test_unknown_stored_runs_are_named_and_nothing_is_created(
    api: Api, pair: tuple[int, int]
) -> None:
    cid_inline, cid = pair
    with api.db.read() as s:
        before = int(s.scalar(select(func.count()).select_from(Task)) or 0)
    for extra, field in (
        ({"pool": {"mode": "run", "stored_run": "nope"}}, "pool.stored_run"),
        ({"prior": "run", "prior_stored_run": "nope"}, "prior_stored_run"),
    ):
        for path in ("/api/v1/admin/plans/preview", "/api/v1/admin/plans"):
            r = api.post("admin", path, json=_body(cid, **extra))
            assert r.status_code == 422, r.text
            detail = r.json()["detail"]
            assert field in detail and "'nope'" in detail and "'A'" in detail
    # A run stored on another collection is not this one's.
    r = api.post(
        "admin", "/api/v1/admin/plans", json=_body(cid_inline, prior="run", prior_stored_run="A")
    )
    assert r.status_code == 422 and "'A'" in r.json()["detail"]
    task = {"collection_id": cid, "query_id": "101", "assessor": USERS[0], "method": "topk"}
    r = api.post(
        "admin", "/api/v1/tasks", json={**task, "prior": {"source": "run", "stored_run": "zz"}}
    )
    assert r.status_code == 422 and "prior.stored_run" in r.json()["detail"]
    # Both the text and a name, or a name for another mode: refused too.
    for extra in (
        {"pool": {"mode": "run", "run": RUN_A, "stored_run": "A"}},
        {"pool": {"mode": "all", "stored_run": "A"}},
        {"prior": "bm25", "prior_stored_run": "A"},
        {"prior": "run", "prior_run": RUN_A, "prior_stored_run": "A"},
    ):
        r = api.post("admin", "/api/v1/admin/plans", json=_body(cid, **extra))
        assert r.status_code == 422, (extra, r.text)
    with api.db.read() as s:
        assert int(s.scalar(select(func.count()).select_from(Task)) or 0) == before


def test_task_prior_from_a_stored_run_equals_the_inline_run(
    api: Api, pair: tuple[int, int]
) -> None:
    cid_inline, cid_stored = pair
    made = []
    for cid, prior in (
        (cid_inline, {"source": "run", "run": RUN_A}),
        (cid_stored, {"source": "run", "stored_run": "A"}),
    ):
        body = {
            "collection_id": cid,
            "query_id": "101",
            "assessor": USERS[0],
            "method": "topk",
            "k": 2,
            "seed": 5,
            "prior": prior,
        }
        r = api.post("admin", "/api/v1/tasks", json=body)
        assert r.status_code == 201, r.text
        made.append(r.json()["options"])
    assert made[0] == made[1]
    # A on 101: d0, d2, d1, d3 (ties by doc id, descending); d9 is no document of 101.
    assert made[0]["prior"] == "run:A"
    assert made[0]["initial_order"] == ["d0", "d2", "d1", "d3"]


def test_inline_run_over_the_limit_is_refused_with_the_hint(big: tuple[Api, int]) -> None:
    """One character over the limit (a body well under the JSON byte limit): 422 naming the
    field and saying to store the run; nothing created."""
    api, cid = big
    line = "101 Q0 d0 1 9 A\n"
    long_run = (line * (MAX_INLINE_RUN_CHARS // len(line) + 1))[: MAX_INLINE_RUN_CHARS + 1]
    with api.db.read() as s:
        before = int(s.scalar(select(func.count()).select_from(Task)) or 0)
    for path, body in (
        ("/api/v1/admin/plans/preview", _body(cid, pool={"mode": "run", "run": long_run})),
        ("/api/v1/admin/plans", _body(cid, prior="run", prior_run=long_run)),
        (
            "/api/v1/tasks",
            {
                "collection_id": cid,
                "query_id": "101",
                "assessor": USERS[0],
                "method": "topk",
                "prior": {"source": "run", "run": long_run},
            },
        ),
    ):
        r = api.post("admin", path, json=body)
        assert r.status_code == 422, r.text
        assert len(r.content) < 64 * 1024  # the run is not echoed
        # (A task's prior is an object or a string: the union reports both branches.)
        (item,) = [i for i in r.json()["detail"] if i["type"] == "string_too_long"]
        assert item["loc"][-1] in ("run", "prior_run")
        assert "4000000 characters" in item["msg"] and "stored_run" in item["msg"]
        assert "/runs" in item["msg"]
    # Exactly at the limit is a run like any other (here: a malformed one, many duplicates).
    at_limit = long_run[:MAX_INLINE_RUN_CHARS]
    r = api.post(
        "admin",
        "/api/v1/admin/plans/preview",
        json=_body(cid, pool={"mode": "run", "run": at_limit}),
    )
    assert r.status_code == 422, r.text[:500]
    assert "string_too_long" not in r.text and "listed twice" in r.text[:2000]
    with api.db.read() as s:
        assert int(s.scalar(select(func.count()).select_from(Task)) or 0) == before


def test_a_json_body_past_the_run_routes_limit_is_refused_as_it_arrives(
    big: tuple[Api, int],
) -> None:
    """Two inline runs and a CSV of 3 MiB each (9 MiB, within the 4,000,000-character field
    limit each): refused by its size before any parser sees it, saying to store the run; so
    is a task's body of 9 MiB."""
    api, cid = big
    chunk = "x" * (3 * 1024 * 1024)
    body = _body(cid, pool={"mode": "run", "run": chunk}, prior="run", prior_run=chunk, csv=chunk)
    r = api.post("admin", "/api/v1/admin/plans/preview", json=body)
    assert r.status_code == 422, r.text
    (item,) = r.json()["detail"]
    assert item["type"] == "json_too_complex"
    assert "8388608 bytes" in item["msg"] and "stored_run" in item["msg"]
    task = {"collection_id": cid, "query_id": "101", "assessor": USERS[0], "method": "topk"}
    r = api.post("admin", "/api/v1/tasks", json={**task, "options": {"x": chunk * 3}})
    assert r.status_code == 422 and r.json()["detail"][0]["type"] == "json_too_complex"
    # Within it, a run at the limit is read (here: one line repeated, a duplicate error).
    line = "101 Q0 d0 1 9 A\n"
    at_limit = (line * (MAX_INLINE_RUN_CHARS // len(line)))[:MAX_INLINE_RUN_CHARS]
    r = api.post(
        "admin", "/api/v1/tasks", json={**task, "prior": {"source": "run", "run": at_limit}}
    )
    assert r.status_code == 422 and "listed twice" in r.text[:2000], r.text[:500]


def test_cli_plan_with_a_stored_run_equals_the_file(tmp_path: Path) -> None:
    """``heapjudge admin plan --stored-run A`` creates the tasks ``--run A.run`` creates (two
    databases of the same collection): pools, seeds, options with the prior."""
    runner = CliRunner()
    rows = []
    for which in ("file", "stored"):
        url = f"sqlite:///{tmp_path / which}.db"

        def invoke(*args: str, stdin: str | None = None, url: str = url) -> Any:
            return runner.invoke(cli, [*args, "--database-url", url], input=stdin)

        (tmp_path / "docs.all").write_text(
            "".join(f".I {i}\n.W\ndocument {i}\n" for i in range(1, 9))
        )
        (tmp_path / "q.qry").write_text("".join(f".I {i}\n.W\nquery {i}\n" for i in range(1, 3)))
        (tmp_path / "A").write_text("1 Q0 3 1 3 A\n1 Q0 1 2 3 A\n1 Q0 2 3 1 A\n2 Q0 5 1 3 A\n")
        made = invoke(
            "admin", "import-smart", "tiny", "--documents", str(tmp_path / "docs.all"),
            "--queries", str(tmp_path / "q.qry"), "--pairing", "all",
        )  # fmt: skip
        assert made.exit_code == 0, made.output
        for name in ("c1", "c2"):
            added = invoke("create-user", name, "--password-stdin", stdin="plan cli pass 1\n")
            assert added.exit_code == 0, added.output
        if which == "stored":
            up = invoke("admin", "runs", "upload", "tiny", str(tmp_path / "A"))
            assert up.exit_code == 0, up.output
            source = ["--stored-run", "A"]
        else:
            source = ["--run", str(tmp_path / "A")]
        plan = invoke(
            "admin", "plan", "tiny", "--assessors", "c1,c2", "--scheme", "balanced",
            "--topk-per-query", "1", "--graded-per-query", "1", "--k", "1",
            "--pool", "run", "--pool-n", "2", "--prior", "run", *source, "--create",
        )  # fmt: skip
        assert plan.exit_code == 0, plan.output
        with sqlite3.connect(tmp_path / f"{which}.db") as con:
            rows.append(
                con.execute(
                    "SELECT query_id, method, seed, doc_ids, options FROM task ORDER BY id"
                ).fetchall()
            )
    assert rows[0] == rows[1] and len(rows[0]) == 4
    orders = sorted(json.loads(o)["initial_order"] for _q, m, _s, _d, o in rows[1] if m == "topk")
    # Query 1: 3 and 1 tie at 3 (doc id descending: 3, 1), then 2; the top 2 are 3 and 1.
    # Query 2: only 5.
    assert orders == [["3", "1"], ["5"]]
    priors = {json.loads(o)["prior"] for _q, m, _s, _d, o in rows[1] if m == "topk"}
    assert priors == {"run:A"}

    unknown = runner.invoke(
        cli,
        ["admin", "plan", "tiny", "--assessors", "c1,c2", "--pool", "run", "--stored-run",
         "nope", "--database-url", f"sqlite:///{tmp_path / 'stored'}.db"],
    )  # fmt: skip
    assert unknown.exit_code != 0 and "'nope'" in unknown.output
    both = runner.invoke(
        cli,
        ["admin", "plan", "tiny", "--assessors", "c1,c2", "--pool", "run", "--stored-run", "A",
         "--run", str(tmp_path / "A"), "--database-url", f"sqlite:///{tmp_path / 'stored'}.db"],
    )  # fmt: skip
    assert both.exit_code != 0 and "not both" in both.output
