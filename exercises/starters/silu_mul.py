"""Starter for "silu_mul" (lesson 03): fill in the two kernels and the
autograd.Function, then check it:

    python -m triton_course.exercises check silu_mul my_silu_mul.py

y = silu(a) * b, with s = sigmoid(a):
    da = dy * b * s * (1 + a * (1 - s)),    db = dy * a * s.
a and b: one shape and dtype (float32, float16, bfloat16, float64), any
strides; compute in float32, float64 in float64. The solution:
exercises/solutions/silu_mul.py.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _silu_mul_fwd_kernel(a_ptr, b_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    # TODO: offsets and mask, load a and b, compute in float32 (float64 stays
    # float64), store y in y's dtype
    pass


@triton.jit
def _silu_mul_bwd_kernel(
    a_ptr, b_ptr, dy_ptr, da_ptr, db_ptr, n_elements, BLOCK_SIZE: tl.constexpr
):
    # TODO: load a, b and dy; store da and db (formulas above)
    pass


class SiluMul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        # TODO: launch the forward kernel (on what memory layout?), save what
        # the backward needs with ctx.save_for_backward, return y
        raise NotImplementedError("SiluMul.forward")

    @staticmethod
    def backward(ctx, dy):
        # TODO: autograd's dy may be strided (stride 0 after y.sum()); launch
        # the backward kernel, return (da, db)
        raise NotImplementedError("SiluMul.backward")


def silu_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return SiluMul.apply(a, b)
