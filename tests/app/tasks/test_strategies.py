"""Judging strategies and priors through the service: REST task creation, the judging loop,
results, exports, the agreement analysis, simulate-study and the planner's cost preview.

Oracles: a consistent simulated assessor's true top k (``labeling.study.simulation.Assessor``), the
prior orders recomputed here from the imported feature values and the run text, and the
expected counts from a fresh labeling-core session of the same strategy.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from sqlalchemy import func, select

from app.kernel.models import Collection, Task
from labeling.protocol.session import open_session
from labeling.protocol.spec import validate_options
from labeling.protocol.types import PairAnswer, PairQuestion
from labeling.strategies.registry import strategy_names
from labeling.study.estimates import ASSUMED_PRIOR_CORRELATION, simulated_judgments
from labeling.study.simulation import GRADE_SECONDS, PAIR_SECONDS, Assessor
from tests.app.admin_support import make_collection, ndjson
from tests.app.conftest import Api

N, K = 12, 4


@pytest.fixture(scope="module")
def coll(api: Api) -> tuple[int, dict[str, dict[str, float]]]:
    """Three queries of 12 documents with features ``[score/12, d, q]`` (feature 1 is the
    truth, feature 2 the document number), and two assessors."""
    api.add_user("ann")
    api.add_user("bob")
    return make_collection(api, "strategies", queries=3, docs=N)


def task_count(api: Api) -> int:
    with api.db.read() as s:
        return int(s.scalar(select(func.count()).select_from(Task)) or 0)


def create(api: Api, **body: Any) -> Any:
    return api.post("admin", "/api/v1/tasks", json={"method": "topk", "k": K, **body})


def judge(
    api: Api, user: str, task_id: int, oracle: Assessor, *, seen: list[Any] | None = None
) -> tuple[dict[str, Any], int]:
    """Answer the task over REST with ``oracle`` until done; every question's progress must
    be sane. Returns the final body and the number of judgments."""
    body = api.get(user, f"/api/v1/tasks/{task_id}/next").json()
    count = 0
    while not body["done"]:
        progress = body["progress"]
        assert progress["judgments"] == count
        assert 1 <= progress["estimated_remaining"] <= progress["max_remaining"]
        left, right = body["pair"]["left"]["doc_id"], body["pair"]["right"]["doc_id"]
        if seen is not None:
            seen.append((left, right))
        answer = oracle.answer_pair(PairQuestion(body["seq"], left, right))
        payload = {"seq": body["seq"], "left": left, "right": right, "outcome": answer.outcome}
        r = api.post(user, f"/api/v1/tasks/{task_id}/judgments", json=payload)
        assert r.status_code == 200, r.text
        body = r.json()
        count += 1
        assert count < 1000
    return body, count


@pytest.mark.parametrize(
    ("strategy", "prior"),
    [("tournament", None), ("insertion", "feature:1"), ("heap+robust", "bm25")],
)
def test_strategy_task_over_rest_equals_the_oracle(
    api: Api, coll: tuple[int, dict[str, dict[str, float]]], strategy: str, prior: str | None
) -> None:
    cid, scores = coll
    qid = "101"
    body: dict[str, Any] = {
        "collection_id": cid,
        "query_id": qid,
        "assessor": "ann",
        "seed": 7,
        "options": {"strategy": strategy},
    }
    if prior is not None:
        body["prior"] = prior
    r = create(api, **body)
    assert r.status_code == 201, r.text
    task = r.json()
    options = task["options"]
    assert options["strategy"] == strategy
    assert options["prior"] == (prior or "none")
    if prior == "feature:1":
        # Feature 1 is score/12: descending, equal values by id (none here).
        assert options["initial_order"] == sorted(scores[qid], key=lambda d: -scores[qid][d])
    elif prior == "bm25":
        from app.retrieval.service import bm25_order

        expected = bm25_order(db=api.db, collection_id=cid, query_id=qid)
        assert options["initial_order"] == expected
    else:
        assert options["initial_order"] is None
    oracle = Assessor(scores[qid], seed=1)
    seen: list[Any] = []
    final, count = judge(api, "ann", task["id"], oracle, seen=seen)
    assert final["done"] and final["progress"]["judgments"] == count
    result = api.get("ann", f"/api/v1/tasks/{task['id']}/result").json()
    assert result["top"] == oracle.true_topk(K)
    assert result["judgments"] == count
    # The same config replayed by the labeling core asks the same questions.
    direct = open_session("topk", list(scores[qid]), k=K, seed=7, options=options, answers=())
    for left, right in seen:
        assert direct.pending == PairQuestion(len(direct.answers), left, right)
        direct.submit(oracle.answer_pair(direct.pending))  # type: ignore[arg-type]
    assert direct.done
    if strategy == "insertion":
        # Insertion starts from the prior's two best documents (the left side stays seeded).
        assert set(seen[0]) == set(options["initial_order"][:2])
    # Exports work unchanged for every strategy: the task's κ-labels.
    r = api.get("admin", f"/api/v1/collections/{cid}/export?format=topk-jsonl&assessor=ann")
    assert r.status_code == 200, r.text
    lines = [line for line in r.text.splitlines() if f'"task_id": {task["id"]}' in line]
    assert len(lines) == 1 and oracle.true_topk(K)[0] in lines[0]
    # Progress of the collection counts the finished task.
    prog = api.get("admin", f"/api/v1/admin/collections/{cid}/progress")
    assert prog.status_code == 200, prog.text
    # Cancel the task so the next parametrisation can judge the same query again.
    with api.db.write() as s:
        s.get(Task, task["id"]).status = "cancelled"


def test_prior_validation_is_a_clear_422_and_creates_nothing(
    api: Api, coll: tuple[int, dict[str, dict[str, float]]]
) -> None:
    cid, _scores = coll
    base = {"collection_id": cid, "query_id": "102", "assessor": "bob"}
    before = task_count(api)
    cases = [
        ({"prior": "bm26"}, "unknown prior 'bm26'"),
        ({"prior": "feature:0"}, "LETOR feature number"),
        ({"prior": "feature:9"}, "has only 3 features"),
        ({"prior": {"source": "run"}}, "needs the TREC run"),
        ({"prior": {"source": "run", "run": "999 Q0 d1 1 2.0 sys\n"}}, "has no line for"),
        ({"prior": {"source": "run", "run": "102 Q0 d1 one 2.0 sys\n"}}, "not an integer"),
        ({"prior": {"source": "bm25", "run": "102 Q0 d1 1 2.0 sys\n"}}, "use prior 'run'"),
        ({"prior": "explicit"}, "give the order itself"),
        ({"prior": "bm25", "options": {"initial_order": ["d1"]}}, "not both"),
        ({"options": {"prior": "bm25"}}, "recorded by the service"),
        ({"options": {"strategy": "bubble"}}, "tournament+robust"),
        ({"method": "graded", "k": 1, "prior": "bm25"}, "topk task"),
    ]
    for extra, needle in cases:
        r = create(api, **{**base, **extra})
        assert r.status_code == 422, (extra, r.text)
        assert needle in r.text, (extra, r.text)
    assert task_count(api) == before


def test_run_prior_and_explicit_order_are_recorded(
    api: Api, coll: tuple[int, dict[str, dict[str, float]]]
) -> None:
    cid, _scores = coll
    # d7 ranks first by score; d99 is not in the pool (dropped); query 101's line is ignored.
    run = "102 Q0 d3 1 0.5 mysys\n102 Q0 d7 2 0.9 mysys\n102 Q0 d99 3 0.7 mysys\n101 Q0 d1 1 1 x\n"
    base = {"collection_id": cid, "query_id": "102", "options": {"strategy": "insertion"}}
    r = create(api, **base, assessor="bob", prior={"source": "run", "run": run})
    assert r.status_code == 201, r.text
    assert r.json()["options"]["prior"] == "run:mysys"
    assert r.json()["options"]["initial_order"] == ["d7", "d3"]
    order = [f"d{i}" for i in (5, 1, 0)]
    body = {**base, "options": {"strategy": "tournament", "initial_order": order}}
    r = create(api, **body, assessor="ann")
    assert r.status_code == 201, r.text
    assert r.json()["options"]["prior"] == "explicit"
    assert r.json()["options"]["initial_order"] == order
    for tid in (r.json()["id"],):
        with api.db.write() as s:
            s.get(Task, tid).status = "cancelled"


def test_robust_repeats_count_as_reasks_in_the_analysis(api: Api) -> None:
    """Two assessors judge one query with heap+robust and a noisy oracle: the analysis counts
    the strategy's deliberate repeats as re-asks (self-consistency) and keeps each assessor's
    first answer for direct agreement; nothing breaks."""
    api.add_user("cy")
    api.add_user("di")
    rng = random.Random(3)
    scores = {f"r{i:02d}": rng.random() for i in range(16)}
    rows = [
        {"query_id": "Q1", "query": "noisy", "doc_id": d, "title": d, "text": "t"} for d in scores
    ]
    r = api.post("admin", "/api/v1/collections", json={"name": "robust-analysis"})
    cid = r.json()["id"]
    r = api.post(
        "admin",
        f"/api/v1/collections/{cid}/import",
        content=ndjson(rows),
        headers={"Content-Type": "application/x-ndjson"},
    )
    assert r.status_code == 200, r.text
    repeats = 0
    first: dict[str, dict[tuple[str, str], str]] = {}
    for who, seed in (("cy", 11), ("di", 12)):
        r = create(
            api,
            collection_id=cid,
            query_id="Q1",
            assessor=who,
            seed=seed,
            options={"strategy": "heap+robust"},
        )
        assert r.status_code == 201, r.text
        tid = r.json()["id"]
        oracle = Assessor(scores, seed=seed, flip=0.2)
        log: list[PairAnswer] = []
        body = api.get(who, f"/api/v1/tasks/{tid}/next").json()
        while not body["done"]:
            left, right = body["pair"]["left"]["doc_id"], body["pair"]["right"]["doc_id"]
            answer = oracle.answer_pair(PairQuestion(body["seq"], left, right))
            log.append(answer)
            payload = {"seq": body["seq"], "left": left, "right": right, "outcome": answer.outcome}
            body = api.post(who, f"/api/v1/tasks/{tid}/judgments", json=payload).json()
        session = open_session(
            "topk", list(scores), k=K, seed=seed, options={"strategy": "heap+robust"}, answers=log
        )
        repeats += len(session.repeats)
        # Oracle of "first answer per pair": the log scanned independently of the analysis.
        mine: dict[tuple[str, str], str] = {}
        for a in log:
            key = (min(a.left, a.right), max(a.left, a.right))
            winner = a.left if a.outcome == "left" else a.right
            mine.setdefault(key, winner)
        first[who] = mine
        assert len(log) - len(session.repeats) == len({*mine})  # each pair once + repeats
    assert repeats > 0, "flip noise 0.2 on 16 documents must make the robust strategy repeat"
    report = api.get("admin", f"/api/v1/collections/{cid}/analysis").json()
    assert report["judgments"]["reasks"] == repeats
    assert sum(row["reask_repeats"] for row in report["self_consistency"]) == repeats
    # Direct agreement over the pairs both compared, from the first answers.
    both = set(first["cy"]) & set(first["di"])
    agree = sum(first["cy"][p] == first["di"][p] for p in both)
    pooled = report["agreement"]["topk"]["pooled"]
    assert pooled["instances"] == len(both)
    assert pooled["agreed"] == agree


def test_simulate_study_runs_any_strategy(tmp_path: Any) -> None:
    import migrations
    from app.analysis.service import collection_analysis
    from app.analysis.study import StudyConfig, run_simulated_study
    from app.kernel.db import Database
    from app.kernel.errors import DomainError
    from labeling.errors import LabelingError

    url = f"sqlite:///{tmp_path / 'study.db'}"
    migrations.upgrade(url)
    db = Database.from_url(url)
    try:
        with pytest.raises((DomainError, LabelingError), match="tournament\\+robust"):
            run_simulated_study(db=db, config=StudyConfig(strategy="bubble"))
        with db.read() as s:  # refused before anything was written
            assert s.scalar(select(func.count()).select_from(Collection)) == 0
        config = StudyConfig(assessors=4, queries=4, docs=10, k=3, strategy="tournament")
        summary = run_simulated_study(db=db, config=config)
        with db.read() as s:
            tasks = list(s.scalars(select(Task)))
        topk = [t for t in tasks if t.method == "topk"]
        assert len(topk) == 8 and all(t.options["strategy"] == "tournament" for t in topk)
        assert all(t.status == "done" for t in tasks)
        report = collection_analysis(summary.collection_id, db=db)
        assert report["tasks"]["topk"] == {"tasks": 8, "finished": 8}
        assert report["judgments"]["live"] == summary.judgments
    finally:
        db.dispose()


def test_plan_preview_shows_each_strategys_expected_cost(
    api: Api, coll: tuple[int, dict[str, dict[str, float]]]
) -> None:
    cid, scores = coll
    for who in ("p1", "p2", "p3", "p4"):
        api.add_user(who)
    plan = {
        "collection_id": cid,
        "assessors": ["p1", "p2", "p3", "p4"],
        "scheme": "balanced",
        "per_query": {"topk": 1, "graded": 1},
        "k": K,
        "name": "costs",
    }
    r = api.post("admin", "/api/v1/admin/plans/preview", json={**plan, "strategy": "bubble"})
    assert r.status_code == 422 and ", ".join(strategy_names()) in r.text, r.text
    totals = {}
    for strategy in strategy_names():
        r = api.post(
            "admin",
            "/api/v1/admin/plans/preview",
            json={**plan, "strategy": strategy, "prior": "feature:1"},
        )
        assert r.status_code == 200, r.text
        out = r.json()
        assert out["ok"] and out["strategy"] == strategy and out["prior"] == "feature:1"
        # With a prior, the expected count is simulated on a prior of the assumed correlation
        # (not the strategy's random-order model; docs/strategies-in-practice.md#planning).
        cache = validate_options("topk", {})["pair_cache"]
        expected = simulated_judgments(strategy, N, K, ASSUMED_PRIOR_CORRELATION, cache=cache).mean
        for q in ("101", "102", "103"):
            cost = out["cost"][q]
            # The preview rounds to one decimal (Python's round: 24.25 -> 24.2).
            assert cost["topk_judgments"] == round(expected, 1)
            assert cost["topk_minutes"] == round(expected * PAIR_SECONDS / 60, 1)
            assert cost["graded_judgments"] == N
            assert cost["graded_minutes"] == pytest.approx(N * GRADE_SECONDS / 60, abs=0.05)
        # balanced, one task per method and query: the totals sum three of each.
        assert out["totals"]["topk_judgments"] == pytest.approx(3 * expected, abs=0.2)
        assert out["totals"]["graded_judgments"] == 3 * N
        totals[strategy] = out["totals"]["topk_judgments"]
    # The models differ, so the preview can tell the strategies apart.
    assert len(set(totals.values())) > 1
    r = api.post(
        "admin",
        "/api/v1/admin/plans",
        json={**plan, "strategy": "tournament", "prior": "feature:1"},
    )
    assert r.status_code == 201, r.text
    from app.kernel.models import Query

    with api.db.read() as s:
        created = [s.get(Task, tid) for tid in r.json()["task_ids"]]
        topk = {s.get(Query, t.query_id).external_id: t for t in created if t.method == "topk"}
        graded = [t for t in created if t.method == "graded"]
    assert sorted(topk) == ["101", "102", "103"]
    for qid, t in topk.items():
        assert t.options["strategy"] == "tournament" and t.options["prior"] == "feature:1"
        assert t.options["initial_order"] == sorted(scores[qid], key=lambda d: -scores[qid][d])
    assert graded and all("prior" not in t.options for t in graded)
    # A prior that cannot rank a query is a violation of the preview, not a 500.
    r = api.post("admin", "/api/v1/admin/plans/preview", json={**plan, "prior": "feature:7"})
    assert r.status_code == 200, r.text
    errors = [v for v in r.json()["violations"] if v["code"] == "prior"]
    assert len(errors) == 3 and "has only 3 features" in errors[0]["message"]
    assert not r.json()["ok"]


def test_plan_cli_and_form_take_strategy_and_prior(
    api: Api, coll: tuple[int, dict[str, dict[str, float]]]
) -> None:
    """``heapjudge admin plan --strategy --prior`` prints the cost table; the plan form's
    preview page shows it too; unknown strategies are refused with the valid names."""
    from fastapi.testclient import TestClient
    from typer.testing import CliRunner

    from app.cli import cli
    from tests.app.web.support import hidden_csrf

    cid, _scores = coll
    for who in ("f1", "f2", "f3"):
        if who not in api.tokens:
            api.add_user(who)
    # With a prior the preview simulates (docs/strategies-in-practice.md#planning).
    expected = simulated_judgments("insertion", N, K, ASSUMED_PRIOR_CORRELATION).mean
    runner = CliRunner()
    base = ["admin", "plan", str(cid), "--assessors", "f1,f2,f3", "--shifts", "0", "--k", str(K)]
    url = ["--database-url", api.settings.database_url]
    out = runner.invoke(cli, [*base, "--strategy", "insertion", "--prior", "feature:1", *url])
    assert out.exit_code == 0, out.output
    assert "expected cost per task (strategy insertion, prior feature:1" in out.output
    table = out.output.split("expected cost", 1)[1].splitlines()
    row = next(line.split() for line in table if line.split()[:1] == ["101"])
    assert float(row[1]) == pytest.approx(expected, abs=0.05)
    assert float(row[2]) == pytest.approx(expected * PAIR_SECONDS / 60, abs=0.05)
    bad = runner.invoke(cli, [*base, "--strategy", "bubble", *url])
    assert bad.exit_code != 0 and "tournament+robust" in bad.output

    with TestClient(api.client.app, base_url="http://testserver") as web:
        token = hidden_csrf(web.get("/login").text)
        r = web.post(
            "/login",
            data={"username": "admin", "password": "pw-admin-secret", "csrf_token": token},
            follow_redirects=False,
        )
        assert r.status_code == 303, r.text
        page = web.get(f"/admin/collections/{cid}")
        assert 'name="strategy"' in page.text and "tournament+robust" in page.text
        form = {
            "csrf_token": hidden_csrf(page.text),
            "assessors": ["f1", "f2", "f3"],
            "scheme": "rotation",
            "shifts": "0",
            "k": str(K),
            "strategy": "insertion",
            "prior": "feature",
            "prior_feature": "1",
            "pool_mode": "all",
            "name": "formcost",
        }
        r = web.post(f"/admin/collections/{cid}/plan", data=form)
        assert r.status_code == 200, r.text
        assert "T1 strategy <strong>insertion</strong>, prior <strong>feature:1</strong>" in r.text
        assert f">{round(expected, 1)}</td>" in r.text
        r = web.post(f"/admin/collections/{cid}/plan", data={**form, "strategy": "bubble"})
        assert "The plan was not created" in r.text and "tournament+robust" in r.text
