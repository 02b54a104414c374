"""Hopper-aware GEMM: tensor descriptors (TMA) and persistent programs.

Two steps beyond snippets/matmul.py. Tensor descriptors hand each tile copy to
the TMA unit (one instruction per tile, edges padded with zeros by hardware,
no address or mask arithmetic in the kernel). A persistent kernel launches one
program per SM (fewer if there are fewer tiles) and lets each loop over output
tiles, so each program's start-up is paid once and the next tile's loads can
overlap the last one's epilogue. It does not even out the work: with a fixed
stride, 2048 tiles on 132 programs (8192^3, 128 x 256 tiles) leave 64 programs
idle for the last round, as 2048 one-tile programs would leave the last wave
part-empty.

Run it:  TRITON_INTERPRET=1 python snippets/matmul_tma.py   (CPU, interpreter)
         python snippets/matmul_tma.py                      (NVIDIA sm_90+)
"""

# --8<-- [start:imports]
import torch
import triton
import triton.language as tl

# --8<-- [end:imports]


# --8<-- [start:tile_coords]
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


# --8<-- [end:tile_coords]


# --8<-- [start:descriptors]
@triton.jit
def _descriptors(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    B_KMAJOR: tl.constexpr,
    EPILOGUE_SPLIT: tl.constexpr,
):
    # A descriptor records a matrix's shape and strides and the block shape
    # one load or store moves. The innermost stride must be 1 (a literal).
    a_desc = tl.make_tensor_descriptor(
        a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K]
    )
    if B_KMAJOR:  # B given as the transpose of a row-major N x K matrix
        b_desc = tl.make_tensor_descriptor(
            b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K]
        )
    else:
        b_desc = tl.make_tensor_descriptor(
            b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BLOCK_K, BLOCK_N]
        )
    if EPILOGUE_SPLIT:  # C is written as two BLOCK_M x BLOCK_N/2 halves
        c_desc = tl.make_tensor_descriptor(
            c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N // 2]
        )
    else:
        c_desc = tl.make_tensor_descriptor(
            c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N]
        )
    return a_desc, b_desc, c_desc


@triton.jit
def _tile_product(
    a_desc,
    b_desc,
    pid_m,
    pid_n,
    K,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    B_KMAJOR: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,
):
    # The K loop of one output tile. A load names the tile's first element;
    # rows or columns past the matrix edge arrive as zeros, so no masks.
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
        if B_KMAJOR:
            b = b_desc.load([pid_n * BLOCK_N, k * BLOCK_K]).T
        else:
            b = b_desc.load([k * BLOCK_K, pid_n * BLOCK_N])
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
    return acc


@triton.jit
def _store_tile(
    c_desc,
    acc,
    pid_m,
    pid_n,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    EPILOGUE_SPLIT: tl.constexpr,
):
    # A TMA store copies the tile from shared memory, which must first hold
    # it. Split in two, the tile needs half that staging space, and the first
    # half's copy runs while the second half is converted.
    row, col = pid_m * BLOCK_M, pid_n * BLOCK_N
    if EPILOGUE_SPLIT:
        halves = tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)).permute(0, 2, 1)
        left, right = tl.split(halves)
        c_desc.store([row, col], left.to(c_desc.dtype))
        c_desc.store([row, col + BLOCK_N // 2], right.to(c_desc.dtype))
    else:
        # Rows or columns past the matrix edge are clipped by the hardware.
        c_desc.store([row, col], acc.to(c_desc.dtype))


# --8<-- [end:descriptors]


# --8<-- [start:tma_kernel]
@triton.jit
def matmul_tma_kernel(
    a_ptr,  # A, M x K, row-major (stride (K, 1))
    b_ptr,  # B, K x N row-major, or its N x K transpose if B_KMAJOR
    c_ptr,  # C, M x N, row-major
    M,
    N,
    K,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    B_KMAJOR: tl.constexpr,  # is B stored as N x K (e.g. a Linear weight)?
    INPUT_PRECISION: tl.constexpr,  # "ieee" keeps float32 inputs exact
    EPILOGUE_SPLIT: tl.constexpr,  # store C in two halves (see _store_tile)
):
    a_desc, b_desc, c_desc = _descriptors(
        a_ptr,
        b_ptr,
        c_ptr,
        M,
        N,
        K,
        BLOCK_M,
        BLOCK_N,
        BLOCK_K,
        B_KMAJOR,
        EPILOGUE_SPLIT,
    )
    pid_m, pid_n = _tile_coords(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = _tile_product(
        a_desc,
        b_desc,
        pid_m,
        pid_n,
        K,
        BLOCK_M,
        BLOCK_N,
        BLOCK_K,
        B_KMAJOR,
        INPUT_PRECISION,
    )
    _store_tile(c_desc, acc, pid_m, pid_n, BLOCK_M, BLOCK_N, EPILOGUE_SPLIT)


# --8<-- [end:tma_kernel]


# --8<-- [start:persistent_kernel]
@triton.jit
def matmul_tma_persistent_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    B_KMAJOR: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,
    EPILOGUE_SPLIT: tl.constexpr,
    NUM_PROGRAMS: tl.constexpr,  # programs launched: one per SM at most
    FLATTEN: tl.constexpr,  # let the compiler pipeline across tile borders
):
    a_desc, b_desc, c_desc = _descriptors(
        a_ptr,
        b_ptr,
        c_ptr,
        M,
        N,
        K,
        BLOCK_M,
        BLOCK_N,
        BLOCK_K,
        B_KMAJOR,
        EPILOGUE_SPLIT,
    )
    num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    # Program p computes tiles p, p + NUM_PROGRAMS, p + 2 * NUM_PROGRAMS, ...
    for tile in tl.range(tl.program_id(0), num_tiles, NUM_PROGRAMS, flatten=FLATTEN):
        pid_m, pid_n = _tile_coords(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        acc = _tile_product(
            a_desc,
            b_desc,
            pid_m,
            pid_n,
            K,
            BLOCK_M,
            BLOCK_N,
            BLOCK_K,
            B_KMAJOR,
            INPUT_PRECISION,
        )
        _store_tile(c_desc, acc, pid_m, pid_n, BLOCK_M, BLOCK_N, EPILOGUE_SPLIT)


# --8<-- [end:persistent_kernel]


# --8<-- [start:autotune]
def _config(bm, bn, bk, warps, stages, group_m=8):
    meta = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": group_m}
    return triton.Config(meta, num_warps=warps, num_stages=stages)


# Candidates for Hopper (a block may use 232 448 bytes of shared memory).
# One list serves both kernels and both epilogues: four stages of a 128 x 256
# tile fit the split epilogue (229 408 bytes) but not the persistent kernel's
# whole-tile epilogue buffer (262 176), so the big tiles keep three.
CONFIGS = [
    _config(128, 256, 64, warps=8, stages=3),
    _config(256, 128, 64, warps=8, stages=3),
    _config(128, 128, 128, warps=8, stages=3),
    _config(128, 128, 64, warps=4, stages=4),
    _config(64, 128, 64, warps=4, stages=4),
    _config(64, 64, 64, warps=4, stages=4),
]
KEY = ["M", "N", "K", "B_KMAJOR", "EPILOGUE_SPLIT"]
matmul_tma_kernel_autotuned = triton.autotune(CONFIGS, key=KEY)(matmul_tma_kernel)
matmul_tma_persistent_kernel_autotuned = triton.autotune(CONFIGS, key=KEY)(
    matmul_tma_persistent_kernel
)
# --8<-- [end:autotune]


# --8<-- [start:launcher]
INTERPRETER_CONFIG = {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 4}


def matmul_tma(a, b, out=None, persistent=True, split_epilogue=True, config=None):
    """Return a @ b with TMA tensor descriptors (persistent kernel by default).

    A and ``out`` must be row-major; B row-major or the transpose of a
    row-major N x K matrix. TMA needs 16-byte aligned base addresses and row
    strides (K and N multiples of 8 for 16-bit types, of 4 for float32).
    """
    out, b_kmajor = _checked_tma(a, b, out, config)  # every input check; see below
    (M, K), N = a.shape, b.shape[1]
    if M == 0 or N == 0:
        return out
    # Device-side descriptors live in a small global scratch buffer that
    # Triton asks this allocator for at launch time.
    triton.set_allocator(_scratch)
    if _interpreting() and a.dtype == torch.bfloat16:
        # Laptop only: the interpreter (triton 3.6, 3.9) computes tl.dot on bfloat16
        # tiles wrongly. Widening is exact and keeps each layout (float()
        # preserves strides); the kernel still stores into the bfloat16 out.
        a, b = a.float(), b.float()
    args = (a, b, out, M, N, K)
    # float32 inputs: "ieee" instead of tl.dot's default tf32 (10-bit mantissa).
    precision = "ieee" if a.dtype == torch.float32 else "tf32"
    extra = {
        "B_KMAJOR": b_kmajor,
        "INPUT_PRECISION": precision,
        "EPILOGUE_SPLIT": split_epilogue,
    }
    if persistent:
        programs = _num_sms(a.device)
        extra.update(NUM_PROGRAMS=programs, FLATTEN=True)
        kernel = matmul_tma_persistent_kernel
    else:
        programs = None
        kernel = matmul_tma_kernel

    def grid(meta):  # one program per tile, or min(tiles, SMs) if persistent
        tiles = triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"])
        return (min(tiles, programs) if programs else tiles,)

    if config is None and _interpreting():
        config = INTERPRETER_CONFIG
    if config is not None:
        kernel[grid(config)](*args, **extra, **config)
    elif persistent:
        matmul_tma_persistent_kernel_autotuned[grid](*args, **extra)
    else:
        matmul_tma_kernel_autotuned[grid](*args, **extra)
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
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def _checked_tma(a, b, out, config=None):
    """Refuse what TMA cannot load or the kernel would get wrong; return out
    (new if None) and whether b is the transpose of a row-major N x K."""
    if config is not None:
        _check_config(config)
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        raise TypeError("matmul_tma expects two torch.Tensor arguments")
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
    b_kmajor = b.stride() == (1, K) and K != 1 and N != 1
    for name, t, want in (("a", a, (K, 1)), ("out", out, (N, 1))):
        if t.numel() > 1 and t.stride() != want:
            raise ValueError(f"{name} must be row-major (call .contiguous())")
    if not b_kmajor and b.numel() > 1 and b.stride() != (N, 1):
        raise ValueError("b must be row-major or a transposed row-major matrix")
    if M == 0 or N == 0:
        return out, b_kmajor
    # A row-major out cannot overlap itself, but it can share memory with an
    # input, and programs would then read tiles that others already wrote.
    for name, t in (("a", a), ("b", b)):
        if _overlaps(out, t):
            raise ValueError(
                f"out shares memory with {name}: pass a new tensor (or copy "
                f"{name} first)"
            )
    size = a.element_size()
    if K * size % 16 or N * size % 16:
        raise ValueError(
            f"TMA needs rows of a multiple of 16 bytes: K={K} and N={N} must be "
            f"multiples of {16 // size} for {a.dtype}; use matmul.py's matmul"
        )
    if any(t.data_ptr() % 16 for t in (a, b, out)):
        raise ValueError("TMA needs 16-byte aligned data pointers")
    return out, b_kmajor


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


def _overlaps(x, y) -> bool:
    # whether the bytes x and y can touch intersect (strides are never negative)
    if x.numel() == 0 or y.numel() == 0 or x.device != y.device:
        return False
    if x.device.type == "meta":  # shapes only, no memory: every data_ptr() is 0
        return False

    def span(t):
        last = sum((n - 1) * s for n, s in zip(t.shape, t.stride(), strict=True))
        return t.data_ptr(), t.data_ptr() + (last + 1) * t.element_size()

    (x0, x1), (y0, y1) = span(x), span(y)
    return x0 < y1 and y0 < x1


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


def _per_tile(a, b):
    return matmul_tma(a, b, persistent=False, split_epilogue=False)


def _persistent(a, b):
    return matmul_tma(a, b, persistent=True, split_epilogue=False)


def _best(kernel):
    def report():  # the config the autotuner chose for each key it saw
        return {str(k): str(v) for k, v in kernel.cache.items()}

    return report


BENCHMARKS = [
    {
        "name": "matmul_tma",
        "title": "GEMM with TMA tensor descriptors, one program per tile",
        "params": ["M", "N", "K"],
        "sizes": SQUARE[2:] + TRANSFORMER[1:2],
        "dtypes": ["float16"],
        "metric": "compute",  # TFLOP/s, roofline = measured large torch.matmul
        "work": _bench_flops,
        "make_inputs": _bench_inputs,
        "triton": _per_tile,
        "peers": {"cuBLAS": matmul_ref},  # torch.matmul calls cuBLAS
        "report": _best(matmul_tma_kernel_autotuned),
    },
    {
        "name": "matmul_tma_persistent",
        "title": "GEMM with TMA tensor descriptors, persistent programs",
        "params": ["M", "N", "K"],
        "sizes": SQUARE[2:] + TRANSFORMER[1:2],
        "dtypes": ["float16"],
        "metric": "compute",
        "work": _bench_flops,
        "make_inputs": _bench_inputs,
        "triton": _persistent,
        "peers": {"cuBLAS": matmul_ref},
        "report": _best(matmul_tma_persistent_kernel_autotuned),
    },
    {
        "name": "matmul_tma_persistent_split",
        "title": "GEMM with TMA, persistent programs, split epilogue",
        "params": ["M", "N", "K"],
        "sizes": SQUARE + TRANSFORMER,
        "dtypes": ["float16", "bfloat16"],
        "metric": "compute",
        "work": _bench_flops,
        "make_inputs": _bench_inputs,
        "triton": matmul_tma,
        "peers": {"cuBLAS": matmul_ref},
        "compile": "cuBLAS",  # torch.compile of torch.matmul, timed by the runner
        "report": _best(matmul_tma_persistent_kernel_autotuned),
    },
]
# --8<-- [end:benchmark]


# --8<-- [start:main]
def _median_ms(fn, *args) -> float:
    return triton.testing.do_bench(lambda: fn(*args), return_mode="median")


def main():
    device = "cuda" if torch.cuda.is_available() and not _interpreting() else "cpu"
    if device == "cuda" and torch.cuda.get_device_capability()[0] < 9:
        print("TMA needs compute capability 9.0 (Hopper) or newer; use matmul.py")
        return
    torch.manual_seed(0)
    for m, n, k in ((1, 8, 8), (65, 40, 24), (130, 72, 96)):
        a = torch.randn(m, k, device=device, dtype=torch.float16)
        b = torch.randn(k, n, device=device, dtype=torch.float16)
        expected = matmul_ref(a.float(), b.float()).half()
        for persistent in (False, True):
            got = matmul_tma(a, b, persistent=persistent)
            torch.testing.assert_close(got, expected, atol=1e-2, rtol=1e-2)
        print(f"{m}x{k} @ {k}x{n}: matches PyTorch on {device}")
    if device == "cuda":
        for n in (4096, 8192):
            a = torch.randn(n, n, device=device, dtype=torch.float16)
            b = torch.randn(n, n, device=device, dtype=torch.float16)
            for name, fn in (("Triton", matmul_tma), ("cuBLAS", matmul_ref)):
                ms = _median_ms(fn, a, b)
                # 2 n^3 operations in ms milliseconds, in TFLOP/s
                print(f"{n}^3 float16 {name:>6}: {2 * n**3 / ms / 1e9:.0f} TFLOP/s")


if __name__ == "__main__":
    main()
# --8<-- [end:main]
