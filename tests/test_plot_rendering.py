"""The plots' drawing (issue 26): texts inside the viewBox, no two labels on
each other, no Markdown in titles, small multiples, log scales, sizes in
order; and the committed plots are what `replot` draws from the data."""

import json
import re

import pytest
import svg_geometry as G
from conftest import REPO_ROOT

from triton_course import timings as T
from triton_course.runner import plots as P
from triton_course.runner import replot as R

DATA = sorted((REPO_ROOT / "data" / "timings").glob("*.json"))
PLOTS = sorted((REPO_ROOT / "docs" / "assets" / "plots").glob("*.svg"))


def _all():
    for path in DATA:
        g = T.load_file(path)
        for name, bench in g.benchmarks.items():
            yield g, name, bench


@pytest.mark.parametrize("path", PLOTS, ids=lambda p: p.name)
def test_committed_plot_texts_stay_inside_and_apart(path):
    svg = path.read_text(encoding="utf-8")
    assert not G.outside(svg), G.outside(svg)
    assert not G.overlaps(svg), G.overlaps(svg)
    assert "`" not in svg and "^" not in svg  # Markdown and caret sizes


def test_every_drawing_of_the_data_keeps_its_texts_inside_and_apart():
    for g, name, bench in _all():
        for layout in (P.WIDE, P.NARROW):
            svg = P.render_svg(bench, g.gpu, ratio=True, target=1.0, layout=layout)
            where = f"{name} on {g.gpu['slug']}, {layout.w} wide"
            assert not G.outside(svg), (where, G.outside(svg))
            assert not G.overlaps(svg), (where, G.overlaps(svg))
            # the ceilings' and targets' labels keep off the data too
            assert not G.labels_on_data(svg), (where, G.labels_on_data(svg))
            # both ceilings named, on their lines or in the legend
            assert "measured" in svg and 'class="roofline"' in svg, where


def test_replot_draws_what_a_run_writes(tmp_path):
    written = R.replot(REPO_ROOT / "data" / "timings", tmp_path)
    assert written
    for g, name, bench in _all():
        out = tmp_path / f"{name}-{g.gpu['slug']}.svg"
        if P.wants_plot(bench):  # the runner's call (cli.py): render_svg(bench, gpu)
            assert out.read_text(encoding="utf-8") == P.render_svg(bench, g.gpu)
        else:
            assert not out.exists()


def test_the_committed_plots_are_what_replot_draws(tmp_path):
    R.replot(REPO_ROOT / "data" / "timings", tmp_path)
    stale = [
        p.name
        for p in tmp_path.glob("*.svg")
        if (REPO_ROOT / "docs/assets/plots" / p.name).read_text(encoding="utf-8")
        != p.read_text(encoding="utf-8")
    ]
    assert not stale, f"run `python -m triton_course.runner replot`: {stale}"


def test_replot_never_writes_the_data(tmp_path):
    before = {p: p.read_bytes() for p in DATA}
    R.replot(REPO_ROOT / "data" / "timings", tmp_path)
    assert {p: p.read_bytes() for p in DATA} == before


def _bench(params, rows):
    return {
        "title": "A `x` kernel",
        "unit": "GB/s",
        "metric": "bandwidth",
        "params": params,
        "peers": ["Triton", "PyTorch eager"],
        "roofline": {"name": "copy", "value": 1000.0, "unit": "GB/s"},
        "rows": [
            {
                "size": size,
                "dtype": "float32",
                "results": {
                    "Triton": {"rate": rate, "median_ms": 1.0, "rounds_ms": [1.0]},
                    "PyTorch eager": {
                        "rate": rate / 2,
                        "median_ms": 2.0,
                        "rounds_ms": [2.0],
                    },
                },
            }
            for size, rate in rows
        ],
    }


GPU = {"name": "Fixture GPU", "slug": "fixture"}


def test_data_spanning_decades_gets_a_log_axis_and_titles_lose_backticks():
    svg = P.render_svg(
        _bench(["n"], [({"n": 2**k}, 10.0**k) for k in (10, 11, 12, 13)]), GPU
    )
    assert "(log scale)" in svg and "`" not in svg and "A x kernel" in svg
    flat = P.render_svg(
        _bench(["n"], [({"n": 2**k}, 100.0 + k) for k in (10, 11, 12)]), GPU
    )
    assert "GB/s (log scale)" not in flat


def test_a_grid_of_settings_becomes_small_multiples_with_superscript_ticks():
    rows = [({"h": h, "n": 2**k}, 100.0 * k) for h in (1, 2) for k in (10, 11, 12)]
    svg = P.render_svg(_bench(["h", "n"], rows), GPU)
    assert svg.count('class="panel"') == 2 and "h 1" in svg and "h 2" in svg
    assert (
        "2¹⁰" in svg
        and "n (log scale)" in svg
        and "×" not in re.sub(r"<title>.*?</title>", "", svg).split("GB/s")[0]
    )


def test_shapes_that_are_no_grid_are_ordered_by_size():
    shapes = [(4096, 4096, 4096), (512, 512, 512), (2048, 2048, 2048)]
    rows = [({"M": m, "N": n, "K": k}, 100.0 + m / 100) for m, n, k in shapes]
    svg = P.render_svg(_bench(["M", "N", "K"], rows), GPU)
    labels = re.findall(r"rotate\(-\d+\)\" font-size=\"9\"[^>]*>([^<]+)<", svg)
    assert labels == ["512×512×512", "2¹¹×2¹¹×2¹¹", "2¹²×2¹²×2¹²"], labels


def test_line_labels_move_apart_when_their_lines_meet():
    bench = _bench(["n"], [({"n": 2**k}, 500.0) for k in (10, 11, 12)])
    targets = [{"kind": "ratio", "peer": None, "value": 1.02, "rows": None}]
    svg = P.render_svg(bench, GPU, ratio=True, kind="ratio", targets=targets)
    assert "parity 1×" in svg and "target 1.02×" in svg
    assert not G.overlaps(svg), G.overlaps(svg)


def test_the_geometry_check_catches_a_clipped_title():
    svg = (
        '<svg viewBox="0 0 100 50"><text x="60" y="20" font-size="14">'
        "a title far too long</text></svg>"
    )
    assert G.outside(svg)
    two = (
        '<svg viewBox="0 0 300 50"><text x="10" y="20" font-size="11">parity 1×</text>'
        '<text x="14" y="22" font-size="11">target 1×</text></svg>'
    )
    assert G.overlaps(two)
    assert json.dumps  # keep the import used where fixtures grow


def _measured_hook():
    """hooks/measured.py, loaded as MkDocs would (it needs mkdocs)."""
    pytest.importorskip("mkdocs")
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "measured_hook_for_plots", REPO_ROOT / "hooks" / "measured.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _page_plots():
    """(page, bench, svg) of every plot the pages' [[timings]] draw, through
    the hook's own render_timings with the targets each page states: what a
    reader sees, without building the site."""
    hook = _measured_hook()
    hook._state.update(
        gpus=[T.load_file(p) for p in DATA],
        root=REPO_ROOT,
        deferred=[],
        downloads={},
    )
    for md in sorted((REPO_ROOT / "docs").rglob("*.md")):
        text = md.read_text(encoding="utf-8")
        stated = hook.stated_targets(text)
        for line in text.splitlines():
            if not (m := hook._TABLE_RE.match(line.strip())):
                continue
            args = hook._parse_args(m.group(2))
            target = float(args["target"]) if "target" in args else None
            start = len(hook._state["deferred"])
            name, vs = m.group(1), args.get("vs")
            gpus = hook._state["gpus"]
            hook.render_timings(name, gpus, REPO_ROOT, "p/", target, vs,
                                stated.get(name, ()))  # fmt: skip
            for fragment in hook._state["deferred"][start:]:
                for svg in re.findall(r"<svg\b.*?</svg>", fragment, re.S):
                    yield md.relative_to(REPO_ROOT).as_posix(), name, svg


def test_no_label_on_a_page_plot_lies_on_the_data():
    """Issue 34 item 6: the labels of the targets a page states, of parity
    and of the ceilings never cover a marker, a whisker or a peer's line; a
    label with no free place is named in the legend instead."""
    plots, with_targets = 0, 0
    for page, name, svg in _page_plots():
        drawing = "narrow" if 'course-plot-svg narrow"' in svg else "wide"
        where = f"{page}: {name} ({drawing})"
        assert not G.labels_on_data(svg), (where, G.labels_on_data(svg))
        assert not G.overlaps(svg), (where, G.overlaps(svg))
        assert not G.outside(svg), (where, G.outside(svg))
        # every target line drawn is named: on its line or in the legend
        for value in re.findall(
            r'class="target" data-target="\w+:[^=]*=([\d.]+)"', svg
        ):
            assert re.search(rf"target {re.escape(value)}( %|×)", svg), (where, value)
        plots += 1
        with_targets += 'class="target"' in svg
    # the course states targets on several plots
    assert plots >= 20 and with_targets >= 5, (plots, with_targets)


@pytest.mark.parametrize("layout", [P.WIDE, P.NARROW], ids=["wide", "narrow"])
def test_a_target_label_at_any_height_keeps_off_the_data(layout):
    """Targets swept over the whole y range of every benchmark's data: where
    no free place is left, the label goes to the legend, never on a line."""
    for g, name, bench in _all():
        for pct in (20, 50, 80, 95):
            roofline = {"kind": "roofline", "peer": None, "value": pct, "rows": None}
            svg = P.render_svg(bench, g.gpu, targets=[roofline], layout=layout)
            assert not G.labels_on_data(svg), (name, pct, G.labels_on_data(svg))
            assert f"target {pct} % of the measured ceiling" in svg, (name, pct)
        for ratio in (0.8, 1.2):
            svg = P.render_svg(bench, g.gpu, ratio=True, kind="ratio",
                               target=ratio, layout=layout)  # fmt: skip
            assert not G.labels_on_data(svg), (name, ratio, G.labels_on_data(svg))


def test_a_crowded_target_is_named_in_the_legend_not_on_the_data():
    # Triton's line runs flat at 80 % of the ceiling: no place for the label
    # along it, above it or below it, that is clear of the markers
    rows = [({"n": 2**k}, 800.0 + (k % 2) * 30) for k in range(10, 26)]
    bench = _bench(["n"], rows)
    goal = {"kind": "roofline", "peer": None, "value": 80, "rows": None}
    svg = P.render_svg(bench, GPU, targets=[goal], layout=P.NARROW)
    assert not G.labels_on_data(svg), G.labels_on_data(svg)
    label = re.search(r"<text[^>]*>target 80 % of the measured ceiling</text>", svg)
    assert label and 'class="line-label"' not in label.group(0), svg


def test_every_roofline_a_benchmark_may_use_names_its_probe():
    # a plot's ceiling line says which probe measured it; a new roofline key
    # without a name here raised KeyError only when its plot was drawn
    from triton_course.runner import discovery

    keys = {key for keys in discovery.CEILINGS.values() for key in keys}
    assert keys <= set(P.PROBES), keys - set(P.PROBES)
    assert "compute_fp8" in keys  # the FP8 GEMM's ceiling
