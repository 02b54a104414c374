"""Reference solution of "colsum": the sum over dim 0, with coalesced loads."""

import torch
import triton
import triton.language as tl


@triton.jit
def colsum_kernel(
    x_ptr, out_ptr, n_rows, n_cols, stride_row, stride_col,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    # each program owns BLOCK_N adjacent columns and walks down all the rows:
    # the lanes of a tile row read adjacent elements (coalesced)
    cols = (tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    col_mask = cols < n_cols
    rows = tl.arange(0, BLOCK_M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for start in range(0, n_rows, BLOCK_M):
        r = start + rows
        mask = (r[:, None] < n_rows) & col_mask[None, :]
        # int64 (cols too): either product may pass 2**31 - 1 elements
        offsets = r.to(tl.int64)[:, None] * stride_row + cols[None, :] * stride_col
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        acc += x.to(tl.float32)
    total = tl.sum(acc, axis=0)  # (BLOCK_N,): one sum per column
    tl.store(out_ptr + cols, total.to(out_ptr.dtype.element_ty), mask=col_mask)


def colsum(x: torch.Tensor) -> torch.Tensor:
    if x.ndim != 2 or x.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        raise ValueError(f"x must be 2-D float32, float16 or bfloat16: {x.dtype}")
    n_rows, n_cols = x.shape
    out = torch.empty(n_cols, dtype=x.dtype, device=x.device)
    if n_cols:
        block_n = 64
        grid = (triton.cdiv(n_cols, block_n),)
        colsum_kernel[grid](
            x, out, n_rows, n_cols, x.stride(0), x.stride(1),
            BLOCK_M=32, BLOCK_N=block_n,
        )  # fmt: skip
    return out
