"""FP8 GEMM for Hopper: e4m3 inputs, float32 accumulation, scales in the epilogue.

C = (A @ B^T) * scales, with A (M x K) and B (N x K, an nn.Linear weight) in
float8_e4m3fn and C in bfloat16. A float8 number has 3 mantissa bits and a
largest value of 448, so each tensor is stored divided by a scale (one per
tensor, or one per row of A and per output column of B) and the product is
multiplied back. The kernel is the TMA persistent GEMM of matmul_tma.py with
8-bit tiles (twice the K per byte of shared memory) and a scaling epilogue.

Run it:  TRITON_INTERPRET=1 python snippets/matmul_fp8.py   (CPU, interpreter)
         python snippets/matmul_fp8.py          (NVIDIA, compute capability 8.9
                                                 or newer; timings on 9.0)
         python snippets/matmul_fp8.py --tune   (Hopper: every candidate config)
"""

# --8<-- [start:imports]
import sys

import torch
import triton
import triton.language as tl

# --8<-- [start:imports_fp8]
from triton.tools.tensor_descriptor import TensorDescriptor

# --8<-- [end:imports_fp8]
# --8<-- [end:imports]


@triton.jit
def _tile_coords(
    tile, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr
):
    # Grouped ordering, as in matmul.py: tile number -> (tile row, tile column).
    tiles_n = tl.cdiv(N, BLOCK_N)
    tiles_per_group = GROUP_M * tiles_n
    first_m = (tile // tiles_per_group) * GROUP_M
    group_rows = min(tl.cdiv(M, BLOCK_M) - first_m, GROUP_M)
    pid_m = first_m + (tile % tiles_per_group) % group_rows
    pid_n = (tile % tiles_per_group) // group_rows
    return pid_m, pid_n


# --8<-- [start:kernel]
@triton.jit
def matmul_fp8_kernel(
    a,  # A, M x K float8_e4m3fn, row-major: a pointer, or a TMA descriptor
    b,  # B, N x K float8_e4m3fn, row-major (C = A @ B^T): pointer or descriptor
    c,  # C, M x N bfloat16, row-major: pointer or descriptor
    a_scale_ptr,  # float32: one value, or M values if ROWWISE
    b_scale_ptr,  # float32: one value, or N values if ROWWISE
    M,
    N,
    K,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    ROWWISE: tl.constexpr,  # a scale per row of A and per row of B?
    MAX_IMPRECISE: tl.constexpr,  # see _dot_fp8 below
    NUM_PROGRAMS: tl.constexpr,  # programs launched: one per SM at most
    EPILOGUE_SPLIT: tl.constexpr,  # store C in two halves (less shared memory)
    FLATTEN: tl.constexpr,  # let the compiler pipeline across tile borders
    DEVICE_DESC: tl.constexpr,  # build the descriptors here from pointers?
):
    C_COLS: tl.constexpr = BLOCK_N // 2 if EPILOGUE_SPLIT else BLOCK_N
    if DEVICE_DESC:  # as in matmul_tma.py; else the launcher built them
        a_desc = tl.make_tensor_descriptor(
            a, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K]
        )
        b_desc = tl.make_tensor_descriptor(
            b, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K]
        )
        c_desc = tl.make_tensor_descriptor(
            c, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, C_COLS]
        )
    else:
        a_desc, b_desc, c_desc = a, b, c
    num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    # Program p computes tiles p, p + NUM_PROGRAMS, p + 2 * NUM_PROGRAMS, ...
    for tile in tl.range(tl.program_id(0), num_tiles, NUM_PROGRAMS, flatten=FLATTEN):
        pid_m, pid_n = _tile_coords(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        row, col = pid_m * BLOCK_M, pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            a_tile = a_desc.load([row, k * BLOCK_K])  # zeros past the edges
            b_tile = b_desc.load([col, k * BLOCK_K])
            acc = _dot_fp8(a_tile, b_tile, acc, MAX_IMPRECISE)
        acc = _scale(acc, a_scale_ptr, b_scale_ptr, row, col, M, N,
                     BLOCK_M, BLOCK_N, ROWWISE)  # fmt: skip
        if EPILOGUE_SPLIT:
            halves = tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)).permute(0, 2, 1)
            left, right = tl.split(halves)
            c_desc.store([row, col], left.to(tl.bfloat16))
            c_desc.store([row, col + BLOCK_N // 2], right.to(tl.bfloat16))
        else:
            c_desc.store([row, col], acc.to(tl.bfloat16))


# --8<-- [end:kernel]


# --8<-- [start:dot]
@triton.jit
def _dot_fp8(a, b, acc, MAX_IMPRECISE: tl.constexpr):
    # b is a BLOCK_N x BLOCK_K tile of B; .T is a view, no data moves.
    # MAX_IMPRECISE = 0 keeps Triton's default: on sm_90 the wgmma chain
    # accumulates along all of K inside the tensor cores ("fast accumulation"
    # in cuBLAS's words). MAX_IMPRECISE = BLOCK_K starts each K block's
    # products from zero and adds them into the float32 accumulator with
    # ordinary float32 adds (the PTX gains one add.f32 per element per block).
    if MAX_IMPRECISE == 0:
        return tl.dot(a, b.T, acc)
    else:
        return tl.dot(a, b.T, acc, max_num_imprecise_acc=MAX_IMPRECISE)


# --8<-- [end:dot]


# --8<-- [start:epilogue]
@triton.jit
def _scale(
    acc,
    a_scale_ptr,
    b_scale_ptr,
    row,
    col,
    M,
    N,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    ROWWISE: tl.constexpr,
):
    # C[i, j] = sum_k A8[i, k] * B8[j, k] * sa[i] * sb[j]: the scales do not
    # depend on k, so they multiply the finished float32 sum once per tile.
    if ROWWISE:
        rows = row + tl.arange(0, BLOCK_M)
        cols = col + tl.arange(0, BLOCK_N)
        sa = tl.load(a_scale_ptr + rows, mask=rows < M, other=0.0)
        sb = tl.load(b_scale_ptr + cols, mask=cols < N, other=0.0)
        return acc * sa[:, None] * sb[None, :]
    else:
        return acc * (tl.load(a_scale_ptr) * tl.load(b_scale_ptr))


# --8<-- [end:epilogue]


# --8<-- [start:quantize]
FP8 = torch.float8_e4m3fn
FP8_MAX = torch.finfo(FP8).max  # 448.0: e4m3fn has no infinities


def quantize_per_tensor(x: torch.Tensor):
    """x (float) -> (x / s in float8_e4m3fn, s as a float32 tensor of one element)
    with s chosen so that the largest |x| lands on 448."""
    _check_float(x, "quantize_per_tensor")
    amax = x.detach().abs().max().float() if x.numel() else torch.zeros(())
    # an all-zero tensor would give s = 0 and 0/0: any positive s is exact
    scale = torch.where(amax > 0, amax / FP8_MAX, torch.ones_like(amax))
    q = (x.float() / scale).clamp(-FP8_MAX, FP8_MAX).to(FP8)
    return q, scale.reshape(1).to(x.device)


def quantize_per_row(x: torch.Tensor):
    """x (rows x cols, float) -> (x / s in float8_e4m3fn, s of shape (rows, 1)):
    one scale per row, each row's largest |x| mapped onto 448."""
    _check_float(x, "quantize_per_row")
    if x.ndim != 2:
        raise ValueError(f"quantize_per_row needs a 2-D tensor, got {x.ndim}-D")
    if x.shape[1] == 0:
        amax = torch.zeros(x.shape[0], 1, device=x.device)
    else:
        amax = x.detach().abs().amax(dim=1, keepdim=True).float()
    scale = torch.where(amax > 0, amax / FP8_MAX, torch.ones_like(amax))
    q = (x.float() / scale).clamp(-FP8_MAX, FP8_MAX).to(FP8)
    return q, scale


def _check_float(x, name):
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} expects a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise TypeError(f"{name} quantises float32/bfloat16/float16, got {x.dtype}")
    if not torch.isfinite(x).all():
        raise ValueError(f"{name}: the tensor holds inf or NaN; no scale fits it")


# --8<-- [end:quantize]


# --8<-- [start:launcher]
INTERPRETER_CONFIG = {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 4}
# What tuning runs on an H100 chose (python matmul_fp8.py --tune: triton
# 3.6; candidates within a few per cent of each other), for fast
# accumulation (True) and precise (False). Fast: four stages, which fit in
# shared memory only with the output tile stored in two halves (EPILOGUE_SPLIT;
# tests/test_matmul_fp8.py compiles it). Precise holds a second
# accumulator, about twice the registers: compiled for sm_90, 128 x 256 then
# spills (a stack frame), 256 x 128 just fits (tests/test_matmul_fp8.py).
HOPPER_CONFIGS = {
    True: {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 128, "GROUP_M": 16,
           "num_warps": 8, "num_stages": 4, "EPILOGUE_SPLIT": True},
    False: {"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_M": 8,
            "num_warps": 8, "num_stages": 3, "EPILOGUE_SPLIT": False},
}  # fmt: skip


def matmul_fp8(
    a, b, a_scale, b_scale, fast_accum=True, persistent=True, host_desc=True,
    config=None,
):  # fmt: skip
    """C = (a @ b.T) * a_scale * b_scale in bfloat16, float32 accumulation.

    a: M x K and b: N x K, float8_e4m3fn, row-major. Scales in float32: one
    element each (per tensor), or a_scale (M, 1) and b_scale (1, N) (per row
    of a and per row of b, i.e. per output column). fast_accum=False adds the
    tensor cores' partial sums into the float32 accumulator after every K
    block instead of once per tile (see _dot_fp8).
    """
    rowwise = _checked_fp8(a, b, a_scale, b_scale, config)  # every check; below
    (M, K), N = a.shape, b.shape[0]
    out = torch.empty((M, N), dtype=torch.bfloat16, device=a.device)
    if M == 0 or N == 0:
        return out
    if K == 0:
        return out.zero_()
    if config is None:
        config = INTERPRETER_CONFIG if _interpreting() else HOPPER_CONFIGS[fast_accum]
    meta = {"EPILOGUE_SPLIT": False, **config}
    bm, bn, bk = meta["BLOCK_M"], meta["BLOCK_N"], meta["BLOCK_K"]
    if host_desc:  # TMA descriptors made once here, passed by value
        c_cols = bn // 2 if meta["EPILOGUE_SPLIT"] else bn
        tensors = (
            TensorDescriptor.from_tensor(a, [bm, bk]),
            TensorDescriptor.from_tensor(b, [bn, bk]),
            TensorDescriptor.from_tensor(out, [bm, c_cols]),
        )
    else:  # each program makes them, in global scratch memory
        triton.set_allocator(_scratch)
        tensors = (a, b, out)
    tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
    # One program per SM, each looping over tiles; or one program per tile.
    programs = min(tiles, _num_sms(a.device)) if persistent else tiles
    matmul_fp8_kernel[(programs,)](
        *tensors, a_scale, b_scale, M, N, K,
        ROWWISE=rowwise,
        MAX_IMPRECISE=0 if fast_accum else bk,
        NUM_PROGRAMS=programs,
        FLATTEN=persistent,
        DEVICE_DESC=not host_desc,
        **meta,
    )  # fmt: skip
    return out


def _scratch(size: int, alignment: int, stream):
    return torch.empty(size, dtype=torch.int8, device="cuda")


def _num_sms(device) -> int:
    if _interpreting():
        return 4  # the interpreter runs programs one by one: any count works
    return torch.cuda.get_device_properties(device).multi_processor_count


# Triton picks the interpreter when @triton.jit decorates a kernel, at import,
# from triton.knobs (TRITON_INTERPRET = 1, true, on, yes or y, any case). Read
# the knob once, at import too, so launchers and kernels agree; a plain bool
# also traces under torch.compile, which cannot call the knob (C++).
_INTERPRETING = triton.knobs.runtime.interpret


def _interpreting() -> bool:
    return _INTERPRETING


# --8<-- [end:launcher]


# --8<-- [start:checks]
def _checked_fp8(a, b, a_scale, b_scale, config=None) -> bool:
    """Refuse what the kernel cannot run; return True for per-row scales."""
    if config is not None:
        _check_config(config)
    tensors = {"a": a, "b": b, "a_scale": a_scale, "b_scale": b_scale}
    for name, t in tensors.items():
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"matmul_fp8: {name} must be a torch.Tensor")
    if a.device.type != "cuda" and not _interpreting():
        raise ValueError(
            f"tensors are on {a.device}: move them to a CUDA GPU, or set "
            "TRITON_INTERPRET=1 to run the kernel on the CPU"
        )
    for name, t in tensors.items():
        if t.device != a.device:
            raise ValueError(f"{name} is on {t.device} but a is on {a.device}")
    if a.device.type == "cuda":
        _require_fp8_tensor_cores(a.device)
    for name, t in (("a", a), ("b", b)):
        if t.dtype != FP8:
            raise TypeError(
                f"{name} is {t.dtype}: matmul_fp8 takes float8_e4m3fn "
                "(see quantize_per_tensor / quantize_per_row)"
            )
        if t.ndim != 2:
            raise ValueError(f"{name} must be 2-D, got shape {tuple(t.shape)}")
        if t.numel() > 1 and t.stride() != (t.shape[1], 1):
            raise ValueError(
                f"{name} must be row-major and contiguous (call .contiguous()); "
                f"b is N x K, the layout of an nn.Linear weight"
            )
    (M, K), (N, K2) = a.shape, b.shape
    if K != K2:
        raise ValueError(f"a is {M}x{K} and b is {N}x{K2}: C = a @ b.T needs equal K")
    for name, s in (("a_scale", a_scale), ("b_scale", b_scale)):
        if s.dtype != torch.float32:
            raise TypeError(f"{name} must be float32, got {s.dtype}")
        if not s.is_contiguous():
            raise ValueError(f"{name} must be contiguous")
    if a_scale.numel() == 1 and b_scale.numel() == 1:
        rowwise = False
    elif a_scale.shape == (M, 1) and b_scale.shape == (1, N):
        rowwise = True
    else:
        raise ValueError(
            f"scales must be one element each (per tensor), or a_scale ({M}, 1) "
            f"and b_scale (1, {N}) (per row); got {tuple(a_scale.shape)} and "
            f"{tuple(b_scale.shape)}"
        )
    # TMA moves rows of a multiple of 16 bytes from 16-byte aligned addresses
    if K % 16 or N % 8:
        raise ValueError(
            f"TMA needs 16-byte rows: K={K} must be a multiple of 16 (1-byte "
            f"float8) and N={N} a multiple of 8 (2-byte bfloat16 output)"
        )
    if any(t.data_ptr() % 16 for t in (a, b)):
        raise ValueError("TMA needs 16-byte aligned data pointers")
    return rowwise


def _require_fp8_tensor_cores(device) -> None:
    major, minor = torch.cuda.get_device_capability(device)
    if (major, minor) < (8, 9):
        name = torch.cuda.get_device_name(device)
        raise RuntimeError(
            f"{name} has compute capability {major}.{minor}: float8 tensor cores "
            "(and Triton's float8e4nv dot) need 8.9 or newer (Ada, Hopper, "
            "Blackwell); use a bfloat16 GEMM such as matmul_tma.py's or matmul.py's"
        )


def _check_config(config):
    # GROUP_M = 0 divides by zero in the grouped ordering: the kernel would
    # compute wrong tiles or none, silently. tl.arange takes powers of two.
    missing = {"BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M"} - set(config)
    if missing:
        raise ValueError(f"config lacks {sorted(missing)}")
    for key in ("BLOCK_M", "BLOCK_N", "BLOCK_K"):
        block = config[key]
        if not isinstance(block, int) or block < 1 or block & (block - 1):
            raise ValueError(f"{key} must be a power of two, got {block!r}")
    group_m = config["GROUP_M"]
    if not isinstance(group_m, int) or group_m < 1:
        raise ValueError(f"GROUP_M must be an integer >= 1, got {group_m!r}")


# --8<-- [end:checks]


# --8<-- [start:reference]
def matmul_fp8_ref(a, b, a_scale, b_scale):
    """The same product in float32 arithmetic on dequantised inputs, rounded
    to bfloat16. The float8 values are exact in float32, but each one times
    its scale is rounded, and the scales come before the sum (the kernel
    applies them after it): the rounding differs, not only the sum's order."""
    rows = a.float() * a_scale.float()  # (M, K) * (M, 1) or (1,)
    cols = b.float() * b_scale.float().reshape(-1, 1)  # (N, K) * (N, 1) or (1, 1)
    return (rows @ cols.T).to(torch.bfloat16)


def scaled_mm(a, b, a_scale, b_scale, fast_accum=False):
    """torch._scaled_mm, PyTorch's FP8 GEMM. On the H100 with torch 2.11
    (CUDA 13.0 build) both scale modes ran cuBLASLt kernels (nvjet_sm90_*;
    per-row scales as its outer-vector scaling, "ovscale"), as the tuning
    run's profile showed. It wants B column-major: b.T of a row-major N x K
    is exactly that. Per-row scales need a bfloat16 output."""
    return torch._scaled_mm(
        a,
        b.T,
        scale_a=a_scale.reshape(()) if a_scale.numel() == 1 else a_scale,
        scale_b=b_scale.reshape(()) if b_scale.numel() == 1 else b_scale,
        out_dtype=torch.bfloat16,
        use_fast_accum=fast_accum,
    )


# --8<-- [end:reference]


# --8<-- [start:benchmark]
SIZES = [
    {"M": 4096, "N": 4096, "K": 4096},
    {"M": 8192, "N": 8192, "K": 8192},
    {"M": 8192, "N": 14336, "K": 4096},  # MLP up-projection (8B-class), 8192 tokens
]


def _bench_inputs(size: dict, dtype: torch.dtype, device: str, rowwise=False):
    # Random normal activations and weights, quantised as a model would; the
    # bfloat16 copies feed the bfloat16 cuBLAS peer (the same products).
    if dtype != FP8:
        raise ValueError(f"the FP8 benchmarks take float8_e4m3fn, got {dtype}")
    quantize = quantize_per_row if rowwise else quantize_per_tensor
    a16 = torch.randn(size["M"], size["K"], device=device, dtype=torch.bfloat16)
    b16 = torch.randn(size["N"], size["K"], device=device, dtype=torch.bfloat16)
    (a, sa), (b, sb) = quantize(a16), quantize(b16)
    return a, b, sa, sb.reshape(1, -1) if rowwise else sb, a16, b16


def _bench_inputs_rowwise(size: dict, dtype: torch.dtype, device: str):
    return _bench_inputs(size, dtype, device, rowwise=True)


def _bench_flops(size: dict, dtype: torch.dtype) -> int:
    # One multiply and one add per (i, j, k): TFLOP/s = 2*M*N*K / seconds / 1e12
    return 2 * size["M"] * size["N"] * size["K"]


def _triton_fast(a, b, sa, sb, a16, b16):
    return matmul_fp8(a, b, sa, sb, fast_accum=True)


def _triton_precise(a, b, sa, sb, a16, b16):
    return matmul_fp8(a, b, sa, sb, fast_accum=False)


def _scaled_mm_fast(a, b, sa, sb, a16, b16):
    return scaled_mm(a, b, sa, sb, fast_accum=True)


def _scaled_mm_precise(a, b, sa, sb, a16, b16):
    return scaled_mm(a, b, sa, sb, fast_accum=False)


def _bf16_matmul(a, b, sa, sb, a16, b16):
    return torch.matmul(a16, b16.T)  # cuBLAS, bfloat16 tensor cores


def _accuracy(n: int = 4096, device: str = "cuda") -> dict:
    """Each GEMM's error against a float64 product of the same random float32
    inputs before any rounding, on one n^3 problem: measured on the GPU in
    the run and stored with the benchmark (the page's accuracy table)."""
    torch.manual_seed(0)
    x = torch.randn(n, n, device=device)
    w = torch.randn(n, n, device=device)  # C = x @ w.T, as an nn.Linear
    exact = x.double() @ w.double().T

    def row(gemm, scales, c):
        err = c.double() - exact
        return {
            "GEMM": gemm,
            "scales": scales,
            "relative error": (err.norm() / exact.norm()).item(),
            "max error / max |C|": (err.abs().max() / exact.abs().max()).item(),
        }

    rows = [row("bfloat16 inputs, cuBLAS", "none", x.bfloat16() @ w.bfloat16().T)]
    for scales, quantize in (("per tensor", quantize_per_tensor),
                             ("per row", quantize_per_row)):  # fmt: skip
        (a, sa), (b, sb) = quantize(x), quantize(w)
        # float8 rounding alone: the dequantised inputs multiplied in float64
        dequant = (a.double() * sa.double()) @ (b.double() * sb.double()).T
        rows.append(row("float8 inputs, exact product", scales, dequant))
        sb = sb.reshape(1, -1) if scales == "per row" else sb
        for fast in (True, False):
            accum = "fast" if fast else "precise"
            c = matmul_fp8(a, b, sa, sb, fast_accum=fast)
            rows.append(row(f"float8, Triton, {accum} accumulation", scales, c))
            c = scaled_mm(a, b, sa, sb, fast_accum=fast)
            rows.append(row(f"float8, torch._scaled_mm, {accum}", scales, c))
    return {"accuracy": rows}


BENCHMARKS = [
    {
        "name": "matmul_fp8_tensorwise",
        "title": "FP8 GEMM, per-tensor scales, fast accumulation",
        "params": ["M", "N", "K"],
        "sizes": SIZES,
        "dtypes": ["float8_e4m3fn"],
        "metric": "compute",
        "ceiling": "compute_fp8",  # the measured FP8 rate, not the bf16 one
        "work": _bench_flops,
        "make_inputs": _bench_inputs,
        "triton": _triton_fast,
        "peers": {
            "cuBLAS FP8 (torch._scaled_mm)": _scaled_mm_fast,
            "cuBLAS bf16 (torch.matmul)": _bf16_matmul,
        },
        "report": _accuracy,
        "report_untimed": True,  # errors, not times: made beside the tests
    },
    {
        "name": "matmul_fp8_rowwise",
        "title": "FP8 GEMM, per-row scales, fast accumulation",
        "params": ["M", "N", "K"],
        "sizes": SIZES,
        "dtypes": ["float8_e4m3fn"],
        "metric": "compute",
        "ceiling": "compute_fp8",
        "work": _bench_flops,
        "make_inputs": _bench_inputs_rowwise,
        "triton": _triton_fast,
        "peers": {
            "cuBLAS FP8 rowwise (torch._scaled_mm)": _scaled_mm_fast,
            "cuBLAS bf16 (torch.matmul)": _bf16_matmul,
        },
    },
    {
        "name": "matmul_fp8_precise",
        "title": "FP8 GEMM, per-tensor scales, float32 sums every K block",
        "params": ["M", "N", "K"],
        "sizes": SIZES,
        "dtypes": ["float8_e4m3fn"],
        "metric": "compute",
        "ceiling": "compute_fp8",
        "work": _bench_flops,
        "make_inputs": _bench_inputs,
        "triton": _triton_precise,
        "peers": {"cuBLAS FP8 (torch._scaled_mm)": _scaled_mm_precise},
    },
]
# --8<-- [end:benchmark]


# --8<-- [start:ncu]
# One per-row GEMM for Nsight Compute (ncu) to profile: this kernel or
# torch._scaled_mm's (cuBLASLt's nvjet kernels on an H100), at the benchmark's
# MLP shape. The GPU runner runs
#   ncu --launch-count 1 --metrics <NCU_METRICS> \
#       --kernel-name regex:<kernel> python matmul_fp8.py --ncu triton
# (or --ncu cublas), as lesson 04 does for its row sums.
NCU_SHAPE = (8192, 14336, 4096)  # M, N, K
NCU_GEMMS = ("triton", "cublas")

# Names the course's H100 runs have collected (lesson 04's list): the launch's
# shape, its occupancy, how busy the SMs were, and why warps did not issue.
NCU_METRICS = [
    "gpu__time_duration.sum",  # the launch's time under the profiler
    "launch__grid_size",  # programs: one per SM for a persistent kernel
    "launch__block_size",  # threads per program (a warp group is 128)
    "launch__registers_per_thread",
    "sm__maximum_warps_per_active_cycle_pct",  # theoretical occupancy
    "sm__warps_active.avg.pct_of_peak_sustained_active",  # achieved occupancy
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "smsp__issue_active.avg.per_cycle_active",
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
]


def profile_one_gemm(which: str) -> None:
    """One per-row fast-accumulation GEMM at NCU_SHAPE by `which`."""
    if which not in NCU_GEMMS:
        raise ValueError(f"--ncu takes one of {list(NCU_GEMMS)}, got {which!r}")
    # the benchmark's inputs and calls (its description, above)
    gemm = _triton_fast if which == "triton" else _scaled_mm_fast
    m, n, k = NCU_SHAPE
    inputs = _bench_inputs_rowwise({"M": m, "N": n, "K": k}, FP8, "cuda")
    torch.cuda.synchronize()
    gemm(*inputs)
    torch.cuda.synchronize()


# --8<-- [end:ncu]


# For the GPU runner (not part of the lesson): Nsight Compute's counters for
# one launch of each GEMM, alone on the GPU. torch._scaled_mm's kernel is
# named by cuBLASLt (nvjet_sm90_... on an H100 with torch 2.11, as the tuning
# run's profile showed); quantising the inputs launches no nvjet kernel.
CAPTURES = {
    "fp8_rowwise_triton_ncu": {
        "ncu": {
            "args": ["--ncu", "triton"],
            "metrics": NCU_METRICS,
            "kernel": "matmul_fp8_kernel",
        }
    },
    "fp8_rowwise_cublas_ncu": {
        "ncu": {"args": ["--ncu", "cublas"], "metrics": NCU_METRICS, "kernel": "nvjet"}
    },
}


# --8<-- [start:main]
def _median_ms(fn) -> float:
    return triton.testing.do_bench(fn, return_mode="median")


def _size(m: int, n: int, k: int) -> dict:
    return {"M": m, "N": n, "K": k}


def _check_awkward(device: str) -> None:
    torch.manual_seed(0)
    for m, n, k in ((1, 8, 16), (65, 40, 48), (130, 72, 96)):
        x = torch.randn(m, k, device=device)
        w = torch.randn(n, k, device=device)
        for quantize in (quantize_per_tensor, quantize_per_row):
            (a, sa), (b, sb) = quantize(x), quantize(w)
            sb = sb.reshape(1, -1) if quantize is quantize_per_row else sb
            expected = matmul_fp8_ref(a, b, sa, sb).float()
            for fast in (True, False):
                got = matmul_fp8(a, b, sa, sb, fast_accum=fast).float()
                torch.testing.assert_close(got, expected, atol=2e-2, rtol=2e-2)
        print(f"{m}x{k} @ ({n}x{k})^T float8: matches float32 on {device}")


def main(tune: bool = False):
    device = "cuda" if torch.cuda.is_available() and not _interpreting() else "cpu"
    if device == "cuda" and torch.cuda.get_device_capability() < (8, 9):
        try:
            _require_fp8_tensor_cores(torch.device("cuda"))
        except RuntimeError as why:  # say why, and stop
            print(why)
            return
    if tune:  # one GPU call: a failed check must not cost the tuning table
        try:
            _check_awkward(device)
        except Exception as exc:  # noqa: BLE001 - printed, then the tuning
            print(f"CHECK FAILED: {type(exc).__name__}: {str(exc)[:800]}")
    else:
        _check_awkward(device)
    if device != "cuda" or torch.cuda.get_device_capability()[0] != 9:
        return  # the timings below are for Hopper (sm_90)
    if tune:  # every candidate and peer, at these sizes and more
        _tune(device)
        return
    for n in (4096, 8192):
        size = _size(n, n, n)
        for mode, make in (("per-tensor", _bench_inputs),
                           ("per-row", _bench_inputs_rowwise)):  # fmt: skip
            args = make(size, FP8, device)
            for name, fn in (("Triton", _triton_fast), ("_scaled_mm", _scaled_mm_fast)):
                try:
                    ms = _median_ms(lambda fn=fn, args=args: fn(*args))
                except RuntimeError as exc:  # a peer this torch lacks: say so
                    print(f"{n}^3 {mode:>10} {name:>10}: failed: {exc}")
                    continue
                # 2 n^3 operations in ms milliseconds, in TFLOP/s
                print(f"{n}^3 {mode:>10} {name:>10}: {2 * n**3 / ms / 1e9:.0f} TFLOP/s")


TUNE_CONFIGS = [  # BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, warps, stages, split
    (128, 256, 128, 8, 8, 3, False),
    (128, 256, 128, 8, 8, 4, True),
    (128, 256, 64, 8, 8, 4, False),
    (128, 256, 64, 8, 8, 5, True),
    (256, 128, 128, 8, 8, 3, False),
    (256, 128, 128, 8, 8, 4, True),
    (128, 128, 128, 8, 8, 4, False),
    (128, 128, 128, 8, 4, 4, False),
    (128, 128, 256, 8, 8, 3, False),
    (128, 256, 128, 16, 8, 3, False),
    (128, 256, 128, 16, 8, 4, True),
    (64, 256, 128, 8, 4, 4, False),
]
TUNE_VARIANTS = {  # name: (persistent, host_desc)
    "persist-host": (True, True),
    "persist-dev": (True, False),
    "tile-host": (False, True),
}
TUNE_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (8192, 14336, 4096)]


def _tune(device: str) -> None:
    """One line per candidate: TFLOP/s at each of TUNE_SHAPES (per-tensor
    scales unless said), then the same for the peers, and which kernels the
    peers launch. Phase 1: every config and variant, fast accumulation;
    phase 2: the four best with precise accumulation and with per-row scales."""
    shapes = TUNE_SHAPES
    tensor = {s: _bench_inputs(_size(*s), FP8, device) for s in shapes}
    rows = {s: _bench_inputs_rowwise(_size(*s), FP8, device) for s in shapes}
    print("config BM,BN,BK,G,warps,stages,split variant accum scales: "
          + " ".join("x".join(map(str, s)) for s in shapes), flush=True)  # fmt: skip

    def line(cfg, variant, fast, inputs):
        persistent, host = TUNE_VARIANTS[variant]
        rates = []
        for s in shapes:
            a, b, sa, sb = inputs[s][:4]

            def call(a=a, b=b, sa=sa, sb=sb):
                return matmul_fp8(a, b, sa, sb, fast_accum=fast,
                                  persistent=persistent, host_desc=host,
                                  config=cfg)  # fmt: skip

            try:
                if s == shapes[0]:  # a wrong config must not look fast
                    want = scaled_mm(a, b, sa, sb, fast_accum=fast).float()
                    err = (call().float() - want).norm() / want.norm()
                    if not err < 1e-2:
                        rates.append(f"WRONG(rel err {err:.2g})")
                        break
                ms = _median_ms(call)
                rates.append(f"{2 * s[0] * s[1] * s[2] / ms / 1e9:5.0f}")
            except Exception as exc:  # noqa: BLE001 - report and go on
                rates.append(f"FAIL({type(exc).__name__}: {str(exc)[:70]})")
                break
        label = ",".join(str(v) for v in (*cfg.values(),))
        scales = "row" if inputs is rows else "tensor"
        print(f"{label} {variant} {'fast' if fast else 'prec'} {scales}: "
              + " ".join(rates), flush=True)  # fmt: skip
        try:
            return sum(float(r) for r in rates[:2]) if len(rates) == 3 else 0.0
        except ValueError:
            return 0.0

    scored = []
    for bm, bn, bk, g, w, st, split in TUNE_CONFIGS:
        cfg = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": g}
        cfg.update(num_warps=w, num_stages=st, EPILOGUE_SPLIT=split)
        for variant in TUNE_VARIANTS:
            scored.append((line(cfg, variant, True, tensor), cfg, variant))
    scored.sort(key=lambda t: -t[0])
    for _, cfg, variant in scored[:4]:
        line(cfg, variant, True, rows)
    # precise accumulation holds a second accumulator: every tile, once more
    precise = []
    for _, cfg, variant in scored:
        if variant == "persist-host":
            precise.append((line(cfg, variant, False, tensor), cfg, variant))
    precise.sort(key=lambda t: -t[0])
    for _, cfg, variant in precise[:2]:
        line(cfg, variant, False, rows)
    peers = (
        ("_scaled_mm fast tensor", _scaled_mm_fast, tensor),
        ("_scaled_mm prec tensor", _scaled_mm_precise, tensor),
        ("_scaled_mm fast row", _scaled_mm_fast, rows),
        ("_scaled_mm prec row", _scaled_mm_precise, rows),
        ("bf16 torch.matmul", _bf16_matmul, tensor),
    )
    for label, fn, inputs in peers:
        rates = []
        for s in shapes:
            try:
                ms = _median_ms(lambda fn=fn, args=inputs[s]: fn(*args))
            except Exception as exc:  # noqa: BLE001 - report and go on
                rates.append(f"FAIL({type(exc).__name__}: {str(exc)[:70]})")
                break
            rates.append(f"{2 * s[0] * s[1] * s[2] / ms / 1e9:5.0f}")
        print(f"{label}: " + " ".join(rates), flush=True)
    from torch.profiler import ProfilerActivity, profile

    for label, fn, inputs in peers[:4]:  # which library each peer calls
        try:
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                fn(*inputs[shapes[0]])
                torch.cuda.synchronize()
            names = {e.name[:90] for e in prof.events() if "CUDA" in str(e.device_type)}
            print(f"{label} runs: {sorted(names)}", flush=True)
        except Exception as exc:  # noqa: BLE001 - the timings above still stand
            print(f"{label}: profiler failed: {exc!r}", flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--ncu"]:  # the GPU runner's Nsight Compute captures
        profile_one_gemm(" ".join(sys.argv[2:]))
    else:
        main(tune="--tune" in sys.argv[1:])
# --8<-- [end:main]
