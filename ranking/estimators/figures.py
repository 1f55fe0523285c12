"""Figures of the experiments: the β sweep drawn like the paper's Figures 1–2 (Niu et al. 2012),
as dependency-free SVG."""

from __future__ import annotations

import html

from ranking.estimators.experiments import COLUMN_NAMES, MEASURES, SweepResult

__all__ = ["beta_sweep_svg"]


def beta_sweep_svg(res: SweepResult, measure_index: int = 1, title: str = "") -> str:
    """One panel per model, like the paper's Figures 1–2: open markers = graded truth
    (NDCG), filled = top-k truth (κ-NDCG); ``measure_index`` picks @5 (0), @10 (1) or ERR (2).
    """
    panel = {"focusedsvm": "a", "focusedboost": "b", "focusednet": "c"}  # the paper's panels
    models = sorted({m for m, _ in res.curves}, key=lambda m: panel[m])
    pw, ph, pad = 300, 220, 45
    width, height = pad + len(models) * (pw + pad), ph + 2 * pad + 30
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{pad}" y="18" font-size="13">{html.escape(title)}</text>',
    ]
    colours = {"graded": "#1f77b4", "topk": "#d62728"}
    for i, model in enumerate(models):
        x0, y0 = pad + i * (pw + pad), pad + 10
        series = [
            (truth, curve[MEASURES[truth][measure_index]])
            for (m, truth), curve in res.curves.items()
            if m == model
        ]
        ys = [v for _, vals in series for v in vals]
        lo, hi = (min(ys), max(ys)) if ys else (0.0, 1.0)
        if hi - lo < 1e-6:
            lo, hi = lo - 0.01, hi + 0.01
        span = hi - lo
        lo, hi = lo - 0.05 * span, hi + 0.05 * span

        def px(b: float, x0: float = x0) -> float:
            return x0 + b * pw

        def py(v: float, y0: float = y0, lo: float = lo, hi: float = hi) -> float:
            return y0 + ph - (v - lo) / (hi - lo) * ph

        parts.append(
            f'<rect x="{x0}" y="{y0}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>'
        )
        parts.append(
            f'<text x="{x0 + pw / 2}" y="{y0 - 6}" text-anchor="middle" '
            f'font-size="12">({panel[model]}) {html.escape(model)}</text>'
        )
        for tick in range(5):
            v = lo + (hi - lo) * tick / 4
            parts.append(f'<text x="{x0 - 4}" y="{py(v) + 4:.1f}" text-anchor="end">{v:.3f}</text>')
        for b in (0.0, 0.25, 0.5, 0.75, 1.0):
            parts.append(
                f'<text x="{px(b):.1f}" y="{y0 + ph + 14}" text-anchor="middle">{b:g}</text>'
            )
        parts.append(f'<text x="{x0 + pw / 2}" y="{y0 + ph + 28}" text-anchor="middle">β</text>')
        for truth, vals in series:
            pts = " ".join(f"{px(b):.1f},{py(v):.1f}" for b, v in zip(res.betas, vals, strict=True))
            c = colours.get(truth, "#333")
            parts.append(f'<polyline points="{pts}" fill="none" stroke="{c}" stroke-width="1.5"/>')
            fill = c if truth == "topk" else "white"
            for b, v in zip(res.betas, vals, strict=True):
                parts.append(
                    f'<circle cx="{px(b):.1f}" cy="{py(v):.1f}" r="3" fill="{fill}" stroke="{c}"/>'
                )
    ly = height - 12
    names = {
        "graded": "graded truth, " + COLUMN_NAMES[MEASURES["graded"][measure_index]],
        "topk": "top-k truth, " + COLUMN_NAMES[MEASURES["topk"][measure_index]],
    }
    for j, truth in enumerate(("graded", "topk")):
        c = colours[truth]
        fill = c if truth == "topk" else "white"
        lx = pad + j * 260
        parts.append(f'<circle cx="{lx}" cy="{ly - 4}" r="4" fill="{fill}" stroke="{c}"/>')
        parts.append(f'<text x="{lx + 8}" y="{ly}">{html.escape(names[truth])}</text>')
    parts.append("</svg>")
    return "\n".join(parts)
