"""Fixtures shared by every test package.

``shared_data``: the project's real data sets live in ``../shared/data`` beside the
repository (never copied into it). Tests that need them skip cleanly when absent.
"""

from __future__ import annotations

import os
from pathlib import Path

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
        pytest.skip("../shared/data is not present beside the repository")
    return path
