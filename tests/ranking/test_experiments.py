"""The cross-validation protocol end to end on a tiny synthetic LETOR collection."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from app.cli import cli
from ranking.estimators import experiments as E


def _write_letor_parts(folder: Path, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    w = np.array([1.5, -1.0, 0.5, 0.0])
    qid = 1
    for part in range(1, 6):
        lines = []
        for _ in range(6):
            X = rng.random((12, 4))
            grade = np.digitize(X @ w + rng.normal(scale=0.2, size=12), [0.3, 0.8])
            for x, g in zip(X, grade, strict=True):
                feats = " ".join(f"{j + 1}:{v:.6f}" for j, v in enumerate(x))
                lines.append(f"{g} qid:{qid} {feats} #docid = D{qid}-{len(lines)}")
            qid += 1
        (folder / f"S{part}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def letor_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("letor")
    _write_letor_parts(folder)
    return folder


def test_folds_follow_the_letor4_rotation(letor_dir: Path) -> None:
    folds = E.load_folds(letor_dir, "topk", k=3)
    assert [f.name for f in folds] == [f"Fold{i}" for i in range(1, 6)]
    for f in folds:
        train_q = set(f.train.query_ids)
        assert train_q.isdisjoint(f.valid.query_ids) and train_q.isdisjoint(f.test.query_ids)
        assert f.train.n_queries == 18 and f.test.n_queries == 6
        assert f.test.topk == 3
    # Fold1 tests on S5 (queries 25..30)
    assert sorted(int(q) for q in folds[0].test.query_ids) == list(range(25, 31))
    # the same top-k truth for a part whatever fold it appears in
    s5_in_fold1 = folds[0].test
    s5_in_fold2 = folds[1].valid
    np.testing.assert_array_equal(s5_in_fold1.labels, s5_in_fold2.labels)


def test_cross_validate_tunes_beta_and_reports_significance(letor_dir: Path) -> None:
    folds = E.load_folds(letor_dir, "topk", k=3)
    res = E.cross_validate(
        folds,
        ["focusednet", "ranknet", "rankboost"],
        truth="topk",
        k=3,
        tune=("beta", "iterations"),
    )
    assert res.measures == ("kappa_ndcg@5", "kappa_ndcg@10", "kappa_err")
    for model in res.models:
        for m in res.measures:
            assert len(res.fold_means[model][m]) == 5
            assert 0.0 <= res.mean(model, m) <= 1.0
            assert res.per_query[model][m].shape == (30,)
            # each fold's mean is the mean of its 6 test queries (folds in order, 6 each)
            np.testing.assert_allclose(
                res.per_query[model][m].reshape(5, 6).mean(axis=1),
                res.fold_means[model][m],
                atol=1e-12,
            )
    assert all(c["beta"] in E.BETA_GRID for c in res.chosen["focusednet"])
    sig = E.significance(res)
    best = max(("ranknet", "rankboost"), key=lambda m: res.mean(m, "kappa_ndcg@10"))
    assert math.isnan(sig[best]["kappa_ndcg@10"][0])
    # The focusednet p-value is the paired t-test written out (t with n − 1 dof, two-sided).
    from scipy.stats import t as student_t

    diff = res.per_query["focusednet"]["kappa_ndcg@10"] - res.per_query[best]["kappa_ndcg@10"]
    t_stat = diff.mean() / (diff.std(ddof=1) / math.sqrt(diff.size))
    p_value, mark = sig["focusednet"]["kappa_ndcg@10"]
    assert p_value == pytest.approx(2 * student_t.sf(abs(t_stat), diff.size - 1), rel=1e-9)
    assert mark == ("" if p_value >= 0.05 else "▲" if diff.mean() > 0 else "▼")
    table = E.format_table(res)
    assert "κ-NDCG@10" in table and "focusednet" in table
    # the model clearly beats random on this easy linear truth
    assert res.mean("focusednet", "kappa_ndcg@10") > 0.6


def test_grid_and_fit_count() -> None:
    assert len(E.default_grid("focusednet", ["beta"])) == 11
    assert len(E.default_grid("ranksvm", ["beta", "C"])) == 7
    assert E.n_fits(["focusedsvm"], ["beta", "C"], 5) == (7 + 10) * 5
    with pytest.raises(ValueError, match="cannot tune"):
        E.default_grid("ranknet", ["gamma"])


def test_cli_cv_and_sweep_end_to_end(letor_dir: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    out_json = tmp_path / "cv.json"
    result = runner.invoke(
        cli,
        [
            "cv",
            "--data",
            str(letor_dir),
            "--truth",
            "both",
            "--k",
            "3",
            "--models",
            "focusednet,ranksvm",
            "--tune",
            "beta,iterations",
            "--output",
            str(out_json),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "NDCG@10" in result.output and "κ-NDCG@10" in result.output
    data = json.loads(out_json.read_text())
    assert set(data) == {"graded", "topk"}
    assert set(data["topk"]["mean"]) == {"focusednet", "ranksvm"}
    svg = tmp_path / "sweep.svg"
    result = runner.invoke(
        cli,
        [
            "sweep-beta",
            "--data",
            str(letor_dir),
            "--models",
            "focusednet",
            "--truth",
            "topk",
            "--k",
            "3",
            "--step",
            "0.5",
            "--output",
            str(svg),
        ],
    )
    assert result.exit_code == 0, result.output
    text = svg.read_text()
    assert text.startswith("<svg") and text.count("<circle") >= 3
    bad = runner.invoke(cli, ["cv", "--data", str(letor_dir), "--models", "nope"])
    assert bad.exit_code == 2


def test_evaluate_folds_reports_test_measures_and_a_progress_hook_can_abort() -> None:
    import numpy as np
    import pytest

    from ranking.data.dataset import QueryDataset
    from ranking.data.folds import rotation_folds
    from ranking.estimators.experiments import (
        evaluate_folds,
        folds_from_parts,
        kfold_parts,
        strict_json,
    )

    rng = np.random.default_rng(0)
    X = rng.random((60, 3))
    y = (X[:, 0] * 3).astype(int).astype(float)  # grades follow feature 0
    data = QueryDataset.from_arrays(X, y, np.repeat([f"q{i}" for i in range(6)], 10))
    parts = kfold_parts(data, 3, seed=0)
    assert sorted(q for p in parts.values() for q in p.query_ids) == sorted(data.query_ids)
    folds = folds_from_parts(parts, rotation_folds(list(parts)), truth="graded")
    out = evaluate_folds(folds, "ranknet", {"model": "mlp", "epochs": 30}, truth="graded")
    assert [o.test_queries for o in out] == [2, 2, 2]
    for o in out:  # the test measure is the model's NDCG on the fold's test part
        from ranking.estimators import metric_values

        fold = next(f for f in folds if f.name == o.name)
        s = o.model.predict(fold.test)
        assert o.test["ndcg@10"] == pytest.approx(metric_values("ndcg@10", fold.test, s).mean())

    class Stop(Exception):
        pass

    seen: list[tuple[int, int]] = []

    def hook(fold: int, folds_: int, i: int, total: int) -> None:
        seen.append((fold, i))
        if i == 3:
            raise Stop

    with pytest.raises(Stop):
        evaluate_folds(folds, "rankboost", {"n_rounds": 50}, truth="graded", progress=hook)
    assert seen == [(1, 1), (1, 2), (1, 3)]  # boosting rounds report, and the abort is at once
    assert strict_json({"a": float("nan"), "b": [np.float64(1.5), float("inf")]}) == {
        "a": None,
        "b": [1.5, None],
    }


def test_paired_test_is_scipys_ttest_rel_with_its_marks() -> None:
    from scipy.stats import ttest_rel

    rng = np.random.default_rng(4)
    ref = rng.random(40)
    better = ref + 0.05 + rng.normal(scale=0.02, size=40)
    p, mark = E.paired_test(better, ref)
    assert p == pytest.approx(float(ttest_rel(better, ref).pvalue), rel=1e-12) and mark == "▲"
    assert E.paired_test(ref, better)[1] == "▼"
    noisy = ref + rng.normal(scale=0.3, size=40)
    p, mark = E.paired_test(noisy, ref)
    assert p == pytest.approx(float(ttest_rel(noisy, ref).pvalue)) and (mark == "") == (p >= 0.05)
    assert E.paired_test(ref, ref.copy()) == (1.0, "")
    assert math.isnan(E.paired_test(np.array([0.5]), np.array([0.2]))[0])
    with pytest.raises(ValueError, match="shape"):
        E.paired_test(ref, ref[:-1])


def test_score_folds_and_refit_on_every_query(letor_dir: Path) -> None:
    from ranking.data.dataset import QueryDataset
    from ranking.estimators import RankNet, metric_values

    folds = E.load_folds(letor_dir, "graded")
    first = lambda d: d.X[:, 0]  # noqa: E731 - a fixed scorer: the first feature
    per_fold = E.score_folds(folds, first, truth="graded")
    for f, values in zip(folds, per_fold, strict=True):
        assert np.array_equal(values["ndcg@10"], metric_values("ndcg@10", f.test, f.test.X[:, 0]))
    with pytest.raises(ValueError, match="scores"):
        E.score_folds(folds, lambda d: d.X[:-1, 0], truth="graded")
    assert E.iteration_param("ranknet") == "epochs"
    assert E.iteration_param("ranksvm") == "iterations"
    assert E.iteration_param("rankboost") == "n_rounds"
    assert E.iteration_param("lightgbm") == "n_estimators"
    parts = {n: QueryDataset.read(letor_dir / f"{n}.txt") for n in ("S1", "S2", "S3", "S4", "S5")}
    kept = E.refit(parts, "ranknet", {"lr": 0.05}, truth="graded", iterations=7, seed=3)
    everything = QueryDataset.concat([parts[n] for n in sorted(parts)])
    again = RankNet(lr=0.05, epochs=7, seed=3).fit(everything)
    assert kept.best_iteration_ == 7 and kept.get_params()["epochs"] == 7
    assert np.array_equal(kept.predict(everything), again.predict(everything))
    # Top-k models learn the folds' own top-k truth (the same per-part sampling).
    fnet = E.refit(parts, "focusednet", {}, truth="topk", iterations=3, k=5, seed=1)
    topk = [parts[n].to_topk(5, seed=1 * 1000 + i) for i, n in enumerate(sorted(parts))]
    from ranking.estimators import FocusedNet

    ref = FocusedNet(k=5, epochs=3, seed=1).fit(QueryDataset.concat(topk))
    assert np.array_equal(fnet.predict(everything), ref.predict(everything))
    with pytest.raises(ValueError, match="iterations"):
        E.refit(parts, "ranknet", {}, truth="graded", iterations=0)
