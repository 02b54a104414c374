"""Starter for "sliding_window_attention" (lesson 02): fill in the kernel and
the launch, then check it:

    python -m triton_course.exercises check sliding_window_attention my_swa.py

q, k, v: (batch, heads, seq_len, head_dim), float32 or float16, head_dim 16,
32 or 64, any strides. Query i sees the keys j with i - window < j <= i.
The solution: exercises/solutions/sliding_window_attention.py.
"""

import math

import torch
import triton
import triton.language as tl


@triton.jit
def swa_fwd_kernel(
    q_ptr, k_ptr, v_ptr, out_ptr,  # (batch, heads, seq_len, head_dim)
    stride_qb, stride_qh, stride_qn, stride_qd,
    stride_kb, stride_kh, stride_kn, stride_kd,
    stride_vb, stride_vh, stride_vn, stride_vd,
    n_heads, seq_len, window, scale,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    # TODO: this program's BLOCK_M queries of one (batch, head); a running
    # max m, a running sum and a float32 accumulator; a loop over the key
    # tiles from the first query's window start to the last query, masking
    # the scores outside each query's window with -inf (careful: a query that
    # has seen no key yet has m = -inf); then out = acc / sum, stored into
    # the contiguous out
    pass


def sliding_window_attention(q, k, v, window):
    batch, heads, seq_len, head_dim = q.shape
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    scale = 1.0 / math.sqrt(head_dim)
    # TODO: a grid of (query blocks, batch * heads), and the launch with
    # every stride of q, k and v
    raise NotImplementedError(f"launch swa_fwd_kernel (scale {scale})")
    return out
