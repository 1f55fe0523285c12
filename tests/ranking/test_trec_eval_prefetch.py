"""The join an entry point starts before numpy is imported (:mod:`ranking.trec_eval.prefetch`,
docs/trec-eval.md#speed): its result is the join's own, it is taken only by the call with the
same arguments, and a whole process prints what the in-process command line prints."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ranking.io import trec_scan
from ranking.trec_eval import fast_merge as fm
from ranking.trec_eval import prefetch
from tests.ranking.trec_eval_support import ours

if prefetch.rankjoin is None:
    pytest.skip("ranking.trec_eval._rankjoin is not built", allow_module_level=True)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _compiled_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(trec_scan.PURE_ENV, raising=False)


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    rng = np.random.default_rng(5)
    qpath, rpath = tmp_path / "qrels", tmp_path / "run"
    qpath.write_text(
        "".join(f"{q} 0 d{d} {rng.integers(-1, 4)}\n" for q in range(40) for d in range(0, 50, 3))
    )
    rpath.write_text(
        "".join(
            f"{q} Q0 d{d} {d} {rng.integers(0, 30) / 4} run\n" for q in range(38) for d in range(50)
        )
    )
    return str(qpath), str(rpath)


def _flags(complete: bool) -> dict[str, int | bool]:
    return {"level": 1, "max_ret": 20, "judged_only": False, "complete": complete}


def test_the_prefetched_join_is_the_join(files: tuple[str, str]) -> None:
    qrels, run = files
    prefetch.start(["-q", "-c", "-M", "20", "-m", "all_trec", qrels, run])
    started = fm.fast_merge(qrels, run, **_flags(True))  # takes the prefetched result
    own = fm.fast_merge(qrels, run, **_flags(True))  # nothing left to take: its own call
    assert started is not None and own is not None
    assert started.runid == own.runid and started.qrels_rel_count == own.qrels_rel_count
    assert started.merged.qids == own.merged.qids
    assert started.merged.errors == own.merged.errors
    assert np.array_equal(started.merged.batch.rel, own.merged.batch.rel)
    assert np.array_equal(started.merged.bogus, own.merged.bogus)


def test_a_join_with_other_arguments_is_not_taken(files: tuple[str, str]) -> None:
    qrels, run = files
    prefetch.start(["-c", "-M", "20", qrels, run])
    other = prefetch.rank_arguments(qrels, run, max_ret=20, judged_only=False, complete=False)
    assert prefetch.take(other) is None
    same = prefetch.rank_arguments(qrels, run, max_ret=20, judged_only=False, complete=True)
    assert isinstance(prefetch.take(same), tuple)
    assert prefetch.take(same) is None  # taken once


@pytest.mark.parametrize(
    "args",
    [
        ["-h", "{q}", "{r}"],
        ["-v", "{q}", "{r}"],
        ["{q}", "-"],
        ["-R", "prefs", "{q}", "{r}"],
        ["{q}"],
        ["-x", "{q}", "{r}"],
    ],
)
def test_what_reads_no_two_files_starts_nothing(files: tuple[str, str], args: list[str]) -> None:
    qrels, run = files
    prefetch.start([a.format(q=qrels, r=run) for a in args])
    for complete in (False, True):
        for target in (run, "-"):
            arguments = prefetch.rank_arguments(
                qrels, target, max_ret=2**62, judged_only=False, complete=complete
            )
            assert prefetch.take(arguments) is None


@pytest.mark.parametrize(
    "flags", [["-q", "-m", "all_trec"], ["-q", "-c", "-M", "7", "-J", "-m", "all_trec"]]
)
def test_a_whole_process_prints_what_the_command_line_prints(
    files: tuple[str, str], flags: list[str]
) -> None:
    qrels, run = files
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "ranking.trec_eval", *flags, qrels, run],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
        env=env,
    )
    status, out, err = ours(*flags, qrels, run)
    assert (done.returncode, done.stdout, done.stderr) == (status, out, err)
    assert out
