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
