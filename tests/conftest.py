"""Fixtures shared by every test package.

``shared_data``: the project's real data sets live in ``../shared/data`` beside the
repository (never copied into it). Tests that need them skip cleanly when absent, unless
``HEAPJUDGE_REQUIRE_SHARED_DATA=1`` (CI provides the data), which turns the skip into a failure.

``oracle(module)``: import an independent oracle package (scikit-learn, pytrec_eval, ...) or
skip; ``HEAPJUDGE_REQUIRE_ORACLES=1`` (CI, where the ``dev`` and ``bench`` extras install
them) turns the skip into a failure, so an oracle test never silently stops running.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path | None:
    """Locate ``shared/data`` (``HEAPJUDGE_SHARED_DATA`` overrides)."""
    env = os.environ.get("HEAPJUDGE_SHARED_DATA")
    candidates = [Path(env)] if env else []
    candidates.append(REPO_ROOT.parent / "shared" / "data")
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    return None


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = shared_data_dir()
    if path is None:
        reason = "../shared/data is not present beside the repository"
        if os.environ.get("HEAPJUDGE_REQUIRE_SHARED_DATA") == "1":
            pytest.fail(f"HEAPJUDGE_REQUIRE_SHARED_DATA=1 but {reason}")
        pytest.skip(reason)
    return path


def oracle(module: str, reason: str) -> ModuleType:
    """Import the oracle ``module`` or skip the calling test with ``reason``; under
    ``HEAPJUDGE_REQUIRE_ORACLES=1`` a missing oracle fails the test instead."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        why = f"{reason} ({module} not importable: {exc})"
        if os.environ.get("HEAPJUDGE_REQUIRE_ORACLES") == "1":
            pytest.fail(f"HEAPJUDGE_REQUIRE_ORACLES=1 but {why}")
        pytest.skip(why)
