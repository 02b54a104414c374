"""snippets/memory_access.py: 2-D copies (rows / columns) and transposes."""

import pytest
import torch
from conftest import DEVICE, gpu_memory, load_snippet, poison_

ma = load_snippet("memory_access")

SHAPES = [(1, 1), (1, 7), (7, 1), (33, 129)]
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# every shape in float32, the half-precision dtypes on the awkward shape only
CASES = [(s, torch.float32) for s in SHAPES] + [((33, 129), d) for d in DTYPES[1:]]


def _x(shape, dtype):
    return torch.randn(shape, device=DEVICE).to(dtype)


@pytest.mark.parametrize("shape, dtype", CASES, ids=str)
@pytest.mark.parametrize("order", ["rows", "columns"])
def test_copy_is_exact(order, shape, dtype, seeded):
    x = _x(shape, dtype)
    out = poison_(torch.empty_like(x))
    assert ma.copy_2d(x, out=out, order=order, block=(16, 32)) is out
    assert torch.equal(out, ma.copy_2d_ref(x))


@pytest.mark.parametrize("order", ["rows", "columns"])
def test_copy_of_a_strided_view(order, seeded):
    # the kernels take both strides: a transposed view is copied row-major,
    # which makes the copy a transpose
    base = torch.randn(40, 70, device=DEVICE)
    for view in (base.t(), base[::3, 1::2]):
        out = ma.copy_2d(view, order=order, block=(16, 16))
        assert out.is_contiguous()
        assert torch.equal(out, view.contiguous())


@pytest.mark.parametrize("shape, dtype", CASES, ids=str)
@pytest.mark.parametrize("method", ["tiled", "naive"])
def test_transpose_is_exact(method, shape, dtype, seeded):
    x = _x(shape, dtype)
    out = poison_(torch.empty(shape[::-1], dtype=dtype, device=DEVICE))
    assert ma.transpose(x, out=out, method=method, block=(16, 32)) is out
    assert torch.equal(out, ma.transpose_ref(x))


@pytest.mark.parametrize("block", [(4, 8), (8, 64), (128, 16)], ids=str)
def test_block_shapes(block, seeded):
    x = _x((50, 90), torch.float32)
    assert torch.equal(ma.copy_2d(x, block=block), x)
    assert torch.equal(ma.transpose(x, block=block), x.t())


def test_does_not_write_past_the_end(seeded):
    x = _x((30, 50), torch.float32)
    for fn in (
        lambda out: ma.copy_2d(x, out=out, block=(16, 64)),
        lambda out: ma.copy_2d(x, out=out, order="columns", block=(16, 1)),
        lambda out: ma.transpose(x, out=out.view(50, 30), block=(16, 64)),
        lambda out: ma.transpose(x, out=out.view(50, 30), method="naive"),
    ):
        buffer = poison_(torch.empty(1500 + 64, device=DEVICE))
        fn(buffer[:1500].view(30, 50))
        assert torch.isnan(buffer[1500:]).all()
        assert not torch.isnan(buffer[:1500]).any()


def test_empty():
    x = torch.empty(0, 5, device=DEVICE)
    assert ma.copy_2d(x).shape == (0, 5)
    assert ma.transpose(x).shape == (5, 0)


def test_benchmark_descriptions_are_complete():
    assert [b["name"] for b in ma.BENCHMARKS] == ["copy_2d", "transpose_2d"]
    size = {"rows": 3, "cols": 5}
    for bench in ma.BENCHMARKS:
        assert list(bench["peers"])[0] == "PyTorch eager"
        assert bench["work"](size, torch.float32) == 2 * 15 * 4
        (x,) = bench["make_inputs"]({"rows": 9, "cols": 20}, torch.float32, DEVICE)
        expected = bench["triton"](x)
        for peer in bench["peers"].values():
            assert torch.equal(peer(x), expected)


# ------------------------------------------------------------ bad input ---
@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: ma.copy_2d([[1.0]]), TypeError, "torch.Tensor"),
        (lambda: ma.copy_2d(torch.ones(2, 2, dtype=torch.int32)), TypeError, "dtype"),
        (lambda: ma.copy_2d(torch.ones(2, 2, 2)), ValueError, "2-D"),
        (lambda: ma.copy_2d(torch.ones(2, 2), order="diag"), ValueError, "order"),
        (lambda: ma.copy_2d(torch.ones(2, 2), block=(3, 4)), ValueError, "powers"),
        (
            lambda: ma.copy_2d(torch.ones(2, 2), out=torch.empty(2, 3)),
            ValueError,
            "out must have shape",
        ),
        (
            lambda: ma.copy_2d(torch.ones(2, 2), out=torch.empty(2, 2).t()),
            ValueError,
            "contiguous",
        ),
        (lambda: ma.transpose(torch.ones(2, 3).t()), ValueError, "contiguous"),
        (lambda: ma.transpose(torch.ones(2, 2), method="x"), ValueError, "method"),
        (
            lambda: ma.transpose(torch.ones(2, 3), out=torch.empty(2, 3)),
            ValueError,
            r"shape \(3, 2\)",
        ),
    ],
    ids=[
        "not-tensor",
        "int32",
        "3-D",
        "order",
        "block",
        "out-shape",
        "out-strided",
        "transpose-strided",
        "method",
        "transpose-out",
    ],
)
def test_bad_input_is_rejected(call, error, message, monkeypatch):
    # the calls build CPU tensors: on a GPU machine, let the interpreter
    # check stand aside so that each case meets its own check
    monkeypatch.setattr(ma, "_interpreting", lambda: True)
    with pytest.raises(error, match=message):
        call()


def test_cpu_tensors_without_interpreter_are_rejected(monkeypatch):
    monkeypatch.setattr(ma, "_INTERPRETING", False)  # imported without it
    with pytest.raises(ValueError, match="TRITON_INTERPRET=1"):
        ma.copy_2d(torch.ones(2, 2))


# issue #28: a 65536 x 32832 float16 matrix (2**31 + 2**22 elements) faulted
# in copy_2d with int32 offsets; every kernel of the file is run on it
BIG = (65536, 32832)


@pytest.mark.gpu
@pytest.mark.parametrize("order", ["rows", "columns"])
def test_copy_past_2_31_elements(order):
    with gpu_memory(2 * BIG[0] * BIG[1] * 2):
        x = torch.randn(BIG, dtype=torch.float16, device="cuda")
        out = ma.copy_2d(x, out=poison_(torch.empty_like(x)), order=order)
        same = torch.equal(out, x)
        del x, out
    assert same


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["tiled", "naive"])
def test_transpose_past_2_31_elements(method):
    with gpu_memory(2 * BIG[0] * BIG[1] * 2):
        x = torch.randn(BIG, dtype=torch.float16, device="cuda")
        out = poison_(torch.empty(BIG[::-1], dtype=x.dtype, device="cuda"))
        ma.transpose(x, out=out, method=method)
        same = torch.equal(out, x.t())
        del x, out
    assert same


def test_an_out_sharing_memory_with_x_is_refused():
    # Programs would read elements of x that others had already overwritten.
    x = torch.randn(64, 64, device=DEVICE)
    for method in ("tiled", "naive"):
        with pytest.raises(ValueError, match="must not share memory with x"):
            ma.transpose(x, out=x, method=method)
    buf = torch.randn(65, 32, device=DEVICE)
    for order in ("rows", "columns"):
        with pytest.raises(ValueError, match="must not share memory with x"):
            ma.copy_2d(buf[:-1], out=buf[1:], order=order)
    # The check is by byte range: an out lying in the gaps of a strided x is
    # refused too, though no element of x is in it (cheap, and never wrong).
    wide = torch.randn(8, 64, device=DEVICE)
    with pytest.raises(ValueError, match="must not share memory with x"):
        ma.copy_2d(wide[:, :4], out=wide[1, 32:64].view(8, 4))
    # a separate out still works
    assert torch.equal(ma.copy_2d(buf[:-1]), buf[:-1])


@pytest.mark.parametrize(
    "call",
    [
        lambda: ma.copy_2d(torch.empty(1, 8_400_000, device="meta")),
        lambda: ma.transpose(torch.empty(2, 4_200_000, device="meta")),
        lambda: ma.transpose(torch.empty(2, 4_200_000, device="meta"), method="naive"),
    ],
    ids=["copy-rows", "transpose-tiled", "transpose-naive"],
)
def test_grid_axis_1_past_cudas_limit_is_refused(call, monkeypatch):
    # review 2026-11-27 l03-09: 65 625 column blocks of 128 (64) would fail in the
    # driver; every path says so itself (meta tensors: no memory needed)
    monkeypatch.setattr(ma, "_interpreting", lambda: True)
    with pytest.raises(ValueError, match="too many column blocks for grid axis 1"):
        call()


@pytest.mark.parametrize("order", ["rows", "columns"])
def test_the_launch_runs_on_the_inputs_device(order, monkeypatch):
    # review 2026-11-27 l03-03: Triton launches on the current GPU, not on x's
    seen = []
    real_on = ma._on
    monkeypatch.setattr(ma, "_on", lambda d: seen.append(d) or real_on(d))
    x = torch.randn(3, 5, device=DEVICE)
    assert torch.equal(ma.copy_2d(x, order=order), x)
    assert torch.equal(ma.transpose(x), x.t())
    assert seen == [x.device, x.device]


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_tensors_on_a_second_gpu_run_there():
    x = torch.randn(300, 500, device="cuda:1")
    with torch.cuda.device(0):
        copied, turned = ma.copy_2d(x, order="columns"), ma.transpose(x)
    torch.cuda.synchronize(1)
    assert torch.equal(copied, x) and torch.equal(turned, x.t())
