"""Tiled matrix multiplication with tl.dot: C = A @ B.

Each program computes one BLOCK_M x BLOCK_N tile of C by walking along K one
BLOCK_K slice at a time, feeding tl.dot (the tensor cores) and accumulating in
float32. Programs are numbered in groups so neighbours share tiles in L2, and
@triton.autotune picks the block sizes per problem shape.

Run it:  TRITON_INTERPRET=1 python snippets/matmul.py   (CPU, interpreter)
         python snippets/matmul.py                      (CUDA GPU)
"""

# --8<-- [start:imports]
import contextlib

import torch
import triton
import triton.language as tl

# --8<-- [end:imports]


# --8<-- [start:kernel]
@triton.jit
def matmul_kernel(
    a_ptr,  # A, an M x K matrix with strides (stride_am, stride_ak)
    b_ptr,  # B, a K x N matrix with strides (stride_bk, stride_bn)
    c_ptr,  # C, the M x N output with strides (stride_cm, stride_cn)
    M,
    N,
    K,
    stride_am,  # elements from A[i, k] to A[i + 1, k]
    stride_ak,  # elements from A[i, k] to A[i, k + 1]
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,  # rows of C per program
    BLOCK_N: tl.constexpr,  # columns of C per program
    BLOCK_K: tl.constexpr,  # width of one step along K
    GROUP_M: tl.constexpr,  # tile rows per group, for L2 reuse (1 = row-major)
    INPUT_PRECISION: tl.constexpr,  # "ieee" keeps float32 inputs exact
):
    # --8<-- [start:grouping]
    # Which tile of C is mine? Number the tiles column by column inside
    # groups of GROUP_M tile rows, so programs that run at the same time
    # read the same few rows of A and columns of B (see the figure).
    pid = tl.program_id(axis=0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    tiles_per_group = GROUP_M * tiles_n
    group = pid // tiles_per_group
    first_m = group * GROUP_M
    group_rows = min(tiles_m - first_m, GROUP_M)  # the last group may be short
    pid_m = first_m + (pid % tiles_per_group) % group_rows
    pid_n = (pid % tiles_per_group) // group_rows
    # --8<-- [end:grouping]

    # --8<-- [start:pointers]
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # rows of A and C
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)  # columns of B and C
    ks = tl.arange(0, BLOCK_K)  # offsets along K inside one step
    # A column vector plus a row vector broadcasts to a 2-D block of addresses.
    a_ptrs = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_ptrs = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn
    # --8<-- [end:pointers]

    # --8<-- [start:loop]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K  # columns of A (rows of B) still to go
        a_mask = (rows[:, None] < M) & (ks[None, :] < k_left)
        b_mask = (ks[:, None] < k_left) & (cols[None, :] < N)
        # Out-of-range lanes read 0.0, which adds nothing to the dot product.
        a = tl.load(a_ptrs, mask=a_mask, other=0.0)
        b = tl.load(b_ptrs, mask=b_mask, other=0.0)
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
        a_ptrs += BLOCK_K * stride_ak  # slide both tiles one step along K
        b_ptrs += BLOCK_K * stride_bk
    # --8<-- [end:loop]

    # --8<-- [start:store]
    c_ptrs = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    c_mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)
    # --8<-- [end:store]


# --8<-- [end:kernel]


# --8<-- [start:autotune]
def _config(bm, bn, bk, warps, stages, group_m=8):
    meta = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": group_m}
    return triton.Config(meta, num_warps=warps, num_stages=stages)


# Candidates for Hopper-class GPUs (the big tiles keep the tensor cores busy;
# the small ones give small problems enough programs to fill every SM).
CONFIGS = [
    _config(128, 256, 64, warps=8, stages=4),
    _config(128, 256, 64, warps=8, stages=3),
    _config(256, 128, 64, warps=8, stages=4),
    _config(128, 128, 64, warps=8, stages=4),
    _config(128, 64, 64, warps=4, stages=4),
    _config(64, 128, 64, warps=4, stages=4),
    _config(64, 64, 64, warps=4, stages=4),
]

# The same kernel wrapped in an autotuner. The first call for each new
# (M, N, K) and dtype times every config and keeps the fastest; later calls
# with that key reuse it. The raw kernel above stays callable on its own.
matmul_kernel_autotuned = triton.autotune(configs=CONFIGS, key=["M", "N", "K"])(
    matmul_kernel
)
# --8<-- [end:autotune]

# --8<-- [start:ungrouped]
# Grouping switched off (one group = one tile row): the "before" of the
# grouping step, timed as its own benchmark.
matmul_kernel_ungrouped = triton.autotune(
    configs=[
        triton.Config(
            dict(c.kwargs, GROUP_M=1), num_warps=c.num_warps, num_stages=c.num_stages
        )
        for c in CONFIGS
    ],
    key=["M", "N", "K"],
)(matmul_kernel)
# --8<-- [end:ungrouped]


# --8<-- [start:launcher]
# Used when autotuning is unavailable (the interpreter has no GPU to time on).
INTERPRETER_CONFIG = {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 4}


def matmul(a, b, out=None, config=None, kernel=None):
    """Return a @ b for 2-D tensors (written into ``out`` if given).

    ``config``: a dict of BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M (and optionally
    num_warps, num_stages) to skip autotuning. Any strides are accepted: a
    transposed view is read in place, without a copy.
    """
    out = _checked_out(a, b, out, config)  # every input check; see the next block
    (M, K), N = a.shape, b.shape[1]
    if M == 0 or N == 0:
        return out
    if _interpreting() and a.dtype == torch.bfloat16:
        # Laptop only: the interpreter (triton 3.6, 3.9) computes tl.dot on bfloat16
        # tiles wrongly. Every bfloat16 is a float32, so widening the inputs
        # is exact; the kernel still stores into the bfloat16 out.
        a, b = a.float(), b.float()
    # float32 inputs: tl.dot would cut them to tf32 (10-bit mantissa) on
    # the tensor cores; "ieee" keeps full float32, as torch.matmul does.
    precision = "ieee" if a.dtype == torch.float32 else "tf32"
    args = (a, b, out, M, N, K, *a.stride(), *b.stride(), *out.stride())

    def grid(meta):  # one program per tile of C
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

    if config is None and _interpreting():
        config = INTERPRETER_CONFIG
    with _on(a.device):  # Triton launches on the current GPU, not on a's
        if config is not None:  # the raw kernel with the blocks given
            matmul_kernel[grid(config)](*args, INPUT_PRECISION=precision, **config)
        else:  # the autotuner picks the blocks, then calls grid with them
            tuned = kernel or matmul_kernel_autotuned
            tuned[grid](*args, INPUT_PRECISION=precision)
    return out


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


# --8<-- [start:checks]
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
# The kernel computes its offsets (rows * stride_am, ...) in int32, so each
# matrix must lie within 2**31 - 1 elements of its first one.
MAX_OFFSET = 2**31 - 1


def _checked_out(a, b, out, config=None):
    """Refuse what the kernel would get wrong; return out (new if None)."""
    if config is not None:
        _check_config(config)
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        raise TypeError("matmul expects two torch.Tensor arguments")
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"matmul needs 2-D matrices, got {a.ndim}-D and {b.ndim}-D")
    if a.device != b.device:
        raise ValueError(f"a is on {a.device} but b is on {b.device}")
    if a.device.type != "cuda" and not _interpreting():
        raise ValueError(
            f"tensors are on {a.device}: move them to a CUDA GPU, or set "
            "TRITON_INTERPRET=1 to run the kernel on the CPU"
        )
    if a.dtype != b.dtype:
        raise TypeError(f"dtypes differ: a is {a.dtype}, b is {b.dtype}")
    if a.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"unsupported dtype {a.dtype}; use one of {SUPPORTED_DTYPES}")
    (M, K), (K2, N) = a.shape, b.shape
    if K != K2:
        raise ValueError(f"inner dimensions differ: a is {M}x{K}, b is {K2}x{N}")
    if out is None:
        out = torch.empty((M, N), dtype=a.dtype, device=a.device)
    elif out.shape != (M, N) or out.dtype != a.dtype or out.device != a.device:
        raise ValueError(f"out must be a {M}x{N} {a.dtype} tensor on {a.device}")
    if M == 0 or N == 0:
        return out
    if _overlaps_itself(out):
        # Two tiles would store into the same element, and the last store wins.
        raise ValueError(
            f"out's elements overlap or interleave (shape {tuple(out.shape)}, "
            f"strides {out.stride()}; an expanded view, say): pass a tensor "
            "whose rows or columns lie one after another, like torch.empty(M, N)"
        )
    for name, t in (("a", a), ("b", b)):
        if _overlaps(out, t):
            # Programs would read tiles of a or b that others have already
            # overwritten.
            raise ValueError(
                f"out shares memory with {name}: pass a new tensor (or copy "
                f"{name} first)"
            )
    for name, t in (("a", a), ("b", b), ("out", out)):
        if _last_offset(t) > MAX_OFFSET:
            raise ValueError(
                f"{name} spans more than 2**31 - 1 elements, past the kernel's "
                "int32 offsets: split the product into blocks of rows of a "
                "(or columns of b) that each stay under it"
            )
    return out


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


def _last_offset(t) -> int:
    # how many elements past the first one t's last element lies
    return sum((n - 1) * s for n, s in zip(t.shape, t.stride(), strict=True))


def _overlaps(x, y) -> bool:
    # whether the bytes x and y can touch intersect (strides are never negative)
    if x.numel() == 0 or y.numel() == 0 or x.device != y.device:
        return False
    if x.device.type == "meta":  # shapes only, no memory: every data_ptr() is 0
        return False

    def span(t):
        return t.data_ptr(), t.data_ptr() + (_last_offset(t) + 1) * t.element_size()

    (x0, x1), (y0, y1) = span(x), span(y)
    return x0 < y1 and y0 < x1


def _overlaps_itself(t) -> bool:
    # Distinct for sure if, taking dimensions from the smallest stride up,
    # each stride steps past every offset the smaller ones reach. Cautious:
    # a layout whose rows interleave without sharing an element is refused.
    dims = [(s, n) for n, s in zip(t.shape, t.stride(), strict=True) if n > 1]
    reach = 0  # the largest offset the smaller-stride dimensions reach
    for stride, n in sorted(dims):
        if stride <= reach:  # a stride of 0 (expanded) lands here too
            return True
        reach += (n - 1) * stride
    return False


# --8<-- [end:checks]


# --8<-- [start:reference]
def matmul_ref(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The product in plain PyTorch (cuBLAS on a GPU): the reference and peer."""
    return torch.matmul(a, b)


# --8<-- [end:reference]


# --8<-- [start:benchmark]
SQUARE = [{"M": n, "N": n, "K": n} for n in (512, 1024, 2048, 4096, 8192)]
TRANSFORMER = [
    {"M": 8192, "N": 4096, "K": 4096},  # attention projection, 8192 tokens
    {"M": 8192, "N": 11008, "K": 4096},  # MLP up-projection (7B-class)
    {"M": 8192, "N": 14336, "K": 4096},  # MLP up-projection (8B-class)
    {"M": 8192, "N": 4096, "K": 11008},  # MLP down-projection
]


def _bench_inputs(size: dict, dtype: torch.dtype, device: str):
    a = torch.randn(size["M"], size["K"], device=device).to(dtype)
    b = torch.randn(size["K"], size["N"], device=device).to(dtype)
    return a, b


def _bench_flops(size: dict, dtype: torch.dtype) -> int:
    # One multiply and one add per (i, j, k): TFLOP/s = 2*M*N*K / seconds / 1e12
    return 2 * size["M"] * size["N"] * size["K"]


def _ungrouped(a, b):
    return matmul(a, b, kernel=matmul_kernel_ungrouped)


def _best(kernel):
    def report():  # the config the autotuner chose for each key it saw
        return {str(k): str(v) for k, v in kernel.cache.items()}

    return report


BENCHMARKS = [
    {
        "name": "matmul",
        "title": "Tiled GEMM with tl.dot, grouped ordering, autotuned",
        "params": ["M", "N", "K"],
        "sizes": SQUARE + TRANSFORMER,
        "dtypes": ["float16", "bfloat16"],
        "metric": "compute",  # TFLOP/s, roofline = measured large torch.matmul
        "work": _bench_flops,
        "make_inputs": _bench_inputs,
        "triton": matmul,
        "peers": {"cuBLAS": matmul_ref},  # torch.matmul calls cuBLAS
        "compile": "cuBLAS",  # torch.compile of torch.matmul, timed by the runner
        "report": _best(matmul_kernel_autotuned),
    },
    {
        "name": "matmul_ungrouped",
        "title": "Tiled GEMM, row-major program order (no grouping)",
        "params": ["M", "N", "K"],
        "sizes": SQUARE[2:] + TRANSFORMER[1:2],
        "dtypes": ["float16"],
        "metric": "compute",
        "work": _bench_flops,
        "make_inputs": _bench_inputs,
        "triton": _ungrouped,
        "peers": {"cuBLAS": matmul_ref},
        "report": _best(matmul_kernel_ungrouped),
    },
]
# --8<-- [end:benchmark]


# --8<-- [start:main]
def _median_ms(fn, *args) -> float:
    return triton.testing.do_bench(lambda: fn(*args), return_mode="median")


def main():
    device = "cuda" if torch.cuda.is_available() and not _interpreting() else "cpu"
    torch.manual_seed(0)
    for m, n, k in ((1, 1, 1), (7, 13, 5), (65, 33, 17), (130, 70, 90)):
        a = torch.randn(m, k, device=device, dtype=torch.float16)
        b = torch.randn(k, n, device=device, dtype=torch.float16)
        expected = matmul_ref(a.float(), b.float()).half()
        torch.testing.assert_close(matmul(a, b), expected, atol=1e-2, rtol=1e-2)
        print(f"{m}x{k} @ {k}x{n}: matches PyTorch on {device}")
    if device == "cuda":
        for n in (4096, 8192):
            a = torch.randn(n, n, device=device, dtype=torch.float16)
            b = torch.randn(n, n, device=device, dtype=torch.float16)
            for name, fn in (("Triton", matmul), ("cuBLAS", matmul_ref)):
                ms = _median_ms(fn, a, b)
                # 2 n^3 operations in ms milliseconds, in TFLOP/s
                print(f"{n}^3 float16 {name:>6}: {2 * n**3 / ms / 1e9:.0f} TFLOP/s")


if __name__ == "__main__":
    main()
# --8<-- [end:main]
