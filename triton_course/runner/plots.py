"""Hand-written SVG plots of one benchmark on one GPU: rate against size.

Pure Python, no matplotlib: the same function draws the file the runner
writes (``docs/assets/plots/<bench>-<gpu-slug>.svg``) and what the page hook
inlines, and the CPU tests can check it. Text and axes use ``currentColor``,
so an inlined plot follows the page's light or dark scheme; the peer colours
are mid-tones that read on both.

One panel per dtype; one line per peer; the roofline measured in the same run
is a dashed horizontal line. With one size parameter the x axis is that
parameter on a log2 scale, otherwise the sizes are evenly spaced categories.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

PEER_COLORS = {
    "Triton": "#f76707",
    "PyTorch eager": "#4263eb",
    "torch.compile": "#2f9e44",
}
EXTRA_COLORS = ("#ae3ec9", "#1098ad", "#e64980", "#868e96")
DASHES = {"Triton": "", "PyTorch eager": "6 3", "torch.compile": "2 3"}
MARKERS = ("circle", "square", "diamond", "triangle")


@dataclass(frozen=True)
class Layout:
    """One panel's geometry, in SVG units. WIDE fills a page's column; NARROW
    is drawn for a phone at 1:1, so its 11-unit text stays 11 px: the title
    wraps, the legend gets lines of its own, and tick labels are thinned."""

    w: int
    plot_h: int
    left: int
    right: int
    bottom: int
    max_xlabels: int  # at most this many x labels (every k-th size beyond)
    slant: int  # degrees of the slanted size labels (several size parameters)
    slanted_bottom: int  # the room below the axis those labels need
    narrow: bool


WIDE = Layout(
    w=640,
    plot_h=210,
    left=64,
    right=28,
    bottom=46,
    max_xlabels=40,
    slant=20,
    slanted_bottom=72,
    narrow=False,
)
NARROW = Layout(
    w=350,
    plot_h=200,
    left=56,
    right=12,
    bottom=46,
    max_xlabels=6,
    slant=60,
    slanted_bottom=112,
    narrow=True,
)


def wants_plot(bench: dict) -> bool:
    """A curve says more than the table when there are several sizes to join."""
    if bench.get("plot") is False:
        return False
    sizes = {tuple(sorted(r["size"].items())) for r in bench["rows"]}
    return len(sizes) >= 3


def _nice_step(span: float) -> float:
    raw = span / 5 if span > 0 else 1.0
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def _fmt_tick(v: float) -> str:
    if v >= 1000:
        return f"{v:,.0f}".replace(",", " ")
    if v == int(v):
        return str(int(v))
    return f"{v:g}"


def _size_label(size: dict, params: list) -> str:
    parts = []
    for p in params:
        v = size[p]
        if isinstance(v, int) and v >= 1024 and v & (v - 1) == 0:
            parts.append(f"2^{v.bit_length() - 1}")
        else:
            parts.append(str(v))
    return "×".join(parts)


def _color(peer: str, order: list) -> str:
    if peer in PEER_COLORS:
        return PEER_COLORS[peer]
    extras = [p for p in order if p not in PEER_COLORS]
    return EXTRA_COLORS[extras.index(peer) % len(EXTRA_COLORS)]


def _marker(kind: str, x: float, y: float, color: str) -> str:
    fill = f'class="point" fill="{color}"'
    if kind == "circle":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.2" {fill}/>'
    if kind == "square":
        return f'<rect x="{x - 3:.1f}" y="{y - 3:.1f}" width="6" height="6" {fill}/>'
    if kind == "diamond":
        corners = [(x, y - 4), (x + 4, y), (x, y + 4), (x - 4, y)]
    else:
        corners = [(x, y - 4), (x + 4, y + 3), (x - 4, y + 3)]
    pts = " ".join(f"{a:.1f},{b:.1f}" for a, b in corners)
    return f'<polygon points="{pts}" {fill}/>'


def _wrap(text: str, width_px: float, px_per_char: float) -> list[str]:
    """Split a title into lines that fit (an estimate: SVG text has no wrap)."""
    lines, line = [], ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > width_px / px_per_char:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines + [line]


def _header(out: list, L: Layout, y0: float, title: str, legend: list) -> float:
    """The panel's title and legend; returns the header's height. Wide: the
    legend is one right-aligned line under the title; narrow: the title
    wraps and the legend entries flow onto as many lines as they need.

    `legend` holds (key_svg_maker or None, text) pairs; a maker draws the
    key at (x, y)."""
    titles = [title] if not L.narrow else _wrap(title, L.w - 8, 8.2)
    for i, line in enumerate(titles):
        out.append(
            f'<text x="{4 if L.narrow else L.left}" y="{y0 + 16 + 17 * i}" '
            f'font-size="14" font-weight="600" fill="currentColor">'
            f"{escape(line)}</text>"
        )
    y = y0 + 16 + 17 * (len(titles) - 1) + 18
    if not L.narrow:  # right-aligned, one line
        lx = L.w - L.right
        for key, text in reversed(legend):
            lx -= 7 * len(text) + (24 if key else 4)
            _legend_entry(out, key, lx, y, text)
        return y - y0 + 10
    lx = 4
    for key, text in legend:
        width = 6.6 * len(text) + (22 if key else 4)
        if lx > 4 and lx + width > L.w - L.right:
            lx, y = 4, y + 16
        _legend_entry(out, key, lx, y, text)
        lx += width
    return y - y0 + 14


def _legend_entry(out: list, key, x: float, y: float, text: str):
    if key:
        out.append(key(x + 6, y - 4).replace('class="point"', 'class="legend-key"'))
    out.append(
        f'<text x="{x + (14 if key else 0):.1f}" y="{y}" font-size="11" '
        f'fill="currentColor">{escape(text)}</text>'
    )


def _frame(
    out: list, L: Layout, params: list, sizes: list, y0: float, top: float,
    ymax: float, step: float, ylabel: str, suffix: str = "",
):  # fmt: skip
    """Draw one panel's grid, y ticks, x ticks and axis labels below a
    header of height `top` into `out`; return (px, py, foot): a row's size
    to x, a value to y, and the room taken below the axis. One size
    parameter: log2 x axis; several: evenly spaced categories."""
    plot_w, plot_h = L.w - L.left - L.right, L.plot_h
    numeric = len(params) == 1 and all(size[params[0]] > 0 for size in sizes)
    labels: list = []
    if numeric:
        xs = sorted({math.log2(size[params[0]]) for size in sizes})
    else:
        for size in sizes:
            if (lab := _size_label(size, params)) not in labels:
                labels.append(lab)
        xs = list(range(len(labels)))
    lo, span = xs[0], (xs[-1] - xs[0]) or 1.0

    def px(size: dict) -> float:
        v = (
            math.log2(size[params[0]])
            if numeric
            else labels.index(_size_label(size, params))
        )
        return L.left + (v - lo) / span * plot_w

    def py(value: float) -> float:
        return y0 + top + plot_h * (1 - value / ymax)

    tick = 0.0
    while tick <= ymax + 1e-9:  # grid and y ticks
        y = py(tick)
        out.append(
            f'<line x1="{L.left}" y1="{y:.1f}" x2="{L.w - L.right}" y2="{y:.1f}" '
            'stroke="currentColor" stroke-opacity="0.15"/>'
        )
        out.append(
            f'<text x="{L.left - 6}" y="{y + 4:.1f}" font-size="11" '
            f'text-anchor="end" fill="currentColor">'
            f"{_fmt_tick(round(tick, 6))}{suffix}</text>"
        )
        tick += step
    every = math.ceil(len(xs) / L.max_xlabels)  # thin the labels, keep the ticks
    slant = 0 if numeric else L.slant
    for i, v in enumerate(xs):  # x ticks
        x = L.left + (v - lo) / span * plot_w
        label = None
        if i % every == 0:
            if not numeric:
                label = escape(labels[i])
            elif v == int(v):
                label = f'2<tspan dy="-5" font-size="8">{int(v)}</tspan>'
            else:
                label = escape(f"{2**v:.0f}")
        out.append(_xtick(x, y0 + top + plot_h, label, slant))
    out.append(
        f'<path d="M{L.left},{y0 + top} V{y0 + top + plot_h} H{L.w - L.right}" '
        'fill="none" stroke="currentColor" stroke-width="1"/>'
    )
    xlabel = params[0] if numeric else " × ".join(params)
    foot = L.bottom if numeric else L.slanted_bottom  # below the slanted labels
    out.append(
        f'<text x="{L.w - L.right:.1f}" y="{y0 + top + plot_h + foot - 4}" '
        f'font-size="12" text-anchor="end" fill="currentColor">'
        f"{escape(xlabel)}</text>"
    )
    out.append(
        f'<text transform="translate(14,{y0 + top + plot_h / 2:.1f}) rotate(-90)" '
        'font-size="12" text-anchor="middle" fill="currentColor">'
        f"{escape(ylabel)}</text>"
    )
    return px, py, foot


def row_key(row: dict) -> tuple:
    """What names one row of a benchmark: its dtype and size."""
    return (row["dtype"], tuple(sorted(row["size"].items())))


def _hline(out: list, L: Layout, y: float, label: str, cls: str = "", dash="8 4"):
    """A labelled dashed line across the panel (roofline, parity)."""
    cls_attr = f'class="{cls}" ' if cls else ""
    out.append(
        f'<line {cls_attr}x1="{L.left}" y1="{y:.1f}" x2="{L.w - L.right}" '
        f'y2="{y:.1f}" stroke="currentColor" stroke-width="1.5" '
        f'stroke-dasharray="{dash}" stroke-opacity="0.7"/>'
    )
    if label:
        out.append(
            f'<text x="{L.w - L.right - 4}" y="{y - 5:.1f}" font-size="11" '
            f'text-anchor="end" fill="currentColor">{escape(label)}</text>'
        )


def _target_line(
    out: list, L: Layout, px, rows: list, target: dict, y: float, label: str
):
    """A target a page states, drawn over the sizes it is stated for: the
    whole panel, a range of sizes, or a short mark at one size."""
    keys = target.get("rows")
    xs = [px(r["size"]) for r in rows if keys is None or row_key(r) in keys]
    if not xs:
        return
    if keys is None:
        x1, x2 = L.left, L.w - L.right
    elif min(xs) == max(xs):
        x1, x2 = min(xs) - 14, min(xs) + 14
    else:
        x1, x2 = min(xs), max(xs)
    data = f"{target['kind']}:{target.get('peer') or ''}={target['value']:g}"
    out.append(
        f'<line class="target" data-target="{escape(data)}" x1="{x1:.1f}" '
        f'y1="{y:.1f}" x2="{x2:.1f}" y2="{y:.1f}" stroke="currentColor" '
        'stroke-width="1.5" stroke-dasharray="2 3" stroke-opacity="0.8"/>'
    )
    out.append(
        f'<text x="{max(x2 - 4, L.left + 4 + 6 * len(label)):.1f}" '
        f'y="{y - 5:.1f}" font-size="11" text-anchor="end" '
        f'fill="currentColor">{escape(label)}</text>'
    )


def _panel(
    L: Layout, bench: dict, gpu: dict, dtype: str, y0: float, targets=()
) -> tuple[list[str], float]:
    """Rate against size for every implementation, with the roofline; returns
    the SVG and the panel's height."""
    params = bench["params"]
    rows = [r for r in bench["rows"] if r["dtype"] == dtype]
    peers = [p for p in bench["peers"] if any(p in r["results"] for r in rows)]
    roof = bench["roofline"]["value"]
    top = max([roof] + [r["results"][p]["rate"] for r in rows for p in r["results"]])
    step = _nice_step(top * 1.05)
    ymax = step * math.ceil(top * 1.05 / step)
    out = [f'<g class="panel" data-dtype="{escape(dtype)}">']
    legend = []
    for k, peer in enumerate(peers):
        color = _color(peer, bench["peers"])
        kind = MARKERS[k % len(MARKERS)]
        legend.append(
            (lambda x, y, kind=kind, color=color: _marker(kind, x, y, color), peer)
        )
    head = _header(out, L, y0, f"{bench['title']} — {dtype}", legend)
    px, py, foot = _frame(
        out, L, params, [r["size"] for r in rows], y0, head, ymax, step,
        bench["unit"],
    )  # fmt: skip
    roof_label = escape(bench["roofline"]["name"])
    if not L.narrow:  # a phone has no room; the GPU is on the tab anyway
        roof_label += f" (measured on {escape(gpu['name'])})"
    _hline(out, L, py(roof), roof_label)
    for t in targets:  # "at least X % of the roofline", where a page says so
        if t["kind"] == "roofline":
            label = f"target {t['value']:g} % of the roofline"
            _target_line(out, L, px, rows, t, py(roof * t["value"] / 100), label)
    # one line per peer
    for k, peer in enumerate(peers):
        color = _color(peer, bench["peers"])
        pts = sorted(
            (
                (px(r["size"]), py(r["results"][peer]["rate"]))
                for r in rows
                if peer in r["results"]
            ),
        )
        if len(pts) > 1:
            d = " ".join(
                f"{'M' if i == 0 else 'L'}{x:.1f},{y:.1f}"
                for i, (x, y) in enumerate(pts)
            )
            dash = DASHES.get(peer, "4 2 1 2")
            dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
            style = f'stroke="{color}" stroke-width="2"{dash_attr}'
            out.append(f'<path d="{d}" fill="none" {style}/>')
        out.append(f'<g class="series" data-peer="{escape(peer)}">')
        out += [_marker(MARKERS[k % len(MARKERS)], x, y, color) for x, y in pts]
        out.append("</g>")
        for r in rows:  # the spread over the runner's rounds, where recorded
            res = r["results"].get(peer)
            if res and "q25_ms" in res and res["q25_ms"] > 0 and res["q75_ms"] > 0:
                scale = res["rate"] * res["median_ms"]  # rate = scale / ms
                out.append(
                    _whisker(
                        px(r["size"]),
                        py(scale / res["q75_ms"]),
                        py(scale / res["q25_ms"]),
                        color,
                    )
                )
    out.append("</g>")
    return out, head + L.plot_h + foot


def _whisker(x: float, y_top: float, y_bottom: float, color: str) -> str:
    if y_bottom - y_top < 1.0:  # narrower than a pixel: the marker covers it
        return ""
    return (
        f'<path class="spread" d="M{x - 3:.1f},{y_top:.1f} H{x + 3:.1f} '
        f"M{x:.1f},{y_top:.1f} V{y_bottom:.1f} M{x - 3:.1f},{y_bottom:.1f} "
        f'H{x + 3:.1f}" stroke="{color}" stroke-width="1.2" fill="none"/>'
    )


def best_peer(row: dict) -> str | None:
    """The fastest peer that is not a Triton kernel: what Triton is judged by."""
    others = [
        (res["rate"], name)
        for name, res in row["results"].items()
        if not name.startswith("Triton")
    ]
    return max(others)[1] if others else None


def ratio_points(bench: dict, dtype: str, vs: str | None = None) -> list[dict]:
    """Per row of one dtype: Triton ÷ the peer ``vs`` (default: the best
    peer), with the round-by-round interval where the data has rounds (else
    low = high = the ratio)."""
    from triton_course import timings as T

    points = []
    for r in bench["rows"]:
        if r["dtype"] != dtype or "Triton" not in r["results"]:
            continue
        peer = best_peer(r) if vs is None else vs
        if peer not in r["results"]:
            continue
        tri, other = r["results"]["Triton"], r["results"][peer]
        ratio = other["median_ms"] / tri["median_ms"]
        spread = T.paired_ratio(r, peer) if "rounds_ms" in tri else None
        low, high = (spread.low, spread.high) if spread else (ratio, ratio)
        points.append(
            {"row": r, "peer": peer, "ratio": ratio, "low": low, "high": high}
        )
    return points


def _ratio_panel(
    L: Layout, bench: dict, gpu: dict, dtype: str, y0: float, targets=(), vs=None
) -> tuple[list[str], float]:
    """Triton's rate over `vs`'s (None: the fastest other implementation) per
    size, with parity and the targets stated against `vs`; returns the SVG
    and the panel's height."""
    params = bench["params"]
    points = ratio_points(bench, dtype, vs)
    mine = [t for t in targets if t["kind"] == "ratio" and t.get("peer") == vs]
    top = max([1.0] + [t["value"] for t in mine] + [p["high"] for p in points]) * 1.1
    step = _nice_step(top)
    ymax = step * math.ceil(top / step)
    out = [f'<g class="panel ratio" data-dtype="{escape(dtype)}">']
    peers = sorted({p["peer"] for p in points})
    against = "fastest other" if vs is None else "against"
    head = _header(
        out, L, y0, f"Triton ÷ {vs or 'the fastest other implementation'} — {dtype}",
        [(None, f"{against}: {', '.join(peers)}")],
    )  # fmt: skip
    px, py, foot = _frame(
        out, L, params, [p["row"]["size"] for p in points], y0, head, ymax, step,
        "Triton ÷ peer", suffix="×",
    )  # fmt: skip
    # a target of 1× over every size is labelled instead of parity
    plain_parity = not any(t["value"] == 1.0 and t.get("rows") is None for t in mine)
    _hline(out, L, py(1.0), "parity 1×" if plain_parity else "", cls="parity")
    rows = [p["row"] for p in points]
    for t in mine:
        _target_line(out, L, px, rows, t, py(t["value"]), f"target {t['value']:g}×")
    color = PEER_COLORS["Triton"]
    pts = sorted(
        ((px(p["row"]["size"]), py(p["ratio"]), p) for p in points),
        key=lambda t: t[0],
    )
    if len(pts) > 1:
        d = " ".join(
            f"{'M' if i == 0 else 'L'}{x:.1f},{y:.1f}"
            for i, (x, y, _) in enumerate(pts)
        )
        out.append(f'<path d="{d}" fill="none" stroke="{color}" stroke-width="2"/>')
    for x, y, p in pts:
        out.append(_marker("circle", x, y, color))
        out.append(_whisker(x, py(p["high"]), py(p["low"]), color))
    out.append("</g>")
    return out, head + L.plot_h + foot


def _xtick(x: float, y: float, label: str | None, slant: int) -> str:
    """A tick at the foot of the plot and its label (None: tick only); a
    categorical label (several size parameters) is slanted by `slant`
    degrees so that neighbours never overlap."""
    tick = (
        f'<line x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{y + 4}" stroke="currentColor"/>'
    )
    if label is None:
        return tick
    if not slant:
        return tick + (
            f'<text x="{x:.1f}" y="{y + 17}" font-size="11" text-anchor="middle" '
            f'fill="currentColor">{label}</text>'
        )
    return tick + (
        f'<text transform="translate({x + 3:.1f},{y + 11}) rotate(-{slant})" '
        f'font-size="9" text-anchor="end" fill="currentColor">{label}</text>'
    )


def render_svg(
    bench: dict,
    gpu: dict,
    ratio: bool = False,
    target=None,
    vs: str | None = None,
    targets: list | tuple = (),
    layout: Layout = WIDE,
) -> str:
    """The whole plot as one line of SVG (safe to inline in Markdown), drawn
    for a page's column (WIDE) or a phone (NARROW).

    ratio=True adds, per dtype, a panel of Triton's rate over the fastest
    other implementation (or over the peer ``vs``) at each size, with a
    parity line and a ``target`` line (a ratio to ``vs``).

    ``targets`` are the targets a page states, each a dict: ``kind``
    ("ratio", with ``peer``, or "roofline", a percentage), ``value``, and
    ``rows`` (the row_key()s it is stated for; None: every row). A ratio
    target against a peer gets that peer's ratio panel; a roofline target
    is drawn on the rate panel."""
    for peer in [vs] + [t.get("peer") for t in targets if t["kind"] == "ratio"]:
        if peer is not None and peer not in bench["peers"]:
            raise ValueError(f"vs={peer!r} is not a peer of {bench['title']!r}")
    targets = list(targets)
    if target is not None:
        targets.append({"kind": "ratio", "peer": vs, "value": target, "rows": None})
    # A target stated for every size makes the same target at some sizes moot.
    everywhere = {
        (t["kind"], t.get("peer"), t["value"]) for t in targets if t["rows"] is None
    }
    targets = [
        t
        for t in targets
        if t["rows"] is None or (t["kind"], t.get("peer"), t["value"]) not in everywhere
    ]
    dtypes = []
    for r in bench["rows"]:
        if r["dtype"] not in dtypes:
            dtypes.append(r["dtype"])
    panels = [(_panel, d, None) for d in dtypes]
    if ratio:
        against = [vs]  # one ratio panel per peer a target is stated against
        for t in targets:
            if t["kind"] == "ratio" and t.get("peer") not in against:
                against.append(t.get("peer"))
        if vs is None and len(against) > 1:
            against.remove(None)  # the targets name the peers worth showing
        panels += [
            (_ratio_panel, d, peer)
            for peer in against
            for d in dtypes
            if ratio_points(bench, d, peer)
        ]
    body, height = [], 0.0
    for draw, dtype, peer in panels:
        if draw is _ratio_panel:
            drawn, tall = _ratio_panel(layout, bench, gpu, dtype, height, targets, peer)
        else:
            drawn, tall = _panel(layout, bench, gpu, dtype, height, targets)
        body += drawn
        height += tall
    label = f"{bench['title']}: {bench['unit']} against size on {gpu['name']}"
    which = "narrow" if layout.narrow else "wide"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {layout.w} {height:.0f}" width="100%" role="img" '
        f'aria-label="{escape(label)}" font-family="system-ui, sans-serif" '
        f'class="course-plot-svg {which}">',
        f"<title>{escape(label)}</title>",
        *body,
        "</svg>",
    ]
    return "".join(parts) + "\n"
