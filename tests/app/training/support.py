"""Helpers for training-job tests: a real ``heapjudge worker`` process and polling."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
FINISHED = ("done", "failed", "cancelled")


class Worker:
    """``python -m app.cli worker`` on ``database_url`` and ``queue_url`` (a subprocess)."""

    def __init__(self, database_url: str, queue_url: str, log: Path, **env: str) -> None:
        self.database_url, self.queue_url, self.log = database_url, queue_url, log
        self.env = {**os.environ, "HEAPJUDGE_DEV": "1", **env}
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Worker:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "app.cli",
                    "worker",
                    "--database-url",
                    self.database_url,
                    "--queue-url",
                    self.queue_url,
                ],
                cwd=REPO,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        return self

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def wait_for(api: Any, run_id: int, until: Any, timeout: float = 120.0) -> dict[str, Any]:
    """Poll ``GET /training-runs/{id}`` until ``until(run)`` holds (fails after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while True:
        r = api.get("admin", f"/api/v1/training-runs/{run_id}")
        assert r.status_code == 200, r.text
        run = r.json()
        if until(run):
            return run
        assert time.monotonic() < deadline, f"run {run_id} stuck: {run}"
        time.sleep(0.05)


def finished(run: dict[str, Any]) -> bool:
    return run["status"] in FINISHED


def fitting(run: dict[str, Any]) -> bool:
    p = run["progress"] or {}
    return run["status"] == "running" and p.get("iteration", 0) > 0
