"""snippets/layernorm_linear.py: row statistics, the fused GEMM, bad input."""

import pytest
import torch
import torch.nn.functional as F
from conftest import DEVICE, HAS_GPU, assert_close, load_snippet, poison_

ll = load_snippet("layernorm_linear")

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# explicit small configs: the interpreter cannot autotune
CONFIGS = [
    {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2},
    {"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 4},
]


def _inputs(m, k, n, dtype, shift=0.0, bias=True):
    size = {"tokens": m, "hidden": k, "out_features": n}
    x, w, b, lw, lb = ll._bench_inputs(size, torch.float32, DEVICE)
    args = [(x + shift).to(dtype), w.to(dtype), b.to(dtype), lw.to(dtype), lb.to(dtype)]
    if not bias:
        args[2] = None
    return args


def _check_against_pytorch(out, args, eps=1e-5):
    """Error vs a float64 reference within a small multiple of PyTorch's own."""
    x, w, b, lw, lb = args
    up = [a.double() if a is not None else None for a in args]
    expected = ll.layernorm_linear_ref(*up, eps=eps)
    if x.dtype == torch.float32:
        assert_close(out, expected, atol=1e-4, rtol=1e-4)
        return
    torch_lowp = (
        ll.layernorm_linear_ref(*args, eps=eps)
        if HAS_GPU
        else (
            ll.layernorm_linear_ref(
                *[a.float() if a is not None else None for a in args], eps=eps
            ).to(x.dtype)  # CPU: fp32 math, one rounding
        )
    )
    err = (out.double() - expected).abs().max().item()
    err_torch = (torch_lowp.double() - expected).abs().max().item()
    scale = expected.abs().max().item() + 1e-30
    # the kernel rounds the normalised x to the input dtype before tl.dot,
    # PyTorch (on CPU) does not: allow 4x PyTorch's error plus that rounding
    eps_dtype = torch.finfo(x.dtype).eps
    assert err <= 4 * err_torch + 4 * eps_dtype * scale, (err, err_torch, scale)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("m, k, n", [(1, 1, 1), (1, 7, 5), (37, 100, 70), (65, 33, 17)])
def test_matches_layernorm_then_linear(m, k, n, dtype, seeded):
    args = _inputs(m, k, n, dtype)
    out = poison_(torch.empty(m, n, dtype=dtype, device=DEVICE))
    assert ll.layernorm_linear(*args, out=out, config=CONFIGS[0]) is out
    assert not torch.isnan(out).any()
    _check_against_pytorch(out, args)


@pytest.mark.parametrize("config", CONFIGS, ids=["16x16x16", "32x64x32"])
def test_configs_and_no_bias(config, seeded):
    # 40 x 48 x 72: for each config several row tiles, the last group of
    # them short, several column tiles, the last rows and columns past the
    # edge (and K, for 32x64x32); the interpreter pays per tile
    for bias in (True, False):
        args = _inputs(40, 48, 72, torch.float16, bias=bias)
        out = poison_(torch.empty(40, 72, dtype=torch.float16, device=DEVICE))
        ll.layernorm_linear(*args, out=out, config=config)
        _check_against_pytorch(out, args)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_without_normalize_is_the_plain_linear(dtype, seeded):
    x, w, b, lw, lb = _inputs(33, 70, 20, dtype)
    out = ll.layernorm_linear(x, w, b, lw, lb, config=CONFIGS[1], normalize=False)
    up = [t.double() for t in (x, w, b)]
    expected = F.linear(*up)
    assert_close(out, expected)


# On a GPU the default path is the autotuner, which test_autotuned_on_gpu
# checks (eps included); in float32 here it would compile seven more configs.
@pytest.mark.skipif(HAS_GPU, reason="on a GPU: test_autotuned_on_gpu")
def test_default_config_and_eps(seeded):
    args = _inputs(20, 50, 30, torch.float32)
    out = ll.layernorm_linear(*args, eps=0.1)  # interpreter: SMALL_CONFIG
    _check_against_pytorch(out, args, eps=0.1)


def test_large_mean_rows_and_constant_rows(seeded):
    # |mean| >> std: a one-pass E[x^2] - E[x]^2 would lose the variance
    args = _inputs(9, 64, 16, torch.float32, shift=1000.0)
    args[0][3] = 5.0  # a constant row: variance 0, output = beta @ W^T + bias
    out = ll.layernorm_linear(*args, config=CONFIGS[0])
    _check_against_pytorch(out, args)


def test_stats(seeded):
    x = torch.randn(5, 3000, device=DEVICE) * 3 + 2
    mean, rstd = ll.layernorm_stats(x, eps=1e-5, block=256)
    assert mean.dtype == rstd.dtype == torch.float32
    var, mu = torch.var_mean(x.double(), dim=1, unbiased=False)
    assert_close(mean, mu)
    assert_close(rstd, 1 / torch.sqrt(var + 1e-5))


def test_does_not_write_past_the_end(seeded):
    args = _inputs(20, 40, 30, torch.float32)
    buffer = poison_(torch.empty(600 + 64, device=DEVICE))
    ll.layernorm_linear(*args, out=buffer[:600].view(20, 30), config=CONFIGS[1])
    assert torch.isnan(buffer[600:]).all()
    _check_against_pytorch(buffer[:600].view(20, 30), args)


def test_empty():
    args = _inputs(1, 8, 4, torch.float32)
    x0 = torch.empty(0, 8, device=DEVICE)
    assert ll.layernorm_linear(x0, *args[1:]).shape == (0, 4)


def test_benchmark_description():
    bench = ll.BENCHMARK
    assert list(bench["peers"])[0] == "PyTorch eager"
    assert [s["tokens"] for s in bench["sizes"]] == [4096, 8192, 16384]
    size = {"tokens": 2, "hidden": 3, "out_features": 5}
    assert bench["work"](size, torch.float16) == 60
    assert len(ll.AUTOTUNE_CONFIGS) <= 8
    assert isinstance(bench["report"](), dict)


# ------------------------------------------------------------ bad input ---
def _bad(**change):
    x, w, b, lw, lb = _inputs(4, 8, 6, torch.float32)
    args = {"x": x, "weight": w, "bias": b, "ln_weight": lw, "ln_bias": lb}
    args.update(change)
    return args


@pytest.mark.parametrize(
    "change, error, message",
    [
        ({"x": [[1.0]]}, TypeError, "x must be a torch.Tensor"),
        ({"weight": 1.0}, TypeError, "weight must be a torch.Tensor"),
        ({"x": torch.ones(4, 8, dtype=torch.float64)}, TypeError, "unsupported"),
        ({"weight": torch.ones(6, 8, dtype=torch.float16)}, TypeError, "differ"),
        ({"x": torch.ones(2, 4, 8)}, ValueError, "2-D"),
        ({"x": torch.ones(8, 4).t()}, ValueError, "x must be contiguous"),
        ({"weight": torch.ones(8, 6).t()}, ValueError, "weight must be contiguous"),
        ({"weight": torch.ones(6, 9)}, ValueError, r"weight must be \(N, 8\)"),
        ({"ln_weight": torch.ones(9)}, ValueError, "ln_weight and ln_bias"),
        ({"bias": torch.ones(5)}, ValueError, r"bias must have shape \(6,\)"),
        ({"eps": 0.0}, ValueError, "eps"),
        ({"out": torch.empty(4, 7)}, ValueError, "out must be"),
        ({"out": torch.empty(6, 4).t()}, ValueError, "out must be contiguous"),
        ({"config": {"BLOCK_M": 16}}, ValueError, "config lacks"),
    ],
    ids=[
        "x-list",
        "w-float",
        "float64",
        "mixed",
        "3-D",
        "x-strided",
        "w-strided",
        "w-shape",
        "ln-shape",
        "bias-shape",
        "eps",
        "out-shape",
        "out-strided",
        "config",
    ],
)
def test_bad_input_is_rejected(change, error, message):
    args = _bad(
        **{
            k: v.to(DEVICE) if isinstance(v, torch.Tensor) else v
            for k, v in change.items()
        }
    )
    with pytest.raises(error, match=message):
        ll.layernorm_linear(**args)


# A config the kernel cannot compute with is refused before anything runs:
# GROUP_M = 0 divided by zero in the grouped ordering (the interpreter
# returned the unwritten output, NaN; a GPU computes an undefined quotient).
BAD_CONFIGS = [
    ({"GROUP_M": 0}, "GROUP_M must be an integer >= 1"),
    ({"GROUP_M": -2}, "GROUP_M must be an integer >= 1"),
    ({"GROUP_M": 1.5}, "GROUP_M must be an integer >= 1"),
    ({"BLOCK_M": 24}, "BLOCK_M must be a power of two"),
    ({"BLOCK_N": 0}, "BLOCK_N must be a power of two"),
    ({"BLOCK_K": 48}, "BLOCK_K must be a power of two"),
]


@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("change, message", BAD_CONFIGS)
def test_a_config_the_kernel_cannot_compute_is_refused(change, message, normalize):
    args = _inputs(40, 64, 48, torch.float16)
    out = poison_(torch.empty(40, 48, dtype=torch.float16, device=DEVICE))
    config = {**CONFIGS[0], **change}
    with pytest.raises(ValueError, match=message):
        ll.layernorm_linear(*args, out=out, config=config, normalize=normalize)
    assert torch.isnan(out).all()  # refused before any launch


def test_zero_features_is_rejected():
    x = torch.empty(3, 0, device=DEVICE)
    w = torch.empty(4, 0, device=DEVICE)
    with pytest.raises(ValueError, match="K = 0"):
        ll.layernorm_linear(
            x, w, None, torch.empty(0, device=DEVICE), torch.empty(0, device=DEVICE)
        )


@pytest.mark.parametrize("name", ["x", "weight", "bias", "ln_weight"])
def test_out_sharing_memory_with_an_input_is_refused(name, seeded):
    # issue #28: with out over x (or W), programs read tiles that others had
    # already overwritten; refused, naming the input
    x, w, b, lw, lb = _inputs(40, 40, 40, torch.float32)
    args = {"x": x, "weight": w, "bias": b, "ln_weight": lw, "ln_bias": lb}
    target = args[name]
    out = target if target.dim() == 2 else torch.empty(41 * 40, device=DEVICE)
    if target.dim() == 1:  # out starts inside the 1-D tensor's bytes
        args[name] = out[1:41]
        out = out[1:1601].view(40, 40)
    with pytest.raises(ValueError, match=f"out must not share memory with {name}"):
        ll.layernorm_linear(*args.values(), out=out, config=CONFIGS[0])


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_tensors_on_a_second_gpu_run_there(seeded):
    # Triton launches on the current GPU; the launcher makes it x's
    args = [a.to("cuda:1") for a in _inputs(37, 64, 48, torch.float16)]
    with torch.cuda.device(0):
        out = ll.layernorm_linear(*args, config=CONFIGS[0])
        mean, rstd = ll.layernorm_stats(args[0])
    torch.cuda.synchronize(1)
    assert out.device == torch.device("cuda:1")
    _check_against_pytorch(out, args)
    x = args[0].float()
    torch.testing.assert_close(mean, x.mean(1))
    torch.testing.assert_close(rstd, (x.var(1, unbiased=False) + 1e-5).rsqrt())


def test_cpu_tensors_without_interpreter_are_rejected(monkeypatch):
    monkeypatch.setattr(ll, "_INTERPRETING", False)  # imported without it
    args = _inputs(2, 4, 3, torch.float32)
    with pytest.raises(ValueError, match="TRITON_INTERPRET=1"):
        ll.layernorm_linear(*[a.cpu() for a in args])


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_autotuned_on_gpu(dtype):
    args = _inputs(300, 256, 384, dtype)
    out = ll.layernorm_linear(*args, eps=0.1)  # config=None: the autotuner picks
    _check_against_pytorch(out, args, eps=0.1)
    assert ll._best_configs(), "the autotuner recorded no choice"


@pytest.mark.gpu
def test_eager_pair_under_torch_compile():
    args = _inputs(64, 128, 256, torch.float16)
    out = torch.compile(ll.layernorm_linear_ref)(*args)
    _check_against_pytorch(out, args)
