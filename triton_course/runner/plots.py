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
from html import escape

PEER_COLORS = {
    "Triton": "#f76707",
    "PyTorch eager": "#4263eb",
    "torch.compile": "#2f9e44",
}
EXTRA_COLORS = ("#ae3ec9", "#1098ad", "#e64980", "#868e96")
DASHES = {"Triton": "", "PyTorch eager": "6 3", "torch.compile": "2 3"}
MARKERS = ("circle", "square", "diamond", "triangle")

W, H = 640, 300  # one panel
LEFT, RIGHT, TOP, BOTTOM = 64, 28, 44, 46


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


def _frame(
    out: list, params: list, sizes: list, y0: float, ymax: float, step: float,
    title: str, ylabel: str, suffix: str = "",
):  # fmt: skip
    """Draw one panel's title, grid, y ticks, x ticks and axis labels into
    `out`; return (px, py): a row's size to x, a value to y. One size
    parameter: log2 x axis; several: evenly spaced categories."""
    plot_w, plot_h = W - LEFT - RIGHT, H - TOP - BOTTOM
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
        return LEFT + (v - lo) / span * plot_w

    def py(value: float) -> float:
        return y0 + TOP + plot_h * (1 - value / ymax)

    out.append(
        f'<text x="{LEFT}" y="{y0 + 16}" font-size="14" font-weight="600" '
        f'fill="currentColor">{escape(title)}</text>'
    )
    tick = 0.0
    while tick <= ymax + 1e-9:  # grid and y ticks
        y = py(tick)
        out.append(
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{W - RIGHT}" y2="{y:.1f}" '
            'stroke="currentColor" stroke-opacity="0.15"/>'
        )
        out.append(
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end" '
            f'fill="currentColor">{_fmt_tick(round(tick, 6))}{suffix}</text>'
        )
        tick += step
    for i, v in enumerate(xs):  # x ticks
        x = LEFT + (v - lo) / span * plot_w
        if not numeric:
            out.append(_xtick(x, y0, plot_h, labels[i]))
        elif v == int(v):
            lab = f'2<tspan dy="-5" font-size="8">{int(v)}</tspan>'
            out.append(_xtick(x, y0, plot_h, lab, raw=True))
        else:
            out.append(_xtick(x, y0, plot_h, escape(f"{2**v:.0f}"), raw=True))
    out.append(
        f'<path d="M{LEFT},{y0 + TOP} V{y0 + TOP + plot_h} H{W - RIGHT}" '
        'fill="none" stroke="currentColor" stroke-width="1"/>'
    )
    xlabel = params[0] if numeric else " × ".join(params)
    out.append(
        f'<text x="{W - RIGHT:.1f}" y="{y0 + H - 4}" font-size="12" '
        f'text-anchor="end" fill="currentColor">{escape(xlabel)}</text>'
    )
    out.append(
        f'<text transform="translate(14,{y0 + TOP + plot_h / 2:.1f}) rotate(-90)" '
        'font-size="12" text-anchor="middle" fill="currentColor">'
        f"{escape(ylabel)}</text>"
    )
    return px, py


def _panel(bench: dict, gpu: dict, dtype: str, y0: float) -> list[str]:
    params = bench["params"]
    rows = [r for r in bench["rows"] if r["dtype"] == dtype]
    peers = [p for p in bench["peers"] if any(p in r["results"] for r in rows)]
    roof = bench["roofline"]["value"]
    top = max([roof] + [r["results"][p]["rate"] for r in rows for p in r["results"]])
    step = _nice_step(top * 1.05)
    ymax = step * math.ceil(top * 1.05 / step)
    out = [f'<g class="panel" data-dtype="{escape(dtype)}">']
    px, py = _frame(
        out, params, [r["size"] for r in rows], y0, ymax, step,
        f"{bench['title']} — {dtype}", bench["unit"],
    )  # fmt: skip
    # roofline
    yr = py(roof)
    out.append(
        f'<line x1="{LEFT}" y1="{yr:.1f}" x2="{W - RIGHT}" y2="{yr:.1f}" '
        'stroke="currentColor" stroke-width="1.5" stroke-dasharray="8 4" '
        'stroke-opacity="0.7"/>'
    )
    out.append(
        f'<text x="{W - RIGHT - 4}" y="{yr - 5:.1f}" font-size="11" text-anchor="end" '
        f'fill="currentColor">{escape(bench["roofline"]["name"])} '
        f"(measured on {escape(gpu['name'])})</text>"
    )
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
    # legend, top right of the title line
    lx = W - RIGHT
    for k, peer in reversed(list(enumerate(peers))):
        color = _color(peer, bench["peers"])
        text_w = 7 * len(peer) + 24
        lx -= text_w
        key = _marker(MARKERS[k % len(MARKERS)], lx + 6, y0 + 30, color)
        out.append(key.replace('class="point"', 'class="legend-key"'))
        out.append(
            f'<text x="{lx + 14}" y="{y0 + 34}" font-size="11" fill="currentColor">'
            f"{escape(peer)}</text>"
        )
    out.append("</g>")
    return out


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
    bench: dict, gpu: dict, dtype: str, y0: float, target, vs=None
) -> list[str]:
    params = bench["params"]
    points = ratio_points(bench, dtype, vs)
    if not points:
        return []
    top = max([1.0, target or 0.0] + [p["high"] for p in points]) * 1.1
    step = _nice_step(top)
    ymax = step * math.ceil(top / step)
    out = [f'<g class="panel ratio" data-dtype="{escape(dtype)}">']
    px, py = _frame(
        out, params, [p["row"]["size"] for p in points], y0, ymax, step,
        f"Triton ÷ {vs or 'the fastest other implementation'} — {dtype}",
        "Triton ÷ peer",
        suffix="×",
    )  # fmt: skip
    for value, name, dash in ((1.0, "parity", "8 4"), (target, "target", "2 3")):
        if value is None:
            continue
        y = py(value)
        out.append(
            f'<line class="{name}" x1="{LEFT}" y1="{y:.1f}" x2="{W - RIGHT}" '
            f'y2="{y:.1f}" stroke="currentColor" stroke-width="1.5" '
            f'stroke-dasharray="{dash}" stroke-opacity="0.7"/>'
        )
        out.append(
            f'<text x="{W - RIGHT - 4}" y="{y - 5:.1f}" font-size="11" '
            f'text-anchor="end" fill="currentColor">{name} {value:g}×</text>'
        )
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
    peers = sorted({p["peer"] for p in points})
    out.append(
        f'<text x="{W - RIGHT}" y="{y0 + 34}" font-size="11" text-anchor="end" '
        f'fill="currentColor">{"fastest other" if vs is None else "against"}: '
        f"{escape(', '.join(peers))}</text>"
    )
    out.append("</g>")
    return out


def _xtick(x: float, y0: float, plot_h: float, label: str, raw: bool = False) -> str:
    """A tick and its label; a categorical label (several size parameters,
    raw=False) is slanted so that neighbours never overlap."""
    y = y0 + TOP + plot_h
    tick = (
        f'<line x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{y + 4}" stroke="currentColor"/>'
    )
    if raw:
        return tick + (
            f'<text x="{x:.1f}" y="{y + 17}" font-size="11" text-anchor="middle" '
            f'fill="currentColor">{label}</text>'
        )
    return tick + (
        f'<text transform="translate({x + 3:.1f},{y + 11}) rotate(-20)" '
        f'font-size="9" text-anchor="end" fill="currentColor">{escape(label)}</text>'
    )


def render_svg(
    bench: dict, gpu: dict, ratio: bool = False, target=None, vs: str | None = None
) -> str:
    """The whole plot as one line of SVG (safe to inline in Markdown).

    ratio=True adds, per dtype, a panel of Triton's rate over the fastest
    other implementation (or over the peer ``vs``, which a page's target is
    stated against) at each size, with parity and ``target`` lines."""
    if vs is not None and vs not in bench["peers"]:
        raise ValueError(f"vs={vs!r} is not a peer of {bench['title']!r}")
    dtypes = []
    for r in bench["rows"]:
        if r["dtype"] not in dtypes:
            dtypes.append(r["dtype"])
    panels = [(_panel, d) for d in dtypes]
    if ratio:
        panels += [(_ratio_panel, d) for d in dtypes if ratio_points(bench, d, vs)]
    height = H * len(panels)
    label = f"{bench['title']}: {bench['unit']} against size on {gpu['name']}"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {height}" '
        f'width="100%" role="img" aria-label="{escape(label)}" '
        'font-family="system-ui, sans-serif" class="course-plot-svg">',
        f"<title>{escape(label)}</title>",
    ]
    for i, (draw, dtype) in enumerate(panels):
        if draw is _ratio_panel:
            parts += _ratio_panel(bench, gpu, dtype, i * H, target, vs)
        else:
            parts += _panel(bench, gpu, dtype, i * H)
    parts.append("</svg>")
    return "".join(parts) + "\n"
