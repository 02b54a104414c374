"""Fused LayerNorm + Linear: normalise the GEMM's input tiles as they load.

A tiny kernel computes each row's mean and 1/std (8 bytes a row). The GEMM
then loads raw tiles of x, normalises them in registers, ((x - mean) * rstd *
gamma + beta in float32, rounded to the input dtype) and feeds them to
``tl.dot``; the bias is added in the epilogue. The normalised activations are
never written to HBM.

Run it:  TRITON_INTERPRET=1 python snippets/layernorm_linear.py   (CPU, interpreter)
         python snippets/layernorm_linear.py                      (CUDA GPU)
"""

# --8<-- [start:imports]
import contextlib

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

# --8<-- [end:imports]


# --8<-- [start:stats_kernel]
@triton.jit
def layernorm_stats_kernel(
    x_ptr,  # input, (n_rows, n_cols) row-major
    mean_ptr,  # output, (n_rows,) float32
    rstd_ptr,  # output, (n_rows,) float32: 1 / sqrt(var + eps)
    n_cols,
    stride_xr,
    eps,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(axis=0)
    x_row = x_ptr + row.to(tl.int64) * stride_xr
    # pass 1: the mean
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols
    # pass 2: the variance around it (the row is in cache by now); two passes
    # avoid E[x^2] - E[x]^2, which cancels badly when |mean| >> std
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        d = tl.where(cols < n_cols, x - mean, 0.0)
        acc += d * d
    var = tl.sum(acc, axis=0) / n_cols
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, 1.0 / tl.sqrt(var + eps))


# --8<-- [end:stats_kernel]


# --8<-- [start:gemm_kernel]
@triton.jit
def layernorm_linear_kernel(
    x_ptr,  # activations, (M, K) row-major: M tokens of K features
    w_ptr,  # weight as nn.Linear stores it, (N, K) row-major
    bias_ptr,  # (N,) or a dummy when HAS_BIAS is False
    gamma_ptr,  # LayerNorm scale, (K,)
    beta_ptr,  # LayerNorm shift, (K,)
    mean_ptr,  # (M,) float32, from layernorm_stats_kernel
    rstd_ptr,  # (M,) float32
    out_ptr,  # (M, N) row-major
    M,
    N,
    K,
    stride_xm,
    stride_wn,
    stride_om,
    HAS_BIAS: tl.constexpr,
    PRECISION: tl.constexpr,  # "ieee" for float32 inputs (no TF32), else "tf32"
    NORMALIZE: tl.constexpr,  # False: skip the prologue, a plain GEMM (to compare)
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,  # output tiles are visited GROUP_M rows at a time
):
    # Grouped ordering: consecutive programs take a GROUP_M-tall column of
    # output tiles, so the x rows and w columns they share stay in L2.
    pid = tl.program_id(axis=0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    group_size = GROUP_M * tiles_n
    first_m = (pid // group_size) * GROUP_M
    rows_in_group = min(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group_size) % rows_in_group
    pid_n = (pid % group_size) // rows_in_group

    # rows past M / columns past N are wrapped onto real ones (% M, % N): their
    # loads stay in bounds without a mask and the store below drops them
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    mean = tl.load(mean_ptr + offs_m)[:, None]  # (BLOCK_M, 1)
    rstd = tl.load(rstd_ptr + offs_m)[:, None]
    x_ptrs = x_ptr + offs_m[:, None].to(tl.int64) * stride_xm + offs_k[None, :]
    w_ptrs = w_ptr + offs_n[None, :].to(tl.int64) * stride_wn + offs_k[:, None]

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        k_mask = offs_k < k_left
        x = tl.load(x_ptrs, mask=k_mask[None, :], other=0.0)  # (BLOCK_M, BLOCK_K)
        w = tl.load(w_ptrs, mask=k_mask[:, None], other=0.0)  # (BLOCK_K, BLOCK_N)
        if NORMALIZE:
            gamma = tl.load(gamma_ptr + k * BLOCK_K + offs_k, mask=k_mask, other=0.0)
            beta = tl.load(beta_ptr + k * BLOCK_K + offs_k, mask=k_mask, other=0.0)
            # the prologue: LayerNorm of this tile in float32, rounded to the
            # input dtype for the tensor cores; past K, gamma = beta = 0 gives
            # 0. (x * rstd - mean * rstd would save an instruction but cancels
            # badly when |mean| >> std.)
            xn = (x.to(tl.float32) - mean) * rstd
            xn = xn * gamma.to(tl.float32)[None, :] + beta.to(tl.float32)[None, :]
            xn = xn.to(w.dtype)
        else:
            xn = x
        acc = tl.dot(xn, w, acc, input_precision=PRECISION)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K

    # the epilogue: bias, round once, store the valid part of the tile
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    if HAS_BIAS:
        bias = tl.load(bias_ptr + cols, mask=cols < N, other=0.0)
        acc += bias.to(tl.float32)[None, :]
    out_ptrs = out_ptr + rows[:, None].to(tl.int64) * stride_om + cols[None, :]
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(out_ptrs, acc.to(out_ptr.dtype.element_ty), mask=mask)


# --8<-- [end:gemm_kernel]


# --8<-- [start:autotune]
def _config(bm, bn, bk, stages, warps, group_m=8):
    meta = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": group_m}
    return triton.Config(meta, num_stages=stages, num_warps=warps)


# A short list for H100-class GPUs: big output tiles (reuse) and 3-4 stages of
# software pipelining (loads of the next tiles overlap the current tl.dot).
AUTOTUNE_CONFIGS = [
    _config(128, 256, 64, 3, 8),
    _config(128, 256, 64, 3, 8, group_m=16),
    _config(128, 256, 64, 4, 8),
    _config(256, 128, 64, 4, 8),
    _config(128, 128, 64, 4, 4),
    _config(128, 128, 64, 3, 4),
    _config(64, 256, 64, 4, 4),
]

# The autotuned kernel wraps the plain one: the first call for each key times
# every config on the GPU and keeps the fastest. The key is (M, N, K,
# NORMALIZE) plus the dtype of each tensor argument, which Triton adds: the
# plain-GEMM peer (NORMALIZE=False) and each dtype are tuned apart.
layernorm_linear_autotuned = triton.autotune(
    configs=AUTOTUNE_CONFIGS, key=["M", "N", "K", "NORMALIZE"]
)(layernorm_linear_kernel)

# What the launcher uses under the interpreter when no config is given.
SMALL_CONFIG = {
    "BLOCK_M": 32,
    "BLOCK_N": 32,
    "BLOCK_K": 32,
    "GROUP_M": 4,
    "num_warps": 4,
    "num_stages": 1,
}
# --8<-- [end:autotune]


# --8<-- [start:launcher]
SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def layernorm_stats(x, eps=1e-5, block=1024):
    """Per-row mean and 1/std of the 2-D tensor x, both float32 of shape (M,)."""
    _check_x(x)
    m, k = x.shape
    mean = torch.empty(m, dtype=torch.float32, device=x.device)
    rstd = torch.empty(m, dtype=torch.float32, device=x.device)
    if m:
        block = min(block, triton.next_power_of_2(k))
        with _on(x.device):
            layernorm_stats_kernel[(m,)](
                x, mean, rstd, k, x.stride(0), eps, BLOCK=block
            )
    return mean, rstd


def layernorm_linear(
    x,
    weight,
    bias,
    ln_weight,
    ln_bias,
    eps=1e-5,
    out=None,
    config=None,
    normalize=True,
):
    """F.linear(F.layer_norm(x, (K,), ln_weight, ln_bias, eps), weight, bias).

    x is (M, K); weight (N, K) as in nn.Linear; bias (N,) or None; ln_weight,
    ln_bias (K,). ``config`` (dict of BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
    num_warps, num_stages) skips the autotuner; the interpreter needs one.
    normalize=False skips LayerNorm: F.linear(x, weight, bias), for comparison.
    """
    _check_x(x)
    m, k = x.shape
    tensors = {"weight": weight, "ln_weight": ln_weight, "ln_bias": ln_bias}
    if bias is not None:
        tensors["bias"] = bias
    for name, t in tensors.items():
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor")
        if t.device != x.device:
            raise ValueError(f"{name} is on {t.device} but x is on {x.device}")
        if t.dtype != x.dtype:
            raise TypeError(f"dtypes differ: x is {x.dtype}, {name} is {t.dtype}")
        if not t.is_contiguous():
            raise ValueError(f"{name} must be contiguous")
    if weight.dim() != 2 or weight.shape[1] != k:
        raise ValueError(f"weight must be (N, {k}), got {tuple(weight.shape)}")
    n = weight.shape[0]
    if ln_weight.shape != (k,) or ln_bias.shape != (k,):
        raise ValueError(f"ln_weight and ln_bias must have shape ({k},)")
    if bias is not None and bias.shape != (n,):
        raise ValueError(f"bias must have shape ({n},), got {tuple(bias.shape)}")
    if not eps > 0:
        raise ValueError(f"eps must be positive, got {eps}")
    if config is not None:
        config = _check_config(config)
    if out is None:
        out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    elif out.shape != (m, n) or out.dtype != x.dtype or out.device != x.device:
        raise ValueError(f"out must be ({m}, {n}) with x's dtype and device")
    elif not out.is_contiguous():
        raise ValueError("out must be contiguous")
    for name, t in {"x": x, **tensors}.items():
        if _overlaps(out, t):  # programs would read what others already wrote
            raise ValueError(f"out must not share memory with {name}")
    if m == 0 or n == 0:
        return out
    if k == 0:
        raise ValueError("x has no features (K = 0): LayerNorm is undefined")

    if normalize:
        mean, rstd = layernorm_stats(x, eps)
    else:  # never read: the kernel's prologue is compiled out
        mean = rstd = torch.empty(m, dtype=torch.float32, device=x.device)
    if _interpreting() and x.dtype == torch.bfloat16:
        # Laptop only: the interpreter (triton 3.6, 3.9) computes tl.dot on bfloat16
        # tiles wrongly. Every bfloat16 is a float32, so widening the inputs
        # is exact; the kernel still rounds into the bfloat16 out.
        x, weight, ln_weight, ln_bias = (
            t.float() for t in (x, weight, ln_weight, ln_bias)
        )
        bias = None if bias is None else bias.float()
    args = (
        x,
        weight,
        bias if bias is not None else x,
        ln_weight,
        ln_bias,
        mean,
        rstd,
        out,
        m,
        n,
        k,
        x.stride(0),
        weight.stride(0),
        out.stride(0),
    )
    flags = {
        "HAS_BIAS": bias is not None,
        # float32 in, float32 out, as exact as F.linear (which avoids TF32)
        "PRECISION": "ieee" if x.dtype == torch.float32 else "tf32",
        "NORMALIZE": bool(normalize),
    }
    if config is None and _interpreting():
        config = SMALL_CONFIG
    if config is None:

        def grid(meta):
            tiles_m = triton.cdiv(m, meta["BLOCK_M"])
            return (tiles_m * triton.cdiv(n, meta["BLOCK_N"]),)

        with _on(x.device):  # Triton launches on the current GPU, not x's
            layernorm_linear_autotuned[grid](*args, **flags)
        return out
    grid = (triton.cdiv(m, config["BLOCK_M"]) * triton.cdiv(n, config["BLOCK_N"]),)
    with _on(x.device):
        layernorm_linear_kernel[grid](*args, **flags, **config)
    return out


def _check_x(x):
    if not isinstance(x, torch.Tensor):
        raise TypeError("x must be a torch.Tensor")
    if x.device.type != "cuda" and not _interpreting():
        raise ValueError(
            f"x is on {x.device}: move it to a CUDA GPU, or set "
            "TRITON_INTERPRET=1 to run the kernel on the CPU"
        )
    if x.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"unsupported dtype {x.dtype}; use one of {SUPPORTED_DTYPES}")
    if x.dim() != 2:
        raise ValueError(f"x must be 2-D (tokens, features), got {tuple(x.shape)}")
    if not x.is_contiguous():
        raise ValueError("x must be contiguous")


def _check_config(config):
    # GROUP_M = 0 divides by zero in the grouped ordering: the kernel would
    # compute wrong tiles or none, silently. tl.arange takes powers of two.
    config = dict(config)
    missing = {"BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M"} - config.keys()
    if missing:
        raise ValueError(f"config lacks {sorted(missing)}")
    for key in ("BLOCK_M", "BLOCK_N", "BLOCK_K"):
        block = config[key]
        if not isinstance(block, int) or block < 1 or block & (block - 1):
            raise ValueError(f"{key} must be a power of two, got {block!r}")
    group_m = config["GROUP_M"]
    if not isinstance(group_m, int) or group_m < 1:
        raise ValueError(f"GROUP_M must be an integer >= 1, got {group_m!r}")
    return config


def _overlaps(a, b) -> bool:
    # whether two dense tensors' bytes intersect
    if a.numel() == 0 or b.numel() == 0 or a.device != b.device:
        return False
    a0, b0 = a.data_ptr(), b.data_ptr()
    a1, b1 = a0 + a.numel() * a.element_size(), b0 + b.numel() * b.element_size()
    return a0 < b1 and b0 < a1


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


# --8<-- [start:reference]
def layernorm_linear_ref(x, weight, bias, ln_weight, ln_bias, eps=1e-5):
    """LayerNorm then Linear in PyTorch: the reference and the eager peer."""
    h = F.layer_norm(x, (x.shape[-1],), ln_weight, ln_bias, eps)
    return F.linear(h, weight, bias)


# --8<-- [end:reference]


# --8<-- [start:benchmark]
def _bench_inputs(size: dict, dtype: torch.dtype, device: str):
    m, k, n = size["tokens"], size["hidden"], size["out_features"]
    x = torch.randn(m, k, dtype=dtype, device=device)
    weight = torch.randn(n, k, dtype=dtype, device=device) / k**0.5
    bias = 0.1 * torch.randn(n, dtype=dtype, device=device)
    ln_weight = 1 + 0.1 * torch.randn(k, dtype=dtype, device=device)
    ln_bias = 0.1 * torch.randn(k, dtype=dtype, device=device)
    return x, weight, bias, ln_weight, ln_bias


def _bench_flops(size: dict, dtype: torch.dtype) -> int:
    # the GEMM: TFLOP/s = 2 * T * H * F / seconds / 1e12 (LayerNorm's few
    # FLOPs per element are not counted, for any of the peers)
    return 2 * size["tokens"] * size["hidden"] * size["out_features"]


def _linear_only(x, weight, bias, ln_weight, ln_bias):
    return F.linear(x, weight, bias)  # cuBLAS, no LayerNorm at all


def _triton_gemm_only(x, weight, bias, ln_weight, ln_bias):
    # no statistics kernel, and the GEMM with its prologue compiled out: the
    # difference to the fused call is what normalising costs
    return layernorm_linear(x, weight, bias, ln_weight, ln_bias, normalize=False)


def _best_configs():
    cache = getattr(layernorm_linear_autotuned, "cache", {})
    return {str(key): str(cfg) for key, cfg in cache.items()}


BENCHMARK = {
    "name": "layernorm_linear",
    "title": "LayerNorm + Linear, normalised in the GEMM's prologue",
    "params": ["tokens", "hidden", "out_features"],
    "sizes": [
        {"tokens": t, "hidden": 4096, "out_features": 4096} for t in (4096, 8192, 16384)
    ],
    "dtypes": ["float16", "bfloat16"],
    "metric": "compute",
    "work": _bench_flops,
    "make_inputs": _bench_inputs,
    "triton": layernorm_linear,
    "peers": {
        "PyTorch eager": layernorm_linear_ref,
        "cuBLAS (Linear alone)": _linear_only,
        "Triton (GEMM alone)": _triton_gemm_only,
    },
    "compile": "PyTorch eager",
    "report": lambda: {"autotuned": _best_configs()},
}
# --8<-- [end:benchmark]


# --8<-- [start:main]
def main():
    device = "cuda" if torch.cuda.is_available() and not _interpreting() else "cpu"
    torch.manual_seed(0)
    for m, k, n in ((1, 7, 5), (37, 100, 70), (130, 96, 200)):
        args = _bench_inputs(
            {"tokens": m, "hidden": k, "out_features": n}, torch.float16, device
        )
        out = layernorm_linear(*args)
        expected = layernorm_linear_ref(*(a.float() for a in args))
        torch.testing.assert_close(out.float(), expected, atol=1e-2, rtol=1e-2)
        print(f"M={m} K={k} N={n}: matches PyTorch on {device}")
    if device == "cuda":
        size = {"tokens": 8192, "hidden": 4096, "out_features": 4096}
        args = _bench_inputs(size, torch.float16, device)
        flops = _bench_flops(size, torch.float16)
        for name, fn in (("fused", layernorm_linear), ("eager", layernorm_linear_ref)):
            ms = triton.testing.do_bench(lambda fn=fn: fn(*args), return_mode="median")
            print(f"{name}: {ms:.3f} ms, {flops / ms / 1e9:.0f} TFLOP/s")


if __name__ == "__main__":
    main()
# --8<-- [end:main]
