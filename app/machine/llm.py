"""The LLM judge's client: OpenAI-compatible chat completions with a response cache in the
database, retries, a concurrency limit and a token budget per study
(docs/machine-judges.md#the-llm-client).

    client = LlmClient(db, Study(collection_id, plan), settings=settings)
    judge = LlmJudge(client.ask, texts, model=client.model)     # labeling.machine.judges
    judge.prefer(query, pairs)
    client.usage()                                              # the study's counters

:meth:`LlmClient.ask` takes chat prompts (``PromptTemplate.render``'s messages) and returns
one reply text per prompt, ``None`` for no opinion:

* **Cache.** A prompt's cache key is the SHA-256 of the canonical JSON of (model, template
  key, template hash, the messages, the request's parameters: temperature 0 and max tokens).
  A stored reply is returned without a request and counted as ``cached`` (it costs nothing,
  also past the budget). A prompt asked twice in one batch is sent once.
* **Budget** (``llm_token_budget``, per study: a collection's plan, or the collection for
  tasks without a plan; the collection's LLM grades have their own, ``llm_grade_token_budget``,
  so one grading click cannot spend the tasks' opinions). Before each request the study's
  tokens (prompt + completion) are compared with the budget; once they reach it every
  prompt not in the cache gets ``None`` (counted ``refused``), so people answer instead. The
  requests already in flight finish, so the spending can pass the budget by at most
  ``llm_concurrency`` requests.
* **Tokens charged** are never below what was sent and read: each of the prompt and the
  reply is charged ``max(reported, ⌈characters / 4⌉)`` (:func:`charged_tokens`), so an
  endpoint that reports no, zero or negative usage cannot run past the budget.
* **Deadline and size** (:mod:`app.machine.llm_http`): each attempt has a total deadline of
  ``llm_timeout_seconds`` (a reply dripped byte by byte is cut there), and at most
  ``llm_max_reply_bytes`` of a reply are read; a longer one is abandoned, counted
  ``malformed`` and not cached.
* **Retries.** 429, 5xx, connection errors and timeouts are retried up to ``llm_retries``
  times, waiting ``Retry-After`` (seconds or an HTTP date) when the endpoint sends it, else
  ``llm_backoff_seconds · 2^attempt``, at most ``llm_max_backoff_seconds``. Other 4xx (a wrong
  model name, a refused key) are not retried. A prompt that still fails gets ``None``
  (counted ``failed``, and ``timeouts`` when its last attempt hit the deadline; not cached,
  so a later run asks again). The last failure's text is kept with the study's counters and
  in :attr:`LlmClient.report` (docs/machine-judges.md#when-the-machine-fails).
* **Malformed replies** (that :func:`labeling.machine.llm_prompts.parse_pairwise` (or
  ``parse_graded`` for a graded template) cannot read, or a 200 without a reply text) are
  returned as they are and counted ``malformed``; the judge reads them as no opinion.
* **The API key** is read from the environment variable named by ``llm_api_key_env`` for each
  request and sent only in its ``Authorization`` header (none when the variable is unset or
  empty). The client does not keep it; it is never stored, logged, put in an error message or
  in the client's ``repr``. The endpoint's URL is logged and shown only through
  :func:`app.machine.llm_http.masked_url` (no user info, query values masked), httpx's own
  request lines included.

Requests run on a thread pool of ``llm_concurrency`` workers over one ``httpx.Client``; this
module never runs inside a judging request (the job queue's workers call it).
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from app.kernel.db import Database
from app.kernel.errors import Invalid
from app.kernel.settings import Settings
from app.machine.llm_http import Exchange, make_http_client, masked_url, post_json
from app.machine.repository import (
    CachedReply,
    Study,
    UsageCounts,
    cached_replies,
    read_usage,
    store_batch,
)
from labeling.machine.llm_prompts import PAIRWISE_V2, PromptTemplate, parse_graded, parse_pairwise

__all__ = [
    "CallReport",
    "LlmClient",
    "LlmUsage",
    "budget_of",
    "cache_key",
    "charged_tokens",
    "chat_url",
    "estimated_tokens",
    "request_params",
    "retry_wait",
    "study_usage",
]

log = logging.getLogger("heapjudge.machine.llm")

Messages = list[dict[str, str]]
#: Temperature of every request: the judge is deterministic for a given model and prompt.
TEMPERATURE = 0.0
RETRY_STATUSES = frozenset({429}) | frozenset(range(500, 600))


def cache_key(
    model: str, template: PromptTemplate, messages: Messages, params: dict[str, Any]
) -> str:
    """SHA-256 (hex) of the canonical JSON of the model, the template's key and hash, the
    full prompt and the request's parameters."""
    canonical = json.dumps(
        {
            "model": model,
            "template": template.key,
            "template_hash": template.hash,
            "messages": messages,
            "params": params,
        },
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def request_params(settings: Settings) -> dict[str, Any]:
    """The parameters of every request (part of each prompt's cache key): temperature 0 and
    the settings' ``llm_max_tokens``."""
    return {"temperature": TEMPERATURE, "max_tokens": settings.llm_max_tokens}


def estimated_tokens(chars: int) -> int:
    """Tokens of ``chars`` characters when the endpoint reports none: ``⌈chars / 4⌉`` (about
    four characters per token for English text with the common BPE vocabularies)."""
    return -(-chars // 4)


def charged_tokens(reported: object, chars: int) -> int:
    """Tokens charged for a prompt or a reply of ``chars`` characters: the endpoint's count
    when it is an integer, never below :func:`estimated_tokens` of the characters (an
    endpoint reporting none, zero or a negative count is charged the estimate)."""
    floor = estimated_tokens(chars)
    if isinstance(reported, int) and not isinstance(reported, bool):
        return max(reported, floor)
    return floor


def budget_of(study: Study, settings: Settings) -> int:
    """The study's token budget: ``llm_grade_token_budget`` for a collection's grades,
    ``llm_token_budget`` for task opinions."""
    return (
        settings.llm_grade_token_budget if study.purpose == "grades" else settings.llm_token_budget
    )


def chat_url(base_url: str) -> str:
    """``{base_url}/chat/completions``, the base URL's query (a key some gateways take)
    kept after the path."""
    parts = urlsplit(base_url.strip())
    path = parts.path.rstrip("/") + "/chat/completions"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def retry_wait(attempt: int, retry_after: str | None, base: float, cap: float) -> float:
    """Seconds to wait before retry ``attempt`` (0 for the first retry): the endpoint's
    ``Retry-After`` (delta-seconds or an HTTP date) when it is readable, else
    ``base · 2^attempt``; never more than ``cap`` nor less than 0."""
    if retry_after:
        value = retry_after.strip()
        seconds: float | None = None
        if value.replace(".", "", 1).isdigit():
            seconds = float(value)
        else:
            try:
                when = email.utils.parsedate_to_datetime(value)
            except (TypeError, ValueError):
                when = None
            if when is not None:
                if when.tzinfo is None:
                    when = when.replace(tzinfo=UTC)
                seconds = (when - datetime.now(UTC)).total_seconds()
        if seconds is not None:
            return min(max(seconds, 0.0), cap)
    return min(base * 2.0**attempt, cap)


@dataclass(frozen=True, slots=True)
class LlmUsage:
    """A study's spending (:meth:`LlmClient.usage`): its counters and the budget."""

    study: Study
    counts: UsageCounts
    budget: int

    @property
    def tokens(self) -> int:
        return self.counts.tokens

    @property
    def remaining(self) -> int:
        """Tokens left before the machine stops answering (0 when spent)."""
        return max(self.budget - self.counts.tokens, 0)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: the study, every counter, tokens, budget and what remains."""
        c = self.counts
        return {
            "collection_id": self.study.collection_id,
            "plan": self.study.plan,
            "purpose": self.study.purpose,
            "requests": c.requests,
            "cached": c.cached,
            "prompt_tokens": c.prompt_tokens,
            "completion_tokens": c.completion_tokens,
            "tokens": c.tokens,
            "malformed": c.malformed,
            "failed": c.failed,
            "refused": c.refused,
            "timeouts": c.timeouts,
            "budget": self.budget,
            "remaining": self.remaining,
        }


def study_usage(db: Database, study: Study, settings: Settings) -> LlmUsage:
    """A study's LLM spending and budget without a client (for reports and pages)."""
    return LlmUsage(study, read_usage(db, study), budget_of(study, settings))


@dataclass(slots=True)
class _Outcome:
    """What became of one prompt sent: ``answered`` (a reply text), ``unreadable`` (a 200
    without one, or over the size limit), ``failed`` (after every retry) or ``refused`` (over
    budget); the tokens charged, what went wrong and whether it was the deadline."""

    status: str
    reply: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None
    timed_out: bool = False


@dataclass(slots=True)
class CallReport:
    """A client's calls so far (:attr:`LlmClient.report`): prompts sent to the endpoint,
    those answered with a readable reply, those that failed (after every retry), timed out
    (of the failed), came back malformed or were refused over the budget, and the last
    failure's text. A caller tells from it whether the machine failed every call."""

    sent: int = 0
    answered: int = 0
    failed: int = 0
    timed_out: int = 0
    malformed: int = 0
    refused: int = 0
    last_error: str | None = None

    @property
    def no_opinion(self) -> int:
        """Calls sent that gave no opinion: failed or malformed."""
        return self.failed + self.malformed

    def to_dict(self) -> dict[str, Any]:
        return {
            "sent": self.sent,
            "answered": self.answered,
            "failed": self.failed,
            "timed_out": self.timed_out,
            "malformed": self.malformed,
            "refused": self.refused,
            "last_error": self.last_error,
        }


class _Spending:
    """The study's tokens as this batch goes: what the database said plus the replies so far
    (shared by the worker threads)."""

    def __init__(self, spent: int, budget: int) -> None:
        self.spent = spent
        self.budget = budget
        self._lock = threading.Lock()

    def allows(self) -> bool:
        with self._lock:
            return self.spent < self.budget

    def add(self, tokens: int) -> None:
        with self._lock:
            self.spent += tokens


class LlmClient:
    """An OpenAI-compatible chat-completions client for one study (module docstring).
    ``ask`` is the ``ask`` of :class:`labeling.machine.judges.LlmJudge`."""

    def __init__(
        self,
        db: Database,
        study: Study,
        *,
        settings: Settings,
        template: PromptTemplate = PAIRWISE_V2,
        model: str | None = None,
    ) -> None:
        self.db = db
        self.study = study
        self.template = template
        self.model = model if model is not None else settings.llm_model
        if not self.model:
            raise Invalid("no LLM model is set: set HEAPJUDGE_LLM_MODEL (the model name)")
        self.url = chat_url(settings.llm_base_url)
        self.retries = settings.llm_retries
        self.backoff = settings.llm_backoff_seconds
        self.max_backoff = settings.llm_max_backoff_seconds
        self.concurrency = settings.llm_concurrency
        self.deadline = settings.llm_timeout_seconds
        self.max_reply_bytes = settings.llm_max_reply_bytes
        self.budget = budget_of(study, settings)
        self.params = request_params(settings)
        self.report = CallReport()
        self._settings = settings  # the API key is read per request (llm_api_key)
        # httpx (with the click, rich and pygments of its command line) is imported when a
        # client is made, not with the module: memory at server start
        # (docs/performance.md#imports).
        self._http = make_http_client(self.deadline, self.concurrency)
        self._parse: Callable[[str | None], object] = (
            parse_pairwise if template.kind == "pairwise" else parse_graded
        )

    def __repr__(self) -> str:
        return (
            f"LlmClient(url={masked_url(self.url)!r}, model={self.model!r}, "
            f"template={self.template.key!r}, study={self.study!r})"
        )

    def close(self) -> None:
        """Close the HTTP connections."""
        self._http.close()

    def __enter__(self) -> LlmClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ the public calls
    def usage(self) -> LlmUsage:
        """The study's counters and budget, as stored."""
        return LlmUsage(self.study, read_usage(self.db, self.study), self.budget)

    def ask(self, prompts: Sequence[Messages]) -> list[str | None]:
        """One reply text per prompt (``None``: failed or over budget), cached replies first,
        the others sent ``llm_concurrency`` at a time; the new replies are cached and the
        counts added to the study's in one transaction."""
        keys = [cache_key(self.model, self.template, list(m), self.params) for m in prompts]
        known = cached_replies(self.db, keys)
        to_send: dict[str, Messages] = {}
        for key, messages in zip(keys, prompts, strict=True):
            if key not in known:
                to_send.setdefault(key, list(messages))
        outcomes = self._send_all(to_send) if to_send else {}
        replies: list[str | None] = []
        for key in keys:
            hit = known.get(key)
            got = outcomes.get(key)
            replies.append(hit.reply if hit else (got.reply if got else None))
        self._record(keys, known, outcomes, replies)
        return replies

    # ------------------------------------------------------------------ sending
    def _send_all(self, to_send: dict[str, Messages]) -> dict[str, _Outcome]:
        spending = _Spending(read_usage(self.db, self.study).tokens, self.budget)
        if not spending.allows():
            return {key: _Outcome("refused") for key in to_send}
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            futures = {
                key: pool.submit(self._send_one, messages, spending)
                for key, messages in to_send.items()
            }
            return {key: future.result() for key, future in futures.items()}

    def _headers(self) -> dict[str, str]:
        key = self._settings.llm_api_key()
        return {"Authorization": f"Bearer {key}"} if key else {}

    def exchange(self, messages: Messages) -> Exchange:
        """One attempt at one prompt (no retry, no cache, no budget): the endpoint check's
        probe (:func:`app.machine.check.check_endpoint`) and each attempt of :meth:`ask`."""
        body = {"model": self.model, "messages": messages, **self.params}
        return post_json(
            self._http,
            self.url,
            body,
            self._headers(),
            deadline_seconds=self.deadline,
            max_bytes=self.max_reply_bytes,
        )

    def _send_one(self, messages: Messages, spending: _Spending) -> _Outcome:
        """One prompt, retried (module docstring); never raises for the endpoint's faults."""
        for attempt in range(self.retries + 1):
            if not spending.allows():
                return _Outcome("refused")
            got = self.exchange(messages)
            if got.status == 200:
                return self._read_reply(got, messages, spending)
            problem = got.error or "no reply"
            if got.status is not None and got.status not in RETRY_STATUSES:
                log.warning("LLM request refused (%s); not retried", problem)
                return _Outcome("failed", error=problem)
            if attempt == self.retries:
                log.warning("LLM request failed after %d attempts (%s)", attempt + 1, problem)
                return _Outcome("failed", error=problem, timed_out=got.timed_out)
            wait = retry_wait(attempt, got.retry_after, self.backoff, self.max_backoff)
            log.info("LLM request %s; retry %d in %.2f s", problem, attempt + 1, wait)
            time.sleep(wait)
        return _Outcome("failed")  # not reached: the last attempt returns above

    def _read_reply(self, got: Exchange, messages: Messages, spending: _Spending) -> _Outcome:
        """The reply text and tokens of a 200; one without a reply text, or over the size
        limit, is malformed (and not cached). Tokens: :func:`charged_tokens` of each side, so
        the budget holds whatever the endpoint reports."""
        data: Any = None
        if got.body is not None:
            try:
                data = json.loads(got.body)
            except ValueError:
                data = None
        try:
            text = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            text = None
        usage = data.get("usage") if isinstance(data, dict) else None
        reported = usage if isinstance(usage, dict) else {}
        prompt_chars = sum(len(m.get("content", "")) for m in messages)
        # an abandoned reply was at least as long as what was read of it
        reply_chars = len(text) if isinstance(text, str) else self.max_reply_bytes * got.oversized
        tokens = (
            charged_tokens(reported.get("prompt_tokens"), prompt_chars),
            charged_tokens(reported.get("completion_tokens"), reply_chars),
        )
        spending.add(sum(tokens))
        if got.oversized:
            log.warning("LLM reply over %d bytes; abandoned, malformed", self.max_reply_bytes)
            return _Outcome("unreadable", None, *tokens, error=got.error)
        if not isinstance(text, str):
            problem = "the reply is not JSON" if data is None else "reply without a message text"
            log.warning("LLM reply unreadable (%s); counted as malformed", problem)
            return _Outcome("unreadable", None, *tokens, error=problem)
        return _Outcome("answered", text, *tokens)

    # ------------------------------------------------------------------ bookkeeping
    def _note(self, sent: list[_Outcome], readable: int, last_error: str | None) -> None:
        """Add a batch (``readable``: its replies that parse) to :attr:`report`."""
        r = self.report
        r.sent += sum(1 for o in sent if o.status != "refused")
        r.failed += sum(1 for o in sent if o.status == "failed")
        r.timed_out += sum(1 for o in sent if o.status == "failed" and o.timed_out)
        r.refused += sum(1 for o in sent if o.status == "refused")
        r.answered += readable
        r.malformed += sum(1 for o in sent if o.status in ("answered", "unreadable")) - readable
        if last_error is not None:
            r.last_error = last_error

    def _record(
        self,
        keys: list[str],
        known: dict[str, CachedReply],
        outcomes: dict[str, _Outcome],
        replies: list[str | None],
    ) -> None:
        """Cache the new replies and add this batch's counts (and its last failure) to the
        study's."""
        sent = list(outcomes.values())
        answered = {
            k: CachedReply(o.reply, o.prompt_tokens, o.completion_tokens)
            for k, o in outcomes.items()
            if o.reply is not None
        }
        unparsed_new = sum(1 for o in sent if o.reply is not None and self._parse(o.reply) is None)
        errors = [o.error for o in sent if o.error]
        if unparsed_new and not errors:
            errors.append(f"reply not readable as a {self.template.kind} answer")
        counts = UsageCounts(
            requests=sum(1 for o in sent if o.status in ("answered", "unreadable")),
            cached=sum(1 for k in keys if k in known),
            prompt_tokens=sum(o.prompt_tokens for o in sent),
            completion_tokens=sum(o.completion_tokens for o in sent),
            malformed=sum(1 for o in sent if o.status == "unreadable")
            + sum(1 for r in replies if r is not None and self._parse(r) is None),
            failed=sum(1 for o in sent if o.status == "failed"),
            refused=sum(1 for o in sent if o.status == "refused"),
            timeouts=sum(1 for o in sent if o.status == "failed" and o.timed_out),
        )
        readable = sum(1 for o in sent if o.status == "answered") - unparsed_new
        self._note(sent, readable, errors[-1] if errors else None)
        rows = {
            k: (self.model, self.template.key, self.template.hash, r) for k, r in answered.items()
        }
        store_batch(self.db, self.study, rows, counts, errors[-1] if errors else None)
