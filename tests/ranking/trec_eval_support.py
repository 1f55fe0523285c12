"""Helpers of the trec_eval drop-in tests: running it in-process, and where trec_eval's own
source (its ``test/`` folder) and a built binary are (``HEAPJUDGE_TREC_EVAL_SRC``,
``HEAPJUDGE_TREC_EVAL_BIN``; the tests that need them skip, saying so, when they are unset)."""

from __future__ import annotations

import io
import os
import subprocess
from pathlib import Path

import pytest

from ranking.trec_eval.cli import run

SRC_ENV = "HEAPJUDGE_TREC_EVAL_SRC"
BIN_ENV = "HEAPJUDGE_TREC_EVAL_BIN"


def ours(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = run([str(a) for a in args], out, err)
    return status, out.getvalue(), err.getvalue()


def trec_eval_test_dir() -> Path:
    src = os.environ.get(SRC_ENV)
    if not src or not (Path(src) / "test" / "qrels.test").exists():
        pytest.skip(f"{SRC_ENV} does not name a trec_eval source tree (its test/ folder)")
    return Path(src) / "test"


def binary() -> str:
    path = os.environ.get(BIN_ENV)
    if not path or not Path(path).exists():
        pytest.skip(f"{BIN_ENV} does not name a built trec_eval 10.0 binary")
    return path


def theirs(*args: str) -> tuple[int, str]:
    done = subprocess.run([binary(), *map(str, args)], capture_output=True, text=True, check=False)
    return done.returncode, done.stdout
