"""Reference solution of "sliding_window_attention": causal attention in
which each query sees only the last `window` keys, one pass over the keys
with an online softmax, as in lesson 02's forward kernel."""

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
    # program (i, bh): queries i * BLOCK_M ... of head bh % n_heads of batch
    # element bh // n_heads; out is contiguous
    block = tl.program_id(0)
    b = tl.program_id(1) // n_heads
    h = tl.program_id(1) % n_heads
    rows = block * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    q_base = q_ptr + b.to(tl.int64) * stride_qb + h.to(tl.int64) * stride_qh
    k_base = k_ptr + b.to(tl.int64) * stride_kb + h.to(tl.int64) * stride_kh
    v_base = v_ptr + b.to(tl.int64) * stride_vb + h.to(tl.int64) * stride_vh
    q = tl.load(
        q_base + rows[:, None] * stride_qn + dims[None, :] * stride_qd,
        mask=rows[:, None] < seq_len,
        other=0.0,
    )
    m = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)  # running max
    total = tl.zeros((BLOCK_M,), dtype=tl.float32)  # running sum of exp
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    # the keys some query of this block sees: from its first query's window
    # start to its last query; tiles that no query sees are never loaded
    first = tl.maximum(block * BLOCK_M - window + 1, 0)
    last = tl.minimum((block + 1) * BLOCK_M, seq_len)
    for start in range(first // BLOCK_N * BLOCK_N, last, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        k = tl.load(
            k_base + cols[None, :] * stride_kn + dims[:, None] * stride_kd,
            mask=cols[None, :] < seq_len,
            other=0.0,
        )  # (HEAD_DIM, BLOCK_N): K transposed
        s = tl.dot(q, k, input_precision="ieee") * scale
        # query i sees key j when i - window < j <= i (so j < seq_len too)
        seen = (cols[None, :] <= rows[:, None]) & (
            cols[None, :] > rows[:, None] - window
        )
        s = tl.where(seen, s, -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        # a row that has seen no key yet keeps m = -inf: shift by 0 instead,
        # since exp(-inf - (-inf)) would be NaN
        shift = tl.where(m_new == -float("inf"), 0.0, m_new)
        p = tl.exp(s - shift[:, None])
        alpha = tl.exp(m - shift)  # rescales what was summed with the old max
        total = total * alpha + tl.sum(p, axis=1)
        v = tl.load(
            v_base + cols[:, None] * stride_vn + dims[None, :] * stride_vd,
            mask=cols[:, None] < seq_len,
            other=0.0,
        )
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc, input_precision="ieee")
        m = m_new
    out = acc / total[:, None]
    offsets = (tl.program_id(1).to(tl.int64) * seq_len + rows[:, None]) * HEAD_DIM
    tl.store(
        out_ptr + offsets + dims[None, :],
        out.to(out_ptr.dtype.element_ty),
        mask=rows[:, None] < seq_len,
    )


def sliding_window_attention(q, k, v, window):
    if q.ndim != 4 or q.shape != k.shape or q.shape != v.shape:
        raise ValueError("q, k and v must have one shape (batch, heads, seq, dim)")
    if window < 1:
        raise ValueError("window must be at least 1")
    batch, heads, seq_len, head_dim = q.shape
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    grid = (triton.cdiv(seq_len, 16), batch * heads)
    swa_fwd_kernel[grid](
        q, k, v, out,
        q.stride(0), q.stride(1), q.stride(2), q.stride(3),
        k.stride(0), k.stride(1), k.stride(2), k.stride(3),
        v.stride(0), v.stride(1), v.stride(2), v.stride(3),
        heads, seq_len, window, 1.0 / math.sqrt(head_dim),
        HEAD_DIM=head_dim, BLOCK_M=16, BLOCK_N=16,
    )  # fmt: skip
    return out
