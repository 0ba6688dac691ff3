"""Figures drawn on the server as inline SVG: no script, no plotting library, crisp at
any zoom, and allowed by the page's Content-Security-Policy (attributes, not styles). Drawn
for the web page (``recall.ui``) and the harness's report (``recall_eval.reports``), so it sits
below both, importing nothing of recall's.
"""

from __future__ import annotations

import math
from html import escape

BLUE, RED, GREY, GREEN = "#1f6fb2", "#c62828", "#9aa3ad", "#2e7d32"


def _f(x: float) -> str:
    return f"{x:.1f}"


def score_bar(score: float, lo: float, hi: float, floor: float | None, chosen: bool, mean: float | None = None,
              width: int = 220, height: int = 14) -> str:
    """One ranked note's score as a bar over [lo, hi]; the top floor as a dashed red line,
    the mean the gap subtracts (ranks 2-11) as a solid dark one."""
    span = (hi - lo) or 1.0

    def x(v: float) -> float:
        return max(0.0, min(1.0, (v - lo) / span)) * width

    parts = [f'<svg class="bar" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
             f'aria-label="score {score:.4f}">',
             f'<rect x="0" y="2" width="{width}" height="{height - 4}" fill="#eef1f4"/>',
             f'<rect x="0" y="2" width="{_f(x(score))}" height="{height - 4}" fill="{GREEN if chosen else BLUE}"/>']
    if floor is not None and lo <= floor <= hi:
        parts.append(f'<line x1="{_f(x(floor))}" x2="{_f(x(floor))}" y1="0" y2="{height}" stroke="{RED}" '
                     'stroke-width="1.5" stroke-dasharray="2,2"/>')
    if mean is not None and lo <= mean <= hi:
        parts.append(f'<line x1="{_f(x(mean))}" x2="{_f(x(mean))}" y1="0" y2="{height}" stroke="#1d232a" '
                     'stroke-width="1.5"/>')
    parts.append("</svg>")
    return "".join(parts)


def tradeoff(curve: dict, config_value: float | None = None, width: int = 640, height: int = 440,
             precision: bool = False) -> str:
    """Silence rate (x) vs injected hit rate (y) as one threshold moves (the curve's
    ``param``: top_floor, or gap_floor in older reports); the report's operating point in
    red, and the value configured now (if it differs) on the curve in green. The one
    drawing of this plot: the page (``recall ui``) and ``recall-eval``'s report both call it.
    ``precision``: also headline precision at each point (dashed green, the report's)."""
    left, right, top, bottom = 56, 24, 16, 48
    pw, ph = width - left - right, height - top - bottom
    param = curve.get("param", "gap_floor")
    xs, ys = curve["silence_rate"], curve["injected_hit_rate"]
    gs = list(curve.get("values") or curve.get(param) or [])
    cur = dict(curve.get("current") or {})
    cur.setdefault("value", cur.get(param))
    prec = [(x, p) for x, p in zip(xs, curve.get("headline_precision") or [], strict=False) if p is not None]
    prec = prec if precision else []
    # Zoom on the data (in quarters, up to 1): a curve bunched in a corner reads badly.
    x0 = _axis_start([*xs, cur.get("silence_rate", 1.0)])
    y0 = _axis_start([*ys, *(p for _, p in prec), cur.get("injected_hit_rate", 1.0)])

    def px(s: float) -> float:
        return left + (s - x0) / (1 - x0) * pw

    def py(h: float) -> float:
        return top + (1 - (h - y0) / (1 - y0)) * ph

    out = [f'<svg class="curve" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
           'aria-label="silence rate against injected hit rate as a threshold moves" '
           'font-family="system-ui, sans-serif" font-size="11">',
           f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="#fafbfc" stroke="#d0d5db"/>']
    out += _axes(px, py, x0, y0, (left, top, pw, ph), height, bool(prec))
    pts = " ".join(f"{_f(px(x))},{_f(py(y))}" for x, y in zip(xs, ys, strict=True))
    out.append(f'<polyline points="{pts}" fill="none" stroke="{BLUE}" stroke-width="2"/>')
    legend = [_precision(out, prec, px, py)] if prec else []
    mark = (px(cur["silence_rate"]), py(cur["injected_hit_rate"])) if "silence_rate" in cur else (-99.0, -99.0)
    last = None
    for g, x, y in zip(gs, xs, ys, strict=True):  # label gap floors where the points spread out (pixels)
        p = (px(x), py(y))
        if math.dist(p, mark) > 24 and (last is None or math.dist(p, last) > 36):
            anchor, dx = ("end", -5) if p[0] > left + pw * 0.85 else ("start", 5)
            out.append(f'<text x="{_f(p[0] + dx)}" y="{_f(p[1] - 4)}" text-anchor="{anchor}" fill="#8a939c" '
                       f'font-size="9">{g:.3f}</text>')
            last = p
    # A legend in the bottom-left corner, which a trade-off curve leaves empty.
    if "silence_rate" in cur:
        out.append(f'<circle cx="{_f(mark[0])}" cy="{_f(mark[1])}" r="6" fill="{RED}"/>')
        legend.append(f'<circle cx="0" cy="-4" r="5" fill="{RED}"/><text x="12" y="0" fill="{RED}" font-weight="600">'
                      + escape(f'report: {param} {cur["value"]:g} → silence {cur["silence_rate"]:.2f}, '
                               f'hit {cur["injected_hit_rate"]:.2f}') + "</text>")
    if config_value is not None and cur.get("value") != config_value and gs:
        legend.append(_config_point(out, config_value, param, gs, xs, ys, px, py))
    for k, item in enumerate(reversed(legend)):
        out.append(f'<g transform="translate({left + 14} {top + ph - 12 - 18 * k})">{item}</g>')
    out.append("</svg>")
    return "".join(out)


def _precision(out: list[str], prec: list[tuple[float, float]], px, py) -> str:
    """Headline precision along the curve (dashed green) appended to ``out``; returns its legend entry."""
    pts = " ".join(f"{_f(px(x))},{_f(py(p))}" for x, p in prec)
    out.append(f'<polyline class="precision" points="{pts}" fill="none" stroke="{GREEN}" stroke-width="1.5" '
               'stroke-dasharray="5,3"/>')
    return (f'<line x1="-6" x2="6" y1="-4" y2="-4" stroke="{GREEN}" stroke-width="1.5" stroke-dasharray="5,3"/>'
            f'<text x="12" y="0" fill="{GREEN}">headline precision</text>')


def _axes(px, py, x0: float, y0: float, box: tuple[float, float, float, float], height: int,
          precision: bool = False) -> list[str]:
    """Grid lines, tick labels and axis titles of the trade-off plot."""
    left, top, pw, ph = box
    out: list[str] = []
    for t in _ticks(x0):
        out.append(f'<line x1="{_f(px(t))}" x2="{_f(px(t))}" y1="{top}" y2="{top + ph}" stroke="#e4e7eb"/>')
        out.append(f'<text x="{_f(px(t))}" y="{top + ph + 16}" text-anchor="middle" fill="#555">{t:g}</text>')
    for t in _ticks(y0):
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{_f(py(t))}" y2="{_f(py(t))}" stroke="#e4e7eb"/>')
        out.append(f'<text x="{left - 8}" y="{_f(py(t) + 4)}" text-anchor="end" fill="#555">{t:g}</text>')
    out.append(f'<text x="{left + pw / 2}" y="{height - 10}" text-anchor="middle" fill="#222">'
               'silence rate (unrelated messages that get nothing)</text>')
    out.append(f'<text transform="translate(14 {top + ph / 2}) rotate(-90)" text-anchor="middle" fill="#222">'
               + ('injected hit rate / headline precision' if precision else
                  'injected hit rate (right note handed over)') + '</text>')
    return out


def _config_point(out: list[str], value: float, param: str, gs: list, xs: list, ys: list, px, py) -> str:
    """The value configured now: a green ring on the curve (interpolated between its grid
    points) appended to ``out``; returns its legend entry."""
    ring = f'<circle cx="0" cy="-4" r="5" fill="none" stroke="{GREEN}" stroke-width="2.5"/>'
    if gs[0] <= value <= gs[-1]:  # on the curve: interpolate between its grid points
        j = next((i for i in range(1, len(gs)) if gs[i] >= value), 0)
        i = max(0, j - 1)
        w = 0.0 if gs[j] == gs[i] else (value - gs[i]) / (gs[j] - gs[i])
        sx, sy = xs[i] + w * (xs[j] - xs[i]), ys[i] + w * (ys[j] - ys[i])
        out.append(f'<circle cx="{_f(px(sx))}" cy="{_f(py(sy))}" r="6" fill="none" stroke="{GREEN}" '
                   'stroke-width="2.5"/>')
        return ring + f'<text x="12" y="0" fill="{GREEN}" font-weight="600">config now: {param} {value:g}</text>'
    return (ring + f'<text x="12" y="0" fill="{GREEN}" font-weight="600">'
            f'config now: {param} {value:g} (beyond this curve)</text>')


def _axis_start(values: list[float]) -> float:
    """Where an axis ending at 1 starts: the quarter at or below the smallest value, and
    never closer to 1 than a quarter."""
    lo = max(0.0, math.floor(min(values, default=0.0) * 4) / 4)
    return min(lo, 0.75)


def _ticks(start: float) -> list[float]:
    span = 1 - start
    step = 0.05 if span <= 0.25 else 0.1 if span <= 0.5 else 0.25
    n = round(span / step)
    return [round(start + i * step, 4) for i in range(n + 1)]


def per_day(days: dict[str, tuple[int, int]], width: int = 560, height: int = 120) -> str:
    """Messages per day, stacked: injected (blue) under silent (grey)."""
    if not days:
        return ""
    items = list(days.items())[-30:]
    most = max(a + b for _, (a, b) in items) or 1
    left, bottom, top = 30, 20, 8
    ph = height - bottom - top
    bw = max(4.0, min(28.0, (width - left) / len(items) - 4))
    out = [f'<svg class="days" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
           'aria-label="messages per day: injected and silent" font-family="system-ui, sans-serif" font-size="10">',
           f'<text x="{left - 4}" y="{top + 8}" text-anchor="end" fill="#555">{most}</text>',
           f'<line x1="{left}" x2="{width}" y1="{top + ph}" y2="{top + ph}" stroke="#d0d5db"/>']
    for i, (day, (inj, sil)) in enumerate(items):
        x = left + 4 + i * (bw + 4)
        hi, hs = ph * inj / most, ph * sil / most
        out.append(f'<rect x="{_f(x)}" y="{_f(top + ph - hi)}" width="{_f(bw)}" height="{_f(hi)}" fill="{BLUE}">'
                   f'<title>{escape(day)}: {inj} injected</title></rect>')
        out.append(f'<rect x="{_f(x)}" y="{_f(top + ph - hi - hs)}" width="{_f(bw)}" height="{_f(hs)}" '
                   f'fill="{GREY}"><title>{escape(day)}: {sil} silent</title></rect>')
        if i == 0 or i == len(items) - 1:
            out.append(f'<text x="{_f(x)}" y="{height - 6}" fill="#555">{escape(day[5:])}</text>')
    out.append("</svg>")
    return "".join(out)
