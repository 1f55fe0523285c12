"""Helpers shared by the web-UI tests (tests/app/test_web_*.py, tests/e2e) and the UI benchmark.

- :func:`init_db` creates the schema in a fresh SQLite file (``metadata.create_all``; the
  migrations are tested elsewhere) and :func:`seed_task` adds users, a collection, one query
  with documents and a task, straight through the ORM.
- :class:`LiveServer` runs the real app under ``uvicorn`` in a subprocess on 127.0.0.1 (a free
  port), with the database URL and settings passed through ``HEAPJUDGE_*`` variables.
- :func:`launch_chromium` starts the system Chromium through Playwright, or skips (fails when
  ``HEAPJUDGE_REQUIRE_BROWSER=1``) when Chromium or Playwright is missing.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.auth.passwords import hash_password
from app.kernel.db import Database
from app.kernel.models import Base, Collection, Document, Judgment, Query, Task, User

REPO_ROOT = Path(__file__).resolve().parents[2]
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


def init_db(path: Path) -> Database:
    """A Database on a fresh SQLite file with every table created."""
    db = Database.from_url(f"sqlite:///{path}")
    Base.metadata.create_all(db.engine)
    return db


def add_user(db: Database, username: str, password: str, role: str = "assessor") -> int:
    with db.write() as s:
        user = User(username=username, password_hash=hash_password(password), role=role)
        s.add(user)
        s.flush()
        return user.id


@dataclass
class SeededTask:
    task_id: int
    query_id: int
    doc_ids: list[str]
    titles: dict[str, str] = field(default_factory=dict)


def seed_task(
    db: Database,
    *,
    assessor_id: int,
    docs: Sequence[Mapping[str, Any]],
    method: str = "topk",
    k: int = 4,
    seed: int = 7,
    options: Mapping[str, Any] | None = None,
    query_title: str = "solar panels on flat roofs",
    query_description: str = "Find documents about installing solar panels on a flat roof.",
    collection: str | None = None,
) -> SeededTask:
    """One collection + query + documents (``doc_id``, ``title``, ``text`` or ``html``) + task."""
    with db.write() as s:
        coll = Collection(name=collection or f"c{time.monotonic_ns()}", description="")
        s.add(coll)
        s.flush()
        query = Query(
            collection_id=coll.id,
            external_id=f"q{coll.id}",
            title=query_title,
            description=query_description,
        )
        s.add(query)
        s.flush()
        for d in docs:
            s.add(
                Document(
                    collection_id=coll.id,
                    query_id=query.id,
                    external_id=d["doc_id"],
                    title=d.get("title", ""),
                    text=d.get("text"),
                    html=d.get("html"),
                    content_hash=f"h-{d['doc_id']}",
                )
            )
        ids = [d["doc_id"] for d in docs]
        task = Task(
            collection_id=coll.id,
            query_id=query.id,
            assessor_id=assessor_id,
            method=method,
            k=k,
            seed=seed,
            options=dict(options or {}),
            doc_ids=ids,
            status="pending",
        )
        s.add(task)
        s.flush()
        return SeededTask(task.id, query.id, ids, {d["doc_id"]: d.get("title", "") for d in docs})


def live_judgments(db: Database, task_id: int) -> list[Judgment]:
    from sqlalchemy import select

    with db.read() as s:
        return list(
            s.scalars(
                select(Judgment)
                .where(Judgment.task_id == task_id, Judgment.undone.is_(False))
                .order_by(Judgment.seq)
            )
        )


def all_judgments(db: Database, task_id: int) -> list[Judgment]:
    from sqlalchemy import select

    with db.read() as s:
        return list(
            s.scalars(select(Judgment).where(Judgment.task_id == task_id).order_by(Judgment.id))
        )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def heapjudge_serve(cwd: Path, env: Mapping[str, str]) -> Iterator[str]:
    """``heapjudge serve`` (the real command, its training worker included) on a free loopback
    port in ``cwd`` with ``env``; yields its base URL once ``/healthz`` answers, stops it after."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(port)],
        cwd=cwd,
        env=dict(env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, "server did not start"
            time.sleep(0.3)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)


class _PortTaken(Exception):
    pass


class LiveServer:
    """``uvicorn app.main:create_app --factory`` in a subprocess on 127.0.0.1."""

    def __init__(self, db_path: Path, *, env: Mapping[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.db_path = db_path
        self.env = dict(env or {})
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = db_path.with_suffix(".server.log")

    def start(self, timeout: float = 30.0, attempts: int = 3) -> LiveServer:
        """Start and wait for ``/healthz``. The port is picked free just before the start, so
        another process may take it first (many test runs share the machine): then retry on
        a new port."""
        for attempt in range(attempts):
            try:
                return self._start_once(timeout)
            except _PortTaken:
                if attempt == attempts - 1:
                    raise RuntimeError(f"no free port after {attempts} attempts") from None
                self.port = free_port()
                self.url = f"http://127.0.0.1:{self.port}"
        raise AssertionError("unreachable")

    def _start_once(self, timeout: float) -> LiveServer:
        env = dict(os.environ)
        env.update(
            {
                "HEAPJUDGE_DATABASE_URL": f"sqlite:///{self.db_path}",
                "HEAPJUDGE_DEV": "1",
                "HEAPJUDGE_PUBLIC_ORIGIN": self.url,
                "PYTHONUNBUFFERED": "1",
            }
        )
        env.update(self.env)
        log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "app.main:create_app",
                "--factory",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--log-level",
                "info",
                "--no-access-log",
            ],
            cwd=str(REPO_ROOT),
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                log = self.log()
                if "address already in use" in log.lower():
                    raise _PortTaken()
                raise RuntimeError(f"server exited early:\n{log}")
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=1) as resp:
                    ok = resp.status == 200
            except OSError:
                time.sleep(0.1)
                continue
            # Only our own uvicorn's "running on" line proves the answer came from it and not
            # from someone else's server that took the port first.
            if ok and f"running on {self.url}" in self.log().lower():
                return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"server did not start in {timeout} s:\n{self.log()}")

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.proc = None


def chromium_path() -> str | None:
    """The Chromium to drive: ``HEAPJUDGE_CHROMIUM`` or the system one (None if absent)."""
    candidate = os.environ.get("HEAPJUDGE_CHROMIUM") or shutil.which("chromium") or ""
    if not candidate:
        for path in ("/usr/bin/chromium", "/usr/bin/chromium-browser"):
            if Path(path).exists():
                candidate = path
                break
    return candidate if candidate and Path(candidate).exists() else None


def browser_unavailable_reason() -> str | None:
    """Why the browser tests cannot run here (None when they can)."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright (Python) is not installed"
    if chromium_path() is None:
        return "no Chromium found (set HEAPJUDGE_CHROMIUM or install chromium)"
    return None


def require_browser() -> str:
    """Skip the calling test when there is no browser, unless HEAPJUDGE_REQUIRE_BROWSER=1."""
    import pytest

    reason = browser_unavailable_reason()
    if reason is not None:
        if os.environ.get("HEAPJUDGE_REQUIRE_BROWSER") == "1":
            pytest.fail(f"HEAPJUDGE_REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(reason)
    path = chromium_path()
    assert path is not None
    return path


def launch_chromium(playwright: Any, executable: str) -> Any:
    return playwright.chromium.launch(
        executable_path=executable, headless=True, args=list(CHROMIUM_ARGS)
    )


def relevance_docs(n: int, *, prefix: str = "d") -> list[dict[str, Any]]:
    """``n`` plain-text documents whose hidden relevance is a fixed permutation of 0..n-1
    (the oracle reads it from :func:`oracle_scores`, never from the page)."""
    docs = []
    for i in range(n):
        doc_id = f"{prefix}{i:03d}"
        docs.append(
            {
                "doc_id": doc_id,
                "title": f"Document {i}: notes on roof mounting",
                "text": f"Document {i}.\n\nFlat roofs need ballasted racking; this one is "
                f"about variant {i}.",
            }
        )
    return docs


def oracle_scores(doc_ids: Sequence[str], seed: int = 12345) -> dict[str, float]:
    """A hidden strict relevance order for the simulated assessor."""
    import random

    rng = random.Random(seed)
    values = list(range(len(doc_ids)))
    rng.shuffle(values)
    return {d: float(v) for d, v in zip(doc_ids, values, strict=True)}


# --------------------------------------------------------------------------- pages

PASSWORD = "assessor password 1"
#: Generous waits: CI shares two cores between many jobs (no timing is asserted anywhere).
TIMEOUT_MS = 90_000
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"


def open_task(page: Any, env: dict[str, Any], task_id: int) -> None:
    page.goto(f"{env['server'].url}/tasks/{task_id}")
    page.wait_for_selector("#judge-main[data-seq]")


def shown_seq(page: Any) -> int:
    return int(page.get_attribute("#judge-main", "data-seq"))


def shown_pair(page: Any) -> tuple[str, str]:
    left = page.get_attribute("article[data-slot=left]", "data-doc-id")
    right = page.get_attribute("article[data-slot=right]", "data-doc-id")
    return str(left), str(right)


def wait_next(page: Any, seq: int) -> None:
    """Wait until the page shows a question other than ``seq``, or has gone to the done page."""
    from playwright.sync_api import Error as PlaywrightError

    try:
        page.wait_for_function(
            """(s) => { const m = document.getElementById('judge-main');
                        return !m || m.dataset.seq !== String(s) || m.dataset.done === 'true'; }""",
            arg=seq,
        )
        done = page.evaluate(
            "() => { const m = document.getElementById('judge-main');"
            " return !m || m.dataset.done === 'true'; }"
        )
    except PlaywrightError:  # the navigation to the done page destroyed the context
        done = True
    if done:
        page.wait_for_url("**/done")
        page.wait_for_load_state()


def on_done_page(page: Any) -> bool:
    return page.url.endswith("/done")


def logged_in_page(
    browser: Any, url: str, username: str, password: str, problems: list[str]
) -> Any:
    """A new page of ``browser`` logged in through the login form of the server at ``url``; its
    console errors and page errors are appended to ``problems``."""
    page = browser.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(url + "/login")
    page.fill("#username", username)
    page.fill("#password", password)
    page.click("button[type=submit]")
    page.wait_for_load_state()
    return page
