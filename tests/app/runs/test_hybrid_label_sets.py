"""The hybrid and human-decided top-k label sets of a study with a machine (SQLite and
Postgres): a small collection judged with a BM25 machine (``insertion+assist``), runs
uploaded, ``topk`` titled hybrid and ``topk-human`` listed by REST and the CLI, and the
agreement of ``topk`` with ``topk-human`` equal to the core's on the exported files
(``heapjudge compare --topk hybrid.jsonl --against human.jsonl``)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from scipy import stats
from typer.testing import CliRunner

from app.cli import cli
from ranking.evaluate import evaluate
from ranking.io.topk import TopKTruth
from ranking.io.trec import write_run
from tests.app.conftest import Api
from tests.app.machine_support import judge_consistently, machine_collection, machine_task

K = 5
QUERIES, DOCS = 6, 16
SKILLS = {"sharp": 2.0, "good": 0.6, "fair": 0.25, "poor": 0.08, "noise": 0.0}


def _runs(truth: dict[str, dict[str, int]]) -> dict[str, dict[str, dict[str, float]]]:
    """Runs of every document, scored by skill × tf plus noise."""
    rng = random.Random(7)
    return {
        name: {
            q: {d: round(skill * tf + rng.random() * 3, 5) for d, tf in docs.items()}
            for q, docs in truth.items()
        }
        for name, skill in SKILLS.items()
    }


@pytest.fixture(scope="module")
def study(api: Api, database_url: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("hybrid")
    api.add_user("hyb")
    cid, truth = machine_collection(api, "hybrid-runs", queries=QUERIES, docs=DOCS, seed=5)
    for qid in truth:
        judge_consistently(api, "hyb", machine_task(api, cid, qid, "hyb", K), truth[qid])
    runs = _runs(truth)
    parts = []
    for name, run in runs.items():
        write_run(folder / name, run, tag=name)
        parts.append(("run", (name, (folder / name).read_bytes(), "text/plain")))
    r = api.post("admin", f"/api/v1/admin/collections/{cid}/runs", files=parts)
    assert r.status_code in (200, 201), r.text
    exported = {}
    for labels in ("hybrid", "human"):
        r = api.get(
            "admin",
            f"/api/v1/collections/{cid}/export",
            params={"format": "topk-jsonl", "labels": labels},
        )
        assert r.status_code == 200, r.text
        (folder / f"{labels}.jsonl").write_text(r.text)
        exported[labels] = [json.loads(x) for x in r.text.splitlines()]
    return {"cid": cid, "dir": folder, "runs": runs, "exported": exported, "url": database_url}


def test_topk_is_hybrid_and_topk_human_is_listed(api: Api, study: dict[str, Any]) -> None:
    cid = study["cid"]
    listed = api.get("admin", f"/api/v1/admin/collections/{cid}/label-sets").json()["label_sets"]
    by_key = {x["key"]: x for x in listed}
    assert by_key["topk"]["title"].startswith("hybrid") and by_key["topk"]["queries"] == QUERIES
    assert by_key["topk-human"]["queries"] == QUERIES and by_key["topk-human"]["kind"] == "topk"
    # The human-decided label set leaves out what a machine answer compared.
    hybrid, human = study["exported"]["hybrid"], study["exported"]["human"]
    assert sum(r["machine_answers"] for r in hybrid) > 0
    assert sum(len(r["top"]) + len(r["rest"]) for r in human) < QUERIES * DOCS
    res = CliRunner().invoke(
        cli, ["admin", "runs", "label-sets", str(cid), "--json", "--database-url", study["url"]]
    )
    assert res.exit_code == 0, res.output
    assert [x["key"] for x in json.loads(res.stdout)] == [x["key"] for x in listed]
    assert json.loads(res.stdout)[1]["title"] == by_key["topk"]["title"]


def _truths(records: list[dict[str, Any]]) -> list[TopKTruth]:
    return [TopKTruth(o["query_id"], o["k"], tuple(o["top"]), tuple(o["rest"])) for o in records]


@pytest.mark.parametrize("metric", ["ndcg@10", "kappa-ndcg@5"])
def test_agreement_of_hybrid_and_human_equals_the_core_on_the_exports(
    api: Api, study: dict[str, Any], metric: str
) -> None:
    cid, folder = study["cid"], Path(study["dir"])
    r = api.get(
        "admin",
        f"/api/v1/admin/collections/{cid}/agreement",
        params={"label_set": "topk", "against": "topk-human", "metric": metric},
    )
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["label_set"]["title"].startswith("hybrid")
    assert got["against"]["key"] == "topk-human"
    names = list(SKILLS)
    # Each label set's means are the core's on its exported file.
    for key, labels in (("means", "hybrid"), ("means_against", "human")):
        truths = _truths(study["exported"][labels])
        for name in names:
            report = evaluate(study["runs"][name], topk=truths, metrics=[metric], missing="zero")
            assert got[key][name] == pytest.approx(report.metrics[metric]), (labels, name)
    mean_a = [got["means"][n] for n in names]
    mean_b = [got["means_against"][n] for n in names]
    assert got["kendall_tau"] == pytest.approx(stats.kendalltau(mean_a, mean_b).statistic)
    # heapjudge compare on the exported files gives the same figures.
    res = CliRunner().invoke(
        cli,
        [
            "compare",
            "--topk",
            str(folder / "hybrid.jsonl"),
            *[x for n in names for x in ("--runs", str(folder / n))],
            "--metric",
            metric,
            "--against",
            str(folder / "human.jsonl"),
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    from_files = json.loads(res.stdout)["against"]
    for key in ("kendall_tau", "tau_ap", "significant_swaps", "significant_in_one_only"):
        assert got[key] == pytest.approx(from_files[key]), key
    assert got["ordering"] == from_files["ordering"]
    assert got["ordering_against"] == from_files["ordering_against"]
    # The runs' skills order them under both label sets (the machine was right here).
    assert got["ordering"][0] == "sharp" and got["ordering"][-1] in ("poor", "noise")
