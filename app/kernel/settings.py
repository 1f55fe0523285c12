"""Service configuration from environment variables (prefix ``HEAPJUDGE_``): one object.

Every knob the service and its worker read lives in :class:`Settings` (the web process, the
queue and training jobs, the LLM judge), so the README, docker-compose.yml and the tests can
check one place. :func:`load_settings` reads the environment (and an optional ``.env`` file)
once per process, warns about ``HEAPJUDGE_*`` variables it does not know (a misspelt name
would otherwise be ignored silently), and the object is passed down from there
(``Database.settings``); ``create_app(Settings(...))`` takes explicit values in tests.
``serve`` gives the worker it starts exactly its own settings (:meth:`Settings.environment`),
so the two never disagree (docs/cli.md#config). ``heapjudge config show`` prints
:meth:`Settings.shown`, secrets masked.

Two reads stay outside the object, on purpose: the LLM API key, read from the variable
``llm_api_key_env`` names whenever a request is made (:meth:`Settings.llm_api_key`; it is
never a setting, so it never reaches a log, a page or ``config show``), and
``HEAPJUDGE_TEMPLATES_DIR``, read by :func:`templates_dir` when the pages' module is imported
(where the installed files are, before any settings exist; it is a field too, so it is shown
and known).

A production deployment must set ``HEAPJUDGE_SECRET_KEY``; the built-in development key is
accepted only when ``HEAPJUDGE_DEV=1`` or in demo mode (:meth:`Settings.check`).
"""

from __future__ import annotations

import logging
import os
import site
import sys
import sysconfig
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

#: The placeholder secret used in dev/demo mode; refused otherwise.
DEV_SECRET_KEY = "heapjudge-dev-secret-key-do-not-use-in-production"

DEFAULT_DATABASE_URL = "sqlite:///./heapjudge.db"
#: The prefix of every variable the service reads.
ENV_PREFIX = "HEAPJUDGE_"
#: ``HEAPJUDGE_*`` variables that are no field but are known: the ranking core's (threads,
#: the pure-Python TREC reader), the default LLM key variable, and the test suite's.
OTHER_VARIABLES = frozenset(
    {
        "HEAPJUDGE_THREADS",
        "HEAPJUDGE_TREC_PURE",
        "HEAPJUDGE_LLM_API_KEY",
        "HEAPJUDGE_TEST_POSTGRES_URL",
        "HEAPJUDGE_CHROMIUM",
        "HEAPJUDGE_SHARED_DATA",
        "HEAPJUDGE_BENCH_MACHINE",
        "HEAPJUDGE_SCHEMATHESIS_STATEFUL",
        "HEAPJUDGE_SCHEMATHESIS_EXAMPLES",
    }
)
#: Test-suite switches that turn a skip into a failure (``HEAPJUDGE_REQUIRE_POSTGRES``, ...).
REQUIRE_PREFIX = "HEAPJUDGE_REQUIRE_"
#: Fields shown as ``***`` by ``config show`` (and URLs whose password is masked).
SECRET_FIELDS = frozenset({"secret_key"})
URL_FIELDS = frozenset({"database_url", "queue_url", "llm_base_url"})
MASK = "***"
log = logging.getLogger("heapjudge.settings")


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
    override = os.environ.get(TEMPLATES_DIR_ENV)  # before any settings (module docstring)
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

    # The job queue and training runs (docs/training.md#queue).
    queue_url: str | None = Field(
        default=None,
        description="redis://host:6379/0 or sqlite:///path (default: a SQLite queue file "
        "beside a SQLite database, else ./heapjudge-queue.db)",
    )
    worker_stale_seconds: float = Field(
        default=15.0,
        gt=0,
        description="A queue whose worker heartbeat is older than this is shown as worker down.",
    )
    training_time_limit_seconds: int = Field(
        default=3600, ge=1, le=7 * 86400, description="Default time limit of a training run."
    )
    training_stale_seconds: float = Field(
        default=30.0,
        gt=0,
        description="A running job whose heartbeat is older than this is retried or failed.",
    )
    training_max_attempts: int = Field(
        default=2, ge=1, description="Executions of a run before a lost worker fails it."
    )
    templates_dir: str | None = Field(
        default=None,
        description="Where the page templates are (default: the source tree or the install "
        "prefix; read when the pages are imported, see templates_dir()).",
    )

    @property
    def heartbeat_seconds(self) -> float:
        """How often a running job writes its heartbeat."""
        return self.training_stale_seconds / 5

    @property
    def sweep_seconds(self) -> float:
        """How often a worker sweeps for stalled runs."""
        return self.training_stale_seconds / 2

    def llm_api_key(self) -> str | None:
        """The LLM API key: the variable ``llm_api_key_env`` names, read now (module
        docstring); None when unset or empty."""
        return os.environ.get(self.llm_api_key_env) or None

    def shown(self) -> dict[str, Any]:
        """Every setting by its variable's name, secrets masked: ``secret_key`` as ``***``
        (or ``(development key)``), a URL's password as ``***``; the LLM key only as whether
        it is set."""
        out: dict[str, Any] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if name in SECRET_FIELDS:
                value = "(development key)" if value == DEV_SECRET_KEY else MASK
            elif name in URL_FIELDS and isinstance(value, str):
                value = mask_url(value)
            out[env_name(name)] = value
        out[self.llm_api_key_env] = "(set)" if self.llm_api_key() else "(not set)"
        return out

    def environment(self) -> dict[str, str]:
        """The settings as ``HEAPJUDGE_*`` variables (every field that is not its default):
        what a child process (the worker ``serve`` starts, uvicorn's workers) needs to read
        these same settings."""
        out: dict[str, str] = {}
        for name, info in type(self).model_fields.items():
            value = getattr(self, name)
            if value == info.default:
                continue
            out[env_name(name)] = "1" if value is True else "0" if value is False else str(value)
        return out

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


def env_name(field: str) -> str:
    """The variable of a :class:`Settings` field: ``database_url`` -> ``HEAPJUDGE_DATABASE_URL``."""
    return ENV_PREFIX + field.upper()


def mask_url(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{user}:{MASK}@{host}"))


def unknown_variables(environ: Mapping[str, str], settings: Settings) -> list[str]:
    """The ``HEAPJUDGE_*`` names in ``environ`` that no setting, the ranking core, the LLM
    key variable or the test suite reads (sorted)."""
    known = {env_name(name) for name in Settings.model_fields} | OTHER_VARIABLES
    known.add(settings.llm_api_key_env)
    return sorted(
        name
        for name in environ
        if name.upper().startswith(ENV_PREFIX)
        and name.upper() not in known
        and not name.upper().startswith(REQUIRE_PREFIX)
    )


def load_settings(**overrides: Any) -> Settings:
    """The process's settings: the environment (and ``.env``) under ``overrides``; a warning
    (logger ``heapjudge.settings``) names every unknown ``HEAPJUDGE_*`` variable, which would
    otherwise be ignored silently."""
    settings = Settings(**overrides)
    for name in unknown_variables(os.environ, settings):
        log.warning("unknown setting %s is ignored (heapjudge config show lists them all)", name)
    return settings
