"""snippets/layernorm_linear_fold.py: the epilogue fold, its exact path, the
boundary between them, its accuracy, and bad input.

Under the interpreter (CI) and on the GPU (the runner). Tensor descriptors
need rows of a multiple of 16 bytes, so K and N are multiples of 8 here.
"""

import math
import sys

import pytest
import torch
from conftest import DEVICE, HAS_GPU, load_snippet, poison_

lf = load_snippet("layernorm_linear_fold")

SMALL = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2}
DTYPES = [torch.float16, torch.bfloat16]
# Triton 3.9's interpreter rounds float32 -> bfloat16 by truncation (twice
# the error of round-to-nearest; tests/test_interpreter_gaps.py shows it), so
# on the CPU a bfloat16 result carries up to twice PyTorch's rounding error.
# On the GPU every bound is the one the page states.
BF16_SLACK = 1.0 if HAS_GPU else 2.0


def _inputs(m, k, n, dtype, bias=True):
    size = {"tokens": m, "hidden": k, "out_features": n}
    args = list(lf._bench_layer(size, dtype, DEVICE))
    if not bias:
        args[2] = None
    return args


def _expected(args):
    return lf.layernorm_linear_ref(
        *(a.double() if a is not None else None for a in args)
    )


def _assert_close_to_pytorch(out, args, factor=1.5):
    """Within ``factor`` x the error of PyTorch's unfused pair (and a floor of
    one rounding of the output, for outputs small enough to be exact)."""
    exact = _expected(args)
    mine = lf.relative_error(out, exact)
    theirs = lf.relative_error(lf.layernorm_linear_ref(*args), exact)
    slack = BF16_SLACK if out.dtype == torch.bfloat16 else 1.0
    floor = torch.finfo(out.dtype).eps
    assert mine <= factor * slack * max(theirs, floor), (mine, theirs)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(
    "m, k, n", [(1, 8, 8), (7, 16, 24), (37, 40, 72), (65, 96, 40)], ids=str
)
@pytest.mark.parametrize("limit", [math.inf, 0.0], ids=["fold", "exact"])
def test_both_paths_match_layernorm_then_linear(m, k, n, dtype, limit, seeded):
    # awkward shapes: one row, tiles hanging over every edge, K below a tile
    args = _inputs(m, k, n, dtype)
    folded = lf.fold_layernorm(*args[1:])
    out = poison_(torch.empty(m, n, dtype=dtype, device=DEVICE))
    got = lf.layernorm_linear_folded(
        args[0], folded, out=out, config=SMALL, fold_limit=limit
    )
    assert got is out and not torch.isnan(out).any(), "an element was never written"
    _assert_close_to_pytorch(out, args, factor=2.0)


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
def test_the_launcher_takes_pytorchs_arguments(bias, seeded):
    args = _inputs(50, 64, 48, torch.float16, bias=bias)
    out = lf.layernorm_linear(*args, config=SMALL)
    _assert_close_to_pytorch(out, args, factor=2.0)


def test_the_fold_is_redone_when_a_weight_changes_in_place(seeded):
    args = _inputs(20, 32, 16, torch.float16)
    first = lf.layernorm_linear(*args, config=SMALL)
    args[3].mul_(2)  # ln_weight, in place: same pointer, new _version
    second = lf.layernorm_linear(*args, config=SMALL)
    assert not torch.equal(first, second)
    _assert_close_to_pytorch(second, args, factor=2.0)


# ------------------------------------- weights that change between calls ---
def _model(k=32, n=16, dtype=torch.float16):
    """A LayerNorm and a Linear holding _inputs' weights, as a model would."""
    _, weight, bias, gamma, beta = _inputs(1, k, n, dtype)
    model = torch.nn.ModuleDict(
        {"ln": torch.nn.LayerNorm(k), "lin": torch.nn.Linear(k, n)}
    ).to(device=DEVICE, dtype=dtype)
    with torch.no_grad():
        for p, value in zip(_params(model), (weight, bias, gamma, beta), strict=True):
            p.copy_(value)
    return model


def _params(model):
    return [model.lin.weight, model.lin.bias, model.ln.weight, model.ln.bias]


def _call(x, model):
    with torch.no_grad():
        return lf.layernorm_linear(x, *_params(model), config=SMALL)


def _same_address(model, name, new):
    # a new tensor object over the old one's memory (as when a freed weight's
    # block is handed to its replacement), its contents written through .data
    old = dict(model.named_parameters())[name]
    old.data.copy_(new)
    fresh = torch.empty(0, dtype=old.dtype, device=old.device)
    fresh.set_(old.untyped_storage(), 0, old.shape, old.stride())
    module, attr = name.split(".")
    setattr(model[module], attr, torch.nn.Parameter(fresh))


def _load_state_dict(model, name, new):
    state = {k: v.clone() for k, v in model.state_dict().items()}
    state[name] = new
    model.load_state_dict(state)


def _no_grad_copy(model, name, new):
    with torch.no_grad():
        dict(model.named_parameters())[name].copy_(new)


def _in_place_add(model, name, new):
    with torch.no_grad():
        p = dict(model.named_parameters())[name]
        p.add_(new - p)


def _assign_data(model, name, new):
    dict(model.named_parameters())[name].data = new.clone()


CHANGES = {
    "add_": _in_place_add,
    "data.copy_": lambda m, name, new: dict(m.named_parameters())[name].data.copy_(new),
    "no_grad copy_": _no_grad_copy,
    "data =": _assign_data,
    "same address": _same_address,
    "load_state_dict": _load_state_dict,
}


@pytest.mark.parametrize("name", ["lin.weight", "lin.bias", "ln.weight", "ln.bias"])
@pytest.mark.parametrize("change", list(CHANGES))
def test_the_launcher_is_right_after_every_way_of_changing_a_weight(
    change, name, seeded
):
    # issue #28: a fold cached on (address, _version, shape) missed the
    # changes that leave those as they were, and gave a silently wrong result
    model = _model()
    x = _inputs(20, 32, 16, torch.float16)[0]
    before = _call(x, model)
    old = dict(model.named_parameters())[name]
    CHANGES[change](model, name, (old.detach().float() * -1.5 + 0.25).to(old.dtype))
    after = _call(x, model)
    args = [x, *(p.detach() for p in _params(model))]
    assert not torch.equal(before, after)
    _assert_close_to_pytorch(after, args, factor=2.0)


def test_a_folded_layer_is_a_copy_that_the_caller_folds_again(seeded):
    # the explicit path: fold_layernorm copies the weights; a change to them
    # reaches layernorm_linear_folded only through a new fold
    args = _inputs(20, 32, 16, torch.float16)
    folded = lf.fold_layernorm(*args[1:])
    first = lf.layernorm_linear_folded(args[0], folded, config=SMALL)
    args[1].data.copy_(-args[1])
    assert torch.equal(lf.layernorm_linear_folded(args[0], folded, config=SMALL), first)
    refolded = lf.fold_layernorm(*args[1:])
    _assert_close_to_pytorch(
        lf.layernorm_linear_folded(args[0], refolded, config=SMALL), args, factor=2.0
    )


def test_folded_weights_are_what_the_algebra_says():
    args = _inputs(1, 24, 16, torch.float16)
    _, weight, bias, gamma, beta = args
    f = lf.fold_layernorm(weight, bias, gamma, beta)
    assert f.weight.dtype == weight.dtype and f.colsum.dtype == torch.float32
    torch.testing.assert_close(f.weight, (weight.float() * gamma.float()).half())
    torch.testing.assert_close(f.colsum, f.weight.float().sum(1))
    torch.testing.assert_close(
        f.bias, bias.float() + weight.float() @ beta.float(), rtol=1e-5, atol=1e-5
    )


# ------------------------------------------------- accuracy and boundary ---
# 16 x 2048 x 64, not accuracy_table's 64 rows: the row-statistics kernel
# runs a program per row, most of the interpreter's time. K stays 2048: the
# fold's extra error grows with K (at 1024 the case of 3000 no longer breaks
# 1.5x PyTorch's); at 16 rows every verdict below reads as at 64.
ACCURACY_SHAPE = {"m": 16, "k": 2048, "n": 64}


@pytest.fixture(scope="module")
def accuracy():
    rows = lf.accuracy_table(DEVICE, dtypes=(torch.float16,), **ACCURACY_SHAPE)
    rows += [_launcher_row(torch.bfloat16, *case) for case in lf.ACCURACY_CASES]
    return {(r["dtype"], r["case"], r["ratio"]): r for r in rows}


def _launcher_row(dtype, label, kind, ratio):
    """accuracy_table's row without the fold and exact paths' errors, which
    only the float16 tests read (each costs a launch): PyTorch's and the
    launcher's."""
    args = lf.accuracy_inputs(kind, ratio, dtype, DEVICE, **ACCURACY_SHAPE)
    exact = lf.layernorm_linear_ref(*(a.double() for a in args))
    launcher = lf.layernorm_linear_folded(args[0], lf.fold_layernorm(*args[1:]))
    return {
        "dtype": str(dtype).removeprefix("torch."),
        "case": label,
        "ratio": ratio,
        "PyTorch": lf.relative_error(lf.layernorm_linear_ref(*args), exact),
        "launcher": lf.relative_error(launcher, exact),
    }


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_the_launcher_is_within_1_5x_of_pytorch_in_every_case(accuracy, dtype):
    slack = BF16_SLACK if dtype == "bfloat16" else 1.0
    for (dt, case, ratio), r in accuracy.items():
        if dt == dtype:
            assert r["launcher"] <= 1.5 * slack * r["PyTorch"], (case, ratio, r)


def test_the_fold_alone_loses_accuracy_past_the_boundary(accuracy):
    # float16, |mean| / std = 3000: forced onto every row, the fold's error is
    # well over 1.5x PyTorch's; the launcher's exact path is not
    r = accuracy[("float16", "|mean| / std", 3000)]
    assert r["fold"] > 1.5 * r["PyTorch"], r
    assert r["launcher"] == r["exact"] and r["launcher"] <= 1.5 * r["PyTorch"]
    assert lf.FOLD_LIMIT < 3000
    for ratio in (30, 300):  # past the boundary the launcher is exact too
        r = accuracy[("float16", "|mean| / std", ratio)]
        assert r["launcher"] == r["exact"] <= 1.5 * r["PyTorch"], r


def test_the_fold_is_as_accurate_as_pytorch_below_the_boundary(accuracy):
    r = accuracy[("float16", "|mean| / std", 5)]
    assert r["launcher"] == r["fold"] <= 1.2 * r["PyTorch"], r
    assert 5 < lf.FOLD_LIMIT
    for ratio in (300, 3000):  # massive features raise the std with the mean
        r = accuracy[("float16", "massive features", ratio)]
        assert r["launcher"] == r["fold"] <= 1.2 * r["PyTorch"], r


@pytest.mark.gpu  # the size the page's capture uses: too slow to interpret
def test_the_boundary_holds_at_the_captured_size():
    # On the GPU the fold's extra error is larger than under the interpreter
    # and grows with K: at 1024 x 4096 x 1024 in float16 the H100's capture
    # has it past 1.5x PyTorch's from the |mean| / std case of 300 (see the
    # lesson's capture). The launcher must stay within 1.5x in every case,
    # and the fold alone must be what breaks it.
    table = lf.accuracy_table(DEVICE, m=1024, k=4096, n=1024)
    for r in table:
        slack = BF16_SLACK if r["dtype"] == "bfloat16" else 1.0
        assert r["launcher"] <= 1.5 * slack * r["PyTorch"], r
    far = [
        r
        for r in table
        if (r["dtype"], r["case"], r["ratio"]) == ("float16", "|mean| / std", 3000)
    ]
    assert len(far) == 1 and far[0]["fold"] > 1.5 * far[0]["PyTorch"], far


def test_a_far_off_row_sends_its_whole_row_band_down_the_exact_path(seeded):
    # 64 rows, 48 features out, tiles of 16 x 16: three column tiles per band
    # of 16 rows (N > BLOCK_N, so a tile and a band differ). The branch is
    # taken per output tile, on the largest |mean| * rstd of its rows: one
    # far-off row puts every tile of its band on the exact path, and every
    # other band matches the pure fold bit for bit.
    x, weight, bias, gamma, beta = _inputs(64, 64, 48, torch.float16)
    x[37] = x[37] * 0.01 + 2000  # |mean| / std about 2e5
    folded = lf.fold_layernorm(weight, bias, gamma, beta)
    run = lambda limit: lf.layernorm_linear_folded(  # noqa: E731
        x, folded, config=SMALL, fold_limit=limit
    )
    auto, fold, exact = run(lf.FOLD_LIMIT), run(math.inf), run(0.0)
    band = slice(32, 48)  # rows 32..47 hold row 37
    for c in range(0, 48, 16):
        tile = (band, slice(c, c + 16))
        # the two paths differ on every tile of the band (so the test can see
        # which one ran), and the launcher took the exact one on each
        assert not torch.equal(exact[tile], fold[tile]), c
        assert torch.equal(auto[tile], exact[tile]), f"columns {c}..{c + 15}"
    rest = torch.cat([auto[:32], auto[48:]])
    assert torch.equal(rest, torch.cat([fold[:32], fold[48:]]))


# ------------------------------------------------------------- bad input ---
def _ones(*shape, dt=torch.float16):
    return torch.ones(*shape, dtype=dt, device=DEVICE)


def _bad(**change):
    args = dict(
        zip(
            ("x", "weight", "bias", "ln_weight", "ln_bias"),
            _inputs(8, 16, 8, torch.float16),
            strict=True,
        )
    )
    args.update(change)
    return args


@pytest.mark.parametrize(
    "change, error, message",
    [
        ({"x": _ones(8, 16, dt=torch.float64)}, TypeError, "x has dtype"),
        ({"x": _ones(8, 16, dt=torch.float32)}, TypeError, "prologue kernel"),
        ({"x": _ones(2, 8, 16)}, ValueError, "must be 2-D"),
        ({"x": _ones(8, 24)}, ValueError, "weight must be (N, 24)"),
        ({"weight": _ones(8, 16, dt=torch.bfloat16)}, TypeError, "weight is torch.bf"),
        ({"ln_weight": _ones(15)}, ValueError, "ln_weight must have shape (16,)"),
        ({"ln_bias": _ones(17)}, ValueError, "ln_bias must have shape (16,)"),
        ({"bias": _ones(9)}, ValueError, "bias must have shape (8,)"),
        ({"ln_weight": [1.0] * 16}, TypeError, "ln_weight must be a torch.Tensor"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_naming_the_argument(change, error, message):
    args = _bad(**change)
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        lf.layernorm_linear(*args.values(), config=SMALL)


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


@pytest.mark.parametrize("change, message", BAD_CONFIGS)
def test_a_config_the_kernel_cannot_compute_is_refused(change, message):
    args = _inputs(40, 64, 48, torch.float16)
    out = poison_(torch.empty(40, 48, dtype=torch.float16, device=DEVICE))
    config = {**SMALL, **change}
    with pytest.raises(ValueError, match=message):
        lf.layernorm_linear(*args, out=out, config=config)
    folded = lf.fold_layernorm(*args[1:])
    with pytest.raises(ValueError, match=message):
        lf.layernorm_linear_folded(args[0], folded, out=out, config=config)
    assert torch.isnan(out).all()  # refused before any launch


def test_non_contiguous_or_misaligned_tensors_are_refused_for_the_descriptors():
    x, weight, bias, gamma, beta = _inputs(8, 16, 8, torch.float16)
    folded = lf.fold_layernorm(weight, bias, gamma, beta)
    wide = torch.zeros(8, 32, dtype=torch.float16, device=DEVICE)
    with pytest.raises(ValueError, match="x must be contiguous"):
        lf.layernorm_linear_folded(wide[:, :16], folded, config=SMALL)
    flat = torch.zeros(8 * 16 + 1, dtype=torch.float16, device=DEVICE)
    with pytest.raises(ValueError, match="x must start on a 16-byte boundary"):
        lf.layernorm_linear_folded(flat[1:].view(8, 16), folded, config=SMALL)
    odd = _inputs(8, 12, 8, torch.float16)  # rows of 24 bytes
    with pytest.raises(ValueError, match="use layernorm_linear.py's prologue"):
        lf.layernorm_linear(*odd, config=SMALL)
    with pytest.raises(ValueError, match="out must be"):
        lf.layernorm_linear_folded(x, folded, out=torch.empty(8, 9, dtype=x.dtype))


def test_out_sharing_memory_with_an_input_is_refused(seeded):
    # out would be read as x (or W') by programs after others had written it
    x, weight, bias, gamma, beta = _inputs(48, 48, 48, torch.float16)
    folded = lf.fold_layernorm(weight, bias, gamma, beta)
    with pytest.raises(ValueError, match="out must not share memory with x"):
        lf.layernorm_linear_folded(x, folded, out=x, config=SMALL)
    with pytest.raises(ValueError, match="out must not share memory with weight"):
        lf.layernorm_linear_folded(x, folded, out=folded.weight, config=SMALL)
    with pytest.raises(ValueError, match="out must not share memory with x"):
        lf.layernorm_linear(x, weight, bias, gamma, beta, out=x, config=SMALL)


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("colsum", lambda f: f.colsum[:-1], "folded colsum must be float32 of shape"),
        ("bias", lambda f: f.bias.half(), "folded bias must be float32 of shape"),
        ("bias", lambda f: f.bias.repeat(2)[::2], "folded bias must be contiguous"),
        ("colsum", lambda f: f.colsum.to("meta"), "folded colsum is on meta"),
    ],
    ids=["short", "dtype", "strided", "device"],
)
def test_a_bad_folded_layer_is_refused(field, value, message):
    # a FoldedLinear built or changed by hand: its float32 vectors are read
    # as (N,) float32, dense, on x's device
    x, *weights = _inputs(8, 16, 8, torch.float16)
    folded = lf.fold_layernorm(*weights)
    bad = folded._replace(**{field: value(folded)})
    with pytest.raises(ValueError, match=message):
        lf.layernorm_linear_folded(x, bad, config=SMALL)


def test_a_cpu_tensor_without_the_interpreter_is_refused(monkeypatch):
    monkeypatch.setattr(lf, "_INTERPRETING", False)  # imported without it
    cpu = [a.cpu() for a in _inputs(4, 16, 8, torch.float16)]
    with pytest.raises(ValueError, match="move it to a CUDA GPU"):
        lf.layernorm_linear(*cpu)


def test_the_benchmark_times_the_folded_call_against_the_same_layer(seeded):
    # the runner calls every contender with make_inputs' tuple: the Triton
    # entry uses the copy folded there, the peers the raw weights
    size = {"tokens": 40, "hidden": 64, "out_features": 48}
    inputs = lf.BENCHMARK["make_inputs"](size, torch.float16, DEVICE)
    assert isinstance(inputs[5], lf.FoldedLinear)
    expected = _expected(list(inputs[:5]))
    got = lf.BENCHMARK["triton"](*inputs)
    _assert_close_to_pytorch(got, list(inputs[:5]))
    eager = lf.BENCHMARK["peers"]["PyTorch eager"](*inputs)
    torch.testing.assert_close(eager.double(), expected, atol=2e-2, rtol=2e-2)
    assert lf.BENCHMARK["peers"]["cuBLAS (Linear alone)"](*inputs).shape == got.shape


# ------------------------------------------------ the benchmark's peers ---
STATS_GIVEN = "Triton (statistics given)"
LIGER = "Liger LayerNorm + cuBLAS"
PEER_SIZE = {"tokens": 40, "hidden": 64, "out_features": 48}


def test_the_statistics_given_peer_is_the_full_calls_gemm_launch(seeded, monkeypatch):
    # the peer must time what the full call runs after its statistics pass,
    # no more and no less: the same launch on make_inputs' mean and rstd
    inputs = lf.BENCHMARK["make_inputs"](PEER_SIZE, torch.float16, DEVICE)
    full = lf.BENCHMARK["triton"](*inputs)
    passes, real_row_stats = [], lf.row_stats

    def counted(*args, **kwargs):
        passes.append(args[0].shape)
        return real_row_stats(*args, **kwargs)

    monkeypatch.setattr(lf, "row_stats", counted)
    given = lf.BENCHMARK["peers"][STATS_GIVEN](*inputs)
    assert passes == [], "the peer ran the statistics pass it must skip"
    assert torch.equal(given, full)  # bit for bit: one launch, one config
    lf.BENCHMARK["triton"](*inputs)
    assert passes == [(40, 64)], "the full call no longer runs the statistics pass"


def test_the_given_statistics_are_the_ones_used(seeded):
    # the GEMM reads the stats it is handed (not a pass of its own): other
    # statistics give another output, and the right ones the full call's
    x, *weights = _inputs(40, 64, 48, torch.float16)
    folded = lf.fold_layernorm(*weights)
    mean, rstd = lf.row_stats(x)
    full = lf.layernorm_linear_folded(x, folded, config=SMALL)
    given = lf.layernorm_linear_folded(x, folded, config=SMALL, stats=(mean, rstd))
    assert torch.equal(given, full)
    wrong = lf.layernorm_linear_folded(x, folded, config=SMALL, stats=(mean, 2 * rstd))
    assert not torch.equal(wrong, full)


def test_row_stats_are_each_rows_mean_and_inverse_std(seeded):
    x = _inputs(37, 40, 8, torch.float16)[0]
    mean, rstd = lf.row_stats(x, eps=1e-5)
    x64 = x.double()
    var = x64.var(dim=1, unbiased=False)
    assert mean.dtype == rstd.dtype == torch.float32 and mean.shape == (37,)
    torch.testing.assert_close(mean.double(), x64.mean(dim=1), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(rstd.double(), (var + 1e-5).rsqrt(), rtol=1e-5, atol=0)


@pytest.mark.parametrize(
    "bad, error, message",
    [
        (lambda s: s[0], TypeError, "stats must be (mean, rstd)"),
        (lambda s: (*s, s[0]), TypeError, "stats must be (mean, rstd)"),
        (lambda s: [s[0], s[1]], TypeError, "stats must be (mean, rstd)"),
        (lambda s: (s[0], s[1].tolist()), TypeError, "stats' rstd must be a torch"),
        (lambda s: (s[0][:-1], s[1]), ValueError, "mean must be float32 of shape (8,)"),
        (lambda s: (s[0], s[1].half()), ValueError, "stats' rstd must be float32"),
        (lambda s: (s[0].repeat(2)[::2], s[1]), ValueError, "mean must be contiguous"),
        (lambda s: (s[0], s[1].to("meta")), ValueError, "stats' rstd is on meta"),
    ],
    ids=["one", "three", "list", "not-a-tensor", "short", "dtype", "strided", "device"],
)  # fmt: skip
def test_bad_statistics_are_refused_before_any_launch(bad, error, message):
    x, *weights = _inputs(8, 16, 8, torch.float16)
    folded = lf.fold_layernorm(*weights)
    out = poison_(torch.empty(8, 8, dtype=torch.float16, device=DEVICE))
    pattern = message.replace("(", r"\(").replace(")", r"\)")
    with pytest.raises(error, match=pattern):
        lf.layernorm_linear_folded(
            x, folded, out=out, config=SMALL, stats=bad(lf.row_stats(x))
        )
    assert torch.isnan(out).all()


def test_out_sharing_memory_with_the_given_statistics_is_refused():
    # a float32 (M,) vector inside out's bytes would be overwritten mid-launch
    x, *weights = _inputs(8, 16, 8, torch.float16)
    folded = lf.fold_layernorm(*weights)
    out = torch.empty(8, 8, dtype=torch.float16, device=DEVICE)
    rstd = lf.row_stats(x)[1]
    inside = out.view(torch.float32).view(-1)[:8]
    with pytest.raises(ValueError, match="out must not share memory with mean"):
        lf.layernorm_linear_folded(
            x, folded, out=out, config=SMALL, stats=(inside, rstd)
        )


@pytest.mark.parametrize(
    "x, eps, error, message",
    [
        (_ones(4, 8, dt=torch.float32), 1e-5, TypeError, "x has dtype"),
        (_ones(4, 16)[:, ::2], 1e-5, ValueError, "rows must be contiguous"),
        (_ones(4, 0), 1e-5, ValueError, "no features"),
        (_ones(4, 8), 0.0, ValueError, "eps must be positive"),
    ],
    ids=["float32", "strided", "no-features", "eps"],
)  # fmt: skip
def test_row_stats_refuses_what_its_kernel_cannot_read(x, eps, error, message):
    with pytest.raises(error, match=message):
        lf.row_stats(x, eps=eps)


def test_the_liger_peer_without_liger_kernel_says_what_to_install(monkeypatch):
    # the runner records a peer that raises as absent, with this message, and
    # the page's directives on that peer then fail the build: no silent gap.
    # None in sys.modules stops the import even where liger-kernel is installed.
    for name in ("liger_kernel", "liger_kernel.ops", "liger_kernel.ops.layer_norm"):
        monkeypatch.setitem(sys.modules, name, None)
    inputs = lf.BENCHMARK["make_inputs"](PEER_SIZE, torch.float16, DEVICE)
    with pytest.raises(ImportError, match=r"needs liger-kernel 0\.8\.5"):
        lf.BENCHMARK["peers"][LIGER](*inputs)


@pytest.mark.gpu  # Liger-Kernel's kernels run on a GPU only
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("peer", [STATS_GIVEN, LIGER])
def test_the_new_peers_compute_layernorm_then_linear(peer, dtype, seeded):
    size = {"tokens": 1024, "hidden": 1024, "out_features": 512}
    inputs = lf.BENCHMARK["make_inputs"](size, dtype, DEVICE)
    got = lf.BENCHMARK["peers"][peer](*inputs)
    assert got.shape == (1024, 512) and got.dtype == dtype
    _assert_close_to_pytorch(got, list(inputs[:5]))


def test_the_configs_are_matmul_tmas_without_its_smallest_tile():
    # The comment above CONFIGS says where the list comes from: keep it true.
    def tiles(configs):
        return {
            (*(c.kwargs[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K")), c.num_warps,
             c.num_stages)
            for c in configs
        }  # fmt: skip

    tma = load_snippet("matmul_tma")
    assert tiles(tma.CONFIGS) - tiles(lf.CONFIGS) == {(64, 64, 64, 4, 4)}
    assert tiles(lf.CONFIGS) <= tiles(tma.CONFIGS)
