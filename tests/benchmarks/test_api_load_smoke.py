"""The load benchmark still runs end to end (real ``heapjudge serve`` on 127.0.0.1, SQLite),
tiny and bounded: 2 assessors for 1 s, then 32 assessors paced at 40 j/s for 1 s. Timings are
printed, never asserted (tests do not judge speed); what is asserted is that every run was
counted, nothing was lost or doubled, and the verdict is printed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_api_load_runs_and_loses_nothing() -> None:
    out = subprocess.run(
        [
            *(sys.executable, str(REPO / "benchmarks" / "api_load.py")),
            *("--backend", "sqlite", "--levels", "2", "--duration", "1"),
            *("--max-judgments", "200", "--target-rate", "40"),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=REPO,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    rows = [line.split() for line in out.stdout.splitlines() if line.startswith("sqlite")]
    assert [r[0] for r in rows] == ["sqlite", "sqlite@40"]
    for row in rows:
        judgments, errors, stored_ok = int(row[2]), int(row[8]), row[9]
        assert judgments > 0 and errors == 0 and stored_ok == "yes", row
    assert re.search(r"met: stored = accepted in every run", out.stdout)
    assert re.search(r"32 assessors paced at 40 j/s: served \d+ j/s", out.stdout)
