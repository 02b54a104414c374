"""GPU basics: three small kernels that make the hardware's rules visible.

``strided_copy`` reads every k-th element (coalescing), ``persistent_copy``
copies with a chosen number of warps per SM (latency hiding and occupancy),
and ``fma_chain`` does a chosen amount of arithmetic per byte (the roofline).

Run it:  TRITON_INTERPRET=1 python snippets/gpu_basics.py   (CPU, interpreter)
         python snippets/gpu_basics.py                      (CUDA GPU)
"""

# --8<-- [start:imports]
import torch
import triton
import triton.language as tl

# --8<-- [end:imports]

# --8<-- [start:checks]
SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


# Triton picks the interpreter when @triton.jit decorates a kernel, at import,
# from triton.knobs (TRITON_INTERPRET = 1, true, on, yes or y, any case). Read
# the knob once, at import too, so launchers and kernels agree; a plain bool
# also traces under torch.compile, which cannot call the knob (C++).
_INTERPRETING = triton.knobs.runtime.interpret


def _interpreting() -> bool:
    return _INTERPRETING


def _check_input(name: str, x) -> None:
    """The checks every launcher here shares: a contiguous 1-D float tensor."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} expects a torch.Tensor, got {type(x).__name__}")
    if x.device.type != "cuda" and not _interpreting():
        raise ValueError(
            f"the tensor is on {x.device}: move it to a CUDA GPU, or set "
            "TRITON_INTERPRET=1 to run the kernel on the CPU"
        )
    if x.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"unsupported dtype {x.dtype}; use one of {SUPPORTED_DTYPES}")
    if x.dim() != 1:
        raise ValueError(f"{name} expects a 1-D tensor, got shape {tuple(x.shape)}")
    if not x.is_contiguous():
        raise ValueError(f"{name} needs a contiguous tensor (call .contiguous())")


def _check_out(out, n: int, like: torch.Tensor, same_place_ok=True) -> torch.Tensor:
    """out, or a new tensor, for n values like ``like`` (the input)."""
    if out is None:
        return torch.empty(n, dtype=like.dtype, device=like.device)
    if out.shape != (n,) or out.dtype != like.dtype or out.device != like.device:
        raise ValueError(
            f"out must be a 1-D tensor of {n} {like.dtype} on {like.device}"
        )
    if not out.is_contiguous():
        raise ValueError("out must be contiguous")
    # An out that overlaps the input is written while other programs still
    # read it. Only out = x itself, element i read and written by one lane,
    # is safe (same_place_ok: the kernel's element i reads x[i]).
    a0, b0 = out.data_ptr(), like.data_ptr()
    a1, b1 = a0 + out.nbytes, b0 + like.nbytes
    same = a0 == b0 and a1 == b1 and same_place_ok
    if n and like.numel() and a0 < b1 and b0 < a1 and not same:
        raise ValueError("out must not overlap x (out=x itself is allowed)")
    return out


# --8<-- [end:checks]


# ------------------------------------------------------------- coalescing ---
# --8<-- [start:strided_kernel]
@triton.jit
def strided_copy_kernel(
    x_ptr,  # input, contiguous
    out_ptr,  # output, n_out contiguous values
    n_out,  # number of elements to copy
    stride,  # distance, in elements, between two values read
    BLOCK_SIZE: tl.constexpr,
):
    # int64, as in fma_chain: offsets * stride reaches 2**31 sooner still
    pid = tl.program_id(axis=0).to(tl.int64)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_out
    # Neighbouring lanes read addresses `stride` elements apart: at stride 1
    # a warp's 32 reads fall in a few 32-byte sectors, at stride 32 (float32)
    # every read needs a sector of its own.
    values = tl.load(x_ptr + offsets * stride, mask=mask)
    tl.store(out_ptr + offsets, values, mask=mask)  # the write is always contiguous


# --8<-- [end:strided_kernel]


# --8<-- [start:strided_launcher]
def strided_copy(x, stride, out=None, block_size=1024):
    """x[::stride], read by strided_copy_kernel into out (new if None)."""
    _check_input("strided_copy", x)
    if not isinstance(stride, int) or isinstance(stride, bool) or stride < 1:
        raise ValueError(f"stride must be a positive int, got {stride!r}")
    if block_size <= 0 or block_size & (block_size - 1):
        raise ValueError(f"block_size must be a power of two, got {block_size}")
    n_out = triton.cdiv(x.numel(), stride)
    out = _check_out(out, n_out, x, same_place_ok=stride == 1)
    if n_out == 0:
        return out
    grid = (triton.cdiv(n_out, block_size),)
    strided_copy_kernel[grid](x, out, n_out, stride, BLOCK_SIZE=block_size)
    return out


def strided_copy_ref(x: torch.Tensor, stride: int) -> torch.Tensor:
    """The same gather in PyTorch: one copy kernel from a strided view."""
    view = x[::stride]
    return torch.empty(view.shape, dtype=x.dtype, device=x.device).copy_(view)


# --8<-- [end:strided_launcher]


# ------------------------------------------------------- latency hiding ---
# --8<-- [start:persistent_kernel]
@triton.jit
def persistent_copy_kernel(
    x_ptr,  # input, n_elements contiguous values
    out_ptr,  # output, same length and dtype
    n_elements,
    BLOCK_SIZE: tl.constexpr,  # one 16-byte vector per thread
):
    # A fixed number of programs walks the whole array: program `pid` copies
    # blocks pid, pid + P, pid + 2P, ... where P is the number of programs.
    # Each thread has one load in flight at a time, so the bytes in flight
    # on an SM grow with the number of warps resident on it.
    pid = tl.program_id(axis=0).to(tl.int64)  # int64, as in fma_chain
    step = tl.num_programs(axis=0).to(tl.int64) * BLOCK_SIZE
    for start in range(pid * BLOCK_SIZE, n_elements, step):
        offsets = start + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_elements
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


# --8<-- [end:persistent_kernel]


# --8<-- [start:persistent_launcher]
def persistent_copy(x, num_programs, num_warps=4, out=None):
    """Copy x with exactly num_programs programs of num_warps warps each."""
    _check_input("persistent_copy", x)
    if not isinstance(num_programs, int) or num_programs < 1:
        raise ValueError(f"num_programs must be a positive int, got {num_programs!r}")
    if num_warps not in (1, 2, 4, 8, 16, 32):
        raise ValueError(f"num_warps must be a power of two up to 32, got {num_warps}")
    out = _check_out(out, x.numel(), x)
    if x.numel() == 0:
        return out
    # 32 threads per warp, each moving one 16-byte vector per loop trip.
    block_size = 32 * num_warps * (16 // x.element_size())
    persistent_copy_kernel[(num_programs,)](
        x, out, x.numel(), BLOCK_SIZE=block_size, num_warps=num_warps
    )
    return out


# --8<-- [end:persistent_launcher]


# --8<-- [start:occupancy]
def resident_warps_per_sm(regs_per_thread, num_warps, shared_bytes, limits):
    """How many warps of one kernel fit on an SM at once (its occupancy).

    A simplified form of CUDA's occupancy rules: an SM holds at most
    ``max_warps`` warps and ``max_blocks`` blocks (programs); registers are
    handed out per warp, rounded up to multiples of 256; each block takes the
    shared memory it asks for plus ``reserved_shared`` bytes that CUDA keeps
    for itself (1 KB from compute capability 8.0), rounded up to
    ``shared_granularity`` bytes.
    """
    regs_per_warp = -(-max(regs_per_thread, 1) * 32 // 256) * 256
    blocks = min(
        limits["max_warps"] // num_warps,
        limits["max_blocks"],
        limits["regs"] // (regs_per_warp * num_warps),
    )
    per_block = shared_bytes + limits.get("reserved_shared", 0)
    if per_block:
        grain = limits.get("shared_granularity", 128)
        blocks = min(blocks, limits["shared"] // (-(-per_block // grain) * grain))
    return blocks * num_warps


# --8<-- [end:occupancy]


def _sm(warps: int, blocks: int, shared_kb: int, reserved_kb: int) -> dict:
    return {
        "max_warps": warps,
        "max_blocks": blocks,
        "regs": 65536,  # 64 K 32-bit registers on each
        "shared": shared_kb * 1024,
        "reserved_shared": reserved_kb * 1024,
    }


# Per-SM limits by compute capability, NVIDIA's figures (CUDA C++ Programming
# Guide, table "Technical Specifications per Compute Capability"): resident
# warps, resident blocks, 32-bit registers, shared memory (bytes), and the
# shared memory CUDA reserves per block (1 KB from 8.0: why an SM of 228 KB
# gives a block at most 227 KB). A GPU's own properties replace every figure
# it reports; the block limit and the reserve it does not report (torch
# exposes no such property), so they come from here.
VENDOR_SM_LIMITS = {
    (7, 5): _sm(32, 16, 64, 0),
    (8, 0): _sm(64, 32, 164, 1),
    (8, 6): _sm(48, 16, 100, 1),
    (8, 9): _sm(48, 24, 100, 1),
    (9, 0): _sm(64, 32, 228, 1),
}
SM90_LIMITS = {**VENDOR_SM_LIMITS[(9, 0)], "shared_granularity": 128}


def sm_limits(props) -> dict | None:
    """The occupancy limits of the GPU described by ``props`` (what
    ``torch.cuda.get_device_properties`` returns): its own figures where it
    reports them, the vendor's table for the rest; None for a compute
    capability the table does not know (no guessed limits)."""
    vendor = VENDOR_SM_LIMITS.get((props.major, props.minor))
    if vendor is None:
        return None
    limits = {**vendor, "shared_granularity": 128}
    limits["max_warps"] = props.max_threads_per_multi_processor // 32
    limits["shared"] = props.shared_memory_per_multiprocessor
    limits["regs"] = getattr(props, "regs_per_multiprocessor", limits["regs"])
    return limits


def _on_gpu() -> bool:
    return torch.cuda.is_available() and not _interpreting()


def _compiled_persistent_copies(warp_counts) -> dict:
    """{num_warps: the CompiledKernel the GPU runs}: one tiny launch each (a
    launch returns the compiled kernel; the interpreter returns nothing)."""
    if not _on_gpu():
        return {}
    x = torch.zeros(1, device="cuda")
    found = {}
    for num_warps in sorted(set(warp_counts)):
        block_size = 32 * num_warps * (16 // x.element_size())
        found[num_warps] = persistent_copy_kernel[(1,)](
            x, torch.empty_like(x), 1, BLOCK_SIZE=block_size, num_warps=num_warps
        )
    return found


def occupancy_report() -> dict:
    """Registers, spills and occupancy of persistent_copy_kernel at each
    num_warps the latency-hiding benchmark launches."""
    limits = sm_limits(torch.cuda.get_device_properties(0)) if _on_gpu() else None
    warp_counts = [_hiding_num_warps(size["warps_per_sm"]) for size in HIDING_SIZES]
    kernels = []
    for num_warps, kernel in _compiled_persistent_copies(warp_counts).items():
        regs = getattr(kernel, "n_regs", None)
        shared = getattr(getattr(kernel, "metadata", None), "shared", 0) or 0
        kernels.append(
            {
                "num_warps": num_warps,
                "registers_per_thread": regs,
                "spills": getattr(kernel, "n_spills", None),
                "shared_bytes": shared,
                "resident_warps_per_sm": (
                    resident_warps_per_sm(regs, num_warps, shared, limits)
                    if regs and limits
                    else None
                ),
            }
        )
    return {"compiled kernels": kernels, "SM limits used": limits}


# -------------------------------------------------------------- roofline ---
# --8<-- [start:fma_kernel]
@triton.jit
def fma_chain_kernel(
    x_ptr,  # input, n_elements contiguous values
    out_ptr,  # output, same length and dtype
    n_elements,
    a,  # float scalar
    b,  # float scalar
    ITERS: tl.constexpr,  # multiply-adds per element: the arithmetic intensity
    BLOCK_SIZE: tl.constexpr,
):
    # int64: in int32, pid * BLOCK_SIZE would wrap round past 2**31 - 1
    # elements (8 GiB of float32) and address memory before the tensor
    pid = tl.program_id(axis=0).to(tl.int64)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    y = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    for _ in range(ITERS):
        y = y * a + b  # one fused multiply-add: 2 FLOPs on the CUDA cores
    tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)


# --8<-- [end:fma_kernel]


# --8<-- [start:fma_launcher]
def fma_chain(x, iters, a=0.999, b=0.001, out=None, block_size=1024):
    """Apply y <- a*y + b to every element ``iters`` times, in float32."""
    _check_input("fma_chain", x)
    if not isinstance(iters, int) or isinstance(iters, bool) or iters < 0:
        raise ValueError(f"iters must be a non-negative int, got {iters!r}")
    if block_size <= 0 or block_size & (block_size - 1):
        raise ValueError(f"block_size must be a power of two, got {block_size}")
    out = _check_out(out, x.numel(), x)
    if x.numel() == 0:
        return out
    grid = (triton.cdiv(x.numel(), block_size),)
    fma_chain_kernel[grid](
        x, out, x.numel(), float(a), float(b), ITERS=iters, BLOCK_SIZE=block_size
    )
    return out


def fma_chain_ref(x, iters, a=0.999, b=0.001):
    """The same recurrence in PyTorch: two element-wise kernels per step."""
    y = x.to(torch.float32)
    for _ in range(iters):
        y = y * a + b
    return y.to(x.dtype)


# --8<-- [end:fma_launcher]


# --8<-- [start:benchmark]
def _itemsize(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


def _sm_count(device) -> int:
    if torch.device(device).type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4


# Coalescing: copy n_elements values read `stride` apart.
def _strided_inputs(size, dtype, device):
    return (
        torch.randn(size["n_elements"] * size["stride"], dtype=dtype, device=device),
        size["stride"],
    )


def _copy_bytes(size, dtype):
    # Useful bytes only: n read + n written. GB/s = 2 * n * itemsize / s / 1e9
    return 2 * size["n_elements"] * _itemsize(dtype)


# Latency hiding: the same copy with 1 .. 64 warps resident per SM.
def _hiding_num_warps(warps_per_sm: int) -> int:
    # at most 4 warps a program; more warps per SM come from more programs
    return min(warps_per_sm, 4)


def _persistent_inputs(size, dtype, device):
    warps = size["warps_per_sm"]
    num_warps = _hiding_num_warps(warps)
    programs = _sm_count(device) * (warps // num_warps)
    return (
        torch.randn(size["n_elements"], dtype=dtype, device=device),
        programs,
        num_warps,
    )


def _persistent_triton(x, num_programs, num_warps):
    return persistent_copy(x, num_programs, num_warps)


def _clone(x, *_):
    return x.clone()


# Roofline: `iters` multiply-adds per element loaded and stored.
def _fma_inputs(size, dtype, device):
    return torch.randn(size["n_elements"], dtype=dtype, device=device), size["iters"]


def _fma_flops(size, dtype):
    # TFLOP/s = 2 * iters * n / s / 1e12 (a multiply-add counts as 2 FLOPs)
    return 2 * size["iters"] * size["n_elements"]


def _counts(sizes, dtypes, flops, nbytes):
    """FLOPs and bytes of every row: the roofline plot places a row by their ratio."""
    return [
        {
            **size,
            "dtype": d,
            "flops": flops(size, getattr(torch, d)),
            "bytes": nbytes(size, getattr(torch, d)),
        }
        for d in dtypes
        for size in sizes
    ]


COALESCING_SIZES = [{"n_elements": 2**24, "stride": s} for s in (1, 2, 4, 8, 16, 32)]
HIDING_SIZES = [
    {"n_elements": 2**26, "warps_per_sm": w} for w in (1, 2, 4, 8, 16, 32, 64)
]
FMA_SIZES = [{"n_elements": 2**24, "iters": k} for k in (1, 4, 16, 64, 256, 1024)]

BENCHMARKS = [
    {
        "name": "gpu_coalescing",
        "title": "Strided copy, out = x[::stride] (coalescing)",
        "params": ["n_elements", "stride"],
        "sizes": COALESCING_SIZES,
        "dtypes": ["float32"],
        "metric": "bandwidth",  # useful GB/s, roofline = measured copy bandwidth
        "work": _copy_bytes,
        "make_inputs": _strided_inputs,
        "triton": strided_copy,
        "peers": {"PyTorch eager": strided_copy_ref},
    },
    {
        "name": "gpu_latency_hiding",
        "title": "Persistent copy with a chosen number of warps per SM",
        "params": ["n_elements", "warps_per_sm"],
        "sizes": HIDING_SIZES,
        "dtypes": ["float32"],
        "metric": "bandwidth",  # GB/s, roofline = measured copy bandwidth
        "work": _copy_bytes,
        "make_inputs": _persistent_inputs,
        "triton": _persistent_triton,
        "peers": {"PyTorch eager": _clone},
        "report": occupancy_report,
    },
    {
        "name": "gpu_fma_intensity",
        "title": "y = a*y + b repeated `iters` times per element",
        "params": ["n_elements", "iters"],
        "sizes": FMA_SIZES,
        "dtypes": ["float32"],
        "metric": "compute",  # roofline = measured large torch.matmul rate
        "work": _fma_flops,
        "make_inputs": _fma_inputs,
        "triton": fma_chain,
        "peers": {"PyTorch eager": fma_chain_ref},
        "report": lambda: {
            "roofline": _counts(FMA_SIZES, ["float32"], _fma_flops, _copy_bytes)
        },
    },
]
# --8<-- [end:benchmark]


# --8<-- [start:main]
def main():
    device = "cuda" if torch.cuda.is_available() and not _interpreting() else "cpu"
    torch.manual_seed(0)
    x = torch.randn(10_000, device=device)
    for stride in (1, 3, 32):
        torch.testing.assert_close(strided_copy(x, stride), strided_copy_ref(x, stride))
    torch.testing.assert_close(persistent_copy(x, num_programs=3), x)
    torch.testing.assert_close(fma_chain(x, 16), fma_chain_ref(x, 16))
    print(f"strided_copy, persistent_copy and fma_chain match PyTorch on {device}")
    if device == "cuda":
        big = torch.randn(2**26, device=device)
        for stride in (1, 8, 32):
            n = big.numel() // stride
            ms = triton.testing.do_bench(lambda s=stride: strided_copy(big, s))
            print(f"stride {stride:>2}: {2 * n * 4 / ms / 1e6:7.0f} useful GB/s")


if __name__ == "__main__":
    main()
# --8<-- [end:main]
