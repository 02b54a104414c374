"""The byte-model check (triton_course/dram_bytes.py, runner/dram.py) on the CPU.

Nothing here runs Nsight Compute: one CSV fixture (tests/fixtures/dram/) is
the head of a real probe's output on an H100, the others are hand-written in
its layout, and a fake ``ncu`` stands in for the real one.
"""

import copy
import csv
import os
import stat
import subprocess
import sys
from types import SimpleNamespace

import pytest
from conftest import REPO_ROOT, SNIPPETS

from triton_course import dram_bytes as DB
from triton_course.runner import discovery as D
from triton_course.runner import dram
from triton_course.runner.measure import RunnerError

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "dram"
TINY = REPO_ROOT / "tests" / "fixtures" / "runner" / "snippets"
H100_L2 = 50 * 2**20  # a GPU's L2 for the plan: 52428800 bytes
H100_MEMORY = 85_017_493_504  # device__attribute_total_memory in the H100 probe
SMALL_L2 = 256  # tiny_scale (8 KiB at n=1024) is then profiled as benchmarked
REAL = "ncu_raw_h100_2025.3.1.log"  # real rows: fused_mlp_tail, gpu_coalescing...
VECTOR_ADD_MODEL = 3 * 2**28 * 4  # vector_add's work() at 2**28 float32
SOFTMAX_MODEL = 2 * 2**14 * 2**14 * 2  # softmax_row's work() at 16384² float16


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


# ------------------------------------------------------------- ncu's CSV ---
def test_the_raw_csv_is_read_by_its_header_with_separators_and_units_skipped():
    kernels = dram.parse_ncu_csv(fixture("ncu_raw_2025.log"))
    assert len(kernels) == 18  # the ==PROF== lines and the units row skipped
    assert [k["id"] for k in kernels] == [str(i) for i in range(18)]
    add = kernels[1]
    assert add["name"] == "add_kernel" and add["grid"] == "(262144, 1, 1)"
    assert (add["read"], add["write"]) == (2_147_614_720, 1_051_066_368)
    # a demangled C++ name holds commas inside its quotes
    assert kernels[3]["name"].startswith("void at::native::vectorized_elementwise")
    assert kernels[3]["name"].endswith("std::array<char *, 3>>(int, T2, T3)")
    assert kernels[3]["read"] == 2_147_581_952


def test_columns_are_found_by_name_not_by_position():
    kernels = dram.parse_ncu_csv(fixture("ncu_raw_2024.log"))  # write before read
    assert [k["name"] for k in kernels][:2] == [dram.MARKER, "add_kernel"]
    assert (kernels[1]["read"], kernels[1]["write"]) == (2147614720, 1051066368)


def test_nothing_profiled_gives_no_kernel():
    assert dram.parse_ncu_csv(fixture("ncu_nothing_profiled.log")) == []


@pytest.mark.parametrize(
    "text, message",
    [
        ('"ID","Kernel Name","dram__bytes_read.sum"\n"0","k","1"\n', "lacks the col"),
        (
            '"ID","Kernel Name","dram__bytes_read.sum","dram__bytes_write.sum"\n'
            '"0","k","n/a","0"\n',
            "is not a number",
        ),
        (
            '"ID","Kernel Name","dram__bytes_read.sum","dram__bytes_write.sum"\n'
            '"0","k","1"\n',
            "fields, not 4",
        ),
    ],
)
def test_a_csv_the_parser_does_not_understand_is_an_error(text, message):
    with pytest.raises(RunnerError, match=message):
        dram.parse_ncu_csv(text)


def test_rows_are_split_at_the_marker_kernels():
    segments = dram.split_at_markers(dram.parse_ncu_csv(fixture("ncu_raw_2025.log")))
    assert [len(s) for s in segments] == [1, 1, 1, 1, 1, 5, 1]
    assert segments[0][0]["name"] == "add_kernel"
    assert segments[6][0]["name"] == "triton_red_fused__softmax_0"
    assert all(dram.MARKER not in k["name"] for s in segments for k in s)


def _kernel(name, grid="(1, 1, 1)"):
    return {"id": "", "name": name, "grid": grid, "read": 1.0, "write": 1.0}


def test_rows_that_no_longer_line_up_with_the_calls_are_an_error():
    with pytest.raises(RunnerError, match="before any marker"):
        dram.split_at_markers([_kernel("add_kernel"), _kernel(dram.MARKER)])
    # marker 1 must run on 2 blocks: here a marker's row went missing
    rows = [_kernel(dram.MARKER), _kernel("a"), _kernel(dram.MARKER, "(3, 1, 1)")]
    with pytest.raises(RunnerError, match="ran on 3 blocks, not 2"):
        dram.split_at_markers(rows)
    # without a grid column the order cannot be checked, only counted
    rows = [_kernel(dram.MARKER, ""), _kernel("a"), _kernel(dram.MARKER, "")]
    assert [len(s) for s in dram.split_at_markers(rows)] == [1, 0]


def test_the_real_h100_csv_is_read_from_its_270_columns():
    text = fixture(REAL)  # ncu 2025.3.1.0's raw page, copied from a probe
    header = next(ln for ln in text.splitlines() if ln.startswith('"ID",'))
    assert len(next(csv.reader([header]))) == 270
    kernels = dram.parse_ncu_csv(text)
    assert [k["id"] for k in kernels] == [str(i) for i in range(15)]
    copy_ = kernels[10]
    assert copy_["name"] == "strided_copy_kernel" and copy_["grid"] == "(16384, 1, 1)"
    assert (copy_["read"], copy_["write"]) == (67_114_240, 44_329_984)
    assert kernels[5]["name"].startswith("void at::<unnamed>::fused_dropout_kernel")
    assert (kernels[5]["read"], kernels[5]["write"]) == (268_450_048, 381_153_280)
    segments = dram.split_at_markers(kernels)
    # fused_mlp_tail x3, gpu_coalescing x2, gpu_latency_hiding x2; each
    # "PyTorch eager" copy of the last two launched no kernel (copy engine)
    assert [len(s) for s in segments] == [1, 3, 2, 1, 0, 1, 0]
    assert segments[3][0]["name"] == "strided_copy_kernel"
    assert segments[5][0]["name"] == "persistent_copy_kernel"


# -------------------------------------------------------------- verdicts ---
@pytest.mark.parametrize(
    "model, measured, working_set, verdict",
    [
        (100.0, 100.0, 200, "within"),
        (110.0, 100.0, 200, "within"),  # 10 % off: still within
        (90.0, 100.0, 200, "within"),
        (110.5, 100.0, 200, "off"),
        (89.0, 100.0, 200, "off"),
        (100.0, 0.0, 200, "off"),  # nothing counted where a model moves bytes
        (300.0, 100.0, 100, "fits_l2"),  # working set == L2: not judged
        (300.0, 100.0, 50, "fits_l2"),
    ],
)
def test_triton_is_judged_at_10_percent_only_beyond_l2(
    model, measured, working_set, verdict
):
    assert DB.judge(model, measured, working_set, l2_bytes=100) == verdict


def test_the_largest_working_set_is_profiled():
    assert DB.pick_size([10, 300, 200], 100) == (1, True)
    assert DB.pick_size([300, 10, 300], 100) == (0, True)  # a tie: the first
    assert DB.pick_size([10, 60, 20], 100) == (1, False)  # all fit in L2
    with pytest.raises(ValueError):
        DB.pick_size([], 100)


# ------------------------------------------------------------------ plan ---
def test_the_plan_takes_every_bandwidth_benchmark_at_its_largest_size():
    snippets = D.discover(SNIPPETS, only="vector_add") + D.discover(
        SNIPPETS, only="profiling"
    )
    plan = dram.build_plan(snippets, H100_L2, H100_MEMORY, REPO_ROOT)
    (vadd,) = [b for b in plan["benchmarks"] if b["name"] == "vector_add"]
    assert vadd["size"] == {"n_elements": 2**28} and vadd["dtype"] == "float32"
    assert vadd["working_set_bytes"] == VECTOR_ADD_MODEL  # 61 L2s: not scaled
    assert (vadd["scale_factor"], vadd["capped"]) == (1, False)
    assert vadd["benchmarked_size"] == vadd["size"]
    assert vadd["contenders"] == ["Triton", "PyTorch eager", "torch.compile"]
    assert vadd["snippet"] == "snippets/vector_add.py"
    # profiling.py: the cold add is profiled, the L2-resident one skipped
    names = [b["name"] for b in plan["benchmarks"]]
    assert "l2_cold_add" in names and "l2_hot_add" not in names
    (cold,) = [b for b in plan["benchmarks"] if b["name"] == "l2_cold_add"]
    # 2**25 float32 (403 MB, 7.7 L2s) doubled twice to 1.6 GB
    assert cold["benchmarked_size"] == {"n_elements": 2**25}
    assert cold["size"] == {"n_elements": 2**27} and cold["scale_factor"] == 4
    assert cold["working_set_bytes"] == 3 * 2**27 * 4
    assert "L2-resident by design" in plan["skipped"]["l2_hot_add"]
    # compute benchmarks (the profiling snippet's matmuls) are not planned
    assert all(b["name"].startswith(("vector_add", "l2_")) for b in plan["benchmarks"])


def test_the_plan_scales_a_benchmark_that_fits_in_l2_to_many_l2s():
    snippets = D.discover(TINY)
    plan = dram.build_plan(snippets, H100_L2, H100_MEMORY, REPO_ROOT)
    (tiny,) = plan["benchmarks"]  # tiny_scale_flops is a compute benchmark
    # 8 bytes per n: from n=1024 (8 KiB) to the first power of two past 20 L2s
    assert tiny["benchmarked_size"] == {"n": 1024}
    assert tiny["size"] == {"n": 2**27} and tiny["scale_factor"] == 2**17
    assert tiny["working_set_bytes"] == 2**30 >= DB.MIN_L2_MULTIPLE * H100_L2
    assert tiny["scaled_param"] == "n" and not tiny["capped"]
    assert tiny["contenders"] == ["Triton", "PyTorch eager", "Broken", "torch.compile"]
    assert plan["min_l2_multiple"] == DB.MIN_L2_MULTIPLE
    assert plan["max_model_bytes"] == H100_MEMORY // 4
    # a GPU of 4 MiB: the model may take 1 MiB, short of 20 L2s
    plan = dram.build_plan(snippets, H100_L2, 4 * 2**20, REPO_ROOT)
    (tiny,) = plan["benchmarks"]
    assert tiny["size"] == {"n": 2**17} and tiny["working_set_bytes"] == 2**20
    assert tiny["capped"] and tiny["scale_factor"] == 128


def test_the_plan_needs_the_l2_size_and_known_names():
    snippets = D.discover(TINY)
    with pytest.raises(RunnerError, match="L2 size is unknown"):
        dram.build_plan(snippets, None, H100_MEMORY, REPO_ROOT)
    with pytest.raises(RunnerError, match="memory size is unknown"):
        dram.build_plan(snippets, H100_L2, None, REPO_ROOT)
    with pytest.raises(RunnerError, match="no benchmark named"):
        dram.build_plan(snippets, H100_L2, H100_MEMORY, REPO_ROOT, names=["nope"])
    assert dram.build_plan(
        snippets, H100_L2, H100_MEMORY, REPO_ROOT, names=["tiny_scale"]
    )["benchmarks"]


def _copy_work(size):  # gpu_coalescing's model in float32: n read + n written
    return 2 * 4 * size["n_elements"]


def test_the_size_doubles_until_the_model_is_many_l2s_within_the_memory_cap():
    size = {"n_elements": 2**24, "stride": 1}  # 134 MB: 2.6 L2s of an H100
    scaled = {"n_elements": 2**27, "stride": 1}  # 1074 MB: 20.5 L2s
    assert DB.scale_size(size, "n_elements", _copy_work, H100_L2, H100_MEMORY) == (
        scaled,
        8,
        False,
    )
    assert (
        _copy_work(scaled)
        >= DB.MIN_L2_MULTIPLE * H100_L2
        > _copy_work({"n_elements": 2**26})
    )
    # a size already that large is profiled as benchmarked
    assert DB.scale_size(scaled, "n_elements", _copy_work, H100_L2, H100_MEMORY) == (
        scaled,
        1,
        False,
    )
    # 2 GiB of memory: the model may take 512 MiB, reached at 2**26
    assert DB.scale_size(size, "n_elements", _copy_work, H100_L2, 2 * 2**30) == (
        {"n_elements": 2**26, "stride": 1},
        4,
        True,
    )
    with pytest.raises(ValueError, match="does not grow.*'dram_check_scale'"):
        DB.scale_size(size, "stride", _copy_work, H100_L2, H100_MEMORY)
    with pytest.raises(ValueError, match="no such count"):
        DB.scale_size(size, "rows", _copy_work, H100_L2, H100_MEMORY)


def test_a_full_l2_of_unflushed_writes_fails_no_planned_benchmark_on_an_h100():
    # every bandwidth benchmark of the course, at the size the check profiles
    plan = dram.build_plan(D.discover(SNIPPETS), H100_L2, H100_MEMORY, REPO_ROOT)
    assert len(plan["benchmarks"]) >= 17
    for b in plan["benchmarks"]:
        work = b["working_set_bytes"]
        assert work >= DB.MIN_L2_MULTIPLE * H100_L2 and not b["capped"], b["name"]
        # reads exact, one whole L2 of writes never reaching DRAM in the kernel
        assert DB.judge(work, work - H100_L2, work, H100_L2) == "within", b["name"]
        p = b["scaled_param"]
        assert b["size"][p] == b["benchmarked_size"][p] * b["scale_factor"]
    scaled = {b["name"]: b["scale_factor"] for b in plan["benchmarks"]}
    # the three the H100 probe failed at their benchmarked sizes
    assert scaled["gpu_coalescing"] == 8
    assert scaled["softmax_autograd_fwd"] == scaled["softmax_autograd_bwd"] == 8


def _two_param_desc(**extra):
    """tiny_scale's bandwidth benchmark with a first parameter the model ignores."""
    desc = dict(D.discover(TINY)[0].benchmarks[0])
    desc.update(
        params=["width", "n"],
        sizes=[{"width": 4, "n": 1024}],
        work=lambda size, dtype: 8 * size["n"],
        **extra,
    )
    return D.check_description(desc, "tiny_scale.py")


def test_a_description_names_the_parameter_to_scale_when_not_the_first():
    path = TINY / "tiny_scale.py"
    plain = D.Snippet(path=path, module=None, benchmarks=[_two_param_desc()])
    with pytest.raises(RunnerError, match="doubling 'width' does not grow"):
        dram.build_plan([plain], H100_L2, H100_MEMORY, REPO_ROOT)
    named = _two_param_desc(dram_check_scale="n")
    snippet = D.Snippet(path=path, module=None, benchmarks=[named])
    (item,) = dram.build_plan([snippet], H100_L2, H100_MEMORY, REPO_ROOT)["benchmarks"]
    assert item["scaled_param"] == "n" and item["size"] == {"width": 4, "n": 2**27}
    with pytest.raises(D.DescriptionError, match="'dram_check_scale' names 'm'"):
        _two_param_desc(dram_check_scale="m")


# ------------------------------------------------- the profiled process ---
def test_every_contender_runs_untimed_before_one_profiled_call_each(monkeypatch):
    from triton_course.runner import measure

    monkeypatch.setattr(measure, "compile_peer", lambda fn: fn)  # no Inductor on CPU
    plan = dram.build_plan(D.discover(TINY), SMALL_L2, H100_MEMORY, REPO_ROOT)
    assert plan["benchmarks"][0]["size"] == {"n": 1024}  # not scaled: CPU-sized
    events = []
    calls = {"n": 0}
    desc = D.discover(TINY)[0].benchmarks[0]
    triton_fn = desc["triton"]

    def counting_triton(*args):
        calls["n"] += 1
        events.append("Triton call")
        return triton_fn(*args)

    monkeypatch.setitem(desc, "triton", counting_triton)
    said = []
    out = dram.profile_plan(
        plan,
        "cpu",
        start=lambda: events.append("start"),
        stop=lambda: events.append("stop"),
        sync=lambda: None,
        marker=lambda k: events.append(f"marker {k}"),
        say=said.append,
    )
    assert out["order"] == [
        ["tiny_scale", "Triton"],
        ["tiny_scale", "PyTorch eager"],
        ["tiny_scale", "torch.compile"],
    ]
    assert out["absent"] == {
        "tiny_scale": {"Broken": "RuntimeError: this peer always fails"}
    }
    assert any("Broken not profiled" in s for s in said)
    # warm-up first, with the profiler off; then marker k, the call, stop
    first_start = events.index("start")
    assert events[:first_start] == ["Triton call"]
    assert events[first_start:] == [
        "start", "marker 0", "Triton call", "stop",
        "start", "marker 1", "stop",
        "start", "marker 2", "stop",
    ]  # fmt: skip
    assert calls["n"] == 2


def test_triton_failing_in_the_profiled_process_is_an_error(monkeypatch):
    plan = dram.build_plan(D.discover(TINY), SMALL_L2, H100_MEMORY, REPO_ROOT)
    desc = D.discover(TINY)[0].benchmarks[0]

    def broken(*_):
        raise ValueError("kernel broke")

    monkeypatch.setitem(desc, "triton", broken)
    with pytest.raises(RunnerError, match="Triton failed.*kernel broke"):
        dram.profile_plan(plan, "cpu", list, list, list, lambda k: None)


# ---------------------------------------------------------------- record ---
def _as_benchmarked(item: dict) -> dict:
    """A plan item profiled at its benchmarked size (no scaling)."""
    first = next(iter(item["size"]))
    return {
        **item,
        "benchmarked_size": dict(item["size"]),
        "scaled_param": first,
        "scale_factor": 1,
        "capped": False,
    }


def _fixture_plan():
    return {
        "l2_bytes": H100_L2,
        "min_l2_multiple": DB.MIN_L2_MULTIPLE,
        "max_model_bytes": H100_MEMORY // 4,
        "skipped": {"l2_hot_add": dram.L2_SKIP_REASON},
        "benchmarks": [
            _as_benchmarked(
                {
                    "name": "vector_add",
                    "path": "unused",
                    "snippet": "snippets/vector_add.py",
                    "snippet_sha256": "a" * 64,
                    "size": {"n_elements": 2**28},
                    "dtype": "float32",
                    "working_set_bytes": VECTOR_ADD_MODEL,
                    "contenders": ["Triton", "PyTorch eager", "torch.compile"],
                }
            ),
            _as_benchmarked(
                {
                    "name": "softmax_row",
                    "path": "unused",
                    "snippet": "snippets/softmax.py",
                    "snippet_sha256": "b" * 64,
                    "size": {"n_rows": 2**14, "n_cols": 2**14},
                    "dtype": "float16",
                    "working_set_bytes": SOFTMAX_MODEL,
                    "contenders": [
                        "Triton",
                        "PyTorch eager",
                        "PyTorch unfused",
                        "torch.compile",
                    ],
                }
            ),
        ],
    }


def _fixture_outputs(plan):
    return {
        "order": [[b["name"], c] for b in plan["benchmarks"] for c in b["contenders"]],
        "absent": {},
    }


def fixture_record():
    plan = _fixture_plan()
    segments = dram.split_at_markers(dram.parse_ncu_csv(fixture("ncu_raw_2025.log")))
    return dram.build_record(
        plan,
        _fixture_outputs(plan),
        segments,
        "2025.1.1.0",
        "ncu --metrics dram__bytes_read.sum,dram__bytes_write.sum ...",
        {"commit": "c0ffee", "gpu": "Fixture GPU"},
    )


def test_each_call_sums_its_kernels_and_triton_gets_a_verdict():
    record = fixture_record()
    DB.validate(record, "fixture")
    vadd = record["benchmarks"]["vector_add"]
    assert vadd["verdict"] == "within"
    tri = vadd["contenders"]["Triton"]
    assert tri == {
        "model_bytes": VECTOR_ADD_MODEL,
        "dram_read_bytes": 2_147_614_720,
        "dram_write_bytes": 1_051_066_368,
        "kernels": ["add_kernel"],
    }
    unfused = record["benchmarks"]["softmax_row"]["contenders"]["PyTorch unfused"]
    assert len(unfused["kernels"]) == 5
    assert unfused["dram_read_bytes"] == sum(
        [537_034_752, 537_100_288, 537_067_520, 537_001_984, 537_133_056]
    )
    assert record["skipped"] == {"l2_hot_add": dram.L2_SKIP_REASON}
    lines = "\n".join(dram.table_lines(record))
    assert "vector_add (n_elements=268435456, float32): model 3221.2 MB" in lines
    assert "l2_hot_add: skipped" in lines


def test_more_calls_than_marker_kernels_is_an_error():
    plan = _fixture_plan()
    outputs = _fixture_outputs(plan)
    outputs["order"].append(["vector_add", "Triton"])
    segments = dram.split_at_markers(dram.parse_ncu_csv(fixture("ncu_raw_2025.log")))
    with pytest.raises(RunnerError, match="profiled 7 call.*made 8"):
        dram.build_record(plan, outputs, segments, "v", "cmd", {"commit": "c"})


COALESCING_MODEL = 2 * 2**24 * 4  # gpu_coalescing's work() at 2**24 float32


def real_record():
    """The H100 probe's real rows, at the sizes they were measured at: the
    benchmarked ones, 2.6 to 10 L2s (a multiple of 2 lets them validate)."""
    items = [
        ("fused_mlp_tail", {"tokens": 8192, "out_features": 16384}, "float16",
         (2 * 8192 * 16384 + 16384) * 2, ["Triton", "PyTorch eager", "torch.compile"]),
        ("gpu_coalescing", {"n_elements": 2**24, "stride": 1}, "float32",
         COALESCING_MODEL, ["Triton", "PyTorch eager"]),
        ("gpu_latency_hiding", {"n_elements": 2**26, "warps_per_sm": 1}, "float32",
         2 * 2**26 * 4, ["Triton", "PyTorch eager"]),
    ]  # fmt: skip
    plan = {
        "l2_bytes": H100_L2,
        "min_l2_multiple": 2,
        "max_model_bytes": H100_MEMORY // 4,
        "skipped": {},
        "benchmarks": [
            _as_benchmarked(
                {
                    "name": name,
                    "path": "unused",
                    "snippet": "snippets/x.py",
                    "snippet_sha256": "c" * 64,
                    "size": size,
                    "dtype": dtype,
                    "working_set_bytes": work,
                    "contenders": contenders,
                }
            )
            for name, size, dtype, work, contenders in items
        ],
    }
    segments = dram.split_at_markers(dram.parse_ncu_csv(fixture(REAL)))
    return dram.build_record(
        plan,
        _fixture_outputs(plan),
        segments,
        "2025.3.1.0",
        "ncu ...",
        {"commit": "probe"},
    )


def test_real_rows_fail_at_2_6_l2s_from_unflushed_writes_alone():
    record = real_record()
    coal = record["benchmarks"]["gpu_coalescing"]
    tri = coal["contenders"]["Triton"]
    # the reads are exact; the writes fall short by less than one L2
    assert abs(tri["dram_read_bytes"] - COALESCING_MODEL / 2) < 1e-3 * COALESCING_MODEL
    short = COALESCING_MODEL / 2 - tri["dram_write_bytes"]
    assert 0 < short < H100_L2
    assert coal["verdict"] == "off"
    assert DB.model_over_measured(tri) == pytest.approx(1.204, abs=1e-3)
    # the same shortfall at the size the check now profiles is within 10 %
    work = _copy_work({"n_elements": 2**27})
    assert DB.judge(work, work - short, work, H100_L2) == "within"
    # 10 L2s: within, as probed
    for name in ("fused_mlp_tail", "gpu_latency_hiding"):
        assert record["benchmarks"][name]["verdict"] == "within"
    fused = record["benchmarks"]["fused_mlp_tail"]["contenders"]
    assert len(fused["PyTorch eager"]["kernels"]) == 3
    assert len(fused["torch.compile"]["kernels"]) == 2  # the RNG, then the tail


def test_a_peer_that_launched_no_kernel_is_said_to_be_a_copy_engine_transfer():
    record = real_record()
    eager = record["benchmarks"]["gpu_coalescing"]["contenders"]["PyTorch eager"]
    assert eager["kernels"] == [] and eager["dram_read_bytes"] == 0
    lines = dram.table_lines(record)
    said = [ln for ln in lines if "PyTorch eager" in ln]
    assert len(said) == 3  # fused_mlp_tail, gpu_coalescing, gpu_latency_hiding
    copies = [ln for ln in said if DB.NO_KERNEL in ln]
    assert len(copies) == 2
    assert not any("model/measured" in ln or "no bytes" in ln for ln in copies)
    assert DB.NO_KERNEL == (
        "no kernel launched (a copy-engine transfer, which Nsight Compute does "
        "not profile)"
    )


def test_the_table_says_where_a_size_was_scaled_and_why():
    record = fixture_record()
    b = record["benchmarks"]["vector_add"]
    b.update(
        benchmarked_size={"n_elements": 2**26},
        scale_factor=4,
    )
    lines = "\n".join(dram.table_lines(record))
    assert "n_elements x4 of the largest benchmarked (67108864)" in lines
    assert f"at least {DB.MIN_L2_MULTIPLE} times the L2" in lines
    assert "still dirty in L2 when it ends" in lines
    b.update(capped=True)
    lines = "\n".join(dram.table_lines(record))
    assert "capped by memory" in lines
    assert "unflushed writes may reach 2 % of its model" in lines


# -------------------------------------------------------------- validate ---
def test_a_stored_record_is_validated_with_clear_errors():
    good = fixture_record()
    DB.validate(good, "data/timings/x.json")

    def broken(change):
        doc = copy.deepcopy(good)
        change(doc)
        return doc

    vadd = ("benchmarks", "vector_add")
    cases = [
        (lambda d: d.pop("ncu_version"), "lacks \\['ncu_version'\\]"),
        (lambda d: d.update(tolerance=10), "'tolerance' must be a share"),
        (lambda d: d.update(l2_bytes=None), "'l2_bytes' must be a positive"),
        (lambda d: d.pop("min_l2_multiple"), "lacks \\['min_l2_multiple'\\]"),
        (lambda d: d.update(max_model_bytes=0), "'max_model_bytes' must be a pos"),
        (
            lambda d: d[vadd[0]][vadd[1]].update(scale_factor=3),
            "'scale_factor' must be a power of two",
        ),
        (
            lambda d: d[vadd[0]][vadd[1]].update(scaled_param="rows"),
            "'scaled_param' must name a parameter",
        ),
        (
            lambda d: d[vadd[0]][vadd[1]].update(scale_factor=2),
            "is not 'benchmarked_size' scaled",
        ),
        (lambda d: d[vadd[0]][vadd[1]].update(capped="no"), "'capped' must be"),
        (
            lambda d: d[vadd[0]][vadd[1]].update(capped=True),
            "capped, but its working set already reaches",
        ),
        (
            lambda d: d.update(min_l2_multiple=100),
            "below 100 L2s, that is neither scaled up nor capped",
        ),
        (
            lambda d: (
                d[vadd[0]][vadd[1]].update(
                    benchmarked_size={"n_elements": 2**27}, scale_factor=2
                )
                or d.update(max_model_bytes=2**30)
            ),
            "scaled past 'max_model_bytes'",
        ),
        (lambda d: d.update(provenance={}), "'provenance' must be an object"),
        (lambda d: d.update(skipped={"x": ""}), "'skipped' must map"),
        (lambda d: d["skipped"].update(vector_add="why"), "both profiled and skipped"),
        (
            lambda d: d[vadd[0]][vadd[1]].pop("working_set_bytes"),
            "'vector_add' lacks \\['working_set_bytes'\\]",
        ),
        (lambda d: d[vadd[0]][vadd[1]].update(size={"n": 1.5}), "'size' must map"),
        (
            lambda d: d[vadd[0]][vadd[1]]["contenders"].pop("Triton"),
            "holding 'Triton'",
        ),
        (
            lambda d: d[vadd[0]][vadd[1]]["contenders"]["Triton"].update(
                dram_read_bytes="many"
            ),
            "'dram_read_bytes' must be a number of bytes",
        ),
        (
            lambda d: d[vadd[0]][vadd[1]]["contenders"]["Triton"].update(kernels="k"),
            "'kernels' must be a list",
        ),
        (lambda d: d[vadd[0]][vadd[1]].update(verdict="fine"), "must be one of"),
        # a verdict its own numbers contradict: typed, not judged
        (
            lambda d: d[vadd[0]][vadd[1]].update(verdict="off"),
            "does not follow from its numbers",
        ),
        (
            lambda d: d[vadd[0]][vadd[1]].update(absent={"Triton": "x"}),
            "'absent' must map",
        ),
    ]
    for change, message in cases:
        with pytest.raises(ValueError, match=message) as info:
            DB.validate(broken(change), "data/timings/x.json")
        assert str(info.value).startswith("data/timings/x.json: dram_bytes: ")
    with pytest.raises(ValueError, match="must be an object"):
        DB.validate([], "f")


def test_a_partial_run_keeps_the_benchmarks_it_did_not_profile():
    old = fixture_record()
    new = copy.deepcopy(old)
    del new["benchmarks"]["softmax_row"]
    new["benchmarks"]["vector_add"]["dtype"] = "newer"
    new["skipped"] = {}
    merged = DB.merge(old, new)
    assert merged["benchmarks"]["vector_add"]["dtype"] == "newer"
    assert merged["benchmarks"]["softmax_row"] == old["benchmarks"]["softmax_row"]
    assert merged["skipped"] == old["skipped"]
    assert DB.merge(None, new) is new
    DB.validate(merged, "merged")


# ---------------------------------------- the runner's call, with a fake ncu ---
FAKE_NCU = """\
#!{python}
# Stands in for Nsight Compute: reads the plan the runner wrote and prints a
# raw CSV whose bytes are FAKE_SHARES of each model (read, write).
import json, os, sys, time

args = sys.argv[1:]
if args == ["--version"]:
    print("NVIDIA (R) Nsight Compute Command Line Profiler")
    print("Version 2025.1.1.0 (build 35528883) (public-release)")
    sys.exit(0)
mode = os.environ.get("FAKE_MODE", "")
if mode == "sleep":
    time.sleep(30)
if mode == "fail":
    print("==ERROR== the application crashed", file=sys.stderr)
    sys.exit(3)
opt = lambda flag: args[args.index(flag) + 1]
assert opt("--metrics") == "dram__bytes_read.sum,dram__bytes_write.sum"
assert opt("--page") == "raw" and "--csv" in args
plan = json.load(open(opt("--target")))
read, write = (float(s) for s in os.environ["FAKE_SHARES"].split(","))
order, lines = [], [
    "==PROF== Connected to process 1 (python)",
    '"ID","Kernel Name","Grid Size","dram__bytes_read.sum","dram__bytes_write.sum"',
    '"","","","byte","byte"',
]
for b in plan["benchmarks"]:
    for c in b["contenders"]:
        k = len(order)
        order.append([b["name"], c])
        lines.append(f'"{{2 * k}}","_dram_marker_kernel","({{k + 1}}, 1, 1)","512","0"')
        if mode == "copy" and c == "PyTorch eager":
            continue  # a cudaMemcpy: the copy engine runs no kernel
        w = b["working_set_bytes"]
        lines.append(
            f'"{{2 * k + 1}}","kernel_{{k}}","(8, 1, 1)","{{read * w:,.0f}}",'
            f'"{{write * w:,.0f}}"'
        )
if mode == "nothing":
    lines = lines[:1] + ["==WARNING== No kernels were profiled."]
open(opt("--log-file"), "w").write("\\n".join(lines) + "\\n")
json.dump({{"order": order, "absent": {{}}}}, open(opt("--outputs"), "w"))
"""


@pytest.fixture
def fake_ncu(tmp_path):
    path = tmp_path / "ncu"
    path.write_text(FAKE_NCU.format(python=sys.executable))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def _run(monkeypatch, ncu, shares, mode="", timeout_s=60):
    monkeypatch.setenv("FAKE_SHARES", shares)
    monkeypatch.setenv("FAKE_MODE", mode)
    env = SimpleNamespace(
        gpu={"l2_bytes": H100_L2, "memory_bytes": H100_MEMORY},
        provenance={"commit": "c0ffee", "gpu": "Fake"},
    )
    snippets = D.discover(SNIPPETS, only="vector_add") + D.discover(
        SNIPPETS, only="l2_hot_add"
    )
    said = []
    result = dram.measure_dram_bytes(
        snippets, env, REPO_ROOT, said.append, ncu=ncu, timeout_s=timeout_s
    )
    return result, said


def test_the_runner_stores_model_and_counters_side_by_side(monkeypatch, fake_ncu):
    record, said = _run(monkeypatch, fake_ncu, "0.66,0.33")
    DB.validate(record, "fake")
    assert record["ncu_version"] == "2025.1.1.0"
    assert record["command"].startswith(f"{fake_ncu} --profile-from-start off")
    assert "--cache-control all" in record["command"]
    assert "--target <plan> --outputs <outputs>" in record["command"]
    assert "--log-file <log>" in record["command"]
    vadd = record["benchmarks"]["vector_add"]
    assert vadd["verdict"] == "within"
    assert set(vadd["contenders"]) == {"Triton", "PyTorch eager", "torch.compile"}
    assert vadd["contenders"]["Triton"]["dram_read_bytes"] == round(
        0.66 * VECTOR_ADD_MODEL
    )
    assert record["skipped"] == {"l2_hot_add": dram.L2_SKIP_REASON}
    assert record["provenance"]["commit"] == "c0ffee"
    assert any("model/measured 1.010" in s for s in said)


def test_a_model_more_than_10_percent_off_fails_the_run(monkeypatch, fake_ncu):
    with pytest.raises(RunnerError, match=r"byte model of \['vector_add'\]") as info:
        _run(monkeypatch, fake_ncu, "0.5,0.3")  # the model counts 25 % too much
    # the message names the rule that keeps unflushed writes out of the verdict
    assert f"at least {DB.MIN_L2_MULTIPLE} times the L2" in str(info.value)
    assert "still dirty in L2" in str(info.value)


def test_a_peer_without_a_kernel_is_stored_and_logged_as_such(monkeypatch, fake_ncu):
    record, said = _run(monkeypatch, fake_ncu, "0.66,0.33", "copy")
    eager = record["benchmarks"]["vector_add"]["contenders"]["PyTorch eager"]
    assert eager["kernels"] == [] and eager["dram_write_bytes"] == 0
    assert record["benchmarks"]["vector_add"]["verdict"] == "within"
    (line,) = [s for s in said if "PyTorch eager" in s]
    assert line.split() == ["PyTorch", "eager", *DB.NO_KERNEL.split()]


@pytest.mark.parametrize(
    "mode, message",
    [
        ("nothing", "ncu profiled nothing"),
        ("fail", "(?s)exited 3:.*the application crashed"),
    ],
)
def test_ncu_failing_or_profiling_nothing_fails_the_run(
    monkeypatch, fake_ncu, mode, message
):
    with pytest.raises(RunnerError, match=message):
        _run(monkeypatch, fake_ncu, "0.66,0.33", mode)


def test_ncu_running_too_long_fails_the_run(monkeypatch, fake_ncu):
    with pytest.raises(RunnerError, match="ran over 2 s"):
        _run(monkeypatch, fake_ncu, "0.66,0.33", "sleep", timeout_s=2)


def test_without_ncu_the_run_says_what_is_missing(monkeypatch):
    monkeypatch.setattr(dram, "find_ncu", lambda: None)
    with pytest.raises(RunnerError, match="needs Nsight Compute: ncu not found"):
        _run(monkeypatch, None, "0.66,0.33")


def test_only_l2_resident_benchmarks_need_no_ncu(monkeypatch):
    env = SimpleNamespace(
        gpu={"l2_bytes": H100_L2, "memory_bytes": H100_MEMORY},
        provenance={"commit": "c"},
    )
    said = []
    snippets = D.discover(SNIPPETS, only="l2_hot_add")
    assert dram.measure_dram_bytes(snippets, env, REPO_ROOT, said.append) is None
    assert said and "l2_hot_add skipped" in said[0]


def test_the_probe_and_the_target_need_their_arguments(capsys):
    with pytest.raises(SystemExit):
        dram.main([])
    with pytest.raises(SystemExit):
        dram.main(["--target", "plan.json"])
    assert "--target needs --outputs" in capsys.readouterr().err


def test_the_module_runs_as_the_profiled_process_would_be_started():
    # the command ncu runs: `python -m triton_course.runner.dram ...` from the
    # repository root must at least start and parse its arguments
    done = subprocess.run(
        [sys.executable, "-m", "triton_course.runner.dram", "--help"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "TRITON_INTERPRET": "1"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "--probe" in done.stdout and "--target" in done.stdout
