"""CLI command ``heapjudge admin machine check [--json]``: ask the configured LLM endpoint one
pair and print the latency, the model and any error (:func:`app.machine.check.check_endpoint`,
as ``POST /api/v1/admin/machine/check`` and the admin machine page's button do; no database).
Exits 1 when the check fails, so a deployment script can stop on it."""

from __future__ import annotations

import json
from typing import Any

import typer

from app.cli.conventions import FAILURE, Command, Group
from app.cli.database import settings_for

app = typer.Typer(cls=Group, help="The machine judge: check its LLM endpoint.")


def format_check(report: dict[str, Any]) -> list[str]:
    """The check's report as lines (never the API key, the URL masked)."""
    state = "ok" if report["ok"] else "FAILED"
    latency = "-" if report["latency_ms"] is None else f"{report['latency_ms']:.0f} ms"
    lines = [
        f"machine check: {state}",
        f"  endpoint {report['endpoint']}, model {report['model'] or '(not set)'}"
        + (f", answered by {report['reply_model']}" if report["reply_model"] else ""),
        f"  template {report['template']}, latency {latency}, HTTP {report['status'] or '-'}",
    ]
    if report["answer"] is not None:
        right = "right" if report["answer"] == report["expected"] else "wrong"
        lines.append(f"  answer {report['answer']} ({right}: {report['expected']} expected)")
    if report["error"]:
        lines.append(f"  error: {report['error']}")
    return lines


@app.command("check", cls=Command)
def check_cmd(
    as_json: bool = typer.Option(False, "--json/--no-json", help="Print the report as JSON."),
) -> None:
    """Ask the LLM endpoint (HEAPJUDGE_LLM_BASE_URL, HEAPJUDGE_LLM_MODEL) one example pair, once,
    with no cache and no budget: whether it answered, the latency, the model and any error."""
    from app.machine.check import check_endpoint

    report = check_endpoint(settings_for())
    if as_json:
        typer.echo(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        typer.echo("\n".join(format_check(report)))
    if not report["ok"]:
        raise typer.Exit(FAILURE)
