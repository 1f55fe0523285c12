"""The ``heapjudge analysis`` group: ``calibration``, a machine judge's calibration report
from a file of records (docs/machine-judges.md#the-calibration-report).

    heapjudge analysis calibration --file records.jsonl
    heapjudge analysis calibration --file records.jsonl --bins 5 --svg reliability.svg --json

The report is built by :func:`labeling.machine.calibration_report.report_from_records`; this
module reads the file and prints it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import typer

from app.cli.conventions import Command, Group, fail, usage_error

app = typer.Typer(cls=Group, help="Analyses: a machine judge's calibration against people.")


def _num(x: float | None, digits: int = 3) -> str:
    return "n/a" if x is None or math.isnan(x) else f"{x:.{digits}f}"


def _summary(name: str, part: dict[str, Any]) -> str:
    return (
        f"{name}: {part['count']} answers, accuracy {_num(part['accuracy'])}, "
        f"ECE {_num(part['ece'])}, Brier {_num(part['brier'])}, "
        f"Cohen's kappa {_num(part['kappa'])}"
    )


def format_report(report: dict[str, Any]) -> str:
    """The report (``RecordsReport.to_dict()``) as text: the figures, the position bias and
    the reliability table of the calibrated probabilities."""
    cal, raw, pos = report["calibrated"], report["raw"], report["position_bias"]
    lines = [
        f"{report['records']} records: {cal['count']} with an opinion and a left/right answer, "
        f"{cal['no_opinion']} without an opinion, {report['other_answers']} other answers "
        "(tie, not relevant, broken)",
        _summary("calibrated", cal),
    ]
    if raw is not None:
        lines.append(_summary("raw", raw))
    if pos["pairs"]:
        lines.append(
            f"position bias: the machine favours the first-shown document in "
            f"{100 * pos['machine_first_rate']:.1f}% of {pos['pairs']} answers, people in "
            f"{100 * pos['people_first_rate']:.1f}% on the same pairs "
            f"(difference {100 * pos['difference']:+.1f} points)"
        )
    lines.append(f"{'confidence':<16}{'count':>7}{'mean conf':>11}{'accuracy':>10}")
    for b in cal["bins"]:
        lines.append(
            f"[{b['lower']:.2f}, {b['upper']:.2f}{']' if b['upper'] == 1.0 else ')'}"
            f"{'':<4}{b['count']:>7}{_num(b['mean_confidence']):>11}{_num(b['accuracy']):>10}"
        )
    return "\n".join(lines)


@app.command("calibration", cls=Command)
def calibration_cmd(
    file: Path = typer.Option(
        ...,
        "--file",
        exists=True,
        dir_okay=False,
        help="JSON Lines: answer, calibrated, raw, first_shown (docs/machine-judges.md).",
    ),
    bins: int = typer.Option(10, "--bins", help="Equal-width confidence bins over [0.5, 1]."),
    svg: Path | None = typer.Option(
        None, "--svg", dir_okay=False, help="Write the reliability diagram to this SVG file."
    ),
    as_json: bool = typer.Option(False, "--json/--no-json", help="Print one JSON object."),
) -> None:
    """A machine judge's calibration against people's answers: accuracy by confidence bin,
    ECE, Brier score, Cohen's kappa, position bias, and the reliability diagram."""
    from labeling.machine.calibration_report import (
        read_records,
        reliability_svg,
        report_from_records,
    )

    if bins < 1:
        usage_error(f"--bins must be at least 1, got {bins}")
    try:
        with file.open(encoding="utf-8-sig") as fh:
            records = read_records(fh, source=str(file))
    except UnicodeDecodeError:
        fail(f"{file}: not UTF-8 text")
    except (ValueError, OSError) as exc:
        fail(str(exc))
    report = report_from_records(records, n_bins=bins)
    if svg is not None:
        try:
            svg.write_text(reliability_svg(report.calibrated) + "\n", encoding="utf-8")
        except OSError as exc:
            fail(f"{svg}: {exc.strerror or exc}")
    data = report.to_dict()
    typer.echo(json.dumps(data, ensure_ascii=False) if as_json else format_report(data))
