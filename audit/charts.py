"""Server-rendered SVG charts of compliance analytics: no script, so they show under the
app's CSP, print, and download as files that open anywhere.

Colours are presentation attributes (``fill=``), never ``style=`` (the CSP allows no
inline style); every text is escaped; each chart carries a ``<title>`` and ``<desc>``
for screen readers, and the page shows the same numbers in a table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.utils.html import escape

# Met, out of order, missed, not applicable: the same colours as the overlay's states.
COLOURS = {
    "met": "#2f7d32",
    "out_of_order": "#b26a00",
    "missed": "#c62828",
    "n_a": "#b0b7c3",
}
PARTS = (("met", "met"), ("out_of_order", "out of order"), ("missed", "missed"), ("n_a", "n/a"))
INK, MUTED, GRID = "#1f2933", "#52606d", "#d9dee5"
FONT = 'font-family="system-ui, sans-serif" font-size="12"'
LABEL_CHARS = 36


def _svg(width: int, height: int, title: str, desc: str, body: list[str], key: str) -> str:
    ids = f"chart-{key}-title chart-{key}-desc"
    return "\n".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}"'
            f' width="{width}" height="{height}" role="img" aria-labelledby="{ids}" {FONT}>',
            f'<title id="chart-{key}-title">{escape(title)}</title>',
            f'<desc id="chart-{key}-desc">{escape(desc)}</desc>',
            f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
            *body,
            "</svg>",
        ]
    )


def _short(text: str) -> str:
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.0f}%"


def trend_svg(trend: Sequence[Mapping[str, Any]], title: str) -> str:
    """The share of clean runs per period, a line over a 0-100% axis."""
    width, height, left, right, top, bottom = 640, 240, 48, 16, 16, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    body = []
    for tick in (0, 25, 50, 75, 100):
        y = top + plot_h * (1 - tick / 100)
        body.append(
            f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" stroke="{GRID}"/>'
        )
        body.append(
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" fill="{MUTED}">{tick}%</text>'
        )
    points = [r for r in trend if r.get("clean_share") is not None]
    step = plot_w / max(1, len(points) - 1)
    coords = [
        (
            left + (i * step if len(points) > 1 else plot_w / 2),
            top + plot_h * (1 - r["clean_share"]),
        )
        for i, r in enumerate(points)
    ]
    if len(coords) > 1:
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
        body.append(
            f'<polyline points="{path}" fill="none" stroke="{COLOURS["met"]}" stroke-width="2"/>'
        )
    for (x, y), r in zip(coords, points, strict=True):
        tip = f"{r['period']}: {_pct(r['clean_share'])} clean of {r['runs']} runs"
        body.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{COLOURS["met"]}">'
            f"<title>{escape(tip)}</title></circle>"
        )
    shown = {0, len(points) - 1, (len(points) - 1) // 2} if points else set()
    for i in sorted(shown):
        x = coords[i][0]
        body.append(
            f'<text x="{x:.1f}" y="{height - bottom + 18}" text-anchor="middle" fill="{MUTED}">'
            f"{escape(points[i]['period'])}</text>"
        )
    if not points:
        body.append(
            f'<text x="{width / 2}" y="{height / 2}" text-anchor="middle" fill="{MUTED}">'
            "No finished runs with these filters</text>"
        )
    desc = "; ".join(f"{r['period']}: {_pct(r['clean_share'])} of {r['runs']}" for r in points)
    return _svg(width, height, title, desc or "no runs", body, "trend")


def obligations_svg(rates: Mapping[str, Any], title: str) -> str:
    """One stacked bar per obligation: met, out of order, missed, not applicable."""
    rows = rates["obligations"]
    width, left, right, top, row_h = 680, 280, 16, 34, 22
    height = top + row_h * max(1, len(rows)) + 12
    plot_w = width - left - right
    body = _legend(left)
    for i, r in enumerate(rows):
        y = top + i * row_h
        label = _short(f"{r['node']} · {r['label']}")
        body.append(
            f'<text x="{left - 8}" y="{y + 15}" text-anchor="end" fill="{INK}">{escape(label)}</text>'
        )
        x = float(left)
        for key, name in PARTS:
            share = r[f"{key}_rate"] or 0.0
            if share <= 0:
                continue
            w = plot_w * share
            tip = f"{r['node']}: {_pct(share)} {name} ({r[key]} of {r['n']})"
            body.append(
                f'<rect x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="{row_h - 6}"'
                f' fill="{COLOURS[key]}"><title>{escape(tip)}</title></rect>'
            )
            x += w
    desc = "; ".join(
        f"{r['node']}: {_pct(r['met_rate'])} met, {_pct(r['missed_rate'])} missed,"
        f" {_pct(r['out_of_order_rate'])} out of order, {_pct(r['n_a_rate'])} n/a"
        for r in rows
    )
    return _svg(width, height, title, desc or "no obligations", body, "obligations")


def _legend(left: int) -> list[str]:
    out, x = [], float(left)
    for key, name in PARTS:
        out.append(f'<rect x="{x:.1f}" y="8" width="12" height="12" fill="{COLOURS[key]}"/>')
        out.append(f'<text x="{x + 16:.1f}" y="18" fill="{INK}">{name}</text>')
        x += 24 + 8 * len(name)
    return out


def compare_svg(result: Mapping[str, Any], title: str) -> str:
    """Per obligation, B's missed rate minus A's with its 95% interval, around zero;
    red where B misses more with confidence, green where it misses less."""
    rows = [result["violation"] | {"node": "any violation", "label": ""}, *result["obligations"]]
    width, left, right, top, row_h = 680, 280, 24, 30, 22
    height = top + row_h * len(rows) + 12
    plot_w = width - left - right
    zero = left + plot_w / 2

    def x_of(d: float) -> float:  # -100 .. +100 percentage points
        return zero + plot_w / 2 * max(-1.0, min(1.0, d))

    body = [
        f'<line x1="{zero:.1f}" x2="{zero:.1f}" y1="{top - 6}" y2="{height - 8}" stroke="{MUTED}"/>',
        f'<text x="{left}" y="16" fill="{MUTED}">−100 pp</text>',
        f'<text x="{zero:.1f}" y="16" text-anchor="middle" fill="{MUTED}">0</text>',
        f'<text x="{width - right}" y="16" text-anchor="end" fill="{MUTED}">+100 pp</text>',
    ]
    for i, r in enumerate(rows):
        y = top + i * row_h + 11
        label = _short(f"{r['node']} · {r['label']}" if r["label"] else r["node"])
        body.append(
            f'<text x="{left - 8}" y="{y + 4}" text-anchor="end" fill="{INK}">{escape(label)}</text>'
        )
        if r["difference"] is None:
            continue
        colour = {"regression": COLOURS["missed"], "improvement": COLOURS["met"]}.get(
            r["flag"], MUTED
        )
        tip = f"{r['node']}: {100 * r['difference']:+.0f} pp (95% {100 * r['low']:+.0f} to {100 * r['high']:+.0f})"
        body.append(
            f'<line x1="{x_of(r["low"]):.1f}" x2="{x_of(r["high"]):.1f}" y1="{y}" y2="{y}"'
            f' stroke="{colour}" stroke-width="2"/>'
        )
        body.append(
            f'<circle cx="{x_of(r["difference"]):.1f}" cy="{y}" r="4" fill="{colour}">'
            f"<title>{escape(tip)}</title></circle>"
        )
    a, b = result["a"]["value"], result["b"]["value"]
    desc = f"missed rate of {b} minus {a}, with 95% intervals, per obligation"
    return _svg(width, height, title, desc, body, "compare")
