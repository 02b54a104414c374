"""Reference solution of "online_logsumexp": one pass over each row."""

import torch
import triton
import triton.language as tl


@triton.jit
def logsumexp_kernel(
    x_ptr, out_ptr, n_cols, row_stride, col_stride, BLOCK_SIZE: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)  # row * row_stride may pass 2**31
    # Running maximum m and sum s of exp(x - m), per lane. A lane that has seen
    # only -inf keeps m = -inf, and exp(-inf - -inf) would be NaN: shift by 0
    # instead there (its terms are exp(-inf) = 0 either way).
    m = tl.full((BLOCK_SIZE,), -float("inf"), dtype=tl.float32)
    s = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE).to(tl.int64)  # so is cols * col_stride
        x = tl.load(
            x_ptr + row * row_stride + cols * col_stride,
            mask=cols < n_cols,
            other=-float("inf"),
        )
        x = x.to(tl.float32)
        new_m = tl.maximum(m, x)
        shift = tl.where(new_m == -float("inf"), 0.0, new_m)
        s = s * tl.exp(m - shift) + tl.exp(x - shift)
        m = new_m
    # Combine the lanes: rescale every lane's sum to the row maximum (an all
    # -inf row sums to 0, and log(0) = -inf is its answer).
    row_max = tl.max(m, axis=0)
    shift = tl.where(row_max == -float("inf"), 0.0, row_max)
    total = tl.sum(s * tl.exp(m - shift), axis=0)
    tl.store(out_ptr + row, (shift + tl.log(total)).to(out_ptr.dtype.element_ty))


def logsumexp_rows(x: torch.Tensor, block_size: int = 1024) -> torch.Tensor:
    if x.ndim != 2:
        raise ValueError("x must be a 2-D tensor")
    rows, cols = x.shape
    out = torch.empty(rows, dtype=x.dtype, device=x.device)
    if rows:  # an empty row comes out as log(0) = -inf
        logsumexp_kernel[(rows,)](
            x, out, cols, x.stride(0), x.stride(1), BLOCK_SIZE=block_size
        )
    return out
