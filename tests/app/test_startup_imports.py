"""What building the app loads: none of the heavy libraries that only some requests need.

They are imported by the functions that use them (docs/performance.md#imports), so a server
starts at about half the resident memory it had when the app's modules imported them:
scipy (intervals and p-values), pyarrow (run evaluation), huey and redis (the job queue),
httpx (the LLM client), zxcvbn (setting a password), psycopg (Postgres only), and bm25s
with numba (building an index; also checked in tests/labeling/retrieval/test_bm25.py).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HEAVY = ("scipy", "pyarrow", "huey", "redis", "httpx", "zxcvbn", "psycopg", "bm25s", "numba")


def test_building_the_app_loads_no_heavy_library(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from app.main import create_app\n"
        "from app.kernel.settings import Settings\n"
        "create_app(Settings(dev=True, database_url='sqlite:///' + sys.argv[1]))\n"
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "app.db")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert out == []


def test_the_libraries_load_where_they_are_used(tmp_path: Path) -> None:
    """The lazy imports are reached: reading a run loads pyarrow, an interval scipy, setting a
    password zxcvbn (a check that the imports moved into the functions are the ones used)."""
    code = (
        "import sys\n"
        "import numpy as np\n"
        "from pathlib import Path\n"
        "from app.auth.passwords import password_problem\n"
        "from ranking.compare.leaderboard import mean_interval\n"
        "from ranking.io.trec_fast import read_run_columns\n"
        "run = Path(sys.argv[1])\n"
        "run.write_text('1 Q0 d1 1 2.0 t\\n1 Q0 d2 2 1.0 t\\n')\n"
        "assert read_run_columns(run).fast\n"
        "print('pyarrow' in sys.modules, 'scipy' in sys.modules, 'zxcvbn' in sys.modules)\n"
        "assert mean_interval(np.array([0.1, 0.5, 0.7])) is not None\n"
        "assert password_problem('correct horse battery staple') is None\n"
        "print('pyarrow' in sys.modules, 'scipy' in sys.modules, 'zxcvbn' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "run.txt")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert out == ["True", "False", "False", "True", "True", "True"]
