"""snippets/flash_attention.py: against float64 attention and SDPA, on small shapes."""

import math

import pytest
import torch
from conftest import DEVICE, TOLERANCES, assert_close, load_snippet, poison_

fa = load_snippet("flash_attention")

# triton 3.9's interpreter returns garbage from tl.dot on bfloat16 tiles (checked:
# even a plain 16x16 product), so the bfloat16 cases need a real GPU; the GPU
# runner runs them (conftest deselects `gpu` tests on CPU and says so).
DTYPES = [torch.float16, pytest.param(torch.bfloat16, marks=pytest.mark.gpu)]
SMALL = {"BLOCK_M": 16, "BLOCK_N": 16}  # many tiles even for short sequences


def qkv(batch, heads, n, d, dtype, scale=1.0):
    shape = (batch, heads, n, d)
    return tuple(
        (torch.randn(shape, device=DEVICE) * scale).to(dtype) for _ in range(3)
    )


def _check(q, k, v, causal, config=SMALL):
    out = poison_(torch.empty_like(q))
    result = fa.flash_attention(q, k, v, causal=causal, out=out, config=config)
    assert result is out
    assert not torch.isnan(out).any(), "an element was never written"
    assert_close(out, fa.attention_ref(q, k, v, causal))
    return out


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("n", [1, 7, 16, 33, 100])
def test_matches_float64_reference(n, causal, dtype, seeded):
    _check(*qkv(1, 2, n, 64, dtype), causal)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_head_dim_128_and_batch(causal, dtype, seeded):
    _check(*qkv(2, 3, 45, 128, dtype), causal)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize(
    "config",
    [{"BLOCK_M": 32, "BLOCK_N": 16}, {"BLOCK_M": 16, "BLOCK_N": 64}, None],
    ids=["tall", "wide", "default"],
)
def test_tile_shapes_agree(config, causal, seeded):
    # Query and key blocks of different sizes exercise the causal loop bound.
    _check(*qkv(1, 1, 70, 32, torch.float16), causal, config=config)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_agrees_with_sdpa(causal, dtype, seeded):
    q, k, v = qkv(1, 2, 50, 64, dtype)
    out = fa.flash_attention(q, k, v, causal=causal, config=SMALL)
    sdpa = fa.attention_sdpa(q.float(), k.float(), v.float(), causal).to(dtype)
    # Both are within the dtype's rounding of the exact result, so within twice
    # that of each other.
    tol = {key: 2 * val for key, val in TOLERANCES[dtype].items()}
    torch.testing.assert_close(out.float(), sdpa.float(), **tol)


def test_large_scores_do_not_overflow(seeded):
    # Scores of a few hundred would overflow exp() without the running maximum.
    q, k, v = qkv(1, 1, 40, 64, torch.float16, scale=6.0)
    _check(q, k, v, causal=False)


def test_causal_first_row_is_the_first_value(seeded):
    q, k, v = qkv(1, 1, 20, 16, torch.float16)
    out = fa.flash_attention(q, k, v, causal=True, config=SMALL)
    assert torch.equal(out[0, 0, 0], v[0, 0, 0])  # row 0 sees only key 0


def test_does_not_write_past_the_end(seeded):
    q, k, v = qkv(1, 1, 21, 16, torch.float16)
    buffer = poison_(torch.empty(21 * 16 + 64, dtype=torch.float16, device=DEVICE))
    out = buffer[: 21 * 16].view(1, 1, 21, 16)
    fa.flash_attention(q, k, v, out=out, config=SMALL)
    assert torch.isnan(buffer[21 * 16 :]).all()
    assert_close(out, fa.attention_ref(q, k, v))


def test_empty_sequence_is_a_no_op():
    q, k, v = qkv(1, 2, 0, 64, torch.float16)
    assert fa.flash_attention(q, k, v).shape == (1, 2, 0, 64)


def test_eager_peer_and_flop_count():
    q, k, v = qkv(1, 2, 9, 16, torch.float32)
    expected = fa.attention_ref(q, k, v, True)
    assert_close(fa.attention_eager(q, k, v, True), expected, atol=1e-5)
    size = {"batch": 2, "heads": 3, "n_ctx": 128, "head_dim": 64, "causal": 0}
    assert fa._bench_flops(size, torch.float16) == 4 * 2 * 3 * 128**2 * 64
    assert (
        fa._bench_flops(dict(size, causal=1), torch.float16) == 2 * 2 * 3 * 128**2 * 64
    )


def test_benchmark_description():
    bench = fa.BENCHMARK
    assert list(bench["peers"]) == ["PyTorch eager", "SDPA"]
    for size in bench["sizes"]:
        assert sorted(size) == sorted(bench["params"])
        assert size["batch"] * size["n_ctx"] == 16384
    q, k, v, causal = bench["make_inputs"](
        {"batch": 1, "heads": 1, "n_ctx": 24, "head_dim": 16, "causal": 1},
        torch.float16,
        DEVICE,
    )
    assert causal is True and q.shape == (1, 1, 24, 16)


def test_report_places_every_row_on_the_roofline():
    import json

    entries = json.loads(json.dumps(fa.BENCHMARK["report"]()))["roofline"]
    bench = fa.BENCHMARK
    assert len(entries) == len(bench["sizes"]) * len(bench["dtypes"])
    for entry in entries:
        size = {k: entry[k] for k in bench["params"]}
        assert size in bench["sizes"]
        assert entry["flops"] == bench["work"](size, getattr(torch, entry["dtype"]))
        b, h, n, d = size["batch"], size["heads"], size["n_ctx"], size["head_dim"]
        assert entry["bytes"] == 4 * b * h * n * d * 2  # Q, K, V, O in 16 bits


@pytest.mark.parametrize(
    "grad, scale, survives",
    [
        (1e-8, 1.0, False),  # below fp16's smallest subnormal: flushed to zero
        (1e-8, 2.0**16, True),  # scaled into range, unscaled in fp32
        (1e-3, 1.0, True),
        (1.0, 2.0**17, False),  # 131072 overflows fp16 (max 65504)
    ],
)
def test_loss_scaling(grad, scale, survives):
    assert fa.fp16_gradient_survives(grad, scale) is survives


def _good():
    return qkv(1, 1, 8, 16, torch.float16)


@pytest.mark.parametrize(
    "make, kwargs, error, message",
    [
        (lambda: ([1.0],) + _good()[1:], {}, TypeError, "torch.Tensor"),
        (lambda: qkv(1, 1, 8, 16, torch.float32), {}, TypeError, "unsupported dtype"),
        (
            lambda: (_good()[0], _good()[1].bfloat16(), _good()[2]),
            {},
            TypeError,
            "dtypes differ",
        ),
        (
            lambda: (_good()[0], qkv(1, 1, 9, 16, torch.float16)[0], _good()[2]),
            {},
            ValueError,
            "share one shape",
        ),
        (lambda: tuple(t[0] for t in _good()), {}, ValueError, "share one shape"),
        (lambda: qkv(1, 1, 8, 48, torch.float16), {}, ValueError, "head_dim"),
        (
            lambda: tuple(t.transpose(2, 3) for t in qkv(1, 1, 16, 16, torch.float16)),
            {},
            ValueError,
            "contiguous",
        ),
        (_good, {"config": {"BLOCK_M": 8}}, ValueError, "BLOCK_M"),
        (_good, {"out": torch.empty(1, 1, 8, 16)}, ValueError, "out must"),
    ],
    ids=[
        "list",
        "float32",
        "mixed",
        "shapes",
        "3-d",
        "head-dim",
        "strided",
        "block",
        "out",
    ],
)
def test_bad_input_is_rejected(make, kwargs, error, message):
    q, k, v = make()
    with pytest.raises(error, match=message):
        fa.flash_attention(q, k, v, **kwargs)


def test_cpu_tensors_need_the_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    q, k, v = (torch.ones(1, 1, 4, 16, dtype=torch.float16) for _ in range(3))
    with pytest.raises(ValueError, match="TRITON_INTERPRET=1"):
        fa.flash_attention(q, k, v)


def test_scale_is_one_over_sqrt_d():
    # All-equal keys: every key gets the same weight, whatever the scale.
    q = torch.randn(1, 1, 5, 16, device=DEVICE).half()
    k = torch.ones(1, 1, 5, 16, device=DEVICE).half()
    v = torch.arange(5.0, device=DEVICE).repeat(16, 1).t().contiguous()[None, None]
    v = v.half()
    out = fa.flash_attention(q, k, v, config=SMALL)
    assert torch.allclose(out.float(), torch.full_like(out.float(), 2.0))
    # Scaled scores q.k / sqrt(d): one query against two keys with known dots.
    q = torch.zeros(1, 1, 2, 16, device=DEVICE).half()
    q[..., 0] = 1.0
    k = torch.zeros_like(q)
    k[0, 0, 1, 0] = 4.0  # q.k = 0 for key 0 and 4 for key 1, scaled: 0 and 1
    v = torch.zeros_like(q)
    v[0, 0, 1, :] = 1.0
    out = fa.flash_attention(q, k, v, config=SMALL)
    expected = math.exp(4 / math.sqrt(16)) / (1 + math.exp(4 / math.sqrt(16)))
    assert out[0, 0, 0, 0].item() == pytest.approx(expected, abs=1e-3)
