"""Flash attention, forward pass: softmax(Q K^T * scale) V without the N x N matrix.

Each program owns a block of query rows and walks over the keys and values in
tiles, keeping a running maximum, a running sum and an unnormalised output in
registers (the online softmax). Inputs are fp16 or bf16; the dot products run
on tensor cores with fp32 accumulation; nothing of size N x N touches memory.

Run it:  TRITON_INTERPRET=1 python snippets/flash_attention.py   (CPU, interpreter)
         python snippets/flash_attention.py                      (CUDA GPU)
"""

# --8<-- [start:imports]
import math
import os

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

# --8<-- [end:imports]


# --8<-- [start:kernel]
@triton.jit
def _attention_fwd_kernel(
    q_ptr,  # queries, (batch, heads, n_ctx, HEAD_DIM), contiguous
    k_ptr,  # keys, same shape
    v_ptr,  # values, same shape
    out_ptr,  # output, same shape and dtype
    n_ctx,  # sequence length
    qk_scale,  # 1/sqrt(HEAD_DIM) * log2(e): scores are kept in base 2
    HEAD_DIM: tl.constexpr,
    CAUSAL: tl.constexpr,  # query i sees keys 0..i only
    BLOCK_M: tl.constexpr,  # query rows per program
    BLOCK_N: tl.constexpr,  # keys per step of the loop
):
    pid_m = tl.program_id(axis=0)  # which block of query rows
    pid_bh = tl.program_id(axis=1)  # which (batch, head) pair
    head_offset = pid_bh.to(tl.int64) * n_ctx * HEAD_DIM
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = offs_m < n_ctx

    # The query tile is loaded once and stays in registers for the whole loop.
    q_ptrs = q_ptr + head_offset + offs_m[:, None] * HEAD_DIM + offs_d[None, :]
    q = tl.load(q_ptrs, mask=row_ok[:, None], other=0.0)

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)  # running row maximum
    l_i = tl.zeros([BLOCK_M], tl.float32)  # running sum of exp2(s - m_i)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)  # running sum of p @ v

    # With a causal mask, key blocks past this query block are all masked out.
    end = tl.minimum((pid_m + 1) * BLOCK_M, n_ctx) if CAUSAL else n_ctx
    for start_n in range(0, end, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        col_ok = offs_n < n_ctx
        kv_offsets = head_offset + offs_n[:, None] * HEAD_DIM + offs_d[None, :]
        k = tl.load(k_ptr + kv_offsets, mask=col_ok[:, None], other=0.0)
        v = tl.load(v_ptr + kv_offsets, mask=col_ok[:, None], other=0.0)

        s = tl.dot(q, tl.trans(k)) * qk_scale  # (BLOCK_M, BLOCK_N), fp32
        keep = col_ok[None, :]
        if CAUSAL:
            keep = keep & (offs_n[None, :] <= offs_m[:, None])
        s = tl.where(keep, s, float("-inf"))

        # Online softmax: rescale what was summed so far to the new maximum.
        # Key 0 is in the first block and never masked, so m_new is finite.
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)  # 0 on the first step (m_i = -inf)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new

    out = acc / l_i[:, None]
    out_ptrs = out_ptr + head_offset + offs_m[:, None] * HEAD_DIM + offs_d[None, :]
    tl.store(out_ptrs, out.to(out_ptr.dtype.element_ty), mask=row_ok[:, None])


# --8<-- [end:kernel]


# --8<-- [start:launcher]
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16)
HEAD_DIMS = (16, 32, 64, 128)


def default_config(head_dim: int) -> dict:
    """Tile sizes and launch options; the GPU runner times these."""
    if head_dim == 128:
        return {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 2}
    return {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 4, "num_stages": 3}


def flash_attention(q, k, v, causal=False, out=None, config=None):
    """softmax(q k^T / sqrt(d), causal mask optional) v, for (batch, heads, n, d)."""
    tensors = {"q": q, "k": k, "v": v}
    for name, t in tensors.items():
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor")
    if q.device.type != "cuda" and not _interpreting():
        raise ValueError(
            f"tensors are on {q.device}: move them to a CUDA GPU, or set "
            "TRITON_INTERPRET=1 to run the kernel on the CPU"
        )
    for name, t in tensors.items():
        if t.device != q.device:
            raise ValueError(f"{name} is on {t.device}, q on {q.device}")
        if t.dtype != q.dtype:
            raise TypeError(f"dtypes differ: {name} is {t.dtype}, q is {q.dtype}")
        if t.dim() != 4 or t.shape != q.shape:
            raise ValueError(
                f"q, k, v must share one shape (batch, heads, n_ctx, head_dim); "
                f"got {tuple(t.shape)} for {name}, {tuple(q.shape)} for q"
            )
        if not t.is_contiguous():
            raise ValueError(f"{name} must be contiguous (call .contiguous())")
    if q.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"unsupported dtype {q.dtype}; use one of {SUPPORTED_DTYPES}")
    batch, heads, n_ctx, head_dim = q.shape
    if head_dim not in HEAD_DIMS:
        raise ValueError(f"head_dim must be one of {HEAD_DIMS}, got {head_dim}")
    cfg = dict(default_config(head_dim), **(config or {}))
    for key in ("BLOCK_M", "BLOCK_N"):
        if cfg[key] < 16 or cfg[key] & (cfg[key] - 1):
            raise ValueError(f"{key} must be a power of two >= 16, got {cfg[key]}")
    if out is None:
        out = torch.empty_like(q)
    elif out.shape != q.shape or out.dtype != q.dtype or out.device != q.device:
        raise ValueError("out must match q in shape, dtype and device")
    elif not out.is_contiguous():
        raise ValueError("out must be contiguous")
    if q.numel() == 0:
        return out
    qk_scale = 1.0 / math.sqrt(head_dim) * math.log2(math.e)
    grid = (triton.cdiv(n_ctx, cfg["BLOCK_M"]), batch * heads)
    _attention_fwd_kernel[grid](
        q, k, v, out, n_ctx, qk_scale,
        HEAD_DIM=head_dim, CAUSAL=bool(causal),
        BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
        num_warps=cfg["num_warps"], num_stages=cfg["num_stages"],
    )  # fmt: skip
    return out


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET") == "1"


# --8<-- [end:launcher]


# --8<-- [start:reference]
def attention_eager(q, k, v, causal=False):
    """The textbook formula in PyTorch: materialises the n_ctx x n_ctx scores."""
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if causal:
        n = q.shape[-2]
        future = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def attention_ref(q, k, v, causal=False):
    """The reference for the tests: the same formula in float64."""
    return attention_eager(q.double(), k.double(), v.double(), causal)


def attention_sdpa(q, k, v, causal=False):
    """PyTorch's fused attention (flash / memory-efficient kernels on a GPU)."""
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


# --8<-- [end:reference]


# --8<-- [start:loss_scaling]
def fp16_gradient_survives(grad: float, scale: float) -> bool:
    """Does a gradient of this size survive a round trip through fp16 at `scale`?

    Mixed-precision training multiplies the loss by `scale` so that small
    gradients stay above fp16's smallest subnormal (about 6e-8), then divides
    the fp16 gradient by `scale` again in fp32 before the optimiser step.
    """
    scaled = torch.tensor(grad * scale, dtype=torch.float32).to(torch.float16)
    if not torch.isfinite(scaled):
        return False  # the scale was too large: overflow past 65504
    unscaled = scaled.float() / scale
    return bool(unscaled != 0) and abs(unscaled.item() - grad) <= 0.01 * abs(grad)


# --8<-- [end:loss_scaling]


# --8<-- [start:benchmark]
def _bench_inputs(size, dtype, device):
    shape = (size["batch"], size["heads"], size["n_ctx"], size["head_dim"])
    q, k, v = (torch.randn(shape, dtype=dtype, device=device) for _ in range(3))
    return q, k, v, bool(size["causal"])


def _bench_flops(size, dtype):
    # Two matmuls of 2*n*n*d FLOPs per head: TFLOP/s = 4*b*h*n^2*d / s / 1e12,
    # half of it when the causal mask skips the upper triangle.
    flops = 4 * size["batch"] * size["heads"] * size["n_ctx"] ** 2 * size["head_dim"]
    return flops // 2 if size["causal"] else flops


def _bench_bytes(size, dtype):
    # Compulsory traffic: Q, K, V read and O written once each (the roofline
    # plot's x position; re-reads of K and V that miss L2 come on top).
    itemsize = torch.empty((), dtype=dtype).element_size()
    return (
        4 * size["batch"] * size["heads"] * size["n_ctx"] * size["head_dim"] * itemsize
    )


BENCHMARK_SIZES = [
    {"batch": 16384 // n, "heads": 16, "n_ctx": n, "head_dim": d, "causal": c}
    for d in (64, 128)
    for c in (0, 1)
    for n in (2048, 8192)
]
BENCHMARK_DTYPES = ["float16", "bfloat16"]


def _roofline_report():
    """FLOPs and bytes of every row, for the roofline plot of lesson 01."""
    return {
        "roofline": [
            {**size, "dtype": name,
             "flops": _bench_flops(size, getattr(torch, name)),
             "bytes": _bench_bytes(size, getattr(torch, name))}
            for name in BENCHMARK_DTYPES
            for size in BENCHMARK_SIZES
        ]
    }  # fmt: skip


BENCHMARK = {
    "name": "flash_attention_fwd",
    "title": "Attention forward, softmax(QKᵀ/√d)V, 16 384 tokens per call",
    "params": ["batch", "heads", "n_ctx", "head_dim", "causal"],
    "sizes": BENCHMARK_SIZES,
    "dtypes": BENCHMARK_DTYPES,
    "metric": "compute",  # TFLOP/s, roofline = measured bf16 matmul rate
    "work": _bench_flops,
    "make_inputs": _bench_inputs,
    "triton": flash_attention,
    "peers": {"PyTorch eager": attention_eager, "SDPA": attention_sdpa},
    "report": _roofline_report,
}
# --8<-- [end:benchmark]


# --8<-- [start:main]
def main():
    device = "cuda" if torch.cuda.is_available() and not _interpreting() else "cpu"
    torch.manual_seed(0)
    for causal in (False, True):
        q, k, v = (torch.randn(2, 3, 100, 64, device=device).half() for _ in range(3))
        config = None if device == "cuda" else {"BLOCK_M": 32, "BLOCK_N": 32}
        out = flash_attention(q, k, v, causal=causal, config=config)
        expected = attention_ref(q, k, v, causal)
        torch.testing.assert_close(out.double(), expected, atol=2e-3, rtol=2e-3)
        print(f"causal={causal}: matches the float64 reference on {device}")
    if device == "cuda":
        q, k, v = (torch.randn(4, 16, 4096, 64, device=device).half() for _ in range(3))
        for name, fn in (("Triton", flash_attention), ("SDPA", attention_sdpa)):
            ms = triton.testing.do_bench(lambda fn=fn: fn(q, k, v))
            flops = _bench_flops(
                {"batch": 4, "heads": 16, "n_ctx": 4096, "head_dim": 64, "causal": 0},
                q.dtype,
            )
            print(f"{name:>6}: {ms:.3f} ms, {flops / ms / 1e9:.0f} TFLOP/s")


if __name__ == "__main__":
    main()
# --8<-- [end:main]
