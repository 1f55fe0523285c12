"""The CLI convention (docs/cli.md), checked on the real command tree: every command's
``--help``, flag names and defaults shared across commands, the error style and exit codes,
and the database rule (a missing SQLite file is refused and not created; an older schema is
migrated)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from typer.core import TyperArgument, TyperGroup, TyperOption
from typer.testing import CliRunner

from app.cli import cli, command

ROOT = command()
#: Option names whose default may differ between commands, and why (docs/cli.md#shared-flags).
DEFAULTS_MAY_DIFFER = {
    "--models": "sweep-beta sweeps only the FocusedRank models",
    "--output": "sweep-beta writes its plot to beta_sweep.svg; the others default to stdout",
    "-o": "as --output",
    "--name": "admin runs upload names a run after its file unless --name is given",
}
UPPER = re.compile(r"^[A-Z][A-Z0-9_]*$")


def _commands(group: Any = ROOT, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path]
    for name, sub in group.commands.items():
        if isinstance(sub, TyperGroup):
            found += _commands(sub, (*path, name))
        else:
            found.append((*path, name))
    return found


def _leaf(path: tuple[str, ...]) -> Any:
    cmd = ROOT
    for name in path:
        cmd = cmd.commands[name]
    return cmd


ALL = _commands()
LEAVES = [p for p in ALL if not isinstance(_leaf(p), TyperGroup)]


def _options(cmd: Any) -> list[TyperOption]:
    return [p for p in cmd.params if isinstance(p, TyperOption) and not p.hidden]


def test_the_tree_is_complete() -> None:
    names = {" ".join(p) for p in LEAVES}
    assert {
        "import",
        "export",
        "analyze",
        "simulate",
        "simulate-study",
        "cv",
        "sweep-beta",
        "compare",
    } <= names
    assert {"admin progress", "admin plan", "db upgrade", "db current"} <= names
    assert "analysis calibration" in names
    assert "admin runs label-sets" in names
    assert "admin prompts" in names
    assert "admin llm-grades" in names
    assert "admin machine check" in names
    assert "config show" in names
    assert {"admin train", "admin training-run"} <= names
    assert "admin machine-gold" in names
    assert len(LEAVES) == 44


@pytest.mark.parametrize("path", ALL, ids=lambda p: " ".join(p) or "heapjudge")
def test_help_follows_the_convention(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "<bool>" not in text and not re.search(r"<(str|int|float|path|file)\b", text), text
    usage = text.splitlines()[0]
    assert usage.startswith("Usage: heapjudge"), usage
    assert "{" not in usage and "}" not in usage, usage
    cmd = _leaf(path)
    pieces = usage.split("[OPTIONS]", 1)[1].split()
    if isinstance(cmd, TyperGroup):
        assert pieces == ["COMMAND", "[ARGS]..."]
        return
    arguments = [p for p in cmd.params if isinstance(p, TyperArgument)]
    assert len(pieces) == len(arguments)
    for piece, arg in zip(pieces, arguments, strict=True):
        bare = piece.strip("[]").removesuffix("...")
        assert UPPER.match(bare), piece
        assert bare == arg.name.upper()
        assert piece.startswith("[") == (not arg.required)
        assert re.search(rf"^  {bare}\b", text, re.M), f"{bare} not listed under Arguments"


@pytest.mark.parametrize("path", LEAVES, ids=" ".join)
def test_options_have_uppercase_metavars_and_paired_booleans(path: tuple[str, ...]) -> None:
    cmd = _leaf(path)
    for opt in _options(cmd):
        if opt.name == "help":
            continue
        if opt.is_flag or opt.type_descriptor.annotation is bool:
            longs = [o for o in opt.opts if o.startswith("--")]
            assert len(longs) == 1 and opt.secondary_opts, f"{opt.opts}: not an --x/--no-x pair"
            # --x / --no-x, same name
            assert opt.secondary_opts == ["--no-" + longs[0][2:]], opt.secondary_opts
            assert opt.metavar == ""
        else:
            assert UPPER.match(opt.metavar) or re.match(r"^\[[^\]]+\]$", opt.metavar), (
                opt.opts,
                opt.metavar,
            )


def _shared_options() -> dict[str, list[tuple[str, TyperOption]]]:
    seen: dict[str, list[tuple[str, TyperOption]]] = defaultdict(list)
    for path in LEAVES:
        cmd = _leaf(path)
        for opt in _options(cmd):
            for name in [*opt.opts, *opt.secondary_opts]:
                seen[name].append((" ".join(path), opt))
    return {k: v for k, v in seen.items() if len(v) > 1}


def test_a_shared_option_name_means_one_thing() -> None:
    shared = _shared_options()
    assert {"--database-url", "--json", "--k", "--seed", "--truth", "--pair-cache"} <= set(shared)
    for name, uses in shared.items():
        kinds = {(opt.is_flag, opt.metavar) for _, opt in uses}
        assert len(kinds) == 1, f"{name}: {[(c, o.metavar) for c, o in uses]}"
        if name not in DEFAULTS_MAY_DIFFER:
            defaults = {repr(opt.default) for _, opt in uses}
            assert len(defaults) == 1, f"{name}: defaults {[(c, o.default) for c, o in uses]}"


def test_the_shared_defaults_are_the_documented_ones() -> None:
    shared = _shared_options()
    assert {c for c, _ in shared["--pair-cache"]} == {"simulate", "simulate-study"}
    assert all(opt.default is True for _, opt in shared["--pair-cache"])
    assert {c: o.default for c, o in shared["--truth"]} == {"cv": "both", "sweep-beta": "both"}
    names = {n for path in LEAVES for o in _options(_leaf(path)) for n in o.opts}
    # one name for the flip rate; none of the replaced spellings is visible
    assert "--noise" in names
    assert not names & {"--no-cache", "--pair-noise", "--ties-rate", "--out", "--unarchive"}
    docs = (Path(__file__).resolve().parents[3] / "docs" / "cli.md").read_text(encoding="utf-8")
    for path in LEAVES:
        assert f"`heapjudge {' '.join(path)}" in docs, f"{path} missing from docs/cli.md"


def _run(*args: str, **kw: Any) -> Any:
    return CliRunner().invoke(cli, list(args), **kw)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["import"], "Missing argument 'COLLECTION'"),
        (["simulate", "--no-such-flag"], "No such option"),
        (["simulate", "--n", "x"], "Invalid value for '--n'"),
        (["simulate", "--strategy", "bogus"], "'bogus' is not one of"),
        (["analyze", "c", "--mode", "sideways"], "--mode must be one of"),
        (["cv", "--data", ".", "--truth", "all"], "--truth must be graded, topk or both"),
        (["admin", "plan", "c", "--assessors", "a", "--options", "{x"], "not JSON"),
        (["evaluate", "--run", "missing-run.txt"], "does not exist"),
        (["evaluate", "--missing", "none"], "--missing must be ignore or zero, got 'none'"),
    ],
)
def test_usage_errors_exit_2_in_the_one_style(args: list[str], message: str) -> None:
    result = _run(*args)
    assert result.exit_code == 2, result.output
    first = result.stderr.splitlines()[0]
    assert first.startswith("error: ") and message in first, result.stderr
    assert "--help' for help" in result.stderr
    assert "Traceback" not in result.output and "Error:" not in result.output


def test_a_queue_url_of_an_unknown_scheme_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``worker --queue-url ftp://...``: exit 2 in the one style, not a traceback."""
    monkeypatch.setenv("HEAPJUDGE_QUEUE_URL", "")  # the command sets it; restored after
    monkeypatch.setenv("HEAPJUDGE_DATABASE_URL", f"sqlite:///{tmp_path / 'w.db'}")
    result = _run("worker", "--queue-url", "ftp://x")
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: queue URL must start with"), result.stderr
    assert "Traceback" not in result.output


def test_failures_exit_1_in_the_one_style(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'hj.db'}"
    data = tmp_path / "docs.ndjson"
    data.write_text('{"query_id": "q1", "query": "heaps", "doc_id": "d1", "text": "x"}\n')
    assert _run("import", "c", str(data), "--database-url", url).exit_code == 0
    bad = tmp_path / "bad.ndjson"
    bad.write_text('{"query_id": "q1", "query": "heaps", "doc_id": "d2"}\nnot json\n')
    cases = [
        (["import", "c", str(bad)], f"{bad}:2:"),  # validation failure, with file:line
        (["export", "nope"], "'nope'"),  # unknown collection
        (["analyze", "nope"], "'nope'"),
        (["admin", "progress", "nope"], "'nope'"),
    ]
    for args, needle in cases:
        result = _run(*args, "--database-url", url)
        assert result.exit_code == 1, (args, result.output)
        assert needle in result.stderr, (args, result.stderr)
        assert result.stderr.splitlines()[-1].startswith("error: "), result.stderr
        assert "Traceback" not in result.output


#: Commands that read a database, with arguments that would otherwise be valid.
READERS = [
    ["analyze", "c"],
    ["export", "c"],
    ["admin", "progress", "c"],
    ["admin", "bm25", "c"],
    ["admin", "plan", "c", "--assessors", "a,b,c,d"],
    ["admin", "collection", "c", "--archive"],
    ["admin", "disable", "someone"],
    ["db", "current"],
    ["db", "downgrade", "base"],
]


@pytest.mark.parametrize("args", READERS, ids=" ".join)
def test_a_reader_refuses_a_missing_database_and_creates_nothing(
    args: list[str], tmp_path: Path
) -> None:
    target = tmp_path / "typo.db"
    result = _run(*args, "--database-url", f"sqlite:///{target}")
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(f"error: no database at {target}"), result.stderr
    assert "heapjudge db upgrade" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_writer_creates_the_database_and_a_reader_migrates_an_old_one(tmp_path: Path) -> None:
    import migrations

    target = tmp_path / "new.db"
    url = f"sqlite:///{target}"
    data = tmp_path / "docs.ndjson"
    data.write_text('{"query_id": "q1", "query": "heaps", "doc_id": "d1", "text": "x"}\n')
    assert _run("import", "c", str(data), "--database-url", url).exit_code == 0
    head = migrations.current(url)
    assert target.exists() and head is not None
    migrations.downgrade(url, "0001_initial")  # an older schema, the data kept
    assert migrations.current(url) == "0001_initial"
    result = _run("analyze", "c", "--json", "--database-url", url)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["collection"]["name"] == "c"
    assert migrations.current(url) == head


def test_no_deprecated_command_or_hidden_option_but_the_worker_parent() -> None:
    """The CLI has no deprecated spellings left; the one hidden option is internal: ``serve``
    starts ``heapjudge worker --parent PID``."""
    assert not [p for p in ALL if _leaf(p).deprecated or _leaf(p).hidden]
    hidden = {
        (" ".join(path), name)
        for path in LEAVES
        for param in _leaf(path).params
        if isinstance(param, TyperOption) and param.hidden
        for name in param.opts
    }
    assert hidden == {("worker", "--parent")}
    result = _run("simulate", "--n", "12", "--k", "3", "--trials", "30", "--ties", "0.1")
    assert result.exit_code == 2 and "No such option: --ties" in result.stderr


def test_the_console_entry_point_exits_with_the_rule(tmp_path: Path) -> None:
    """``python -m app.cli`` (what the ``heapjudge`` script runs): real exit statuses."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEAPJUDGE_")}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "app.cli", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )

    usage = run("analyze")
    assert usage.returncode == 2 and usage.stderr.startswith("error: Missing argument")
    missing = run("analyze", "c", "--database-url", "sqlite:///./absent.db")
    assert missing.returncode == 1 and missing.stderr.startswith("error: no database at")
    assert not (tmp_path / "absent.db").exists()
    ok = run("simulate", "--n", "8", "--k", "2", "--trials", "5", "--json")
    assert ok.returncode == 0 and json.loads(ok.stdout)["n"] == 8
    bare = run()
    assert bare.returncode == 2 and "Commands:" in bare.stdout + bare.stderr  # click's rule
