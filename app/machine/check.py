"""The endpoint check (docs/machine-judges.md#checking-the-endpoint): ask the configured LLM
one pair and say what came back, for ``heapjudge admin machine check``, ``POST
/api/v1/admin/machine/check`` and the button on the admin machine page.

The pair is the prompt page's example (:data:`app.machine.prompts.EXAMPLE_QUERY`, the tides
passage shown as A, the trench passage as B) rendered with the judge's template
(:data:`app.machine.judges.LLM_TEMPLATE`) and sent once, exactly as the judge sends a prompt
(the same deadline, size limit, parameters and key; :func:`app.machine.llm_http.post_json`),
but with no retry, no cache and no budget: a check must reach the endpoint, and its tokens
count on no study. The report: whether it worked (``ok``: a 200 whose reply reads as A or
B), the latency, the model configured and the model the endpoint says answered, the answer
(``A`` is right), and what went wrong (``error``), with the endpoint's URL masked. A model's
reply is never shown, only its length: it is the endpoint's text, not ours.
"""

from __future__ import annotations

import json
from typing import Any

from app.kernel.settings import Settings
from app.machine.judges import LLM_TEMPLATE
from app.machine.llm import chat_url, request_params
from app.machine.llm_http import make_http_client, masked_url, post_json
from app.machine.prompts import EXAMPLE_DOCUMENTS, EXAMPLE_QUERY
from labeling.machine.llm_prompts import parse_pairwise

__all__ = ["EXPECTED", "check_endpoint"]

#: The right answer to the example pair (the tides passage is shown as A).
EXPECTED = "A"


def _reading(body: bytes | None) -> tuple[str | None, str | None, str | None]:
    """(reply text, the model named in the reply, what is wrong with the body)."""
    try:
        data: Any = json.loads(body or b"")
    except ValueError:
        return None, None, "the reply is not JSON"
    model = data.get("model") if isinstance(data, dict) else None
    try:
        text = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return None, model if isinstance(model, str) else None, "reply without a message text"
    if not isinstance(text, str):
        return None, None, "reply without a message text"
    return text, model if isinstance(model, str) else None, None


def check_endpoint(settings: Settings) -> dict[str, Any]:
    """Ask the endpoint the example pair once (module docstring)."""
    report: dict[str, Any] = {
        "ok": False,
        "endpoint": masked_url(chat_url(settings.llm_base_url)),
        "model": settings.llm_model or None,
        "reply_model": None,
        "template": LLM_TEMPLATE.key,
        "latency_ms": None,
        "status": None,
        "answer": None,
        "expected": EXPECTED,
        "reply_chars": None,
        "error": None,
    }
    if not settings.llm_model:
        report["error"] = "not configured: set HEAPJUDGE_LLM_MODEL to the model's name"
        return report
    messages = LLM_TEMPLATE.render(EXAMPLE_QUERY, *EXAMPLE_DOCUMENTS)
    body = {"model": settings.llm_model, "messages": messages, **request_params(settings)}
    key = settings.llm_api_key()
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    with make_http_client(settings.llm_timeout_seconds, 1) as http:
        got = post_json(
            http,
            chat_url(settings.llm_base_url),
            body,
            headers,
            deadline_seconds=settings.llm_timeout_seconds,
            max_bytes=settings.llm_max_reply_bytes,
        )
    report["latency_ms"] = round(got.seconds * 1000.0, 1)
    report["status"] = got.status
    if got.status != 200 or got.body is None:
        report["error"] = got.error or "no reply"
        return report
    text, reply_model, problem = _reading(got.body)
    report["reply_model"] = reply_model
    if text is None:
        report["error"] = problem
        return report
    report["reply_chars"] = len(text)
    report["answer"] = parse_pairwise(text)
    if report["answer"] is None:
        report["error"] = f"reply not readable as A or B ({len(text)} characters)"
        return report
    report["ok"] = True
    return report
