"""Flash attention, forward and backward: softmax(Q K^T / sqrt(d)) V, no N x N matrix.

Forward: each program owns a block of query rows and walks over the keys and
values in tiles, keeping a running maximum, a running sum and an unnormalised
output in registers (the online softmax). It also stores each row's
log-sum-exp, which is all the backward pass needs to rebuild any tile of the
attention weights.

Backward: one small kernel computes D = rowsum(dO * O); one kernel per block
of keys accumulates dK and dV over the queries; one kernel per block of
queries accumulates dQ over the keys. No atomics, so results are
deterministic. A torch.autograd.Function ties forward and backward together.

Inputs are fp16 or bf16 (fp32, tf32 and fp8 for the accuracy study); the dot
products run on tensor cores with fp32 accumulation.

Run it:  TRITON_INTERPRET=1 python snippets/flash_attention.py   (CPU, interpreter)
         python snippets/flash_attention.py                      (CUDA GPU)
"""

# --8<-- [start:imports]
import contextlib
import math

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

# --8<-- [end:imports]


# --8<-- [start:forward_kernel]
@triton.jit
def _forward_tiles(
    acc, l_i, m_i,  # the running state of the online softmax
    q, k_desc, v_desc,  # the query tile; TMA descriptors of this head's K and V
    offs_m, n_ctx, qk_scale,
    key_lo, key_hi,  # the key range this loop covers, in steps of BLOCK_N
    BLOCK_N: tl.constexpr,
    MASKED: tl.constexpr,  # False: every key in range is valid and visible
    CAUSAL: tl.constexpr, DOT_PRECISION: tl.constexpr, PV_FP16: tl.constexpr,
):  # fmt: skip
    for start_n in range(key_lo, key_hi, BLOCK_N):
        # The TMA copies whole tiles into shared memory; rows past n_ctx come
        # back as zeros, so the loads need no mask.
        k = k_desc.load([start_n, 0])
        v = v_desc.load([start_n, 0])

        s = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION)
        if MASKED:
            offs_n = start_n + tl.arange(0, BLOCK_N)
            keep = (offs_n < n_ctx)[None, :]  # a zero key still scores 0
            if CAUSAL:
                keep = keep & (offs_n[None, :] <= offs_m[:, None])
            s = tl.where(keep, s, float("-inf"))

        # Online softmax in base 2 (qk_scale = log2(e) / sqrt(HEAD_DIM)):
        # rescale what was summed so far to the new maximum.
        m_new = tl.maximum(m_i, tl.max(s, axis=1) * qk_scale)
        alpha = tl.exp2(m_i - m_new)  # 0 on the first tile (m_i = -inf)
        p = tl.exp2(s * qk_scale - m_new[:, None])  # one fused multiply-add
        l_i = l_i * alpha + tl.sum(p, axis=1)
        # Rescale, then add P @ V on the tensor cores. tl.dot(p, v, acc) and
        # acc * alpha + tl.dot(p, v) compile to the same code: the compiler
        # folds the add into the dot's accumulator either way.
        acc = acc * alpha[:, None]
        if PV_FP16:  # fp8 inputs: the weights keep fp16 precision in P @ V
            acc = tl.dot(p.to(tl.float16), v.to(tl.float16), acc)
        else:
            acc = tl.dot(p.to(v.dtype), v, acc, input_precision=DOT_PRECISION)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def _head_descriptor(
    ptr, head_offset, n_ctx, HEAD_DIM: tl.constexpr, ROWS: tl.constexpr
):
    # One head's n_ctx x HEAD_DIM matrix, read or written ROWS rows at a time.
    # The descriptor gives the TMA its bounds: it never goes past row n_ctx.
    return tl.make_tensor_descriptor(
        ptr + head_offset, shape=[n_ctx, HEAD_DIM], strides=[HEAD_DIM, 1],
        block_shape=[ROWS, HEAD_DIM],
    )  # fmt: skip


@triton.jit
def _attention_fwd_kernel(
    q_ptr, k_ptr, v_ptr,  # (batch, heads, n_ctx, HEAD_DIM), contiguous
    out_ptr,  # same shape (fp16 when the inputs are fp8)
    lse_ptr,  # (batch, heads, n_ctx) float32: log-sum-exp of each score row
    n_ctx,
    qk_scale,  # log2(e) / sqrt(HEAD_DIM)
    HEAD_DIM: tl.constexpr,
    CAUSAL: tl.constexpr,  # query i sees keys 0..i only
    BLOCK_M: tl.constexpr,  # query rows per program
    BLOCK_N: tl.constexpr,  # keys per step; divides BLOCK_M
    DOT_PRECISION: tl.constexpr,  # fp32 inputs: "ieee" or "tf32"
    PV_FP16: tl.constexpr,
):  # fmt: skip
    pid_m = tl.program_id(axis=0)  # which block of query rows
    pid_bh = tl.program_id(axis=1)  # which (batch, head) pair
    if CAUSAL:
        # Work grows with the block's row index; the GPU starts programs in
        # order of program_id, so start the longest first and leave the
        # short ones to fill the gaps at the end.
        pid_m = tl.num_programs(axis=0) - 1 - pid_m
    head_offset = pid_bh.to(tl.int64) * n_ctx * HEAD_DIM
    start_m = pid_m * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)

    q_desc = _head_descriptor(q_ptr, head_offset, n_ctx, HEAD_DIM, BLOCK_M)
    o_desc = _head_descriptor(out_ptr, head_offset, n_ctx, HEAD_DIM, BLOCK_M)
    k_desc = _head_descriptor(k_ptr, head_offset, n_ctx, HEAD_DIM, BLOCK_N)
    v_desc = _head_descriptor(v_ptr, head_offset, n_ctx, HEAD_DIM, BLOCK_N)

    # The query tile is loaded once and stays on chip for the whole loop.
    q = q_desc.load([start_m, 0])

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)  # running row maximum
    l_i = tl.zeros([BLOCK_M], tl.float32)  # running sum of exp2(s - m_i)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)  # running sum of p @ v

    if CAUSAL:
        # Keys left of this block are visible to every row: no mask. Then the
        # tiles on the diagonal, masked. Tiles right of it are never loaded.
        acc, l_i, m_i = _forward_tiles(
            acc, l_i, m_i, q, k_desc, v_desc, offs_m, n_ctx, qk_scale,
            0, start_m, BLOCK_N, False, True, DOT_PRECISION, PV_FP16,
        )  # fmt: skip
        diagonal_end = tl.minimum(start_m + BLOCK_M, n_ctx)
        acc, l_i, m_i = _forward_tiles(
            acc, l_i, m_i, q, k_desc, v_desc, offs_m, n_ctx, qk_scale,
            start_m, diagonal_end, BLOCK_N, True, True, DOT_PRECISION, PV_FP16,
        )  # fmt: skip
    else:
        # Whole tiles without a mask, then the ragged tail (if any) with one.
        full_end = (n_ctx // BLOCK_N) * BLOCK_N
        acc, l_i, m_i = _forward_tiles(
            acc, l_i, m_i, q, k_desc, v_desc, offs_m, n_ctx, qk_scale,
            0, full_end, BLOCK_N, False, False, DOT_PRECISION, PV_FP16,
        )  # fmt: skip
        acc, l_i, m_i = _forward_tiles(
            acc, l_i, m_i, q, k_desc, v_desc, offs_m, n_ctx, qk_scale,
            full_end, n_ctx, BLOCK_N, True, False, DOT_PRECISION, PV_FP16,
        )  # fmt: skip

    out = acc / l_i[:, None]
    o_desc.store([start_m, 0], out.to(out_ptr.dtype.element_ty))  # rows < n_ctx
    # log-sum-exp in natural units: (m + log2 l) * ln 2.
    lse = (m_i + tl.log2(l_i)) * 0.6931471805599453
    tl.store(lse_ptr + pid_bh.to(tl.int64) * n_ctx + offs_m, lse, mask=offs_m < n_ctx)


# --8<-- [end:forward_kernel]


# --8<-- [start:backward_kernels]
@triton.jit
def _attention_bwd_delta_kernel(
    out_ptr, dout_ptr, delta_ptr, n_rows,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
):  # fmt: skip
    # D_i = sum_d dO_id * O_id for every row of every head, in fp32.
    # int64: batch * heads * n_ctx rows of HEAD_DIM may pass 2**31 - 1 elements
    rows = tl.program_id(axis=0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    ok = rows < n_rows
    offsets = rows[:, None] * HEAD_DIM + tl.arange(0, HEAD_DIM)[None, :]
    o = tl.load(out_ptr + offsets, mask=ok[:, None], other=0.0).to(tl.float32)
    do = tl.load(dout_ptr + offsets, mask=ok[:, None], other=0.0).to(tl.float32)
    tl.store(delta_ptr + rows, tl.sum(o * do, axis=1), mask=ok)


@triton.jit
def _dkdv_tiles(
    dk, dv, k, v,  # this program's key block and its gradients so far
    q_ptr, do_ptr, lse_ptr, delta_ptr, head_offset, row_offset, offs_n,
    n_ctx, qk_scale, query_lo, query_hi,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
    MASKED: tl.constexpr, CAUSAL: tl.constexpr,
):  # fmt: skip
    offs_d = tl.arange(0, HEAD_DIM)
    for start_m in range(query_lo, query_hi, BLOCK_M):
        offs_m = start_m + tl.arange(0, BLOCK_M)
        rows = offs_m.to(tl.int64)[:, None] * HEAD_DIM  # int64, as head_offset
        row_offsets = head_offset + rows + offs_d[None, :]
        if MASKED:
            row_ok = offs_m < n_ctx
            q = tl.load(q_ptr + row_offsets, mask=row_ok[:, None], other=0.0)
            do = tl.load(do_ptr + row_offsets, mask=row_ok[:, None], other=0.0)
            lse = tl.load(lse_ptr + row_offset + offs_m, mask=row_ok, other=0.0)
            delta = tl.load(delta_ptr + row_offset + offs_m, mask=row_ok, other=0.0)
        else:
            q = tl.load(q_ptr + row_offsets)
            do = tl.load(do_ptr + row_offsets)
            lse = tl.load(lse_ptr + row_offset + offs_m)
            delta = tl.load(delta_ptr + row_offset + offs_m)
        # The attention weights, transposed (keys x queries), rebuilt from the
        # stored log-sum-exp: P = exp(S / sqrt(d) - lse), in base 2.
        s_t = tl.dot(k, tl.trans(q))
        p_t = tl.exp2(s_t * qk_scale - lse[None, :] * 1.4426950408889634)
        if MASKED:
            keep = row_ok[None, :]
            if CAUSAL:
                keep = keep & (offs_m[None, :] >= offs_n[:, None])
            p_t = tl.where(keep, p_t, 0.0)
        dv += tl.dot(p_t.to(do.dtype), do)  # dV = P^T dO
        dp_t = tl.dot(v, tl.trans(do))  # (dO V^T)^T
        ds_t = p_t * (dp_t - delta[None, :])  # dS = P * (dP - D)
        dk += tl.dot(ds_t.to(q.dtype), q)  # dK = dS^T Q (scaled at the end)
    return dk, dv


@triton.jit
def _attention_bwd_dkdv_kernel(
    q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr,
    n_ctx, qk_scale, sm_scale,
    HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr,
    BLOCK_M: tl.constexpr,  # queries per step; divides BLOCK_N
    BLOCK_N: tl.constexpr,  # keys per program
):  # fmt: skip
    pid_n = tl.program_id(axis=0)
    pid_bh = tl.program_id(axis=1)
    head_offset = pid_bh.to(tl.int64) * n_ctx * HEAD_DIM
    row_offset = pid_bh.to(tl.int64) * n_ctx
    start_n = pid_n * BLOCK_N
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    key_ok = offs_n < n_ctx
    # int64, as head_offset: one head may hold more than 2**31 - 1 elements
    keys = offs_n.to(tl.int64)[:, None] * HEAD_DIM
    kv_offsets = head_offset + keys + offs_d[None, :]
    k = tl.load(k_ptr + kv_offsets, mask=key_ok[:, None], other=0.0)
    v = tl.load(v_ptr + kv_offsets, mask=key_ok[:, None], other=0.0)
    dk = tl.zeros([BLOCK_N, HEAD_DIM], tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], tl.float32)

    if CAUSAL:
        # Only queries at or after this key block see it: first the queries on
        # the diagonal (masked), then every later query (no mask but the tail).
        diagonal_end = tl.minimum(start_n + BLOCK_N, n_ctx)
        dk, dv = _dkdv_tiles(
            dk, dv, k, v, q_ptr, do_ptr, lse_ptr, delta_ptr, head_offset,
            row_offset, offs_n, n_ctx, qk_scale, start_n, diagonal_end,
            HEAD_DIM, BLOCK_M, True, True,
        )  # fmt: skip
        first_full = start_n + BLOCK_N
    else:
        first_full = 0
    full_end = (n_ctx // BLOCK_M) * BLOCK_M
    dk, dv = _dkdv_tiles(
        dk, dv, k, v, q_ptr, do_ptr, lse_ptr, delta_ptr, head_offset, row_offset,
        offs_n, n_ctx, qk_scale, first_full, full_end, HEAD_DIM, BLOCK_M,
        False, CAUSAL,
    )  # fmt: skip
    dk, dv = _dkdv_tiles(
        dk, dv, k, v, q_ptr, do_ptr, lse_ptr, delta_ptr, head_offset, row_offset,
        offs_n, n_ctx, qk_scale, tl.maximum(first_full, full_end), n_ctx,
        HEAD_DIM, BLOCK_M, True, CAUSAL,
    )  # fmt: skip

    tl.store(dk_ptr + kv_offsets, (dk * sm_scale).to(dk_ptr.dtype.element_ty),
             mask=key_ok[:, None])  # fmt: skip
    tl.store(dv_ptr + kv_offsets, dv.to(dv_ptr.dtype.element_ty), mask=key_ok[:, None])


@triton.jit
def _dq_tiles(
    dq, q, do, lse, delta,  # this program's query block and its row statistics
    k_ptr, v_ptr, head_offset, offs_m, n_ctx, qk_scale, key_lo, key_hi,
    HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr,
    MASKED: tl.constexpr, CAUSAL: tl.constexpr,
):  # fmt: skip
    offs_d = tl.arange(0, HEAD_DIM)
    for start_n in range(key_lo, key_hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        keys = offs_n.to(tl.int64)[:, None] * HEAD_DIM  # int64, as head_offset
        kv_offsets = head_offset + keys + offs_d[None, :]
        if MASKED:
            key_ok = offs_n < n_ctx
            k = tl.load(k_ptr + kv_offsets, mask=key_ok[:, None], other=0.0)
            v = tl.load(v_ptr + kv_offsets, mask=key_ok[:, None], other=0.0)
        else:
            k = tl.load(k_ptr + kv_offsets)
            v = tl.load(v_ptr + kv_offsets)
        s = tl.dot(q, tl.trans(k))
        p = tl.exp2(s * qk_scale - lse[:, None])  # lse is in base 2 here
        if MASKED:
            keep = key_ok[None, :]
            if CAUSAL:
                keep = keep & (offs_n[None, :] <= offs_m[:, None])
            p = tl.where(keep, p, 0.0)
        dp = tl.dot(do, tl.trans(v))
        ds = p * (dp - delta[:, None])
        dq += tl.dot(ds.to(k.dtype), k)  # dQ = dS K (scaled at the end)
    return dq


@triton.jit
def _attention_bwd_dq_kernel(
    q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr,
    n_ctx, qk_scale, sm_scale,
    HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr,
    BLOCK_M: tl.constexpr,  # queries per program
    BLOCK_N: tl.constexpr,  # keys per step; divides BLOCK_M
):  # fmt: skip
    pid_m = tl.program_id(axis=0)
    pid_bh = tl.program_id(axis=1)
    head_offset = pid_bh.to(tl.int64) * n_ctx * HEAD_DIM
    row_offset = pid_bh.to(tl.int64) * n_ctx
    start_m = pid_m * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = offs_m < n_ctx
    rows = offs_m.to(tl.int64)[:, None] * HEAD_DIM  # int64, as head_offset
    row_offsets = head_offset + rows + offs_d[None, :]
    q = tl.load(q_ptr + row_offsets, mask=row_ok[:, None], other=0.0)
    do = tl.load(do_ptr + row_offsets, mask=row_ok[:, None], other=0.0)
    lse = tl.load(lse_ptr + row_offset + offs_m, mask=row_ok, other=0.0)
    lse = lse * 1.4426950408889634  # to base 2, once per row
    delta = tl.load(delta_ptr + row_offset + offs_m, mask=row_ok, other=0.0)
    dq = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)

    if CAUSAL:
        dq = _dq_tiles(
            dq, q, do, lse, delta, k_ptr, v_ptr, head_offset, offs_m, n_ctx,
            qk_scale, 0, start_m, HEAD_DIM, BLOCK_N, False, True,
        )  # fmt: skip
        dq = _dq_tiles(
            dq, q, do, lse, delta, k_ptr, v_ptr, head_offset, offs_m, n_ctx,
            qk_scale, start_m, tl.minimum(start_m + BLOCK_M, n_ctx),
            HEAD_DIM, BLOCK_N, True, True,
        )  # fmt: skip
    else:
        full_end = (n_ctx // BLOCK_N) * BLOCK_N
        dq = _dq_tiles(
            dq, q, do, lse, delta, k_ptr, v_ptr, head_offset, offs_m, n_ctx,
            qk_scale, 0, full_end, HEAD_DIM, BLOCK_N, False, False,
        )  # fmt: skip
        dq = _dq_tiles(
            dq, q, do, lse, delta, k_ptr, v_ptr, head_offset, offs_m, n_ctx,
            qk_scale, full_end, n_ctx, HEAD_DIM, BLOCK_N, True, False,
        )  # fmt: skip
    tl.store(dq_ptr + row_offsets, (dq * sm_scale).to(dq_ptr.dtype.element_ty),
             mask=row_ok[:, None])  # fmt: skip


# --8<-- [end:backward_kernels]


# --8<-- [start:launcher]
TRAINING_DTYPES = (torch.float16, torch.bfloat16)  # forward and backward
FP8_DTYPES = (torch.float8_e4m3fn, torch.float8_e5m2)  # forward only, fp16 output
FORWARD_DTYPES = (torch.float32, *TRAINING_DTYPES, *FP8_DTYPES)
HEAD_DIMS = (16, 32, 64, 128)


def default_config(
    direction: str = "forward",
    head_dim: int = 64,
    dtype=torch.float16,
    shared_kb: int = 227,
) -> dict:
    """Tile sizes and launch options for a GPU whose blocks may use `shared_kb`
    KB of shared memory: on an H100 (227 KB) the best of a small sweep at the
    benchmark's shapes (see the lesson); on smaller GPUs smaller tiles that
    fit there, checked by compiling for each GPU ("Which GPUs run these
    kernels"), neither timed nor the largest that would fit."""
    itemsize = torch.empty((), dtype=dtype).element_size()
    if direction == "forward":  # 8 warps: two warpgroups of 64 query rows each
        if itemsize == 4 and head_dim == 128:  # fp32 tiles: fit shared memory
            return {"BLOCK_M": 64, "BLOCK_N": 32, "num_warps": 4, "num_stages": 2}
        if itemsize <= 2 and head_dim == 128:
            # Shared memory per block these tiles need, as triton 3.9 compiles
            # them (tests/test_module_claims.py): 128 x 128, 3 stages: 160 KB
            # for sm_80 (A100, 163 KB allowed), 225 KB = 230 400 B for sm_90
            # (H100/H200, 227 KB allowed); 128 x 64, 2 stages: 64 KB for
            # sm_86/sm_89 (RTX 30xx/40xx, L4: 99 KB allowed).
            if shared_kb >= 163:
                return {"BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 8, "num_stages": 3}
            if shared_kb >= 99:
                return {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 2}
            return {"BLOCK_M": 64, "BLOCK_N": 32, "num_warps": 4, "num_stages": 2}
        if itemsize == 4 and shared_kb < 163:  # fp32, d <= 64: at most 64 KB
            return {"BLOCK_M": 128, "BLOCK_N": 32, "num_warps": 8, "num_stages": 2}
        return {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 3}
    if direction == "backward":
        # Each backward program holds BLOCK_HELD rows (keys in the dK/dV
        # kernel, queries in the dQ kernel) and steps over the other side
        # BLOCK_STEP rows at a time.
        if head_dim == 128 and shared_kb < 99:  # a T4's 64 KB
            return {"BLOCK_HELD": 32, "BLOCK_STEP": 32, "num_warps": 4, "num_stages": 2}
        return {"BLOCK_HELD": 64, "BLOCK_STEP": 64, "num_warps": 4, "num_stages": 2}
    raise ValueError(f"direction must be 'forward' or 'backward', got {direction!r}")


def device_limits(device: torch.device) -> dict:
    """The GPU holding the tensors: its name, compute capability and the
    shared memory (KB) one block may use. The interpreter has no GPU: it
    answers as an H100, the GPU the defaults were tuned on."""
    if device.type != "cuda":
        return {"name": "NVIDIA H100 (interpreter)", "capability": (9, 0),
                "shared_kb": 227}  # fmt: skip
    props = torch.cuda.get_device_properties(device)
    return {"name": props.name, "capability": (props.major, props.minor),
            "shared_kb": props.shared_memory_per_block_optin // 1024}  # fmt: skip


def _check_gpu(dtype, gpu: dict) -> None:
    """Refuse, with a sentence, what this GPU cannot compile."""
    major, minor = gpu["capability"]
    if dtype == torch.float8_e4m3fn and (major, minor) < (8, 9):
        raise TypeError(
            f"float8_e4m3fn needs compute capability 8.9 or newer (Ada, Hopper); "
            f"{gpu['name']} is {major}.{minor}. Use float8_e5m2, which compiles "
            "there, or float16 (lesson 02, mixed precision)."
        )


def _check_inputs(named: dict, allowed: tuple) -> torch.Tensor:
    """Validate q, k, v (and dO, O for the backward pass); return q."""
    for name, t in named.items():
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor")
    q = named["q"]
    if q.device.type != "cuda" and not _interpreting():
        raise ValueError(
            f"tensors are on {q.device}: move them to a CUDA GPU, or set "
            "TRITON_INTERPRET=1 to run the kernels on the CPU"
        )
    for name, t in named.items():
        if t.device != q.device:
            raise ValueError(f"{name} is on {t.device}, q on {q.device}")
        if t.dim() != 4 or t.shape != q.shape:
            raise ValueError(
                f"q, k, v must share one shape (batch, heads, n_ctx, head_dim); "
                f"got {tuple(t.shape)} for {name}, {tuple(q.shape)} for q"
            )
        if not t.is_contiguous():
            raise ValueError(f"{name} must be contiguous (call .contiguous())")
    for name in ("k", "v"):
        if named[name].dtype != q.dtype:
            raise TypeError(
                f"dtypes differ: {name} is {named[name].dtype}, q is {q.dtype}"
            )
    if q.dtype not in allowed:
        raise TypeError(f"unsupported dtype {q.dtype}; use one of {allowed}")
    if q.shape[-1] not in HEAD_DIMS:
        raise ValueError(f"head_dim must be one of {HEAD_DIMS}, got {q.shape[-1]}")
    return q


def _check_buffer(name, t, q, dtype, shape: str) -> None:
    """out and lse: written (or, for the backward, read) as dense rows."""
    want = q.shape if name == "out" else q.shape[:-1]
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor")
    if t.shape != want or t.dtype != dtype or t.device != q.device:
        raise ValueError(
            f"{name} must be {dtype} of {shape} {tuple(want)} on {q.device}; "
            f"got {t.dtype} of shape {tuple(t.shape)} on {t.device}"
        )
    if not t.is_contiguous():
        raise ValueError(f"{name} must be contiguous (call .contiguous())")


def _overlaps(a, b) -> bool:
    # whether two dense tensors' bytes intersect
    if a.numel() == 0 or b.numel() == 0 or a.device != b.device:
        return False
    a0, b0 = a.data_ptr(), b.data_ptr()
    a1, b1 = a0 + a.numel() * a.element_size(), b0 + b.numel() * b.element_size()
    return a0 < b1 and b0 < a1


def _tiles(config: dict, base: dict, big: str, small: str) -> dict:
    cfg = dict(base, **(config or {}))
    for key in (big, small):
        if cfg[key] < 16 or cfg[key] & (cfg[key] - 1):
            raise ValueError(f"{key} must be a power of two >= 16, got {cfg[key]}")
    # The causal loops stop exactly at the diagonal block: small divides big.
    if cfg[big] % cfg[small]:
        raise ValueError(f"{small} must divide {big}, got {cfg[small]}, {cfg[big]}")
    return cfg


def attention_forward(
    q, k, v, causal=False, out=None, lse=None, config=None, allow_tf32=False
):
    """(out, lse): attention and each row's log-sum-exp, for (batch, heads, n, d).

    fp32 inputs use exact fp32 products unless allow_tf32=True; fp8 inputs
    compute Q K^T in fp8 and P V in fp16 and return fp16.
    """
    _check_inputs({"q": q, "k": k, "v": v}, FORWARD_DTYPES)
    gpu = device_limits(q.device)
    _check_gpu(q.dtype, gpu)
    batch, heads, n_ctx, head_dim = q.shape
    tiles = default_config("forward", head_dim, q.dtype, gpu["shared_kb"])
    cfg = _tiles(config, tiles, "BLOCK_M", "BLOCK_N")
    out_dtype = torch.float16 if q.dtype in FP8_DTYPES else q.dtype
    if out is None:
        out = torch.empty(q.shape, dtype=out_dtype, device=q.device)
    _check_buffer("out", out, q, out_dtype, "q's shape")
    if lse is None:
        lse = torch.empty(q.shape[:-1], dtype=torch.float32, device=q.device)
    _check_buffer("lse", lse, q, torch.float32, "shape (batch, heads, n_ctx)")
    for name, t in {"q": q, "k": k, "v": v, "out": out}.items():
        if name != "out" and _overlaps(out, t):  # read while it is written
            raise ValueError(f"out must not share memory with {name}")
        if _overlaps(lse, t):
            raise ValueError(f"lse must not share memory with {name}")
    if q.numel() == 0:
        return out, lse
    if any(t.data_ptr() % 16 for t in (q, k, v, out)):
        raise ValueError("the TMA needs q, k, v and out at 16-byte aligned addresses")
    # Device-side descriptors live in a small global scratch buffer that
    # Triton asks this allocator for at launch time.
    triton.set_allocator(_scratch)
    grid = (triton.cdiv(n_ctx, cfg["BLOCK_M"]), batch * heads)
    with _on(q.device):  # Triton launches on the current GPU, not q's
        _attention_fwd_kernel[grid](
            q, k, v, out, lse, n_ctx, math.log2(math.e) / math.sqrt(head_dim),
            HEAD_DIM=head_dim, CAUSAL=bool(causal),
            BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
            DOT_PRECISION="tf32" if allow_tf32 else "ieee",
            PV_FP16=q.dtype in FP8_DTYPES,
            num_warps=cfg["num_warps"], num_stages=cfg["num_stages"],
        )  # fmt: skip
    return out, lse


def attention_backward(q, k, v, out, lse, dout, causal=False, config=None):
    """(dq, dk, dv) from the forward pass's inputs, output and log-sum-exp."""
    named = {"q": q, "k": k, "v": v, "out": out, "dout": dout}
    _check_inputs(named, TRAINING_DTYPES)
    if out.dtype != q.dtype or dout.dtype != q.dtype:
        raise TypeError("out and dout must have q's dtype")
    _check_buffer("lse", lse, q, torch.float32, "shape (batch, heads, n_ctx)")
    batch, heads, n_ctx, head_dim = q.shape
    tiles = default_config(
        "backward", head_dim, q.dtype, device_limits(q.device)["shared_kb"]
    )
    cfg = _tiles(config, tiles, "BLOCK_HELD", "BLOCK_STEP")
    dq, dk, dv = (torch.empty_like(t) for t in (q, k, v))
    if q.numel() == 0:
        return dq, dk, dv
    delta = torch.empty(lse.shape, dtype=torch.float32, device=q.device)
    n_rows = batch * heads * n_ctx
    sm_scale = 1.0 / math.sqrt(head_dim)
    qk_scale = sm_scale * math.log2(math.e)
    held, step = cfg["BLOCK_HELD"], cfg["BLOCK_STEP"]
    launch = dict(HEAD_DIM=head_dim, CAUSAL=bool(causal),
                  num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])  # fmt: skip
    grid = (triton.cdiv(n_ctx, held), batch * heads)
    with _on(q.device):  # Triton launches on the current GPU, not q's
        _attention_bwd_delta_kernel[(triton.cdiv(n_rows, 64),)](
            out, dout, delta, n_rows, HEAD_DIM=head_dim, BLOCK_M=64
        )
        _attention_bwd_dkdv_kernel[grid](
            q, k, v, dout, lse, delta, dk, dv, n_ctx,
            qk_scale, sm_scale, BLOCK_M=step, BLOCK_N=held, **launch,
        )  # fmt: skip
        _attention_bwd_dq_kernel[grid](
            q, k, v, dout, lse, delta, dq, n_ctx,
            qk_scale, sm_scale, BLOCK_M=held, BLOCK_N=step, **launch,
        )  # fmt: skip
    return dq, dk, dv


def _scratch(size: int, alignment: int, stream):
    return torch.empty(
        size, dtype=torch.int8, device="cpu" if _interpreting() else "cuda"
    )


def _on(device):
    return (
        torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext()
    )


# Triton picks the interpreter when @triton.jit decorates a kernel, at import,
# from triton.knobs (TRITON_INTERPRET = 1, true, on, yes or y, any case). Read
# the knob once, at import too, so launchers and kernels agree; a plain bool
# also traces under torch.compile, which cannot call the knob (C++).
_INTERPRETING = triton.knobs.runtime.interpret


def _interpreting() -> bool:
    return _INTERPRETING


# --8<-- [end:launcher]


# --8<-- [start:autograd]
class FlashAttention(torch.autograd.Function):
    """Forward saves q, k, v, the output and the log-sum-exp (not P)."""

    @staticmethod
    def forward(ctx, q, k, v, causal, config, bwd_config):
        out, lse = attention_forward(q, k, v, causal, config=config)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.causal, ctx.bwd_config = causal, bwd_config
        return out

    @staticmethod
    def backward(ctx, dout):
        q, k, v, out, lse = ctx.saved_tensors
        # An upstream gradient may be a broadcast view (e.g. from .sum()).
        grads = attention_backward(
            q, k, v, out, lse, dout.contiguous(), ctx.causal, ctx.bwd_config
        )
        return (*grads, None, None, None)


def flash_attention(q, k, v, causal=False, config=None, bwd_config=None):
    """softmax(q k^T / sqrt(d), causal mask optional) v, differentiable."""
    return FlashAttention.apply(q, k, v, bool(causal), config, bwd_config)


# --8<-- [end:autograd]


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
    """PyTorch's fused attention (flash / memory-efficient / cuDNN kernels)."""
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


def attention_sdpa_flash(q, k, v, causal=False):
    """The same call held to SDPA's FLASH backend (FlashAttention-2's
    kernels): a second peer beside SDPA's own choice, cuDNN on an H100."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


# --8<-- [end:reference]


# --8<-- [start:formats]
def format_table() -> list[dict]:
    """Range and precision of each input format, straight from torch.finfo."""
    rows = []
    for name, dtype, mantissa_bits in [
        ("fp32", torch.float32, 23),
        ("tf32", torch.float32, 10),  # fp32's range, 10 stored mantissa bits
        ("fp16", torch.float16, 10),
        ("bf16", torch.bfloat16, 7),
        ("fp8 e4m3", torch.float8_e4m3fn, 3),
        ("fp8 e5m2", torch.float8_e5m2, 2),
    ]:
        info = torch.finfo(dtype)
        rows.append({
            "format": name,
            "bits": 19 if name == "tf32" else info.bits,
            "mantissa bits": mantissa_bits,
            "eps": 2.0**-mantissa_bits,  # spacing of numbers just above 1
            "max": info.max,
            "smallest normal": info.smallest_normal,
        })  # fmt: skip
    return rows


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


# --8<-- [end:formats]


# --8<-- [start:accuracy]
ACCURACY_FORMATS = {  # name -> (input dtype, allow_tf32)
    "fp32": (torch.float32, False),
    "tf32": (torch.float32, True),
    "fp16": (torch.float16, False),
    "bf16": (torch.bfloat16, False),
    "fp8 e4m3": (torch.float8_e4m3fn, False),
    "fp8 e5m2": (torch.float8_e5m2, False),
}


def accuracy_table(device, shape=(1, 4, 1024, 64), causal=False, seed=0, config=None):
    """Error of the forward kernel per input format against float64 attention.

    The reference is float64 attention of the unrounded fp32 inputs; "inputs
    only" is float64 attention of the inputs after rounding to the format,
    so the difference between the two columns is what the kernel adds.
    """
    gen = torch.Generator(device="cpu").manual_seed(seed)
    q, k, v = (torch.randn(shape, generator=gen).to(device) for _ in range(3))
    exact = attention_ref(q, k, v, causal)
    scale = exact.abs().max().item()
    rows = []
    for name, (dtype, tf32) in ACCURACY_FORMATS.items():
        rounded = [t.to(dtype) for t in (q, k, v)]
        out, _ = attention_forward(*rounded, causal, config=config, allow_tf32=tf32)
        inputs_only = attention_ref(*rounded, causal)
        err = (out.double() - exact).abs()
        rows.append({
            "format": name,
            "max abs error": err.max().item(),
            "mean abs error": err.mean().item(),
            "max error, inputs only": (inputs_only - exact).abs().max().item(),
            "max error / max abs(O)": err.max().item() / scale,
        })  # fmt: skip
    return rows


# --8<-- [end:accuracy]


# --8<-- [start:memory]
def peak_memory_mib(fn, *args) -> float:
    """Memory a call allocates on the GPU beyond its inputs, at its peak."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    result = fn(*args)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - before
    del result
    return peak / 2**20


def memory_table(device="cuda", n_ctxs=(1024, 2048, 4096, 8192, 16384)) -> list[dict]:
    """Extra GPU memory of one forward call, naive against flash (fp16, d = 64)."""
    rows = []
    for n in n_ctxs:
        q, k, v = (
            torch.randn(4, 32, n, 64, dtype=torch.float16, device=device)
            for _ in range(3)
        )
        row = {"n_ctx": n, "one fp16 score matrix (MiB)": 4 * 32 * n * n * 2 / 2**20}
        for label, fn in [("naive", attention_eager), ("flash (Triton)", _forward_only),
                          ("SDPA", attention_sdpa)]:  # fmt: skip
            try:
                row[f"{label} (MiB)"] = round(peak_memory_mib(fn, q, k, v), 1)
            except torch.OutOfMemoryError:
                row[f"{label} (MiB)"] = "out of memory"
            torch.cuda.empty_cache()
        rows.append(row)
        del q, k, v
    return rows


def _forward_only(q, k, v, causal=False):
    return attention_forward(q, k, v, causal)[0]


# --8<-- [end:memory]


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


def _bench_bwd_flops(size, dtype):
    # The convention of the FlashAttention papers: the backward pass does five
    # matmuls to the forward's two, 2.5x the forward's FLOPs (recomputation of
    # the scores is not counted as useful work).
    return 5 * _bench_flops(size, dtype) // 2


def _bench_bytes(size, dtype):
    # Compulsory traffic: Q, K, V read and O written once each (the roofline
    # plot's x position; re-reads of K and V that miss L2 come on top).
    itemsize = torch.empty((), dtype=dtype).element_size()
    return (
        4 * size["batch"] * size["heads"] * size["n_ctx"] * size["head_dim"] * itemsize
    )


def _bench_bwd_inputs(size, dtype, device):
    q, k, v, causal = _bench_inputs(size, dtype, device)
    for t in (q, k, v):
        t.requires_grad_(True)
    dout = torch.randn_like(q)
    return ({"q": q, "k": k, "v": v, "dout": dout, "causal": causal},)


def _backward_of(attention):
    """A callable timing only the backward pass of `attention`.

    The first call runs the forward pass once and keeps its graph (replacing
    the previous implementation's, to free its memory); every later call runs
    the backward pass alone.
    """

    def run(state):
        if state.get("graph_of") is not attention:
            state.pop("out", None)
            q, k, v = state["q"], state["k"], state["v"]
            state["out"] = attention(q, k, v, state["causal"])
            state["graph_of"] = attention
        inputs = (state["q"], state["k"], state["v"])
        return torch.autograd.grad(state["out"], inputs, state["dout"],
                                   retain_graph=True)  # fmt: skip

    return run


# batch 4, 32 heads of 64 or 16 heads of 128 (model width 2048 either way).
# n_ctx stops at 8192: a GPU run must stay short, and at 16384 the naive peer
# runs out of memory on an 80 GB GPU anyway (memory_table still goes there).
BENCHMARK_SIZES = [
    {"batch": 4, "heads": 2048 // d, "n_ctx": n, "head_dim": d, "causal": c}
    for d in (64, 128)
    for c in (0, 1)
    for n in (1024, 2048, 4096, 8192)
]
BENCHMARK_DTYPES = ["float16"]


_ATTENTION_WORDS = ("attention", "fmha", "flash", "cudnn", "sdpa")


def _sdpa_kernels() -> list[dict]:
    """Which CUDA kernels SDPA launched for each benchmark head dim and mask."""
    from torch.profiler import ProfilerActivity, profile

    rows = []
    for d in (64, 128):
        for causal in (False, True):
            q, k, v, _ = _bench_inputs(
                {"batch": 1, "heads": 2048 // d, "n_ctx": 4096, "head_dim": d,
                 "causal": causal}, torch.float16, "cuda")  # fmt: skip
            for t in (q, k, v):
                t.requires_grad_(True)
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                attention_sdpa(q, k, v, causal).sum().backward()
                torch.cuda.synchronize()
            names = sorted(
                event.key
                for event in prof.key_averages()
                if any(word in event.key.lower() for word in _ATTENTION_WORDS)
            )
            rows.append({"head_dim": d, "causal": int(causal),
                         "SDPA kernels": "; ".join(n[:90] for n in names)})  # fmt: skip
    return rows


def _forward_report():
    fp16 = torch.float16
    return {
        "sdpa_kernels": _sdpa_kernels(),
        "formats": format_table(),
        "memory": memory_table(),
        "accuracy": accuracy_table("cuda"),
        # FLOPs and bytes of every row, for the roofline plot of lesson 01.
        "roofline": [
            {**size, "dtype": "float16", "flops": _bench_flops(size, fp16),
             "bytes": _bench_bytes(size, fp16)}
            for size in BENCHMARK_SIZES
        ],
    }  # fmt: skip


BENCHMARKS = [
    {
        "name": "flash_attention_fwd",
        "title": "Attention forward, softmax(QKᵀ/√d)V, batch 4, model width 2048",
        "params": ["batch", "heads", "n_ctx", "head_dim", "causal"],
        "sizes": BENCHMARK_SIZES,
        "dtypes": BENCHMARK_DTYPES,
        "metric": "compute",  # TFLOP/s, roofline = measured bf16 matmul rate
        "work": _bench_flops,
        "make_inputs": _bench_inputs,
        "triton": _forward_only,
        "peers": {
            "PyTorch eager": attention_eager,
            "SDPA": attention_sdpa,
            "SDPA (FLASH backend)": attention_sdpa_flash,
        },
        "report": _forward_report,
        "report_untimed": True,  # names, memory, accuracy: made beside the tests
    },
    {
        "name": "flash_attention_bwd",
        "title": "Attention backward (dQ, dK, dV), batch 4, model width 2048",
        "params": ["batch", "heads", "n_ctx", "head_dim", "causal"],
        "sizes": BENCHMARK_SIZES,
        "dtypes": BENCHMARK_DTYPES,
        "metric": "compute",
        "work": _bench_bwd_flops,
        "make_inputs": _bench_bwd_inputs,
        "triton": _backward_of(flash_attention),
        "peers": {
            "PyTorch eager": _backward_of(attention_eager),
            "SDPA": _backward_of(attention_sdpa),
            "SDPA (FLASH backend)": _backward_of(attention_sdpa_flash),
        },
    },
]
# --8<-- [end:benchmark]


# For the rate plots (not part of the lesson): published figures drawn as
# dotted reference lines, never measured here. triton_course/runner/plots.py
# reads this literal from the source. Source: J. Shah, G. Bikshandi, Y. Zhang,
# V. Thakkar, P. Ramani, T. Dao, "FlashAttention-3: Fast and Accurate Attention
# with Asynchrony and Low-precision", arXiv:2407.08608, version of July 2024
# (later revisions report other figures): the bars at sequence length 16k of
# its speed charts for an H100 80GB SXM5, 16-bit inputs, batch x sequence
# length = 16k tokens and model width 2048 (so 32 heads of 64 or 16 of 128).
# The paper counts FLOPs as _bench_flops and _bench_bwd_flops do: 4 n^2 d per
# head forward, half of it with the causal mask, 2.5 times the forward's
# backward. Its backward charts are without the causal mask.
REFERENCE_LINES = [
    {
        "label": "FlashAttention-3 paper (H100 SXM5, 16k tokens)",
        "short_label": "FlashAttention-3 paper",
        "source": "Shah et al., arXiv:2407.08608, July 2024: charts "
        "'Attention forward speed', head dim 64 and 128, without and with the "
        "causal mask, H100 80GB SXM5, at sequence length 16k",
        "unit": "TFLOP/s",
        "values": [
            {"bench": "flash_attention_fwd",
             "where": {"head_dim": 64, "causal": 0}, "value": 497},
            {"bench": "flash_attention_fwd",
             "where": {"head_dim": 128, "causal": 0}, "value": 648},
            {"bench": "flash_attention_fwd",
             "where": {"head_dim": 128, "causal": 1}, "value": 616},
        ],
    },
    {
        "label": "FlashAttention-3 paper (H100 SXM5, 16k tokens)",
        "short_label": "FlashAttention-3 paper",
        "source": "Shah et al., arXiv:2407.08608, July 2024: charts "
        "'Attention backward speed', head dim 64 and 128, no causal mask, H100 "
        "80GB SXM5, at sequence length 16k",
        "unit": "TFLOP/s",
        "values": [
            {"bench": "flash_attention_bwd",
             "where": {"head_dim": 64, "causal": 0}, "value": 474},
            {"bench": "flash_attention_bwd",
             "where": {"head_dim": 128, "causal": 0}, "value": 561},
        ],
    },
]  # fmt: skip


# --8<-- [start:ncu]
# One forward pass for Nsight Compute (ncu) to profile: the course's kernel or
# SDPA's own choice (cuDNN's kernel on an H100), at the benchmark's longest
# sequence with head dimension 128 and no mask. The GPU runner runs
#   ncu --clock-control none --launch-count 1 --metrics <the lists below> \
#       --kernel-name regex:<kernel> python flash_attention.py --ncu triton
# (or --ncu sdpa), as lesson 04 does for its row sums.
NCU_SIZE = {"batch": 4, "heads": 16, "n_ctx": 8192, "head_dim": 128, "causal": 0}
NCU_FORWARDS = {"triton": _forward_only, "sdpa": attention_sdpa}

# Each of these is in lesson 04's list (optimization_steps.NCU_METRICS), which
# the course's H100 runs have collected; what each says, lesson 04 explains.
NCU_METRICS = [
    "gpu__time_duration.sum",  # the launch's time under the profiler
    "launch__grid_size",  # programs: one per SM for a persistent kernel
    "launch__block_size",  # threads per program (a warp group is 128)
    "launch__registers_per_thread",  # with shared memory, caps the occupancy
    "sm__maximum_warps_per_active_cycle_pct",  # theoretical occupancy
    "sm__warps_active.avg.pct_of_peak_sustained_active",  # achieved occupancy
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",  # how busy the SMs were
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",  # and the DRAM
    "smsp__issue_active.avg.per_cycle_active",  # issues per scheduler cycle
    "smsp__average_warps_active_per_issue_active.ratio",
    # cycles a warp waits per instruction issued, by reason: at a barrier
    # (the warps of a program waiting for each other), for global memory,
    # for a fixed-latency result, for a busy pipe (the tensor cores)
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
]
# Not in lesson 04's list, so not yet read on the course's GPU: Nsight
# Compute's names for the same launch statistics and rates in its
# LaunchStats, Occupancy and ComputeWorkloadAnalysis sections. Drop this list
# if an ncu version does not know one of them.
NCU_METRICS_UNVERIFIED = [
    "launch__shared_mem_per_block_dynamic",  # shared memory per program
    "launch__shared_mem_per_block_static",
    "launch__occupancy_limit_registers",  # programs per SM its registers allow
    "launch__occupancy_limit_shared_mem",  # and its shared memory
    "sm__inst_executed.avg.per_cycle_active",  # instructions per cycle (IPC)
    "sm__inst_issued.avg.pct_of_peak_sustained_active",  # issue slots busy
    "sm__instruction_throughput.avg.pct_of_peak_sustained_active",  # SM busy
    # share of cycles the tensor cores' pipe was busy
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
]


def profile_one_forward(which: str) -> None:
    """One forward pass at NCU_SIZE by `which` ("triton" or "sdpa").

    Its kernel runs once in the process, so ncu's one profiled launch is
    this one; no warm-up launch comes first (Triton compiles before the
    launch, and ncu empties the caches before each replay anyway).
    """
    if which not in NCU_FORWARDS:
        raise ValueError(f"--ncu takes one of {sorted(NCU_FORWARDS)}, got {which!r}")
    q, k, v, causal = _bench_inputs(NCU_SIZE, torch.float16, "cuda")
    NCU_FORWARDS[which](q, k, v, causal)
    torch.cuda.synchronize()


# --8<-- [end:ncu]


def backward_kernel_times(size=None, repeats=10) -> str:
    """Which kernels one backward pass launches, and the GPU time of each:
    the course's kernels against SDPA's own choice (cuDNN's on an H100), at
    NCU_SIZE in float16, from torch.profiler over `repeats` backward passes
    of one forward graph. One line per kernel: implementation, kernel name,
    launches per backward, microseconds per backward, share of the total."""
    from torch.profiler import ProfilerActivity, profile

    size = size or NCU_SIZE
    q, k, v, causal = _bench_inputs(size, torch.float16, "cuda")
    for t in (q, k, v):
        t.requires_grad_(True)
    dout = torch.randn_like(q)
    lines = [
        "implementation | kernel | launches per backward | us per backward | share"
    ]
    for label, attention in (("Triton", flash_attention), ("SDPA", attention_sdpa)):
        out = attention(q, k, v, causal)
        for _ in range(2):  # compile and warm up outside the trace
            torch.autograd.grad(out, (q, k, v), dout, retain_graph=True)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(repeats):
                torch.autograd.grad(out, (q, k, v), dout, retain_graph=True)
            torch.cuda.synchronize()
        per_kernel = {}  # name -> [launches, microseconds]
        for e in prof.events():
            if "CUDA" in str(e.device_type):  # what ran on the GPU
                entry = per_kernel.setdefault(e.name, [0, 0.0])
                entry[0] += 1
                entry[1] += e.time_range.elapsed_us()
        total = sum(us for _, us in per_kernel.values())
        for name, (count, us) in sorted(per_kernel.items(), key=lambda k: -k[1][1]):
            lines.append(f"{label} | {name[:100]} | {count / repeats:g} | "
                         f"{us / repeats:.1f} | {100 * us / total:.0f} %")  # fmt: skip
        lines.append(f"{label} | all kernels | | {total / repeats:.1f} | 100 %")
        del out
    return "\n".join(lines)


# For the GPU runner (not part of the lesson): Nsight Compute's counters for
# one forward launch of each kernel, alone on the GPU. SDPA's kernel is named
# by the cuDNN build (on an H100 with torch 2.11:
# cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_...):
# the regex holds for its forward kernels of any tile shape.
CAPTURES = {
    "attention_fwd_triton_ncu": {
        "ncu": {
            "args": ["--ncu", "triton"],
            "metrics": NCU_METRICS + NCU_METRICS_UNVERIFIED,
            "kernel": "_attention_fwd_kernel",
        }
    },
    "attention_fwd_cudnn_ncu": {
        "ncu": {
            "args": ["--ncu", "sdpa"],
            "metrics": NCU_METRICS + NCU_METRICS_UNVERIFIED,
            "kernel": "cudnn.*fprop",
        }
    },
    "attention_bwd_kernels": backward_kernel_times,
}


# --8<-- [start:main]
def main():
    device = "cuda" if torch.cuda.is_available() and not _interpreting() else "cpu"
    torch.manual_seed(0)
    small = None if device == "cuda" else {"BLOCK_M": 32, "BLOCK_N": 32}
    small_bwd = None if device == "cuda" else {"BLOCK_HELD": 32, "BLOCK_STEP": 16}
    for causal in (False, True):
        q, k, v = (torch.randn(2, 3, 100, 64, device=device).half() for _ in range(3))
        for t in (q, k, v):
            t.requires_grad_(True)
        out = flash_attention(q, k, v, causal, config=small, bwd_config=small_bwd)
        dout = torch.randn_like(out)
        grads = torch.autograd.grad(out, (q, k, v), dout)
        q64, k64, v64 = (t.detach().double().requires_grad_(True) for t in (q, k, v))
        expected = attention_ref(q64, k64, v64, causal)
        expected_grads = torch.autograd.grad(expected, (q64, k64, v64), dout.double())
        torch.testing.assert_close(out.double(), expected, atol=2e-3, rtol=2e-3)
        for got, want in zip(grads, expected_grads, strict=True):
            torch.testing.assert_close(got.double(), want, atol=1e-2, rtol=1e-2)
        print(f"causal={causal}: output and gradients match float64 on {device}")
    if device == "cuda":
        batch, heads, n_ctx, head_dim = 4, 16, 4096, 128
        shape = (batch, heads, n_ctx, head_dim)
        q, k, v = (
            torch.randn(shape, dtype=torch.float16, device=device) for _ in range(3)
        )
        flops = 4 * batch * heads * n_ctx**2 * head_dim  # two matmuls, no mask
        for name, fn in (("Triton", _forward_only), ("SDPA", attention_sdpa)):
            ms = triton.testing.do_bench(lambda fn=fn: fn(q, k, v))
            print(f"forward {name:>6}: {ms:.3f} ms, {flops / ms / 1e9:.0f} TFLOP/s")


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["--ncu"]:  # the GPU runner's Nsight Compute captures
        profile_one_forward(" ".join(sys.argv[2:]))
    else:
        main()
# --8<-- [end:main]
