"""snippets/softmax_autograd.py: forward, backward, autograd, custom op, bad input."""

import pytest
import torch
from conftest import DEVICE, TOLERANCES, assert_close, load_snippet, poison_

sm = load_snippet("softmax_autograd")

HALF_AND_SINGLE = [torch.float32, torch.float16, torch.bfloat16]
DTYPES = [*HALF_AND_SINGLE, torch.float64]
SHAPES = [(1, 1), (1, 7), (7, 1000), (3, 4, 129), (33, 64)]


def _x(shape, dtype, scale=3.0):
    return (scale * torch.randn(shape, device=DEVICE, dtype=torch.float64)).to(dtype)


# --8<-- [start:test_forward]
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_forward_matches_reference(shape, dtype, seeded):
    x = _x(shape, dtype)
    y = poison_(torch.empty_like(x))
    assert sm.softmax_fwd(x, out=y) is y
    assert not torch.isnan(y).any(), "an element was never written"
    assert_close(y, torch.softmax(x.double(), dim=-1))


# --8<-- [end:test_forward]


# --8<-- [start:test_backward]
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_backward_matches_formula(shape, dtype, seeded):
    y = torch.softmax(_x(shape, torch.float64), dim=-1).to(dtype)
    dy = _x(shape, dtype, scale=1.0)
    dx = poison_(torch.empty_like(y))
    sm.softmax_bwd(y, dy, out=dx)
    assert not torch.isnan(dx).any(), "an element was never written"
    assert_close(dx, sm.softmax_bwd_ref(y, dy))


# --8<-- [end:test_backward]


@pytest.mark.parametrize(
    "config", sm._CONFIGS, ids=lambda c: f"rows{c.kwargs['ROWS']}-w{c.num_warps}"
)
def test_every_config_is_correct(config, seeded):
    # 37 rows: not a multiple of any ROWS, so the last program is ragged.
    x = _x((37, 50), torch.float32)
    params = {**config.kwargs, "num_warps": config.num_warps}
    y = poison_(torch.empty_like(x))
    sm.softmax_fwd(x, out=y, config=params)
    assert_close(y, torch.softmax(x.double(), dim=-1))
    dy = _x((37, 50), torch.float32, scale=1.0)
    dx = poison_(torch.empty_like(x))
    sm.softmax_bwd(y, dy, out=dx, config=params)
    assert_close(dx, sm.softmax_bwd_ref(y, dy))


def test_does_not_write_past_the_end(seeded):
    # Outputs are the first rows of a poisoned buffer: the guard rows after
    # them must stay NaN even when the last program holds padding rows.
    x = _x((5, 40), torch.float32)
    buffer = poison_(torch.empty(5 + 16, 40, device=DEVICE))
    sm.softmax_fwd(x, out=buffer[:5], config={"ROWS": 16, "num_warps": 4})
    assert torch.isnan(buffer[5:]).all()
    assert_close(buffer[:5], torch.softmax(x.double(), dim=-1))
    dy = torch.randn_like(x)
    y = buffer[:5].clone()
    sm.softmax_bwd(y, dy, out=buffer[:5], config={"ROWS": 8, "num_warps": 4})
    assert torch.isnan(buffer[5:]).all()


@pytest.mark.parametrize("shape", [(0, 8), (4, 0), (0,)], ids=str)
def test_empty_tensors(shape):
    x = torch.empty(shape, device=DEVICE)
    assert sm.softmax_fwd(x).shape == x.shape
    assert sm.softmax_bwd(x, x.clone()).shape == x.shape


@pytest.mark.parametrize("dtype", HALF_AND_SINGLE, ids=str)
def test_edge_values(dtype):
    big = torch.finfo(dtype).max / 2
    inf = float("inf")
    x = torch.tensor(
        [
            [big, -big, 0.0, 1.0],  # huge spread: exp must not overflow
            [-inf, 0.0, -inf, 1.0],  # masked-out positions, as in attention
            [-inf, -inf, -inf, -inf],  # fully masked: NaN, as torch.softmax gives
            [5.0, 5.0, 5.0, 5.0],  # constant row: uniform
        ],
        device=DEVICE,
    ).to(dtype)
    y = sm.softmax_fwd(x)
    assert_close(y, torch.softmax(x.double(), dim=-1))
    assert torch.isnan(y[2]).all() and not torch.isnan(y[:2]).any()


def test_reference_backward_is_the_autograd_gradient(seeded):
    x = torch.randn(4, 9, dtype=torch.float64, requires_grad=True)
    y = torch.softmax(x, dim=-1)
    dy = torch.randn_like(y)
    (dx,) = torch.autograd.grad(y, x, dy)
    torch.testing.assert_close(sm.softmax_bwd_ref(y.detach(), dy), dx)


# --------------------------------------------------------------- autograd ---
@pytest.mark.parametrize("op", ["function", "custom_op"])
@pytest.mark.parametrize("dtype", HALF_AND_SINGLE, ids=str)
def test_autograd_matches_pytorch(op, dtype, seeded):
    fn = sm.softmax if op == "function" else sm.softmax_op
    x = _x((6, 300), dtype).requires_grad_()
    x_ref = x.detach().double().requires_grad_()
    dy = _x((6, 300), dtype, scale=1.0)
    y = fn(x)
    y.backward(dy)
    y_ref = torch.softmax(x_ref, dim=-1)
    y_ref.backward(dy.double())
    assert y.dtype == dtype and x.grad.dtype == dtype
    assert_close(y, y_ref)
    assert_close(x.grad, x_ref.grad)


@pytest.mark.parametrize("op", ["function", "custom_op"])
def test_gradient_of_an_expanded_view(op):
    # loss = y.sum() hands backward a stride-0 tensor of ones: the wrapper must
    # make it contiguous. Each row of softmax sums to 1, so the gradient is 0.
    fn = sm.softmax if op == "function" else sm.softmax_op
    x = torch.randn(3, 17, device=DEVICE, requires_grad=True)
    fn(x).sum().backward()
    torch.testing.assert_close(x.grad, torch.zeros_like(x), atol=1e-6, rtol=0)


@pytest.mark.parametrize("op", ["function", "custom_op"])
def test_both_forms_take_a_transposed_input(op, seeded):
    # The page says the operator changes nothing else: it takes what the
    # autograd.Function takes, a non-contiguous view included.
    fn = sm.softmax if op == "function" else sm.softmax_op
    x = torch.randn(9, 5, device=DEVICE, dtype=torch.float64).t()
    assert not x.is_contiguous()
    assert_close(fn(x), torch.softmax(x, dim=-1))


# --8<-- [start:test_gradcheck]
@pytest.mark.parametrize("op", ["function", "custom_op"])
def test_gradcheck_in_float64(op, seeded):
    # gradcheck compares the backward kernel with finite differences of the
    # forward kernel, which needs float64: the kernels compute in float64
    # when given float64 (the interpreter loads and stores it too).
    fn = sm.softmax if op == "function" else sm.softmax_op
    x = torch.randn(4, 11, device=DEVICE, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(fn, (x,), eps=1e-6, atol=1e-8)


# --8<-- [end:test_gradcheck]


def test_custom_op_is_registered():
    x = torch.randn(2, 5, device=DEVICE)
    y = torch.ops.triton_course.softmax(x)
    assert_close(y, torch.softmax(x.double(), dim=-1))
    schema = str(torch.ops.triton_course.softmax.default._schema)
    assert schema.startswith("triton_course::softmax(Tensor x) -> Tensor")


# --8<-- [start:test_compile]
@pytest.mark.gpu  # torch.compile of a triton_op needs a CUDA device
def test_custom_op_under_torch_compile_has_no_graph_break(seeded):
    def step(x):
        return (2.0 * sm.softmax_op(x)).sum(dim=0)

    compiled = torch.compile(step, fullgraph=True)  # a graph break would raise
    x = torch.randn(64, 1000, device="cuda", dtype=torch.float16, requires_grad=True)
    x_ref = x.detach().double().requires_grad_()
    out = compiled(x)
    out.backward(torch.ones_like(out))
    ref = (2.0 * torch.softmax(x_ref, dim=-1)).sum(dim=0)
    ref.backward(torch.ones_like(ref))
    assert_close(out, ref, atol=2e-2, rtol=2e-2)  # 64 fp16 terms summed
    assert_close(x.grad, x_ref.grad)


# --8<-- [end:test_compile]


# Lesson 03 says torch.compile(fullgraph=True) also accepts the two forms
# without an operator: the autograd.Function, and the launcher called directly.
@pytest.mark.gpu
@pytest.mark.parametrize("form", ["autograd_function", "direct_launch"])
def test_other_forms_under_torch_compile_have_no_graph_break(form, seeded):
    x = torch.randn(64, 1000, device="cuda", dtype=torch.float32)
    ref = torch.softmax(x.double(), dim=-1)
    if form == "direct_launch":  # forward only: a bare launcher has no backward
        compiled = torch.compile(lambda t: 2.0 * sm.softmax_fwd(t), fullgraph=True)
        assert_close(compiled(x), 2.0 * ref)
        return
    compiled = torch.compile(lambda t: (2.0 * sm.softmax(t)).sum(), fullgraph=True)
    x.requires_grad_()
    out = compiled(x)
    out.backward()
    x_ref = x.detach().double().requires_grad_()
    (2.0 * torch.softmax(x_ref, dim=-1)).sum().backward()
    assert_close(out, (2.0 * ref).sum())
    assert_close(x.grad, x_ref.grad)


def test_each_autotuner_has_its_own_config_list():
    # Triton keeps the list it is given; torch.compile(fullgraph=True) of the
    # autograd.Function fails when the forward and backward autotuners share
    # one list object (dynamo meets the same list through two sources)
    fwd, bwd = sm._softmax_fwd_autotuned.configs, sm._softmax_bwd_autotuned.configs
    assert fwd is not bwd and fwd is not sm._CONFIGS
    assert [str(c) for c in fwd] == [str(c) for c in bwd]


@pytest.mark.gpu
def test_custom_op_passes_opcheck():
    x = torch.randn(8, 100, device="cuda", requires_grad=True)
    torch.library.opcheck(sm.softmax_op, (x,))


@pytest.mark.gpu
def test_autotuner_records_a_config_per_row_length(seeded):
    for n_cols in (100, 3000):
        x = torch.randn(512, n_cols, device="cuda", dtype=torch.float16)
        y = sm.softmax_fwd(x)  # config=None: the autotuned kernel
        assert_close(y, torch.softmax(x.double(), dim=-1))
        sm.softmax_bwd(y, torch.randn_like(y))
    # The autotuners' caches live for the whole session: other tests may have
    # tuned other row lengths and dtypes before this one, so look for ours.
    for bench in sm.BENCHMARKS:
        tuned = bench["report"]()["autotuned"]
        assert {(100, "float16"), (3000, "float16")} <= {
            (row["n_cols"], row["dtype"]) for row in tuned
        }
        for row in tuned:
            assert set(row) == {"n_cols", "dtype", "ROWS", "num_warps"}
            assert row["dtype"] in {str(d).removeprefix("torch.") for d in DTYPES}


@pytest.mark.gpu
def test_compiler_report_capture():
    text = sm.capture_compiler_report()
    assert "_softmax_bwd_kernel" in text and "registers" in text


# ------------------------------------------------------------- autotuning ---
@pytest.mark.parametrize("block", [1, 16, 256, 1024, 4096, 16384, 32768])
def test_pruning_keeps_sensible_configs(block):
    kept = sm._prune_configs(sm._CONFIGS, {}, BLOCK_SIZE=block)
    assert kept, "pruning must leave at least one config"
    for config in kept:
        elements = config.kwargs["ROWS"] * block
        assert config.kwargs["ROWS"] == 1 or elements <= 8192
    assert len(kept) <= len(sm._CONFIGS)


def test_autotuned_wrappers_share_the_kernels():
    assert sm._softmax_fwd_autotuned.fn is sm._softmax_fwd_kernel
    assert sm._softmax_bwd_autotuned.fn is sm._softmax_bwd_kernel
    assert sm._softmax_bwd_autotuned.keys == ["n_cols"]


# ------------------------------------------------------------- benchmarks ---
@pytest.mark.parametrize("bench", sm.BENCHMARKS, ids=lambda b: b["name"])
def test_benchmark_peers_agree_on_a_small_size(bench):
    size = {"n_rows": 5, "n_cols": 33}
    inputs = bench["make_inputs"](size, torch.float32, DEVICE)
    expected = bench["triton"](*inputs)
    for peer in bench["peers"].values():
        torch.testing.assert_close(peer(*inputs), expected, **TOLERANCES[torch.float32])
    elements = 5 * 33 * 4
    assert bench["work"](size, torch.float32) == elements * (
        2 if bench["name"].endswith("fwd") else 3
    )


def test_report_lists_tuned_configs():
    class FakeTuner:  # the autotuner's cache: key -> chosen triton.Config
        cache = {(1024, "torch.float16", "torch.float16"): sm._CONFIGS[4]}

    assert sm._tuned_configs(FakeTuner) == [
        {"n_cols": 1024, "dtype": "float16", "ROWS": 4, "num_warps": 4}
    ]


def test_captures_follow_the_runner_format():
    for name, spec in sm.CAPTURES.items():
        assert name.startswith("softmax_autograd_")
        assert callable(spec) or set(spec) == {"ncu"}
    assert sm.CAPTURES["softmax_autograd_ncu"]["ncu"]["args"] == ["--ncu-target"]


def test_extract_triton_kernels_from_a_log():
    log = "\n".join([
        "noise",
        "triton_per_fused = async_compile.triton('triton_per_fused', '''",
        "import triton",
        "@triton.jit",
        "def triton_per_fused(in_ptr0, out_ptr0, xnumel, r0_numel):",
        "    xoffset = tl.program_id(0)",
        "''', device_str='cuda')",
        "more noise",
    ])  # fmt: skip
    text = sm._extract_triton_kernels(log)
    assert text.startswith("@triton.jit\ndef triton_per_fused(")
    assert "noise" not in text and "device_str" not in text
    with pytest.raises(RuntimeError, match="no @triton.jit kernel"):
        sm._extract_triton_kernels("nothing here")


# -------------------------------------------------------------- bad input ---
def _m(*shape, **kw):
    return torch.randn(*shape, device=DEVICE, **kw)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: sm.softmax_fwd([1.0, 2.0]), TypeError, "torch.Tensor"),
        (lambda: sm.softmax_fwd(_m(3).to(torch.int32)), TypeError, "dtype"),
        (lambda: sm.softmax_fwd(_m(())), ValueError, "at least one"),
        (lambda: sm.softmax_fwd(_m(2, sm.MAX_COLS + 1)), ValueError, "MAX_COLS"),
        (lambda: sm.softmax_fwd(_m(8, 8).t()), ValueError, "contiguous"),
        (lambda: sm.softmax_bwd(_m(4, 4), _m(4, 5)), ValueError, "shapes differ"),
        (
            lambda: sm.softmax_bwd(_m(4, 4), _m(4, 4, dtype=torch.float16)),
            TypeError,
            "dtypes differ",
        ),
        (lambda: sm.softmax_bwd(_m(4, 4), "dy"), TypeError, "torch.Tensor"),
        (lambda: sm.softmax_fwd(_m(4, 4), out=_m(4, 5)), ValueError, "out must match"),
        (
            lambda: sm.softmax_fwd(_m(4, 4), out=_m(4, 8)[:, ::2]),
            ValueError,
            "out must",
        ),
    ],
    ids=[
        "list",
        "int32",
        "0-dim",
        "too-wide",
        "strided",
        "shapes",
        "dtypes",
        "dy-str",
        "out-shape",
        "out-strided",
    ],  # fmt: skip
)
def test_bad_input_is_rejected(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_cpu_tensors_without_interpreter_are_rejected(monkeypatch):
    monkeypatch.setattr(sm, "_INTERPRETING", False)  # imported without it
    with pytest.raises(ValueError, match="TRITON_INTERPRET=1"):
        sm.softmax_fwd(torch.randn(2, 3))


@pytest.mark.gpu  # needs a CUDA device beside the CPU
def test_mixed_devices_are_rejected():
    with pytest.raises(ValueError, match="is on"):
        sm.softmax_bwd(torch.randn(2, 3, device="cuda"), torch.randn(2, 3))


# review 2026-11-27 l03-02: an out that overlaps an input, shifted by a row, makes one
# program overwrite rows another has yet to read; out=x itself is safe
def test_an_out_overlapping_an_input_is_refused(seeded):
    buf = torch.randn(9, 16, device=DEVICE)
    with pytest.raises(ValueError, match="out must be x itself or share no memory"):
        sm.softmax_fwd(buf[:8], out=buf[1:9])
    y = torch.softmax(torch.randn(8, 16, device=DEVICE), dim=-1)
    dy_buf = torch.randn(9, 16, device=DEVICE)
    with pytest.raises(ValueError, match="out must be dy itself or share no"):
        sm.softmax_bwd(y, dy_buf[:8], out=dy_buf[1:9])
    y_buf = torch.empty(9, 16, device=DEVICE)
    y_buf[:8] = y
    with pytest.raises(ValueError, match="out must be y itself or share no"):
        sm.softmax_bwd(y_buf[:8], dy_buf[1:9], out=y_buf[1:9])
    # in place: out is the input itself
    x = torch.randn(8, 16, device=DEVICE)
    want = torch.softmax(x.double(), dim=-1)
    assert sm.softmax_fwd(x, out=x) is x
    assert_close(x, want)


@pytest.mark.parametrize("direction", ["fwd", "bwd"])
def test_the_launch_runs_on_the_inputs_device(direction, monkeypatch):
    # review 2026-11-27 l03-03: Triton launches on the current GPU; the launcher makes
    # it the inputs' one (tests/test_fused_mlp_tail.py checks two real GPUs)
    seen = []
    real_on = sm._on

    def on(device):
        seen.append(device)
        return real_on(device)

    monkeypatch.setattr(sm, "_on", on)
    x = torch.randn(4, 8, device=DEVICE)
    if direction == "fwd":
        sm.softmax_fwd(x)
    else:
        sm.softmax_bwd(torch.softmax(x, -1), x)
    assert seen == [x.device]


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_tensors_on_a_second_gpu_run_there(seeded):
    x = torch.randn(33, 129, device="cuda:1")
    with torch.cuda.device(0):
        y = sm.softmax_fwd(x)
        dx = sm.softmax_bwd(y, x)
    torch.cuda.synchronize(1)
    assert_close(y, torch.softmax(x, dim=-1))
    assert_close(dx, sm.softmax_bwd_ref(y, x).to(x.dtype))
