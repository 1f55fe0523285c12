"""The LLM judge's versioned prompt templates as the admin sees them
(docs/machine-judges.md#llm-prompts): ``GET /api/v1/admin/machine/prompts[/{key}]``, the admin
page ``/admin/machine/prompts`` and ``heapjudge admin prompts [KEY]`` all show what
:func:`prompt_templates` and :func:`prompt_template` return.

Each template (:data:`labeling.machine.llm_prompts.TEMPLATES`) is shown with its key, name,
version, kind, hash (:attr:`labeling.machine.llm_prompts.PromptTemplate.hash`, the
``prompt_hash`` recorded with every machine answer), document cut-off, system and user text,
an example rendering (the chat messages :meth:`PromptTemplate.render` builds for a fixed
example query and documents) and whether the ``llm`` judge uses it
(:data:`app.machine.judges.LLM_TEMPLATE`) or the ``llm`` prior does
(:data:`app.machine.grades.GRADE_TEMPLATE`). The judge's configuration comes from the settings:
the model, the endpoint (without any user, password, query or fragment of its URL), the
request parameters, the judge's version, and the *name* of the environment variable holding
the API key with whether it is set. The key's value is never read into an answer.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

from app.kernel.errors import NotFound
from app.kernel.settings import Settings
from app.machine.grades import GRADE_TEMPLATE
from app.machine.judges import LLM_TEMPLATE, llm_judge_version
from app.machine.llm import TEMPERATURE
from app.machine.llm_http import masked_url
from labeling.machine import llm_prompts
from labeling.machine.llm_prompts import PromptTemplate

__all__ = [
    "EXAMPLE_DOCUMENTS",
    "EXAMPLE_QUERY",
    "judge_config",
    "prompt_template",
    "prompt_templates",
    "template_view",
]

#: The example every template is rendered with (a pairwise template shows both documents, the
#: first as A; a graded one the first).
EXAMPLE_QUERY = "what causes ocean tides"
EXAMPLE_DOCUMENTS = (
    "Tides are the rise and fall of the sea caused by the gravity of the Moon & the Sun "
    "acting on the Earth's oceans.",
    "The Mariana Trench is the deepest part of the oceans, nearly 11 km below sea level.",
)


def public_url(url: str) -> str:
    """``url`` without user, password, query and fragment: what may be shown of an endpoint
    whose URL could carry a credential."""
    parts = urlsplit(masked_url(url))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def judge_config(settings: Settings) -> dict[str, Any]:
    """The ``llm`` judge's configuration as the settings choose it (module docstring)."""
    configured = bool(settings.llm_model)
    return {
        "source": "llm",
        "configured": configured,
        "model": settings.llm_model or None,
        "base_url": public_url(settings.llm_base_url),
        "template": LLM_TEMPLATE.key,
        "template_hash": LLM_TEMPLATE.hash,
        "version": llm_judge_version(settings) if configured else None,
        "temperature": TEMPERATURE,
        "max_tokens": settings.llm_max_tokens,
        "api_key_env": settings.llm_api_key_env,
        "api_key_set": settings.llm_api_key() is not None,
    }


def template_view(template: PromptTemplate) -> dict[str, Any]:
    """One template as shown: its fields, hash, example rendering and whether the ``llm``
    judge uses it."""
    first, second = EXAMPLE_DOCUMENTS
    documents = [first, second] if template.kind == "pairwise" else [first]
    messages = template.render(EXAMPLE_QUERY, *documents)
    return {
        "key": template.key,
        "name": template.name,
        "version": template.version,
        "kind": template.kind,
        "hash": template.hash,
        "max_doc_chars": template.max_doc_chars,
        "system": template.system,
        "user": template.user,
        "used_by_llm_judge": template.key == LLM_TEMPLATE.key,
        "used_by_llm_prior": template.key == GRADE_TEMPLATE.key,
        "example": {"query": EXAMPLE_QUERY, "documents": documents, "messages": messages},
    }


def prompt_templates(*, settings: Settings) -> dict[str, Any]:
    """Every template (by key) and the ``llm`` judge's configuration."""
    return {
        "judge": judge_config(settings),
        "templates": [template_view(t) for t in llm_prompts.TEMPLATES.values()],
    }


def prompt_template(*, key: str) -> dict[str, Any]:
    """The template ``key`` (``name@vN``, e.g. ``pairwise@v1``); 404 naming the known keys."""
    template = llm_prompts.TEMPLATES.get(key)
    if template is None:
        known = ", ".join(sorted(llm_prompts.TEMPLATES))
        raise NotFound(f"no prompt template {key!r} (known: {known})")
    return template_view(template)
