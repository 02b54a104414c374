"""Memory access patterns: the same bytes, read in a good or a bad order.

Two-dimensional offsets are built from two ``tl.arange`` blocks by
broadcasting. A copy whose lanes run along a row reads neighbouring addresses
(coalesced); one whose lanes walk down a column reads addresses a whole row
apart (strided). A transpose must do one of the two, unless a tile is turned
around on chip with ``tl.trans``.

Run it:  TRITON_INTERPRET=1 python snippets/memory_access.py   (CPU, interpreter)
         python snippets/memory_access.py                      (CUDA GPU)
"""

# --8<-- [start:imports]
import contextlib

import torch
import triton
import triton.language as tl

# --8<-- [end:imports]


# --8<-- [start:copy_tiles]
@triton.jit
def copy_tiles_kernel(
    x_ptr,  # input matrix, n_rows x n_cols, any strides
    out_ptr,  # output matrix, same shape
    n_rows,
    n_cols,
    stride_xr,  # elements between x[i, j] and x[i + 1, j]
    stride_xc,  # elements between x[i, j] and x[i, j + 1] (1 if row-major)
    stride_or,
    stride_oc,
    BLOCK_R: tl.constexpr,  # rows per tile
    BLOCK_C: tl.constexpr,  # columns per tile
):
    pid_r = tl.program_id(axis=0)  # which band of rows
    pid_c = tl.program_id(axis=1)  # which band of columns
    # int64 indices: rows * stride_xr passes 2**31 - 1 in a big matrix
    pid_r, pid_c = pid_r.to(tl.int64), pid_c.to(tl.int64)
    rows = pid_r * BLOCK_R + tl.arange(0, BLOCK_R)  # shape (BLOCK_R,)
    cols = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)  # shape (BLOCK_C,)
    # [:, None] makes a column, [None, :] a row; combined they broadcast to
    # a (BLOCK_R, BLOCK_C) grid of offsets, one per element of the tile.
    x_offsets = rows[:, None] * stride_xr + cols[None, :] * stride_xc
    o_offsets = rows[:, None] * stride_or + cols[None, :] * stride_oc
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    tile = tl.load(x_ptr + x_offsets, mask=mask)
    tl.store(out_ptr + o_offsets, tile, mask=mask)


# --8<-- [end:copy_tiles]


# --8<-- [start:copy_columns]
@triton.jit
def copy_columns_kernel(
    x_ptr,  # input matrix, n_rows x n_cols, any strides
    out_ptr,  # output matrix, same shape
    n_rows,
    stride_xr,
    stride_xc,
    stride_or,
    stride_oc,
    BLOCK_R: tl.constexpr,  # elements of one column per program
):
    col = tl.program_id(axis=0).to(tl.int64)  # each owns (part of) a column
    pid_r = tl.program_id(axis=1).to(tl.int64)  # int64, as in copy_tiles
    rows = pid_r * BLOCK_R + tl.arange(0, BLOCK_R)
    mask = rows < n_rows
    # neighbouring lanes are stride_xr elements apart: one row-length each
    column = tl.load(x_ptr + rows * stride_xr + col * stride_xc, mask=mask)
    tl.store(out_ptr + rows * stride_or + col * stride_oc, column, mask=mask)


# --8<-- [end:copy_columns]


# --8<-- [start:transpose]
@triton.jit
def transpose_naive_kernel(
    x_ptr,  # input, n_rows x n_cols, row-major with row stride stride_xr
    out_ptr,  # output, n_cols x n_rows, row-major with row stride stride_or
    n_cols,
    stride_xr,
    stride_or,
    BLOCK_C: tl.constexpr,
):
    row = tl.program_id(axis=0).to(tl.int64)  # int64, as in copy_tiles
    cols = tl.program_id(axis=1).to(tl.int64) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_xr + cols, mask=mask)  # along a row
    tl.store(out_ptr + cols * stride_or + row, x, mask=mask)  # down a column


@triton.jit
def transpose_tiled_kernel(
    x_ptr,  # input, n_rows x n_cols, row-major with row stride stride_xr
    out_ptr,  # output, n_cols x n_rows, row-major with row stride stride_or
    n_rows,
    n_cols,
    stride_xr,
    stride_or,
    BLOCK_R: tl.constexpr,
    BLOCK_C: tl.constexpr,
):
    pid_r = tl.program_id(axis=0).to(tl.int64)  # int64, as in copy_tiles
    pid_c = tl.program_id(axis=1).to(tl.int64)
    rows = pid_r * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    tile = tl.load(x_ptr + rows[:, None] * stride_xr + cols[None, :], mask=mask)
    # (BLOCK_R, BLOCK_C) -> (BLOCK_C, BLOCK_R), turned around on chip; now the
    # last axis runs along the output's rows, so the store is contiguous too
    flipped = tl.trans(tile)
    out_offsets = cols[:, None] * stride_or + rows[None, :]
    out_mask = (cols[:, None] < n_cols) & (rows[None, :] < n_rows)
    tl.store(out_ptr + out_offsets, flipped, mask=out_mask)


# --8<-- [end:transpose]


# --8<-- [start:launchers]
SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def copy_2d(x, out=None, order="rows", block=(32, 128)):
    """Copy the 2-D tensor ``x`` (any strides) into ``out`` (new, row-major).

    order="rows": tiles whose lanes run along rows (coalesced when x is
    row-major); order="columns": one program per column (strided reads).
    """
    _check_input(x)
    if order not in ("rows", "columns"):
        raise ValueError(f"order must be 'rows' or 'columns', got {order!r}")
    block_r, block_c = _check_block(block)
    out = _check_out(out, x.shape, x)
    n_rows, n_cols = x.shape
    if x.numel() == 0:
        return out
    strides = (*x.stride(), *out.stride())
    # CUDA allows 2**31 - 1 programs along grid axis 0 but 65535 along axis 1
    if order == "rows":
        if triton.cdiv(n_cols, block_c) > 65535:
            raise ValueError("too many column blocks for grid axis 1: raise block[1]")
        grid = (triton.cdiv(n_rows, block_r), triton.cdiv(n_cols, block_c))
        with _on(x.device):  # Triton launches on the current GPU, not on x's
            copy_tiles_kernel[grid](
                x, out, n_rows, n_cols, *strides, BLOCK_R=block_r, BLOCK_C=block_c
            )
    else:
        if triton.cdiv(n_rows, block_r) > 65535:
            raise ValueError("too many row blocks for grid axis 1: raise block[0]")
        grid = (n_cols, triton.cdiv(n_rows, block_r))
        with _on(x.device):
            copy_columns_kernel[grid](x, out, n_rows, *strides, BLOCK_R=block_r)
    return out


def transpose(x, out=None, method="tiled", block=(64, 64)):
    """Return x.T as a new row-major tensor; ``x`` must be row-major."""
    _check_input(x)
    if not x.is_contiguous():
        raise ValueError("transpose needs a contiguous (row-major) x")
    if method not in ("tiled", "naive"):
        raise ValueError(f"method must be 'tiled' or 'naive', got {method!r}")
    block_r, block_c = _check_block(block)
    n_rows, n_cols = x.shape
    out = _check_out(out, (n_cols, n_rows), x)
    if x.numel() == 0:
        return out
    if triton.cdiv(n_cols, block_c) > 65535:  # grid axis 1, both methods
        raise ValueError("too many column blocks for grid axis 1: raise block[1]")
    with _on(x.device):  # Triton launches on the current GPU, not on x's
        if method == "tiled":
            grid = (triton.cdiv(n_rows, block_r), triton.cdiv(n_cols, block_c))
            transpose_tiled_kernel[grid](
                x,
                out,
                n_rows,
                n_cols,
                x.stride(0),
                out.stride(0),
                BLOCK_R=block_r,
                BLOCK_C=block_c,
            )
        else:
            grid = (n_rows, triton.cdiv(n_cols, block_c))
            transpose_naive_kernel[grid](
                x, out, n_cols, x.stride(0), out.stride(0), BLOCK_C=block_c
            )
    return out


def _on(device):
    return (
        torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext()
    )


def _check_input(x):
    if not isinstance(x, torch.Tensor):
        raise TypeError("expected a torch.Tensor")
    if x.device.type != "cuda" and not _interpreting():
        raise ValueError(
            f"x is on {x.device}: move it to a CUDA GPU, or set "
            "TRITON_INTERPRET=1 to run the kernel on the CPU"
        )
    if x.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"unsupported dtype {x.dtype}; use one of {SUPPORTED_DTYPES}")
    if x.dim() != 2:
        raise ValueError(f"x must be 2-D, got shape {tuple(x.shape)}")


def _check_block(block):
    block_r, block_c = block
    for b in (block_r, block_c):
        if not isinstance(b, int) or b <= 0 or b & (b - 1):
            raise ValueError(f"block sizes must be powers of two, got {block}")
    return block_r, block_c


def _check_out(out, shape, x):
    if out is None:
        return torch.empty(shape, dtype=x.dtype, device=x.device)
    same_kind = out.dtype == x.dtype and out.device == x.device
    if tuple(out.shape) != tuple(shape) or not same_kind:
        raise ValueError(f"out must have shape {tuple(shape)}, x's dtype and device")
    if not out.is_contiguous():
        raise ValueError("out must be contiguous")
    if _overlaps(out, x):
        # Programs would read elements of x that other programs have already
        # overwritten: the result would depend on the order they run in.
        raise ValueError("out must not share memory with x: pass a new tensor")
    return out


def _overlaps(a, b) -> bool:
    # whether the bytes a and b can touch intersect (strides are never negative)
    if a.numel() == 0 or b.numel() == 0 or a.device != b.device:
        return False

    def span(t):
        last = sum((n - 1) * s for n, s in zip(t.shape, t.stride(), strict=True))
        return t.data_ptr(), t.data_ptr() + (last + 1) * t.element_size()

    (a0, a1), (b0, b1) = span(a), span(b)
    return a0 < b1 and b0 < a1


# Triton picks the interpreter when @triton.jit decorates a kernel, at import,
# from triton.knobs (TRITON_INTERPRET = 1, true, on, yes or y, any case). Read
# the knob once, at import too, so launchers and kernels agree; a plain bool
# also traces under torch.compile, which cannot call the knob (C++).
_INTERPRETING = triton.knobs.runtime.interpret


def _interpreting() -> bool:
    return _INTERPRETING


# --8<-- [end:launchers]


# --8<-- [start:reference]
def copy_2d_ref(x):
    """A row-major copy in PyTorch: the reference and the eager peer."""
    return x.clone(memory_format=torch.contiguous_format)


def transpose_ref(x):
    """x.T materialised row-major: PyTorch's own transpose-copy kernel."""
    return x.t().contiguous()


# --8<-- [end:reference]


# --8<-- [start:benchmark]
def _bench_inputs(size: dict, dtype: torch.dtype, device: str):
    return (torch.randn(size["rows"], size["cols"], dtype=dtype, device=device),)


def _bench_bytes(size: dict, dtype: torch.dtype) -> int:
    # every element read once and written once:
    # GB/s = 2 * rows * cols * itemsize / seconds / 1e9
    itemsize = torch.empty((), dtype=dtype).element_size()
    return 2 * size["rows"] * size["cols"] * itemsize


def _copy_down_columns(x):
    return copy_2d(x, order="columns", block=(256, 1))


def _transpose_naive(x):
    return transpose(x, method="naive", block=(1, 1024))


_SIZES = [
    {"rows": 1024, "cols": 1024},
    {"rows": 4096, "cols": 4096},
    {"rows": 16384, "cols": 8192},
]

BENCHMARKS = [
    {
        "name": "copy_2d",
        "title": "2-D copy: lanes along rows (Triton) vs down columns",
        "params": ["rows", "cols"],
        "sizes": _SIZES,
        "dtypes": ["float32"],
        "metric": "bandwidth",
        "work": _bench_bytes,
        "make_inputs": _bench_inputs,
        "triton": copy_2d,  # order="rows"
        "peers": {
            "PyTorch eager": copy_2d_ref,
            "Triton (down columns)": _copy_down_columns,
        },
    },
    {
        "name": "transpose_2d",
        "title": "Transpose: tiles turned on chip (Triton) vs strided writes",
        "params": ["rows", "cols"],
        "sizes": _SIZES,
        "dtypes": ["float32"],
        "metric": "bandwidth",
        "work": _bench_bytes,
        "make_inputs": _bench_inputs,
        "triton": transpose,  # method="tiled"
        "peers": {
            "PyTorch eager": transpose_ref,
            "Triton (naive)": _transpose_naive,
        },
    },
]
# --8<-- [end:benchmark]


# --8<-- [start:main]
def main():
    device = "cuda" if torch.cuda.is_available() and not _interpreting() else "cpu"
    torch.manual_seed(0)
    for shape in ((1, 1), (7, 300), (200, 129)):
        x = torch.randn(shape, device=device)
        for order in ("rows", "columns"):
            assert torch.equal(copy_2d(x, order=order), copy_2d_ref(x))
        for method in ("tiled", "naive"):
            assert torch.equal(transpose(x, method=method), transpose_ref(x))
        print(f"{shape}: copies and transposes match PyTorch on {device}")
    if device == "cuda":
        x = torch.randn(8192, 8192, device=device)
        n_bytes = _bench_bytes({"rows": 8192, "cols": 8192}, x.dtype)
        runs = {
            "copy, rows": lambda: copy_2d(x),
            "copy, columns": lambda: _copy_down_columns(x),
            "transpose, tiled": lambda: transpose(x),
            "transpose, naive": lambda: _transpose_naive(x),
        }
        for name, fn in runs.items():
            ms = triton.testing.do_bench(fn, return_mode="median")
            print(f"{name:>17}: {ms:.3f} ms, {n_bytes / ms / 1e6:.0f} GB/s")


if __name__ == "__main__":
    main()
# --8<-- [end:main]
