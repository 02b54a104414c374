"""Reference solution of "silu_mul": y = silu(a) * b as one Triton kernel
forward and one backward, wired into autograd by a torch.autograd.Function."""

import torch
import triton
import triton.language as tl


@triton.jit
def _compute(x):
    # float64 stays float64 (gradcheck needs it); the rest compute in float32
    if x.dtype != tl.float64:
        x = x.to(tl.float32)
    return x


@triton.jit
def _silu_mul_fwd_kernel(a_ptr, b_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    # int64: in int32, pid * BLOCK_SIZE wraps round past 2**31 - 1 elements
    offsets = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    a = _compute(tl.load(a_ptr + offsets, mask=mask))
    b = _compute(tl.load(b_ptr + offsets, mask=mask))
    y = a * tl.sigmoid(a) * b
    tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _silu_mul_bwd_kernel(
    a_ptr, b_ptr, dy_ptr, da_ptr, db_ptr, n_elements, BLOCK_SIZE: tl.constexpr
):
    # int64: in int32, pid * BLOCK_SIZE wraps round past 2**31 - 1 elements
    offsets = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    a = _compute(tl.load(a_ptr + offsets, mask=mask))
    b = _compute(tl.load(b_ptr + offsets, mask=mask))
    dy = _compute(tl.load(dy_ptr + offsets, mask=mask))
    s = tl.sigmoid(a)
    # d silu(a) / da = s + a * s * (1 - s) = s * (1 + a * (1 - s))
    da = dy * b * s * (1 + a * (1 - s))
    db = dy * a * s
    tl.store(da_ptr + offsets, da.to(da_ptr.dtype.element_ty), mask=mask)
    tl.store(db_ptr + offsets, db.to(db_ptr.dtype.element_ty), mask=mask)


BLOCK_SIZE = 1024


def silu_mul_fwd(a, b):
    y = torch.empty_like(a)
    n = a.numel()
    grid = (triton.cdiv(n, BLOCK_SIZE),)
    _silu_mul_fwd_kernel[grid](a, b, y, n, BLOCK_SIZE=BLOCK_SIZE)
    return y


def silu_mul_bwd(a, b, dy):
    da, db = torch.empty_like(a), torch.empty_like(b)
    n = a.numel()
    grid = (triton.cdiv(n, BLOCK_SIZE),)
    _silu_mul_bwd_kernel[grid](a, b, dy, da, db, n, BLOCK_SIZE=BLOCK_SIZE)
    return da, db


class SiluMul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        # the kernels index memory as one flat run: make it one
        a, b = a.contiguous(), b.contiguous()
        ctx.save_for_backward(a, b)  # the backward needs both inputs
        return silu_mul_fwd(a, b)

    @staticmethod
    def backward(ctx, dy):
        a, b = ctx.saved_tensors
        # autograd's dy may be strided, even stride 0 (from y.sum())
        return silu_mul_bwd(a, b, dy.contiguous())


def silu_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
        raise ValueError("a and b must have the same shape, dtype and device")
    return SiluMul.apply(a, b)
