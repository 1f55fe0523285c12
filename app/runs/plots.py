"""Per-query plots of two runs as SVG (no script, no external asset, no style attribute, every
text escaped with :func:`html.escape`, so the runs page can put the markup inside its HTML as it
is, and serve it as a standalone ``image/svg+xml`` document too).

* :func:`difference_plot`  the per-query differences ``a − b``, sorted from the largest to
  the smallest, one bar per query (above the axis: ``a`` better);
* :func:`scatter_plot`  one point per query at ``(b, a)``, with the diagonal ``a = b``
  (above it: ``a`` better).

Pure geometry from lists of numbers: the use case :func:`app.runs.evaluation.pair_values`
computes the values.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

WIDTH = 640
HEIGHT = 300
LEFT = 56
RIGHT = 12
TOP = 28
BOTTOM = 40
BETTER_A = "#0b5cad"
BETTER_B = "#c2571a"
AXIS = "#555"


def _fmt(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".") if x == x else "0"


def _document(title: str, body: list[str], width: int = WIDTH, height: int = HEIGHT) -> str:
    return "\n".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}" '
            'class="plot-svg" '
            'font-family="system-ui, sans-serif" font-size="12">',
            f"<title>{escape(title)}</title>",
            f'<rect x="0" y="0" width="{width}" height="{height}" fill="#fff"/>',
            *body,
            "</svg>",
        ]
    )


def difference_plot(
    queries: Sequence[str],
    a: Sequence[float],
    b: Sequence[float],
    name_a: str,
    name_b: str,
    metric: str,
) -> str:
    """Sorted per-query differences ``a − b`` as bars around a zero axis."""
    diffs = sorted(((x - y, q) for q, x, y in zip(queries, a, b, strict=True)), key=lambda t: -t[0])
    title = f"{metric}: {name_a} − {name_b} per query, sorted"
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    peak = max((abs(d) for d, _ in diffs), default=0.0) or 1.0
    zero = TOP + plot_h / 2
    slot = plot_w / max(len(diffs), 1)
    body = [
        f'<text x="{LEFT}" y="16" fill="#111">{escape(title)}</text>',
        f'<line x1="{LEFT}" y1="{zero:.2f}" x2="{WIDTH - RIGHT}" y2="{zero:.2f}" stroke="{AXIS}"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" stroke="{AXIS}"/>',
        f'<text x="{LEFT - 4}" y="{TOP + 4}" text-anchor="end" fill="{AXIS}">+{_fmt(peak)}</text>',
        f'<text x="{LEFT - 4}" y="{zero + 4:.2f}" text-anchor="end" fill="{AXIS}">0</text>',
        f'<text x="{LEFT - 4}" y="{TOP + plot_h + 4}" text-anchor="end" fill="{AXIS}">'
        f"−{_fmt(peak)}</text>",
    ]
    for i, (d, q) in enumerate(diffs):
        h = abs(d) / peak * plot_h / 2
        y = zero - h if d > 0 else zero
        color = BETTER_A if d > 0 else BETTER_B
        body.append(
            f'<rect x="{LEFT + i * slot:.2f}" y="{y:.2f}" width="{max(slot - 1, 0.5):.2f}" '
            f'height="{max(h, 0.0):.2f}" fill="{color}"><title>{escape(q)}: '
            f"{d:+.4f}</title></rect>"
        )
    wins = sum(d > 0 for d, _ in diffs)
    losses = sum(d < 0 for d, _ in diffs)
    body.append(
        f'<text x="{LEFT}" y="{HEIGHT - 12}" fill="{AXIS}">{len(diffs)} queries: '
        f"{escape(name_a)} better on {wins}, {escape(name_b)} better on {losses}, "
        f"{len(diffs) - wins - losses} tied</text>"
    )
    return _document(title, body)


def scatter_plot(
    queries: Sequence[str],
    a: Sequence[float],
    b: Sequence[float],
    name_a: str,
    name_b: str,
    metric: str,
) -> str:
    """One point per query at (``b``, ``a``), both axes from 0 to the largest value."""
    title = f"{metric} per query: {name_a} (vertical) against {name_b} (horizontal)"
    size = HEIGHT - TOP - BOTTOM
    top = max([1.0, *a, *b]) if any(v > 1 for v in (*a, *b)) else 1.0
    x0, y0 = LEFT, TOP + size
    body = [
        f'<text x="{LEFT}" y="16" fill="#111">{escape(title)}</text>',
        f'<rect x="{x0}" y="{TOP}" width="{size}" height="{size}" fill="none" stroke="{AXIS}"/>',
        f'<line x1="{x0}" y1="{y0}" x2="{x0 + size}" y2="{TOP}" stroke="#bbb" '
        'stroke-dasharray="4 3"/>',
        f'<text x="{x0 - 4}" y="{TOP + 4}" text-anchor="end" fill="{AXIS}">{_fmt(top)}</text>',
        f'<text x="{x0 - 4}" y="{y0 + 4}" text-anchor="end" fill="{AXIS}">0</text>',
        f'<text x="{x0 + size}" y="{y0 + 16}" text-anchor="end" fill="{AXIS}">{_fmt(top)}</text>',
        f'<text x="{x0 + size / 2:.2f}" y="{y0 + 30}" text-anchor="middle" fill="{AXIS}">'
        f"{escape(name_b)}</text>",
        f'<text x="{x0 + size + 16}" y="{TOP + 12}" fill="{AXIS}">{escape(name_a)} ↑</text>',
    ]
    for q, x, y in zip(queries, a, b, strict=True):
        cx = x0 + (y / top) * size
        cy = y0 - (x / top) * size
        color = BETTER_A if x > y else BETTER_B if x < y else AXIS
        body.append(
            f'<circle cx="{cx:.2f}" cy="{cy:.2f}" r="3.5" fill="{color}" fill-opacity="0.75">'
            f"<title>{escape(q)}: {escape(name_a)} {x:.4f}, {escape(name_b)} {y:.4f}</title>"
            "</circle>"
        )
    return _document(title, body)


PLOTS = {"difference": difference_plot, "scatter": scatter_plot}
