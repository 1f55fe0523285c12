"""Machine judges as priors (docs/machine-judges.md#judges-as-priors): ``prior: "model:<run id>"``
orders a task's documents by a finished training run's model scores, ``prior: "llm"`` by an
LLM's grades, asked by a job (``heapjudge.llm_grades``, taken from the real huey queue in a
SQLite file and run in this process) or by ``heapjudge admin llm-grades``, of a stand-in
OpenAI-compatible server on 127.0.0.1 (tests/app/machine/llm_standin.py: no real model is reachable
from the tests); SQLite and Postgres.

Oracles: the model's own ``predict`` on the documents' feature vectors, and the stand-in's
grade rule applied to the hidden truth here.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from app.cli import cli
from app.kernel.models import Task
from app.machine.jobs import GRADES, GRADES_TASK, run_grades_job
from tests.app.conftest import Api
from tests.app.machine.llm_standin import StandInModel, StandInServer
from tests.app.machine_support import (
    machine_collection,
    point_at_standin,
    text_collection,
    training_run,
)

N, K = 20, 4
QUERIES = ("q1", "q2", "q3")
KEY = f"sk-prior-{uuid.uuid4().hex}"


@pytest.fixture(scope="module")
def pia(api: Api) -> str:
    """The assessor of every task here."""
    api.add_user("pia")
    return "pia"


def tasks(api: Api) -> int:
    with api.db.read() as s:
        return int(s.scalar(select(func.count()).select_from(Task)) or 0)


def create(api: Api, cid: int, qid: str, prior: Any, assessor: str = "pia") -> Any:
    body = {
        "collection_id": cid,
        "query_id": qid,
        "assessor": assessor,
        "method": "topk",
        "k": K,
        "seed": 5,
        "prior": prior,
        "options": {"strategy": "insertion"},
    }
    return api.post("admin", "/api/v1/tasks", json=body)


# --------------------------------------------------------------------------- model:<run id>


def test_a_trained_model_orders_the_documents_and_bad_runs_are_refused(api: Api, pia: str) -> None:
    from ranking.data.dataset import QueryDataset
    from ranking.estimators import RankNet

    cid, truth = machine_collection(api, "prior-model", queries=2, docs=N, features=True)
    vectors = {d: [tf / N, float(i % 3)] for i, (d, tf) in enumerate(truth["q0"].items())}
    data = QueryDataset.from_arrays(
        list(vectors.values()), [min(4, t // 4) for t in truth["q0"].values()], ["q0"] * N
    )
    model = RankNet(model="linear", epochs=30, seed=1).fit(data)
    done = training_run(api, cid, "done", model.to_dict())
    other = api.post("admin", "/api/v1/collections", json={"name": "prior-model-2"}).json()["id"]
    elsewhere = training_run(api, other, "done", model.to_dict())
    failed = training_run(api, cid, "failed", None)
    before = tasks(api)
    for prior, message in (
        (f"model:{elsewhere}", f"training run {elsewhere} belongs to collection {other}"),
        (f"model:{failed}", f"training run {failed} is not done (status failed)"),
        ("model:999999", "no training run with id 999999"),
        ("model:x", "give the id of a finished training run"),
        ("model", "give the id of a finished training run"),
    ):
        r = create(api, cid, "q1", prior)
        assert r.status_code == 422 and message in r.text, (prior, r.text)
    assert tasks(api) == before
    r = create(api, cid, "q1", f"model:{done}")
    assert r.status_code == 201, r.text
    options = r.json()["options"]
    assert options["prior"] == f"model:{done}"
    # The oracle: the model's own scores of q1's vectors, descending, equal scores by id.
    q1 = {d: [tf / N, float(i % 3)] for i, (d, tf) in enumerate(truth["q1"].items())}
    scores = np.asarray(model.predict(np.asarray(list(q1.values()))), dtype=float).reshape(-1)
    by_doc = dict(zip(q1, scores, strict=True))
    assert options["initial_order"] == sorted(q1, key=lambda d: (-by_doc[d], d))
    # The model learned tf from q0 (feature 1 is tf / N): its order agrees with q1's truth.
    from scipy.stats import kendalltau

    ranks = [-truth["q1"][d] for d in options["initial_order"]]
    tau = kendalltau(range(N), ranks).statistic
    assert tau > 0.5
    # The planner takes the same prior.
    plan = {
        "collection_id": cid,
        "assessors": ["pia"],
        "query_ids": ["q0"],
        "scheme": "balanced",
        "per_query": {"topk": 1, "graded": 0},
        "k": K,
        "prior": f"model:{done}",
        "name": "model-prior",
    }
    r = api.post("admin", "/api/v1/admin/plans/preview", json=plan)
    assert r.status_code == 200, r.text
    assert r.json()["ok"] and r.json()["prior"] == f"model:{done}", r.text
    r = api.post("admin", "/api/v1/admin/plans", json=plan)
    assert r.status_code == 201, r.text
    (task_id,) = r.json()["task_ids"]
    with api.db.read() as s:
        task = s.get(Task, task_id)
        assert task is not None and task.options["prior"] == f"model:{done}"
        q0 = {d: [tf / N, float(i % 3)] for i, (d, tf) in enumerate(truth["q0"].items())}
        q0_scores = np.asarray(model.predict(np.asarray(list(q0.values())))).reshape(-1)
        by_q0 = dict(zip(q0, q0_scores, strict=True))
        assert task.options["initial_order"] == sorted(q0, key=lambda d: (-by_q0[d], d))


# --------------------------------------------------------------------------- llm


@pytest.fixture(scope="module")
def coll(api: Api, pia: str) -> tuple[int, dict[str, dict[str, float]], dict[str, float]]:
    """A text collection: its id, the truth per query and document (a seeded permutation of
    0..N-1) and the stand-in's truth by document text."""
    return text_collection(api, f"prior-llm-{uuid.uuid4().hex[:6]}", QUERIES, N, seed=31)


@pytest.fixture(scope="module")
def server(
    api: Api,
    coll: tuple[int, dict[str, dict[str, float]], dict[str, float]],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[StandInServer]:
    """The stand-in grading ``⌊u · 5 / N⌋`` (u the truth), the service pointing at it, the key
    in the environment and the queue in a SQLite file."""
    standin_model = StandInModel(coll[2], seed=2, grade_scale=5 / N)
    with (
        pytest.MonkeyPatch.context() as mp,
        StandInServer(standin_model, api_key=KEY) as standin,
    ):
        queue = tmp_path_factory.mktemp("q") / "q.db"
        point_at_standin(mp, api, standin.base_url, KEY, str(queue), llm_retries=0)
        yield standin


def drain(api: Api) -> int:
    """Run the queue's waiting grade jobs in this process (as ``heapjudge worker`` would)."""
    huey = GRADES.huey(api.db.settings)
    ran = 0
    while (message := huey.dequeue()) is not None:
        assert message.name == GRADES_TASK
        run_grades_job(api.db, *message.args)
        ran += 1
    return ran


def grades_view(api: Api, cid: int) -> dict[str, Any]:
    r = api.get("admin", f"/api/v1/admin/collections/{cid}/llm-grades")
    assert r.status_code == 200, r.text
    return {q["query_id"]: q for q in r.json()["queries"]} | {"total": r.json()}


def expected_order(truth: dict[str, float], leave_out: frozenset[str] = frozenset()) -> list[str]:
    """The stand-in's grades of ``truth`` descending, equal grades by document id."""
    grade = {d: min(4, int(u * 5 / N)) for d, u in truth.items() if d not in leave_out}
    return sorted(grade, key=lambda d: (-grade[d], d))


def test_the_llm_prior_needs_the_grades_first_then_orders_by_them(
    api: Api,
    coll: tuple[int, dict[str, dict[str, float]], dict[str, float]],
    server: StandInServer,
) -> None:
    cid, truth, _texts = coll
    before = tasks(api)
    r = create(api, cid, "q1", "llm")
    assert r.status_code == 422, r.text
    assert f"has not graded {N} of {N} documents" in r.text
    assert f"/api/v1/admin/collections/{cid}/llm-grades" in r.text
    assert tasks(api) == before
    view = grades_view(api, cid)
    assert view["q1"]["missing"] == N and view["total"]["graded"] == 0
    assert view["total"]["template"] == "graded@v2"
    # An unknown query is named; nothing is queued.
    r = api.post(
        "admin", f"/api/v1/admin/collections/{cid}/llm-grades", json={"query_ids": ["nope"]}
    )
    assert r.status_code == 422 and "no query 'nope'" in r.text, r.text
    assert drain(api) == 0
    r = api.post("admin", f"/api/v1/admin/collections/{cid}/llm-grades", json={"query_ids": ["q1"]})
    assert r.status_code == 202 and r.json()["queued"] is True, r.text
    sent = server.requests
    assert drain(api) == 1
    assert server.requests - sent == N  # one graded prompt per document
    view = grades_view(api, cid)
    assert (view["q1"]["graded"], view["q1"]["missing"]) == (N, 0)
    assert view["q2"]["missing"] == N
    r = create(api, cid, "q1", "llm")
    assert r.status_code == 201, r.text
    options = r.json()["options"]
    assert options["prior"] == "llm"
    assert options["initial_order"] == expected_order(truth["q1"])
    # Asked again: every reply comes from the cache, no request is sent.
    sent = server.requests
    r = api.post("admin", f"/api/v1/admin/collections/{cid}/llm-grades", json={"query_ids": ["q1"]})
    assert r.status_code == 202
    assert drain(api) == 1 and server.requests == sent


def test_malformed_grades_are_left_out_and_the_cli_grades_in_its_process(
    api: Api,
    coll: tuple[int, dict[str, dict[str, float]], dict[str, float]],
    server: StandInServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cid, truth, _texts = coll
    for name in ("llm_base_url", "llm_model", "llm_retries", "llm_concurrency"):
        monkeypatch.setenv(f"HEAPJUDGE_{name.upper()}", str(getattr(api.db.settings, name)))
    server.script("malformed", times=3, value="maybe")
    url = api.settings.database_url
    out = CliRunner().invoke(
        cli, ["admin", "llm-grades", str(cid), "--query-ids", "q2", "--json", "--database-url", url]
    )
    assert out.exit_code == 0, out.output
    view = json.loads(out.stdout)
    (q2,) = view["queries"]
    assert (q2["query_id"], q2["graded"], q2["malformed"], q2["missing"]) == ("q2", N - 3, 3, 0)
    assert KEY not in out.output
    # The three documents whose reply was "maybe" have no grade: they are left out of the
    # prior (the session appends them in seeded order).
    r = create(api, cid, "q2", "llm")
    assert r.status_code == 201, r.text
    order = r.json()["options"]["initial_order"]
    assert len(order) == N - 3
    left_out = frozenset(truth["q2"]) - set(order)
    assert order == expected_order(truth["q2"], left_out)
    # --status asks nothing.
    sent = server.requests
    out = CliRunner().invoke(
        cli, ["admin", "llm-grades", str(cid), "--status", "--database-url", url]
    )
    assert out.exit_code == 0, out.output
    assert server.requests == sent
    assert "q3\t0 graded\t0 malformed\t20 missing" in out.stdout


def test_without_a_configured_llm_the_llm_prior_is_refused(api: Api, pia: str) -> None:
    cid, _truth = machine_collection(api, "prior-unconfigured", queries=1, docs=6, word="pear")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(api.db.settings, "llm_model", None)
        r = create(api, cid, "q0", "llm")
        assert r.status_code == 422 and "HEAPJUDGE_LLM_MODEL" in r.text, r.text
        r = api.get("admin", f"/api/v1/admin/collections/{cid}/llm-grades")
        assert r.status_code == 422 and "HEAPJUDGE_LLM_MODEL" in r.text, r.text
        page = web_admin(api).get(f"/admin/collections/{cid}")
        assert page.status_code == 200 and "No LLM is configured" in page.text


def web_admin(api: Api) -> Any:
    """A browser-like client of the same app, logged in as ``admin`` by the login form."""
    from fastapi.testclient import TestClient

    from tests.app.web.support import hidden_csrf

    web = TestClient(api.client.app, base_url="http://testserver")
    token = hidden_csrf(web.get("/login").text)
    form = {"username": "admin", "password": "pw-admin-secret", "csrf_token": token}
    r = web.post("/login", data={**form, "next": "/admin"}, follow_redirects=False)
    assert r.status_code == 303, r.text
    return web


def test_the_collection_page_shows_the_grades_and_its_form_queues_them(
    api: Api,
    coll: tuple[int, dict[str, dict[str, float]], dict[str, float]],
    server: StandInServer,
) -> None:
    from tests.app.web.support import hidden_csrf

    cid = coll[0]
    web = web_admin(api)
    before = grades_view(api, cid)["total"]
    page = web.get(f"/admin/collections/{cid}")
    assert page.status_code == 200
    shown = f"{before['graded']} of {3 * N} query–document pairs graded by"
    assert shown in page.text and f"{before['missing']} to grade" in page.text
    r = web.post(
        f"/admin/collections/{cid}/llm-grades",
        data={"csrf_token": "forged"},
        follow_redirects=False,
    )
    assert r.status_code == 403 and drain(api) == 0
    r = web.post(
        f"/admin/collections/{cid}/llm-grades",
        data={"csrf_token": hidden_csrf(page.text)},
        follow_redirects=False,
    )
    assert r.status_code == 303, r.text
    assert drain(api) == 1
    after = grades_view(api, cid)["total"]
    assert after["missing"] == 0 and after["graded"] + after["malformed"] == 3 * N
    page = web.get(f"/admin/collections/{cid}")
    assert f"{after['graded']} of {3 * N} query–document pairs graded by" in page.text
    assert "0 to grade" in page.text


def test_the_grade_counts_follow_a_changed_document(
    api: Api,
    coll: tuple[int, dict[str, dict[str, float]], dict[str, float]],
    server: StandInServer,
) -> None:
    """The counts keep each query's prompt keys between views (the collection page); a
    document whose content changed has a new prompt, so it is counted as not graded."""
    from app.kernel.models import Document

    cid = coll[0]
    r = api.post("admin", f"/api/v1/admin/collections/{cid}/llm-grades", json={"query_ids": ["q3"]})
    assert r.status_code == 202
    drain(api)
    before = grades_view(api, cid)["q3"]
    assert before["missing"] == 0 and grades_view(api, cid)["q3"] == before  # kept keys
    with api.db.write() as s:
        doc = s.scalars(
            select(Document).where(Document.collection_id == cid, Document.external_id == "q3-d00")
        ).one()
        doc.text = f"{doc.text} and more"
        doc.content_hash = "0" * 64
    after = grades_view(api, cid)["q3"]
    assert after["missing"] == 1 and after["documents"] == before["documents"]


def test_one_grades_job_sends_at_most_its_prompt_cap_and_queues_the_rest(
    api: Api, server: StandInServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A grades request for every query runs in slices of whole queries within
    ``llm_job_max_prompts``; each slice queues the rest again, behind what waits already."""
    cid = text_collection(api, f"capped-{uuid.uuid4().hex[:6]}", ("c1", "c2", "c3"), N, 7)[0]
    monkeypatch.setattr(api.db.settings, "llm_job_max_prompts", N + 5)
    drain(api)
    r = api.post("admin", f"/api/v1/admin/collections/{cid}/llm-grades", json={})
    assert r.status_code == 202, r.text
    huey = GRADES.huey(api.db.settings)
    sizes, slices = [], []
    while (message := huey.dequeue()) is not None:
        sent = server.requests
        out = run_grades_job(api.db, *message.args)
        sizes.append(server.requests - sent)
        slices.append(out["queued_again"])
    assert sizes == [N, N, N]  # 3 x 20 prompts, never 60 in one job
    assert slices == [["c2", "c3"], ["c3"], []]
    view = grades_view(api, cid)
    assert view["total"]["missing"] == 0 and view["total"]["graded"] == 3 * N
