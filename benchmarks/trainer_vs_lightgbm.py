"""FocusedNet vs LightGBM lambdarank on top-k MQ2008: κ-NDCG@10, κ-ERR and wall time.

Both train on the same five folds (LETOR 4.0 rotation) and the same seeded top-10 truth:
FocusedNet on T and T × F (β tuned on validation over 0, 0.1, ..., 1, epochs early-stopped),
LightGBM's ``lambdarank`` on the κ-labels (the tool a user would otherwise pick; early
stopping on validation NDCG@10, which on κ-labels is κ-NDCG@10). Test measures come from
:mod:`ranking.metrics` for both. The FocusedNet figure includes the whole β search; peak RSS
is measured before LightGBM is imported. LightGBM is a bench-only dependency
(``pip install lightgbm``); without it only FocusedNet runs.

    python benchmarks/trainer_vs_lightgbm.py [--data ../shared/data/letor4-mq2008]
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from pathlib import Path

import numpy as np

from ranking.estimators import experiments as E
from ranking.estimators import metric_values

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "letor4-mq2008"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lgb-threads", type=int, default=2)
    args = ap.parse_args()
    if not args.data.is_dir():
        print(f"skipped: {args.data} not found")
        return 0
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    t0 = time.perf_counter()
    folds = E.load_folds(args.data, "topk", k=args.k, seed=args.seed)
    t_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = E.cross_validate(
        folds, ["focusednet"], truth="topk", k=args.k, tune=("beta", "iterations"), seed=args.seed
    )
    t_fnet = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rows = [
        (
            "FocusedNet (linear, β tuned)",
            res.mean("focusednet", "kappa_ndcg@10"),
            res.mean("focusednet", "kappa_err"),
            t_fnet,
        )
    ]
    print(
        f"data load + top-k sampling: {t_load:.1f} s; FocusedNet 5 folds x 11 β: "
        f"{t_fnet:.1f} s; peak RSS {rss:.0f} MB"
    )
    print("FocusedNet chosen β per fold:", [c["beta"] for c in res.chosen["focusednet"]])
    try:
        import lightgbm as lgb
    except ImportError:
        print("lightgbm not installed (pip install lightgbm): LightGBM comparison skipped")
        lgb = None
    if lgb is not None:
        t0 = time.perf_counter()
        nd, er = [], []
        for f in folds:
            model = lgb.LGBMRanker(
                objective="lambdarank",
                n_estimators=1000,
                learning_rate=0.05,
                num_leaves=31,
                min_child_samples=20,
                random_state=args.seed,
                n_jobs=args.lgb_threads,
                verbose=-1,
            )
            model.fit(
                f.train.X,
                f.train.labels,
                group=f.train.sizes,
                eval_set=[(f.valid.X, f.valid.labels)],
                eval_group=[f.valid.sizes],
                eval_at=[10],
                callbacks=[lgb.early_stopping(50, verbose=False)],
            )
            s = model.predict(f.test.X, num_iteration=model.best_iteration_)
            nd.append(float(np.mean(metric_values("kappa_ndcg@10", f.test, s))))
            er.append(float(np.mean(metric_values("kappa_err", f.test, s))))
        t_lgb = time.perf_counter() - t0
        rows.append(
            (
                f"LightGBM {lgb.__version__} lambdarank ({args.lgb_threads} threads)",
                float(np.mean(nd)),
                float(np.mean(er)),
                t_lgb,
            )
        )
    print()
    print("| model | κ-NDCG@10 | κ-ERR | wall time s (5 folds) |")
    print("|---|---|---|---|")
    for name, a, b, t in rows:
        print(f"| {name} | {a:.4f} | {b:.4f} | {t:.1f} |")
    if len(rows) == 2:
        rel = rows[0][1] / rows[1][1] - 1
        print(
            f"\nFocusedNet vs LightGBM κ-NDCG@10: {100 * rel:+.2f}% "
            f"(target: >= -2%) -> {'met' if rel >= -0.02 else 'NOT met'}"
        )
    print(
        f"FocusedNet time target (< 60 s): {'met' if t_fnet < 60 else 'NOT met'}; "
        f"memory target (< 1 GB): {'met' if rss < 1024 else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
