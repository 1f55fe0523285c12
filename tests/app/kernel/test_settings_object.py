"""One settings object: every variable name works, the worker's settings are the server's,
``config show`` masks secrets, unknown ``HEAPJUDGE_*`` variables are warned about."""

from __future__ import annotations

import ast
import json
import logging
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.cli import cli
from app.kernel.settings import (
    DEV_SECRET_KEY,
    Settings,
    env_name,
    load_settings,
    mask_url,
    unknown_variables,
)

ROOT = Path(__file__).resolve().parents[3]
SECRET = "s3cr3t-" + "x" * 40


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No HEAPJUDGE_* variable of the caller's environment, and no .env file."""
    import os

    for name in list(os.environ):
        if name.startswith("HEAPJUDGE_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(ROOT / "tests")  # no .env here
    return monkeypatch


def test_every_former_variable_name_still_sets_its_field(clean_env: pytest.MonkeyPatch) -> None:
    # The queue and training knobs were JobSettings'; the rest were Settings' already.
    values = {
        "HEAPJUDGE_QUEUE_URL": ("queue_url", "redis://q:6379/0"),
        "HEAPJUDGE_TRAINING_TIME_LIMIT_SECONDS": ("training_time_limit_seconds", 77),
        "HEAPJUDGE_TRAINING_STALE_SECONDS": ("training_stale_seconds", 12.5),
        "HEAPJUDGE_TRAINING_MAX_ATTEMPTS": ("training_max_attempts", 5),
        "HEAPJUDGE_DATABASE_URL": ("database_url", "sqlite:///x.db"),
        "HEAPJUDGE_LLM_MODEL": ("llm_model", "m"),
        "HEAPJUDGE_TEMPLATES_DIR": ("templates_dir", "/t"),
    }
    for name, (_, value) in values.items():
        clean_env.setenv(name, str(value))
    settings = Settings()
    for name, (field, value) in values.items():
        assert env_name(field) == name
        assert getattr(settings, field) == value, name
    assert settings.heartbeat_seconds == 12.5 / 5 and settings.sweep_seconds == 12.5 / 2


def test_the_environment_of_a_child_reads_back_the_same_settings(
    clean_env: pytest.MonkeyPatch,
) -> None:
    """What serve hands its worker and uvicorn's processes: the same object, field by field."""
    given = Settings(
        database_url="postgresql+psycopg://u:pw@h/db",
        secret_key=SECRET,
        dev=True,
        llm_model="qwen",
        llm_timeout_seconds=2.5,
        queue_url="redis://r/1",
        training_max_attempts=3,
    )
    env = given.environment()
    assert "HEAPJUDGE_LLM_BASE_URL" not in env  # defaults are not repeated
    for name, value in env.items():
        clean_env.setenv(name, value)
    assert Settings() == given


def test_config_show_masks_secrets_and_warns_about_unknown_names(
    clean_env: pytest.MonkeyPatch,
) -> None:
    clean_env.setenv("HEAPJUDGE_SECRET_KEY", SECRET)
    clean_env.setenv("HEAPJUDGE_DATABASE_URL", "postgresql+psycopg://heap:pgpass@db/heap")
    clean_env.setenv("HEAPJUDGE_LLM_API_KEY", "sk-live-key")
    clean_env.setenv("HEAPJUDGE_LLM_MODLE", "typo")  # misspelt: ignored by the settings
    clean_env.setenv("HEAPJUDGE_LLM_MODEL", "qwen")
    result = CliRunner().invoke(cli, ["config", "show", "--json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert set(shown) == {env_name(f) for f in Settings.model_fields} | {"HEAPJUDGE_LLM_API_KEY"}
    assert shown["HEAPJUDGE_SECRET_KEY"] == "***"
    assert shown["HEAPJUDGE_DATABASE_URL"] == "postgresql+psycopg://heap:***@db/heap"
    assert shown["HEAPJUDGE_LLM_API_KEY"] == "(set)"
    assert shown["HEAPJUDGE_LLM_MODEL"] == "qwen"
    for secret in (SECRET, "pgpass", "sk-live-key"):
        assert secret not in result.output
    assert "unknown setting HEAPJUDGE_LLM_MODLE" in result.stderr
    lines = CliRunner().invoke(cli, ["config", "show"])
    assert "HEAPJUDGE_LLM_MODEL=qwen" in lines.stdout.splitlines()


def test_unknown_variables_are_logged_once_when_settings_are_loaded(
    clean_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    clean_env.setenv("HEAPJUDGE_QUEUE_ULR", "redis://typo")
    clean_env.setenv("HEAPJUDGE_THREADS", "2")  # the ranking core's: known
    clean_env.setenv("HEAPJUDGE_REQUIRE_POSTGRES", "1")  # the test suite's: known
    clean_env.setenv("HEAPJUDGE_MY_KEY", "k")
    clean_env.setenv("HEAPJUDGE_LLM_API_KEY_ENV", "HEAPJUDGE_MY_KEY")  # named key: known
    with caplog.at_level(logging.WARNING, logger="heapjudge.settings"):
        settings = load_settings()
    assert settings.queue_url is None  # the typo set nothing
    assert [r.getMessage().split()[2] for r in caplog.records] == ["HEAPJUDGE_QUEUE_ULR"]
    assert settings.llm_api_key() == "k"
    assert unknown_variables({"heapjudge_x": "1", "OTHER": "1"}, settings) == ["heapjudge_x"]


def test_masks() -> None:
    assert mask_url("redis://:pw@r:6379/0") == "redis://:***@r:6379/0"
    assert mask_url("sqlite:///./a.db") == "sqlite:///./a.db"
    assert mask_url("http://user@h/v1") == "http://user@h/v1"
    assert Settings().shown()["HEAPJUDGE_SECRET_KEY"] == (
        "(development key)" if Settings().secret_key == DEV_SECRET_KEY else "***"
    )


def test_the_service_reads_the_environment_only_through_the_settings() -> None:
    """No module of app/ but app/kernel/settings.py reads os.environ or getenv (writes by the
    CLI, which hands settings to child processes, are allowed)."""
    readers = []
    for path in sorted((ROOT / "app").rglob("*.py")):
        if path == ROOT / "app" / "kernel" / "settings.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "getenv":
                readers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
                and isinstance(node.func.value, ast.Attribute)
                and node.func.value.attr == "environ"
            ):
                readers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            if (
                isinstance(node, ast.Subscript)
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "environ"
                and isinstance(node.ctx, ast.Load)
            ):
                readers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            if isinstance(node, ast.Compare) and any(
                isinstance(c, ast.Attribute) and c.attr == "environ" for c in node.comparators
            ):
                readers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert readers == []
