"""Runs stored on a collection over REST (SQLite and Postgres): upload, list, delete; bad files
refused with their line and nothing stored; the leaderboard equal to ``heapjudge evaluate``'s
for the same files, its matrix equal to the core's, the agreement of two label sets against
scipy and ``heapjudge compare --against``; assessors get 403."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from app.cli import cli
from ranking.compare.significance import compare_systems
from ranking.evaluate import evaluate
from ranking.io.trec import write_qrels, write_run
from tests.app.admin_support import judge_task, ndjson
from tests.app.conftest import Api
from tests.app.runs.support import QUERIES, SKILLS, campaign_grades, campaign_runs


def invoke(*args: Any) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture(scope="module")
def campaign(api: Api, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("campaign")
    grades = campaign_grades()
    r = api.post("admin", "/api/v1/collections", json={"name": "runs-campaign"})
    assert r.status_code == 201, r.text
    cid = r.json()["id"]
    rows = [
        {"query_id": q, "query": f"query {q}", "doc_id": d, "text": f"text {d}", "grade": g}
        for q in QUERIES
        for d, g in grades[q].items()
    ]
    r = api.post(
        "admin",
        f"/api/v1/collections/{cid}/import",
        content=ndjson(rows),
        headers={"Content-Type": "application/x-ndjson"},
    )
    assert r.status_code == 200, r.text
    write_qrels(folder / "qrels.txt", grades)
    runs = campaign_runs(grades)
    for name, run in runs.items():
        write_run(folder / name, run, tag=name)
    api.add_user("runs-assessor")
    return {"cid": cid, "dir": folder, "grades": grades, "runs": runs}


def _upload(api: Api, cid: int, files: dict[str, bytes], **params: Any) -> Any:
    parts = [("run", (name, content, "text/plain")) for name, content in files.items()]
    return api.post("admin", f"/api/v1/admin/collections/{cid}/runs", files=parts, params=params)


def test_upload_list_and_delete(api: Api, campaign: dict[str, Any]) -> None:
    cid, folder = campaign["cid"], campaign["dir"]
    files = {name: (folder / name).read_bytes() for name in SKILLS}
    r = _upload(api, cid, files)
    assert r.status_code == 201, r.text
    uploaded = {u["run"]["name"]: u for u in r.json()["runs"]}
    assert list(uploaded) == list(SKILLS)
    assert uploaded["weak"]["documents_outside"] == 1
    assert uploaded["weak"]["run"]["queries"] == 5
    assert uploaded["strong"]["run"]["entries"] == 6 * 15
    assert uploaded["strong"]["run"]["tag"] == "strong"
    assert uploaded["strong"]["run"]["uploaded_by"] == "admin"
    listed = api.get("admin", f"/api/v1/admin/collections/{cid}/runs").json()["runs"]
    assert [x["name"] for x in listed] == list(SKILLS)
    # the same name again: 409, nothing stored
    r = _upload(api, cid, {"strong": files["strong"]})
    assert r.status_code == 409, r.text
    # an extra run, named by the field, then deleted
    r = api.post(
        "admin",
        f"/api/v1/admin/collections/{cid}/runs",
        files=[("run", ("x.txt", files["fair"], "text/plain"))],
        data={"name": "extra"},
    )
    assert r.status_code == 201, r.text
    extra = r.json()["runs"][0]["run"]
    r = api.client.delete(
        f"/api/v1/admin/collections/{cid}/runs/{extra['id']}", headers=api.auth("admin")
    )
    assert r.status_code == 200 and r.json()["deleted"]["name"] == "extra"
    listed = api.get("admin", f"/api/v1/admin/collections/{cid}/runs").json()["runs"]
    assert [x["name"] for x in listed] == list(SKILLS)


def test_stored_run_reads_back_as_the_file(api: Api, campaign: dict[str, Any]) -> None:
    from app.runs.service import run_mapping
    from ranking.io.trec import read_run

    stored = run_mapping(db=api.db, collection_id=campaign["cid"], name="strong")
    from_file = read_run(campaign["dir"] / "strong")
    assert stored == from_file
    assert [list(d) for d in stored.values()] == [list(d) for d in from_file.values()]


def test_stored_runs_as_rankings_for_pools(api: Api, campaign: dict[str, Any]) -> None:
    from app.runs.service import run_rankings
    from labeling.study.pools import parse_trec_run

    rankings = run_rankings(db=api.db, collection_id=campaign["cid"], names=["strong", "weak"])
    for name in ("strong", "weak"):
        parsed = parse_trec_run((campaign["dir"] / name).read_bytes())
        assert rankings[name] == {q: [e.doc_id for e in es] for q, es in parsed.items()}
    # ties: equal scores are ranked by doc id, descending (trec_eval)
    tie = b"q1 Q0 d03 1 0.5 t\nq1 Q0 d07 2 0.5 t\nq1 Q0 d05 3 0.9 t\n"
    r = _upload(api, campaign["cid"], {"ties": tie})
    assert r.status_code == 201, r.text
    got = run_rankings(db=api.db, collection_id=campaign["cid"], names=["ties"])
    assert got == {"ties": {"q1": ["d05", "d07", "d03"]}}
    r = api.client.delete(
        f"/api/v1/admin/collections/{campaign['cid']}/runs/{r.json()['runs'][0]['run']['id']}",
        headers=api.auth("admin"),
    )
    assert r.status_code == 200


@pytest.mark.parametrize(
    ("content", "line", "message"),
    [
        (b"q1 Q0 d00 1 0.9 t\nq1 Q0 d01 2 high t\n", 2, "not a number"),
        (b"q1 Q0 d00 1 0.9 t\nq1 Q0 d01 2\n", 2, "expected 6 columns"),
        (b"q1 Q0 d00 1 0.9 t\nq1 Q0 d02 2 0.5 t\nq1 Q0 d00 3 0.1 t\n", 3, "listed twice"),
        (
            b"q1 Q0 d00 1 0.9 t\nq1 Q0 d01 2 0.8 t\nnope Q0 d01 1 0.8 t\n",
            3,
            "not in the collection",
        ),
        (b"q1 Q0 d00 1 0.9 t\nq1 Q0 d01 2 inf t\n", 2, "not finite"),
        (b"q1 Q0 d00 one 0.9 t\n", 1, "rank"),
    ],
)
def test_bad_run_files_are_refused_with_the_line_and_nothing_stored(
    api: Api, campaign: dict[str, Any], content: bytes, line: int, message: str
) -> None:
    cid = campaign["cid"]
    before = api.get("admin", f"/api/v1/admin/collections/{cid}/runs").json()["runs"]
    good = (campaign["dir"] / "fair").read_bytes()
    # a good file and a bad one in one upload: neither is stored
    r = _upload(api, cid, {"another-good": good, "bad.txt": content})
    assert r.status_code == 422, r.text
    items = r.json()["detail"]
    assert items[0]["file"] == "bad.txt" and items[0]["line"] == line, items
    assert message in items[0]["msg"], items
    after = api.get("admin", f"/api/v1/admin/collections/{cid}/runs").json()["runs"]
    assert after == before


def test_unknown_queries_left_out_when_asked(api: Api, campaign: dict[str, Any]) -> None:
    cid = campaign["cid"]
    content = b"q1 Q0 d00 1 0.9 t\nzz Q0 d01 1 0.8 t\n"
    r = _upload(api, cid, {"partial": content}, ignore_unknown_queries="true")
    assert r.status_code == 201, r.text
    got = r.json()["runs"][0]
    assert got["unknown_queries"] == ["zz"] and got["run"]["queries"] == 1
    r = api.client.delete(
        f"/api/v1/admin/collections/{cid}/runs/{got['run']['id']}", headers=api.auth("admin")
    )
    assert r.status_code == 200


def test_leaderboard_equals_heapjudge_evaluate(api: Api, campaign: dict[str, Any]) -> None:
    cid, folder = campaign["cid"], campaign["dir"]
    for metric in ("nDCG@10", "AP", "p@5"):
        r = api.get(
            "admin",
            f"/api/v1/admin/collections/{cid}/leaderboard",
            params={"label_set": "qrels", "metric": metric, "per_query": "true"},
        )
        assert r.status_code == 200, r.text
        board = r.json()
        assert board["preset"] == "trec_eval" and "TREC run" in board["preset_reason"]
        args = ["evaluate", "--qrels", folder / "qrels.txt", "--missing", "zero", "--json"]
        for name in SKILLS:
            args += ["--run", folder / name]
        res = invoke(*args, "--metrics", metric)
        assert res.exit_code == 0, res.output
        cli_runs = {x["run"]: x["metrics"][metric] for x in json.loads(res.stdout)["runs"]}
        for row in board["runs"]:
            expected = cli_runs[row["run"]]
            assert row["mean"] == pytest.approx(expected["mean"], abs=1e-12)
            assert row["low"] == pytest.approx(expected["low"], abs=1e-12)
            assert row["high"] == pytest.approx(expected["high"], abs=1e-12)
        means = [row["mean"] for row in board["runs"]]
        assert means == sorted(means, reverse=True)
        # the matrix: the core's p-values on the per-query values (seed fixed)
        values = {n: np.array(v, dtype=float) for n, v in board["per_query"]["values"].items()}
        expected_comp = compare_systems(values, "t", "holm", 0.05, seed=0)
        got = {(p["system_a"], p["system_b"]): p for p in board["matrix"]["pairs"]}
        for pair in expected_comp.pairs:
            mine = got[(pair.system_a, pair.system_b)]
            assert mine["p_value"] == pytest.approx(pair.p_value, rel=1e-12)
            assert mine["p_adjusted"] == pytest.approx(pair.p_adjusted, rel=1e-12)
            a, b = values[pair.system_a], values[pair.system_b]
            if np.ptp(a - b) > 0:  # scipy's NaN for constant differences: docs/campaigns.md
                assert mine["p_value"] == pytest.approx(stats.ttest_rel(a, b).pvalue, rel=1e-9)


def test_matrix_under_randomization_and_bonferroni(api: Api, campaign: dict[str, Any]) -> None:
    cid = campaign["cid"]
    r = api.get(
        "admin",
        f"/api/v1/admin/collections/{cid}/leaderboard",
        params={
            "metric": "ndcg@10",
            "test": "randomization",
            "correction": "bonferroni",
            "per_query": "true",
        },
    )
    assert r.status_code == 200, r.text
    board = r.json()
    assert board["matrix"]["exact"] is True  # 6 queries: every sign vector
    values = {n: np.array(v, dtype=float) for n, v in board["per_query"]["values"].items()}
    expected = compare_systems(values, "randomization", "bonferroni", 0.05, seed=0)
    assert [p["p_adjusted"] for p in board["matrix"]["pairs"]] == pytest.approx(
        [p.p_adjusted for p in expected.pairs]
    )


def test_leaderboard_errors(api: Api, campaign: dict[str, Any]) -> None:
    cid = campaign["cid"]
    url = f"/api/v1/admin/collections/{cid}/leaderboard"
    for params, message in [
        ({"metric": "nope@3"}, "metric"),
        ({"label_set": "zzz"}, "unknown label set"),
        ({"preset": "nope"}, "preset"),
        ({"test": "z"}, "unknown test"),
        ({"metric": "kappa-ndcg@10"}, "κ"),
    ]:
        r = api.get("admin", url, params=params)
        assert r.status_code == 422, (params, r.text)
        assert message.lower() in r.text.lower(), (params, r.text)
    r = api.get("admin", "/api/v1/admin/collections/999999/leaderboard")
    assert r.status_code == 404


def test_label_sets_and_agreement(api: Api, campaign: dict[str, Any]) -> None:
    cid, grades = campaign["cid"], campaign["grades"]
    listed = api.get("admin", f"/api/v1/admin/collections/{cid}/label-sets").json()["label_sets"]
    by_key = {x["key"]: x for x in listed}
    assert by_key["qrels"]["queries"] == 6 and by_key["qrels"]["kind"] == "qrels"
    assert by_key["topk"]["available"] is False
    # two queries labelled by a human top-k task (an oracle following the grades)
    for q in ("q1", "q2"):
        body = {"collection_id": cid, "query_id": q, "assessor": "runs-assessor", "method": "topk"}
        body["k"] = 5
        r = api.post("admin", "/api/v1/tasks", json=body)
        assert r.status_code == 201, r.text
        scores = {d: g + int(d[1:]) / 100 for d, g in grades[q].items()}
        judge_task(api, "runs-assessor", r.json()["id"], scores)
    listed = api.get("admin", f"/api/v1/admin/collections/{cid}/label-sets").json()["label_sets"]
    assert {x["key"]: x["queries"] for x in listed}["topk"] == 2
    r = api.get(
        "admin",
        f"/api/v1/admin/collections/{cid}/agreement",
        params={"label_set": "qrels", "against": "topk", "metric": "ndcg@10"},
    )
    assert r.status_code == 200, r.text
    got = r.json()
    names = list(SKILLS)
    mean_a = [got["means"][n] for n in names]
    mean_b = [got["means_against"][n] for n in names]
    assert got["kendall_tau"] == pytest.approx(stats.kendalltau(mean_a, mean_b).statistic)
    assert got["preset"] == "trec_eval" and got["preset_against"] == "paper"
    # the leaderboards under each label set give the same means
    for key, means in (("qrels", got["means"]), ("topk", got["means_against"])):
        board = api.get(
            "admin",
            f"/api/v1/admin/collections/{cid}/leaderboard",
            params={"label_set": key, "metric": "ndcg@10"},
        ).json()
        assert {row["run"]: row["mean"] for row in board["runs"]} == pytest.approx(means)
    # the top-k label set scored by the core from the export
    topk = api.get(
        "admin", f"/api/v1/collections/{cid}/export", params={"format": "topk-jsonl"}
    ).text
    from ranking.io.topk import TopKTruth

    truths = [
        TopKTruth(o["query_id"], o["k"], tuple(o["top"]), tuple(o["rest"]))
        for o in map(json.loads, topk.splitlines())
    ]
    for name in names:
        report = evaluate(campaign["runs"][name], topk=truths, metrics=["ndcg@10"], missing="zero")
        assert got["means_against"][name] == pytest.approx(report.metrics["ndcg@10"])
    # heapjudge compare --against on the files gives the same three figures
    (campaign["dir"] / "topk.jsonl").write_text(topk)
    res = invoke(
        "compare",
        "--qrels",
        campaign["dir"] / "qrels.txt",
        *[x for n in names for x in ("--runs", campaign["dir"] / n)],
        "--metric",
        "ndcg@10",
        "--against",
        campaign["dir"] / "topk.jsonl",
        "--json",
    )
    assert res.exit_code == 0, res.output
    from_files = json.loads(res.stdout)["against"]
    for key in ("kendall_tau", "tau_ap", "significant_swaps", "significant_in_one_only"):
        assert got[key] == pytest.approx(from_files[key]), key
    assert got["ordering"] == from_files["ordering"]
    assert got["ordering_against"] == from_files["ordering_against"]


def test_the_human_grades_label_set(api: Api, campaign: dict[str, Any]) -> None:
    """A graded task's grades score the runs as the exported grades-qrels file does."""
    cid, grades, folder = campaign["cid"], campaign["grades"], campaign["dir"]
    body = {"collection_id": cid, "query_id": "q3", "assessor": "runs-assessor"}
    r = api.post("admin", "/api/v1/tasks", json={**body, "method": "graded"})
    assert r.status_code == 201, r.text
    # judge_task's grade is min(4, score // 2): scores twice the grades give the grades back
    judge_task(api, "runs-assessor", r.json()["id"], {d: 2.0 * g for d, g in grades["q3"].items()})
    listed = api.get("admin", f"/api/v1/admin/collections/{cid}/label-sets").json()["label_sets"]
    assert {x["key"]: x["queries"] for x in listed}["grades"] == 1
    exported = api.get(
        "admin", f"/api/v1/collections/{cid}/export", params={"format": "grades-qrels"}
    )
    assert exported.status_code == 200
    (folder / "grades-qrels.txt").write_text(exported.text)
    assert {line.split()[2]: int(line.split()[3]) for line in exported.text.splitlines()} == (
        grades["q3"]
    )
    board = api.get(
        "admin",
        f"/api/v1/admin/collections/{cid}/leaderboard",
        params={"label_set": "grades", "metric": "nDCG@10"},
    ).json()
    res = invoke(
        "evaluate",
        "--qrels",
        folder / "grades-qrels.txt",
        *[x for n in SKILLS for x in ("--run", folder / n)],
        "--metrics",
        "nDCG@10",
        "--missing",
        "zero",
        "--json",
    )
    assert res.exit_code == 0, res.output
    expected = {x["run"]: x["metrics"]["nDCG@10"]["mean"] for x in json.loads(res.stdout)["runs"]}
    # one query: means, no interval and no test (the page and the API say why)
    assert board["n_queries"] == 1 and board["matrix"] is None
    assert "at least 2 queries" in board["matrix_note"]
    assert all(row["low"] is None for row in board["runs"])
    assert {row["run"]: row["mean"] for row in board["runs"]} == pytest.approx(expected, abs=1e-12)


def test_assessors_get_403(api: Api, campaign: dict[str, Any]) -> None:
    cid = campaign["cid"]
    for path in ("runs", "label-sets", "leaderboard", "agreement?against=qrels"):
        r = api.get("runs-assessor", f"/api/v1/admin/collections/{cid}/{path}")
        assert r.status_code == 403, (path, r.text)
    r = api.post(
        "runs-assessor",
        f"/api/v1/admin/collections/{cid}/runs",
        files=[("run", ("a", b"q1 Q0 d00 1 1 t\n", "text/plain"))],
    )
    assert r.status_code == 403
    r = api.client.delete(
        f"/api/v1/admin/collections/{cid}/runs/1", headers=api.auth("runs-assessor")
    )
    assert r.status_code == 403
