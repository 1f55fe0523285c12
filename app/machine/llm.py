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
  tasks without a plan). Before each request the study's tokens (prompt + completion, as the
  endpoint's ``usage`` reports them) are compared with the budget; once they reach it every
  prompt not in the cache gets ``None`` (counted ``refused``), so people answer instead. The
  requests already in flight finish, so the spending can pass the budget by at most
  ``llm_concurrency`` requests.
* **Retries.** 429, 5xx, connection errors and timeouts are retried up to ``llm_retries``
  times, waiting ``Retry-After`` (seconds or an HTTP date) when the endpoint sends it, else
  ``llm_backoff_seconds · 2^attempt``, at most ``llm_max_backoff_seconds``. Other 4xx (a wrong
  model name, a refused key) are not retried. A prompt that still fails gets ``None``
  (counted ``failed``; not cached, so a later run asks again).
* **Malformed replies** (that :func:`labeling.machine.llm_prompts.parse_pairwise` (or
  ``parse_graded`` for a graded template) cannot read, or a 200 without a reply text) are
  returned as they are and counted ``malformed``; the judge reads them as no opinion.
* **The API key** is read from the environment variable named by ``llm_api_key_env`` for each
  request and sent only in its ``Authorization`` header (none when the variable is unset or
  empty). The client does not keep it; it is never stored, logged, put in an error message or
  in the client's ``repr``.

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
from typing import TYPE_CHECKING, Any

from app.kernel.db import Database
from app.kernel.errors import Invalid
from app.kernel.settings import Settings
from app.machine.repository import (
    CachedReply,
    Study,
    UsageCounts,
    cached_replies,
    read_usage,
    store_batch,
)
from labeling.machine.llm_prompts import PAIRWISE_V1, PromptTemplate, parse_graded, parse_pairwise

if TYPE_CHECKING:
    import httpx

__all__ = [
    "LlmClient",
    "LlmUsage",
    "cache_key",
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
            "requests": c.requests,
            "cached": c.cached,
            "prompt_tokens": c.prompt_tokens,
            "completion_tokens": c.completion_tokens,
            "tokens": c.tokens,
            "malformed": c.malformed,
            "failed": c.failed,
            "refused": c.refused,
            "budget": self.budget,
            "remaining": self.remaining,
        }


def study_usage(db: Database, study: Study, settings: Settings) -> LlmUsage:
    """A study's LLM spending and budget without a client (for reports and pages)."""
    return LlmUsage(study, read_usage(db, study), settings.llm_token_budget)


@dataclass(slots=True)
class _Outcome:
    """What became of one prompt sent: ``answered`` (a reply text), ``unreadable`` (a 200
    without one), ``failed`` (after every retry) or ``refused`` (over budget); the tokens the
    endpoint reported."""

    status: str
    reply: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0


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
        template: PromptTemplate = PAIRWISE_V1,
        model: str | None = None,
    ) -> None:
        self.db = db
        self.study = study
        self.template = template
        self.model = model if model is not None else settings.llm_model
        if not self.model:
            raise Invalid("no LLM model is set: set HEAPJUDGE_LLM_MODEL (the model name)")
        self.base_url = settings.llm_base_url.rstrip("/")
        self.retries = settings.llm_retries
        self.backoff = settings.llm_backoff_seconds
        self.max_backoff = settings.llm_max_backoff_seconds
        self.concurrency = settings.llm_concurrency
        self.budget = settings.llm_token_budget
        self.params = request_params(settings)
        self._settings = settings  # the API key is read per request (llm_api_key)
        # httpx (with the click, rich and pygments of its command line) is imported when a
        # client is made, not with the module: memory at server start
        # (docs/performance.md#imports).
        import httpx

        self._http = httpx.Client(
            timeout=httpx.Timeout(settings.llm_timeout_seconds),
            limits=httpx.Limits(max_connections=self.concurrency),
        )
        self._parse: Callable[[str | None], object] = (
            parse_pairwise if template.kind == "pairwise" else parse_graded
        )

    def __repr__(self) -> str:
        return (
            f"LlmClient(base_url={self.base_url!r}, model={self.model!r}, "
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

    def _send_one(self, messages: Messages, spending: _Spending) -> _Outcome:
        """One prompt, retried (module docstring); never raises for the endpoint's faults."""
        import httpx  # loaded by __init__ already

        body = {"model": self.model, "messages": messages, **self.params}
        url = f"{self.base_url}/chat/completions"
        for attempt in range(self.retries + 1):
            if not spending.allows():
                return _Outcome("refused")
            retry_after: str | None = None
            try:
                response = self._http.post(url, json=body, headers=self._headers())
            except httpx.TransportError as exc:  # no connection, a timeout, a broken stream
                problem = f"{type(exc).__name__}"
            else:
                if response.status_code == 200:
                    return self._read_reply(response, messages, spending)
                problem = f"HTTP {response.status_code}"
                if response.status_code not in RETRY_STATUSES:
                    log.warning("LLM request refused (%s); not retried", problem)
                    return _Outcome("failed")
                retry_after = response.headers.get("retry-after")
            if attempt == self.retries:
                log.warning("LLM request failed after %d attempts (%s)", attempt + 1, problem)
                return _Outcome("failed")
            wait = retry_wait(attempt, retry_after, self.backoff, self.max_backoff)
            log.info("LLM request %s; retry %d in %.2f s", problem, attempt + 1, wait)
            time.sleep(wait)
        return _Outcome("failed")  # not reached: the last attempt returns above

    def _read_reply(
        self, response: httpx.Response, messages: Messages, spending: _Spending
    ) -> _Outcome:
        """The reply text and token counts of a 200; one without a reply text is malformed
        (and not cached). Without ``usage`` in the response the tokens are estimated
        (:func:`estimated_tokens`), so the budget still holds."""
        try:
            data: Any = response.json()
        except ValueError:
            data = None
        try:
            text = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            text = None
        usage = data.get("usage") if isinstance(data, dict) else None
        reported = usage if isinstance(usage, dict) else {}
        p_tokens, c_tokens = reported.get("prompt_tokens"), reported.get("completion_tokens")
        if isinstance(p_tokens, int) and isinstance(c_tokens, int):
            tokens = (max(p_tokens, 0), max(c_tokens, 0))
        else:
            prompt_chars = sum(len(m.get("content", "")) for m in messages)
            reply_chars = len(text) if isinstance(text, str) else 0
            tokens = (estimated_tokens(prompt_chars), estimated_tokens(reply_chars))
        spending.add(sum(tokens))
        if not isinstance(text, str):
            log.warning("LLM reply without a message text; counted as malformed")
            return _Outcome("unreadable", None, *tokens)
        return _Outcome("answered", text, *tokens)

    # ------------------------------------------------------------------ bookkeeping
    def _record(
        self,
        keys: list[str],
        known: dict[str, CachedReply],
        outcomes: dict[str, _Outcome],
        replies: list[str | None],
    ) -> None:
        """Cache the new replies and add this batch's counts to the study's."""
        sent = list(outcomes.values())
        answered = {
            k: CachedReply(o.reply, o.prompt_tokens, o.completion_tokens)
            for k, o in outcomes.items()
            if o.reply is not None
        }
        counts = UsageCounts(
            requests=sum(1 for o in sent if o.status in ("answered", "unreadable")),
            cached=sum(1 for k in keys if k in known),
            prompt_tokens=sum(o.prompt_tokens for o in sent),
            completion_tokens=sum(o.completion_tokens for o in sent),
            malformed=sum(1 for o in sent if o.status == "unreadable")
            + sum(1 for r in replies if r is not None and self._parse(r) is None),
            failed=sum(1 for o in sent if o.status == "failed"),
            refused=sum(1 for o in sent if o.status == "refused"),
        )
        rows = {
            k: (self.model, self.template.key, self.template.hash, r) for k, r in answered.items()
        }
        store_batch(self.db, self.study, rows, counts)
