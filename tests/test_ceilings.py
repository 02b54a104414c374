"""Ceilings that are limits (issue #33): a roofline is the probe measured in
the run, never moved by a contender's rate; the vendor's spec-sheet peak is
recorded beside it; a rate above either line is flagged (with why), shown
uncapped and marked, never hidden."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import svg_geometry as G
from test_measured_hook import build, fixture_doc
from test_runner import do_run, fake_env, repo  # noqa: F401 - repo: a fixture

from triton_course import timings as T
from triton_course import vendor_peaks as V
from triton_course.runner import measure as M
from triton_course.runner import plots as P

VENDOR = {"value": 1100.0, "unit": "GB/s", "source": "Fixture GPU datasheet"}
L2 = 2**20  # the fixture GPU's L2: 1 MiB


# ------------------------------------------------------------ the runner ---
def _desc(rates: dict, work: int, ceiling: str | None = None) -> dict:
    """A description whose contenders reach the given rates (GB/s) at one
    size: the fake timer below turns each contender's name into its time."""
    desc = {
        "name": "fixture_bench",
        "title": "t",
        "params": ["n"],
        "sizes": [{"n": 1}],
        "dtypes": ["float32"],
        "metric": "bandwidth",
        "work": lambda size, dtype: work,
        "make_inputs": lambda size, dtype, device: (),
        "triton": lambda: "Triton",
        "peers": {p: (lambda p=p: p) for p in rates if p != "Triton"},
    }
    if ceiling:
        desc["ceiling"] = ceiling
    return desc


def _env(rates: dict, work: int, vendor=VENDOR) -> M.Environment:
    def timer(fn, _work):
        ms = work / rates[fn()] / 1e6  # rate = work / ms / 1e6
        return {"gpu_ms": ms, "wall_ms": ms, "launch_hidden": True}

    return M.Environment(
        device="cpu",
        gpu={"slug": "fixture-gpu-a", "name": "Fixture GPU A", "l2_bytes": L2},
        provenance={},
        timer=timer,
        rooflines=None,
        rounds=3,
        vendor_peaks={"bandwidth": vendor, "compute": None, "l2": None},
    )


PROBE = {"name": "copy bandwidth", "value": 1000.0, "unit": "GB/s", "how": "x"}


def _measure(rates: dict, work: int, ceiling=None, probe=PROBE) -> dict:
    desc = _desc(rates, work, ceiling)
    env = _env(rates, work)
    return M.measure_benchmark(desc, "snippets/x.py", "0" * 64, env, dict(probe))


def test_no_contender_moves_a_roofline():
    record = _measure({"Triton": 1300.0, "PyTorch eager": 900.0}, work=8 * L2)
    roof = record["roofline"]
    assert roof["value"] == 1000.0  # the probe, although Triton went faster
    assert "probe_value" not in roof and "raised_by" not in roof
    assert roof["vendor_peak"] == VENDOR  # the datasheet's line beside it


def test_a_whole_run_stores_the_probes_and_the_vendor_peaks(repo):  # noqa: F811
    do_run(repo)
    doc = json.loads((repo / "data" / "fake-test-gpu.json").read_text())
    for bench in doc["benchmarks"].values():
        roof = bench["roofline"]
        probe = {"bandwidth": 100.0, "compute": 1.0}[bench["metric"]]
        assert roof["value"] == probe and "raised_by" not in roof
        assert roof["vendor_peak"]["source"] == "fake test datasheet"


@pytest.mark.parametrize(
    "work, why", [(L2 // 2, "cache"), (8 * L2, "work model")], ids=["fits", "big"]
)
def test_rates_above_a_line_are_flagged_with_why(work, why, capsys):
    # 1060 GB/s: 6 % above the 1000 GB/s probe; 1200: above the vendor's 1100
    rates = {"Triton": 1060.0, "PyTorch eager": 1200.0, "torch": 1040.0}
    record = _measure(rates, work)
    results = record["rows"][0]["results"]
    six = results["Triton"]["above_ceiling"]
    assert six["vendor"] is False and six["why"] == why
    assert six["probe_ratio"] == pytest.approx(1.06)
    over = results["PyTorch eager"]["above_ceiling"]
    assert over["vendor"] is True and over["why"] == why
    assert "above_ceiling" not in results["torch"]  # 4 %: within the tolerance
    log = capsys.readouterr().out
    assert log.count("probe (why:") == 2 and "above the vendor peak" in log
    T.validate(_doc_with(record), Path("fixture-gpu-a.json"))  # and it validates


def test_a_row_against_the_l2_ceiling_is_the_probes_fault_not_the_cache():
    l2 = {**PROBE, "name": "L2 copy bandwidth", "ceiling": "l2"}
    record = _measure({"Triton": 1500.0}, work=L2 // 2, ceiling="l2", probe=l2)
    flag = record["rows"][0]["results"]["Triton"]["above_ceiling"]
    assert flag == {"vendor": False, "probe_ratio": 1.5, "why": "probe"}
    assert record["roofline"]["vendor_peak"] is None  # no vendor L2 figure


def test_a_gpu_without_a_vendor_entry_is_refused():
    with pytest.raises(M.RunnerError, match=r"triton_course/vendor_peaks\.py"):
        M.Environment(
            device="cuda",
            gpu={"slug": "x", "name": "NVIDIA A100-SXM4-80GB", "sm_count": 108},
            provenance={},
            timer=None,
            rooflines=None,
        )
    with pytest.raises(M.RunnerError, match="add an entry"):
        M.vendor_peaks_for("Some Other GPU")


def test_the_h100_entry_is_the_datasheets():
    bw = V.peak("NVIDIA H100 80GB HBM3", "bandwidth")
    mm = V.peak("NVIDIA H100 80GB HBM3", "compute")
    assert bw["value"] == 3350.0 and "3.35 TB/s" in bw["source"]
    assert mm["value"] == 1979 / 2 and "1,979" in mm["source"]
    assert "datasheet" in bw["source"] and "sparsity" in mm["source"]
    assert V.peak("NVIDIA H100 80GB HBM3", "l2") is None
    assert M.vendor_peaks_for("NVIDIA H100 80GB HBM3")["bandwidth"] == bw


# ------------------------------------------------------------ the format ---
def _doc_with(record: dict) -> dict:
    doc = fixture_doc()
    bench = doc["benchmarks"]["vector_add"]
    bench["roofline"] = record["roofline"]
    bench["peers"] = record["peers"]
    rows = record["rows"]
    for row in rows:
        row["size"] = {"n_elements": row["size"]["n"]}
    bench["rows"], bench["timing"] = rows, {"rounds": 3, "method": "test"}
    return doc


@pytest.mark.parametrize(
    "where, bad, message",
    [
        ("vendor_peak", {"value": 1.0}, "vendor_peak"),
        ("vendor_peak", {"value": -1.0, "source": "s"}, "vendor_peak"),
        ("above_ceiling", {"vendor": 1, "probe_ratio": 1.1, "why": "cache"}, "above"),
        ("above_ceiling", {"vendor": False, "probe_ratio": 1.1, "why": "?"}, "above"),
    ],
)
def test_the_new_fields_are_validated(where, bad, message):
    doc = fixture_doc()
    bench = doc["benchmarks"]["vector_add"]
    if where == "vendor_peak":
        bench["roofline"]["vendor_peak"] = bad
    else:
        bench["rows"][0]["results"]["Triton"]["above_ceiling"] = bad
    with pytest.raises(T.TimingDataError, match=message):
        T.validate(doc, Path("fixture-gpu-a.json"))


def test_dram_bytes_is_checked_by_its_own_module():
    """A data file's optional "dram_bytes" goes through dram_bytes.validate,
    and a bad one fails like any other malformed field (TimingDataError)."""
    doc = fixture_doc()
    assert T.validate(doc, Path("fixture-gpu-a.json")).dram_bytes is None
    doc["dram_bytes"] = "bad"
    with pytest.raises(T.TimingDataError, match="fixture-gpu-a.json"):
        T.validate(doc, Path("fixture-gpu-a.json"))


# ------------------------------------------------------------- the pages ---
def _page_doc(triton_pct: float, raised: bool = False) -> dict:
    """The fixture data with the large row's Triton at triton_pct % of a
    1000 GB/s probe (raised: stored the way the old runner raised it)."""
    doc = fixture_doc()
    bench = doc["benchmarks"]["vector_add"]
    roof = bench["roofline"]
    if raised:
        roof |= {"value": 1500.0, "probe_value": 1000.0}
        roof["raised_by"] = {"benchmark": "vector_add", "contender": "Triton"}
    else:
        roof["vendor_peak"] = VENDOR
    row = bench["rows"][1]
    res = row["results"]["Triton"]
    factor = res["rate"] / (10 * triton_pct)
    res["rounds_ms"] = [ms * factor for ms in res["rounds_ms"]]
    for key in ("median_ms", "q25_ms", "q75_ms", "wall_ms"):
        res[key] *= factor
    res["rate"] = row["work"] / res["median_ms"] / 1e6
    if not raised:  # a runner that records vendor_peak records the flags too
        for r in bench["rows"]:
            for result in r["results"].values():
                flag = T.above_ceiling(result["rate"], bench, r, doc["gpu"])
                if flag:
                    result["above_ceiling"] = flag
    return doc


SHARE = (
    "# Ceilings\n\nShare: [[measured bench=vector_add gpu=gpu-a value=pct_roofline "
    "n_elements=1048576]]. Verdict: [[verdict bench=vector_add gpu=gpu-a "
    "value=pct_roofline target=100 n_elements=1048576]].\n\n[[timings vector_add]]\n"
)


def test_the_table_names_both_lines_and_shows_101_percent_as_is(tmp_path):
    code, html, err = build(tmp_path, {"fixture-gpu-a.json": _page_doc(101)}, SHARE)
    assert code == 0, err
    assert "copy bandwidth measured on this GPU in this run (2 GiB device copy)" in html
    assert "vendor spec-sheet peak (Fixture GPU datasheet): 1 100 GB/s" in html
    assert "<td>101 %</td>" in html  # not capped, and not marked: within 5 %
    assert "Share: 101 % (98–104 %)." in html and "‡" not in html
    assert "Verdict: too close to call (101 %" in html


def test_a_rate_far_above_the_probe_is_marked_with_why(tmp_path):
    code, html, err = build(tmp_path, {"fixture-gpu-a.json": _page_doc(106)}, SHARE)
    assert code == 0, err
    assert "<td>106 % ‡</td>" in html
    assert "Share: 106 % (103–109 %)" in html and 'href="#course-marks">‡' in html
    # 12 MiB of bytes against the fixture's unknown L2: the work model's fault
    assert "more than 5 % above the copy bandwidth measured in this run" in html
    assert "includes traffic this contender does not move" in html
    assert "Verdict: met (106 %" in html


def test_stored_data_with_a_raised_roofline_renders_against_the_probe(tmp_path):
    code, html, err = build(
        tmp_path, {"fixture-gpu-a.json": _page_doc(102, raised=True)}, SHARE
    )
    assert code == 0, err
    assert "Share: 102 %" in html and "<td>102 %</td>" in html  # of 1000, not 1500
    assert "in this run (2 GiB device copy): 1 000 GB/s" in html
    assert "raised" not in html and "went faster" not in html
    # no vendor_peak stored and no entry for the fixture GPU: said so
    assert "vendor_peaks.py has no entry for Fixture GPU A" in html


def test_the_h100_data_renders_the_datasheet_line_and_its_flags():
    path = sorted((Path(__file__).parent.parent / "data" / "timings").glob("*.json"))
    h100 = [T.load_file(p) for p in path if "h100" in p.name]
    if not h100:
        pytest.skip("no H100 data committed")
    g = h100[0]
    bench = g.benchmarks["online_softmax"]
    measured, vendor = P.ceiling_names(bench, g.gpu)
    assert "measured on this GPU in this run (2 GiB device copy)" in measured
    assert vendor.startswith("vendor spec-sheet peak (NVIDIA H100 Tensor Core GPU")
    probe = T.probe_of(bench["roofline"])
    for row in bench["rows"]:  # a flag wherever a rate is > 5 % above the probe
        for res in row["results"].values():
            flag = T.above_ceiling(res["rate"], bench, row, g.gpu)
            assert (flag is not None) == (res["rate"] > 1.05 * probe)


# ------------------------------------------------------------- the plots ---
def _plot_bench(rates: list[float]) -> dict:
    rows = []
    for k, r in enumerate(rates):
        n = 2 ** (20 + k)
        res = {"rate": r, "median_ms": n / r / 1e6, "q25_ms": 0, "q75_ms": 0}
        rows.append({"size": {"n": n}, "dtype": "float32", "work": n,
                     "results": {"Triton": res}})  # fmt: skip
    return {"title": "t", "unit": "GB/s", "metric": "bandwidth", "params": ["n"],
            "peers": ["Triton"], "rows": rows,
            "roofline": {"name": "copy bandwidth", "value": 1000.0, "unit": "GB/s",
                         "ceiling": "bandwidth", "vendor_peak": VENDOR}}  # fmt: skip


@pytest.mark.parametrize(
    "rates",
    [[500, 700, 900, 950], [980, 1050, 1090, 1000, 990, 1080], [1000.0] * 4],
    ids=["below", "between the lines", "on the measured line"],
)
@pytest.mark.parametrize("layout", [P.WIDE, P.NARROW], ids=["wide", "narrow"])
def test_both_lines_are_labelled_off_the_data_and_apart(rates, layout):
    svg = P.render_svg(_plot_bench(rates), {"name": "Fixture GPU A"}, layout=layout)
    assert 'class="roofline"' in svg and 'class="vendor-peak"' in svg
    texts = [t["text"] for t in G.text_boxes(svg)]
    measured = [t for t in texts if t.startswith("measured")]
    vendor = [t for t in texts if t.startswith("vendor")]
    assert len(measured) == 1 and len(vendor) == 1, texts
    if not layout.narrow:
        assert "measured on this GPU in this run (2 GiB device copy)" in measured[0]
        assert "vendor spec-sheet peak (Fixture datasheet)" in vendor[0]
    assert not G.overlaps(svg), G.overlaps(svg)
    assert not G.outside(svg), G.outside(svg)
    assert not G.labels_on_data(svg), G.labels_on_data(svg)


def test_the_geometry_check_sees_a_label_on_the_data():
    svg = (
        '<svg viewBox="0 0 300 100"><path class="series-line" d="M0,50 L300,50"/>'
        '<text class="line-label" x="10" y="54" font-size="11">on the line</text>'
        '<circle class="point" cx="200" cy="20" r="3"/></svg>'
    )
    assert G.labels_on_data(svg)
    assert not G.labels_on_data(re.sub(r'y="54"', 'y="90"', svg))


class _RoundsTimer:
    """A stand-in for CudaTimer whose rounds take the given times, in order."""

    def __init__(self, times):
        self.times = iter(times)

    def round(self, fn, wall=True):
        assert not wall, "a probe's rounds need no wall time: it is not stored"
        return {"gpu_ms": next(self.times)}


def test_a_probe_is_its_fastest_round_not_its_median():
    # The H100's matmul probe at its power limit: two fast rounds, five slow
    # ones (the published run at 467c577). Its median was the slow group's,
    # and good kernels stood more than 5 % above it.
    rounds = [1.422, 1.427, 1.531, 1.627, 1.627, 1.627, 1.629]
    ms, kept = M._roofline_ms(lambda: None, _RoundsTimer(rounds))
    assert ms == min(rounds)
    assert kept == rounds  # every round is stored, so the split stays visible


# ------------------------------------------------------- the FP8 ceiling ---
FP8_VENDOR = {"value": 1979.0, "unit": "TFLOP/s", "source": "Fixture FP8 datasheet"}
BF16_VENDOR = {"value": 989.5, "unit": "TFLOP/s", "source": "Fixture datasheet"}
FP8_PROBE = {"name": "FP8 matmul rate", "value": 1300.0, "unit": "TFLOP/s"}


def _fp8_measure(rates: dict, ceiling="compute_fp8") -> dict:
    work = 2 * 4096**3
    desc = {
        **_desc(rates, work, ceiling),
        "metric": "compute",
        "dtypes": ["float8_e4m3fn"],
    }

    def timer(fn, _work):
        ms = work / rates[fn()] / 1e9  # TFLOP/s = FLOPs / ms / 1e9
        return {"gpu_ms": ms, "wall_ms": ms, "launch_hidden": True}

    env = M.Environment(
        device="cpu",
        gpu={"slug": "fixture-gpu-a", "name": "Fixture GPU A", "l2_bytes": L2},
        provenance={},
        timer=timer,
        rooflines=None,
        rounds=3,
        vendor_peaks={"compute": BF16_VENDOR, "compute_fp8": FP8_VENDOR},
    )
    probe = {**FP8_PROBE, "ceiling": ceiling}
    return M.measure_benchmark(desc, "snippets/x.py", "0" * 64, env, probe)


def test_an_fp8_gemm_is_a_share_of_the_fp8_probe_and_datasheet():
    # 1250 TFLOP/s is above the bf16 datasheet's 989.5 but no finding: the
    # FP8 GEMMs are measured against the FP8 probe and the FP8 dense peak
    record = _fp8_measure({"Triton": 1250.0, "cuBLAS FP8": 1280.0})
    roof = record["roofline"]
    assert roof["ceiling"] == "compute_fp8" and roof["vendor_peak"] == FP8_VENDOR
    for res in record["rows"][0]["results"].values():
        assert "above_ceiling" not in res
    over = _fp8_measure({"Triton": 1400.0})["rows"][0]["results"]["Triton"]
    assert over["above_ceiling"]["why"] == "probe"  # 8 % above the probe
    assert over["above_ceiling"]["vendor"] is False


def test_only_a_compute_benchmark_may_name_the_fp8_ceiling():
    from triton_course.runner import discovery as D

    rates = {"Triton": 1.0, "cuBLAS": 1.0}
    compute = {**_desc(rates, 1, "compute_fp8"), "metric": "compute"}
    assert D.ceiling_of(D.check_description(compute, "x.py")) == "compute_fp8"
    with pytest.raises(D.DescriptionError, match="'ceiling' of a bandwidth"):
        D.check_description(_desc(rates, 1, "compute_fp8"), "x.py")


@pytest.mark.parametrize("capability", [(7, 5), (8, 0), (8, 6)])
def test_the_fp8_probe_is_refused_without_fp8_tensor_cores(capability, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: capability)
    # refused before any tensor is made: no GPU is needed to see the message
    with pytest.raises(M.RunnerError, match=r"compute capability \d\.\d: the FP8"):
        M._fp8_roofline("NVIDIA A100-SXM4-80GB", timer=None)
    message = M.fp8_refusal(capability, "NVIDIA A100-SXM4-80GB")
    assert "8.9" in message and "NVIDIA A100-SXM4-80GB" in message
    assert M.fp8_refusal((8, 9), "x") is None and M.fp8_refusal((9, 0), "x") is None


def test_the_fp8_entries_are_the_datasheets():
    for gpu, sheet in (("NVIDIA H100 80GB HBM3", "H100"), ("NVIDIA H200", "H200")):
        fp8 = V.peak(gpu, "compute_fp8")
        assert fp8["value"] == 3958 / 2 and "3,958" in fp8["source"]
        assert f"{sheet} Tensor Core GPU datasheet" in fp8["source"]
        assert "sparsity" in fp8["source"] and fp8["unit"] == "TFLOP/s"
        assert M.vendor_peaks_for(gpu)["compute_fp8"] == fp8
