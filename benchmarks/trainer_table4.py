"""Table-4-style comparison on MQ2008 (or OHSUMED): graded and top-k truth, 5-fold CV.

The paper's protocol (Niu et al. 2012 §6; docs/ranking.md#protocol): 3 folds train, 1 validates
(β, C and iterations tuned there), 1 tests; k = 10. Prints, per truth, the mean over the five
test folds with ▲/▼ for a paired t-test (p < 0.05, per test query) against the best baseline,
then checks the paper's top-k claims (FocusedNet > RankNet, ListNet; FocusedBoost > RankBoost,
AdaRank; FocusedSVM > RankSVM, SVM-MAP on κ-NDCG@10 and κ-ERR).

    python benchmarks/trainer_table4.py [--data ../shared/data/letor4-mq2008]
        [--truth both] [--models all] [--json table4.json]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

from ranking.estimators import experiments as E

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "letor4-mq2008"
MODELS = [
    "focusednet",
    "focusedsvm",
    "focusedboost",
    "topk-listmle",
    "listmle",
    "plistmle",
    "ranknet",
    "listnet",
    "ranksvm",
    "svmmap",
    "rankboost",
    "adarank",
]
CLAIMS = {
    "focusednet": ("ranknet", "listnet"),
    "focusedboost": ("rankboost", "adarank"),
    "focusedsvm": ("ranksvm", "svmmap"),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--truth", default="both", choices=["graded", "topk", "both"])
    ap.add_argument("--models", default="all")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    if not args.data.is_dir():
        print(f"skipped: {args.data} not found")
        return 0
    models = MODELS if args.models == "all" else args.models.split(",")
    truths = ["graded", "topk"] if args.truth == "both" else [args.truth]
    dump = {}
    for truth in truths:
        folds = E.load_folds(args.data, truth, k=args.k, seed=args.seed)
        total = E.n_fits(models, ("beta", "C", "iterations"), len(folds))
        done = [0]
        start = time.perf_counter()

        def tick(msg: str, done=done, total=total, start=start, truth=truth) -> None:
            done[0] += 1
            if done[0] % 10 == 0 or done[0] == total:
                print(
                    f"  [{truth}] {done[0]}/{total} fits, {time.perf_counter() - start:.0f}"
                    f" s ({msg})",
                    file=sys.stderr,
                    flush=True,
                )

        res = E.cross_validate(folds, models, truth=truth, k=args.k, seed=args.seed, progress=tick)
        print(
            f"\n### {args.data.name}, {truth} truth (k={args.k}), "
            f"{time.perf_counter() - start:.0f} s\n"
        )
        print(E.format_table(res))
        print("\nchosen per fold:")
        for m in models:
            print(
                f"  {m}: "
                + "; ".join(
                    ", ".join(
                        f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                        for k, v in c.items()
                        if k != "valid"
                    )
                    for c in res.chosen[m]
                )
            )
        if truth == "topk":
            print("\npaper's top-k claims (mean over folds; p = paired t-test, pooled queries):")
            from scipy.stats import ttest_rel

            for focused, rivals in CLAIMS.items():
                if focused not in models:
                    continue
                for rival in rivals:
                    if rival not in models:
                        continue
                    for m in ("kappa_ndcg@10", "kappa_err"):
                        a, b = res.mean(focused, m), res.mean(rival, m)
                        p = ttest_rel(res.per_query[focused][m], res.per_query[rival][m]).pvalue
                        verdict = "holds" if a > b else "does NOT hold"
                        print(
                            f"  {focused} > {rival} on {E.COLUMN_NAMES[m]}: {a:.4f} vs "
                            f"{b:.4f} ({100 * (a / b - 1):+.2f}%, p={p:.3f}) -> {verdict}"
                            + ("" if p < 0.05 else " (not significant)")
                        )
        dump[truth] = {m: {x: res.mean(m, x) for x in res.measures} for m in models}
    print(f"\npeak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    if args.json:
        args.json.write_text(json.dumps(dump, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
