"""Recorded outputs of the trec_eval 10.0 binary on seeded random inputs, so that the
byte-identity of ``heapjudge trec-eval`` is checked where the binary cannot be built (CI
installs from package registries only, and trec_eval is in none of them).

Each case is a qrels (or preference) file, a run and one command line; the record keeps the
inputs themselves (not only the seed), the binary's exit status and its standard output.
``tests/ranking/test_trec_eval_golden.py`` replays every case through the drop-in; when
``HEAPJUDGE_TREC_EVAL_BIN`` names a binary it also checks the records are still what the
binary prints. To record anew::

    python -m tests.ranking.trec_eval_golden --binary /path/to/trec_eval

The inputs are shaped to reach trec_eval's corners: tied and duplicate scores, documents
judged but not retrieved and retrieved but not judged, queries on one side only, graded and
negative relevance, scores that differ only past single precision, judgment groups."""

from __future__ import annotations

import argparse
import gzip
import json
import random
import subprocess
import tempfile
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).resolve().parent / "golden" / "trec_eval_10.json.gz"

QRELS_FLAGS = [
    ["-q"],
    ["-m", "official", "-q", "-c"],
    ["-m", "all_trec", "-q", "-c"],
    ["-m", "all_trec", "-c", "-M5", "-l2"],
    ["-m", "all_trec", "-q", "-c", "-J"],
    ["-m", "all_trec", "-q", "-N", "60", "-c"],
    ["-q", "-n", "-c", "-m", "ndcg.1=3,3=0.5", "-m", "P.2,7", "-m", "recall.3", "-m", "G"],
    ["-q", "-m", "Rndcg", "-m", "ndcg_rel", "-m", "11pt_avg.0.5,0.1", "-m", "relstring.10"],
    ["-q", "-c", "-m", "set", "-m", "utility.2,-1,0,0", "-m", "success.1,3"],
    ["-m", "all_prefs", "-q", "-R", "qrels_prefs", "-c"],
    ["-m", "qrels_jg", "-q", "-R", "qrels_jg", "-c"],
]
PREFS_FLAGS = [
    ["-q", "-m", "all_prefs", "-R", "prefs", "-c"],
    ["-q", "-M4", "-m", "all_prefs", "-R", "prefs", "-c"],
    ["-m", "prefs_simp", "-m", "prefs_pair", "-m", "prefs_avgjg", "-R", "prefs"],
]
SCORES = [0.5, 1.0, 1.0, 2.0, 3.25, -1.0, 0.0, 0.1, 0.1000000001, 7.0]


def _qrels_case(rng: random.Random, n_queries: int, n_docs: int) -> tuple[str, str, str]:
    """A qrels file, the same with several judgment groups (``-R qrels_jg``) and a run."""
    qrels, run = [], []
    qids = rng.sample(["1", "2", "10", "q", "x1", "x2", "301", "7a", "b"], n_queries)
    for i, qid in enumerate(qids):
        docs = rng.sample([f"d{j}" for j in range(n_docs * 2)], rng.randint(1, n_docs))
        judged = rng.sample([*docs, "u1", "u2", "u3"], rng.randint(1, min(len(docs) + 3, 12)))
        groups = ["0"] if rng.random() < 0.5 else ["0", "1", "2"]
        for doc in judged:
            for group in rng.sample(groups, rng.randint(1, len(groups))):
                qrels.append(f"{qid} {group} {doc} {rng.choice([0, 0, 1, 1, 2, 3, -1])}\n")
        if i == 0 or rng.random() < 0.8:
            for doc in docs:
                run.append(f"{qid} Q0 {doc} 0 {rng.choice(SCORES)} run{n_queries}\n")
    run.append("nojudged Q0 d0 0 1.0 run\n")
    grouped = _unique(qrels)
    # -R qrels takes one judgment per document: the first group's
    plain = _unique([f"{q} 0 {d} {r}\n" for q, _, d, r in (line.split() for line in grouped)])
    return "".join(plain), "".join(grouped), "".join(run)


def _unique(lines: list[str]) -> list[str]:
    """One line per (query, group, document): trec_eval stops on a duplicate judgment."""
    seen: set[tuple[str, ...]] = set()
    out = []
    for line in lines:
        fields = line.split()
        key = (fields[0], fields[1], fields[-2])
        if key not in seen:
            seen.add(key)
            out.append(line)
    return out


def _prefs_case(rng: random.Random) -> tuple[str, str]:
    """Consistent preferences per judgment group (a random order, pairs in it) and a run."""
    docs = ["a", "b", "c", "d", "e", "f", "x"]
    lines, run = [], []
    for qid in ("q1", "q2", "q3")[: rng.randint(1, 3)]:
        for group in range(rng.randint(1, 3)):
            order = rng.sample(docs, rng.randint(2, 6))
            for rank, doc in enumerate(order):
                # qid, judgment group, judgment subgroup, document, preference
                lines.append(f"{qid} g{group} 0 {doc} {len(order) - rank}\n")
        for doc in rng.sample(docs, rng.randint(2, len(docs))):
            run.append(f"{qid} Q0 {doc} 0 {rng.choice(SCORES)} prefs\n")
    return "".join(_unique(lines)), "".join(run)


def cases(seed: int = 0) -> list[dict[str, Any]]:
    """The recorded cases' inputs and command lines (without outputs)."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for i in range(12):
        plain, grouped, run = _qrels_case(rng, rng.randint(1, 6), rng.choice([4, 8, 15]))
        for flags in QRELS_FLAGS:
            judged = grouped if "qrels_jg" in flags else plain
            if "qrels_prefs" in flags:  # negative grades there: docs/trec-eval.md#quirks
                judged = "".join(ln for ln in judged.splitlines(True) if " -" not in ln)
            out.append({"name": f"qrels{i}", "flags": flags, "judged": judged, "run": run})
    for i in range(8):
        judged, run = _prefs_case(rng)
        for flags in PREFS_FLAGS:
            out.append({"name": f"prefs{i}", "flags": flags, "judged": judged, "run": run})
    return out


def run_binary(binary: str, case: dict[str, Any]) -> tuple[int, str]:
    """The binary's exit status and standard output on one case."""
    with tempfile.TemporaryDirectory() as tmp:
        judged, run = Path(tmp) / "judged", Path(tmp) / "run"
        judged.write_text(case["judged"])
        run.write_text(case["run"])
        done = subprocess.run(
            [binary, *case["flags"], str(judged), str(run)],
            capture_output=True,
            text=True,
            check=False,
        )
    return done.returncode, done.stdout


def record(binary: str) -> list[dict[str, Any]]:
    recorded = []
    for case in cases():
        status, stdout = run_binary(binary, case)
        recorded.append({**case, "status": status, "stdout": stdout})
    return recorded


def load() -> list[dict[str, Any]]:
    with gzip.open(GOLDEN, "rt", encoding="utf-8") as f:
        data: list[dict[str, Any]] = json.load(f)
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", required=True, help="a built trec_eval 10.0")
    args = parser.parse_args()
    recorded = record(args.binary)
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    with gzip.GzipFile(GOLDEN, "wb", mtime=0) as f:
        f.write(json.dumps(recorded, indent=0, sort_keys=True).encode())
    print(f"{len(recorded)} cases → {GOLDEN}")


if __name__ == "__main__":
    main()
