"""Service configuration from environment variables (prefix ``HEAPJUDGE_``).

Every knob the service reads lives here, so the README, docker-compose.yml and the tests can
check one place. ``Settings()`` reads the environment (and an optional ``.env`` file);
``create_app(Settings(...))`` takes explicit values in tests.

A production deployment must set ``HEAPJUDGE_SECRET_KEY``; the built-in development key is
accepted only when ``HEAPJUDGE_DEV=1`` or in demo mode (:meth:`Settings.check`).
"""

from __future__ import annotations

import os
import site
import sys
import sysconfig
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

#: The placeholder secret used in dev/demo mode; refused otherwise.
DEV_SECRET_KEY = "heapjudge-dev-secret-key-do-not-use-in-production"

DEFAULT_DATABASE_URL = "sqlite:///./heapjudge.db"


#: Overrides where the page templates are read from (see :func:`templates_dir`).
TEMPLATES_DIR_ENV = "HEAPJUDGE_TEMPLATES_DIR"
#: Where a regular ``pip install .`` puts templates/ (``[tool.setuptools.data-files]``).
INSTALLED_TEMPLATES = Path("share") / "heapjudge" / "templates"


def templates_dir() -> Path:
    """The directory of the Jinja2 page templates (top-level ``templates/`` in the source tree).

    Looked up, first hit wins (each must contain ``base.html``):

    1. ``$HEAPJUDGE_TEMPLATES_DIR`` (an explicit override; an error if it is not a template dir);
    2. ``<source tree>/templates`` beside the ``app`` package (a checkout or an editable
       install, e.g. ``pip install -e .`` or the tests);
    3. ``<prefix>/share/heapjudge/templates`` for the install prefixes of this interpreter
       (``sysconfig`` "data", ``sys.prefix``, the ``--user`` base): a regular
       ``pip install .`` / wheel install copies templates/ there (pyproject ``data-files``).
    """
    override = os.environ.get(TEMPLATES_DIR_ENV)
    if override:
        path = Path(override)
        if not (path / "base.html").is_file():
            raise FileNotFoundError(f"{TEMPLATES_DIR_ENV}={override} has no base.html")
        return path
    candidates = [Path(__file__).resolve().parents[2] / "templates"]
    for prefix in (sysconfig.get_path("data"), sys.prefix, site.getuserbase()):
        if prefix:
            candidates.append(Path(prefix) / INSTALLED_TEMPLATES)
    for path in candidates:
        if (path / "base.html").is_file():
            return path
    raise FileNotFoundError(
        "page templates not found; looked in "
        + ", ".join(str(c) for c in candidates)
        + f" (set {TEMPLATES_DIR_ENV})"
    )


class InsecureSettings(RuntimeError):
    """The configuration is unsafe to serve outside dev/demo mode."""


class Settings(BaseSettings):
    """Typed service settings. Field ``x`` is read from ``HEAPJUDGE_X``."""

    model_config = SettingsConfigDict(
        env_prefix="HEAPJUDGE_", env_file=".env", env_file_encoding="utf-8", extra="ignore"
    )

    database_url: str = Field(
        default=DEFAULT_DATABASE_URL,
        description="SQLAlchemy URL: sqlite:///path.db or postgresql+psycopg://user:pw@host/db",
    )
    secret_key: str = Field(
        default=DEV_SECRET_KEY,
        description="Server secret; must be set (>= 32 chars) unless dev or demo mode is on.",
    )
    dev: bool = Field(default=False, description="Development mode (allows the dev secret).")
    demo: bool = Field(default=False, description="Demo mode (implies dev; demo logins exist).")
    public_origin: str = Field(
        default="http://127.0.0.1:8000",
        description="Scheme://host[:port] browsers use; checked against Origin on unsafe "
        "cookie requests and decides the Secure cookie flag.",
    )
    max_body_bytes: int = Field(
        default=32 * 1024 * 1024, ge=1024, description="Largest request body accepted (413)."
    )
    session_idle_seconds: int = Field(
        default=2 * 3600, ge=60, description="A web session expires after this much inactivity."
    )
    session_absolute_seconds: int = Field(
        default=7 * 24 * 3600, ge=60, description="A web session expires this long after login."
    )
    api_token_days: int = Field(default=30, ge=1, description="Lifetime of an API token.")
    idle_pause_seconds: int = Field(
        default=60, ge=5, description="The judging page stops its timer after this idle time."
    )
    login_max_failures: int = Field(
        default=5, ge=1, description="Failed logins per (username, ip) before throttling."
    )
    login_window_seconds: int = Field(
        default=900, ge=1, description="Window in which failed logins are counted."
    )
    login_ip_max_failures: int = Field(
        default=20,
        ge=1,
        description="Failed logins per ip (any username) in the window before that ip is "
        "throttled (except for a username that logged in from it before).",
    )
    login_user_free_failures: int = Field(
        default=10,
        ge=1,
        description="Failed logins per username (any ip) in the window before each further "
        "attempt from an unfamiliar ip must wait a delay that doubles per failure.",
    )
    login_user_max_delay_seconds: int = Field(
        default=60, ge=1, description="Longest per-username delay (it never becomes a lock-out)."
    )
    login_known_ip_days: int = Field(
        default=30,
        ge=0,
        description="An ip a user logged in from within this many days is familiar to them.",
    )
    import_max_lines: int = Field(default=1_000_000, ge=1, description="NDJSON import line cap.")
    import_max_field_chars: int = Field(
        default=1_000_000, ge=16, description="Longest text/html field accepted on import."
    )
    run_max_lines: int = Field(
        default=1_000_000,
        ge=1,
        description="Lines of one uploaded TREC run file; a longer file is refused as it is "
        "read (nothing stored).",
    )
    run_max_unknown_documents: int = Field(
        default=200_000,
        ge=0,
        description="Entries of one uploaded run naming a document its query does not have in "
        "the collection (unjudged); past it the upload is refused with the count.",
    )
    compare_max_runs: int = Field(
        default=50,
        ge=2,
        description="Runs one leaderboard or label-set agreement compares (S runs make "
        "S(S-1)/2 tested pairs); more is refused with the count (choose runs).",
    )
    compare_budget_seconds: float = Field(
        default=20.0,
        gt=0,
        description="Time one leaderboard or agreement request may compute; a resampling "
        "test past it stops and says so.",
    )
    db_pool_size: int = Field(default=10, ge=1, description="Connection pool size.")
    db_max_overflow: int = Field(default=20, ge=0, description="Extra pooled connections.")
    sqlite_busy_timeout_ms: int = Field(default=10_000, ge=0, description="SQLite busy_timeout.")
    postgres_async_commit: bool = Field(
        default=False,
        description="Postgres: judgment writes commit without waiting for the WAL flush "
        "(faster; a crash of the database server can lose its last fraction of a second of "
        "judgments). Off: every acknowledged judgment is on disk.",
    )

    # The LLM judge's endpoint (docs/machine-judges.md#pointing-heapjudge-at-a-model). The
    # API key itself is never a setting: only the name of the environment variable that holds
    # it, read when a client is made and kept out of the database, logs, pages and errors.
    llm_base_url: str = Field(
        default="http://127.0.0.1:8001/v1",
        description="OpenAI-compatible API root (…/v1); chat completions are POSTed to "
        "{llm_base_url}/chat/completions (vLLM, Ollama, llama.cpp's server, hosted APIs).",
    )
    llm_model: str = Field(default="", description="The model name sent with every request.")
    llm_api_key_env: str = Field(
        default="HEAPJUDGE_LLM_API_KEY",
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="Name of the environment variable holding the API key (unset or empty: "
        "no Authorization header, as local servers need).",
    )
    llm_concurrency: int = Field(default=4, ge=1, le=256, description="Requests in flight.")
    llm_timeout_seconds: float = Field(
        default=60.0,
        gt=0,
        description="Total deadline of one request: connecting, sending and reading the whole "
        "reply (a server that drips its reply is cut there); each retry has its own.",
    )
    llm_max_reply_bytes: int = Field(
        default=8192,
        ge=1024,
        le=1_048_576,
        description="Largest reply body read; a longer one is abandoned unread, counted as "
        "malformed and not cached.",
    )
    llm_retries: int = Field(
        default=4, ge=0, le=20, description="Retries of a request on 429, 5xx or no connection."
    )
    llm_backoff_seconds: float = Field(
        default=1.0, ge=0, description="First retry's wait; doubles each retry."
    )
    llm_max_backoff_seconds: float = Field(
        default=60.0, ge=0, description="Longest wait between retries (Retry-After included)."
    )
    llm_max_tokens: int = Field(default=8, ge=1, description="max_tokens of a reply.")
    llm_job_max_prompts: int = Field(
        default=500,
        ge=1,
        description="Prompts one LLM-grades job sends at most (whole queries; the rest is "
        "queued again behind the jobs waiting), so one large request cannot hold the queue.",
    )
    llm_token_budget: int = Field(
        default=2_000_000,
        ge=0,
        description="Tokens (prompt + reply) a study's machine opinions may spend (a plan, or a "
        "collection's tasks without one); past it the machine stops answering and people are "
        "asked (0: no machine answers).",
    )
    llm_grade_token_budget: int = Field(
        default=2_000_000,
        ge=0,
        description="Tokens a collection's LLM grades (the llm prior) may spend, apart from "
        "the task opinions' budget; past it the documents stay ungraded.",
    )

    @property
    def dev_mode(self) -> bool:
        """Dev or demo: the development secret is allowed."""
        return self.dev or self.demo

    @property
    def secure_cookies(self) -> bool:
        """Cookies get ``Secure`` when the public origin is https."""
        return urlsplit(self.public_origin).scheme == "https"

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    def check(self) -> None:
        """Refuse to serve with the development secret (or a short one) outside dev/demo."""
        if self.dev_mode:
            return
        if self.secret_key == DEV_SECRET_KEY:
            raise InsecureSettings(
                "HEAPJUDGE_SECRET_KEY is not set; set a random value of at least 32 characters "
                "(e.g. `python -c 'import secrets; print(secrets.token_urlsafe(48))'`) "
                "or run with HEAPJUDGE_DEV=1 for local development"
            )
        if len(self.secret_key) < 32:
            raise InsecureSettings("HEAPJUDGE_SECRET_KEY must be at least 32 characters long")

    def sqlite_path(self) -> Path | None:
        """The file of a ``sqlite:///`` URL (None for Postgres or in-memory SQLite)."""
        if not self.is_sqlite:
            return None
        path = self.database_url.split(":///", 1)[-1]
        if not path or path == ":memory:":
            return None
        return Path(path)
