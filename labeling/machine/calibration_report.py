"""A machine judge's calibration report from records of people's answers, and its reliability
diagram as SVG (docs/machine-judges.md#the-calibration-report).

A **record** is one person's answer on a pair the machine had (or was asked for) an opinion
on, oriented as the person saw the pair (:class:`CalibrationRecord`; as JSON Lines, one object
per line)::

    {"query_id": "q7", "left": "d3", "right": "d9", "first_shown": "left",
     "raw": 0.81, "calibrated": 0.74, "answer": "left"}

* ``raw``: the judge's raw P(left better) (optional; ``null`` or absent: not reported);
* ``calibrated``: its calibrated P(left better); ``null`` when it had no opinion;
* ``answer``: the person's outcome, ``left`` or ``right`` (``tie``, ``not_relevant`` and
  ``broken`` are counted and left out of the figures);
* ``first_shown``: which side the person saw first (``left`` unless the page said otherwise).

The report (:func:`report_from_records`): on the records with an opinion and a left/right
answer, everything :func:`labeling.machine.calibration.calibration_report` gives (accuracy and
count by confidence bin, ECE, Brier score, Cohen's κ between the machine's answers and
people's) for the calibrated probabilities and, where given, for the raw ones; and the judge's
**position bias against people**: ``machine_first_rate − people_first_rate``, the share of the
machine's answers that favour the first-shown document (among those with ``p ≠ 1/2``) minus the
share of people's answers on the same pairs that do. Positive: the judge picks the first-shown
document more often than people did on the same pairs (people's own position bias is taken
out, since both are measured on the same pairs).

The diagram (:func:`reliability_svg`): each bin's accuracy against its mean confidence, the
diagonal of perfect calibration, the count of each bin, drawn as dependency-free SVG in the
style of the study analysis plots (:func:`reliability_geometry` gives the numbers a page
template draws). Pure: no FastAPI, no SQLAlchemy.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from labeling.machine.calibration import CalibrationReport, ReliabilityBin, calibration_report

__all__ = [
    "ANSWERS",
    "CalibrationRecord",
    "JudgePositionBias",
    "RecordsReport",
    "parse_record",
    "read_records",
    "reliability_geometry",
    "reliability_svg",
    "report_from_records",
]

Side = Literal["left", "right"]
#: A person's outcomes on a pair; only ``left`` and ``right`` enter the figures.
ANSWERS = ("left", "right", "tie", "not_relevant", "broken")


@dataclass(frozen=True, slots=True)
class CalibrationRecord:
    """One person's answer on a pair the machine had an opinion on (module docstring)."""

    answer: str
    calibrated: float | None
    raw: float | None = None
    first_shown: Side = "left"
    query_id: str | None = None
    left: str | None = None
    right: str | None = None

    def __post_init__(self) -> None:
        if self.answer not in ANSWERS:
            raise ValueError(f'"answer" must be one of {", ".join(ANSWERS)}, got {self.answer!r}')
        if self.first_shown not in ("left", "right"):
            raise ValueError(f'"first_shown" must be left or right, got {self.first_shown!r}')
        for name in ("calibrated", "raw"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, float) and 0.0 <= value <= 1.0):
                raise ValueError(f'"{name}" must be a probability in [0, 1] or null')


def _probability(obj: Mapping[str, Any], name: str) -> float | None:
    value = obj.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f'"{name}" must be a number in [0, 1] or null, got {value!r}')
    return float(value)


def _text(obj: Mapping[str, Any], name: str) -> str | None:
    value = obj.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f'"{name}" must be a string')
    return str(value)


def parse_record(obj: Any) -> CalibrationRecord:
    """A record from one decoded JSON object; ValueError says what is wrong."""
    if not isinstance(obj, dict):
        raise ValueError("each record must be a JSON object")
    for key in ("answer", "calibrated"):
        if key not in obj:
            raise ValueError(f'missing key "{key}"')
    first = obj.get("first_shown", "left")
    if first not in ("left", "right"):
        raise ValueError(f'"first_shown" must be left or right, got {first!r}')
    return CalibrationRecord(
        answer=str(obj["answer"]),
        calibrated=_probability(obj, "calibrated"),
        raw=_probability(obj, "raw"),
        first_shown="left" if first == "left" else "right",
        query_id=_text(obj, "query_id"),
        left=_text(obj, "left"),
        right=_text(obj, "right"),
    )


def read_records(lines: Iterable[str], *, source: str = "records") -> list[CalibrationRecord]:
    """Records from JSON Lines (blank lines skipped); errors name ``source`` and the line."""
    out: list[CalibrationRecord] = []
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            out.append(parse_record(json.loads(line)))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{source}:{lineno}: invalid JSON: {exc.msg}") from None
        except (ValueError, RecursionError) as exc:
            raise ValueError(f"{source}:{lineno}: {exc}") from None
    return out


@dataclass(frozen=True, slots=True)
class JudgePositionBias:
    """How much more often the judge's answers favour the first-shown document than people's
    on the same pairs (module docstring)."""

    pairs: int
    machine_first_rate: float
    people_first_rate: float

    @property
    def difference(self) -> float:
        return self.machine_first_rate - self.people_first_rate


@dataclass(frozen=True, slots=True)
class RecordsReport:
    """The calibration report of a set of records (:func:`report_from_records`)."""

    records: int
    other_answers: int
    calibrated: CalibrationReport
    raw: CalibrationReport | None
    position: JudgePositionBias

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (NaN as ``None``)."""

        def clean(v: float) -> float | None:
            return None if math.isnan(v) else v

        p = self.position
        return {
            "records": self.records,
            "other_answers": self.other_answers,
            "calibrated": self.calibrated.to_dict(),
            "raw": None if self.raw is None else self.raw.to_dict(),
            "position_bias": {
                "pairs": p.pairs,
                "machine_first_rate": clean(p.machine_first_rate),
                "people_first_rate": clean(p.people_first_rate),
                "difference": clean(p.difference),
            },
        }


def report_from_records(records: Iterable[CalibrationRecord], *, n_bins: int = 10) -> RecordsReport:
    """The report (module docstring). Records whose answer is not left/right are counted in
    ``other_answers``; those without a calibrated opinion in ``calibrated.no_opinion``."""
    rows = list(records)
    decided = [r for r in rows if r.answer in ("left", "right")]
    calibrated = [math.nan if r.calibrated is None else r.calibrated for r in decided]
    left_better = [1.0 if r.answer == "left" else 0.0 for r in decided]
    with_raw = [(r.raw, 1.0 if r.answer == "left" else 0.0) for r in decided if r.raw is not None]
    raw = None
    if with_raw:
        raw_p, raw_y = zip(*with_raw, strict=True)
        raw = calibration_report(list(raw_p), list(raw_y), n_bins=n_bins)
    leaning = [
        (r.calibrated, r) for r in decided if r.calibrated is not None and r.calibrated != 0.5
    ]
    machine_first = [(p > 0.5) == (r.first_shown == "left") for p, r in leaning]
    people_first = [r.answer == r.first_shown for _, r in leaning]
    position = JudgePositionBias(
        len(leaning),
        sum(machine_first) / len(leaning) if leaning else math.nan,
        sum(people_first) / len(leaning) if leaning else math.nan,
    )
    return RecordsReport(
        records=len(rows),
        other_answers=len(rows) - len(decided),
        calibrated=calibration_report(calibrated, left_better, n_bins=n_bins),
        raw=raw,
        position=position,
    )


# ============================================================================ the diagram
WIDTH, HEIGHT = 360, 300
LEFT, RIGHT, TOP, BOTTOM = 48, 12, 14, 44


def reliability_geometry(bins: Iterable[ReliabilityBin]) -> dict[str, Any]:
    """The diagram's numbers in SVG pixels: a bar per bin (its accuracy, x over the bin's
    confidence range ``[0.5, 1]``), a point at (mean confidence, accuracy), the count above,
    the diagonal ``accuracy = confidence`` and the axes' ticks."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(conf: float) -> float:
        return round(LEFT + (conf - 0.5) / 0.5 * plot_w, 2)

    def y(acc: float) -> float:
        return round(TOP + (1.0 - acc) * plot_h, 2)

    bars = []
    for b in bins:
        if b.count == 0:
            continue
        bars.append(
            {
                "x": x(b.lower) + 1,
                "width": round(x(b.upper) - x(b.lower) - 2, 2),
                "y": y(b.accuracy),
                "height": round(plot_h - (y(b.accuracy) - TOP), 2),
                "cx": x(b.mean_confidence),
                "cy": y(b.accuracy),
                "count": b.count,
                "title": (
                    f"confidence {b.lower:.2f}–{b.upper:.2f}: {b.count} answers, accuracy "
                    f"{b.accuracy:.3f}, mean confidence {b.mean_confidence:.3f}"
                ),
            }
        )
    return {
        "width": WIDTH,
        "height": HEIGHT,
        "left": LEFT,
        "top": TOP,
        "axis_x": x(1.0),
        "axis_y": y(0.0),
        "diagonal": {"x1": x(0.5), "y1": y(0.5), "x2": x(1.0), "y2": y(1.0)},
        "x_ticks": [{"x": x(t), "label": f"{t:.1f}"} for t in (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)],
        "y_ticks": [{"y": y(t), "label": f"{t:.1f}"} for t in (0.0, 0.25, 0.5, 0.75, 1.0)],
        "bars": bars,
    }


def reliability_svg(report: CalibrationReport, caption: str = "Reliability diagram") -> str:
    """The reliability diagram of ``report`` as one ``<svg>`` element (module docstring),
    with ``caption`` as its accessible name; every text is escaped."""
    g = reliability_geometry(report.bins)
    label = html.escape(caption)
    parts = [
        f'<svg role="img" aria-label="{label}" width="{g["width"]}" height="{g["height"]}" '
        f'class="plot-svg" viewBox="0 0 {g["width"]} {g["height"]}" '
        'xmlns="http://www.w3.org/2000/svg" font-family="system-ui, sans-serif" font-size="11">',
        f"<title>{label}</title>",
        f'<line x1="{g["left"]}" y1="{g["axis_y"]}" x2="{g["axis_x"]}" y2="{g["axis_y"]}" '
        'stroke="#555"/>',
        f'<line x1="{g["left"]}" y1="{g["top"]}" x2="{g["left"]}" y2="{g["axis_y"]}" '
        'stroke="#555"/>',
    ]
    for t in g["x_ticks"]:
        parts.append(
            f'<text x="{t["x"]}" y="{g["axis_y"] + 14}" text-anchor="middle" '
            f'fill="#333">{t["label"]}</text>'
        )
    for t in g["y_ticks"]:
        parts.append(
            f'<text x="{g["left"] - 6}" y="{t["y"] + 4}" text-anchor="end" '
            f'fill="#333">{t["label"]}</text>'
        )
    for b in g["bars"]:
        parts.append(
            f"<g><title>{html.escape(b['title'])}</title>"
            f'<rect x="{b["x"]}" y="{b["y"]}" width="{b["width"]}" height="{b["height"]}" '
            'fill="#9ecae1" stroke="#3182bd"/>'
            f'<circle cx="{b["cx"]}" cy="{b["cy"]}" r="3" fill="#08519c"/>'
            f'<text x="{b["x"] + b["width"] / 2:.2f}" y="{b["y"] - 4}" text-anchor="middle" '
            f'fill="#333" font-size="9">{b["count"]}</text></g>'
        )
    d = g["diagonal"]
    parts += [
        f'<line x1="{d["x1"]}" y1="{d["y1"]}" x2="{d["x2"]}" y2="{d["y2"]}" stroke="#d62728" '
        'stroke-dasharray="4 3"/>',
        f'<text x="{(g["left"] + g["axis_x"]) / 2}" y="{g["height"] - 8}" '
        'text-anchor="middle" fill="#333">machine confidence</text>',
        f'<text x="12" y="{(g["top"] + g["axis_y"]) / 2}" text-anchor="middle" fill="#333" '
        f'transform="rotate(-90 12 {(g["top"] + g["axis_y"]) / 2})">agreement with people</text>',
        "</svg>",
    ]
    return "\n".join(parts)
