"""MkDocs hook: timing tables, measured numbers in prose, notebook buttons.

Every number a page shows is read here from the GPU runner's data files
(``data/timings/<gpu>.json``, format in ``triton_course/timings.py``) at build
time. Directives, each written in a page's Markdown outside code blocks:

``[[timings NAME]]``  (alone on a line)
    The table of benchmark NAME: a tab per GPU that has measured it, with
    units, ratios to each peer, percentage of the roofline and provenance.
    With no GPU data yet, a note says so plainly; no number is ever made up.

``[[measured bench=NAME gpu=h100 value=pct_roofline dtype=float32 n_elements=largest]]``
    One number from one row, inline. ``value`` is one of ``rate``,
    ``median_ms``, ``pct_roofline`` (the rate as a share of the roofline the
    probe measured on this GPU in this run; not capped at 100 %, and marked ‡
    where the rate is above the vendor's peak or more than
    ``timings.ABOVE_PROBE_TOLERANCE`` above the probe), ``roofline`` (that
    probe; ``roofline_probe`` is the same number, from when the runner could
    raise a ceiling), ``vendor_peak`` (the vendor's spec-sheet figure for the
    same ceiling), ``ratio:<peer>``
    (Triton's rate over that peer's: the median of the round-by-round ratios,
    the same number the timing table shows for that row and peer), or
    ``gpu.<field>`` (e.g. gpu.sm_count;
    gpu.l2_mib and gpu.memory_gib are derived from l2_bytes and memory_bytes).
    Size parameters select the row; ``largest`` picks the biggest value.
    ``peer=`` (default Triton) picks whose number it is.
    Quote values with spaces: ``value="ratio:PyTorch eager"``.
    ``target=X`` (with ``ratio:`` or ``pct_roofline``) appends a three-way
    verdict judged on the number's interval (see ``timings.paired_ratio``):
    ``(met)`` when all of it reaches X, ``(missed)`` when none does, ``(too
    close to call)`` when it holds X; so a verdict is never typed beside a
    number that a new run can change.

``[[verdict bench=NAME gpu=h100 value=pct_roofline target=85 dtype=float16]]``
    A target judged over every row the selector leaves (size parameters and
    dtype are optional here; ``n_cols=>=1024`` keeps sizes from 1024 up):
    "met at all 5 sizes (lowest 86 %)" or "met at 3, missed at 1, too close
    to call at 1 of 5 sizes (lowest 72 %, at n_cols 2<sup>20</sup>)".
    ``value`` is ``pct_roofline`` or ``ratio:<peer>``; each row is judged
    three-way on its interval, as with ``target=`` above.

``[[claim bench=NAME gpu=h100 value=ratio:cuBLAS is=">=0.9" dtype=float16 M=4096]]``
    A comparison the prose makes, checked: it renders the number (or, over
    several rows, the range) and FAILS THE BUILD, naming the page and the
    claim, unless the data supports ``is`` at every selected row with its
    whole interval: ``>X``/``>=X``, ``<X``/``<=X``, or ``~X`` (the interval
    lies within ±5 % of X). A claim the data makes too close to call fails
    too: it must not be stated as fact. ``value`` may also be
    ``vs:<bench>``: this benchmark's Triton rate over that one's, row by row;
    or ``row:<param>=<v>``: the row's rate over that of the row differing
    only in <param> (``row:stride=1``: a strided copy against the contiguous).

``[[plot NAME]]``  (alone on a line)
    The plot of benchmark NAME (rate against size per peer, the measured
    roofline dashed and the vendor's spec-sheet peak dash-dotted): a tab per GPU,
    inlined from ``docs/assets/plots/NAME-<gpu>.svg``
    (drawn from the data if the file is absent), in ``currentColor`` so it
    follows the light or dark scheme. Without data, a note says so. The
    rate panels of both directives also draw, dotted, the published figures
    the benchmark's snippet declares (``REFERENCE_LINES``, see
    ``triton_course/runner/plots.py``), and the caption names their source.

``[[capture NAME]]``  (alone on a line)
    A text artefact only a GPU can make (profiler table, generated code, ncu
    metrics), recorded by the runner from a snippet's ``CAPTURES``: a code
    block per GPU tab, or, where a snippet declares NAME but no data file
    holds it yet, a note that it was not yet captured on those GPUs. A NAME
    that neither a data file holds nor a snippet declares (a typo) fails
    the build.

``[[notebook notebooks/NAME.ipynb]]``  (alone on a line)
    The "Run in Colab" button (opening the notebook from ``repo_url``) and a
    download link.

A malformed data file, an unknown benchmark name where data exists, or a
selector that matches no row fails the build with a message naming the page.

Every share of a ceiling (tables, ``pct_roofline``, verdicts) is against the
probe measured in the run (``timings.probe_of``: data from the runner that
raised rooflines keep it in ``probe_value``), and each table names both lines:
the measured one and the vendor's spec-sheet peak (``vendor_peak``, or
``vendor_peaks.py`` by GPU name for data from before it was recorded).
"""

from __future__ import annotations

import html
import math
import posixpath
import re
import shlex
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.utils import get_relative_url

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:  # the hooks must work without an install
    sys.path.insert(0, str(REPO_ROOT))

from hooks._directives import rewrite_directives  # noqa: E402
from hooks._site_fixes import fix_skip_link, portable_404  # noqa: E402
from triton_course import timings as T  # noqa: E402
from triton_course.runner import discovery as D  # noqa: E402
from triton_course.runner import plots as P  # noqa: E402

STALE_TEXT = "measured on an earlier version of this kernel"
ABOVE_TEXT = "above a ceiling: the note under its table says why"
ABOVE_MARK = (
    f'<sup class="course-mark" title="{ABOVE_TEXT}"><a href="#course-marks">‡</a></sup>'
)
# The † mark links to a legend on the page itself (on_page_markdown appends
# it): a hover title alone is invisible on a touch screen.
STALE_MARK = (
    f'<sup class="course-mark" title="{STALE_TEXT}"><a href="#course-marks">†</a></sup>'
)
MARKS_ID = "course-marks"
# [[timings NAME]], optionally target=X vs="PEER": the plot's ratio panel is
# then Triton ÷ PEER (default: the fastest other) with the page's target drawn
_TABLE_RE = re.compile(
    r"^\[\[timings\s+([\w.-]+)((?:\s+\w+=(?:\"[^\"]*\"|\S+?))*)\]\]\s*$"
)
_PLOT_RE = re.compile(r"^\[\[plot\s+([\w.-]+)\]\]\s*$")
_CAPTURE_RE = re.compile(r"^\[\[capture\s+([\w.-]+)\]\]\s*$")
_NOTEBOOK_RE = re.compile(r"^\[\[notebook\s+(\S+\.ipynb)\]\]\s*$")
_MEASURED_RE = re.compile(r"\[\[measured\s+([^\]]+)\]\]")
_VERDICT_RE = re.compile(r"\[\[verdict\s+([^\]]+)\]\]")
_CLAIM_RE = re.compile(r"\[\[claim\s+([^\]]+)\]\]")
CLOSE = 0.05  # a "~X" claim: the interval lies within ±5 % of X
LAUNCH_BOUND = 1.5  # a call from Python taking this × its GPU time is launch-bound

_state: dict = {}


class ClaimError(ValueError):
    """A [[claim]] the data contradicts or cannot decide: collected per build."""


# ---------------------------------------------------------------- loading ---


def on_config(config):
    _state["broken_claims"] = []
    _state["deferred"] = []  # HTML that on_post_page puts in (see _defer)
    _state["downloads"] = {}  # (data file, slug, bench) -> bench, for on_post_build
    try:
        _state["gpus"] = T.load_for_site(config)
    except T.TimingDataError as exc:
        raise PluginError(f"timing data: {exc}") from None
    _state["root"] = Path(config["config_file_path"]).parent.resolve()
    return config


# ------------------------------------------------------------- formatting ---
def _fmt_number(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}".replace(",", " ")
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}" if value >= 0.1 else f"{value:.3g}"


def _fmt_size(value) -> str:
    if isinstance(value, int) and value >= 1024 and value & (value - 1) == 0:
        return f"2<sup>{value.bit_length() - 1}</sup>"
    if isinstance(value, int):
        return f"{value:,}".replace(",", " ")
    return str(value)


def _peer_ratio(row: dict, peer: str, base: str = "Triton"):
    """base's rate over peer's as the site shows it, in the table cell and in
    [[measured value=ratio:]] alike, so one row's ratio reads the same in
    both: the median of the round-by-round ratios (what verdicts and claims
    judge). None if either result is absent."""
    return T.paired_ratio(row, peer, base=base)


def _pct_roofline(row: dict, bench: dict, peer: str = "Triton") -> float | None:
    """The rate as a share of the probe measured in the run: above 100 %
    where a contender beat the probe (never capped)."""
    if peer not in row["results"]:
        return None
    return 100.0 * row["results"][peer]["rate"] / T.probe_of(bench["roofline"])


def _flag(bench: dict, row: dict, peer: str, gpu: dict) -> dict | None:
    """The result's above_ceiling flag: as recorded by a runner that records
    them (its rooflines carry vendor_peak), else worked out the same way."""
    result = row["results"].get(peer)
    if result is None:
        return None
    if "vendor_peak" in bench["roofline"]:
        return result.get("above_ceiling")
    return T.above_ceiling(result["rate"], bench, row, gpu)


def _why_text(flag: dict, bench: dict, row: dict, gpu: dict) -> str:
    if flag["why"] == "cache":
        return (
            f"served from L2: the row's {row['work'] / 2**20:.1f} MiB fit in the "
            f"GPU's {(gpu.get('l2_bytes') or 0) / 2**20:.0f} MiB L2, so DRAM did "
            "not supply every byte"
        )
    if flag["why"] == "work model":
        if bench["metric"] == "bandwidth":
            return (
                "the byte count includes traffic this contender does not move "
                "(working set larger than L2)"
            )
        return "the FLOP count includes work this contender does not do"
    return (
        "the probe is not this GPU's peak for this ceiling (this contender "
        "beat it, and nothing in the row's counts explains that)"
    )


def _flag_text(flag: dict, bench: dict, row: dict, gpu: dict) -> str:
    """Which line the rate is above, and why: one note under a table."""
    above = []
    if flag["vendor"]:
        above.append("above the vendor's spec-sheet peak")
    if flag["probe_ratio"] > 1 + T.ABOVE_PROBE_TOLERANCE:
        above.append(
            f"more than {100 * T.ABOVE_PROBE_TOLERANCE:.0f} % above the "
            f"{bench['roofline']['name']} measured in this run"
        )
    return (
        f"{100 * flag['probe_ratio']:.0f} % of the measured ceiling, "
        f"{' and '.join(above)}: {_why_text(flag, bench, row, gpu)}"
    )


def _flag_notes(bench: dict, gpu: dict) -> list[str]:
    """ "‡ torch.compile, n_rows 2048, n_cols 2^15, float32: 111 % of ...",
    one per flagged result (HTML)."""
    notes = []
    for row in bench["rows"]:
        for peer in bench["peers"]:
            flag = _flag(bench, row, peer, gpu)
            if flag is None:
                continue
            where = ", ".join(
                f"{html.escape(p)} {_fmt_size(row['size'][p])}" for p in bench["params"]
            )
            notes.append(
                f"‡ {html.escape(peer)}, {where}, {row['dtype']}: "
                f"{html.escape(_flag_text(flag, bench, row, gpu))}."
            )
    return notes


def _ceiling_lines(bench: dict, gpu: dict) -> str:
    """Both lines a share is read against, named as what they are."""
    measured, vendor = P.ceiling_names(bench, gpu)
    return f"{measured}; {vendor}"


def _date(bench: dict) -> str:
    return bench["provenance"]["date"][:10]


def _pm(spread: T.Spread) -> str:
    """The compact spread of a number: "±3 %"."""
    return f"±{100 * spread.rel_half_width:.0f} %"


def _inline_code(text: str) -> str:
    """Escape text for HTML, turning `x` into <code>x</code>."""
    return re.sub(r"`([^`]*)`", r"<code>\1</code>", html.escape(text, quote=False))


def _html_table(head: list[str], rows: list[list[str]]) -> str:
    """A table as raw HTML (cells already HTML): Markdown passes it through."""
    thead = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join(
        "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>" for cells in rows
    )
    return f"<table><thead><tr>{thead}</tr></thead><tbody>{body}</tbody></table>"


def render_table(bench: dict, gpu: dict) -> str:
    """The full table under a compact one (which has the ratio and roofline
    columns), as HTML: Triton's GPU time with its spread, every peer's rate
    (‡ where it stands above a ceiling), and the caption with provenance,
    method and both ceilings."""
    unit = bench["unit"]
    peers = bench["peers"]
    head = [*bench["params"], "dtype", "Triton GPU ms"]
    head += [f"{p} {unit}" for p in peers]
    rows = []
    launch_bound = 0
    for row in bench["rows"]:
        cells = [_fmt_size(row["size"][p]) for p in bench["params"]]
        cells.append(row["dtype"])
        tri = row["results"].get("Triton")
        if tri is None:
            cells.append("—")
        else:
            mark = ""
            if tri["wall_ms"] > LAUNCH_BOUND * tri["median_ms"]:
                mark = " ◆"
                launch_bound += 1
            cells.append(f"{tri['median_ms']:.4g} {_pm(T.spread_of(tri))}{mark}")
        for p in peers:
            r = row["results"].get(p)
            mark = " ‡" if _flag(bench, row, p, gpu) else ""
            cells.append(_fmt_number(r["rate"]) + mark if r else "—")
        rows.append(cells)

    prov = bench["provenance"]
    rounds = bench["timing"]["rounds"]
    method = (
        f"GPU time: the median of {rounds} interleaved rounds, each the "
        "median of several calls that start with a cold L2, each behind a "
        "GPU sleep meant to keep Python's launch path out of it (`launch_hidden` "
        "in the data file says whether it did); ± is half the interquartile range "
        "over the rounds (for a ratio, of the round-by-round ratios, at "
        f"least ±{100 * T.MIN_REL_HALF_WIDTH:.0f} %)."
    )
    if launch_bound:
        method += (
            f" ◆ launch-bound: Triton's call from Python takes over {LAUNCH_BOUND}× "
            "its GPU time (the data file has that wall time)."
        )
    method += _clock_note(bench)
    method += _autotune_note(bench)
    caption = (
        f"{gpu['name']} ({gpu['sm_count']} SMs), measured {_date(bench)}: "
        f"driver {prov['driver']}, CUDA {prov['cuda']}, torch {prov['torch']}, "
        f"triton {prov['triton']}, Python {prov['python']}, "
        f"commit `{str(prov['commit'])[:10]}`. {method} "
        f"{unit} counts {'bytes moved' if bench['metric'] == 'bandwidth' else 'FLOPs'}"
        f" per call. Ceilings: {_ceiling_lines(bench, gpu)}."
    )
    notes = "".join(f"<p><small>{n}</small></p>" for n in _flag_notes(bench, gpu))
    return (
        f'<div class="course-timings">{_html_table(head, rows)}</div>'
        f"<p><em>{_inline_code(caption)}</em></p>{notes}"
    )


def _clock_note(bench: dict) -> str:
    start, end = bench["clocks"].get("start", {}), bench["clocks"].get("end", {})
    if "sm_mhz" not in start or "sm_mhz" not in end:
        return ""
    return (
        f" SM clock {start['sm_mhz']}→{end['sm_mhz']} MHz, "
        f"{start.get('temp_c', '?')}→{end.get('temp_c', '?')} °C, "
        f"{start.get('power_w', '?')}→{end.get('power_w', '?')} W from the "
        "benchmark's start to its end (NVML)."
    )


def _autotune_note(bench: dict) -> str:
    tuned = [r["autotune"] for r in bench["rows"] if r.get("autotune")]
    if not tuned:
        return ""
    agreed = sum(all(k["agreed"] for k in t.values()) for t in tuned)
    return (
        f" Autotuned: each row tuned at least twice; the tunings agreed in "
        f"{agreed} of {len(tuned)} rows (the chosen configs are in the data file)."
    )


def _short_peer(peer: str) -> str:
    return {"PyTorch eager": "eager", "torch.compile": "compile"}.get(peer, peer)


def render_compact(bench: dict, gpu: dict) -> str:
    """What a reader compares, one line per row: rate, ratio to each other
    implementation and % of the measured roofline (‡ above a ceiling), with
    compact ± spreads; under it, both ceilings named and why any rate stands
    above one. Wrapped in a div whose CSS keeps numeric cells on one line
    (and the table in its box)."""
    others = [p for p in bench["peers"] if p != "Triton"]
    # a size parameter with one value in every row is said once, not tabled
    fixed = [
        p for p in bench["params"] if len({r["size"][p] for r in bench["rows"]}) == 1
    ]
    params = [p for p in bench["params"] if p not in fixed] or bench["params"][:1]
    fixed = [p for p in fixed if p not in params]
    head = [*params, "dtype", f"Triton {bench['unit']}"]
    head += [f"÷ {_short_peer(p)}" for p in others]
    head.append(f"% {bench['roofline']['name']} (measured)")
    rows = []
    for row in bench["rows"]:
        cells = [_fmt_size(row["size"][p]) for p in params] + [row["dtype"]]
        tri = row["results"].get("Triton")
        cells.append(_fmt_number(tri["rate"]) if tri else "—")
        for p in others:
            spread = _peer_ratio(row, p)
            if spread is None:
                cells.append("—")
            else:
                pm = _pm(spread).replace(" %", "%")
                cells.append(f"{spread.median:.2f}× <small>{pm}</small>")
        pct = _pct_roofline(row, bench)
        mark = " ‡" if _flag(bench, row, "Triton", gpu) else ""
        cells.append(f"{pct:.0f} %{mark}" if pct is not None else "—")
        rows.append(cells)
    # _fmt_size gives HTML (2<sup>24</sup>): only the names are escaped
    said = ", ".join(
        f"{html.escape(p)} {_fmt_size(bench['rows'][0]['size'][p])}" for p in fixed
    )
    lead = f"<p>In every row: {said}.</p>" if said else ""
    lines = html.escape(_ceiling_lines(bench, gpu))
    foot = f"<p><small>%: Triton's rate as a share of the {lines}.</small></p>"
    foot += "".join(f"<p><small>{n}</small></p>" for n in _flag_notes(bench, gpu))
    return f'{lead}<div class="course-timings">{_html_table(head, rows)}</div>{foot}'


def csv_of(bench: dict) -> str:
    """Every timing of one benchmark on one GPU, one line per row and peer."""
    head = [*bench["params"], "dtype", "peer", "median_ms", "q25_ms", "q75_ms",
            "wall_ms", f"rate_{bench['unit'].replace('/', '_per_')}"]  # fmt: skip
    out = [",".join(head)]
    for row in bench["rows"]:
        for peer, res in row["results"].items():
            cells = [str(row["size"][p]) for p in bench["params"]]
            cells += [row["dtype"], f'"{peer}"']
            cells += [str(res.get(k, "")) for k in ("median_ms", "q25_ms", "q75_ms",
                                                     "wall_ms", "rate")]  # fmt: skip
            out.append(",".join(cells))
    return "\n".join(out) + "\n"


def data_urls(g, name: str) -> tuple[str, str]:
    """Site paths of one GPU's data file and of one benchmark's CSV, which
    on_post_build writes."""
    return (
        f"assets/data/{g.path.name}",
        f"assets/data/{name}-{g.gpu['slug']}.csv",
    )


def stated_targets(markdown: str) -> dict[str, list[dict]]:
    """The targets a page states in its [[verdict]]s and [[measured ...
    target=]]s, per benchmark: what its plots draw. Only Triton's ratio to a
    peer and its share of the roofline are drawn; the selectors (dtype, size
    parameters) say which sizes a target is stated for."""
    found: dict[str, list[dict]] = {}
    for regex in (_VERDICT_RE, _MEASURED_RE):
        for m in regex.finditer(markdown):
            args = _parse_args(m.group(1))
            value, name = args.pop("value", ""), args.pop("bench", None)
            if "target" not in args or args.pop("peer", "Triton") != "Triton":
                continue
            if value.startswith("ratio:"):
                kind, peer = "ratio", value[len("ratio:") :]
            elif value == "pct_roofline":
                kind, peer = "roofline", None
            else:
                continue
            try:
                target = float(args.pop("target"))
            except ValueError:
                continue  # the directive itself reports it, with its context
            args.pop("gpu", None)
            stated = {"kind": kind, "peer": peer, "value": target, "where": args}
            if name and stated not in found.setdefault(name, []):
                found[name].append(stated)
    return found


def _plot_targets(bench: dict, name: str, stated: list[dict]) -> list[dict]:
    """The stated targets with the rows of this GPU's data they are stated
    for (a target whose sizes this GPU did not measure is not drawn)."""
    out = []
    for t in stated:
        try:
            rows = _selected_rows(bench, dict(t["where"]), name, "target")
        except ValueError:
            continue
        keys = None if len(rows) == len(bench["rows"]) else {P.row_key(r) for r in rows}
        out.append(
            {"kind": t["kind"], "peer": t["peer"], "value": t["value"], "rows": keys}
        )
    return out


def render_timings(
    name: str,
    gpus: list,
    root: Path,
    page_url: str = "",
    target=None,
    vs=None,
    stated: list | tuple = (),
) -> str:
    measured = [g for g in gpus if name in g.benchmarks]
    if not measured:
        return (  # one line, not a box: the course never prints an estimate
            f"*Not yet measured on a GPU: the timings of `{name}` appear here "
            "once the GPU runner has measured it.*\n"
        )
    blocks = []
    for g in measured:
        bench = g.benchmarks[name]
        stale = T.is_stale(bench, root)
        _state["downloads"][(g.path, g.gpu["slug"], name)] = bench
        body = []
        if stale:
            body += _stale_note(bench["snippet"])
        # The picture first, drawn from the same data as the table below it.
        # Only a placeholder goes through Markdown and the search indexer:
        # on_post_page puts the SVG in (parsing it twice cost a second a build).
        targets = _plot_targets(bench, name, stated)
        references = _references(bench, root)
        # One plot by default: the ratio where the page states a ratio
        # target (what it judges), else the rates; the other is one click away.
        ratio_first = target is not None or any(t["kind"] == "ratio" for t in targets)
        kinds = ("ratio", "rate") if ratio_first else ("rate", "ratio")

        def drawn(
            kind: str, bench=bench, g=g, targets=targets, references=references
        ) -> str:
            return "".join(  # for the page's column and for a phone (CSS picks)
                " ".join(
                    P.render_svg(
                        bench, g.gpu, target=target, vs=vs, targets=targets,
                        layout=layout, kind=kind, references=references,
                    ).split()
                )
                for layout in (P.WIDE, P.NARROW)
            )  # fmt: skip

        body.append(_defer(f'<div class="course-plot">{drawn(kinds[0])}</div>'))
        body.append("")
        body.append(_defer(render_compact(bench, g.gpu)))
        body.append("")
        body.append(
            f"*{g.gpu['name']}, measured {_date(bench)} with triton "
            f"{bench['provenance']['triton']} and torch "
            f"{bench['provenance']['torch']}; "
            f"÷: Triton's rate over that implementation's. Every timing, the "
            "method and the data files are in the block below.*"
        )
        body.append("")
        if references and kinds[0] == "rate":
            body += [_reference_note(references), ""]
        # HTML links, relative to the page's URL: the files appear only in
        # on_post_build, so MkDocs must not look for them among the docs
        json_url, csv_url = (get_relative_url(u, page_url) for u in data_urls(g, name))
        other = drawn(kinds[1])
        note = (
            _html_paragraph(_reference_note(references))
            if references and kinds[1] == "rate"
            else ""
        )
        full = _defer(
            (f'<div class="course-plot">{other}</div>{note}' if "<g" in other else "")
            + render_table(bench, g.gpu)
            + f'<p>Download: <a href="{json_url}" download>{g.path.name}</a> '
            "(everything measured on this GPU) · "
            f'<a href="{csv_url}" download>{name}-{g.gpu["slug"]}.csv</a> '
            "(this table)</p>"
        )
        body.append('??? note "The other plot, every timing, the method and the data"')
        body.append("")
        body += [("    " + ln) if ln else "" for ln in full.split("\n")]
        blocks.append((g.label, "\n".join(body)))
    return _tabs(blocks)


def _tabs(blocks: list[tuple[str, str]]) -> str:
    out = []
    for label, body in blocks:
        indented = "\n".join(
            ("    " + line) if line else "" for line in body.split("\n")
        )
        marker = "===!" if not out else "==="  # a new tab set per directive
        out.append(f'{marker} "{label}"\n\n{indented}\n')
    return "\n".join(out)


def _stale_note(snippet: str) -> list[str]:
    return [
        f'!!! warning "{STALE_TEXT.capitalize()}"',
        f"    `{snippet}` has changed since this was recorded; the GPU runner "
        "will record it again before the next publish.",
        "",
    ]


def _references(bench: dict, root: Path) -> list[dict]:
    """The published figures a benchmark's rate panels draw (its snippet's
    REFERENCE_LINES), each checked to name a panel of its plot: one that
    does not raises P.ReferenceLineError, a ValueError, which fails the
    build naming the page."""
    return P.check_reference_panels(bench, P.references_for(bench, root))


def _reference_note(references: list[dict]) -> str:
    """The caption of the dotted lines: published, not measured, and where."""
    return (
        "*Dotted on the rate panels: published figures, not measured here, in "
        "this table's unit and work model. "
        + " ".join(P.describe_references(references))
        + "*"
    )


def _html_paragraph(markdown_line: str) -> str:
    """A one-line italic Markdown caption as HTML (for a deferred block)."""
    return f"<p><em>{html.escape(markdown_line.strip('*'))}</em></p>"


def render_plot(name: str, gpus: list, root: Path, plots_dir: Path) -> str:
    measured = [g for g in gpus if name in g.benchmarks]
    if not measured:
        return (
            f"*Not yet measured on a GPU: the plot of `{name}` appears here once "
            "the GPU runner has measured it.*\n"
        )
    blocks = []
    for g in measured:
        bench = g.benchmarks[name]
        svg_file = Path(plots_dir) / f"{name}-{g.gpu['slug']}.svg"
        if svg_file.is_file():
            svg = svg_file.read_text(encoding="utf-8")
        else:
            svg = P.render_svg(bench, g.gpu)
        svg = " ".join(svg.split("\n")).strip()  # one line: Markdown leaves it alone
        body = _stale_note(bench["snippet"]) if T.is_stale(bench, root) else []
        body.append(f'<div class="course-plot" markdown="0">{svg}</div>')
        body += [
            "",
            f"*{g.gpu['name']}, measured {_date(bench)}; dashed: "
            f"{_ceiling_lines(bench, g.gpu).replace('; ', '; dash-dotted: ', 1)}.*",
        ]
        if references := _references(bench, root):
            body += ["", _reference_note(references)]
        blocks.append((g.label, "\n".join(body)))
    return _tabs(blocks)


def _capture_declared_in_snippets(name: str, root: Path) -> bool:
    """Whether some snippet's CAPTURES names ``name`` (read from the source,
    as the runner's staleness check reads it: no import, no torch)."""
    return any(
        name in D.static_names(path)[1]
        for path in D.snippet_files(Path(root) / "snippets")
    )


def render_capture(name: str, gpus: list, root: Path) -> str:
    captured = [g for g in gpus if name in (g.captures or {})]
    if not captured:
        if not _capture_declared_in_snippets(name, root):
            raise ValueError(
                f"[[capture {name}]]: no data file holds a capture of that name "
                "and no snippet's CAPTURES declares one (a typo?)"
            )
        where = ", ".join(g.gpu["name"] for g in gpus) or "a GPU"
        return (  # a capture declared after the data was recorded
            f"*Not yet captured on {where}: the output of `{name}` appears here "
            "once the GPU runner has recorded it there.*\n"
        )
    blocks = []
    for g in captured:
        cap = g.captures[name]
        prov = cap["provenance"]
        text = cap["text"].rstrip("\n")
        longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
        fence = "`" * max(3, longest + 1)
        body = _stale_note(cap["snippet"]) if T.is_stale(cap, root) else []
        body += [f"{fence}text", text, fence, ""]
        body.append(
            f"*Recorded on {g.gpu['name']} on {prov['date'][:10]} ({cap['kind']}): "
            f"torch {prov['torch']}, triton {prov['triton']}, CUDA {prov['cuda']}, "
            f"commit `{str(prov['commit'])[:10]}`.*"
        )
        blocks.append((g.label, "\n".join(body)))
    return _tabs(blocks)


# -------------------------------------------------------- inline numbers ---
def _snippets_root() -> Path:
    """The repository the snippets are read from: the site's, or this
    file's own when the hook is used outside a build (runner compare)."""
    return _state.get("root") or Path(__file__).resolve().parents[1]


def _snippets_match(pattern: str) -> bool:
    """Whether some snippet's text matches ``pattern`` (read as text: the docs
    build must not import torch or triton)."""
    found = re.compile(pattern)
    return any(
        found.search(path.read_text(encoding="utf-8"))
        for path in (_snippets_root() / "snippets").glob("*.py")
    )


def _declared_in_snippets(name: str) -> bool:
    """Whether some snippet's benchmark description names ``name``."""
    return _snippets_match(rf"""["']name["']\s*:\s*["']{re.escape(name)}["']""")


def _peer_declared_in_snippets(peer: str) -> bool:
    """Whether some snippet's benchmark description has a peer named ``peer``
    (a key of its peers dict)."""
    return _snippets_match(rf"""["']{re.escape(peer)}["']\s*:""")


def newer_peer(bench: dict, value: str, peer: str) -> str | None:
    """The peer a directive names that this run did not time although a
    snippet's benchmark declares it: a peer added after the run (an older
    data file, such as the second machine's in data/reproducibility). The
    directive then states nothing about that run. A peer no snippet declares
    is a typo: None here, and the directive fails as before."""
    names = [peer] + ([value[len("ratio:") :]] if value.startswith("ratio:") else [])
    timed = set(bench.get("peers") or [])
    for name in names:
        if name not in timed and _peer_declared_in_snippets(name):
            return name
    return None


def _not_in_run(g, peer: str) -> str:
    return f"*(not measured in {g.path.name}'s run: {peer} is a newer peer)*"


def _parse_args(text: str) -> dict:
    args = {}
    # shlex, so that peer names with spaces can be quoted: value="ratio:PyTorch eager"
    for part in shlex.split(text):
        key, sep, value = part.partition("=")
        if not sep:
            raise ValueError(f"expected key=value, got {part!r}")
        args[key] = value
    return args


def _select_row(bench: dict, args: dict) -> dict:
    unknown = set(args) - set(bench["params"]) - {"dtype"}
    if unknown:
        raise ValueError(f"unknown selector(s) {sorted(unknown)}: {bench['params']}")
    rows = bench["rows"]
    if "dtype" in args:
        rows = [r for r in rows if r["dtype"] == args["dtype"]]
    for param in bench["params"]:
        if param not in args:
            continue
        wanted = args[param]
        if wanted == "largest":
            rows = _keep_largest(rows, param)
        else:
            rows = [r for r in rows if str(r["size"][param]) == wanted]
    if len(rows) != 1:
        raise ValueError(f"selects {len(rows)} rows; name every size parameter")
    return rows[0]


def _keep_largest(rows: list, param: str) -> list:
    """The rows whose size parameter `param` is the largest (selector "largest")."""
    top = max((r["size"][param] for r in rows), default=None)
    return [r for r in rows if r["size"][param] == top]


# gpu.<name> values computed from a recorded field: name -> (field, divisor, unit)
_DERIVED_GPU_FIELDS = {
    "l2_mib": ("l2_bytes", 2**20, "MiB"),
    "memory_gib": ("memory_bytes", 2**30, "GiB"),
}


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def render_measured(text: str, gpus: list, root: Path) -> str:
    args = _parse_args(text)
    gpu_key = args.pop("gpu", None)
    value = args.pop("value", None)
    if not gpu_key or not value:
        raise ValueError("needs gpu=... and value=...")
    g = _one_gpu(gpus, gpu_key)
    if g is None:
        return f"*(not yet measured on {gpu_key.upper()})*"
    if value.startswith("gpu."):
        field = value[4:]
        if field in _DERIVED_GPU_FIELDS:  # e.g. gpu.l2_mib from gpu.l2_bytes
            source, divisor, unit = _DERIVED_GPU_FIELDS[field]
            if not _is_count(g.gpu.get(source)):
                raise ValueError(f"no GPU field {source!r} to derive {field!r} from")
            return f"{g.gpu[source] / divisor:.0f} {unit}"
        if field not in g.gpu:
            raise ValueError(f"no GPU field {field!r}")
        return str(g.gpu[field])
    bench = _measured_bench(g, args.pop("bench", None))
    if bench is None:
        return f"*(not yet measured on {g.label})*"
    peer = args.pop("peer", "Triton")
    target = _target(args.pop("target", None), value)
    if newer := newer_peer(bench, value, peer):
        return _not_in_run(g, newer)
    row = _select_row(bench, args)
    if peer not in row["results"]:
        raise ValueError(f"no result for peer {peer!r}")
    if value == "rate":
        number = f"{_fmt_number(row['results'][peer]['rate'])} {bench['unit']}"
    elif value == "median_ms":
        number = f"{row['results'][peer]['median_ms']:.3g} ms"
    elif value == "pct_roofline" or value.startswith(("ratio:", "vs:", "row:")):
        spread, number = _shown(row, bench, value, peer, g)
        if target is not None:
            number += f" ({T.verdict(spread, target)})"
        if value == "pct_roofline" and _flag(bench, row, peer, g.gpu):
            number += ABOVE_MARK
    elif value in ("roofline", "roofline_probe"):
        # the probe measured in the run; probe_of reads it also from data
        # whose roofline the old runner raised to a contender's rate
        roof = bench["roofline"]
        number = f"{_fmt_number(T.probe_of(roof))} {roof['unit']}"
    elif value == "vendor_peak":
        peak = T.vendor_peak_of(bench["roofline"], g.gpu["name"])
        if peak is None:
            raise ValueError(
                f"no vendor spec-sheet peak for the {bench['roofline']['name']} "
                f"of {g.label} (triton_course/vendor_peaks.py)"
            )
        number = f"{_fmt_number(peak['value'])} {bench['roofline']['unit']}"
    else:
        raise ValueError(f"unknown value {value!r}")
    if T.is_stale(bench, root):
        return number + STALE_MARK
    return number


def render_verdict(text: str, gpus: list, root: Path) -> str:
    args = _parse_args(text)
    gpu_key, value = args.pop("gpu", None), args.pop("value", None)
    name, peer = args.pop("bench", None), args.pop("peer", "Triton")
    if not (gpu_key and value and name and "target" in args):
        raise ValueError("verdict needs bench=, gpu=, value= and target=")
    target = _target(args.pop("target"), value)
    g = _one_gpu(gpus, gpu_key)
    if g is None:
        if not _declared_in_snippets(name):
            raise ValueError(f"no snippet declares a benchmark named {name!r}")
        return f"*(not yet measured on {gpu_key.upper()})*"
    bench = _measured_bench(g, name)
    if bench is None:
        return f"*(not yet measured on {g.label})*"
    if newer := newer_peer(bench, value, peer):
        return _not_in_run(g, newer)
    rows = _selected_rows(bench, args, name, "verdict")
    judged = []
    for row in rows:
        spread, text = _shown(row, bench, value, peer, g)
        judged.append((spread.median, text, row, T.verdict(spread, target)))
    _, low_text, low_row, _ = min(judged, key=lambda entry: entry[0])
    counts = {k: sum(v == k for *_, v in judged) for k in T.VERDICTS}
    stale = "" if not T.is_stale(bench, root) else STALE_MARK
    if len(judged) == 1:
        return f"{judged[0][3]} ({low_text}){stale}"
    if counts["met"] == len(judged):
        return f"met at all {len(judged)} sizes (lowest {low_text}){stale}"
    parts = [f"{k} at {counts[k]}" for k in T.VERDICTS if counts[k]]
    return (
        f"{', '.join(parts)} of {len(judged)} sizes "
        f"(lowest {low_text}{_where(bench, rows, low_row)}){stale}"
    )


def _selected_rows(bench: dict, args: dict, name: str, what: str) -> list:
    """The rows a verdict's or claim's selectors leave (at least one)."""
    unknown = set(args) - set(bench["params"]) - {"dtype"}
    if unknown:
        raise ValueError(f"unknown selector(s) {sorted(unknown)} for {name}")
    rows = [
        r
        for r in bench["rows"]
        if all(_selects(r, k, w) for k, w in args.items() if w != "largest")
    ]
    for key in [k for k, w in args.items() if w == "largest"]:
        rows = _keep_largest(rows, key)
    if not rows:
        raise ValueError(f"{what} selects no row of {name}")
    return rows


def _where(bench: dict, rows: list, row: dict) -> str:
    """ ", at n_cols 2^20, float16": a row named by what differs between rows."""
    varying = [
        key for key in bench["params"] if len({r["size"][key] for r in rows}) > 1
    ]
    where = ", ".join(f"{key} {_fmt_size(row['size'][key])}" for key in varying)
    if len({r["dtype"] for r in rows}) > 1:
        where = f"{where}, {row['dtype']}" if where else row["dtype"]
    return f", at {where}" if where else ""


_CLAIM_OPS = {
    ">": lambda s, x: s.low > x,
    ">=": lambda s, x: s.low >= x,
    "<": lambda s, x: s.high < x,
    "<=": lambda s, x: s.high <= x,
    "~": lambda s, x: (1 - CLOSE) * x <= s.low and s.high <= (1 + CLOSE) * x,
}
# The claim's opposite, as the data would show it: what makes it false rather
# than too close to call.
_CLAIM_FALSE = {
    ">": lambda s, x: s.high <= x,
    ">=": lambda s, x: s.high < x,
    "<": lambda s, x: s.low >= x,
    "<=": lambda s, x: s.low > x,
    "~": lambda s, x: s.high < (1 - CLOSE) * x or s.low > (1 + CLOSE) * x,
}


def _parse_claim(text: str) -> tuple[str, float]:
    m = re.fullmatch(r"(>=|<=|>|<|~)\s*([0-9.]+)", text.strip())
    if not m:
        raise ValueError(f"is={text!r}: expected >X, >=X, <X, <=X or ~X")
    return m.group(1), float(m.group(2))


def render_claim(text: str, gpus: list, root: Path) -> str:
    """A checked comparison: the number(s), or a build failure naming why."""
    args = _parse_args(text)
    gpu_key, value = args.pop("gpu", None), args.pop("value", None)
    name, peer = args.pop("bench", None), args.pop("peer", "Triton")
    claim = args.pop("is", None)
    if not (gpu_key and value and name and claim):
        raise ValueError("claim needs bench=, gpu=, value= and is=")
    op, x = _parse_claim(claim)
    if not (value.startswith(("ratio:", "vs:", "row:")) or value == "pct_roofline"):
        raise ValueError(
            f"claim value must be ratio:, vs:, row: or pct_roofline, not {value!r}"
        )
    g = _one_gpu(gpus, gpu_key)
    # Not measured yet: the claim states nothing, and the page says so.
    if g is None:
        if not _declared_in_snippets(name):
            raise ValueError(f"no snippet declares a benchmark named {name!r}")
        return f"*(not yet measured on {gpu_key.upper()})*"
    bench = _measured_bench(g, name)
    if bench is None:
        return f"*(not yet measured on {g.label})*"
    if newer := newer_peer(bench, value, peer):
        return _not_in_run(g, newer)
    rows = _selected_rows(bench, args, name, "claim")
    shown = []
    for row in rows:
        spread, number = _shown(row, bench, value, peer, g)
        where = _where(bench, rows, row) or " (the only row selected)"
        if _CLAIM_FALSE[op](spread, x):
            raise ClaimError(
                f"claim {value} {claim} on {g.label} is contradicted by "
                f"{g.path.name}{where}: {number} "
                f"(interval {spread.low:.3g}–{spread.high:.3g})"
            )
        if not _CLAIM_OPS[op](spread, x):
            raise ClaimError(
                f"claim {value} {claim} on {g.label} is too close to call in "
                f"{g.path.name}{where}: {number} (interval {spread.low:.3g}–"
                f"{spread.high:.3g}); do not state it as fact"
            )
        shown.append((spread.median, number))
    stale = "" if not T.is_stale(bench, root) else STALE_MARK
    if len(shown) == 1:
        return shown[0][1] + stale
    lo, hi = min(shown)[1], max(shown)[1]
    return f"{lo} to {hi} over {len(shown)} sizes{stale}"


def _one_gpu(gpus: list, gpu_key: str):
    """The data file whose slug contains gpu_key, or None if there is none."""
    matches = [g for g in gpus if gpu_key.lower() in g.gpu["slug"].lower()]
    if len(matches) > 1:
        raise ValueError(f"gpu={gpu_key!r} matches several data files")
    return matches[0] if matches else None


def _measured_bench(g, name: str) -> dict | None:
    """Benchmark NAME of one GPU's data, or None if that GPU has not run it."""
    if name not in g.benchmarks:
        # A benchmark this GPU has not measured yet (a new kernel, or a run
        # with --only) reads as such; a name no snippet declares is a typo.
        if not _declared_in_snippets(name):
            raise ValueError(f"no snippet declares a benchmark named {name!r}")
        return None
    return g.benchmarks[name]


def _pct_text(spread: T.Spread) -> str:
    """A share of the roofline with its interval: "63 % (61–65 %)" (a ± after
    a percentage would read as points). Under 10 % it keeps two significant
    digits ("0.49 % (0.48–0.51 %)"), so a small share never prints as
    "0 % (0–1 %)"."""
    m = abs(spread.median)
    digits = 0 if m >= 10 or m == 0 else max(0, 1 - math.floor(math.log10(m)))
    return (
        f"{spread.median:.{digits}f} % "
        f"({spread.low:.{digits}f}–{spread.high:.{digits}f} %)"
    )


def _shown(row: dict, bench: dict, value: str, peer: str, g) -> tuple[T.Spread, str]:
    """A pct_roofline, ratio:<peer> or vs:<bench> number with its interval,
    and its text as the page shows it ("0.91× ±3 %")."""
    if value == "pct_roofline":
        result = row["results"].get(peer)
        if result is None:
            raise ValueError(f"no result for peer {peer!r}")
        # against the probe measured in the run: never a raised ceiling
        per_ms = 100.0 * row["work"] / T.probe_of(bench["roofline"])
        per_ms /= 1e6 if bench["metric"] == "bandwidth" else 1e9
        spread = T.widened(
            per_ms / result["median_ms"],
            per_ms / result["q75_ms"],
            per_ms / result["q25_ms"],
        )
        return spread, _pct_text(spread)
    if value.startswith("vs:"):
        other = _measured_bench(g, value[3:])
        if other is None:
            raise ValueError(f"{value[3:]} is not measured on {g.label}")
        match = [
            r
            for r in other["rows"]
            if r["size"] == row["size"] and r["dtype"] == row["dtype"]
        ]
        if not match or peer not in row["results"] or peer not in match[0]["results"]:
            raise ValueError(f"{value[3:]} has no {peer} row like {row['size']}")
        # a rate ratio: the two may do different work per call (lesson 04's
        # hot call makes twenty passes where the cold call makes one)
        work = row["work"] / match[0]["work"]
        spread = _apart_ratio(row["results"][peer], match[0]["results"][peer], work)
        return spread, f"{spread.median:.2f}× {_pm(spread)}"
    if value.startswith("row:"):
        return _row_ratio(row, bench, value, peer, g)
    other = value[6:]
    spread = _peer_ratio(row, other, base=peer)
    if spread is None:
        raise ValueError(f"no result for peer {other!r}")
    return spread, f"{spread.median:.2f}× {_pm(spread)}"


def _row_ratio(row: dict, bench: dict, value: str, peer: str, g):
    """value=row:<param>=<v>: this row's rate over the rate of the row that
    differs only in <param> (e.g. row:stride=1, a strided copy against the
    contiguous one). Rows are timed apart, so their intervals compound."""
    param, sep, wanted = value[4:].partition("=")
    if not sep or param not in bench["params"]:
        raise ValueError(f"{value!r}: expected row:<size parameter>=<value>")
    match = [
        r
        for r in bench["rows"]
        if r["dtype"] == row["dtype"]
        and str(r["size"][param]) == wanted
        and all(r["size"][k] == v for k, v in row["size"].items() if k != param)
    ]
    if len(match) != 1 or peer not in match[0]["results"]:
        raise ValueError(
            f"{value!r}: no {peer} row like {row['size']} with {param}={wanted}"
        )
    work = row["work"] / match[0]["work"]
    spread = _apart_ratio(row["results"][peer], match[0]["results"][peer], work)
    return spread, f"{spread.median:.2f}× {_pm(spread)}"


def _apart_ratio(a: dict, b: dict, work: float = 1.0) -> T.Spread:
    """Result a's rate over result b's (a's work = `work` × b's), for two
    results timed apart, not interleaved: their intervals compound."""
    return T.widened(
        work * b["median_ms"] / a["median_ms"],
        work * b["q25_ms"] / a["q75_ms"],
        work * b["q75_ms"] / a["q25_ms"],
    )


_SELECTOR_OPS = {
    ">=": lambda v, x: v >= x,
    "<=": lambda v, x: v <= x,
    ">": lambda v, x: v > x,
    "<": lambda v, x: v < x,
}
_SELECTOR_RE = re.compile(r"(>=|<=|>|<)?([0-9]+(?:\.[0-9]+)?)")


def _selects(row: dict, key: str, wanted: str) -> bool:
    """A verdict's selector: dtype=float16, n_cols=1024, n_cols=>=1024 or
    n_cols=<=1024 (also > and <). Any other form is an error, not a miss."""
    if key == "dtype":
        return row["dtype"] == wanted
    m = _SELECTOR_RE.fullmatch(wanted.strip())
    if not m:
        raise ValueError(
            f"selector {key}={wanted!r}: expected a number, >=N, <=N, >N, <N or largest"
        )
    op, number = m.group(1), float(m.group(2))
    value = row["size"][key]
    return value == number if op is None else _SELECTOR_OPS[op](value, number)


def _target(text: str | None, value: str) -> float | None:
    if text is None:
        return None
    if not (value.startswith(("ratio:", "vs:")) or value == "pct_roofline"):
        raise ValueError(
            f"target= needs value=ratio:<peer>, vs:<bench> or pct_roofline, "
            f"not {value!r}"
        )
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"target must be a number, got {text!r}") from None


# ---------------------------------------------------------------- buttons ---
def render_notebook(nb_path: str, page, config, files) -> str:
    repo_url = (config.get("repo_url") or "").rstrip("/")
    match = re.match(r"https://github\.com/([^/]+/[^/]+)$", repo_url)
    if not match:
        raise ValueError("repo_url in mkdocs.yml must be https://github.com/OWNER/REPO")
    src_uri = posixpath.normpath(
        posixpath.join(posixpath.dirname(page.file.src_uri), nb_path)
    )
    nb_file = files.get_file_from_path(src_uri)
    if nb_file is None:
        raise ValueError(f"notebook docs/{src_uri} not found")
    branch = config.get("extra", {}).get("colab_branch", "main")
    docs_rel = Path(config["docs_dir"]).resolve().relative_to(_state["root"]).as_posix()
    colab = (
        f"https://colab.research.google.com/github/{match.group(1)}/blob/"
        f"{branch}/{docs_rel}/{src_uri}"
    )
    # mkdocs-jupyter (include_source) publishes the .ipynb beside its page.
    download = get_relative_url(
        nb_file.url + posixpath.basename(src_uri), page.file.url
    )
    return (
        f'<a class="md-button md-button--primary colab-button" href="{colab}">'
        "▶ Run in Colab</a>\n"
        f'<a class="md-button notebook-download" href="{download}" download>'
        "Download the notebook</a>\n"
    )


# ------------------------------------------------------------------- hook ---
def on_page_markdown(markdown, page, config, files):
    gpus, root = _state["gpus"], _state["root"]
    stated = stated_targets(markdown)

    def render(line: str) -> str:
        if m := _TABLE_RE.match(line.strip()):
            args = _parse_args(m.group(2))
            unknown = set(args) - {"target", "vs"}
            if unknown or ("vs" in args and "target" not in args):
                raise ValueError(
                    f"[[timings {m.group(1)}]] takes target=X and optionally "
                    f"vs=PEER, got {m.group(2).strip()!r}"
                )
            target = float(args["target"]) if "target" in args else None
            return render_timings(
                m.group(1), gpus, root, page.file.url, target, args.get("vs"),
                stated.get(m.group(1), ()),
            )  # fmt: skip
        if m := _PLOT_RE.match(line.strip()):
            plots_dir = Path(config["docs_dir"]) / "assets" / "plots"
            return render_plot(m.group(1), gpus, root, plots_dir)
        if m := _CAPTURE_RE.match(line.strip()):
            # inside a block (an admonition), its first line keeps the
            # block's indentation too: rewrite_directives indents the others
            lead = line[: len(line) - len(line.lstrip())]
            return lead + render_capture(m.group(1), gpus, root)
        if m := _NOTEBOOK_RE.match(line.strip()):
            return render_notebook(m.group(1), page, config, files)
        line = _MEASURED_RE.sub(lambda m: render_measured(m.group(1), gpus, root), line)
        line = _CLAIM_RE.sub(lambda m: render_claim(m.group(1), gpus, root), line)
        return _VERDICT_RE.sub(lambda m: render_verdict(m.group(1), gpus, root), line)

    out = rewrite_directives(
        markdown,
        page,
        render,
        collect=(ClaimError, _state.setdefault("broken_claims", [])),
    )
    return _with_legend(collapse_unmeasured_columns(out))


_PLACEHOLDER_RE = re.compile(r"^\*\(not yet measured on ([^)]+)\)\*$")
_CELL_SPLIT_RE = re.compile(r"(?<!\\)\|")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in _CELL_SPLIT_RE.split(line.strip().strip("|"))]


def collapse_unmeasured_columns(markdown: str) -> str:
    """A Markdown table column that holds nothing but "(not yet measured on
    X)" placeholders is dropped, and one line under the table says so; a
    table left with no data column becomes that line alone. A reader is
    told once that a GPU has not measured it, not in every cell."""
    lines, out, i = markdown.split("\n"), [], 0
    while i < len(lines):
        j = i
        while j < len(lines) and lines[j].lstrip().startswith("|"):
            j += 1
        block = lines[i:j]
        if len(block) >= 3 and set(block[1].replace("|", "").strip()) <= set(":- "):
            rows = [_cells(line) for line in block]
            width = len(rows[0])
            body = [r for r in rows[2:] if len(r) == width]
            gone, gpus = [], []
            for col in range(1, width):
                found = [_PLACEHOLDER_RE.match(r[col]) for r in body]
                if body and all(found):
                    gone.append(col)
                    gpus += [m.group(1) for m in found if m.group(1) not in gpus]
            if gone and len(body) == len(rows) - 2:
                indent = block[0][: len(block[0]) - len(block[0].lstrip())]
                keep = [c for c in range(width) if c not in gone]
                note = f"{indent}*Not yet measured on {' or '.join(gpus)}.*"
                if len(keep) > 1:
                    out += [
                        indent + "| " + " | ".join(r[c] for c in keep) + " |"
                        for r in rows
                    ]
                    out.append("")
                out.append(note)
                i = j
                continue
        out += block or [lines[i]]
        i = j if block else i + 1
    return "\n".join(out)


def _with_legend(markdown: str) -> str:
    """The page's marks explained where every reader sees them (a hover
    title is invisible on a touch screen): at the end of the page, which
    each † links to."""
    parts = []
    if STALE_MARK in markdown:
        parts.append(
            f"<strong>†</strong> {STALE_TEXT}: its snippet changed after this "
            "GPU run, and the next run measures it again."
        )
    if ABOVE_MARK in markdown:
        parts.append(
            "<strong>‡</strong> a rate above the vendor's spec-sheet peak, or "
            f"more than {100 * T.ABOVE_PROBE_TOLERANCE:.0f} % above the ceiling "
            "measured in the same run: the note under that benchmark's table "
            "says why (served from L2, a byte or FLOP count that includes work "
            "the kernel does not do, or a probe below what the GPU can do)."
        )
    if re.search(r"× ±\d", markdown):
        parts.append(
            "<strong>±</strong> after a ratio (1.20× ±3 %) is relative to that "
            "ratio: over the runner's rounds it lay within 3 % of 1.20 "
            "(1.16× to 1.24×)."
        )
    if not parts:
        return markdown
    items = "".join(f"<li>{p}</li>" for p in parts)
    return (
        f'{markdown}\n\n<div class="course-marks" id="{MARKS_ID}">'
        f"<p>Marks used on this page</p><ul>{items}</ul></div>\n"
    )


# Inside tabs Markdown wraps the placeholder in a paragraph: drop that too.
_DEFERRED_RE = re.compile(r'(<p>)?<div data-deferred="(\d+)"></div>(?(1)</p>)')


def _defer(fragment: str) -> str:
    """A placeholder for HTML that on_post_page puts in. Plots and timing
    tables are large and hold nothing worth searching: kept out of Markdown
    and the search indexer, they cost the build almost nothing."""
    _state["deferred"].append(fragment)
    return f'<div data-deferred="{len(_state["deferred"]) - 1}"></div>'


def on_post_page(output, page, config):
    output = _DEFERRED_RE.sub(lambda m: _state["deferred"][int(m.group(2))], output)
    return fix_skip_link(output)


def on_post_template(output, template_name, config):
    if template_name == "404.html":
        return portable_404(output, config.get("site_url"))
    return output


def on_post_build(config):
    """Publish the data the tables were drawn from (each GPU's JSON and a CSV
    per table), then fail the build naming every claim the data contradicts
    or cannot decide."""
    out = Path(config["site_dir"]) / "assets" / "data"
    downloads = _state.get("downloads") or {}
    if downloads:
        out.mkdir(parents=True, exist_ok=True)
    for path in {path for path, _, _ in downloads}:
        (out / path.name).write_bytes(path.read_bytes())
    for (_, slug, name), bench in downloads.items():
        (out / f"{name}-{slug}.csv").write_text(csv_of(bench), encoding="utf-8")
    broken = _state.get("broken_claims") or []
    if broken:
        raise PluginError(
            f"{len(broken)} claim(s) in the prose do not hold against the timing "
            "data; rewrite them or re-measure:\n- " + "\n- ".join(broken)
        )
