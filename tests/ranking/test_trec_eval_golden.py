"""Byte-identical to trec_eval 10.0 without the binary: every recorded case
(``tests/ranking/trec_eval_golden.py``: seeded qrels, judgment-group and preference files,
runs, command lines) replayed through ``heapjudge trec-eval``, exit status and standard
output compared; where ``HEAPJUDGE_TREC_EVAL_BIN`` names a binary, the records are checked
against it too, so they cannot go stale."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.ranking.trec_eval_golden import cases, load, run_binary
from tests.ranking.trec_eval_support import BIN_ENV, ours

RECORDED = load()


def test_the_records_cover_the_cases_and_trec_eval_s_corners() -> None:
    assert [(c["name"], c["flags"]) for c in RECORDED] == [(c["name"], c["flags"]) for c in cases()]
    statuses = {c["status"] for c in RECORDED}
    assert 0 in statuses and len(statuses) > 1  # successes and trec_eval's own refusals
    assert sum(len(c["stdout"]) for c in RECORDED) > 100_000
    assert any("-R" in c["flags"] and "prefs" in c["flags"] and c["stdout"] for c in RECORDED)


@pytest.mark.parametrize(
    "case", RECORDED, ids=[f"{c['name']}:{' '.join(c['flags'])}" for c in RECORDED]
)
def test_identical_to_the_recorded_binary_output(case: dict[str, Any], tmp_path: Path) -> None:
    judged, run = tmp_path / "judged", tmp_path / "run"
    judged.write_text(case["judged"])
    run.write_text(case["run"])
    status, out, _ = ours(*case["flags"], judged, run)
    if case["status"] == 0:
        assert (status, out) == (0, case["stdout"])
    else:  # trec_eval refused: so do we, after the same lines
        assert status != 0 and out == case["stdout"]


def test_the_records_are_what_the_binary_prints() -> None:
    binary = os.environ.get(BIN_ENV)
    if not binary or not Path(binary).exists():
        pytest.skip(f"{BIN_ENV} does not name a built trec_eval 10.0 binary")
    for case in RECORDED:
        assert run_binary(binary, case) == (case["status"], case["stdout"]), case["name"]
