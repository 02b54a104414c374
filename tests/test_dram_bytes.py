"""The byte-model check (triton_course/dram_bytes.py, runner/dram.py) on the CPU.

Nothing here runs Nsight Compute: the CSV fixtures (tests/fixtures/dram/) are
hand-written in its raw-page layout, and a fake ``ncu`` stands in for the
real one. ``python -m triton_course.runner.dram --probe`` checks the layout
on a GPU machine.
"""

import copy
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
    plan = dram.build_plan(snippets, H100_L2, REPO_ROOT)
    (vadd,) = [b for b in plan["benchmarks"] if b["name"] == "vector_add"]
    assert vadd["size"] == {"n_elements": 2**28} and vadd["dtype"] == "float32"
    assert vadd["working_set_bytes"] == VECTOR_ADD_MODEL
    assert vadd["contenders"] == ["Triton", "PyTorch eager", "torch.compile"]
    assert vadd["snippet"] == "snippets/vector_add.py"
    # profiling.py: the cold add is profiled, the L2-resident one skipped
    names = [b["name"] for b in plan["benchmarks"]]
    assert "l2_cold_add" in names and "l2_hot_add" not in names
    assert "L2-resident by design" in plan["skipped"]["l2_hot_add"]
    # compute benchmarks (the profiling snippet's matmuls) are not planned
    assert all(b["name"].startswith(("vector_add", "l2_")) for b in plan["benchmarks"])


def test_the_plan_of_benchmarks_that_fit_in_l2_still_profiles_them():
    snippets = D.discover(TINY)
    plan = dram.build_plan(snippets, H100_L2, REPO_ROOT)
    (tiny,) = plan["benchmarks"]  # tiny_scale_flops is a compute benchmark
    assert tiny["size"] == {"n": 1024} and tiny["working_set_bytes"] == 8192
    assert tiny["contenders"] == ["Triton", "PyTorch eager", "Broken", "torch.compile"]


def test_the_plan_needs_the_l2_size_and_known_names():
    snippets = D.discover(TINY)
    with pytest.raises(RunnerError, match="L2 size is unknown"):
        dram.build_plan(snippets, None, REPO_ROOT)
    with pytest.raises(RunnerError, match="no benchmark named"):
        dram.build_plan(snippets, H100_L2, REPO_ROOT, names=["nope"])
    assert dram.build_plan(snippets, H100_L2, REPO_ROOT, names=["tiny_scale"])[
        "benchmarks"
    ]


# ------------------------------------------------- the profiled process ---
def test_every_contender_runs_untimed_before_one_profiled_call_each(monkeypatch):
    from triton_course.runner import measure

    monkeypatch.setattr(measure, "compile_peer", lambda fn: fn)  # no Inductor on CPU
    plan = dram.build_plan(D.discover(TINY), H100_L2, REPO_ROOT)
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
    plan = dram.build_plan(D.discover(TINY), H100_L2, REPO_ROOT)
    desc = D.discover(TINY)[0].benchmarks[0]

    def broken(*_):
        raise ValueError("kernel broke")

    monkeypatch.setitem(desc, "triton", broken)
    with pytest.raises(RunnerError, match="Triton failed.*kernel broke"):
        dram.profile_plan(plan, "cpu", list, list, list, lambda k: None)


# ---------------------------------------------------------------- record ---
def _fixture_plan():
    return {
        "l2_bytes": H100_L2,
        "skipped": {"l2_hot_add": dram.L2_SKIP_REASON},
        "benchmarks": [
            {
                "name": "vector_add",
                "path": "unused",
                "snippet": "snippets/vector_add.py",
                "snippet_sha256": "a" * 64,
                "size": {"n_elements": 2**28},
                "dtype": "float32",
                "working_set_bytes": VECTOR_ADD_MODEL,
                "contenders": ["Triton", "PyTorch eager", "torch.compile"],
            },
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
            },
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
        gpu={"l2_bytes": H100_L2}, provenance={"commit": "c0ffee", "gpu": "Fake"}
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
    with pytest.raises(RunnerError, match=r"byte model of \['vector_add'\]"):
        _run(monkeypatch, fake_ncu, "0.5,0.3")  # the model counts 25 % too much


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
    env = SimpleNamespace(gpu={"l2_bytes": H100_L2}, provenance={"commit": "c"})
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
