"""MkDocs hook: a roofline plot of the course's kernels, drawn from measured data.

Directive, alone on a line outside code blocks::

    [[roofline gpu=h100]]
    [[roofline gpu=h100 bench=gpu_fma_intensity,vector_add rows=all]]

It becomes an inline SVG (log-log: arithmetic intensity in FLOP/byte against
TFLOP/s) with two roofs: the one measured by the GPU runner in the same run
as the kernels (solid: the copy bandwidth, the probe of the ``roofline`` of
bandwidth benchmarks, GB/s, and the large-matmul rate, that of compute
benchmarks, TFLOP/s; ``timings.probe_of``), and the vendor's spec-sheet peaks
for the same two (dashed; ``timings.vendor_peak_of``). A title names the GPU,
and a legend under it names the two roofs, the kernels' points and the ridge
line; each point's number sits beside it, off the roofs. The caption gives
the ceilings' values. Below it, a table of the
points (% of the measured roof, never capped; ‡ above a ceiling); then every
benchmark that records only one of the two counts, as a bar of its rate against the
one ceiling its own table uses; then any left out for another reason. The
SVG is drawn twice, for the column and for a phone (CSS shows one).

Each benchmark is placed by its Triton result on the row that moves the most
work (``rows=all`` places every row). A point needs a FLOP count and a byte
count. The runner records the benchmark's ``work`` (bytes for ``bandwidth``,
FLOPs for ``compute``); the other count comes from the benchmark's ``report()``
(stored by the runner under ``notes.report``), which may return::

    {"roofline": [{"<param>": ..., "dtype": "float32", "flops": F, "bytes": B}, ...]}

one flat entry per row, naming the row's size parameters and dtype (rows may
also carry ``flops``/``bytes`` fields themselves).
Kernels without them are listed as not placed, with the reason; with no data
for the GPU the hook says "not yet measured". Nothing here is typed: every
number is read from ``data/timings/*.json``.
"""

from __future__ import annotations

import html
import math
import re
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:  # the hooks must work without an install
    sys.path.insert(0, str(REPO_ROOT))

from hooks._directives import rewrite_directives  # noqa: E402
from triton_course import timings as T  # noqa: E402
from triton_course.runner import plots as P  # noqa: E402

_DIRECTIVE_RE = re.compile(r"^\[\[roofline((?:\s+[^\]]*)?)\]\]\s*$")
# Inline: [[ridge gpu=h100]] is the measured ridge point in FLOP/byte;
# [[ridge gpu=h100 above=128]] also fails the build unless the ridge stays
# above 128 with RIDGE_ALLOWANCE to spare (the page says 128 is below it).
_RIDGE_RE = re.compile(r"\[\[ridge\s+([^\]]+)\]\]")
RIDGE_ALLOWANCE = 0.10  # how far a re-run may move the two ceilings' ratio

# Plot geometry, in SVG user units: one drawing for the page's column and
# one for a phone, drawn at about 1:1 so its 12-unit text stays readable
# (CSS shows one; the phone's used to be the wide one, scrolled sideways).
# HEIGHT is the plot area's frame and the axis below it; the title and the
# legend above it add their own height (header()).
WIDTH, HEIGHT = 640, 400
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 16, 48
NARROW_WIDTH, NARROW_HEIGHT = 350, 320
LEGEND_FONT = 11

DASH = "7 4"  # the vendor's roof
_state: dict = {}


# ---------------------------------------------------------------- loading ---
def on_config(config):
    try:
        _state["gpus"] = T.load_for_site(config)
    except T.TimingDataError as exc:
        raise PluginError(f"timing data: {exc}") from None
    return config


# ------------------------------------------------------------------ model ---
def _parse_args(text: str) -> dict:
    args = {}
    for part in text.split():
        key, sep, value = part.partition("=")
        if not sep or key not in ("gpu", "bench", "rows"):
            raise ValueError(f"roofline takes gpu=, bench= and rows=; got {part!r}")
        args[key] = value
    if "gpu" not in args:
        raise ValueError("roofline needs gpu=...")
    if args.get("rows", "largest") not in ("largest", "all"):
        raise ValueError("rows= must be 'largest' or 'all'")
    return args


def _dram(bench: dict) -> bool:
    """A benchmark measured against DRAM's copy bandwidth (not L2's)."""
    return bench["metric"] == "bandwidth" and P.ceiling_key(bench) == "bandwidth"


def _matmul(bench: dict) -> bool:
    """A benchmark measured against the bf16 matmul probe (not the FP8 one:
    the roofline's flat roof is the bf16/fp16 tensor-core rate)."""
    return bench["metric"] == "compute" and P.ceiling_key(bench) == "compute"


def ceilings(bench_map: dict) -> tuple[float | None, float | None]:
    """(copy bandwidth in GB/s, matmul rate in TFLOP/s) as the probes measured
    them in this run (never a value the old runner raised to a kernel's rate).

    Every benchmark of one metric carries the same measured roofline; if a
    file mixes runs, the highest probe is the ceiling.
    """
    bw = [T.probe_of(b["roofline"]) for b in bench_map.values() if _dram(b)]
    fl = [T.probe_of(b["roofline"]) for b in bench_map.values() if _matmul(b)]
    return (max(bw) if bw else None, max(fl) if fl else None)


def vendor_ceilings(bench_map: dict, gpu: dict) -> tuple[dict | None, dict | None]:
    """The vendor's spec-sheet peaks ({value, source}) for the same two."""
    bw = [b for b in bench_map.values() if _dram(b)]
    fl = [b for b in bench_map.values() if _matmul(b)]
    return tuple(
        T.vendor_peak_of(group[0]["roofline"], gpu["name"]) if group else None
        for group in (bw, fl)
    )


def _flagged(bench: dict, row: dict, gpu: dict) -> dict | None:
    """Triton's above_ceiling flag in this row, as recorded or worked out."""
    result = row["results"].get("Triton")
    if result is None:
        return None
    if "vendor_peak" in bench["roofline"]:
        return result.get("above_ceiling")
    return T.above_ceiling(result["rate"], bench, row, gpu)


def counts(bench: dict, row: dict) -> tuple:
    """(FLOPs, bytes) of one row: its ``work``, its own fields, then the report."""
    flops, nbytes = row.get("flops"), row.get("bytes")
    if bench["metric"] == "bandwidth":
        nbytes = row["work"]
    else:
        flops = row["work"]
    report = (bench.get("notes") or {}).get("report") or {}
    for entry in report.get("roofline") or []:
        if entry.get("dtype") == row["dtype"] and all(
            entry.get(k) == v for k, v in row["size"].items()
        ):
            flops = entry.get("flops") if flops is None else flops
            nbytes = entry.get("bytes") if nbytes is None else nbytes
            break
    return flops, nbytes


def place(bench: dict, row: dict) -> tuple[dict | None, str | None]:
    """A point {intensity, tflops} for the row's Triton result, or a reason why not."""
    result = row["results"].get("Triton")
    if result is None:
        return None, "no Triton result"
    flops, nbytes = counts(bench, row)
    if flops is None:
        return None, "no FLOP count recorded"
    if nbytes is None:
        return None, "no byte count recorded"
    if flops <= 0:
        return None, "does no arithmetic (intensity 0)"
    if nbytes <= 0 or result["median_ms"] <= 0:
        return None, "no bytes moved or no time recorded"
    tflops = flops / (result["median_ms"] * 1e-3) / 1e12
    return {"intensity": flops / nbytes, "tflops": tflops}, None


def collect(
    bench_map: dict, names: list[str] | None, all_rows: bool, gpu: dict | None = None
):
    """Points to draw and (name, reason) pairs for benchmarks left out; with
    ``gpu``, each point carries its row's above_ceiling flag (``flag``)."""
    points, left_out = [], []
    for name in names if names is not None else sorted(bench_map):
        if name not in bench_map:
            left_out.append((name, "not measured on this GPU"))
            continue
        bench = bench_map[name]
        rows = bench["rows"]
        if not all_rows:
            rows = [max(rows, key=lambda r: r["work"])]
        reasons = []
        for row in rows:
            point, reason = place(bench, row)
            if point is None:
                reasons.append(reason)
                continue
            size = ", ".join(f"{k}={row['size'][k]}" for k in bench["params"])
            points.append(
                {
                    **point,
                    "bench": name,
                    "title": bench["title"],
                    "size": size,
                    "dtype": row["dtype"],
                    "flag": _flagged(bench, row, gpu) if gpu else None,
                }
            )
        if reasons and len(reasons) == len(rows):
            left_out.append((name, reasons[0]))
    return points, left_out


# -------------------------------------------------------------- drawing ---
def _decades(lo: float, hi: float) -> tuple[int, int]:
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    return a, max(b, a + 1)


def _tick_label(exp: int) -> str:
    value = 10.0**exp
    return f"{value:g}" if -3 <= exp <= 4 else f"1e{exp}"


def attainable(intensity: float, bandwidth_gbs, peak_tflops) -> float | None:
    """The roofline at this intensity, in TFLOP/s: min(peak, bandwidth x I)."""
    limits = []
    if bandwidth_gbs:
        limits.append(bandwidth_gbs * intensity / 1e3)  # GB/s * FLOP/B -> TFLOP/s
    if peak_tflops:
        limits.append(peak_tflops)
    return min(limits) if limits else None


def header(title: str, legend: list, width: int) -> tuple[list[str], float]:
    """The title (wrapped to the width) and the legend under it, entries
    flowing onto as many lines as they need; returns (SVG, height).

    ``legend`` holds (key, text, css class) with key a function (x, y) -> SVG
    of the key drawn left of the text."""
    out = []
    lines = P._wrap(title, width - 8, P.text_width("x", 14))
    for i, line in enumerate(lines):
        out.append(
            f'<text class="roof-title" x="4" y="{16 + 17 * i}" font-size="14" '
            f'font-weight="600" fill="currentColor">{html.escape(line)}</text>'
        )
    x, y = 4.0, 16 + 17 * (len(lines) - 1) + 20
    for key, text, cls in legend:
        room = 26 + P.text_width(text, LEGEND_FONT)
        if x > 4 and x + room > width - 4:
            x, y = 4.0, y + 16
        out.append(
            key(x, y - 4) + f'<text class="{cls}" x="{x + 22:.1f}" y="{y}" '
            f'font-size="{LEGEND_FONT}" fill="currentColor">'
            f"{html.escape(text)}</text>"
        )
        x += room + 12
    return out, y + 8


def _key_line(dash: str = "", opacity: str = "1", width: str = "2"):
    def key(x, y):
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        return (
            f'<line class="roof-key" x1="{x:.1f}" y1="{y}" x2="{x + 18:.1f}" '
            f'y2="{y}" stroke="currentColor" stroke-width="{width}" '
            f'stroke-opacity="{opacity}"{dashed}/>'
        )

    return key


def _key_point(x, y):
    return (
        f'<circle class="roof-key" cx="{x + 9:.1f}" cy="{y}" r="4.5" '
        f'fill="{POINT_FILL}"/>'
    )


POINT_FILL = "var(--md-accent-fg-color, orange)"
RIDGE_DASH = "4 4"


def _number_box(x: float, y: float, text: str) -> tuple:
    """The box of a point's number drawn at baseline (x, y), font 12."""
    return (x, y - 10, x + P.text_width(text, 12), y + 3)


def place_number(cx, cy, text, plot, lines, taken) -> tuple[float, float]:
    """Where a point's number goes: beside its point, on the first side
    whose box stays in the plot and clear of the roofs and the ridge line
    (``lines``: segments) and of the other points and numbers (``taken``:
    boxes). A point on a roof's slope takes its number below the slope."""
    w = P.text_width(text, 12)
    spots = [(cx + 7, cy - 5), (cx + 7, cy + 15), (cx - 7 - w, cy + 15),
             (cx - 7 - w, cy - 5), (cx - w / 2, cy + 19),
             (cx - w / 2, cy - 9)]  # fmt: skip
    for x, y in spots:
        box = _number_box(x, y, text)
        inside = plot[0] <= box[0] and box[2] <= plot[2]
        inside = inside and plot[1] <= box[1] and box[3] <= plot[3]
        if (
            inside
            and not any(P._crosses(box, seg) for seg in lines)
            and not any(P._overlap(box, other) for other in taken)
        ):
            return x, y
    return spots[0]


def render_svg(
    points: list,
    bandwidth_gbs,
    peak_tflops,
    label: str,
    width: int = WIDTH,
    height: int = HEIGHT,
    cls: str = "wide",
    vendor: tuple = (None, None),
) -> str:
    """The plot, titled ``label``; ``vendor`` = (GB/s, TFLOP/s) of the
    spec-sheet roof, drawn dashed beside the measured one (solid). A legend
    under the title names the two roofs, the points and the ridge line; each
    point's number (its row in the table under the plot) sits beside it,
    off the roofs. ``height`` is that of the frame and axis; the title and
    legend add theirs."""
    ridge = (
        peak_tflops / (bandwidth_gbs / 1e3) if bandwidth_gbs and peak_tflops else None
    )
    xs = [p["intensity"] for p in points] + ([ridge] if ridge else [])
    if not xs:
        xs = [1.0]
    x0, x1 = _decades(min(xs) / 2, max(xs) * 4)
    ys = [p["tflops"] for p in points]
    if peak_tflops:
        ys.append(peak_tflops)
    if bandwidth_gbs:
        ys.append(bandwidth_gbs * 10.0**x0 / 1e3)
    ys += [v for v in vendor if v]
    y0, y1 = _decades(min(ys) / 2, max(ys) * 2)
    pw, ph = width - LEFT - RIGHT, height - TOP - BOTTOM
    narrow = cls == "narrow"
    legend = [
        (_key_line(), "measured on this GPU in this run" if not narrow else "measured",
         "roof-label")
    ]  # fmt: skip
    if vendor[0] or vendor[1]:
        legend.append((_key_line(DASH, width="1.5"),
                       "vendor spec-sheet peak" if not narrow else "vendor peak",
                       "roof-label"))  # fmt: skip
    if points:
        legend.append((_key_point,
                       "a Triton kernel: its number is its row in the table below"
                       if not narrow else "a kernel (number: table row)",
                       "roof-legend"))  # fmt: skip
    if ridge:
        legend.append((_key_line(RIDGE_DASH, "0.5", "1"), "ridge point", "roof-legend"))
    head, shift = header(label, legend, width)
    total = height + shift  # the frame and axis are drawn below the header

    def sx(x):
        return LEFT + (math.log10(x) - x0) / (x1 - x0) * pw

    def sy(y):
        y = min(max(y, 10.0**y0), 10.0**y1)
        return TOP + ph - (math.log10(y) - y0) / (y1 - y0) * ph

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {total:.0f}" '
        f'width="100%" class="course-plot-svg {cls}" '
        f'role="img" aria-label="{html.escape(label)}" font-size="12" '
        'font-family="sans-serif">',
        f"<title>{html.escape(label)}</title>",
        *head,
        f'<g transform="translate(0,{shift:.1f})">',
        f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" '
        'stroke="currentColor" stroke-opacity="0.5"/>',
    ]
    # a tick label needs about 40 units: label every decade that fits
    step = max(1, math.ceil(40 / (pw / max(1, x1 - x0))))
    for e in range(x0, x1 + 1):
        x = sx(10.0**e)
        out.append(
            f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{TOP + ph}" '
            'stroke="currentColor" stroke-opacity="0.15"/>'
        )
        if (e - x0) % step == 0:
            out.append(
                f'<text x="{x:.1f}" y="{TOP + ph + 16}" text-anchor="middle" '
                f'fill="currentColor">{_tick_label(e)}</text>'
            )
    for e in range(y0, y1 + 1):
        y = sy(10.0**e)
        out.append(
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + pw}" y2="{y:.1f}" '
            'stroke="currentColor" stroke-opacity="0.15"/>'
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" '
            f'fill="currentColor">{_tick_label(e)}</text>'
        )
    out.append(
        f'<text x="{LEFT + pw / 2}" y="{height - 8}" text-anchor="middle" '
        'fill="currentColor">arithmetic intensity (FLOP/byte)</text>'
        f'<text transform="translate(16 {TOP + ph / 2}) rotate(-90)" '
        'text-anchor="middle" fill="currentColor">TFLOP/s</text>'
    )
    # The roof: min(peak, bandwidth x intensity), sampled along the x axis.
    samples = [10.0 ** (x0 + i * (x1 - x0) / 200) for i in range(201)]
    if ridge and 10.0**x0 < ridge < 10.0**x1:
        samples = sorted(samples + [ridge])
    roof = [(s, attainable(s, bandwidth_gbs, peak_tflops)) for s in samples]
    if roof[0][1] is not None:
        path = " ".join(f"{sx(s):.1f},{sy(v):.1f}" for s, v in roof)
        out.append(
            f'<polyline class="roof" points="{path}" fill="none" '
            'stroke="currentColor" stroke-width="2"/>'
        )
    if vendor[0] or vendor[1]:
        top = [(s, attainable(s, *vendor)) for s in samples]
        path = " ".join(f"{sx(s):.1f},{sy(v):.1f}" for s, v in top)
        out.append(
            f'<polyline class="vendor-roof" points="{path}" fill="none" '
            f'stroke="currentColor" stroke-width="1.5" stroke-dasharray="{DASH}"/>'
        )
    lines = []  # what a point's number must not cross
    for cls_ in ("roof", "vendor-roof"):
        if m := re.search(rf'class="{cls_}" points="([^"]+)"', "".join(out)):
            pts = [tuple(map(float, xy.split(","))) for xy in m.group(1).split()]
            lines += [(*a, *b) for a, b in zip(pts, pts[1:], strict=False)]
    if ridge:
        out.append(
            f'<line class="ridge" x1="{sx(ridge):.1f}" y1="{sy(peak_tflops):.1f}" '
            f'x2="{sx(ridge):.1f}" y2="{TOP + ph}" stroke="currentColor" '
            f'stroke-dasharray="{RIDGE_DASH}" stroke-opacity="0.5"/>'
        )
        lines.append((sx(ridge), sy(peak_tflops), sx(ridge), TOP + ph))
    centres = [(sx(p["intensity"]), sy(p["tflops"])) for p in points]
    taken = [(x - 4.5, y - 4.5, x + 4.5, y + 4.5) for x, y in centres]
    plot = (LEFT, TOP, LEFT + pw, TOP + ph)
    for i, (p, (cx, cy)) in enumerate(zip(points, centres, strict=True), start=1):
        tip = html.escape(f"{i}. {p['bench']} ({p['size']}, {p['dtype']})")
        tx, ty = place_number(cx, cy, str(i), plot, lines, taken)
        taken.append(_number_box(tx, ty, str(i)))
        out.append(
            f'<g class="point"><title>{tip}</title>'
            f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="4.5" fill="{POINT_FILL}"/>'
            f'<text class="point-number" x="{tx:.1f}" y="{ty:.1f}" '
            f'fill="currentColor">{i}</text></g>'
        )
    out.append("</g>")
    out.append("</svg>")
    return "".join(out)


def _fmt(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}".replace(",", " ")
    return f"{value:.3g}"


def _matching(gpus: list, key: str) -> list:
    """The data files whose GPU slug contains `key` (gpu=h100)."""
    return [g for g in gpus if key.lower() in g.gpu["slug"].lower()]


def render_roofline(text: str, gpus: list) -> str:
    args = _parse_args(text)
    key = args["gpu"]
    matches = _matching(gpus, key)
    if len(matches) > 1:
        raise ValueError(f"gpu={key!r} matches several data files")
    if not matches:
        return (
            f'!!! info "Roofline: not yet measured on {key.upper()}"\n'
            "    The roofline plot of the course's kernels appears here once the "
            "GPU runner has measured them on this GPU. Until then the page shows "
            "no numbers: the course never prints an estimate.\n"
        )
    g = matches[0]
    names = args["bench"].split(",") if "bench" in args else None
    points, left_out = collect(g.benchmarks, names, args.get("rows") == "all", g.gpu)
    bandwidth, peak = ceilings(g.benchmarks)
    if not points and bandwidth is None and peak is None:
        return f'!!! info "Roofline: not yet measured on {g.label}"\n'
    v_bw, v_peak = vendor_ceilings(g.benchmarks, g.gpu)
    vendor = tuple(v["value"] if v else None for v in (v_bw, v_peak))
    label = f"Roofline of {g.label}"
    svg = render_svg(points, bandwidth, peak, label, vendor=vendor) + render_svg(
        points, bandwidth, peak, label, NARROW_WIDTH, NARROW_HEIGHT, "narrow",
        vendor=vendor,
    )  # fmt: skip
    by_metric = {}
    for b in g.benchmarks.values():
        if _matmul(b) or _dram(b):
            by_metric.setdefault(b["metric"], b)
    roofs = [
        P.ceiling_names(by_metric[m], g.gpu)[0] + f" ({shape})"
        for m, shape in (("bandwidth", "the sloped line"), ("compute", "flat"))
        if m in by_metric
    ]
    vendors = [
        f"{_fmt(v['value'])} {unit} ({v['source']})"
        for v, unit in ((v_bw, "GB/s"), (v_peak, "TFLOP/s"))
        if v
    ]
    if bandwidth and peak:
        roofs.append(
            f"measured ridge point {_fmt(peak / (bandwidth / 1e3))} FLOP/byte "
            "(the thin vertical line)"
        )
    caption = (
        f"{label}, SMs: {g.gpu['sm_count']}. Solid roof: "
        + "; ".join(roofs)
        + ". Dashed roof: vendor spec-sheet peak"
        + (f"s, {'; '.join(vendors)}" if vendors else ": none for this GPU")
        + ". Each numbered point is a Triton kernel of the course, placed from "
        "its measured time; ‡: above a ceiling (see the note below)."
    )
    lines = [
        "",
        f'<div class="course-plot roofline">{svg}'
        f"<p><em>{html.escape(caption)}</em></p></div>",
        "",
    ]
    if points:
        lines += [
            "| # | Kernel | Size | dtype | FLOP/byte | TFLOP/s | % of roof here |",
            "|---:|---|---|---|---:|---:|---:|",
        ]
        notes = []
        for i, p in enumerate(points, start=1):
            roof = attainable(p["intensity"], bandwidth, peak)
            # against the measured roof, never capped at 100 %
            pct = f"{100 * p['tflops'] / roof:.0f} %" if roof else "—"
            if p["flag"]:
                pct += " ‡"
                notes.append(f"‡ {i}. `{p['bench']}`: {_flag_note(p['flag'])}")
            title = p["title"].replace("|", "/")
            lines.append(
                f"| {i} | `{p['bench']}`: {title} | {p['size']} | {p['dtype']} "
                f"| {_fmt(p['intensity'])} | {_fmt(p['tflops'])} | {pct} |"
            )
        lines.append("")
        lines += [n + "\n" for n in notes]
    against = [(n, r) for n, r in left_out if r in _ONE_COUNT]
    others = [(n, r) for n, r in left_out if r not in _ONE_COUNT]
    if against:
        lines += [against_ceiling(against, g.benchmarks, g.gpu), ""]
    if others:
        lines.append("Not placed on the plot:")
        lines.append("")
        lines += [f"- `{name}`: {reason}" for name, reason in others]
        lines.append("")
    return "\n".join(lines)


# A benchmark whose data gives one of the two counts: off the roofline, but
# its rate still has a ceiling, the one its own table measures it against.
_ONE_COUNT = {
    "no FLOP count recorded": "bytes only",
    "no byte count recorded": "FLOPs only",
}


def _flag_note(flag: dict) -> str:
    above = ["above the vendor's spec-sheet peak"] if flag["vendor"] else []
    if flag["probe_ratio"] > 1 + T.ABOVE_PROBE_TOLERANCE:
        above.append(
            f"{100 * flag['probe_ratio']:.0f} % of the ceiling measured in this run"
        )
    why = {
        "cache": "served from L2 (its bytes fit in the L2)",
        "work model": "its byte or FLOP count includes work it does not do",
        "probe": "the probe is not this GPU's peak for this ceiling",
    }[flag["why"]]
    return f"{' and '.join(above)}: {why}."


def against_ceiling(left_out: list, bench_map: dict, gpu: dict | None = None) -> str:
    """The benchmarks the roofline cannot place (their data records bytes or
    FLOPs, not both), each at its largest size against the one ceiling its
    table measures it by, as the probe measured it: a bar per benchmark, so
    none is only a name (the number is never capped at 100 %; ‡ marks a rate
    above a ceiling)."""
    rows = []
    for name, reason in left_out:
        bench = bench_map[name]
        row = max(bench["rows"], key=lambda r: r["work"])
        result = row["results"].get("Triton")
        if result is None:
            continue
        roof = bench["roofline"]
        pct = 100.0 * result["rate"] / T.probe_of(roof)
        rate = f"{_fmt(result['rate'])} {roof['unit']}"
        flag = _flagged(bench, row, gpu) if gpu else None
        if flag:
            rate += f"; ‡ {_flag_note(flag)}"
        rows.append((roof["name"], -pct, name, rate, _ONE_COUNT[reason], pct))
    rows.sort(key=lambda r: (r[0], r[1]))
    counts = {k: sum(r[4] == k for r in rows) for k in ("bytes only", "FLOPs only")}
    what = {
        "bytes only": "only the bytes a call moves (measured against a copy bandwidth)",
        "FLOPs only": "only its FLOPs (measured against the matmul rate)",
    }
    parts = [
        f"{n} benchmark{'s' if n > 1 else ''} whose data records {what[k]}"
        for k, n in counts.items()
        if n
    ]
    out = [
        "<p>Not on the roofline, because a point needs both counts: "
        + " and ".join(parts)
        + ". Each is shown here at its largest size against the one ceiling "
        "its own table measures it by, as measured on this GPU in this run.</p>",
        # tabindex: a box that scrolls must be reachable from the keyboard
        '<div class="course-ceiling" tabindex="0" role="region" '
        'aria-label="Kernels against their own ceiling">'
        '<table class="course-ceiling-table">'
        # the bar next to the name: on a phone the last columns scroll away
        "<thead><tr><th>Kernel</th><th>Triton's rate, % of the ceiling</th>"
        "<th>ceiling</th><th>data records</th></tr></thead><tbody>",
    ]
    for ceiling, _, name, rate, kind, pct in rows:
        out.append(
            f"<tr><td><code>{html.escape(name)}</code></td>"
            '<td class="bar"><span class="track">'
            f'<span style="width:{min(pct, 100):.0f}%"></span></span>'
            f"{pct:.0f} % <small>({html.escape(rate)})</small></td>"
            f"<td>{html.escape(ceiling)}</td><td>{kind}</td></tr>"
        )
    out.append("</tbody></table></div>")
    return "".join(out)


def render_ridge(text: str, gpus: list) -> str:
    args = dict(part.partition("=")[::2] for part in text.split())
    if set(args) - {"gpu", "above"} or "gpu" not in args:
        raise ValueError(f"ridge takes gpu= and above=; got {text!r}")
    matches = _matching(gpus, args["gpu"])
    if len(matches) != 1:
        raise ValueError(f"ridge: gpu={args['gpu']!r} matches {len(matches)} files")
    bandwidth, peak = ceilings(matches[0].benchmarks)
    if not bandwidth or not peak:
        raise ValueError(f"ridge: {matches[0].label} has no measured ceilings")
    ridge = peak / (bandwidth / 1e3)
    if "above" in args:
        floor = float(args["above"])
        if ridge * (1 - RIDGE_ALLOWANCE) <= floor:
            raise ValueError(
                f"the page says {floor:g} FLOP/byte is below {matches[0].label}'s "
                f"ridge point, measured at {ridge:.0f}: too close or false "
                f"(needs {RIDGE_ALLOWANCE:.0%} to spare)"
            )
    return f"{_fmt(ridge)} FLOP/byte"


# ------------------------------------------------------------------- hook ---
def on_page_markdown(markdown, page, config, files):
    gpus = _state.get("gpus", [])

    def render(line: str) -> str:
        m = _DIRECTIVE_RE.match(line.strip())
        if m:
            return render_roofline(m.group(1), gpus)
        return _RIDGE_RE.sub(lambda r: render_ridge(r.group(1), gpus), line)

    return rewrite_directives(markdown, page, render)
