"""CLI command ``heapjudge admin prompts [KEY] [--json]``: the LLM judge's versioned prompt
templates and its configuration, as ``GET /api/v1/admin/machine/prompts[/{key}]`` and the admin
page ``/admin/machine/prompts`` show them (:mod:`app.machine.prompts`; no database)."""

from __future__ import annotations

import json
import textwrap
from typing import Any

import typer

from app.cli.conventions import Command, report_service_error
from app.cli.database import settings_for

app = typer.Typer()


def format_judge(judge: dict[str, Any]) -> list[str]:
    """The ``llm`` judge's configuration as lines (never the API key's value)."""
    key_state = "set" if judge["api_key_set"] else "not set"
    return [
        f"llm judge: model {judge['model'] or '(not set: HEAPJUDGE_LLM_MODEL)'} at "
        f"{judge['base_url']}",
        f"  template {judge['template']} (hash {judge['template_hash']}), version "
        f"{judge['version'] or '-'}",
        f"  temperature {judge['temperature']}, max tokens {judge['max_tokens']}, "
        f"API key from ${judge['api_key_env']} ({key_state})",
    ]


def format_template(t: dict[str, Any]) -> list[str]:
    """One template as lines: its key, kind, hash, texts and example messages."""
    used = "  [used by the llm judge]" if t["used_by_llm_judge"] else ""
    used += "  [used by the llm prior]" if t["used_by_llm_prior"] else ""
    lines = [
        f"{t['key']}{used}",
        f"  kind {t['kind']}, name {t['name']}, version {t['version']}, hash {t['hash']}, "
        f"documents cut to {t['max_doc_chars']} characters",
        "  system:",
        textwrap.indent(t["system"], "    "),
        "  user:",
        textwrap.indent(t["user"], "    "),
        f"  example ({t['example']['query']!r}):",
    ]
    for m in t["example"]["messages"]:
        lines += [f"    {m['role']}:", textwrap.indent(m["content"], "      ")]
    return lines


@app.command("prompts", cls=Command)
def prompts_cmd(
    key: str | None = typer.Argument(
        None, help="A template key (pairwise@v1, graded@v1); every template when omitted."
    ),
    as_json: bool = typer.Option(False, "--json/--no-json", help="Print the report as JSON."),
) -> None:
    """The LLM judge's versioned prompt templates (key, kind, hash, system and user text, an
    example rendering) and which one the judge asks, with its configuration."""
    from app.kernel.errors import DomainError
    from app.machine.prompts import prompt_template, prompt_templates

    try:
        report = (
            prompt_template(key=key)
            if key is not None
            else prompt_templates(settings=settings_for())
        )
    except DomainError as exc:
        report_service_error(exc)
    if as_json:
        typer.echo(json.dumps(report, ensure_ascii=False, indent=2))
        return
    if key is not None:
        typer.echo("\n".join(format_template(report)))
        return
    lines = format_judge(report["judge"])
    for t in report["templates"]:
        lines += ["", *format_template(t)]
    typer.echo("\n".join(lines))
