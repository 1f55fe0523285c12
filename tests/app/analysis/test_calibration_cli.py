"""``heapjudge analysis calibration --file records.jsonl``: the report of a records file (the
figures themselves are checked by hand in tests/labeling/machine/test_calibration_report.py)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.cli import cli

ROWS = [
    {"answer": "left", "calibrated": 0.92, "raw": 0.95},
    {"answer": "right", "calibrated": 0.83, "first_shown": "right"},
    {"answer": "right", "calibrated": 0.25},
    {"answer": "left", "calibrated": 0.64},
    {"answer": "right", "calibrated": 0.52, "first_shown": "right"},
    {"answer": "left", "calibrated": None},
    {"answer": "tie", "calibrated": 0.7},
]


def test_the_cli_prints_the_report_and_writes_the_diagram(tmp_path: Path) -> None:
    records = tmp_path / "records.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    svg = tmp_path / "reliability.svg"
    runner = CliRunner()
    args = ["analysis", "calibration", "--file", str(records), "--bins", "5"]
    result = runner.invoke(cli, [*args, "--json", "--svg", str(svg)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["calibrated"]["count"] == 5 and data["calibrated"]["ece"] == pytest.approx(0.408)
    assert data["position_bias"]["difference"] == pytest.approx(-0.4)
    assert len(ET.parse(svg).getroot().findall(".//{http://www.w3.org/2000/svg}rect")) == 5
    text = runner.invoke(cli, args)
    assert text.exit_code == 0, text.output
    assert "calibrated: 5 answers, accuracy 0.600, ECE 0.408, Brier 0.232" in text.output
    assert "people in 80.0% on the same pairs (difference -40.0 points)" in text.output
    assert "[0.90, 1.00]          1      0.920     1.000" in text.output


def test_a_bad_record_names_its_line(tmp_path: Path) -> None:
    records = tmp_path / "bad.jsonl"
    records.write_text(json.dumps(ROWS[0]) + "\n" + '{"answer": "left", "calibrated": 2}\n')
    result = CliRunner().invoke(cli, ["analysis", "calibration", "--file", str(records)])
    assert result.exit_code == 1
    assert f'{records}:2: "calibrated" must be a probability' in result.output
    result = CliRunner().invoke(
        cli, ["analysis", "calibration", "--file", str(records), "--bins", "0"]
    )
    assert result.exit_code == 2 and "--bins must be at least 1" in result.output
