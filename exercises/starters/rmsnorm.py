"""Starter for "rmsnorm" (lesson 04): this kernel is correct, and slow. Make
it fast without changing what it computes, then check it:

    python -m triton_course.exercises check rmsnorm my_rmsnorm.py

y[i, :] = x[i, :] / sqrt(mean(x[i, :] ** 2) + eps) * w for a 2-D x of any
strides (float32, float16 or bfloat16), w of shape (n_cols,) in x's dtype,
any stride, and eps a Python float; y is a new contiguous tensor in x's
dtype, computed in float32. The solution: exercises/solutions/rmsnorm.py.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(
    x_ptr, w_ptr, y_ptr, n_cols, stride_row, stride_col, stride_w, eps,
):  # fmt: skip
    # one program per row, walking it one element at a time: a scalar load
    # and an addition per loop trip, twice (the sum of squares, then y)
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_row
    y_row = y_ptr + row * n_cols
    acc = 0.0
    for col in range(0, n_cols):
        x = tl.load(x_row + col * stride_col).to(tl.float32)
        acc += x * x
    inv = 1.0 / tl.sqrt(acc / n_cols + eps)
    for col in range(0, n_cols):
        x = tl.load(x_row + col * stride_col).to(tl.float32)
        w = tl.load(w_ptr + col * stride_w).to(tl.float32)
        tl.store(y_row + col, (x * inv * w).to(y_ptr.dtype.element_ty))


def rmsnorm(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    if x.ndim != 2 or w.shape != (x.shape[1],) or w.dtype != x.dtype:
        raise ValueError("x must be 2-D and w of shape (x.shape[1],), x's dtype")
    n_rows, n_cols = x.shape
    y = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    rmsnorm_kernel[(n_rows,)](
        x, w, y, n_cols, x.stride(0), x.stride(1), w.stride(0), eps
    )
    return y
