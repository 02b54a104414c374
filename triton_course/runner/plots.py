"""Hand-written SVG plots of one benchmark on one GPU: rate against size.

Pure Python, no matplotlib: the same function draws the file the runner
writes (``docs/assets/plots/<bench>-<gpu-slug>.svg``) and what the page hook
inlines, and the CPU tests can check it. Text and axes use ``currentColor``,
so an inlined plot follows the page's light or dark scheme; the peer colours
are mid-tones that read on both.

One panel per dtype; one line per peer; the roofline measured in the same run
is a dashed horizontal line and the vendor's spec-sheet peak for the same
ceiling a dash-dotted one, each labelled as what it is (``ceiling_names``),
where no data point, line or other label is. So is each target a page
states and the parity line of a ratio panel; where one of a panel's labels
finds no free place, the panel is drawn again with all its lines named in
its legend instead (a label is never drawn over the data). With one
size parameter varying, the x axis is that parameter on a log2 scale; with
several that form a grid, small multiples (a panel per setting of the
others, see groups()); otherwise categories ordered by size. The y axis
turns logarithmic where the data span more than LOG_SPAN. Every text's
estimated extent stays inside the viewBox, and line labels are placed so
that none overlaps another or the data (Labels).

A rate panel also draws, dotted, each published figure that the benchmark's
snippet declares for it in ``REFERENCE_LINES`` (another party's result, such
as a paper's, never a measurement of this course): see read_reference_lines.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from html import escape
from pathlib import Path

from triton_course import timings as T
from triton_course.runner import measure as M

PEER_COLORS = {
    "Triton": "#f76707",
    "PyTorch eager": "#4263eb",
    "torch.compile": "#2f9e44",
}
EXTRA_COLORS = ("#ae3ec9", "#1098ad", "#e64980", "#868e96")
DASHES = {"Triton": "", "PyTorch eager": "6 3", "torch.compile": "2 3"}
MEASURED_DASH, VENDOR_DASH = "8 4", "12 3 2 3"  # the two ceiling lines
TARGET_DASH, PARITY_DASH = "2 3", "8 4"  # a page's target; 1× on a ratio panel
REFERENCE_DASH = "1 2"  # a published figure (REFERENCE_LINES), dotted
REPO_ROOT = Path(__file__).resolve().parents[2]
# What each roofline's probe is (measure.py times them): the measured line's name
PROBES = {
    "bandwidth": f"{M.COPY_BYTES // 2**30} GiB device copy",
    "compute": f"{M.MATMUL_N}³ bf16 matmul",
    "compute_fp8": f"{M.FP8_MATMUL_N}³ FP8 torch._scaled_mm",
    "l2": f"{M.L2_COPY_BYTES // 2**20} MiB L2 copy",
}


def _fmt_rate(v: float) -> str:
    return f"{v:,.0f}".replace(",", " ") if v >= 100 else f"{v:.3g}"


def ceiling_key(bench: dict) -> str:
    """Which roofline: "bandwidth" (DRAM), "compute" or "l2"."""
    roof = bench["roofline"]
    metric = "compute" if roof["unit"] == "TFLOP/s" else "bandwidth"
    return roof.get("ceiling") or bench.get("metric", metric)


def ceiling_names(bench: dict, gpu: dict) -> tuple[str, str]:
    """(the measured line, the vendor's line) named as what they are, with
    their values: what the tables' captions and the plots say."""
    roof, key = bench["roofline"], ceiling_key(bench)
    unit = roof["unit"]
    measured = (
        f"{roof['name']} measured on this GPU in this run ({PROBES[key]}): "
        f"{_fmt_rate(T.probe_of(roof))} {unit}"
    )
    peak = T.vendor_peak_of(roof, gpu["name"])
    if peak is not None:
        vendor = (
            f"vendor spec-sheet peak ({peak['source']}): "
            f"{_fmt_rate(peak['value'])} {unit}"
        )
    elif key == "l2":
        vendor = "no vendor spec-sheet peak: the datasheet gives no L2 bandwidth"
    else:
        vendor = (
            "no vendor spec-sheet peak: triton_course/vendor_peaks.py has no "
            f"entry for {gpu['name']}"
        )
    return measured, vendor


def _ceiling_labels(bench: dict, gpu: dict, narrow: bool) -> list[tuple]:
    """[(value, dash, css class, label)] of the lines a rate panel draws."""
    roof = bench["roofline"]
    unit = roof["unit"]
    probe = T.probe_of(roof)
    peak = T.vendor_peak_of(roof, gpu["name"])
    if narrow:  # a phone's or small multiple's width: the table names them
        lines = [(probe, MEASURED_DASH, "roofline",
                  f"measured in this run {_fmt_rate(probe)}")]  # fmt: skip
        if peak:
            lines.append((peak["value"], VENDOR_DASH, "vendor-peak",
                          f"vendor peak {_fmt_rate(peak['value'])}"))  # fmt: skip
        return lines
    lines = [(probe, MEASURED_DASH, "roofline",
              f"measured on this GPU in this run ({PROBES[ceiling_key(bench)]}) "
              f"{_fmt_rate(probe)} {unit}")]  # fmt: skip
    if peak:
        sheet = f"{peak['source'].split()[0]} datasheet"
        lines.append((peak["value"], VENDOR_DASH, "vendor-peak",
                      f"vendor spec-sheet peak ({sheet}) "
                      f"{_fmt_rate(peak['value'])} {unit}"))  # fmt: skip
    return lines


# ---------------------------------------------------------- reference lines ---
# A snippet may declare published figures to draw beside its measurements:
#
#     REFERENCE_LINES = [
#         {
#             "label": "FlashAttention-3 paper (H100 SXM5, 16k tokens)",
#             "short_label": "FlashAttention-3 paper",  # optional: narrow panels
#             "source": "Shah et al., arXiv:2407.08608 (July 2024), ...",
#             "unit": "TFLOP/s",
#             "values": [
#                 {"bench": "flash_attention_fwd",
#                  "where": {"head_dim": 128, "causal": 0}, "value": 648},
#             ],
#         },
#     ]
#
# "where" names the panel: size parameters (and optionally "dtype") that every
# row of a rate panel holds. It is read with ast, never imported: the docs
# build has neither torch nor triton. The value is in the benchmark's own
# unit, so the work model behind it must be the benchmark's (the snippet says
# so beside the figures).
_REFERENCE_KEYS = ("label", "short_label", "source", "unit", "values")
_REFERENCE_REQUIRED = ("label", "source", "unit", "values")
_VALUE_KEYS = ("bench", "where", "value")
UNIT_OF_METRIC = {"compute": "TFLOP/s", "bandwidth": "GB/s"}


class ReferenceLineError(ValueError):
    """A snippet's REFERENCE_LINES that cannot be drawn as it says."""


def _constant(node):
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def declared_benchmarks(tree: ast.Module) -> dict[str, dict]:
    """name -> {"title", "params", "metric"} of each benchmark description a
    snippet writes as a dict literal (BENCHMARK or BENCHMARKS), read from
    the source: the values that are literals, None for the others."""
    found = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign) or not any(
            isinstance(t, ast.Name) and t.id in ("BENCHMARK", "BENCHMARKS")
            for t in node.targets
        ):
            continue
        items = node.value.elts if isinstance(node.value, ast.List) else [node.value]
        for item in items:
            if not isinstance(item, ast.Dict):
                continue
            fields = {
                k.value: _constant(v)
                for k, v in zip(item.keys, item.values, strict=True)
                if isinstance(k, ast.Constant) and isinstance(k.value, str)
            }
            if isinstance(fields.get("name"), str):
                found[fields["name"]] = {
                    key: fields.get(key) for key in ("title", "params", "metric")
                }
    return found


def check_reference_lines(lines, benches: dict, where: str) -> list[dict]:
    """Validate a REFERENCE_LINES value against the benchmarks its snippet
    declares (declared_benchmarks); return one dict per line to draw:
    bench, where, value, label, short_label, unit, source. Anything that
    cannot be drawn as declared raises ReferenceLineError naming it."""

    def fail(message):
        raise ReferenceLineError(f"{where}: REFERENCE_LINES{message}")

    if not isinstance(lines, list) or not lines:
        fail(" must be a non-empty list of dicts, one per published source")
    out = []
    for i, group in enumerate(lines):
        at = f"[{i}]"
        if not isinstance(group, dict):
            fail(f"{at} must be a dict, got {type(group).__name__}")
        missing = [k for k in _REFERENCE_REQUIRED if k not in group]
        if missing:
            fail(
                f"{at} misses {missing}: a published figure says what it is "
                "('label'), where it was published ('source'), its 'unit' "
                "and its 'values'"
            )
        unknown = [k for k in group if k not in _REFERENCE_KEYS]
        if unknown:
            fail(f"{at} has unknown keys {unknown} (allowed: {list(_REFERENCE_KEYS)})")
        for key in ("label", "short_label", "source"):
            if key in group and not (
                isinstance(group[key], str) and group[key].strip()
            ):
                fail(f"{at}[{key!r}] must be a non-empty string")
        if group["unit"] not in UNIT_OF_METRIC.values():
            fail(f"{at}['unit'] must be one of {sorted(UNIT_OF_METRIC.values())}")
        values = group["values"]
        if not isinstance(values, list) or not values:
            fail(f"{at}['values'] must be a non-empty list")
        for j, item in enumerate(values):
            at_item = f"{at}['values'][{j}]"
            if not isinstance(item, dict) or sorted(item) != sorted(_VALUE_KEYS):
                fail(
                    f"{at_item} must be a dict with exactly the keys "
                    f"{list(_VALUE_KEYS)}, got {item!r}"
                )
            name = item["bench"]
            if name not in benches:
                fail(
                    f"{at_item} names benchmark {name!r}, which this snippet "
                    f"does not declare (it declares {sorted(benches)})"
                )
            bench = benches[name]
            metric_unit = UNIT_OF_METRIC.get(bench.get("metric"))
            if metric_unit is not None and metric_unit != group["unit"]:
                fail(
                    f"{at}['unit'] is {group['unit']!r}, but {name!r} is "
                    f"measured in {metric_unit}"
                )
            value = item["value"]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                fail(f"{at_item}['value'] must be a number, got {value!r}")
            if not value > 0:
                fail(f"{at_item}['value'] must be positive, got {value!r}")
            chosen = item["where"]
            if not isinstance(chosen, dict) or not chosen:
                fail(
                    f"{at_item}['where'] must name the panel: a dict of size "
                    "parameters (and optionally 'dtype') and their values"
                )
            params = list(bench.get("params") or [])
            for key in chosen:
                if key != "dtype" and key not in params:
                    fail(
                        f"{at_item}['where'] names {key!r}, which is not a "
                        f"parameter of {name!r} ({params} or 'dtype')"
                    )
            out.append({
                "bench": name, "where": dict(chosen), "value": float(value),
                "label": group["label"],
                "short_label": group.get("short_label", group["label"]),
                "unit": group["unit"], "source": group["source"],
            })  # fmt: skip
    return out


_declarations: dict = {}  # path -> ((mtime_ns, size), (benches, lines))


def read_reference_lines(path: Path) -> tuple[dict, list[dict]]:
    """(the benchmarks, the checked reference lines) a snippet declares,
    read from its source (not imported); ([], ...) without REFERENCE_LINES.
    Read once per version of the file."""
    path = Path(path)
    stat = path.stat()
    version = (stat.st_mtime_ns, stat.st_size)
    cached = _declarations.get(path)
    if cached and cached[0] == version:
        return cached[1]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    benches = declared_benchmarks(tree)
    lines: list[dict] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "REFERENCE_LINES" for t in node.targets
        ):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                raise ReferenceLineError(
                    f"{path}: REFERENCE_LINES must be a literal (lists, dicts, "
                    "strings, numbers): the docs build reads it from the source "
                    "without importing the snippet"
                ) from None
            lines = check_reference_lines(value, benches, str(path))
    _declarations[path] = (version, (benches, lines))
    return benches, lines


def references_for(bench: dict, root: Path = REPO_ROOT) -> list[dict]:
    """The reference lines that the snippet a benchmark record names
    (``bench["snippet"]``) declares for it, the benchmark found by the
    title the record carries; none where that file is gone."""
    snippet = bench.get("snippet")
    path = Path(root) / snippet if snippet else None
    if path is None or not path.is_file():
        return []
    benches, lines = read_reference_lines(path)
    names = {n for n, d in benches.items() if d.get("title") == bench.get("title")}
    return [line for line in lines if line["bench"] in names]


def _holds(line: dict, rows: list) -> bool:
    """Whether every row of a panel is of the setting a reference names."""
    return bool(rows) and all(
        (r["dtype"] if key == "dtype" else r["size"].get(key)) == value
        for r in rows
        for key, value in line["where"].items()
    )


def _rate_panels(bench: dict) -> list[list]:
    """The rows of each rate panel render_svg draws (per dtype, per small
    multiple)."""
    panels = []
    for dtype in dict.fromkeys(r["dtype"] for r in bench["rows"]):
        rows = [r for r in bench["rows"] if r["dtype"] == dtype]
        panels += [prows for _, prows in groups(bench, rows)[1]]
    return panels


def check_reference_panels(bench: dict, lines: list[dict]) -> list[dict]:
    """The lines, each checked to name at least one rate panel of this
    benchmark's plot; a line that names none (a size only part of a panel
    has, a value no row has) raises ReferenceLineError."""
    panels = _rate_panels(bench)
    for line in lines:
        if not any(_holds(line, rows) for rows in panels):
            settings = sorted(
                {
                    ", ".join(f"{k} {v}" for k, v in rows[0]["size"].items()
                              if all(r["size"][k] == v for r in rows))
                    for rows in panels
                }
            )  # fmt: skip
            raise ReferenceLineError(
                f"{line['bench']}: the reference line {line['label']!r} at "
                f"{line['value']:g} {line['unit']} is declared for "
                f"{line['where']}, which is no panel of its plot: every row of "
                f"a panel must hold it (the panels: {settings})"
            )
    return lines


def _setting(line: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in line["where"].items())


def describe_reference(line: dict) -> str:
    """What one line draws, where, and its source (its hover title)."""
    return (
        f"{line['label']}: {_fmt_rate(line['value'])} {line['unit']} at "
        f"{_setting(line)}; {line['source']}"
    )


def describe_references(lines: list[dict]) -> list[str]:
    """Sentences of a caption, one per source: its label, each value at its
    panel's setting, then the source."""
    by_source: dict[tuple, list] = {}
    for line in lines:
        key = (line["label"], line["source"], line["unit"])
        by_source.setdefault(key, []).append(line)
    return [
        f"{label}: "
        + "; ".join(f"{_fmt_rate(x['value'])} {unit} at {_setting(x)}" for x in group)
        + f" ({source})."
        for (label, source, unit), group in by_source.items()
    ]


def _reference_label(line: dict, narrow: bool) -> str:
    if narrow:
        return f"{line['short_label']} {_fmt_rate(line['value'])}"
    return f"{line['label']} {_fmt_rate(line['value'])} {line['unit']}"


def _reference_line(out: list, L: Layout, y: float, line: dict) -> None:
    """A published figure across the panel, dotted; its hover title names
    the source (the caption under the plot does too)."""
    out.append(
        f'<line class="reference" data-reference="{escape(line["label"])}" '
        f'data-value="{line["value"]:g}" x1="{L.left}" y1="{y:.1f}" '
        f'x2="{L.w - L.right}" y2="{y:.1f}" stroke="currentColor" '
        f'stroke-width="2" stroke-dasharray="{REFERENCE_DASH}" '
        f'stroke-opacity="0.8"><title>{escape(describe_reference(line))}'
        "</title></line>"
    )


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


_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def fmt_size(v) -> str:
    """A size as the tables write it: 2¹² for a power of two from 1024 up."""
    if isinstance(v, int) and v >= 1024 and v & (v - 1) == 0:
        return "2" + str(v.bit_length() - 1).translate(_SUPERSCRIPT)
    return str(v)


def _size_label(size: dict, params: list) -> str:
    return "×".join(fmt_size(size[p]) for p in params)


def plain(text: str) -> str:
    """A title as plain text: SVG shows Markdown's backticks literally."""
    return text.replace("`", "")


def text_width(text: str, font_size: float) -> float:
    """An upper estimate of a text's width in SVG units (system-ui; wide
    glyphs such as digits and capitals are about 0.62 em)."""
    return 0.62 * font_size * len(text)


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
    x0 = 4 if L.narrow else L.left
    # every line must end inside the viewBox: wrap on the estimated width
    titles = _wrap(plain(title), L.w - x0 - 4, 0.62 * 14)
    for i, line in enumerate(titles):
        out.append(
            f'<text x="{x0}" y="{y0 + 16 + 17 * i}" '
            f'font-size="14" font-weight="600" fill="currentColor">'
            f"{escape(line)}</text>"
        )
    y = y0 + 16 + 17 * (len(titles) - 1) + 18
    widths = [text_width(text, 11) + (22 if key else 4) for key, text in legend]
    if not L.narrow and sum(widths) <= L.w - L.right - L.left:
        lx = L.w - L.right  # right-aligned, one line
        for (key, text), width in reversed(list(zip(legend, widths, strict=True))):
            lx -= width
            _legend_entry(out, key, lx, y, text)
        return y - y0 + 10
    lx = 4
    for key, text in legend:
        width = text_width(text, 11) + (22 if key else 4)
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


# Small multiples in the page's column: two panels side by side, each laid
# out like a phone's (title wrapped, legend flowing).
SUB = Layout(
    w=320,
    plot_h=150,
    left=56,
    right=12,
    bottom=46,
    max_xlabels=6,
    slant=45,
    slanted_bottom=96,
    narrow=True,
)
LOG_SPAN = 30  # data whose largest / smallest exceeds this gets a log y axis


@dataclass
class YScale:
    """Value -> fraction of the panel's height, and the ticks to draw."""

    lo: float
    hi: float
    log: bool
    ticks: list

    def frac(self, v: float) -> float:
        if self.log:
            v = max(v, self.lo)
            return (math.log10(v) - math.log10(self.lo)) / (
                math.log10(self.hi) - math.log10(self.lo)
            )
        return (v - self.lo) / (self.hi - self.lo)


def yscale(values: list, pad: float = 1.05) -> YScale:
    """Linear from 0, or log10 where the positive data spans more than
    LOG_SPAN (0.7 to 63 on a linear 0..800 axis hides the small ones)."""
    pos = [v for v in values if v > 0]
    top = max(pos) if pos else 1.0
    if pos and top / min(pos) > LOG_SPAN:
        lo = 10 ** math.floor(math.log10(min(pos)))
        hi = 10 ** math.ceil(math.log10(top * pad))
        decades = round(math.log10(hi / lo))
        mults = (1, 2, 5) if decades <= 3 else (1,)
        ticks = [
            m * 10**e
            for e in range(round(math.log10(lo)), round(math.log10(hi)) + 1)
            for m in mults
            if lo <= m * 10**e <= hi * 1.0001
        ]
        return YScale(lo, hi, True, ticks)
    step = _nice_step(top * pad)
    hi = step * math.ceil(top * pad / step)
    n = round(hi / step)
    return YScale(0.0, hi, False, [round(k * step, 9) for k in range(n + 1)])


def _positive(size: dict, p: str) -> bool:
    v = size[p]
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0


def _magnitude(size: dict, params: list) -> float:
    """How big a size is, to order categories: the product of its numbers."""
    out = 1.0
    for p in params:
        if _positive(size, p):
            out *= size[p]
    return out


@dataclass
class XAxis:
    """Numeric (one parameter, log2) or categories ordered by size."""

    params: list
    numeric: bool
    labels: list  # categorical: the labels in order

    def value(self, size: dict) -> float:
        if self.numeric:
            return math.log2(size[self.params[0]])
        return self.labels.index(_size_label(size, self.params))


def xaxis(sizes: list, params: list) -> XAxis:
    varying = [p for p in params if len({s[p] for s in sizes}) > 1] or params[:1]
    if len(varying) == 1 and all(_positive(s, varying[0]) for s in sizes):
        return XAxis(varying, True, [])
    labels = []
    for s in sorted(
        sizes, key=lambda s: (_magnitude(s, varying), _size_label(s, varying))
    ):
        if (lab := _size_label(s, varying)) not in labels:
            labels.append(lab)
    return XAxis(varying, False, labels)


class Labels:
    """Labels on a panel's lines placed so that none overlaps another, nor
    the data (markers, whiskers, the peers' lines and the other lines, given
    to ``avoid``): each tries the right end above its line, the left end,
    then below, then every position along the line."""

    def __init__(self, L: Layout, top: float, bottom: float):
        self.L, self.top, self.bottom, self.boxes = L, top, bottom, []
        self.obstacles: list[tuple] = []  # boxes and segments of the data

    def avoid(self, *segments: tuple) -> None:
        """Lines a label must not cross: segments (x1, y1, x2, y2)."""
        self.obstacles += [("seg", s) for s in segments]

    def avoid_box(self, box: tuple) -> None:
        """An area a label must not cover (x1, y1, x2, y2): a marker."""
        self.obstacles.append(("box", box))

    def _free(self, box: tuple) -> bool:
        L = self.L
        if box[1] < self.top or box[3] > self.bottom:
            return False
        if box[0] < L.left or box[2] > L.w - L.right:
            return False
        if any(_overlap(box, b) for b in self.boxes):
            return False
        return not any(
            _overlap(box, o) if kind == "box" else _crosses(box, o)
            for kind, o in self.obstacles
        )

    def place(
        self, out: list, x_right: float, y: float, text: str, strict=False
    ) -> bool:
        """Draw the label; strict: only where it is free (else draw nothing
        and return False, for the caller to name the line elsewhere)."""
        w, L = text_width(text, 11), self.L
        spots = [(x_right - w, y - 5), (L.left + 4, y - 5),
                 (x_right - w, y + 13), (L.left + 4, y + 13)]  # fmt: skip
        x = x_right - w - 12
        while x > L.left + 4:  # then every 12 units along the line
            spots += [(x, y - 5), (x, y + 13)]
            x -= 12
        for x, base in spots:
            box = (x, base - 10, x + w, base + 3)
            if self._free(box):
                break
        else:
            if strict:
                return False
            x, base = spots[0]
            box = (x, base - 10, x + w, base + 3)
        self.boxes.append(box)
        out.append(
            f'<text class="line-label" x="{x:.1f}" y="{base:.1f}" font-size="11" '
            f'fill="currentColor">{escape(text)}</text>'
        )
        return True


def _overlap(a: tuple, b: tuple) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _crosses(box: tuple, seg: tuple) -> bool:
    """Whether a segment passes through a box (Liang-Barsky clipping)."""
    x1, y1, x2, y2 = seg
    dx, dy = x2 - x1, y2 - y1
    lo, hi = 0.0, 1.0
    for p, q in ((-dx, x1 - box[0]), (dx, box[2] - x1),
                 (-dy, y1 - box[1]), (dy, box[3] - y1)):  # fmt: skip
        if p == 0:
            if q < 0:
                return False
            continue
        t = q / p
        if p < 0:
            lo = max(lo, t)
        else:
            hi = min(hi, t)
        if lo > hi:
            return False
    return True


def _frame(
    out: list, L: Layout, axis: XAxis, sizes: list, y0: float, top: float,
    ys: YScale, ylabel: str, suffix: str = "",
):  # fmt: skip
    """Draw one panel's grid, y ticks, x ticks and axis labels below a
    header of height `top` into `out`; return (px, py, foot): a row's size
    to x, a value to y, and the room taken below the axis."""
    plot_w, plot_h = L.w - L.left - L.right, L.plot_h
    xs = sorted({axis.value(s) for s in sizes})
    lo, span = xs[0], (xs[-1] - xs[0]) or 1.0
    inset = 0 if axis.numeric else min(24, plot_w / (2 * len(xs)))

    def px(size: dict) -> float:
        if len(xs) == 1:
            return L.left + plot_w / 2
        return L.left + inset + (axis.value(size) - lo) / span * (plot_w - 2 * inset)

    def py(value: float) -> float:
        return y0 + top + plot_h * (1 - ys.frac(value))

    for tick in ys.ticks:  # grid and y ticks
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
    every = math.ceil(len(xs) / L.max_xlabels)  # thin the labels, keep the ticks
    slant = 0 if axis.numeric else L.slant
    for i, v in enumerate(xs):  # x ticks
        x = px({**sizes[0], axis.params[0]: 2**v}) if axis.numeric else None
        if not axis.numeric:
            x = L.left + inset + (v - lo) / span * (plot_w - 2 * inset)
            if len(xs) == 1:
                x = L.left + plot_w / 2
        label = None
        if i % every == 0:
            if not axis.numeric:
                label = escape(axis.labels[int(v)])
            elif v == int(v) and v >= 10:
                label = escape(fmt_size(2 ** int(v)))
            else:
                label = escape(_fmt_tick(round(2**v, 3)))
        out.append(_xtick(x, y0 + top + plot_h, label, slant))
    out.append(
        f'<path d="M{L.left},{y0 + top} V{y0 + top + plot_h} H{L.w - L.right}" '
        'fill="none" stroke="currentColor" stroke-width="1"/>'
    )
    xlabel = " × ".join(axis.params) + (" (log scale)" if axis.numeric else "")
    foot = L.bottom if axis.numeric else L.slanted_bottom  # below slanted labels
    out.append(
        f'<text x="{L.w - L.right:.1f}" y="{y0 + top + plot_h + foot - 4}" '
        f'font-size="12" text-anchor="end" fill="currentColor">'
        f"{escape(xlabel)}</text>"
    )
    yl = ylabel + (" (log scale)" if ys.log else "")
    out.append(
        f'<text transform="translate(14,{y0 + top + plot_h / 2:.1f}) rotate(-90)" '
        'font-size="12" text-anchor="middle" fill="currentColor">'
        f"{escape(yl)}</text>"
    )
    return px, py, foot


def row_key(row: dict) -> tuple:
    """What names one row of a benchmark: its dtype and size."""
    return (row["dtype"], tuple(sorted(row["size"].items())))


def _hline(
    out: list, L: Layout, y: float, label: str, labels: Labels, cls: str = "",
    dash="8 4",
):  # fmt: skip
    """A labelled dashed line across the panel (roofline, parity)."""
    cls_attr = f'class="{cls}" ' if cls else ""
    out.append(
        f'<line {cls_attr}x1="{L.left}" y1="{y:.1f}" x2="{L.w - L.right}" '
        f'y2="{y:.1f}" stroke="currentColor" stroke-width="1.5" '
        f'stroke-dasharray="{dash}" stroke-opacity="0.7"/>'
    )
    if label:
        return labels.place(out, L.w - L.right - 4, y, label, strict=True)
    return True


def _target_shown(rows: list, target: dict) -> bool:
    """Whether a target is stated for any of these rows (else not drawn)."""
    keys = target.get("rows")
    return any(keys is None or row_key(r) in keys for r in rows)


def _target_line(
    out: list, L: Layout, px, rows: list, target: dict, y: float, label: str,
    labels: Labels,
):  # fmt: skip
    """A target a page states, drawn over the sizes it is stated for: the
    whole panel, a range of sizes, or a short mark at one size; labelled
    only where the label is clear of the data (returns False where it is
    not: the caller names the line in the legend). An empty label: the
    legend names it."""
    keys = target.get("rows")
    xs = [px(r["size"]) for r in rows if keys is None or row_key(r) in keys]
    if not xs:
        return True
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
        f'stroke-width="1.5" stroke-dasharray="{TARGET_DASH}" stroke-opacity="0.8"/>'
    )
    if not label:
        return True
    return labels.place(out, min(max(x2 - 4, L.left + 4 + text_width(label, 11)),
                                 L.w - L.right - 4), y, label, True)  # fmt: skip


def _dash_key(x: float, y: float, dash: str) -> str:
    """A legend key for a dashed line (class "point", renamed by the legend)."""
    return (
        f'<line class="point" x1="{x - 6:.1f}" y1="{y:.1f}" x2="{x + 6:.1f}" '
        f'y2="{y:.1f}" stroke="currentColor" stroke-width="1.5" '
        f'stroke-dasharray="{dash}"/>'
    )


def _panel(
    L: Layout, bench: dict, gpu: dict, rows: list, title: str, y0: float,
    targets=(), scale_rows=None, in_legend: bool = False, references=(),
) -> tuple[list[str], float]:  # fmt: skip
    """Rate against size for every implementation, with the measured roofline,
    the vendor's peak and the published figures (``references``) this
    panel's rows are all of; returns the SVG and the panel's height. Each
    ceiling, target and reference line is labelled where no data is; where
    one finds no such place, the panel is drawn again with all of them
    named in its legend (in_legend)."""
    peers = [p for p in bench["peers"] if any(p in r["results"] for r in rows)]
    ceilings = _ceiling_labels(bench, gpu, L.narrow)
    roof = T.probe_of(bench["roofline"])
    mine = [ref for ref in references if _holds(ref, rows)]
    # small multiples share one y scale (scale_rows: every row of the dtype),
    # which holds every reference line of the benchmark
    every = scale_rows or rows
    ys = yscale(
        [v for v, *_ in ceilings]
        + [ref["value"] for ref in references]
        + [r["results"][p]["rate"] for r in every for p in r["results"]]
    )
    dtype = rows[0]["dtype"]
    out = [f'<g class="panel" data-dtype="{escape(dtype)}">']
    legend = []
    for k, peer in enumerate(peers):
        color = _color(peer, bench["peers"])
        kind = MARKERS[k % len(MARKERS)]
        legend.append(
            (lambda x, y, kind=kind, color=color: _marker(kind, x, y, color), peer)
        )
    # "at least X % of the roofline", where a page says so
    goals = [
        (t, f"target {t['value']:g} % of the measured ceiling")
        for t in targets
        if t["kind"] == "roofline" and _target_shown(rows, t)
    ]
    if in_legend:
        legend += [
            (lambda x, y, dash=dash: _dash_key(x, y, dash), text)
            for _, dash, _, text in ceilings
        ] + [
            (lambda x, y: _dash_key(x, y, TARGET_DASH), text)
            for text in dict.fromkeys(text for _, text in goals)
        ] + [
            (lambda x, y: _dash_key(x, y, REFERENCE_DASH),
             _reference_label(ref, L.narrow))
            for ref in mine
        ]  # fmt: skip
    head = _header(out, L, y0, title, legend)
    axis = xaxis([r["size"] for r in rows], bench["params"])
    px, py, foot = _frame(
        out, L, axis, [r["size"] for r in rows], y0, head, ys, bench["unit"]
    )
    labels = Labels(L, y0 + head, y0 + head + L.plot_h)
    # the data first, so that no label lands on it
    series = {}
    for peer in peers:
        pts = sorted(
            (px(r["size"]), py(r["results"][peer]["rate"]))
            for r in rows
            if peer in r["results"]
        )
        spreads = []
        for r in rows:  # the spread over the runner's rounds
            res = r["results"].get(peer)
            if res and res.get("q25_ms", 0) > 0 and res.get("q75_ms", 0) > 0:
                scale = res["rate"] * res["median_ms"]  # rate = scale / ms
                spreads.append(
                    (px(r["size"]), py(scale / res["q75_ms"]),
                     py(scale / res["q25_ms"]))
                )  # fmt: skip
        series[peer] = (pts, spreads)
        pairs = zip(pts, pts[1:], strict=False)
        labels.avoid(*((a[0], a[1], b[0], b[1]) for a, b in pairs))
        for x, y in pts:
            labels.avoid_box((x - 5, y - 5, x + 5, y + 5))
        for x, top, bottom in spreads:
            labels.avoid_box((x - 3, top, x + 3, bottom))
    for value, dash, cls, _ in ceilings:
        _hline(out, L, py(value), "", labels, cls=cls, dash=dash)
        labels.avoid((L.left, py(value), L.w - L.right, py(value)))
    for ref in mine:
        _reference_line(out, L, py(ref["value"]), ref)
        labels.avoid((L.left, py(ref["value"]), L.w - L.right, py(ref["value"])))
    placed = all(
        in_legend or labels.place(out, L.w - L.right - 4, py(value), text, True)
        for value, _, _, text in ceilings
    ) and all(
        _target_line(out, L, px, rows, t, py(roof * t["value"] / 100),
                     "" if in_legend else text, labels)
        for t, text in goals
    ) and all(
        in_legend or labels.place(out, L.w - L.right - 4, py(ref["value"]),
                                  _reference_label(ref, L.narrow), True)
        for ref in mine
    )  # fmt: skip
    if not placed:
        return _panel(L, bench, gpu, rows, title, y0, targets, scale_rows, True,
                      references)  # fmt: skip
    # one line per peer
    for k, peer in enumerate(peers):
        color = _color(peer, bench["peers"])
        pts, spreads = series[peer]
        if len(pts) > 1:
            d = " ".join(
                f"{'M' if i == 0 else 'L'}{x:.1f},{y:.1f}"
                for i, (x, y) in enumerate(pts)
            )
            dash = DASHES.get(peer, "4 2 1 2")
            dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
            style = f'stroke="{color}" stroke-width="2"{dash_attr}'
            out.append(f'<path class="series-line" d="{d}" fill="none" {style}/>')
        out.append(f'<g class="series" data-peer="{escape(peer)}">')
        out += [_marker(MARKERS[k % len(MARKERS)], x, y, color) for x, y in pts]
        out.append("</g>")
        out += [_whisker(x, top, bottom, color) for x, top, bottom in spreads]
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


def ratio_points(bench: dict, dtype: str, vs: str | None = None, rows=None) -> list:
    """Per row of one dtype: Triton ÷ the peer ``vs`` (default: the best
    peer): the median of the round-by-round ratios with their interval, the
    number tables and ``[[measured ratio:]]`` print."""
    points = []
    for r in bench["rows"] if rows is None else rows:
        if r["dtype"] != dtype or "Triton" not in r["results"]:
            continue
        peer = best_peer(r) if vs is None else vs
        if peer not in r["results"]:
            continue
        spread = T.paired_ratio(r, peer)
        points.append(
            {"row": r, "peer": peer, "ratio": spread.median, "low": spread.low,
             "high": spread.high}
        )  # fmt: skip
    return points


def _ratio_panel(
    L: Layout, bench: dict, gpu: dict, rows: list, title: str, y0: float,
    targets=(), vs=None, in_legend: bool = False,
) -> tuple[list[str], float]:  # fmt: skip
    """Triton's rate over `vs`'s (None: the fastest other implementation) per
    size, with parity and the targets stated against `vs`; returns the SVG
    and the panel's height. Parity and the targets are labelled on their
    lines where no data is, else (in_legend) named in the legend."""
    dtype = rows[0]["dtype"]
    points = ratio_points(bench, dtype, vs, rows)
    mine = [t for t in targets if t["kind"] == "ratio" and t.get("peer") == vs]
    top = max([1.0] + [t["value"] for t in mine] + [p["high"] for p in points]) * 1.1
    step = _nice_step(top)
    hi = step * math.ceil(top / step)
    ys = YScale(
        0.0, hi, False, [round(k * step, 9) for k in range(round(hi / step) + 1)]
    )
    out = [f'<g class="panel ratio" data-dtype="{escape(dtype)}">']
    peers = sorted({p["peer"] for p in points})
    against = "fastest other" if vs is None else "against"
    prow = [p["row"] for p in points]
    goals = [(t, f"target {t['value']:g}×") for t in mine if _target_shown(prow, t)]
    # a target of 1× over every size is labelled instead of parity
    plain_parity = not any(t["value"] == 1.0 and t.get("rows") is None for t in mine)
    legend = [(None, f"{against}: {', '.join(peers)}")]
    if in_legend:
        named = [(PARITY_DASH, "parity 1×")] if plain_parity else []
        # two targets of one value over different sizes: one legend entry
        named += dict.fromkeys((TARGET_DASH, text) for _, text in goals)
        legend += [
            (lambda x, y, dash=dash: _dash_key(x, y, dash), text)
            for dash, text in named
        ]
    head = _header(out, L, y0, title, legend)
    sizes = [p["row"]["size"] for p in points]
    axis = xaxis(sizes, bench["params"])
    px, py, foot = _frame(
        out, L, axis, sizes, y0, head, ys, "Triton ÷ peer", suffix="×"
    )
    labels = Labels(L, y0 + head, y0 + head + L.plot_h)
    marks = sorted(((px(p["row"]["size"]), p) for p in points), key=lambda t: t[0])
    for (xa, a), (xb, b) in zip(marks, marks[1:], strict=False):
        labels.avoid((xa, py(a["ratio"]), xb, py(b["ratio"])))
    for x, p in marks:  # the label of a line keeps off the points
        labels.avoid_box((x - 5, py(p["ratio"]) - 5, x + 5, py(p["ratio"]) + 5))
        labels.avoid_box((x - 3, py(p["high"]), x + 3, py(p["low"])))
    parity = "parity 1×" if plain_parity and not in_legend else ""
    placed = _hline(out, L, py(1.0), parity, labels, cls="parity", dash=PARITY_DASH)
    placed = placed and all(
        _target_line(out, L, px, prow, t, py(t["value"]),
                     "" if in_legend else text, labels)
        for t, text in goals
    )  # fmt: skip
    if not placed:
        return _ratio_panel(L, bench, gpu, rows, title, y0, targets, vs, True)
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
        out.append(
            f'<path class="series-line" d="{d}" fill="none" stroke="{color}" '
            'stroke-width="2"/>'
        )
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


def groups(bench: dict, rows: list) -> tuple[str | None, list[tuple[str, list]]]:
    """Small multiples: with several size parameters varying, the one with
    most values becomes a numeric axis and each setting of the others a
    panel of its own ("heads 16, causal 1"). Returns (axis parameter, [(the
    panel's setting, its rows)]), or (None, [("", rows)]) where the rows are
    no such grid (GEMM shapes: one categorical axis ordered by size)."""
    params = bench["params"]
    varying = [p for p in params if len({r["size"][p] for r in rows}) > 1]
    if len(varying) < 2:
        return None, [("", rows)]
    axis = max(
        varying, key=lambda p: (len({r["size"][p] for r in rows}), params.index(p))
    )
    others = [p for p in varying if p != axis]
    found: dict[tuple, list] = {}
    for r in rows:
        found.setdefault(tuple(r["size"][p] for p in others), []).append(r)
    ok = 2 <= len(found) <= 8 and all(
        len({r["size"][axis] for r in g}) >= 2
        and all(_positive(r["size"], axis) for r in g)
        for g in found.values()
    )
    if not ok:
        return None, [("", rows)]
    out = []
    for key in sorted(found):
        setting = ", ".join(
            f"{p} {fmt_size(v)}" for p, v in zip(others, key, strict=True)
        )
        out.append((setting, found[key]))
    return axis, out


def render_svg(
    bench: dict,
    gpu: dict,
    ratio: bool = False,
    target=None,
    vs: str | None = None,
    targets: list | tuple = (),
    layout: Layout = WIDE,
    kind: str = "",
    references: list | None = None,
) -> str:
    """The whole plot as one line of SVG (safe to inline in Markdown), drawn
    for a page's column (WIDE) or a phone (NARROW). What the runner writes to
    docs/assets/plots and what `replot` redraws is render_svg(bench, gpu).

    ``references``: the published figures drawn dotted on the rate panels
    (see read_reference_lines); None, those the benchmark's snippet
    declares (references_for). One that names no panel is refused.

    kind="rate" draws only the rate panels, kind="ratio" only the ratio
    panels; by default the rate panels, and with ratio=True the ratio panels
    after them: per dtype, Triton's rate over the fastest other
    implementation (or over the peer ``vs``) at each size, with a parity
    line and a ``target`` line (a ratio to ``vs``).

    ``targets`` are the targets a page states, each a dict: ``kind``
    ("ratio", with ``peer``, or "roofline", a percentage), ``value``, and
    ``rows`` (the row_key()s it is stated for; None: every row). A ratio
    target against a peer gets that peer's ratio panel; a roofline target
    is drawn on the rate panel.

    Several size parameters: small multiples (see groups()), two a row in
    the page's column."""
    for peer in [vs] + [t.get("peer") for t in targets if t["kind"] == "ratio"]:
        if peer is not None and peer not in bench["peers"]:
            raise ValueError(f"vs={peer!r} is not a peer of {bench['title']!r}")
    if references is None:
        references = references_for(bench)
    references = check_reference_panels(bench, list(references))
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
    want_rate = kind in ("", "rate")
    want_ratio = kind == "ratio" or (ratio and kind == "")
    panels = [(_panel, d, None) for d in dtypes] if want_rate else []
    if want_ratio:
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
    title = plain(bench["title"])
    body, height = [], 0.0
    for draw, dtype, peer in panels:
        rows = [r for r in bench["rows"] if r["dtype"] == dtype]
        axis, parts = groups(bench, rows)
        what = (
            f"Triton ÷ {peer or 'the fastest other implementation'}"
            if draw is _ratio_panel
            else title
        )
        if axis is None:
            drawn, tall = _draw(draw, layout, bench, gpu, rows, f"{what} — {dtype}",
                                height, targets, peer, None, references)  # fmt: skip
            body += drawn
            height += tall
            continue
        # one heading, then a panel per setting of the other parameters
        heading: list[str] = []
        top = _header(heading, layout, height, f"{what} — {dtype}", [])
        body += heading
        height += top - 10
        sub = layout if layout.narrow else SUB
        cols = 1 if layout.narrow else 2
        for i in range(0, len(parts), cols):
            tallest = 0.0
            for j, (setting, prows) in enumerate(parts[i : i + cols]):
                drawn, tall = _draw(draw, sub, bench, gpu, prows, setting, height,
                                    targets, peer, rows, references)  # fmt: skip
                if j:
                    drawn = [
                        f'<g transform="translate({sub.w * j},0)">',
                        *drawn,
                        "</g>",
                    ]
                body += drawn
                tallest = max(tallest, tall)
            height += tallest
    label = f"{title}: {bench['unit']} against size on {gpu['name']}"
    which = "narrow" if layout.narrow else "wide"
    parts_ = [
        f'<svg xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {layout.w} {height:.0f}" width="100%" role="img" '
        f'aria-label="{escape(label)}" font-family="system-ui, sans-serif" '
        f'class="course-plot-svg {which}">',
        f"<title>{escape(label)}</title>",
        *body,
        "</svg>",
    ]
    return "".join(parts_) + "\n"


def _draw(
    draw, L, bench, gpu, rows, title, y0, targets, peer, scale_rows=None,
    references=(),
):  # fmt: skip
    if draw is _ratio_panel:
        if not ratio_points(bench, rows[0]["dtype"], peer, rows):
            return [], 0.0
        return _ratio_panel(L, bench, gpu, rows, title, y0, targets, peer)
    return _panel(L, bench, gpu, rows, title, y0, targets, scale_rows,
                  references=references)  # fmt: skip
