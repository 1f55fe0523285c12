"""Admin page: the study analysis of a collection, with the paper's tables and two plots.

``GET /admin/collections/{id}/analysis?mode=direct|inferred`` shows Table 1 (time), Tables 2
and 3 (agreement) as numbers and as heatmaps, the χ² sentences, a histogram of the time per
judgment by method, and the per-assessor checks. The plots are inline SVG computed here as
plain geometry and drawn by the template (autoescaped, no external assets, no script).

``GET /admin/collections/{id}/analysis/calibration`` shows the calibration report of the
collection's machine judges (figures, table by bin, reliability diagram). It has its own page,
linked from the analysis page, so the analysis page never waits for it: the report replays the
machine tasks whose logs changed since it was last built (app.analysis.calibration, "Cost").
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from markupsafe import Markup
from starlette.concurrency import run_in_threadpool

from app.analysis.calibration import calibration_report
from app.analysis.service import collection_analysis
from app.http.deps import DbDep
from app.kernel.errors import NotFound
from app.web.admin import admin_error, admin_page, admin_session
from labeling.analysis.agreement import Mode

router = APIRouter()

LABELS = ("A ≻ B", "A ≺ B", "A ∼ B")
METHOD_COLORS = {"topk": "#0b5cad", "graded": "#c2571a"}

# Heatmap geometry (SVG user units).
CELL = 64
MARGIN_LEFT = 64
MARGIN_TOP = 40

# Histogram geometry.
HIST_W = 640
HIST_H = 220
HIST_LEFT = 48
HIST_BOTTOM = 36
HIST_TOP = 12


def _mix(value: float) -> str:
    """White (0) to the accent blue (1), as an rgb() fill."""
    v = min(1.0, max(0.0, value))
    r = round(255 + (11 - 255) * v)
    g = round(255 + (92 - 255) * v)
    b = round(255 + (173 - 255) * v)
    return f"rgb({r},{g},{b})"


def heatmap(table: dict[str, Any]) -> dict[str, Any]:
    """Cells of a 3×3 conditional-probability heatmap: position, fill, label, tooltip."""
    cells = []
    for i, row in enumerate(table["conditional"]):
        for j, value in enumerate(row):
            count = table["symmetric"][i][j]
            cells.append(
                {
                    "x": MARGIN_LEFT + j * CELL,
                    "y": MARGIN_TOP + i * CELL,
                    "fill": "#f0f0f0" if value is None else _mix(value),
                    "text": "—" if value is None else f"{value:.2f}",
                    "dark": value is not None and value > 0.55,
                    "title": f"{LABELS[i]} → {LABELS[j]}: "
                    + ("no instances" if value is None else f"{value:.3f} ({count} of M)"),
                }
            )
    return {
        "cells": cells,
        "size": CELL,
        "width": MARGIN_LEFT + 3 * CELL + 8,
        "height": MARGIN_TOP + 3 * CELL + 8,
        "columns": [{"x": MARGIN_LEFT + j * CELL + CELL / 2, "label": LABELS[j]} for j in range(3)],
        "rows": [{"y": MARGIN_TOP + i * CELL + CELL / 2, "label": LABELS[i]} for i in range(3)],
    }


def histogram_chart(hist: dict[str, Any]) -> dict[str, Any]:
    """Bars of the time-per-judgment histogram, both methods side by side in each bin,
    as shares of each method's judgments (the methods have very different counts)."""
    counts: dict[str, list[int]] = hist["counts"]
    methods = [m for m in ("topk", "graded") if m in counts]
    if not methods:
        return {"bars": [], "ticks": [], "width": HIST_W, "height": HIST_H, "legend": []}
    bins = len(next(iter(counts.values())))
    shares = {
        m: [c / total for c in counts[m]] if (total := sum(counts[m])) else [0.0] * bins
        for m in methods
    }
    peak = max(max(s) for s in shares.values()) or 1.0
    plot_w = HIST_W - HIST_LEFT - 8
    plot_h = HIST_H - HIST_TOP - HIST_BOTTOM
    slot = plot_w / bins
    bar_w = max(1.0, slot / len(methods) - 0.5)
    bars = []
    width = hist["bin_seconds"]
    for b in range(bins):
        lo = b * width
        label = f"≥ {hist['upper_seconds']:g} s" if b == bins - 1 else f"{lo:g}–{lo + width:g} s"
        for k, m in enumerate(methods):
            h = plot_h * shares[m][b] / peak
            bars.append(
                {
                    "x": round(HIST_LEFT + b * slot + k * bar_w, 2),
                    "y": round(HIST_TOP + plot_h - h, 2),
                    "w": round(bar_w, 2),
                    "h": round(h, 2),
                    "fill": METHOD_COLORS[m],
                    "title": f"{m}, {label}: {counts[m][b]} judgments ({100 * shares[m][b]:.1f}%)",
                }
            )
    step = max(1, bins // 6)
    ticks = [
        {"x": round(HIST_LEFT + b * slot, 2), "label": f"{b * width:g}"}
        for b in range(0, bins, step)
    ]
    return {
        "bars": bars,
        "ticks": ticks,
        "width": HIST_W,
        "height": HIST_H,
        "axis_y": HIST_TOP + plot_h,
        "left": HIST_LEFT,
        "peak": f"{100 * peak:.0f}%",
        "legend": [{"method": m, "fill": METHOD_COLORS[m]} for m in methods],
    }


def per_query_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per query of the study (``report["queries"]``: those of its tasks):
    instances and agreement of both methods, and the top-k overlap."""
    topk = report["agreement"]["topk"]["per_query"]
    graded = report["agreement"]["graded"]["per_query"]
    overlap: dict[str, list[float]] = {}
    for o in report["topk_overlap"]:
        if o["jaccard"] is not None:
            overlap.setdefault(o["query_id"], []).append(o["jaccard"])
    rows = []
    for q in dict.fromkeys([*report["queries"], *sorted(set(topk) | set(graded) | set(overlap))]):
        t, g = topk.get(q), graded.get(q)
        jac = overlap.get(q)
        rows.append(
            {
                "query_id": q,
                "topk_n": t["instances"] if t else 0,
                "topk_agreement": t["agreement"] if t else None,
                "graded_n": g["instances"] if g else 0,
                "graded_agreement": g["agreement"] if g else None,
                "jaccard": sum(jac) / len(jac) if jac else None,
            }
        )
    return rows


def diagram(judge: dict[str, Any]) -> Markup:
    """A judge's reliability diagram inline: the core's SVG, whose every text is escaped
    there and whose look is presentation attributes (the page policy has no inline style)."""
    return Markup(judge["svg"])


@router.get("/admin/collections/{collection_id}/analysis")
async def analysis_page(
    request: Request, collection_id: int, db: DbDep, mode: str = "direct"
) -> Response:
    resolved, early = await admin_session(request, db)
    if early is not None:
        return early
    assert resolved is not None
    chosen: Mode = "inferred" if mode == "inferred" else "direct"
    try:
        report = await run_in_threadpool(collection_analysis, collection_id, db=db, mode=chosen)
    except NotFound as err:
        return admin_error(request, resolved, err)
    context = {
        "report": report,
        "labels": LABELS,
        "heatmaps": {m: heatmap(report["agreement"][m]["pooled"]) for m in ("topk", "graded")},
        "histogram": histogram_chart(report["time_histogram"]),
        "per_query": per_query_rows(report),
        "mode": chosen,
    }
    return admin_page(request, resolved, "analysis/analysis.html", context)


@router.get("/admin/collections/{collection_id}/analysis/calibration")
async def calibration_page(request: Request, collection_id: int, db: DbDep) -> Response:
    resolved, early = await admin_session(request, db)
    if early is not None:
        return early
    assert resolved is not None
    try:
        calibration = await run_in_threadpool(calibration_report, collection_id, db=db, svg=True)
    except NotFound as err:
        return admin_error(request, resolved, err)
    context = {
        "calibration": calibration,
        "diagrams": {j["judge"]: diagram(j) for j in calibration["judges"]},
    }
    return admin_page(request, resolved, "analysis/calibration_page.html", context)
