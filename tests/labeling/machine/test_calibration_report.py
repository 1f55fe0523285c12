"""The calibration report from records (labeling.machine.calibration_report) on a small
example computed by hand, and its reliability diagram."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET

import pytest

from labeling.machine.calibration_report import (
    CalibrationRecord,
    read_records,
    reliability_geometry,
    reliability_svg,
    report_from_records,
)

#: (calibrated P(left better), raw, person's answer, first shown)
ROWS = [
    (0.92, 0.95, "left", "left"),
    (0.83, 0.90, "right", "right"),
    (0.25, 0.10, "right", "left"),
    (0.64, None, "left", "left"),
    (0.52, None, "right", "right"),
    (None, 0.7, "left", "left"),  # no opinion
    (0.70, None, "tie", "left"),  # not a left/right answer
]
RECORDS = [
    CalibrationRecord(answer=a, calibrated=c, raw=r, first_shown=f)  # type: ignore[arg-type]
    for c, r, a, f in ROWS
]


def test_the_report_matches_the_hand_computation() -> None:
    """Five bins of width 0.1 over the confidence [0.5, 1]; the five answered records fall one
    per bin: confidences 0.52, 0.64, 0.75, 0.83, 0.92, right 0, 1, 1, 0, 1 (the machine says
    left when p >= 1/2)."""
    report = report_from_records(RECORDS, n_bins=5)
    cal = report.calibrated
    assert (report.records, report.other_answers, cal.count, cal.no_opinion) == (7, 1, 5, 1)
    assert cal.accuracy == pytest.approx(3 / 5)
    assert [b.count for b in cal.bins] == [1, 1, 1, 1, 1]
    assert [b.accuracy for b in cal.bins] == [0.0, 1.0, 1.0, 0.0, 1.0]
    assert [b.mean_confidence for b in cal.bins] == pytest.approx([0.52, 0.64, 0.75, 0.83, 0.92])
    # ECE = (|0 − .52| + |1 − .64| + |1 − .75| + |0 − .83| + |1 − .92|) / 5 = 2.04 / 5
    assert cal.ece == pytest.approx(0.408)
    # Brier = (.08² + .83² + .25² + .36² + .52²) / 5 = 1.1578 / 5
    assert cal.brier == pytest.approx(0.23156)
    # κ: machine L L R L L, people L R R L R: p_o = 3/5, p_e = .8·.4 + .2·.6 = .44
    assert cal.kappa == pytest.approx((0.6 - 0.44) / (1 - 0.44))
    # raw on the four records that have it (the one without a calibrated opinion too):
    # .95/L right, .90/R wrong, .10/R right, .70/L right
    assert report.raw is not None and report.raw.count == 4
    assert report.raw.accuracy == pytest.approx(3 / 4)
    assert report.raw.brier == pytest.approx((0.05**2 + 0.9**2 + 0.1**2 + 0.3**2) / 4)
    # position: the machine favours the first shown on records 1, 4 (2 of 5); people on
    # records 1, 2, 4, 5 (4 of 5)
    pos = report.position
    assert (pos.pairs, pos.machine_first_rate, pos.people_first_rate) == (5, 0.4, 0.8)
    assert pos.difference == pytest.approx(-0.4)
    data = report.to_dict()
    assert data["position_bias"]["difference"] == pytest.approx(-0.4)
    assert json.loads(json.dumps(data)) == data


def test_kappa_agrees_with_scikit_learn() -> None:
    from sklearn.metrics import cohen_kappa_score

    report = report_from_records(RECORDS)
    said = [c >= 0.5 for c, _, a, _ in ROWS if c is not None and a in ("left", "right")]
    people = [a == "left" for c, _, a, _ in ROWS if c is not None and a in ("left", "right")]
    assert report.calibrated.kappa == pytest.approx(cohen_kappa_score(said, people))


def test_records_are_read_from_json_lines_with_line_numbers() -> None:
    lines = [
        json.dumps({"answer": "left", "calibrated": 0.9, "raw": 1, "query_id": 7}),
        "",
        json.dumps({"answer": "right", "calibrated": None, "first_shown": "right"}),
    ]
    records = read_records(lines, source="r.jsonl")
    assert records[0].raw == 1.0 and records[0].query_id == "7"
    assert records[1].calibrated is None and records[1].first_shown == "right"
    bad = [
        ('{"answer": "left"}', 'r.jsonl:1: missing key "calibrated"'),
        ('{"answer": "up", "calibrated": 0.5}', 'r.jsonl:1: "answer" must be one of'),
        ('{"answer": "left", "calibrated": 1.5}', 'r.jsonl:1: "calibrated" must be a probability'),
        ('{"answer": "left", "calibrated": NaN}', 'r.jsonl:1: "calibrated" must be a probability'),
        ('{"answer": "left", "calibrated": "0.5"}', 'r.jsonl:1: "calibrated" must be a number'),
        ('{"answer": "left", "calibrated": 0.5, "first_shown": "top"}', "first_shown"),
        ("[1]", "r.jsonl:1: each record must be a JSON object"),
        ("{", "r.jsonl:1: invalid JSON"),
    ]
    for line, message in bad:
        with pytest.raises(ValueError, match=message.replace("(", r"\(")):
            read_records([line], source="r.jsonl")


def test_the_reliability_diagram_is_svg_with_a_bar_per_answered_bin() -> None:
    report = report_from_records(RECORDS, n_bins=5).calibrated
    svg = reliability_svg(report, caption="Judge <llm> & people")
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    assert root.get("aria-label") == "Judge <llm> & people" and root.get("class") == "plot-svg"
    circles = root.findall(f".//{ns}circle")
    assert len(root.findall(f".//{ns}rect")) == 5 and len(circles) == 5
    # x: 48 + (conf − 0.5)/0.5 · 300; y: 14 + (1 − accuracy) · 242
    xs = [float(c.get("cx", "nan")) for c in circles]
    ys = [float(c.get("cy", "nan")) for c in circles]
    assert xs == pytest.approx([48 + (c - 0.5) / 0.5 * 300 for c in (0.52, 0.64, 0.75, 0.83, 0.92)])
    assert ys == [256.0, 14.0, 14.0, 256.0, 14.0]
    empty = reliability_geometry(report_from_records([], n_bins=5).calibrated.bins)
    assert empty["bars"] == [] and math.isclose(empty["diagonal"]["x2"], 348.0)
