"""Reference solution of "colsum": the sum over dim 0, with coalesced loads,
split over the rows so that enough programs run to fill the GPU."""

import torch
import triton
import triton.language as tl


@triton.jit
def colsum_kernel(
    x_ptr, part_ptr, n_rows, n_cols, stride_row, stride_col,
    ROWS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    # program (chunk, j) owns BLOCK_N adjacent columns (the lanes of a tile
    # row read adjacent elements: coalesced) of the ROWS rows from chunk *
    # ROWS on; one grid axis, whose size has no 65535 limit
    n_blocks = tl.cdiv(n_cols, BLOCK_N)
    chunk = tl.program_id(0) // n_blocks
    cols = ((tl.program_id(0) % n_blocks) * BLOCK_N + tl.arange(0, BLOCK_N)).to(
        tl.int64
    )
    col_mask = cols < n_cols
    first = chunk * ROWS
    rows = tl.arange(0, BLOCK_M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # ROWS is a multiple of BLOCK_M: no tile passes the chunk's end
    for start in range(first, tl.minimum(first + ROWS, n_rows), BLOCK_M):
        r = start + rows
        mask = (r[:, None] < n_rows) & col_mask[None, :]
        # int64 (cols too): either product may pass 2**31 - 1 elements
        offsets = r.to(tl.int64)[:, None] * stride_row + cols[None, :] * stride_col
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        acc += x.to(tl.float32)
    # one float32 partial sum per column for this chunk of rows
    tl.store(part_ptr + chunk * n_cols + cols, tl.sum(acc, axis=0), mask=col_mask)


@triton.jit
def colsum_finish_kernel(
    out_ptr, part_ptr, n_parts, n_cols, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr
):  # fmt: skip
    # the partial sums of BLOCK_N columns, BLOCK_P chunks per load (a loop of
    # one load per chunk would wait on memory latency once per chunk)
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < n_cols
    parts = tl.arange(0, BLOCK_P)
    acc = tl.zeros((BLOCK_P, BLOCK_N), dtype=tl.float32)
    for start in range(0, n_parts, BLOCK_P):
        p = start + parts
        mask = (p[:, None] < n_parts) & col_mask[None, :]
        acc += tl.load(part_ptr + p[:, None] * n_cols + cols[None, :], mask=mask,
                       other=0.0)  # fmt: skip
    total = tl.sum(acc, axis=0)  # added in float32, rounded once
    tl.store(out_ptr + cols, total.to(out_ptr.dtype.element_ty), mask=col_mask)


def colsum(x: torch.Tensor) -> torch.Tensor:
    if x.ndim != 2 or x.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        raise ValueError(f"x must be 2-D float32, float16 or bfloat16: {x.dtype}")
    n_rows, n_cols = x.shape
    out = torch.empty(n_cols, dtype=x.dtype, device=x.device)
    # 4096 columns / 128 are only 32 programs, for 132 SMs on an H100: chunks
    # of 512 rows make 32 x 32 of them at 16384 x 4096, each reading 256 KiB
    rows, block_n = 512, 128
    n_parts = triton.cdiv(n_rows, rows)
    part = torch.empty((n_parts, n_cols), dtype=torch.float32, device=x.device)
    grid = (triton.cdiv(n_cols, block_n) * n_parts,)
    colsum_kernel[grid](
        x, part, n_rows, n_cols, x.stride(0), x.stride(1),
        ROWS=rows, BLOCK_M=32, BLOCK_N=block_n,
    )  # fmt: skip
    colsum_finish_kernel[(triton.cdiv(n_cols, 64),)](
        out, part, n_parts, n_cols, BLOCK_P=32, BLOCK_N=64
    )
    return out
