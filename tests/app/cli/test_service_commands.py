"""The service CLI for real: subprocesses on a temporary SQLite file, and ``serve --demo``
running a real uvicorn on 127.0.0.1 (bounded by timeouts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from app.demo import DEMO_GUIDELINES, DEMO_LOGINS, DEMO_QUERIES
from tests.app.kernel.test_migrations import HEAD
from tests.e2e.web_support import free_port


def cli(
    *args: str, cwd: Path, stdin: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEAPJUDGE_")}
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def test_db_user_import_export_commands(tmp_path: Path) -> None:
    """The commands in-process (typer's runner: no interpreter start-up per command)."""
    from typer.testing import CliRunner

    from app.cli import cli as app_cli

    runner = CliRunner()

    def run(*args: str, stdin: str | None = None):
        return runner.invoke(app_cli, list(args), input=stdin, catch_exceptions=False)

    url = f"sqlite:///{tmp_path / 'cli.db'}"
    r = run("db", "upgrade", "--database-url", url)
    assert r.exit_code == 0 and HEAD in r.output, r.output
    r = run(
        "create-user",
        "root",
        "--role",
        "admin",
        "--database-url",
        url,
        stdin="a-long-root-passphrase\n",
    )
    assert r.exit_code == 0 and "admin 'root'" in r.output, r.output
    r = run("create-user", "root", "--database-url", url, stdin="a-long-password\n")
    assert r.exit_code == 1 and "already taken" in r.output
    good = tmp_path / "good.ndjson"
    good.write_text(
        "\n".join(
            json.dumps({"query_id": "q", "query": "x", "doc_id": f"d{i}", "text": "t"})
            for i in range(3)
        )
    )
    r = run("import", "coll", str(good), "--database-url", url)
    assert r.exit_code == 0 and "3 new (query, document) pairs" in r.output, r.output
    bad = tmp_path / "bad.ndjson"
    bad.write_text('{"query_id": "q", "query": "x", "doc_id": "e1"}\nnot json\n')
    r = run("import", "coll", str(bad), "--database-url", url)
    assert r.exit_code == 1 and f"{bad}:2:" in r.output and "nothing imported" in r.output
    out = tmp_path / "pairs.jsonl"
    r = run("export", "coll", "--format", "pairs-jsonl", "-o", str(out), "--database-url", url)
    # Nothing judged yet: the export says so and leaves no file (docs/exports.md#empty-exports).
    assert r.exit_code == 1 and "nothing to export: no top-k judgments yet" in r.output
    assert not out.exists()
    r = run("export", "nope", "--database-url", url)
    assert r.exit_code == 1 and "no collection" in r.output
    r = run("db", "downgrade", "base", "--database-url", url)
    assert r.exit_code == 0 and "base" in r.output


def test_serve_refuses_the_dev_secret_outside_dev_mode(tmp_path: Path) -> None:
    r = cli("serve", "--database-url", f"sqlite:///{tmp_path / 's.db'}", cwd=tmp_path, timeout=60)
    assert r.returncode == 1 and "HEAPJUDGE_SECRET_KEY" in r.stderr


def test_readme_walkthrough_sets_a_secret_key_serve_accepts() -> None:
    """README "From files to a model": plain ``heapjudge serve`` refuses to start (above), so
    the walkthrough sets ``HEAPJUDGE_SECRET_KEY`` first, with a command whose key is accepted."""
    import re

    from app.kernel.settings import Settings

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## From files to a model", 1)[1].split("\n## ", 1)[0]
    serve = section.index("\nheapjudge serve")
    found = re.search(r"export HEAPJUDGE_SECRET_KEY=\$\((.+)\)\n", section[: serve + 1])
    assert found, "no HEAPJUDGE_SECRET_KEY before heapjudge serve"
    key = subprocess.run(
        found.group(1), shell=True, capture_output=True, text=True, check=True
    ).stdout.strip()
    Settings(secret_key=key, dev=False).check()  # raises when serve would refuse


def test_serve_demo_creates_once_and_serves(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEAPJUDGE_")}
    env["HEAPJUDGE_MAX_BODY_BYTES"] = "100000"
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--demo", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        else:
            raise AssertionError("server did not start")
        name, password, _role = DEMO_LOGINS[1]
        token = httpx.post(
            f"{base}/api/v1/auth/token", data={"username": name, "password": password}
        ).json()["access_token"]
        headers = {"Authorization": f"Bearer {token}"}
        tasks = httpx.get(f"{base}/api/v1/tasks", headers=headers).json()
        assert {t["method"] for t in tasks} == {"topk", "graded"}
        nxt = httpx.get(f"{base}/api/v1/tasks/{tasks[0]['id']}/next", headers=headers).json()
        assert nxt["done"] is False
        colls = httpx.get(f"{base}/api/v1/collections", headers=headers).json()
        assert colls[0]["queries"] == len(DEMO_QUERIES)
        # The guidelines an assessor's first visit opens (the panel shows only when there are).
        guide = httpx.get(
            f"{base}/api/v1/collections/{colls[0]['id']}/guidelines", headers=headers
        ).json()
        assert guide["markdown"] == DEMO_GUIDELINES and "<strong>" in guide["html"]
        assert 20 <= colls[0]["documents"] / len(DEMO_QUERIES) <= 50
        # A chunked upload (no Content-Length) over the limit is cut off by the real server.
        admin, admin_pw, _ = DEMO_LOGINS[0]
        admin_token = httpx.post(
            f"{base}/api/v1/auth/token", data={"username": admin, "password": admin_pw}
        ).json()["access_token"]

        def chunks():
            for _ in range(150):
                yield b"z" * 1000

        r = httpx.post(
            f"{base}/api/v1/collections/{colls[0]['id']}/import",
            content=chunks(),
            headers={"Authorization": f"Bearer {admin_token}"},
        )
        assert r.status_code == 413 and "content-length" not in r.request.headers
    finally:
        proc.terminate()
        output, _ = proc.communicate(timeout=30)
    assert "Demo database created." in output
    assert base in output
    for name, password, _role in DEMO_LOGINS:
        assert name in output and password in output
    assert (tmp_path / "heapjudge-demo.db").is_file()
    # Every file the demo wrote (database, training queue, their WAL files) is git-ignored.
    written = sorted(p.name for p in tmp_path.iterdir())
    assert any(name.endswith(".queue") for name in written), written
    ignored = subprocess.run(
        ["git", "check-ignore", "--no-index", "--stdin"],
        cwd=Path(__file__).resolve().parents[3],
        input="\n".join(written),
        capture_output=True,
        text=True,
    ).stdout.split()
    assert sorted(ignored) == written
    # A second start reuses the database (created once).
    from app.demo import ensure_demo
    from app.kernel.db import Database

    db = Database.from_url(f"sqlite:///{tmp_path / 'heapjudge-demo.db'}")
    try:
        assert ensure_demo(db=db) is False
    finally:
        db.dispose()


def test_serve_on_a_read_only_database_is_one_error_line(tmp_path: Path) -> None:
    """A database the server cannot write (here opened read-only by SQLite, as a file without
    write permission is): ``serve`` exits 1 with one ``error:`` line, not a traceback, whether
    migrations still had to run or the file was at head already."""
    for revision in ("0003_training_jobs", "head"):
        path = tmp_path / f"ro-{revision}.db"
        assert cli("db", "upgrade", revision, "--database-url", f"sqlite:///{path}", cwd=tmp_path)
        read_only = f"sqlite:///file:{path}?mode=ro&uri=true"
        env = {k: v for k, v in os.environ.items() if not k.startswith("HEAPJUDGE_")}
        port = str(free_port())
        command = ["serve", "--database-url", read_only, "--port", port, "--no-training-worker"]
        r = subprocess.run(
            [sys.executable, "-m", "app.cli", *command],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            env={**env, "HEAPJUDGE_DEV": "1"},
        )
        assert r.returncode == 1, (revision, r.stdout, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), (revision, r.stderr)
        assert "readonly" in lines[0] and "Traceback" not in r.stderr
