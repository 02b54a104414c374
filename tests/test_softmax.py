"""snippets/softmax.py: both kernels on awkward shapes, dtypes, edge values, strides,
and every input error."""

import pytest
import torch
from conftest import DEVICE, assert_close, load_snippet, poison_

sm = load_snippet("softmax")

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
LAUNCHERS = [sm.softmax, sm.softmax_rows]
LAUNCHER_IDS = ["row_per_program", "rows_per_program"]
INF = float("inf")


def expected(x: torch.Tensor) -> torch.Tensor:
    """torch.softmax in float64: the reference every result is compared with."""
    return torch.softmax(x.double(), dim=-1)


def run(launcher, x, **kw):
    """Launch into a poisoned output and check every element was written."""
    out = poison_(torch.empty(x.shape, dtype=x.dtype, device=x.device))
    result = launcher(x, out=out, **kw)
    assert result is out
    return out


# ------------------------------------------------------------- results ---
@pytest.mark.parametrize("launcher", LAUNCHERS, ids=LAUNCHER_IDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(
    "shape", [(1, 1), (1, 7), (7, 1000), (3, 3000), (33, 128), (130, 17)], ids=str
)
def test_matches_reference(launcher, shape, dtype, seeded):
    x = (3 * torch.randn(shape, device=DEVICE)).to(dtype)
    out = run(launcher, x)
    assert not torch.isnan(out).any(), "an element was never written"
    assert_close(out, expected(x))


@pytest.mark.parametrize("launcher", LAUNCHERS, ids=LAUNCHER_IDS)
def test_rows_sum_to_one(launcher, seeded):
    x = 10 * torch.randn(19, 777, device=DEVICE)
    out = run(launcher, x)
    torch.testing.assert_close(out.sum(dim=1), torch.ones(19, device=DEVICE))


@pytest.mark.parametrize("block_rows", [1, 2, 8, 64])
def test_every_block_of_rows_covers_every_row(block_rows, seeded):
    x = torch.randn(37, 100, device=DEVICE)  # 37: not a multiple of any above but 1
    out = run(sm.softmax_rows, x, block_rows=block_rows)
    assert_close(out, expected(x))


@pytest.mark.parametrize("launcher", LAUNCHERS, ids=LAUNCHER_IDS)
@pytest.mark.parametrize("shape", [(0, 5), (3, 0), (0, 0)], ids=str)
def test_empty_input(launcher, shape):
    x = torch.empty(shape, device=DEVICE)
    out = launcher(x)
    assert out.shape == x.shape
    assert torch.equal(out, torch.softmax(x, dim=-1))


def test_reference_and_unfused_version_agree_with_torch(seeded):
    x = torch.randn(5, 33, device=DEVICE)
    torch.testing.assert_close(sm.softmax_ref(x), torch.softmax(x, dim=-1))
    torch.testing.assert_close(sm.softmax_unfused(x), torch.softmax(x, dim=-1))
    half = x.half()
    assert sm.softmax_ref(half).dtype == torch.float16


# --------------------------------------------------------- edge values ---
@pytest.mark.parametrize("launcher", LAUNCHERS, ids=LAUNCHER_IDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_all_minus_inf_row_is_nan_like_torch(launcher, dtype, seeded):
    # torch.softmax of a row of -inf is a row of NaN (0 / 0); a row holding
    # one +inf is NaN too (inf - inf). The other rows must be unaffected.
    x = torch.randn(4, 50, device=DEVICE)
    x[1] = -INF
    x[2, 7] = INF
    x[3, :49] = -INF  # a single finite value: probability 1 there
    x = x.to(dtype)
    torch_result = torch.softmax(x.float(), dim=-1)
    assert torch.isnan(torch_result[1]).all() and torch.isnan(torch_result[2]).all()
    out = run(launcher, x)
    assert torch.isnan(out[1]).all() and torch.isnan(out[2]).all()
    assert_close(out, expected(x))  # NaN where torch has NaN, equal elsewhere
    assert out[3, 49] == 1 and (out[3, :49] == 0).all()


@pytest.mark.parametrize("launcher", LAUNCHERS, ids=LAUNCHER_IDS)
@pytest.mark.parametrize(
    "dtype, big",
    [(torch.float16, 1e4), (torch.bfloat16, 1e30), (torch.float32, 3e38)],
    ids=["float16", "bfloat16", "float32"],
)
def test_huge_magnitudes_do_not_overflow(launcher, dtype, big, seeded):
    # Without the max subtraction exp(1e4) is inf in any float format.
    x = (2 * torch.rand(6, 300, device=DEVICE) - 1) * big  # within the format's range
    x[0] = -big
    x[0, :3] = torch.tensor([-big, big, 0.0], device=DEVICE)
    x[1] = big  # a constant row: uniform
    x = x.to(dtype)
    out = run(launcher, x)
    assert not torch.isnan(out).any()
    assert_close(out, expected(x))
    assert out[0, 1] == 1
    assert_close(
        out[1], torch.full((300,), 1 / 300, dtype=torch.float64, device=DEVICE)
    )


# ------------------------------------------------------------ strides ---
@pytest.mark.parametrize("launcher", LAUNCHERS, ids=LAUNCHER_IDS)
def test_strided_rows_are_read_and_written_in_place(launcher, seeded):
    # x: every other row of a wider buffer (row stride 2 * 160, columns 0..99).
    base = torch.randn(40, 160, device=DEVICE)
    x = base[::2, :100]
    assert x.stride() == (320, 1)
    # out: a slice of a poisoned buffer; its padding columns must stay NaN.
    buffer = poison_(torch.empty(20, 128, device=DEVICE))
    out = buffer[:, :100]
    launcher(x, out=out)
    assert_close(out, expected(x))
    assert torch.isnan(buffer[:, 100:]).all(), "wrote past the end of a row"


@pytest.mark.parametrize("launcher", LAUNCHERS, ids=LAUNCHER_IDS)
def test_does_not_write_past_the_end(launcher, seeded):
    x = torch.randn(7, 1000, device=DEVICE)
    buffer = poison_(torch.empty(7 * 1000 + 4096, device=DEVICE))
    out = buffer[: 7 * 1000].view(7, 1000)
    launcher(x, out=out)
    assert torch.isnan(buffer[7 * 1000 :]).all()
    assert_close(out, expected(x))


@pytest.mark.parametrize("launcher", LAUNCHERS, ids=LAUNCHER_IDS)
def test_broadcast_rows_are_fine(launcher, seeded):
    x = torch.randn(1, 50, device=DEVICE).expand(6, 50)  # row stride 0
    out = launcher(x)
    assert out.is_contiguous()
    assert_close(out, expected(x))


# ----------------------------------------------------------- bad input ---
@pytest.mark.parametrize("launcher", LAUNCHERS, ids=LAUNCHER_IDS)
@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda: [[1.0, 2.0]], TypeError, "torch.Tensor"),
        (
            lambda: torch.randn(4, 8, device=DEVICE).double(),
            TypeError,
            "unsupported dtype",
        ),
        (
            lambda: torch.ones(4, 8, dtype=torch.int32, device=DEVICE),
            TypeError,
            "unsupported dtype",
        ),
        (lambda: torch.randn(8, device=DEVICE), ValueError, "2-D"),
        (lambda: torch.randn(2, 4, 8, device=DEVICE), ValueError, "2-D"),
        (lambda: torch.randn(8, 8, device=DEVICE)[:, ::2], ValueError, "stride 1"),
        (lambda: torch.randn(8, 8, device=DEVICE).t(), ValueError, "stride 1"),
        (
            lambda: torch.randn(1, sm.MAX_COLS + 1, device=DEVICE),
            ValueError,
            "online softmax",
        ),
    ],
    ids=["list", "float64", "int32", "1-D", "3-D", "col-stride", "transposed", "long"],
)
def test_bad_input_is_rejected(launcher, make, error, message):
    # Made on DEVICE directly: .to("cuda") would copy a strided view into a
    # contiguous tensor, and the stride checks would have nothing to reject.
    x = make()
    with pytest.raises(error, match=message):
        launcher(x)


@pytest.mark.parametrize("launcher", LAUNCHERS, ids=LAUNCHER_IDS)
def test_bad_out_is_rejected(launcher):
    x = torch.randn(4, 8, device=DEVICE)
    for wrong in (
        torch.empty(4, 9, device=DEVICE),
        torch.empty(4, 8, device=DEVICE, dtype=torch.float16),
    ):
        with pytest.raises(ValueError, match="out must match"):
            launcher(x, out=wrong)
    with pytest.raises(ValueError, match="out must have a contiguous last"):
        launcher(x, out=torch.empty(4, 16, device=DEVICE)[:, ::2])


@pytest.mark.parametrize("launcher", LAUNCHERS, ids=LAUNCHER_IDS)
def test_out_whose_rows_overlap_is_refused(launcher, seeded):
    # softmax review #2: an expanded out was filled with one row's softmax
    x = torch.randn(8, 100, device=DEVICE)
    with pytest.raises(ValueError, match="out's rows overlap"):
        launcher(x, out=torch.empty(1, 100, device=DEVICE).expand(8, 100))
    buffer = torch.empty(8 * 50 + 50, device=DEVICE)
    with pytest.raises(ValueError, match="out's rows overlap"):  # row stride 50
        launcher(x, out=buffer.as_strided((8, 100), (50, 1)))


@pytest.mark.parametrize("launcher", LAUNCHERS, ids=LAUNCHER_IDS)
def test_out_sharing_memory_with_x_is_refused(launcher, seeded):
    buffer = torch.randn(9, 100, device=DEVICE)
    x, out = buffer[:8], buffer[1:]  # out is x shifted down by one row
    with pytest.raises(ValueError, match="out shares memory with x"):
        launcher(x, out=out)


@pytest.mark.parametrize("launcher", LAUNCHERS, ids=LAUNCHER_IDS)
def test_out_is_x_works_in_place(launcher, seeded):
    base = torch.randn(20, 160, device=DEVICE)
    x = base[::2, :100]  # strided rows, written over in place
    want = expected(x)
    assert launcher(x, out=x) is x
    assert_close(x, want)


@pytest.mark.parametrize("block_rows", [0, 3, -2])
def test_bad_block_rows_is_rejected(block_rows):
    with pytest.raises(ValueError, match="power of two"):
        sm.softmax_rows(torch.randn(4, 8, device=DEVICE), block_rows=block_rows)


@pytest.mark.parametrize("launcher", LAUNCHERS, ids=LAUNCHER_IDS)
def test_cpu_tensors_without_interpreter_are_rejected(launcher, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with pytest.raises(ValueError, match="TRITON_INTERPRET=1"):
        launcher(torch.randn(4, 8))


# ----------------------------------------------------- launch choices ---
def test_num_warps_scale_with_the_block():
    assert sm._num_warps(256) == 1
    assert [sm._num_warps(2**k) for k in range(9, 16)] == [1, 2, 4, 8, 16, 16, 16]


# ----------------------------------------------------------- benchmark ---
def test_benchmark_descriptions_are_complete(seeded):
    names = [b["name"] for b in sm.BENCHMARKS]
    assert names == ["softmax_row", "softmax_rows"]
    for bench in sm.BENCHMARKS:
        assert bench["metric"] == "bandwidth"
        assert next(iter(bench["peers"])) == "PyTorch eager"
        assert bench["compile"] in bench["peers"]
        size = bench["sizes"][0]
        elements = size["n_rows"] * size["n_cols"]
        assert bench["work"](size, torch.float16) == 2 * 2 * elements  # read + write
        launch = bench["report"]()["launch"]
        assert set(launch) == {str(s["n_cols"]) for s in bench["sizes"]}
        # Every callable agrees on a small input built by make_inputs.
        (x,) = bench["make_inputs"]({"n_rows": 5, "n_cols": 300}, torch.float32, DEVICE)
        reference = expected(x)
        assert_close(bench["triton"](x), reference)
        for peer in bench["peers"].values():
            assert_close(peer(x), reference)
    n_cols = [s["n_cols"] for s in sm.BENCHMARKS[0]["sizes"]]
    assert min(n_cols) == 256 and max(n_cols) == 16_384 and 3000 in n_cols
