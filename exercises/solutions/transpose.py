"""Reference solution of "transpose": out[j, i] = x[i, j], read and written
in tiles so that both the loads and the stores are coalesced."""

import torch
import triton
import triton.language as tl


@triton.jit
def transpose_kernel(
    x_ptr,  # input, n_rows x n_cols, any strides
    out_ptr,  # output, n_cols x n_rows, contiguous
    n_rows, n_cols, stride_row, stride_col,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    # program (i, j) owns the tile of rows i * BLOCK_M ... and columns
    # j * BLOCK_N ... of x, which is the tile (j, i) of out
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    # int64 offsets: rows * stride may pass 2**31 - 1 elements
    src = rows.to(tl.int64)[:, None] * stride_row + cols[None, :] * stride_col
    tile = tl.load(x_ptr + src, mask=mask)  # lanes along a row of x
    # out[c, r] sits at c * n_rows + r: along the tile's columns of rows,
    # adjacent rows r are adjacent in out, so the store is coalesced too
    dst = cols.to(tl.int64)[None, :] * n_rows + rows[:, None]
    tl.store(out_ptr + dst, tile, mask=mask)


def transpose(x: torch.Tensor) -> torch.Tensor:
    if x.ndim != 2:
        raise ValueError("x must be a 2-D tensor")
    n_rows, n_cols = x.shape
    out = torch.empty((n_cols, n_rows), dtype=x.dtype, device=x.device)
    grid = (triton.cdiv(n_rows, 32), triton.cdiv(n_cols, 32))
    transpose_kernel[grid](
        x, out, n_rows, n_cols, x.stride(0), x.stride(1), BLOCK_M=32, BLOCK_N=32
    )
    return out
