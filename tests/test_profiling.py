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


def test_cpu_tensors_without_interpreter_are_rejected(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with pytest.raises(ValueError, match="TRITON_INTERPRET=1"):
        pf.add(torch.ones(2), torch.ones(2))


def test_bias_gelu_refuses_rows_too_long_for_its_int32_column(monkeypatch):
    # meta tensors: the size check runs before anything is allocated
    monkeypatch.setenv("TRITON_INTERPRET", "1")
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
