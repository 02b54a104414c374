"""snippets/optimization_steps.py: every step of the row-sum kernel gives the same
sums, on awkward shapes, dtypes and strides, and refuses bad input."""

import pytest
import torch
from conftest import DEVICE, TOLERANCES, assert_close, load_snippet, poison_

rs = load_snippet("optimization_steps")


def _config_dict(cfg) -> dict:
    return dict(cfg.kwargs, num_warps=cfg.num_warps, num_stages=cfg.num_stages)


# v3 runs one fixed configuration here (the interpreter cannot autotune); the
# autotuned launch is checked on the GPU by test_v3_autotuned_on_gpu.
def _v3_small_tile(x, out=None):
    return rs.rowsum_v3(
        x, out=out, config={"BLOCK_M": 4, "BLOCK_N": 16, "num_warps": 2}
    )


STEPS = {
    "v0": rs.rowsum_v0,
    "v1": rs.rowsum_v1,
    "v2": rs.rowsum_v2,
    "v3": _v3_small_tile,
}
# v0 walks a row one element at a time, which the interpreter does slowly:
# the shapes stay small, but cover 1, primes, and rows longer than a block.
SHAPES = [(1, 1), (7, 33), (3, 1000), (37, 5), (1, 1500)]
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def _check(out, x):
    # A sum of n terms accumulates rounding like a random walk: widen atol by sqrt(n).
    n_cols = max(1, x.shape[1])
    tol = TOLERANCES[out.dtype]
    assert_close(out, x.double().sum(dim=1), atol=tol["atol"] * n_cols**0.5)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("step", STEPS)
def test_matches_reference(step, shape, dtype, seeded):
    x = torch.randn(*shape, device=DEVICE).to(dtype)
    out = poison_(torch.empty(shape[0], dtype=dtype, device=DEVICE))
    result = STEPS[step](x, out=out)
    assert result is out
    assert not torch.isnan(out).any(), "a row sum was never written"
    _check(out, x)


@pytest.mark.parametrize("step", STEPS)
def test_empty_matrices(step):
    no_rows = torch.empty(0, 5, device=DEVICE)
    assert STEPS[step](no_rows).shape == (0,)
    no_cols = torch.empty(4, 0, device=DEVICE)
    assert torch.equal(STEPS[step](no_cols), torch.zeros(4, device=DEVICE))


@pytest.mark.parametrize("step", STEPS)
def test_strided_rows(step, seeded):
    # A slice of a wider matrix: rows are stride(0) = 50 apart, not n_cols.
    wide = torch.randn(9, 50, device=DEVICE)
    x = wide[:, 3:40]
    assert x.stride() == (50, 1)
    _check(STEPS[step](x), x)


@pytest.mark.parametrize("step", STEPS)
def test_edge_values(step):
    # Large magnitudes cancel exactly in any summation order (the GPU's tree
    # reduction adds in another order than a loop), infinities and NaN
    # propagate.
    x = torch.tensor(
        [[3e38, -3e38, 0.0], [float("inf"), 1.0, 2.0], [float("nan"), 0.0, 0.0]],
        device=DEVICE,
    )
    out = STEPS[step](x)
    assert out[0] == 0.0
    assert out[1] == float("inf")
    assert torch.isnan(out[2])


@pytest.mark.parametrize("step", STEPS)
def test_does_not_write_past_the_end(step, seeded):
    x = torch.randn(37, 5, device=DEVICE)
    buffer = poison_(torch.empty(37 + 64, device=DEVICE))
    STEPS[step](x, out=buffer[:37])
    assert torch.isnan(buffer[37:]).all()
    _check(buffer[:37], x)


@pytest.mark.parametrize(
    "config", rs.TUNING_CONFIGS, ids=lambda c: "m{BLOCK_M}n{BLOCK_N}".format(**c.kwargs)
)
def test_every_tuning_config_is_correct(config, seeded):
    # The autotuner may pick any of them, so each must give the right sums,
    # including when the tile is larger than the matrix.
    x = torch.randn(67, 300, device=DEVICE)
    _check(rs.rowsum_v3(x, config=_config_dict(config)), x)


def test_v2_block_choice_covers_long_rows(seeded):
    # v2 caps the tile width at 1024 columns: a longer row takes several trips.
    x = torch.randn(2, 2500, device=DEVICE)
    _check(rs.rowsum_v2(x), x)


def test_reference_sums_in_float32():
    x = torch.full((1, 4096), 1.0, dtype=torch.float16)
    # float16 cannot count past 2048 in steps of 1; float32 accumulation can.
    assert rs.rowsum_ref(x).item() == 4096.0


def test_benchmarks_are_well_formed():
    names = [b["name"] for b in rs.BENCHMARKS]
    assert names == [
        "rowsum_v0_naive",
        "rowsum_v1_blocked",
        "rowsum_v2_tiled",
        "rowsum_v3_tuned",
    ]
    for bench in rs.BENCHMARKS:
        assert list(bench["peers"])[0] == "PyTorch eager"
        for size in bench["sizes"]:
            assert set(size) == set(bench["params"])
            assert bench["work"](size, torch.float32) == 4 * (
                size["M"] * size["N"] + size["M"]
            )
    assert len(rs.TUNING_CONFIGS) <= 8
    # No report(): with the runner re-tuning per row, the autotuner's cache
    # holds only the last key; each row's own choice is stored with the row.
    assert all("report" not in bench for bench in rs.BENCHMARKS)


def test_runner_accepts_the_descriptions():
    from triton_course.runner import discovery

    benches, captures = discovery.static_names(rs.__file__)
    assert benches == [b["name"] for b in rs.BENCHMARKS]
    for desc in rs.BENCHMARKS:
        discovery.check_description(desc, "optimization_steps.py")
    discovery.check_captures(rs.CAPTURES, "optimization_steps.py")
    assert set(captures) == {"rowsum_compiler_report", "rowsum_v0_ncu", "rowsum_v2_ncu"}
    for name in ("rowsum_v0_ncu", "rowsum_v2_ncu"):
        spec = rs.CAPTURES[name]["ncu"]
        # the kernel regex must name a kernel of this file
        assert hasattr(rs, spec["kernel"] + "_kernel")
        assert spec["args"][0] == "--ncu"


# ------------------------------------------------------------ bad input ---
@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda: [[1.0, 2.0]], TypeError, "torch.Tensor"),
        (
            lambda: torch.ones(3, 3, dtype=torch.int32, device=DEVICE),
            TypeError,
            "dtype",
        ),
        (
            lambda: torch.ones(3, 3, dtype=torch.float64, device=DEVICE),
            TypeError,
            "dtype",
        ),
        (lambda: torch.ones(5, device=DEVICE), ValueError, "matrix"),
        (lambda: torch.ones(2, 3, 4, device=DEVICE), ValueError, "matrix"),
        (lambda: torch.ones(4, 6, device=DEVICE).t(), ValueError, "columns"),
    ],
    ids=["list", "int32", "float64", "vector", "3d", "transposed"],
)
def test_bad_input_is_rejected(step, make, error, message):
    with pytest.raises(error, match=message):
        STEPS[step](make())


@pytest.mark.parametrize("step", STEPS)
def test_bad_out_is_rejected(step):
    x = torch.ones(4, 3, device=DEVICE)
    with pytest.raises(ValueError, match="out must be a vector"):
        STEPS[step](x, out=torch.empty(5, device=DEVICE))
    with pytest.raises(ValueError, match="out must be a vector"):
        STEPS[step](x, out=torch.empty(4, dtype=torch.float16, device=DEVICE))
    with pytest.raises(ValueError, match="out must be contiguous"):
        STEPS[step](x, out=torch.empty(8, device=DEVICE)[::2])
    # an out inside x (its last column's memory): refused, not raced over
    buffer = torch.ones(4 * 3 + 4, device=DEVICE)
    with pytest.raises(ValueError, match="out must not overlap x"):
        STEPS[step](buffer[:12].view(4, 3), out=buffer[9:13])
    # right after x: no overlap, summed as usual
    total = STEPS[step](buffer[:12].view(4, 3), out=buffer[12:16])
    assert total.tolist() == [3.0] * 4


def test_cpu_tensors_without_interpreter_are_rejected(monkeypatch):
    monkeypatch.setattr(rs, "_INTERPRETING", False)  # imported without it
    with pytest.raises(ValueError, match="TRITON_INTERPRET=1"):
        rs.rowsum_v1(torch.ones(2, 2))


# ------------------------------------------------------------ GPU only ---
@pytest.mark.gpu
def test_v3_autotuned_on_gpu(seeded):
    for shape in [(1000, 333), (4096, 4096), (5, 70_000)]:
        x = torch.randn(*shape, device="cuda")
        _check(rs.rowsum_v3(x), x)
    assert rs.rowsum_tuned_kernel.best_config is not None


@pytest.mark.gpu
@pytest.mark.parametrize("step", ["v0", "v1", "v2"])
def test_ncu_target_launch_runs(step):
    rs.profile_one_launch(step)


@pytest.mark.gpu
def test_compiler_report_on_gpu():
    report = rs.compiler_report()
    assert report.splitlines()[0].split()[:3] == ["step", "num_warps", "registers"]
    assert len(report.splitlines()) == 4
