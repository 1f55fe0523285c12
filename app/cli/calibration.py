"""The ``heapjudge analysis`` group: ``calibration``, a machine judge's calibration report
from a collection's stored judgments or from a file of records
(docs/machine-judges.md#the-calibration-report).

    heapjudge analysis calibration COLLECTION [--judge bm25] [--bins 10] [--json] [--svg F]
    heapjudge analysis calibration --file records.jsonl --bins 5 --svg reliability.svg --json

The report is built by :func:`app.analysis.calibration.calibration_report` (a collection)
or :func:`labeling.machine.calibration_report.report_from_records` (a file); this module
prints it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import typer

from app.cli.conventions import Command, Group, fail, usage_error
from app.cli.database import DB_OPTION, database

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


def format_collection(data: dict[str, Any]) -> str:
    """The collection's report (:func:`app.analysis.calibration.calibration_report`) as
    text: per judge, all the records (:func:`format_report`), then the audits and the hard
    questions in one line each."""
    coll = data["collection"]
    if not data["judges"]:
        return f"{coll['name']}: no machine answers yet (no task has a machine judge)"
    lines: list[str] = []
    for j in data["judges"]:
        lines += ["", f"{coll['name']} · {j['judge']} ({j['source']}): {j['tasks']} tasks"]
        lines.append(format_report(j["report"]))
        for key, what in (("audits", "audits"), ("hard", "not sure enough to answer")):
            lines.append("  " + _summary(what, j[key]["calibrated"]))
    return "\n".join(lines[1:])


def _from_file(file: Path, bins: int, svg: Path | None) -> dict[str, Any]:
    from labeling.machine.calibration_report import (
        read_records,
        reliability_svg,
        report_from_records,
    )

    try:
        with file.open(encoding="utf-8-sig") as fh:
            records = read_records(fh, source=str(file))
    except UnicodeDecodeError:
        fail(f"{file}: not UTF-8 text")
    except (ValueError, OSError) as exc:
        fail(str(exc))
    report = report_from_records(records, n_bins=bins)
    if svg is not None:
        _write(svg, reliability_svg(report.calibrated))
    return report.to_dict()


def _write(svg: Path, text: str) -> None:
    try:
        svg.write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        fail(f"{svg}: {exc.strerror or exc}")


def _from_database(
    collection: str, judge: str | None, bins: int, svg: Path | None, database_url: str | None
) -> dict[str, Any]:
    from app.analysis.calibration import calibration_report, calibration_svg
    from app.analysis.service import find_collection_id
    from app.kernel.errors import DomainError

    with database(database_url) as db:
        try:
            cid = find_collection_id(collection, db=db)
            data = calibration_report(cid, db=db, judge=judge, bins=bins)
            if svg is not None:
                _write(svg, calibration_svg(cid, db=db, judge=judge, bins=bins))
        except DomainError as err:
            fail(str(err.detail))
    return data


@app.command("calibration", cls=Command)
def calibration_cmd(
    collection: str | None = typer.Argument(
        None, help="Collection name (or numeric id): the report from its stored judgments."
    ),
    file: Path | None = typer.Option(
        None,
        "--file",
        exists=True,
        dir_okay=False,
        help="Instead of a collection: JSON Lines records (answer, calibrated, raw, "
        "first_shown; docs/machine-judges.md).",
    ),
    judge: str | None = typer.Option(
        None, "--judge", help="One judge of the collection: its version or its source (bm25)."
    ),
    bins: int = typer.Option(10, "--bins", help="Equal-width confidence bins over [0.5, 1]."),
    svg: Path | None = typer.Option(
        None,
        "--svg",
        dir_okay=False,
        help="Write the reliability diagram to this SVG file (a collection: of its one judge, "
        "or of --judge).",
    ),
    as_json: bool = typer.Option(False, "--json/--no-json", help="Print one JSON object."),
    database_url: str | None = DB_OPTION,
) -> None:
    """A machine judge's calibration against people's answers: accuracy by confidence bin,
    ECE, Brier score, Cohen's kappa, position bias, and the reliability diagram; of a
    collection's judges from its judgments, or of a records file (--file)."""
    if (collection is None) == (file is None):
        usage_error("give either COLLECTION or --file FILE (not both)")
    if bins < 1:
        usage_error(f"--bins must be at least 1, got {bins}")
    if file is not None:
        if judge is not None:
            usage_error("--judge applies to a collection, not to --file")
        data = _from_file(file, bins, svg)
        typer.echo(json.dumps(data, ensure_ascii=False) if as_json else format_report(data))
        return
    assert collection is not None
    data = _from_database(collection, judge, bins, svg, database_url)
    typer.echo(json.dumps(data, ensure_ascii=False) if as_json else format_collection(data))
