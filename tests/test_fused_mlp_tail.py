"""snippets/fused_mlp_tail.py: bias + GELU + seeded dropout, its mask, the chain."""

import pytest
import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from conftest import (
    DEVICE,
    TOLERANCES,
    assert_close,
    load_snippet,
    poison_,
)

fm = load_snippet("fused_mlp_tail")

# Under the interpreter a launch costs about 40 ms per program (row) and
# little per element: rows are few here, and widths awkward.
SHAPES = [(1, 1), (1, 7), (7, 1000), (5, 129)]
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def _inputs(rows, cols, dtype):
    y = (3 * torch.randn(rows, cols, device=DEVICE)).to(dtype)
    bias = torch.randn(cols, device=DEVICE).to(dtype)
    return y, bias


def _gelu64(y, bias):
    return F.gelu(y.double() + bias.double())


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_no_dropout_is_bias_plus_gelu(shape, dtype, seeded):
    y, bias = _inputs(*shape, dtype)
    out = poison_(torch.empty_like(y))
    assert fm.bias_gelu_dropout(y, bias, p=0.0, out=out) is out
    assert_close(out, _gelu64(y, bias))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_dropout_matches_the_regenerated_mask(p, dtype, seeded):
    y, bias = _inputs(5, 300, dtype)  # 1500 elements: a mismatch shows at once
    out = poison_(torch.empty_like(y))
    fm.bias_gelu_dropout(y, bias, p=p, seed=7, out=out)
    keep = fm.dropout_keep_mask(y.shape, p, 7, DEVICE)
    assert keep.dtype == torch.bool and keep.shape == y.shape
    assert (out[~keep] == 0).all(), "a dropped element is not zero"
    expected = _gelu64(y, bias) / (1 - p)  # kept values are scaled by 1/(1-p)
    assert_close(out[keep], expected[keep])
    assert_close(out, fm.bias_gelu_dropout_ref(y, bias, p, 7).to(torch.float64))


@pytest.mark.parametrize("p", [0.1, 0.3, 0.75])
def test_dropped_fraction_is_close_to_p(p):
    # 200 000 draws as 28 programs (4 rows of 7 blocks, the last partly
    # masked): the interpreter's cost is per program, not per element
    n = 200_000
    keep = fm.dropout_keep_mask((4, 50_000), p, 123, DEVICE, block_size=8192)
    dropped = 1 - keep.double().mean().item()
    # binomial: standard deviation sqrt(p (1 - p) / n) <= 1.2e-3; allow 5 of it
    assert abs(dropped - p) < 5 * (p * (1 - p) / n) ** 0.5


def test_same_seed_same_mask_other_seed_other_mask(seeded):
    y, bias = _inputs(8, 60, torch.float32)
    a = fm.bias_gelu_dropout(y, bias, p=0.5, seed=11)
    b = fm.bias_gelu_dropout(y, bias, p=0.5, seed=11)
    c = fm.bias_gelu_dropout(y, bias, p=0.5, seed=12)
    assert torch.equal(a, b)
    assert not torch.equal(a == 0, c == 0)
    # the mask depends on (seed, row, col), not on how the work is split
    for block_size in (8, 32):  # 8 and 2 blocks a row, the last one partial
        d = fm.bias_gelu_dropout(y[:4], bias, p=0.5, seed=11, block_size=block_size)
        assert torch.equal(a[:4], d)


def test_mask_does_not_repeat_across_rows_or_groups():
    # a counter reused by two rows, or two columns given the same draw,
    # would show up as identical masks
    keep = fm.dropout_keep_mask((64, 203), 0.5, 5, DEVICE)
    assert len({tuple(r.tolist()) for r in keep}) == 64
    assert len({tuple(c.tolist()) for c in keep.t()}) == 203


# row not specialised: a row of 1 would become a constant, which has no .to()
# (in the kernel it is tl.program_id, a tensor)
@triton.jit(do_not_specialize=["row"])
def _one_block_of_a_row(keep_ptr, row, n_cols, p, seed, BLOCK_SIZE: tl.constexpr):
    keep = fm._keep_mask(seed, row, 0, n_cols, p, BLOCK_SIZE)
    tl.store(keep_ptr + tl.arange(0, BLOCK_SIZE), keep.to(tl.uint8))


@triton.jit
def _philox_draws(out_ptr, first_counter, seed, GROUPS: tl.constexpr):
    g = tl.arange(0, GROUPS)
    r0, r1, r2, r3 = tl.rand4x(seed, first_counter + g.to(tl.int64))
    tl.store(out_ptr + 4 * g, r0)
    tl.store(out_ptr + 4 * g + 1, r1)
    tl.store(out_ptr + 4 * g + 2, r2)
    tl.store(out_ptr + 4 * g + 3, r3)


@pytest.mark.parametrize("row", [0, 1, 2**20, 2**20 + 1])
def test_element_takes_draw_c_mod_4_of_a_64_bit_counter(row):
    # index.md (review 2026-11-27 l03-04): element (r, c) takes draw c % 4 of counter
    # r * ceil(F / 4) + c // 4, a 64-bit counter. At F = 16384 row 2**20
    # starts at counter 2**32, which an int32 counter wraps round to row 0's.
    n_cols, block, p, seed = 16384, 64, 0.5, 1234
    keep = torch.empty(block, dtype=torch.uint8, device=DEVICE)
    _one_block_of_a_row[(1,)](keep, row, n_cols, p, seed, BLOCK_SIZE=block)
    draws = torch.empty(block, device=DEVICE)
    _philox_draws[(1,)](draws, row * (n_cols // 4), seed, GROUPS=block // 4)
    assert torch.equal(keep.bool(), draws >= p)
    if row == 2**20:
        first = torch.empty_like(keep)
        _one_block_of_a_row[(1,)](first, 0, n_cols, p, seed, BLOCK_SIZE=block)
        assert not torch.equal(keep, first)


def test_in_place_on_y(seeded):
    y, bias = _inputs(9, 100, torch.float16)
    expected = fm.bias_gelu_dropout(y, bias, p=0.2, seed=3)
    assert fm.bias_gelu_dropout(y, bias, p=0.2, seed=3, out=y) is y
    assert torch.equal(y, expected)


def test_edge_values():
    # large magnitudes: GELU(h) -> h for large h and -> 0 for very negative h
    y = torch.tensor([[0.0, -50.0, 50.0, 1e4, -1e4]], device=DEVICE)
    out = fm.bias_gelu_dropout(y, torch.zeros(5, device=DEVICE))
    assert_close(out, torch.tensor([[0.0, 0.0, 50.0, 1e4, 0.0]], device=DEVICE))


def test_does_not_write_past_the_end(seeded):
    y, bias = _inputs(10, 100, torch.float32)
    buffer = poison_(torch.empty(1000 + 64, device=DEVICE))
    out = buffer[:1000].view(10, 100)
    fm.bias_gelu_dropout(y, bias, p=0.3, seed=1, out=out, block_size=256)
    assert torch.isnan(buffer[1000:]).all()
    assert not torch.isnan(out).any()


def test_empty_input():
    y, bias = torch.empty(0, 8, device=DEVICE), torch.zeros(8, device=DEVICE)
    assert fm.bias_gelu_dropout(y, bias, p=0.5).shape == (0, 8)


def _chain_args(dtype, t=5, h=40, f=24):
    size = {"tokens": t, "hidden": h, "out_features": f}
    return fm._chain_inputs(size, dtype, DEVICE)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
def test_fused_chain_matches_eager_without_dropout(dtype, seeded):
    x, lw, lb, w, b, _, _ = _chain_args(dtype)
    fused = fm.mlp_chain_fused_tail(x, lw, lb, w, b, 0.0, 0)
    h = F.layer_norm(x.double(), (x.shape[1],), lw.double(), lb.double())
    expected = F.gelu(F.linear(h, w.double(), b.double()))
    # the Linear runs in the input dtype: allow a few of its roundings
    tol = TOLERANCES[dtype]
    assert_close(fused, expected, atol=4 * tol["atol"], rtol=4 * tol["rtol"])
    eager = fm.mlp_chain_eager(x, lw, lb, w, b, 0.0, 0)
    assert_close(eager, expected, atol=4 * tol["atol"], rtol=4 * tol["rtol"])


def test_fused_chain_dropout_keeps_about_one_minus_p(seeded):
    x, lw, lb, w, b, p, seed = _chain_args(torch.float32, t=8, h=32, f=200)
    out = fm.mlp_chain_fused_tail(x, lw, lb, w, b, p, seed)
    keep = fm.dropout_keep_mask(out.shape, p, seed, DEVICE)
    assert (out[~keep] == 0).all()


def _tail_backward(dout, y, bias, p, seed):
    """dL/dy of the tail from what a training step saves: y, bias, p, seed
    (the mask drawn again), in float64: dout * keep / (1 - p) * GELU'(y + b)."""
    h = y.double() + bias.double()
    normal = torch.distributions.Normal(0.0, 1.0)
    gelu_grad = normal.cdf(h) + h * normal.log_prob(h).exp()
    keep = fm.dropout_keep_mask(y.shape, p, seed, y.device)
    return torch.where(keep, dout.double() * gelu_grad / (1.0 - p), 0.0)


@pytest.mark.parametrize("p", [0.0, 0.3])
def test_fused_chain_keeps_the_pre_activation_for_the_backward(p, monkeypatch):
    # issue #28: the chain wrote the tail over the matmul's output y, which
    # GELU's backward needs; a backward from the saved y must match autograd
    torch.manual_seed(0)
    x, lw, lb, w, b, _, seed = _chain_args(torch.float32, t=9, h=40, f=70)
    calls = []

    def recording(y, bias, *args, **kwargs):
        calls.append((y, y.clone()))
        return fm_tail(y, bias, *args, **kwargs)

    fm_tail = fm.bias_gelu_dropout
    monkeypatch.setattr(fm, "bias_gelu_dropout", recording)
    out = fm.mlp_chain_fused_tail(x, lw, lb, w, b, p, seed)
    ((saved, y_then),) = calls
    assert saved.data_ptr() != out.data_ptr() and torch.equal(saved, y_then)
    # autograd through the reference tail (same mask) at the same y
    y64 = y_then.double().requires_grad_(True)
    keep = fm.dropout_keep_mask(y64.shape, p, seed, DEVICE)
    ref = torch.where(keep, F.gelu(y64 + b.double()) / (1.0 - p), 0.0)
    dout = torch.randn_like(ref)
    (expected,) = torch.autograd.grad(ref, y64, dout)
    got = _tail_backward(dout, saved, b, p, seed)
    torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-12)
    assert_close(out, ref.detach())


def test_benchmark_descriptions_are_complete():
    names = [b["name"] for b in fm.BENCHMARKS]
    assert names == ["fused_mlp_tail", "fused_mlp_chain"]
    for bench in fm.BENCHMARKS:
        assert list(bench["peers"])[0] == "PyTorch eager"
        size = bench["sizes"][0]
        assert set(size) == set(bench["params"])
        assert bench["work"](size, torch.float16) > 0
    tail = fm.BENCHMARKS[0]
    assert tail["work"]({"tokens": 2, "out_features": 3}, torch.float16) == 2 * 15
    chain = fm.BENCHMARKS[1]
    size = {"tokens": 2, "hidden": 3, "out_features": 5}
    assert chain["work"](size, torch.float16) == 60
    args = chain["make_inputs"](
        {"tokens": 3, "hidden": 8, "out_features": 4}, torch.float32, DEVICE
    )
    assert chain["triton"](*args).shape == (3, 4)


# ------------------------------------------------------------ bad input ---
@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"y": [1.0]}, TypeError, "torch.Tensor"),
        ({"y": torch.ones(2, 3, dtype=torch.float64)}, TypeError, "unsupported"),
        ({"bias": torch.ones(3, dtype=torch.float16)}, TypeError, "dtypes differ"),
        ({"y": torch.ones(6)}, ValueError, "2-D"),
        ({"bias": torch.ones(4)}, ValueError, "bias must be"),
        ({"y": torch.ones(3, 2).t()}, ValueError, "contiguous"),
        ({"p": 1.0}, ValueError, r"\[0, 1\)"),
        ({"p": -0.1}, ValueError, r"\[0, 1\)"),
        ({"seed": -1}, ValueError, "seed"),
        ({"seed": 1.5}, ValueError, "seed"),
        ({"block_size": 100}, ValueError, "power of two"),
        ({"block_size": 2}, ValueError, ">= 4"),
        ({"out": torch.empty(2, 4)}, ValueError, "out must match"),
        ({"out": torch.empty(3, 2).t()}, ValueError, "out must be contiguous"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_bad_input_is_rejected(kwargs, error, message):
    args = {"y": torch.ones(2, 3), "bias": torch.ones(3), "p": 0.5, "seed": 0}
    args.update(kwargs)
    args = {
        k: v.to(DEVICE) if isinstance(v, torch.Tensor) else v for k, v in args.items()
    }
    with pytest.raises(error, match=message):
        fm.bias_gelu_dropout(**args)


def test_out_sharing_memory_other_than_y_itself_is_refused(seeded):
    # out one row past y: program 0 writes row 1 of y before program 1 reads
    # it; out over the bias: row 0 overwrites the bias that every row adds
    y, bias = _inputs(6, 50, torch.float32)
    buffer = torch.empty(7 * 50, device=DEVICE)
    buffer[: 6 * 50] = y.flatten()
    shifted_y, shifted_out = buffer[: 6 * 50].view(6, 50), buffer[50:].view(6, 50)
    with pytest.raises(ValueError, match="out must be y itself or share no memory"):
        fm.bias_gelu_dropout(shifted_y, bias, out=shifted_out)
    flat = torch.empty(6 * 50, device=DEVICE)
    flat[:50] = bias
    with pytest.raises(ValueError, match="out must be y itself or share no memory"):
        fm.bias_gelu_dropout(y, flat[:50], out=flat.view(6, 50))


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_tensors_on_a_second_gpu_run_there(seeded):
    # Triton launches on the current GPU; the launcher makes it y's
    y, bias = (t.to("cuda:1") for t in _inputs(33, 129, torch.float32))
    with torch.cuda.device(0):
        out = fm.bias_gelu_dropout(y, bias, p=0.25, seed=5)
        keep = fm.dropout_keep_mask(y.shape, 0.25, 5, y.device)
    expected = torch.where(keep, _gelu64(y, bias) / 0.75, 0.0)
    assert out.device == y.device and keep.float().mean().item() > 0.5
    assert_close(out, expected)


def test_cpu_tensors_without_interpreter_are_rejected(monkeypatch):
    monkeypatch.setattr(fm, "_INTERPRETING", False)  # imported without it
    with pytest.raises(ValueError, match="TRITON_INTERPRET=1"):
        fm.bias_gelu_dropout(torch.ones(2, 3), torch.ones(3))
    with pytest.raises(ValueError, match="TRITON_INTERPRET=1"):
        fm.dropout_keep_mask((4, 4), 0.5, 0, "cpu")


def test_mask_shape_must_be_2d():
    with pytest.raises(ValueError, match="rows, cols"):
        fm.dropout_keep_mask((4,), 0.5, 0, DEVICE)


@pytest.mark.gpu
def test_eager_chain_under_torch_compile_runs():
    args = _chain_args(torch.float16, t=64, h=128, f=256)
    out = torch.compile(fm.mlp_chain_eager)(*args)
    assert out.shape == (64, 256) and torch.isfinite(out).all()
