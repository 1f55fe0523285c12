"""Tasks made by every path store their spec's options, spelt out: the stored JSON parses to
the spec asked for and the spec writes back exactly what was stored; only app.tasks makes task
rows (docs/architecture.md#the-task-spec)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from sqlalchemy import select

from app.kernel.models import Task
from labeling.protocol.spec import (
    Bm25Source,
    MachineSpec,
    Routing,
    format_options,
    parse_spec,
)
from labeling.strategies.registry import Strategy
from tests.app.admin_support import make_collection
from tests.app.conftest import Api

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def coll(api: Api) -> int:
    for name in ("ana", "ben", "cy"):
        api.add_user(name)
    cid, _ = make_collection(api, "specs", queries=3, docs=6, features=False)
    return cid


def stored(api: Api, task_id: int) -> Task:
    with api.db.read() as s:
        task = s.get(Task, task_id)
        assert task is not None
        s.expunge(task)
        return task


def test_rest_tasks_store_the_spec_they_asked_for(api: Api, coll: int) -> None:
    requests = [
        ("topk", {}, None),
        ("graded", {}, None),
        ("topk", {"strategy": "tournament+robust", "second_assessor": "ben"}, None),
        ("topk", {"strategy": "insertion+assist", "machine": "bm25", "allow_ties": True}, None),
        ("topk", {"strategy": "prior"}, "bm25"),
        ("topk", {"initial_order": ["d5", "d4", "d3", "d2", "d1", "d0"]}, None),
    ]
    for method, options, prior in requests:
        body = {"collection_id": coll, "query_id": "101", "assessor": "ana", "method": method}
        body |= {"k": 3, "seed": 7, "options": options}
        if prior:
            body["prior"] = prior
        r = api.post("admin", "/api/v1/tasks", json=body)
        assert r.status_code == 201, r.text
        task = stored(api, r.json()["id"])
        spec = parse_spec(task.method, task.options, k=task.k, seed=task.seed)
        assert format_options(spec) == task.options  # every option spelt out, nothing else
        assert r.json()["options"] == task.options  # the REST view shows the stored JSON
        assert (spec.method, spec.k, spec.seed) == (method, 3, 7)
        if "second_assessor" in options:
            assert spec.strategy == Strategy("tournament", ("robust",))
            assert spec.routing == Routing(("ben",), 600)
        if "machine" in options:
            assert spec.machine is not None and spec.machine.source == Bm25Source()
            assert spec.machine.judge and spec.machine.max_loss == 0.01
        if prior:
            assert spec.prior == "bm25" and spec.initial_order is not None
        if "initial_order" in options:
            assert spec.prior == "explicit"
            assert spec.initial_order == ("d5", "d4", "d3", "d2", "d1", "d0")


def test_a_plans_tasks_store_their_spec_with_routing_and_machine(api: Api, coll: int) -> None:
    body = {
        "collection_id": coll,
        "assessors": ["ana", "ben", "cy"],
        "query_ids": ["102", "103"],
        "scheme": "balanced",
        "per_query": {"topk": 2, "graded": 1},
        "k": 2,
        "name": "specs-plan",
        "strategy": "tournament+assist+robust",
        "machine": "bm25",
        "prior": "bm25",
    }
    r = api.post("admin", "/api/v1/admin/plans", json=body)
    assert r.status_code == 201, r.text
    ids = r.json()["task_ids"]
    topk = 0
    for task_id in ids:
        task = stored(api, task_id)
        spec = parse_spec(task.method, task.options, k=task.k, seed=task.seed)
        assert format_options(spec) == task.options
        if spec.method == "topk":
            topk += 1
            assert spec.strategy == Strategy("tournament", ("assist", "robust"))
            assert spec.machine == MachineSpec(Bm25Source(), spec.machine.judge)
            assert spec.routing.second_assessor is not None  # the query's other topk assessor
            assert len(spec.routing.second_assessor) == 1
            assert spec.prior == "bm25" and spec.initial_order is not None
    assert topk == 4


def test_the_demo_tasks_parse(api: Api) -> None:
    from app.demo import ensure_demo

    ensure_demo(db=api.db)
    with api.db.read() as s:
        rows = list(s.scalars(select(Task)))
    assert rows
    for task in rows:
        spec = parse_spec(task.method, task.options, k=task.k, seed=task.seed)
        assert format_options(spec) == task.options


def test_only_app_tasks_makes_task_rows() -> None:
    """``Task(...)`` is constructed in app/tasks/service.py only (new_task)."""
    makers = []
    for path in sorted((ROOT / "app").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "Task"
            ):
                makers.append(str(path.relative_to(ROOT)))
    assert makers == ["app/tasks/service.py"]
