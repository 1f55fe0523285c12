"""A supervised child process: ``heapjudge serve`` runs its worker through :class:`Supervisor`,
which starts it again when it exits without being asked to (killed, crashed, out of memory).

Restarts back off: the first after :data:`FIRST_DELAY` seconds, doubling up to
:data:`MAX_DELAY` while the child keeps dying within :data:`HEALTHY_SECONDS` of its start,
so a worker that cannot start (a bad configuration) does not spin. Each restart is logged.
The child's own heartbeat (:mod:`app.kernel.queue`) tells the admin pages whether it is up;
the training runs it left ``running`` are retried or failed by the restarted worker's
recovery sweep (:mod:`app.training.jobs`).
"""

from __future__ import annotations

import logging
import subprocess
import threading
import time
from collections.abc import Sequence

log = logging.getLogger("heapjudge.supervise")

FIRST_DELAY = 0.5
MAX_DELAY = 30.0
#: A child that ran this long before it died is restarted after the first delay again.
HEALTHY_SECONDS = 60.0


class Supervisor:
    """Run ``command`` and keep it running until :meth:`stop`."""

    def __init__(self, command: Sequence[str], *, env: dict[str, str] | None = None) -> None:
        self.command = list(command)
        self.env = env
        self.restarts = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._watch, name="supervise", daemon=True)

    def start(self) -> Supervisor:
        self._spawn()
        self._thread.start()
        return self

    def _spawn(self) -> None:
        with self._lock:
            if not self._stop.is_set():
                self.proc = subprocess.Popen(self.command, env=self.env)

    def _watch(self) -> None:
        delay = FIRST_DELAY
        while not self._stop.is_set():
            proc = self.proc
            assert proc is not None
            started = time.monotonic()
            code = proc.wait()
            if self._stop.is_set():
                return
            if time.monotonic() - started >= HEALTHY_SECONDS:
                delay = FIRST_DELAY
            log.warning(
                "the worker (pid %s) exited with %s; restarting it in %.1f s",
                proc.pid,
                code,
                delay,
            )
            if self._stop.wait(delay):
                return
            delay = min(MAX_DELAY, delay * 2)
            self.restarts += 1
            self._spawn()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop supervising and end the child (SIGTERM, then SIGKILL after ``timeout``)."""
        with self._lock:
            self._stop.set()
            proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=timeout)
        self._thread.join(timeout=timeout)
