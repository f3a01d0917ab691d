"""Charts as SVG text, drawn on the server: the same markup in the live page and in a report file.

Three pictures, each of one metric in one window:

- :func:`interval_plot` - the current value of each group with its interval as a whisker, the
  fair range as a shaded band, the dot coloured by state (the "slice bars with intervals" of
  Fairness Indicators);
- :func:`history_chart` - each group's recent values as a line, its interval as a shaded band
  around it, the fair range as a shaded region behind them;
- :func:`state_timeline` - one row per group, one cell per evaluation, coloured by state.

Why SVG from Python rather than a JavaScript chart library: the report must be one file that a
mail client or an auditor's browser opens without scripts, the page needs no assets beyond the
service's own, and the pictures are tested as text. Each chart is a ``<svg role="img">`` with a
``<title>`` (its accessible name) and a ``<title>`` per point or cell that browsers show on hover;
the numbers are in the table beside it. A series is thinned to at most ``MAX_POINTS`` points
(evenly, keeping the newest), so 100 series stay a few hundred kilobytes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta, tzinfo
from html import escape

import numpy as np

from metrics_core import MetricValue
from monitor.core.text import number
from monitor.service.history import Series

__all__ = [
    "MAX_POINTS",
    "PALETTE",
    "STATE_COLORS",
    "color_of",
    "colour_indices",
    "continuation_shift",
    "history_chart",
    "interval_plot",
    "state_timeline",
]

#: Okabe & Ito's colour-blind-safe palette (without its yellow, too light on white), then a few more.
PALETTE = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#D55E00",
    "#000000",
    "#7F3C8D",
    "#11A579",
    "#3969AC",
    "#80BA5A",
    "#E68310",
)
STATE_COLORS = {
    "ok": "#2e7d32",
    "inconclusive": "#c49000",
    "violation": "#c62828",
    "insufficient_data": "#9e9e9e",
}
FAIR_FILL = "#2e7d32"
MAX_POINTS = 150

_W, _H = 640, 220  # the drawing's own units; the page scales it to its box
_LEFT, _RIGHT, _TOP, _BOTTOM = 52, 12, 10, 24
_SPAN_EPS = 1e-9  # a span this small against its values is one value drawn twice


def color_of(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


# -- scales ---------------------------------------------------------------------------------------


def _nice_ticks(lo: float, hi: float, count: int = 4) -> list[float]:
    """Round numbers spanning [lo, hi] (Heckbert's loose labels); ``[lo]`` when the span is nil.

    Ticks are counted as whole steps from zero, never by adding a step to a running total: a
    span that is zero but for rounding (0.1 + 0.2 against 0.3) gives a step below the values'
    precision, and a running total would never reach ``hi``.
    """
    span = hi - lo
    if not (math.isfinite(span) and span > _SPAN_EPS * max(abs(lo), abs(hi))):
        return [lo] if math.isfinite(lo) else []
    raw = span / count
    magnitude = 10.0 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first, last = math.ceil(lo / step - 1e-9), math.floor(hi / step + 1e-9)
    return [k * step for k in range(first, last + 1)]


class _Linear:
    def __init__(self, lo: float, hi: float, out_lo: float, out_hi: float) -> None:
        if hi <= lo:  # one value: centre it
            pad = abs(lo) * 0.1 or 1.0
            lo, hi = lo - pad, hi + pad
        self.lo, self.hi, self.out_lo, self.out_hi = lo, hi, out_lo, out_hi
        # a span beyond the largest double is measured in halves (exact, but for subnormals)
        self._scale = 1.0 if math.isfinite(hi - lo) else 0.5

    def __call__(self, x: float) -> float:
        x = min(max(x, self.lo), self.hi)  # an open fair range end is drawn to the edge
        k = self._scale
        share = (x * k - self.lo * k) / (self.hi * k - self.lo * k)
        return self.out_lo + share * (self.out_hi - self.out_lo)


def _domain(values: Sequence[float], fair: tuple[float, float]) -> tuple[float, float] | None:
    finite = [v for v in (*values, *fair) if math.isfinite(v)]
    if not finite:
        return None
    lo, hi = min(finite), max(finite)
    if hi - lo <= _SPAN_EPS * max(abs(lo), abs(hi)):  # one value, but for rounding
        hi = lo
    pad = (hi - lo) * 0.06 or abs(hi) * 0.1 or 0.1
    if not math.isfinite(hi - lo + 2 * pad):  # values near the largest double: no room to pad
        return lo, hi
    return lo - pad, hi + pad


def _svg(label: str, body: list[str], height: float, css_class: str) -> str:
    return (
        f'<svg class="chart {css_class}" viewBox="0 0 {_W} {height:.0f}" role="img" '
        f'preserveAspectRatio="xMidYMid meet" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{escape(label)}</title>{''.join(body)}</svg>"
    )


def _empty(label: str, text: str, css_class: str) -> str:
    return _svg(
        label,
        [f'<text x="{_W / 2}" y="40" text-anchor="middle" class="empty">{escape(text)}</text>'],
        64,
        css_class,
    )


def _fair_band_x(x: _Linear, fair: tuple[float, float], top: float, bottom: float) -> list[str]:
    lo, hi = fair
    if math.isnan(lo) or math.isnan(hi) or (math.isinf(lo) and math.isinf(hi)):
        return []
    x0, x1 = x(lo), x(hi)
    out = [
        f'<rect class="fair" x="{x0:.1f}" y="{top:.1f}" width="{max(x1 - x0, 0.5):.1f}" '
        f'height="{bottom - top:.1f}" fill="{FAIR_FILL}" fill-opacity="0.12"/>'
    ]
    for bound in (lo, hi):
        if math.isfinite(bound):
            out.append(
                f'<line class="fair-bound" x1="{x(bound):.1f}" x2="{x(bound):.1f}" y1="{top:.1f}" '
                f'y2="{bottom:.1f}" stroke="{FAIR_FILL}" stroke-dasharray="4 3"/>'
            )
    return out


# -- the current values ---------------------------------------------------------------------------


def interval_plot(values: Sequence[MetricValue], *, label: str) -> str:
    """Each group's value (a dot coloured by its state) and interval (a whisker) against the
    fair range (the shaded band), one row per group; an undefined value says why."""
    if not values:
        return _empty(label, "no values", "intervals")
    fair = (values[0].fair_min, values[0].fair_max)
    numbers_ = [x for v in values for x in (v.value, v.ci_lower, v.ci_upper)]
    domain = _domain(numbers_, fair)
    row, left = 26, 190
    height = _TOP + row * len(values) + _BOTTOM
    if domain is None:
        domain = (0.0, 1.0)
    x = _Linear(*domain, left, _W - _RIGHT)
    body = _fair_band_x(x, fair, _TOP, height - _BOTTOM)
    body += _x_axis(x, domain, height - _BOTTOM)
    for i, v in enumerate(values):
        y = _TOP + row * i + row / 2
        name = v.group if len(v.group) <= 28 else v.group[:27] + "…"
        body.append(
            f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end" class="group">{escape(name)}</text>'
        )
        if math.isnan(v.value):
            why = v.reason or "undefined"
            body.append(
                f'<text x="{left + 6}" y="{y + 4:.1f}" class="undefined">undefined: {escape(why[:70])}</text>'
            )
            continue
        color = STATE_COLORS.get(v.state, "#666")
        if math.isfinite(v.ci_lower) and math.isfinite(v.ci_upper):
            body.append(
                f'<line class="ci" x1="{x(v.ci_lower):.1f}" x2="{x(v.ci_upper):.1f}" y1="{y:.1f}" '
                f'y2="{y:.1f}" stroke="{color}" stroke-width="2"/>'
            )
        tip = (
            f"{v.group}: {number(v.value)} [{number(v.ci_lower)}, {number(v.ci_upper)}], "
            f"{v.state.replace('_', ' ')}"
        )
        body.append(
            f'<circle cx="{x(v.value):.1f}" cy="{y:.1f}" r="5" fill="{color}" class="state-{v.state}">'
            f"<title>{escape(tip)}</title></circle>"
        )
    return _svg(label, body, height, "intervals")


def _x_axis(x: _Linear, domain: tuple[float, float], y: float) -> list[str]:
    out = [f'<line class="axis" x1="{x.out_lo:.1f}" x2="{x.out_hi:.1f}" y1="{y:.1f}" y2="{y:.1f}"/>']
    for t in _nice_ticks(*domain):
        out.append(
            f'<text x="{x(t):.1f}" y="{y + 16:.1f}" text-anchor="middle" class="tick">{number(t)}</text>'
        )
    return out


# -- over time ------------------------------------------------------------------------------------


def _thin(n: int, most: int = MAX_POINTS) -> np.ndarray:
    """Indices of at most ``most`` of ``n`` points, evenly spread, the newest kept."""
    if n <= most:
        return np.arange(n)
    return np.unique(np.linspace(n - 1, 0, most).round().astype(int))


def _time_axis(t: _Linear, zone: tzinfo | None, y: float) -> list[str]:
    lo, hi = t.lo, t.hi
    span = hi - lo
    out = [f'<line class="axis" x1="{t.out_lo:.1f}" x2="{t.out_hi:.1f}" y1="{y:.1f}" y2="{y:.1f}"/>']
    fmt = "%H:%M" if span <= 2 * 86400 else "%m-%d"
    if span < 600:
        fmt = "%H:%M:%S"
    for i in range(5):
        at = lo + span * i / 4
        text = datetime.fromtimestamp(at, tz=zone).strftime(fmt)
        anchor = "start" if i == 0 else "end" if i == 4 else "middle"
        out.append(
            f'<text x="{t(at):.1f}" y="{y + 16:.1f}" text-anchor="{anchor}" class="tick">{text}</text>'
        )
    return out


def _path(xs: np.ndarray, ys: np.ndarray) -> str:
    """An SVG path through the finite points, broken where a value is undefined."""
    parts, pen = [], "M"
    for x, y in zip(xs, ys, strict=True):
        if not math.isfinite(y):
            pen = "M"
            continue
        parts.append(f"{pen}{x:.1f},{y:.1f}")
        pen = "L"
    return "".join(parts)


def _band(xs: np.ndarray, low: np.ndarray, high: np.ndarray) -> str:
    """Closed SVG paths around each run of finite (low, high) pairs."""
    ok = np.isfinite(low) & np.isfinite(high)
    out = []
    i = 0
    while i < len(xs):
        if not ok[i]:
            i += 1
            continue
        j = i
        while j + 1 < len(xs) and ok[j + 1]:
            j += 1
        top = [f"{xs[k]:.1f},{high[k]:.1f}" for k in range(i, j + 1)]
        bottom = [f"{xs[k]:.1f},{low[k]:.1f}" for k in range(j, i - 1, -1)]
        if i == j:  # one point: a thin sliver, visible
            top = [f"{xs[i] - 1:.1f},{high[i]:.1f}", f"{xs[i] + 1:.1f},{high[i]:.1f}"]
            bottom = [f"{xs[i] + 1:.1f},{low[i]:.1f}", f"{xs[i] - 1:.1f},{low[i]:.1f}"]
        out.append("M" + " L".join(top + bottom) + "Z")
        i = j + 1
    return "".join(out)


def history_chart(
    series: Sequence[Series],
    *,
    label: str,
    estimates: Sequence[Series] = (),
    shift: timedelta = timedelta(0),
) -> str:
    """Each series' values over time (a line per group, the colour of its index in ``series``),
    its interval as a shaded band, the fair range as a shaded region behind them.

    ``estimates``: the same metric estimated before its labels (``models[].nowcast``), a dashed line
    in its group's colour. ``shift`` (:func:`continuation_shift`): the realised values are drawn that
    much earlier - at the end of the window they judge -, so that each group's dashed line continues its
    solid one up to now, and a vertical rule marks where the labels end."""
    realised = [(s, [at - shift for at in s.times]) for s in series]
    pending = [(s, list(s.times)) for s in estimates]
    tracks = realised + pending
    if not any(times for _, times in tracks):
        return _empty(label, "no history yet", "history")
    stamps = [at.timestamp() for _, times in tracks for at in times]
    t_lo, t_hi = min(stamps), max(stamps)
    if t_hi <= t_lo:
        t_lo, t_hi = t_lo - 60, t_hi + 60
    numbers_ = np.concatenate([s.values[:, :3].ravel() for s, _ in tracks])
    fair_all = np.concatenate([s.fair.ravel() for s, _ in tracks])
    finite = [float(v) for v in np.concatenate([numbers_, fair_all]) if math.isfinite(v)]
    domain = _domain(finite, (math.nan, math.nan))
    if domain is None:
        return _empty(label, "no defined values yet", "history")
    bottom = _H - _BOTTOM
    t = _Linear(t_lo, t_hi, _LEFT, _W - _RIGHT)
    y = _Linear(domain[0], domain[1], bottom, _TOP)
    body: list[str] = []
    # the fair range behind everything: a step band over time (it moves when it is relative)
    for kind in (realised, pending):
        if any(times for _, times in kind):
            body += _fair_band_over_time(kind, t, y)
    for tick in _nice_ticks(*domain):
        body.append(
            f'<line class="grid" x1="{_LEFT}" x2="{_W - _RIGHT}" y1="{y(tick):.1f}" y2="{y(tick):.1f}"/>'
            f'<text x="{_LEFT - 6}" y="{y(tick) + 4:.1f}" text-anchor="end" class="tick">{number(tick)}</text>'
        )
    zone = next(times[0].tzinfo for _, times in tracks if times)
    body += _time_axis(t, zone, bottom)
    if pending and shift > timedelta(0) and any(times for _, times in realised):
        edge = t(max(times[-1] for _, times in realised if times).timestamp())
        body.append(
            f'<line class="labels-end" x1="{edge:.1f}" x2="{edge:.1f}" y1="{_TOP}" y2="{bottom}" '
            'stroke="#666" stroke-dasharray="2 3"><title>labels end here: later values are estimated, '
            "labels pending</title></line>"
        )
    index = colour_indices(series, estimates)
    for s, times in realised:
        body += _track(s, times, t, y, color_of(index[s.key.attribute, s.key.group]), dashed=False)
    for s, times in pending:
        body += _track(s, times, t, y, color_of(index[s.key.attribute, s.key.group]), dashed=True)
    return _svg(label, body, _H, "history")


def colour_indices(series: Sequence[Series], estimates: Sequence[Series] = ()) -> dict[tuple[str, str], int]:
    """Each group's colour index: the realised series' in order, then groups only estimated."""
    index: dict[tuple[str, str], int] = {}
    for s in (*series, *estimates):
        index.setdefault((s.key.attribute, s.key.group), len(index))
    return index


def continuation_shift(series: Sequence[Series], estimates: Sequence[Series], delay: timedelta) -> timedelta:
    """How much earlier than its evaluation a realised value is drawn beside estimates: the label delay
    (its window ends that much earlier) when some estimate is defined and the kept estimates span at
    least the delay - the realised line then reaches the estimates' -, else 0 (both at their evaluation:
    a delay longer than the kept history would leave the chart a gap between two slivers)."""
    defined = [s for s in estimates if np.isfinite(s.value).any()]
    if delay <= timedelta(0) or not defined or not any(len(s.times) for s in series):
        return timedelta(0)
    span = max(s.times[-1] for s in defined) - min(s.times[0] for s in defined)
    return delay if span >= delay else timedelta(0)


def _fair_band_over_time(
    tracks: Sequence[tuple[Series, list[datetime]]], t: _Linear, y: _Linear
) -> list[str]:
    reference, times = max(tracks, key=lambda track: len(track[1]))
    keep = _thin(len(times))
    xs = np.array([t(times[k].timestamp()) for k in keep])
    fair = reference.fair[keep]
    low = np.array([y(v) if not math.isnan(v) else math.nan for v in fair[:, 0]])
    high = np.array([y(v) if not math.isnan(v) else math.nan for v in fair[:, 1]])
    if len(xs) == 1:
        xs = np.array([t.out_lo, t.out_hi])
        low, high = np.repeat(low, 2), np.repeat(high, 2)
    band = _band(xs, low, high)
    return [f'<path class="fair" d="{band}" fill="{FAIR_FILL}" fill-opacity="0.12"/>'] if band else []


def _track(
    s: Series, times: list[datetime], t: _Linear, y: _Linear, color: str, *, dashed: bool
) -> list[str]:
    """One series: its interval band, its line (dashed: an estimate), its newest point ringed in its state's colour."""
    keep = _thin(len(times))
    xs = np.array([t(times[k].timestamp()) for k in keep])
    to_y = np.vectorize(lambda v: y(v) if math.isfinite(v) else math.nan, otypes=[float])
    values = s.values[keep]
    out = []
    band = _band(xs, to_y(values[:, 1]), to_y(values[:, 2])) if len(xs) else ""
    if band:
        opacity = "0.08" if dashed else "0.15"
        out.append(
            f'<path class="ci{" estimate" if dashed else ""}" d="{band}" fill="{color}" fill-opacity="{opacity}"/>'
        )
    line = _path(xs, to_y(values[:, 0]))
    name = f"{s.key.attribute}={s.key.group}" + (" (estimated, labels pending)" if dashed else "")
    if line:
        style = ' stroke-dasharray="6 4"' if dashed else ""
        out.append(
            f'<path class="series{" estimate" if dashed else ""}" d="{line}" fill="none" stroke="{color}" '
            f'stroke-width="1.8"{style}><title>{escape(name)}</title></path>'
        )
    last = len(times) - 1
    if last >= 0 and math.isfinite(s.value[last]):
        state = s.states[last]
        tip = f"{name}: {number(s.value[last])} at {times[last]:%H:%M:%S}, {state.replace('_', ' ')}"
        out.append(
            f'<circle cx="{t(times[last].timestamp()):.1f}" cy="{y(s.value[last]):.1f}" r="3.5" '
            f'fill="{"#fff" if dashed else color}" stroke="{STATE_COLORS.get(state, "#666")}" stroke-width="2">'
            f"<title>{escape(tip)}</title></circle>"
        )
    return out


def state_timeline(series: Sequence[Series], *, label: str, shift: timedelta = timedelta(0)) -> str:
    """One row per series (group), a cell per run of evaluations in one state, coloured by it
    (``shift``: drawn that much earlier, as the history chart above it draws them)."""
    if not series or not any(len(s.times) for s in series):
        return _empty(label, "no history yet", "timeline")
    if shift:
        series = [replace(s, times=tuple(at - shift for at in s.times)) for s in series]
    row, left = 16, 190
    stamps = [t.timestamp() for s in series for t in s.times]
    t_lo, t_hi = min(stamps), max(stamps)
    height = _TOP + row * len(series) + _BOTTOM
    t = _Linear(t_lo, t_hi if t_hi > t_lo else t_lo + 60, left, _W - _RIGHT)
    body: list[str] = []
    for i, s in enumerate(series):
        top = _TOP + row * i
        name = s.key.group if len(s.key.group) <= 28 else s.key.group[:27] + "…"
        body.append(
            f'<text x="{left - 8}" y="{top + row - 4}" text-anchor="end" class="group">{escape(name)}</text>'
        )
        xs = [t(at.timestamp()) for at in s.times]
        begin = 0
        for k in range(1, len(s.times) + 1):  # one cell per run of a state, to the next evaluation
            if k < len(s.times) and s.states[k] == s.states[begin]:
                continue
            x0 = xs[begin]
            x1 = xs[k] if k < len(s.times) else max(x0 + 3, _W - _RIGHT)
            state = s.states[begin]
            until = f" to {s.times[k]:%H:%M:%S}" if k < len(s.times) else " on"
            body.append(
                f'<rect x="{x0:.1f}" y="{top + 2}" width="{max(x1 - x0, 1.5):.1f}" height="{row - 4}" '
                f'fill="{STATE_COLORS.get(state, "#666")}" class="state-{state}">'
                f"<title>{escape(f'{s.key.group}: {state} from {s.times[begin]:%H:%M:%S}{until}')}</title></rect>"
            )
            begin = k
    reference = max(series, key=lambda s: len(s.times))
    body += _time_axis(t, reference.times[0].tzinfo, height - _BOTTOM + 2)
    return _svg(label, body, height, "timeline")
