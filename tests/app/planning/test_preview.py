"""The plan preview says only what is so: the pools as chosen, the constraints that apply
(each computed), and every strategy side by side with the plan's prior taken into account,
per task and for all tasks.

Oracles: each strategy's own random-order model (a fresh labeling-core session), the
simulation of :mod:`labeling.study.estimates` recomputed here, and sums by hand."""

from __future__ import annotations

import json

import pytest

from app.planning.cost import ASSUMED_MACHINE_ACCURACY
from labeling.protocol.session import open_session
from labeling.study.estimates import (
    ASSUMED_PRIOR_CORRELATION,
    assisted_judgments,
    simulated_judgments,
)
from labeling.study.simulation import GRADE_SECONDS, PAIR_SECONDS
from tests.app.admin_support import make_collection
from tests.app.conftest import Api
from tests.app.machine_support import judge_consistently, machine_collection, machine_task

N, K = 30, 10
USERS = ["pv1", "pv2", "pv3", "pv4"]
BASES = ["heap", "tournament", "insertion", "prior"]


@pytest.fixture(scope="module")
def coll(api: Api) -> int:
    for u in USERS:
        api.add_user(u)
    return make_collection(api, "preview-strategies", queries=3, docs=N)[0]


def _preview(api: Api, cid: int, **kw) -> dict:
    body = {
        "collection_id": cid,
        "assessors": USERS,
        "scheme": "balanced",
        "per_query": {"topk": 2, "graded": 1},
        "k": K,
        "name": "side",
        **kw,
    }
    r = api.post("admin", "/api/v1/admin/plans/preview", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def _random_order_model(strategy: str) -> float:
    docs = [f"d{i}" for i in range(N)]
    session = open_session("topk", docs, k=K, seed=0, options={"strategy": strategy})
    return session.progress().expected_remaining


def test_every_strategy_side_by_side_with_the_prior(api: Api, coll: int) -> None:
    out = _preview(api, coll, strategy="tournament", prior="feature:1")
    rows = {row["strategy"]: row for row in out["strategies"]}
    assert list(rows) == BASES
    assert [name for name, row in rows.items() if row["chosen"]] == ["tournament"]
    for name, row in rows.items():
        sim = simulated_judgments(name, N, K, ASSUMED_PRIOR_CORRELATION)
        assert row["judgments_per_task"] == round(sim.mean, 1)
        assert row["p95_per_task"] == round(sim.p95, 1)
        # Per task x tasks = all T1 tasks (3 queries x 2 top-k assessors); both are rounded
        # to 0.1, the per-task figure before it is multiplied by 6.
        assert row["topk_tasks"] == 6
        assert row["topk_judgments"] == pytest.approx(6 * row["judgments_per_task"], abs=0.35)
        # All tasks of the plan: the T1 tasks and 3 graded tasks of 30 grades.
        assert row["judgments"] == pytest.approx(row["topk_judgments"] + 3 * N, abs=0.1)
        graded_minutes = 3 * N * GRADE_SECONDS / 60
        assert row["minutes"] == pytest.approx(row["topk_minutes"] + graded_minutes, abs=0.1)
    # A prior makes insertion and the prior tournament cheaper than on a random order.
    for name in ("insertion", "prior"):
        assert rows[name]["judgments_per_task"] < _random_order_model(name) - 3
    # The chosen strategy's per-query cells and totals are its row's.
    chosen = rows["tournament"]
    assert {c["topk_judgments"] for c in out["cost"].values()} == {chosen["judgments_per_task"]}
    assert out["totals"]["topk_judgments"] == pytest.approx(chosen["topk_judgments"], abs=0.35)
    assert out["totals"]["topk_tasks"] == 6 and out["totals"]["graded_tasks"] == 3


def test_without_a_prior_the_rows_are_random_order_simulations(api: Api, coll: int) -> None:
    """Mean and p95 of the same simulated runs (random order), the p95 never below the mean
    (before, the mean was the strategy's model, above the p95 for prior+robust: 158.4 vs
    147 at n = 30, k = 10)."""
    out = _preview(api, coll, strategy="heap+robust")
    rows = {row["strategy"]: row for row in out["strategies"]}
    # The chosen strategy's modifiers apply to every base strategy of the comparison.
    assert list(rows) == [f"{b}+robust" for b in BASES]
    for name, row in rows.items():
        sim = simulated_judgments(name, N, K, None)
        assert row["judgments_per_task"] == round(sim.mean, 1)
        assert row["p95_per_task"] == round(sim.p95, 1)
        assert row["p95_per_task"] >= row["judgments_per_task"], name
    assert rows["heap+robust"]["chosen"]


@pytest.mark.parametrize("prior", [False, True])
def test_every_strategy_s_p95_is_at_least_its_mean(prior: bool) -> None:
    """The plan preview's per-task figures of every strategy (with and without +assist,
    without a machine), at pool sizes around k: p95 >= mean."""
    from app.planning.cost import task_cost
    from labeling.strategies.registry import strategy_names

    options = {"initial_order": ["d0"]} if prior else {}
    for name in [*strategy_names(), "prior+assist", "insertion+assist"]:
        for n, k in ((3, 2), (5, 1), (12, 10), (30, 10)):
            docs = [f"d{i}" for i in range(n)]
            cost = task_cost("topk", docs, k=k, options={"strategy": name, **options})
            assert cost.p95 is not None and cost.p95 >= cost.judgments, (name, n, k, cost)


def test_the_pool_shown_is_the_pool_chosen(api: Api, coll: int) -> None:
    out = _preview(api, coll, pool={"mode": "bm25", "n": 12})
    assert out["pool"]["source"] == "top 12 by BM25"
    assert (out["pool"]["depth"], out["pool"]["min"], out["pool"]["max"]) == (12, 12, 12)
    out = _preview(api, coll, pool={"mode": "sample", "n": 7, "seed": 2})
    assert out["pool"]["source"] == "a random sample of 7 (seed 2)"
    assert out["pool"]["mean"] == 7
    out = _preview(api, coll)
    assert out["pool"]["source"] == "all documents of each query"
    assert (out["pool"]["depth"], out["pool"]["max"]) == (None, N)


def test_only_the_constraints_that_apply_are_listed(api: Api, coll: int) -> None:
    both = _preview(api, coll)
    listed = {c["code"]: c for c in both["constraints"]}
    assert {"coverage", "both_methods", "one_tool", "balanced", "once", "pools"} <= set(listed)
    assert "prior" not in listed and "queries" not in listed
    # 4 assessors, 3 queries, 3 graded tasks: someone has no T2 task; loads 3/3/2/1.
    assert listed["both_methods"]["holds"] and listed["coverage"]["holds"]
    assert not listed["one_tool"]["holds"] and listed["one_tool"]["severity"] == "warning"
    only_topk = _preview(
        api,
        coll,
        per_query={"topk": 1, "graded": 0},
        prior="feature:1",
        query_ids=["101", "102", "103"],
    )
    codes = [c["code"] for c in only_topk["constraints"]]
    # No graded tasks: nothing about both methods or both tools is claimed.
    assert "both_methods" not in codes and "one_tool" not in codes
    assert {"prior", "queries", "coverage", "once"} <= set(codes)
    assert all(c["holds"] for c in only_topk["constraints"] if c["code"] != "balanced")
    assert only_topk["totals"].get("graded_tasks", 0) == 0
    assert all(row["judgments"] == row["topk_judgments"] for row in only_topk["strategies"])


def test_with_a_machine_the_chosen_row_shows_people_machine_and_loss(api: Api, coll: int) -> None:
    for chosen in [f"{b}+assist" for b in BASES]:
        out = _preview(api, coll, strategy=chosen, machine="bm25")
        assert out["options"]["topk"]["machine"] == {"source": "bm25", "max_loss": 0.01}
        assert out["cost_model"]["machine_accuracy"] == ASSUMED_MACHINE_ACCURACY == 0.8
        # No machine has judged in this collection: no measured calibration, a cold start.
        assert out["machine_accuracy"] == {"value": 0.8, "source": "none", "pairs": 0}
        rows = {row["strategy"]: row for row in out["strategies"]}
        assert list(rows) == [f"{b}+assist" for b in BASES]
        # Only the chosen strategy is simulated with the machine.
        assert [n for n, r in rows.items() if r["with_machine"] is not None] == [chosen]
        row = rows[chosen]
        base = chosen.split("+")[0]
        # Without the machine, a +assist strategy asks what its inner strategy asks.
        assert row["judgments_per_task"] == round(simulated_judgments(base, N, K, None).mean, 1)
        m = row["with_machine"]
        sim = assisted_judgments(chosen, N, K, 0.8)
        assert m["machine_accuracy"] == 0.8
        # Rounded to a tenth by the service from its own sum (7.85 may print as 7.9 there).
        assert m["human_judgments_per_task"] == pytest.approx(sim.human_mean, abs=0.051)
        assert m["human_p95_per_task"] == pytest.approx(sim.human_p95, abs=0.051)
        assert m["machine_answers_per_task"] == pytest.approx(sim.machine_mean, abs=0.051)
        minutes = sim.human_mean * PAIR_SECONDS / 60
        assert m["minutes_per_task"] == pytest.approx(minutes, abs=0.051)
        # The expected loss of the same simulated queries, against the stated max loss.
        assert m["expected_loss_per_task"] == pytest.approx(sim.loss_mean, abs=5e-5)
        assert m["max_loss"] == 0.01
        # The machine saves people judgments and answers some itself; in a heap it is hardly
        # ever given a question (each is between documents of the current top k, where a
        # wrong answer costs more than a fifth of max_loss), and the two figures are two
        # simulations of 60 queries each: equal within their noise.
        if base == "heap":
            assert m["human_judgments_per_task"] <= 1.05 * row["judgments_per_task"]
        else:
            assert m["human_judgments_per_task"] < row["judgments_per_task"]
            assert m["machine_answers_per_task"] > 1
            assert m["minutes_per_task"] < row["minutes_per_task"]
        # All tasks: people's T1 judgments with the machine plus the 3 x 30 grades.
        assert m["judgments"] == pytest.approx(m["topk_human_judgments"] + 3 * N, abs=0.1)
        assert m["topk_human_judgments"] == pytest.approx(6 * sim.human_mean, abs=0.1)
        # The cold start's range: from the 0.8 machine to one that earns nothing (the row's
        # own figures, without the machine).
        span = m["cold_start_range"]
        assert span["human_judgments_per_task"] == [
            m["human_judgments_per_task"],
            row["judgments_per_task"],
        ]
        assert span["minutes_per_task"] == [m["minutes_per_task"], row["minutes_per_task"]]
        assert span["machine_answers_per_task"] == [0.0, m["machine_answers_per_task"]]
        assert span["judgments"] == [m["judgments"], row["judgments"]]
        assert span["minutes"] == [m["minutes"], row["minutes"]]
    # Another accuracy is taken as given (no range); a better machine saves more.
    better = _preview(api, coll, strategy="insertion+assist", machine="bm25", machine_accuracy=0.95)
    row = {r["strategy"]: r for r in better["strategies"]}["insertion+assist"]
    assert row["with_machine"]["machine_accuracy"] == 0.95
    assert row["with_machine"]["cold_start_range"] is None
    assert better["machine_accuracy"]["source"] == "given"
    good = assisted_judgments("insertion+assist", N, K, 0.95)
    assert row["with_machine"]["human_judgments_per_task"] == pytest.approx(
        good.human_mean, abs=0.051
    )
    assert good.human_mean < assisted_judgments("insertion+assist", N, K, 0.8).human_mean
    # The stated max loss reaches the simulation: a looser one lets the machine answer more.
    loose = _preview(api, coll, strategy="tournament+assist", machine="bm25", machine_max_loss=0.2)
    m = {r["strategy"]: r for r in loose["strategies"]}["tournament+assist"]["with_machine"]
    sim = assisted_judgments("tournament+assist", N, K, 0.8, max_loss=0.2)
    assert sim.machine_mean > assisted_judgments("tournament+assist", N, K, 0.8).machine_mean
    assert sim != assisted_judgments("tournament+assist", N, K, 0.8)
    assert m["max_loss"] == 0.2
    assert m["human_judgments_per_task"] == pytest.approx(sim.human_mean, abs=0.051)
    assert m["machine_answers_per_task"] == pytest.approx(sim.machine_mean, abs=0.051)
    assert m["expected_loss_per_task"] == pytest.approx(sim.loss_mean, abs=5e-5)
    # Without a machine there is no such part.
    plain = _preview(api, coll, strategy="insertion+assist")
    assert all(r["with_machine"] is None for r in plain["strategies"])
    assert plain["machine_accuracy"] is None
    r = api.post(
        "admin",
        "/api/v1/admin/plans/preview",
        json={"collection_id": coll, "assessors": USERS, "machine": "bm25",
              "strategy": "insertion+assist", "machine_accuracy": 0.4},
    )  # fmt: skip
    assert r.status_code == 422 and "machine_accuracy" in r.text


def test_the_accuracy_is_measured_once_people_answered_the_machine_s_pairs(api: Api) -> None:
    """A BM25 machine right on every pair (tests/app/machine_support.py): after a study with
    it, the preview takes the people's agreement with its opinions, 1.0 on every answer they
    gave (the oracle: the person answers in the pairs export)."""
    api.add_user("pvm")
    cid, truth = machine_collection(api, "preview-measured", queries=4, docs=16, seed=9)
    for qid in truth:
        judge_consistently(api, "pvm", machine_task(api, cid, qid, "pvm", 5), truth[qid])
    r = api.get("admin", f"/api/v1/collections/{cid}/export", params={"format": "pairs-jsonl"})
    people = [x for x in map(json.loads, r.text.splitlines()) if x["source"] == "person"]
    assert len(people) >= 50
    body = {
        "collection_id": cid,
        "assessors": ["pv1"],
        "scheme": "balanced",
        "per_query": {"topk": 1, "graded": 0},
        "k": 5,
        "name": "measured",
        "strategy": "prior+assist",
        "machine": "bm25",
    }
    r = api.post("admin", "/api/v1/admin/plans/preview", json=body)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["machine_accuracy"] == {"value": 1.0, "source": "measured", "pairs": len(people)}
    row = {x["strategy"]: x for x in out["strategies"]}["prior+assist"]
    assert row["with_machine"]["machine_accuracy"] == 1.0
    sim = assisted_judgments("prior+assist", 16, 5, 1.0)
    assert row["with_machine"]["human_judgments_per_task"] == round(sim.human_mean, 1)
