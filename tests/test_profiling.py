"""snippets/profiling.py: the add and bias+GELU kernels, the MLP step built from
them, the profiler table, and the hot/cold-cache benchmark descriptions."""

import pytest
import torch
from conftest import DEVICE, TOLERANCES, assert_close, load_snippet, poison_

pf = load_snippet("profiling")

DTYPES = [torch.float32, torch.float16, torch.bfloat16]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n", [0, 1, 7, 1000, 4099])
def test_add_matches_reference(n, dtype, seeded):
    x = torch.randn(n, device=DEVICE).to(dtype)
    y = torch.randn(n, device=DEVICE).to(dtype)
    out = poison_(torch.empty_like(x))
    assert pf.add(x, y, out=out) is out
    assert_close(out, x.double() + y.double())


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(1, 1), (7, 33), (3, 1000), (5, 2, 17)], ids=str)
def test_bias_gelu_matches_reference(shape, dtype, seeded):
    x = (3 * torch.randn(*shape, device=DEVICE)).to(dtype)
    bias = torch.randn(shape[-1], device=DEVICE).to(dtype)
    out = poison_(torch.empty_like(x))
    pf.bias_gelu(x, bias, out=out)
    h = x.double() + bias.double()
    expected = torch.nn.functional.gelu(h, approximate="tanh")
    assert_close(out, expected)


def test_bias_gelu_edge_values():
    # Very negative inputs give -0 (exp overflows to inf, h / inf), very
    # positive ones give h itself, and NaN propagates.
    x = torch.tensor([[-1e4, 1e4, float("nan"), 0.0]], device=DEVICE)
    out = pf.bias_gelu(x, torch.zeros(4, device=DEVICE))
    assert (
        out[0, 0] == 0
        and out[0, 1] == 1e4
        and torch.isnan(out[0, 2])
        and out[0, 3] == 0
    )


def test_kernels_do_not_write_past_the_end(seeded):
    x, y = torch.randn(1000, device=DEVICE), torch.randn(1000, device=DEVICE)
    buffer = poison_(torch.empty(1024 + 64, device=DEVICE))
    pf.add(x, y, out=buffer[:1000])
    assert torch.isnan(buffer[1000:]).all()
    a = torch.randn(10, 100, device=DEVICE)
    buffer = poison_(torch.empty(1024 + 64, device=DEVICE))
    pf.bias_gelu(a, torch.zeros(100, device=DEVICE), out=buffer[:1000].view(10, 100))
    assert torch.isnan(buffer[1000:]).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
def test_mlp_step_matches_reference(dtype):
    inputs = pf.mlp_inputs(tokens=16, d_model=8, dtype=dtype, device=DEVICE)
    expected = pf.mlp_step_ref(*(t.double() for t in inputs))
    # Two matmuls in low precision: allow a few roundings of the output size.
    assert_close(pf.mlp_step(*inputs), expected, atol=4 * TOLERANCES[dtype]["atol"])


def test_profiler_table_names_the_steps():
    # On the CPU the table lists CPU time only; on a GPU the capture adds the
    # kernels' own time (test_profile_capture_on_gpu).
    table = pf.profile_mlp_step(DEVICE if DEVICE == "cpu" else "cuda", 16, 8, steps=1)
    for label in ("up projection", "bias + gelu", "down projection", "residual add"):
        assert label in table


def test_benchmarks_are_well_formed():
    from triton_course.runner import discovery

    benches, captures = discovery.static_names(pf.__file__)
    assert benches == ["l2_cold_add", "l2_hot_add"]
    assert captures == ["mlp_step_profile"]
    for desc in pf.BENCHMARKS:
        discovery.check_description(desc, "profiling.py")
    discovery.check_captures(pf.CAPTURES, "profiling.py")
    cold, hot = pf.BENCHMARKS
    size = {"n_elements": 1000}
    assert hot["work"](size, torch.float32) == pf.HOT_REPEATS * cold["work"](
        size, torch.float32
    )


# ------------------------------------------------------------ bad input ---
def _ones(*shape):
    return torch.ones(*shape, device=DEVICE)


def _empty(*shape):
    return torch.empty(*shape, device=DEVICE)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: pf.add([1.0], [2.0]), TypeError, "torch.Tensor"),
        (lambda: pf.add(_ones(3), _ones(3).half()), TypeError, "dtypes differ"),
        (lambda: pf.add(_ones(3).double(), _ones(3).double()), TypeError, "dtype"),
        (lambda: pf.add(_ones(3), _ones(4)), ValueError, "shapes differ"),
        (lambda: pf.add(_ones(4, 4).t(), _ones(4, 4)), ValueError, "contiguous"),
        (lambda: pf.bias_gelu(_ones(2, 3), _ones(4)), ValueError, "bias must"),
        (lambda: pf.bias_gelu(_ones(2, 3), _ones(1, 3)), ValueError, "bias must"),
        (
            lambda: pf.add(_ones(3), _ones(3), out=_empty(4)),
            ValueError,
            "out must match",
        ),
        (
            lambda: pf.add(_ones(3), _ones(3), out=_empty(6)[::2]),
            ValueError,
            "out must be contiguous",
        ),
    ],
    ids=[
        "list",
        "mixed",
        "float64",
        "shapes",
        "strided",
        "bias-len",
        "bias-2d",
        "out",
        "out-s",
    ],
)
def test_bad_input_is_rejected(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_an_out_that_overlaps_an_input_is_refused(seeded):
    # review 2026-11-27 mod-13: add(x, x, out=big[1:]) was accepted, and two
    # elements came out wrong (on a GPU, a race between programs)
    big = torch.randn(3000, device=DEVICE)
    x, shifted = big[:-1], big[1:]
    with pytest.raises(ValueError, match="must not overlap an input"):
        pf.add(x, x, out=shifted)
    with pytest.raises(ValueError, match="must not overlap an input"):
        pf.add(_ones(2999), x, out=shifted)  # the second input
    rows = torch.randn(4, 100, device=DEVICE)
    with pytest.raises(ValueError, match="must not overlap an input"):
        pf.bias_gelu(rows, rows[0], out=rows)  # the bias is read by every row
    # element i read and written by one lane: in place is allowed
    want = pf.add_ref(x, x)
    assert pf.add(x, x, out=x) is x
    assert_close(x, want)


def test_cpu_tensors_without_interpreter_are_rejected(monkeypatch):
    monkeypatch.setattr(pf, "_INTERPRETING", False)  # as if imported without it
    with pytest.raises(ValueError, match="TRITON_INTERPRET=1"):
        pf.add(torch.ones(2), torch.ones(2))


def test_bias_gelu_refuses_rows_too_long_for_its_int32_column(monkeypatch):
    # meta tensors: the size check runs before anything is allocated
    monkeypatch.setattr(pf, "_INTERPRETING", True)  # meta tensors pass the check
    n = 2**31 - 1024
    x = torch.empty(1, n, device="meta")
    with pytest.raises(ValueError, match="too long"):
        pf.bias_gelu(x, torch.empty(n, device="meta"))
    with pytest.raises(ValueError, match="too long"):
        pf.bias_gelu(
            x[:, :-1].contiguous(), torch.empty(n - 1, device="meta"), block_size=1025
        )


# Review 04, finding 6: both kernels compiled for sm_90 as a launch of
# 2**31 + 4096 float16 elements compiles them (n_elements no longer fits int32,
# so it arrives as i64; n_cols 4096). Every address offset must be i64 and no
# product may be i32 where it could wrap.
_WIDE_SCRIPT = r"""
import json, sys
from pathlib import Path
from triton_course import codegen, excerpts

pf = excerpts._load(Path("snippets") / "profiling.py")
ptr = lambda *names: dict.fromkeys(names, "*fp16")
sigs = {
    "add_kernel": ptr("x_ptr", "y_ptr", "out_ptr")
    | {"n_elements": "i64", "BLOCK_SIZE": "constexpr"},
    "bias_gelu_kernel": ptr("x_ptr", "bias_ptr", "out_ptr")
    | {"n_elements": "i64", "n_cols": "i32", "BLOCK_SIZE": "constexpr"},
}
out = {}
for name, sig in sigs.items():
    pointers = [k for k in sig if k.endswith("_ptr")]
    kernel = getattr(pf, name)
    asm = codegen.compile_for(kernel, 90, sig, {"BLOCK_SIZE": 1024}, pointers)
    out[name] = asm["ttir"]
# exercise 1's solution (review 2026-11-27 mod-07): x.t() of 2**31 elements
# or more has stride_col = n_rows, and cols * stride_col passes 2**31 - 1
cs = excerpts._load(Path("exercises") / "solutions" / "colsum.py")
# the kernel's own parameters: pointers, then i32 integers and constexprs
import inspect
names = list(inspect.signature(cs.colsum_kernel.fn).parameters)
blocks = {"ROWS": 512, "BLOCK_M": 32, "BLOCK_N": 64}
sig = {n: "*fp16" if n == "x_ptr" else "*fp32" if n.endswith("_ptr")
       else "constexpr" if n in blocks else "i32" for n in names}
asm = codegen.compile_for(cs.colsum_kernel, 90, sig,
                          {k: v for k, v in blocks.items() if k in names},
                          [n for n in names if n.endswith("_ptr")])
out["colsum_kernel"] = asm["ttir"]
json.dump(out, sys.stdout)
"""


@pytest.fixture(scope="module")
def wide_ttir():
    from conftest import compile_in_subprocess

    return compile_in_subprocess(_WIDE_SCRIPT, timeout=300)


@pytest.mark.parametrize("kernel", ["add_kernel", "bias_gelu_kernel"])
def test_kernels_address_in_int64(wide_ttir, kernel):
    import re

    lines = [ln.split(" loc(")[0].strip() for ln in wide_ttir[kernel].splitlines()]
    # the program id is widened before it is multiplied by BLOCK_SIZE
    assert any(re.search(r"arith\.extsi %\w+ : i32 to i64$", ln) for ln in lines)
    products = [ln for ln in lines if "arith.muli" in ln]
    assert products and all(re.search(r"i64>?$", ln) for ln in products), products
    # every pointer into x / y / out steps by an i64 offset; only the bias,
    # indexed by a column below n_cols + BLOCK_SIZE (< 2**31), may use i32
    steps = [ln for ln in lines if "tt.addptr" in ln]
    wide = [ln for ln in steps if re.search(r"(\bi64|xi64>)$", ln)]
    assert len(wide) == {"add_kernel": 3, "bias_gelu_kernel": 2}[kernel], steps
    assert len(steps) - len(wide) == {"add_kernel": 0, "bias_gelu_kernel": 1}[kernel]


def test_the_colsum_solution_offsets_rows_and_columns_in_int64(wide_ttir):
    import re

    ttir = wide_ttir["colsum_kernel"]
    lines = [ln.split(" loc(")[0].strip() for ln in ttir.splitlines()]
    # both tile products (rows * stride_row, cols * stride_col) are i64
    tiles = [ln for ln in lines if "arith.muli" in ln and "tensor<" in ln]
    assert len(tiles) >= 2 and all(ln.endswith("xi64>") for ln in tiles), tiles
    # every step into x (the float16 pointers) is i64; a float32 buffer of
    # partial sums, if the solution keeps one, holds a fraction of x's
    # elements and may be indexed in i32
    steps = [ln for ln in lines if "tt.addptr" in ln and "tt.ptr<f16>" in ln]
    assert steps and all(re.search(r"xi64>$", ln) for ln in steps), steps


def test_the_colsum_solution_refuses_dtypes_it_would_sum_wrong():
    # review 2026-11-27 mod-08: an int64 or float64 x was summed in float32
    # (2**24 + 1 came back as 2**24)
    from conftest import REPO_ROOT

    from triton_course import excerpts

    cs = excerpts._load(REPO_ROOT / "exercises" / "solutions" / "colsum.py")
    for dtype in (torch.int64, torch.int32, torch.float64):
        with pytest.raises(ValueError, match="float32, float16 or bfloat16"):
            cs.colsum(torch.ones(2, 2, dtype=dtype))
    with pytest.raises(ValueError, match="2-D"):
        cs.colsum(torch.ones(4))


def _page_program(page: str) -> str:
    """Every Python block of a docs page, collapsed ones included, as the
    snippet sections it embeds, in page order (what a reader who copies
    them all gets)."""
    import re

    from conftest import REPO_ROOT

    text = (REPO_ROOT / "docs" / page).read_text(encoding="utf-8")
    blocks = re.findall(r"^ *```python\n(.*?)^ *```", text, flags=re.M | re.S)
    parts = []
    for block in blocks:
        for name, section in re.findall(r'--8<-- "(\w+\.py):(\w+)"', block):
            source = (REPO_ROOT / "snippets" / name).read_text(encoding="utf-8")
            start, end = f"# --8<-- [start:{section}]\n", f"# --8<-- [end:{section}]"
            parts.append(source.split(start, 1)[1].split(end, 1)[0])
    return "\n".join(parts)


# Lesson 04 is three pages (#34: about 12 screens a page at most)
L04_PAGES = [
    "gpu-architecture/04-gpu-profiling.md",
    "gpu-architecture/04-nsight-compute.md",
    "gpu-architecture/04-worked-optimisation.md",
]


def _load_page_program(page: str, tmp_path):
    import importlib.util

    path = tmp_path / f"page_{page.split('/')[-1][:-3].replace('-', '_')}.py"
    path.write_text(_page_program(page))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # module level only: main() is not called
    return module


def test_the_pages_blocks_copied_in_order_define_before_use(tmp_path):
    # review 2026-11-27 mod-02: the collapsed benchmark block came before the
    # blocks that define add and add_ref, and the copied program stopped
    module = _load_page_program(L04_PAGES[0], tmp_path)
    assert module.BENCHMARKS[0]["triton"] is module.add
    assert callable(module.main)
    # the worked optimisation: kernels, launchers, then the collapsed
    # benchmark description that names them
    steps = _load_page_program(L04_PAGES[2], tmp_path)
    assert [b["triton"] for b in steps.BENCHMARKS] == [
        steps.rowsum_v0,
        steps.rowsum_v1,
        steps.rowsum_v2,
        steps.rowsum_v3,
    ]


def test_the_nsight_page_shows_its_python_as_excerpts_of_the_snippet():
    # its code launches the row sums that the next page builds: shown as
    # excerpts of the file, not as a program the page claims to run
    import re

    from conftest import REPO_ROOT

    text = (REPO_ROOT / "docs" / L04_PAGES[1]).read_text(encoding="utf-8")
    fences = re.findall(r"^ *```python(.*)$", text, flags=re.M)
    title = ' title="excerpt of snippets/optimization_steps.py'
    assert fences and all(f.startswith(title) for f in fences), fences


def _page(path: str) -> str:
    from conftest import REPO_ROOT

    text = (REPO_ROOT / "docs" / path).read_text(encoding="utf-8")
    return " ".join(text.split())  # one line: phrases may wrap


def test_lesson_04_keeps_vendor_figures_apart_from_measurements():
    # review 2026-11-27 mod-12: "Every number on this page was measured" with
    # NVIDIA's L2, register, shared-memory and warp-slot figures on the page
    pages = {path: _page(path) for path in L04_PAGES}
    page = " ".join(pages.values())
    assert "Every number on this page" not in page
    assert "Every time and rate on this page was measured" in pages[L04_PAGES[0]]
    assert "Every time and rate on this page was measured" in pages[L04_PAGES[2]]
    assert "are NVIDIA's, not measurements" in pages[L04_PAGES[1]]
    for figure in (
        "50 MB on an H100, by NVIDIA's figures",
        "64 on an H100, NVIDIA's figure",
        "by NVIDIA's figures an H100 SM has 65 536 registers",
    ):
        assert figure in page, figure
    index = _page("gpu-architecture/index.md")
    assert "each speed it quotes was measured" not in index
    assert "the vendor's or the authors', not measurements" in index


def test_lesson_04_does_not_say_the_bias_gelu_time_is_set_by_its_bytes():
    # review 2026-11-27 mod-14: tens of instructions per element (a remainder,
    # an exponential, a division); nothing measured says bytes alone set it
    page = _page("gpu-architecture/04-gpu-profiling.md")
    assert "do a few operations per element" not in page
    assert "not their arithmetic, set their time" not in page
    assert "Whether its bytes or its instructions set its time" in page


def _captured_runs() -> dict:
    """Each run's rowsum captures: data/timings, data/reproducibility and
    COURSE_TIMINGS_DIR (a newer run), where they hold them."""
    import json
    import os
    from pathlib import Path

    from conftest import REPO_ROOT

    dirs = [REPO_ROOT / "data" / "timings", REPO_ROOT / "data" / "reproducibility"]
    if os.environ.get("COURSE_TIMINGS_DIR"):
        dirs.append(Path(os.environ["COURSE_TIMINGS_DIR"]))
    runs = {}
    for folder in dirs:
        for path in sorted(folder.glob("*.json")):
            captures = json.loads(path.read_text()).get("captures", {})
            if "rowsum_v0_ncu" in captures:
                runs[str(path)] = captures
    return runs


def _ncu_metrics(text: str) -> dict:
    import re

    found = re.findall(r"^ +([a-z][\w.]+) +(?:[\w/%]+ +)?([\d.,]+)$", text, re.M)
    return {name: float(value.replace(",", "")) for name, value in found}


def test_the_ncu_readings_hold_in_every_captured_run():
    # review 2026-11-27 (04-nsight-compute no. 4, 04-worked-optimisation
    # no. 5): the pages read the v0 and v2 captures in words; each capture is
    # one profile, so the words are checked against every run that has one
    runs = _captured_runs()
    assert runs, "no run holds the rowsum ncu captures"
    stall = "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"
    per_issue = "smsp__average_warps_active_per_issue_active.ratio"
    dram = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
    sm = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
    for where, captures in runs.items():
        v0 = _ncu_metrics(captures["rowsum_v0_ncu"]["text"])
        v2 = _ncu_metrics(captures["rowsum_v2_ncu"]["text"])
        # v0: DRAM "a small fraction of its peak", SM throughput "high", an
        # instruction issued "on most cycles", "most of its time stalled on
        # long_scoreboard"
        assert v0[dram] < 20 and v0[sm] > 50, where
        assert v0["smsp__issue_active.avg.per_cycle_active"] > 0.5, where
        assert v0[stall] > 0.5 * v0[per_issue], where
        # v2: DRAM "close to its peak", the SMs "mostly idle", warps waiting
        # on long_scoreboard
        assert v2[dram] > 75 and v2[sm] < 25, where
        assert v2[stall] > 0.5 * v2[per_issue], where
        # ncu's registers are those allocated: never fewer than n_regs
        report = captures["rowsum_compiler_report"]["text"].splitlines()
        n_regs = {line.split()[0]: int(line.split()[2]) for line in report[1:]}
        for step, ncu in (("v0", v0), ("v2", v2)):
            assert ncu["launch__registers_per_thread"] >= n_regs[step], where


def test_lesson_04_fixes_of_the_review_of_2026_11_27():
    import re

    nsight = _page(L04_PAGES[1])
    worked = _page(L04_PAGES[2])
    # no. 2: the ncu command runs as the runner ran it: no "..." metric, and
    # the clocks left alone
    command = re.search(r"```bash (.*?)```", nsight).group(1)
    assert "--clock-control none" in command and "..." not in command
    assert 'print(",".join(s.NCU_METRICS))' in command
    assert "regex:rowsum_tile" in nsight
    # no. 1: ncu's registers are allocated ones, n_regs the ones used
    assert "need not equal the compiler's `n_regs`" in nsight
    # no. 6: a ragged n_elements keeps the pointers aligned; the mask narrows
    assert "that the group starts on a 16-byte boundary, and that the mask" in nsight
    assert "the pointers are still aligned" in nsight
    assert "alignment the compiler cannot prove (narrow loads)" not in nsight
    # no. 5 and worked no. 6: glossary links at first use
    assert "](../reference/glossary.md#autotuning) over a short list" in nsight
    assert "(../reference/glossary.md#interpreter)" in worked
    # worked no. 2: wide loads were the big step on both shapes, checked
    assert "Wide loads (v1) were the step that mattered on long rows" not in worked
    assert (
        "[[claim bench=rowsum_v1_blocked gpu=h100 value=vs:rowsum_v0_naive "
        'is=">5" dtype=float32 M=262144 N=256]]'
    ) in worked
    # worked no. 3: every step's launch from Python, not only v3's dispatch
    assert "every step pays for its launch on the host" in worked
    # worked no. 8: the page's longest rmsnorm row is the checker's
    from triton_course.exercises import registry

    longest = max(c["shape"][1] for c in registry()["rmsnorm"].cases)
    assert f"rows of 1 to {longest} columns" in worked


# ------------------------------------------------------------ GPU only ---
@pytest.mark.gpu
def test_timer_and_hot_benchmark_on_gpu():
    x, y = pf._add_inputs({"n_elements": 2**20}, torch.float32, "cuda")
    cold = pf.time_cuda(lambda: pf.add(x, y), reps=20)
    hot = pf.time_cuda(lambda: pf.add(x, y), reps=20, flush_l2=False)
    assert cold > 0 and hot > 0
    for fn in (pf.add_hot, pf.torch_add_hot):
        torch.testing.assert_close(fn(x, y), x + y)
        torch.testing.assert_close(fn(x, y), x + y)  # the replayed graph


@pytest.mark.gpu
def test_profile_capture_on_gpu():
    table = pf.CAPTURES["mlp_step_profile"]()
    assert "bias_gelu_kernel" in table and "add_kernel" in table
