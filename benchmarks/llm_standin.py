"""The LLM judge's path against the stand-in server (tests/app/machine/llm_standin.py), printed:
requests, tokens and time of a first run, the second run's requests (the cache), the position
bias before and after combining both orders, the combined judge's calibration report against
the stand-in's truth, and drive() with ``insertion+assist`` over HTTP against the same judge in
process (docs/machine-judges.md#the-llm-client). A stand-in, not a model: the numbers describe
the client and the combination, not how well a real model judges.

    python benchmarks/llm_standin.py [--pairs 1000] [--bias 0.7] [--error 0.1]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

import migrations
from app.cli.calibration import format_report
from app.kernel.db import Database
from app.kernel.models import Collection
from app.kernel.settings import Settings
from app.machine.llm import LlmClient
from app.machine.repository import Study
from labeling.machine.calibration_report import CalibrationRecord, report_from_records
from labeling.machine.judges import JudgeQuery, LlmJudge
from labeling.machine.llm_prompts import PAIRWISE_V2, parse_pairwise
from labeling.machine.opinion import JudgeOpinion
from labeling.strategies.registry import resolve_strategy
from labeling.study.simulation import Assessor, drive
from tests.app.machine.llm_standin import StandInModel, StandInServer

QUERY = JudgeQuery("q1", "heat transfer")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--docs", type=int, default=60)
    ap.add_argument("--bias", type=float, default=0.7)
    ap.add_argument("--error", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    docs = [f"d{i:03d}" for i in range(args.docs)]
    texts = {d: f"Passage {d} on the heat transfer of body {i % 7}." for i, d in enumerate(docs)}
    rng = random.Random(args.seed)
    utility = {
        texts[d]: float(u)
        for d, u in zip(docs, rng.sample(range(len(docs)), len(docs)), strict=True)
    }
    model = StandInModel(utility, bias=args.bias, error=args.error, seed=args.seed)
    pairs = [tuple(rng.sample(docs, 2)) for _ in range(args.pairs)]
    with tempfile.TemporaryDirectory() as tmp, StandInServer(model) as server:
        url = f"sqlite:///{tmp}/llm.db"
        migrations.upgrade(url)
        settings = Settings(
            database_url=url, dev=True, llm_base_url=server.base_url, llm_model="standin"
        )
        db = Database(settings)
        with db.write() as s:
            row = Collection(name="bench")
            s.add(row)
            s.flush()
            cid = row.id
        client = LlmClient(db, Study(cid, None), settings=settings)
        judge = LlmJudge(client.ask, texts, model=client.model)
        started = time.perf_counter()
        p = judge.prefer(QUERY, pairs)
        first_s = time.perf_counter() - started
        sent = server.requests
        usage = client.usage().counts
        print(f"first run: {args.pairs} pairs, {sent} requests, {usage.tokens} tokens, ", end="")
        print(f"{first_s:.2f} s")
        started = time.perf_counter()
        judge.prefer(QUERY, pairs)
        again_s = time.perf_counter() - started
        print(f"second run: {server.requests - sent} requests, {again_s:.2f} s (cache)")
        single = client.ask([PAIRWISE_V2.render(QUERY.text, texts[a], texts[b]) for a, b in pairs])
        first = np.mean([parse_pairwise(r) == "A" for r in single])
        decided = p != 0.5
        expected = args.bias + (1 - args.bias) / 2
        print(
            f"position: one order names the first shown {first:.3f} of the time "
            f"(stand-in: {expected:.2f}); combined, {decided.sum()} decided answers favour "
            f"the first listed {np.mean(p[decided] > 0.5):.3f}"
        )
        records = [
            CalibrationRecord(
                answer="left" if utility[texts[a]] > utility[texts[b]] else "right",
                calibrated=float(pi),
            )
            for (a, b), pi in zip(pairs, p, strict=True)
        ]
        print("calibration of the raw combined answers against the truth (as people):")
        print(format_report(report_from_records(records, n_bins=5).to_dict()))
        person = Assessor({d: utility[texts[d]] for d in docs}, seed=0)
        order = random.Random(args.seed + 1).sample(docs, len(docs))
        cls = resolve_strategy("insertion+assist")
        http = drive(cls, order, 10, person, machine=JudgeOpinion(judge, QUERY), seed=1)
        local = drive(
            cls,
            order,
            10,
            person,
            machine=JudgeOpinion(LlmJudge(model.ask, texts, model="standin"), QUERY),
            seed=1,
        )
        print(
            f"insertion+assist, top-10 of {len(docs)}: {http[2]} human judgments, "
            f"{http[3]} machine answers; same top-k and counts as in process: "
            f"{http[:4] == local[:4]}"
        )
        client.close()
        db.dispose()


if __name__ == "__main__":
    main()
