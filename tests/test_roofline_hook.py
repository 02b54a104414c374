"""hooks/roofline.py: the roofline directive, on fixture data (never data/).

The fixture (tests/fixtures/roofline/timings/fixture-h100.json) holds invented
values, chosen so that every expected number below can be worked out by hand:
copy bandwidth 2000 GB/s, matmul rate 500 TFLOP/s, hence a ridge point at
500 / 2 = 250 FLOP/byte.
"""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from triton_course import timings as T

FIXTURES = Path(__file__).parent / "fixtures" / "roofline" / "timings"


def _load_hook():
    spec = importlib.util.spec_from_file_location(
        "roofline_hook", REPO_ROOT / "hooks" / "roofline.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hook = _load_hook()


@pytest.fixture(scope="module")
def gpus():
    return T.load_dir(FIXTURES)


@pytest.fixture(scope="module")
def benches(gpus):
    return gpus[0].benchmarks


def test_ceilings_come_from_each_metric(benches):
    assert hook.ceilings(benches) == (2000.0, 500.0)


def test_bandwidth_benchmark_is_placed_from_its_flop_count(benches):
    bench = benches["add_like"]
    point, reason = hook.place(bench, bench["rows"][1])
    assert reason is None
    # 2.5e8 FLOPs over 1e9 bytes in 1 ms
    assert point["intensity"] == pytest.approx(0.25)
    assert point["tflops"] == pytest.approx(0.25)


def test_compute_benchmark_is_placed_from_its_reported_byte_count(benches):
    # gemm_like's bytes come from its report(), stored in notes.report.roofline,
    # matched to the row by size and dtype
    bench = benches["gemm_like"]
    point, reason = hook.place(bench, bench["rows"][0])
    assert reason is None
    assert point["intensity"] == pytest.approx(1000.0)  # 1e12 FLOPs / 1e9 bytes
    assert point["tflops"] == pytest.approx(250.0)  # 1e12 FLOPs in 4 ms


@pytest.mark.parametrize(
    "name, reason",
    [("copy_like", "no FLOP count"), ("zero_like", "does no arithmetic")],
)
def test_kernels_without_the_data_are_not_placed(benches, name, reason):
    bench = benches[name]
    point, why = hook.place(bench, bench["rows"][0])
    assert point is None and reason in why


def test_attainable_is_the_lower_of_the_two_roofs():
    assert hook.attainable(0.25, 2000.0, 500.0) == pytest.approx(0.5)
    assert hook.attainable(250.0, 2000.0, 500.0) == pytest.approx(500.0)
    assert hook.attainable(1e4, 2000.0, 500.0) == pytest.approx(500.0)
    assert hook.attainable(1.0, None, 500.0) == 500.0
    assert hook.attainable(1.0, None, None) is None


def test_collect_takes_the_largest_row_unless_told_otherwise(benches):
    points, left_out = hook.collect(benches, None, all_rows=False)
    assert [p["bench"] for p in points] == ["add_like", "gemm_like"]
    assert dict(left_out) == {
        "copy_like": "no FLOP count recorded",
        "zero_like": "does no arithmetic (intensity 0)",
    }
    points, _ = hook.collect(benches, ["add_like"], all_rows=True)
    assert [p["size"] for p in points] == ["n=10", "n=1000"]


def test_render_draws_roof_ridge_and_every_point(gpus):
    text = hook.render_roofline(" gpu=h100", gpus)
    svg = re.search(r"<svg.*?</svg>", text).group(0)
    assert svg.count('<g class="point">') == 2
    assert 'class="roof"' in svg and 'class="ridge"' in svg
    assert "ridge point 250 FLOP/byte" in text
    assert "copy bandwidth measured on this GPU in this run" in text
    assert "(2 GiB device copy): 2 000 GB/s" in text
    # no vendor figure recorded, none in vendor_peaks.py for the fixture GPU
    assert "Dashed roof: vendor spec-sheet peak: none for this GPU" in text
    assert 'class="vendor-roof"' not in svg
    # the table: one row per point, with the percentage of the roof it reaches
    assert re.search(r"\| 1 \| `add_like`: Add / like \| n=1000 .* \| 50 % \|", text)
    assert re.search(r"\| 2 \| `gemm_like`: .* \| 1 000 \| 250 \| 50 % \|", text)
    # a benchmark with a rate but no FLOP count is not only a name in a
    # list: it is shown against its own ceiling, 1000 of 2000 GB/s
    ceiling = text[text.find('<div class="course-ceiling"') :]
    assert re.search(
        r"<code>copy_like</code></td>"
        r'<td class="bar"><span class="track"><span style="width:50%"></span></span>'
        r"50 % <small>\(1 000 GB/s\)</small></td>"
        r"<td>copy bandwidth</td><td>bytes only</td>",
        ceiling,
    )
    assert "1 benchmark whose data records only the bytes" in text
    assert "`copy_like`: no FLOP count" not in text
    assert "- `zero_like`: does no arithmetic (intensity 0)" in text
    # the SVG must stay one HTML block: a blank line would end it early
    assert "\n\n" not in svg


def test_the_roofline_is_drawn_for_the_column_and_for_a_phone(gpus):
    text = hook.render_roofline(" gpu=h100", gpus)
    wide, narrow = re.findall(r"<svg.*?</svg>", text)
    assert 'class="course-plot-svg wide"' in wide and 'width="100%"' in wide
    # the frame's height and the header's (title and legend) above it
    shift = float(re.search(r'<g transform="translate\(0,([\d.]+)\)">', narrow)[1])
    total = round(hook.NARROW_HEIGHT + shift)
    assert f'viewBox="0 0 {hook.NARROW_WIDTH} {total}"' in narrow
    assert 'class="course-plot-svg narrow"' in narrow
    assert wide.count('<g class="point">') == narrow.count('<g class="point">') == 2
    # every point of the phone's drawing inside its plot area
    for cx, cy in re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)"', narrow):
        assert hook.LEFT <= float(cx) <= hook.NARROW_WIDTH - hook.RIGHT
        assert hook.TOP <= float(cy) <= hook.NARROW_HEIGHT - hook.BOTTOM


def test_points_sit_on_the_plot(gpus):
    text = hook.render_roofline(" gpu=h100", gpus)
    wide = re.search(r"<svg.*?</svg>", text).group(0)
    for cx, cy in re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)"', wide):
        assert hook.LEFT <= float(cx) <= hook.WIDTH - hook.RIGHT
        assert hook.TOP <= float(cy) <= hook.HEIGHT - hook.BOTTOM


def test_no_data_for_the_gpu_says_not_yet_measured(gpus):
    text = hook.render_roofline(" gpu=h200", gpus)
    assert "not yet measured" in text.lower()
    assert "<svg" not in text
    assert "not yet measured" in hook.render_roofline(" gpu=h100", []).lower()


def test_unknown_benchmark_is_listed_not_fatal(gpus):
    text = hook.render_roofline(" gpu=h100 bench=gemm_like,nope", gpus)
    # one point, drawn twice (column, phone)
    assert text.count('<g class="point">') == 2
    assert "- `nope`: not measured on this GPU" in text


@pytest.mark.parametrize(
    "args, message",
    [
        ("", "needs gpu"),
        (" gpu=h100 colour=red", "takes gpu="),
        (" gpu=h100 rows=some", "rows="),
    ],
)
def test_bad_directive_is_an_error(gpus, args, message):
    with pytest.raises(ValueError, match=message):
        hook.render_roofline(args, gpus)


class _Page:
    class file:  # noqa: N801 - mimics mkdocs' page.file
        src_uri = "lesson.md"


def test_directive_is_replaced_outside_code_fences_only(gpus):
    hook._state["gpus"] = gpus
    page = "# T\n\n[[roofline gpu=h100]]\n\n```text\n[[roofline gpu=h100]]\n```\n"
    out = hook.on_page_markdown(page, _Page, {}, None)
    assert out.count("<svg") == 2  # one directive: the column's and a phone's
    assert "```text\n[[roofline gpu=h100]]\n```" in out


def test_bad_directive_names_the_page(gpus):
    from mkdocs.exceptions import PluginError

    hook._state["gpus"] = gpus
    with pytest.raises(PluginError, match="lesson.md:1"):
        hook.on_page_markdown("[[roofline h100]]", _Page, {}, None)


def test_hook_imports_without_torch():
    # The docs build must not need torch or triton.
    code = (
        "import sys; sys.modules['torch'] = None; sys.modules['triton'] = None; "
        "import runpy; runpy.run_path('hooks/roofline.py')"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, check=True)


# --------------------------------------------- hooks/measured.py: gpu.l2_mib ---
def test_measured_hook_derives_l2_mib_from_l2_bytes(gpus):
    # The lesson quotes the L2 size in MiB; the runner records it in bytes.
    spec = importlib.util.spec_from_file_location(
        "measured_hook_for_roofline_tests", REPO_ROOT / "hooks" / "measured.py"
    )
    measured = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(measured)
    render = measured.render_measured
    assert render("gpu=h100 value=gpu.l2_mib", gpus, REPO_ROOT) == "50 MiB"
    with pytest.raises(ValueError, match="memory_bytes"):
        render("gpu=h100 value=gpu.memory_gib", gpus, REPO_ROOT)


# ------------------------------------------------------------- [[ridge]] ---
def test_ridge_renders_the_measured_ridge_point(gpus):
    # fixture ceilings: 500 TFLOP/s over 2000 GB/s
    assert hook.render_ridge("gpu=h100", gpus) == "250 FLOP/byte"


def test_ridge_above_holds_with_room_to_spare_and_fails_without(gpus):
    assert hook.render_ridge("gpu=h100 above=128", gpus) == "250 FLOP/byte"
    with pytest.raises(ValueError, match="too close or false"):
        hook.render_ridge("gpu=h100 above=240", gpus)  # 250 − 10 % ≤ 240
    with pytest.raises(ValueError, match="too close or false"):
        hook.render_ridge("gpu=h100 above=300", gpus)


def test_ridge_inline_fails_the_page_naming_its_line(gpus):
    from mkdocs.exceptions import PluginError

    hook._state["gpus"] = gpus
    out = hook.on_page_markdown("below [[ridge gpu=h100 above=100]].", _Page, {}, None)
    assert out == "below 250 FLOP/byte."
    with pytest.raises(PluginError, match="lesson.md:2"):
        hook.on_page_markdown("x\nbelow [[ridge gpu=h100 above=260]]", _Page, {}, None)
    with pytest.raises(PluginError, match="matches 0"):
        hook.on_page_markdown("[[ridge gpu=h200]]", _Page, {}, None)


# -------------------------------------------- ceilings: probe and vendor ---
def _with_ceilings(tmp_path, gpus):
    """The fixture with the vendor's peaks recorded and the copy bandwidth
    stored the way the old runner raised it (probe 2000, raised to 2500)."""
    import copy
    import json

    doc = json.loads((FIXTURES / "fixture-h100.json").read_text())
    for bench in doc["benchmarks"].values():
        roof = bench["roofline"]
        if roof["unit"] == "GB/s":
            roof |= {"value": 2500.0, "probe_value": 2000.0}
            roof["raised_by"] = {"benchmark": "add_like", "contender": "x"}
        else:
            roof["vendor_peak"] = {"value": 800.0, "source": "fixture datasheet"}
    path = tmp_path / "fixture-h100.json"
    path.write_text(json.dumps(copy.deepcopy(doc)))
    return [T.load_file(path)]


def test_the_roofline_reads_the_probe_and_draws_the_vendors_roof(tmp_path, gpus):
    import svg_geometry as G

    raised = _with_ceilings(tmp_path, gpus)
    assert hook.ceilings(raised[0].benchmarks) == (2000.0, 500.0)  # the probes
    assert hook.render_ridge("gpu=h100", raised) == "250 FLOP/byte"
    text = hook.render_roofline(" gpu=h100", raised)
    wide, narrow = re.findall(r"<svg.*?</svg>", text)
    assert 'class="vendor-roof"' in wide and 'class="roof"' in wide
    assert "measured on this GPU in this run" in wide
    assert "vendor spec-sheet peak" in wide
    assert "800 TFLOP/s (fixture datasheet)" in text
    # % of the measured roof, as before: the raised 2500 is not used
    assert re.search(r"\| 1 \| `add_like`: .* \| 50 % \|", text)
    for svg in (wide, narrow):
        keys = [t for t in G.text_boxes(svg) if 'class="roof-label"' in t["attrs"]]
        assert len(keys) == 2
        assert not G.overlaps(svg) and not G.outside(svg)
        circles = re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)"', svg)
        for key in keys:  # the key is in the empty upper left, off the points
            x1, y1, x2, y2 = key["box"]
            for cx, cy in circles:
                assert not (x1 - 5 < float(cx) < x2 + 5 and y1 - 5 < float(cy) < y2 + 5)


def test_a_rate_above_the_probe_is_shown_uncapped_and_marked(tmp_path, gpus):
    import json

    doc = json.loads((FIXTURES / "fixture-h100.json").read_text())
    row = max(doc["benchmarks"]["copy_like"]["rows"], key=lambda r: r["work"])
    res = row["results"]["Triton"]
    res["rate"] *= 2.2  # 2200 of the 2000 GB/s probe: 110 %
    path = tmp_path / "fixture-h100.json"
    path.write_text(json.dumps(doc))
    text = hook.render_roofline(" gpu=h100", [T.load_file(path)])
    ceiling = text[text.find('<div class="course-ceiling"') :]
    assert '<span style="width:100%"></span></span>110 %' in ceiling
    assert "‡ 110 % of the ceiling measured in this run" in ceiling


# ------------------------------------------- title, legend, numbers (#34) ---
def _roof_segments(svg: str) -> list[tuple]:
    """The roofs' and the ridge line's segments in viewBox units (the plot
    is drawn in a group moved down by the header's height)."""
    shift = float(re.search(r'<g transform="translate\(0,([\d.]+)\)">', svg)[1])
    segs = []
    for points in re.findall(r'class="(?:vendor-)?roof" points="([^"]+)"', svg):
        pts = [tuple(map(float, xy.split(","))) for xy in points.split()]
        pairs = zip(pts, pts[1:], strict=False)
        segs += [(a[0], a[1] + shift, b[0], b[1] + shift) for a, b in pairs]
    for line in re.findall(r'<line class="ridge"[^>]*>', svg):
        x1, y1, x2, y2 = (float(re.search(rf'{k}="([\d.]+)"', line)[1])
                          for k in ("x1", "y1", "x2", "y2"))  # fmt: skip
        segs.append((x1, y1 + shift, x2, y2 + shift))
    return segs


def _check_drawing(svg: str) -> None:
    import svg_geometry as G

    assert not G.overlaps(svg), G.overlaps(svg)
    assert not G.outside(svg), G.outside(svg)
    segs = _roof_segments(svg)
    assert segs
    numbers = [t for t in G.text_boxes(svg) if 'class="point-number"' in t["attrs"]]
    assert numbers and len(numbers) == svg.count('<g class="point">')
    for t in numbers:  # each point's number is off the roofs and the ridge
        hits = [s for s in segs if G._seg_in_box(t["box"], s)]
        assert not hits, (t["text"], t["box"], hits[:2])


def test_the_roofline_has_a_title_and_a_legend_of_what_it_draws(tmp_path, gpus):
    import svg_geometry as G

    text = hook.render_roofline(" gpu=h100", _with_ceilings(tmp_path, gpus))
    wide, narrow = re.findall(r"<svg.*?</svg>", text)
    for svg, names in (
        (wide, ["measured on this GPU in this run", "vendor spec-sheet peak",
                "a Triton kernel: its number is its row in the table below",
                "ridge point"]),
        (narrow, ["measured", "vendor peak", "a kernel (number: table row)",
                  "ridge point"]),
    ):  # fmt: skip
        texts = G.text_boxes(svg)
        title = " ".join(t["text"] for t in texts if "roof-title" in t["attrs"])
        assert title == "Roofline of Fixture H100 (test data, not a measurement)"
        legend = [
            t for t in texts if re.search(r'class="roof-(label|legend)"', t["attrs"])
        ]
        assert [t["text"] for t in legend] == names
        # one key per legend entry, and the legend above the plot's frame
        assert svg.count('class="roof-key"') == len(names)
        shift = float(re.search(r'<g transform="translate\(0,([\d.]+)\)">', svg)[1])
        assert all(t["box"][3] <= shift + hook.TOP for t in legend)
        _check_drawing(svg)


def test_point_numbers_keep_off_the_roofs_on_the_committed_data():
    """A memory-bound point sits just under the roof's slope: its number, up
    and to the right, used to sit on the slope."""
    data = T.load_dir(REPO_ROOT / "data" / "timings")
    drawn = 0
    for g in data:
        key = g.gpu["slug"]
        for args in (f" gpu={key}", f" gpu={key} bench=gpu_fma_intensity rows=all"):
            for svg in re.findall(r"<svg.*?</svg>", hook.render_roofline(args, data)):
                _check_drawing(svg)
                drawn += 1
    assert drawn >= 4


def test_a_number_takes_the_first_free_side_of_its_point():
    plot = (0, 0, 200, 200)
    # nothing in the way: up and to the right
    assert hook.place_number(100, 100, "1", plot, [], []) == (107, 95)
    # a roof rising through the upper right: below the slope instead
    slope = [(0, 200, 200, 0)]
    x, y = hook.place_number(100, 100, "1", plot, slope, [])
    assert (x, y) == (107, 115)
    box = hook._number_box(x, y, "1")
    assert not hook.P._crosses(box, slope[0])


def test_an_fp8_ceiling_never_becomes_the_flat_roof(benches):
    # the FP8 GEMMs carry their own probe (ceiling "compute_fp8", about
    # twice the bf16 one): the roofline's flat roof stays the bf16 matmul
    import copy

    mixed = copy.deepcopy(dict(benches))
    fp8 = copy.deepcopy(next(b for b in mixed.values() if b["metric"] == "compute"))
    fp8["roofline"]["ceiling"] = "compute_fp8"
    for key in ("value", "probe_value"):
        if key in fp8["roofline"]:
            fp8["roofline"][key] = 4 * fp8["roofline"][key]
    mixed["fp8_gemm"] = fp8
    assert hook.ceilings(mixed) == hook.ceilings(benches) == (2000.0, 500.0)
