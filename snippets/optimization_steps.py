"""One kernel made fast step by step: the row sums of a matrix, out[m] = sum_n x[m, n].

Four versions, each a separate benchmark, so that the lesson can show what every
step bought on a real GPU: v0 one element at a time, v1 a block of a row at a time,
v2 a tile of several rows per program, v3 the same tile autotuned.

Run it:  TRITON_INTERPRET=1 python snippets/optimization_steps.py   (CPU)
         python snippets/optimization_steps.py                      (CUDA GPU)
"""

# --8<-- [start:imports]
import torch
import triton
import triton.language as tl

# --8<-- [end:imports]


# --8<-- [start:v0_kernel]
@triton.jit
def rowsum_v0_kernel(
    x_ptr,  # matrix, n_rows x n_cols, rows stride_row elements apart
    out_ptr,  # n_rows sums
    n_cols,
    stride_row,
):
    row = tl.program_id(axis=0).to(tl.int64)  # one program per row
    acc = tl.zeros((), dtype=tl.float32)  # a single float32 number
    for col in range(0, n_cols):  # one 4-byte element per loop trip
        acc += tl.load(x_ptr + row * stride_row + col).to(tl.float32)
    tl.store(out_ptr + row, acc.to(out_ptr.dtype.element_ty))


# --8<-- [end:v0_kernel]


# --8<-- [start:v1_kernel]
@triton.jit
def rowsum_v1_kernel(
    x_ptr,  # matrix, n_rows x n_cols, rows stride_row elements apart
    out_ptr,  # n_rows sums
    n_cols,
    stride_row,
    BLOCK_N: tl.constexpr,  # columns read per loop trip, a power of two
):
    row = tl.program_id(axis=0).to(tl.int64)  # still one program per row
    cols = tl.arange(0, BLOCK_N)
    # BLOCK_N partial sums, spread over the program's threads: at BLOCK_N =
    # 1024 and 4 warps, 8 per thread, loaded as two 16-byte vectors a trip
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * stride_row + start + cols, mask=mask, other=0.0)
        acc += x.to(tl.float32)
    total = tl.sum(acc, axis=0)  # fold the lanes once, at the end
    tl.store(out_ptr + row, total.to(out_ptr.dtype.element_ty))


# --8<-- [end:v1_kernel]


# --8<-- [start:v2_kernel]
@triton.jit
def rowsum_tile_kernel(
    x_ptr,  # matrix, n_rows x n_cols, rows stride_row elements apart
    out_ptr,  # n_rows sums
    n_rows,
    n_cols,
    stride_row,
    BLOCK_M: tl.constexpr,  # rows per program
    BLOCK_N: tl.constexpr,  # columns per loop trip
):
    rows = tl.program_id(axis=0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < n_rows
    row_start = rows.to(tl.int64)[:, None] * stride_row  # (BLOCK_M, 1)
    cols = tl.arange(0, BLOCK_N)[None, :]  # (1, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        mask = row_mask[:, None] & (start + cols < n_cols)
        x = tl.load(x_ptr + row_start + start + cols, mask=mask, other=0.0)
        acc += x.to(tl.float32)
    total = tl.sum(acc, axis=1)  # (BLOCK_M,): one sum per row of the tile
    tl.store(out_ptr + rows, total.to(out_ptr.dtype.element_ty), mask=row_mask)


# --8<-- [end:v2_kernel]


# --8<-- [start:v3_kernel]
# v3 is the v2 kernel, wrapped by the autotuner: tile shape and warps are timed
# on the GPU for each new (n_rows, n_cols) and the fastest kept. num_stages is
# not tuned: v2's loop is a plain `range` of loads and adds, which the compiler
# does not pipeline, so every num_stages gives the same machine code
# (tests/test_compiler_claims.py compiles it to check).
TUNING_CONFIGS = [
    triton.Config({"BLOCK_M": m, "BLOCK_N": n}, num_warps=w)
    for m, n, w in [
        (1, 2048, 8),
        (2, 1024, 4),
        (4, 1024, 8),
        (8, 512, 4),
        (8, 512, 8),
        (16, 256, 4),
        (32, 128, 4),
        (64, 128, 8),
    ]
]
rowsum_tuned_kernel = triton.autotune(configs=TUNING_CONFIGS, key=["n_rows", "n_cols"])(
    rowsum_tile_kernel
)
# --8<-- [end:v3_kernel]


# --8<-- [start:launcher]
SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def _prepare(x, out):
    """Check the input matrix, allocate or check the output vector."""
    if not isinstance(x, torch.Tensor):
        raise TypeError("rowsum expects a torch.Tensor")
    if x.device.type != "cuda" and not _interpreting():
        raise ValueError(
            f"x is on {x.device}: move it to a CUDA GPU, or set "
            "TRITON_INTERPRET=1 to run the kernel on the CPU"
        )
    if x.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"unsupported dtype {x.dtype}; use one of {SUPPORTED_DTYPES}")
    if x.dim() != 2:
        raise ValueError(
            f"x must be a matrix (2 dimensions), got shape {tuple(x.shape)}"
        )
    if x.stride(1) != 1:
        # Rows may be strided (a slice of a wider matrix), columns may not.
        raise ValueError("the columns of x must be contiguous (x.stride(1) == 1)")
    if out is None:
        out = torch.empty(x.shape[0], dtype=x.dtype, device=x.device)
    elif out.shape != x.shape[:1] or out.dtype != x.dtype or out.device != x.device:
        raise ValueError(
            "out must be a vector of x.shape[0] elements, x's dtype and device"
        )
    elif not out.is_contiguous():
        raise ValueError("out must be contiguous")
    if out.numel() and x.numel():
        # a row's sum written over a row another program still reads: refused
        lo = x.data_ptr()
        hi = lo + ((x.shape[0] - 1) * x.stride(0) + x.shape[1]) * x.element_size()
        if out.data_ptr() < hi and lo < out.data_ptr() + out.nbytes:
            raise ValueError("out must not overlap x")
    return out


def rowsum_v0(x, out=None):
    out = _prepare(x, out)
    n_rows, n_cols = x.shape
    if n_rows:
        rowsum_v0_kernel[(n_rows,)](x, out, n_cols, x.stride(0))
    return out


def rowsum_v1(x, out=None, block_n=1024):
    out = _prepare(x, out)
    n_rows, n_cols = x.shape
    if n_rows:
        rowsum_v1_kernel[(n_rows,)](x, out, n_cols, x.stride(0), BLOCK_N=block_n)
    return out


def rowsum_v2(x, out=None, num_warps=4):
    out = _prepare(x, out)
    n_rows, n_cols = x.shape
    # A tile of about 4096 elements: as wide as the row (up to 1024 columns),
    # and as many rows as fit, so short rows no longer mean tiny programs.
    block_n = min(triton.next_power_of_2(max(n_cols, 1)), 1024)
    block_m = max(1, 4096 // block_n)
    grid = (triton.cdiv(n_rows, block_m),)
    if n_rows:
        rowsum_tile_kernel[grid](
            x, out, n_rows, n_cols, x.stride(0),
            BLOCK_M=block_m, BLOCK_N=block_n, num_warps=num_warps,
        )  # fmt: skip
    return out


def rowsum_v3(x, out=None, config=None):
    """Autotuned on a GPU; ``config`` (a dict) launches one fixed configuration
    instead, which is how the CPU tests run it (the interpreter cannot tune)."""
    out = _prepare(x, out)
    n_rows, n_cols = x.shape
    if not n_rows:
        return out
    if config is None:
        grid = lambda meta: (triton.cdiv(n_rows, meta["BLOCK_M"]),)
        rowsum_tuned_kernel[grid](x, out, n_rows, n_cols, x.stride(0))
    else:
        grid = (triton.cdiv(n_rows, config["BLOCK_M"]),)
        rowsum_tile_kernel[grid](x, out, n_rows, n_cols, x.stride(0), **config)
    return out


# Triton picks the interpreter when @triton.jit decorates a kernel, at import,
# from triton.knobs (TRITON_INTERPRET = 1, true, on, yes or y, any case). Read
# the knob once, at import too, so launchers and kernels agree; a plain bool
# also traces under torch.compile, which cannot call the knob (C++).
_INTERPRETING = triton.knobs.runtime.interpret


def _interpreting() -> bool:
    return _INTERPRETING


# --8<-- [end:launcher]


# --8<-- [start:reference]
def rowsum_ref(x: torch.Tensor) -> torch.Tensor:
    """The same sums in PyTorch, accumulated in float32: reference and eager peer."""
    return x.sum(dim=1, dtype=torch.float32).to(x.dtype)


# --8<-- [end:reference]


# --8<-- [start:benchmark]
def _bench_inputs(size: dict, dtype: torch.dtype, device: str):
    return (torch.randn(size["M"], size["N"], dtype=dtype, device=device),)


def _bench_bytes(size: dict, dtype: torch.dtype) -> int:
    # The matrix is read once, M sums written: GB/s = (M*N + M) * itemsize / s / 1e9
    itemsize = torch.empty((), dtype=dtype).element_size()
    return (size["M"] * size["N"] + size["M"]) * itemsize


# Same matrices for every step: long rows, short rows, and a small matrix
# that fits in the 50 MB L2 of an H100. 256 MB each for the first two.
SIZES = [{"M": 16384, "N": 4096}, {"M": 262144, "N": 256}, {"M": 2048, "N": 2048}]
_COMMON = {
    "params": ["M", "N"],
    "sizes": SIZES,
    "dtypes": ["float32"],
    "metric": "bandwidth",  # rate in GB/s, roofline = measured copy bandwidth
    "work": _bench_bytes,
    "make_inputs": _bench_inputs,
    "peers": {"PyTorch eager": rowsum_ref},
}
BENCHMARKS = [
    {
        "name": "rowsum_v0_naive",
        "title": "Row sums, v0: one row per program, one element at a time",
        "triton": rowsum_v0,
        **_COMMON,
    },
    {
        "name": "rowsum_v1_blocked",
        "title": "Row sums, v1: one row per program, 1024 columns at a time",
        "triton": rowsum_v1,
        **_COMMON,
    },
    {
        "name": "rowsum_v2_tiled",
        "title": "Row sums, v2: a tile of several rows per program",
        "triton": rowsum_v2,
        **_COMMON,
    },
    {
        "name": "rowsum_v3_tuned",
        "title": "Row sums, v3: the tile autotuned (shape, warps)",
        "triton": rowsum_v3,
        **_COMMON,
        # the runner also times torch.compile of it, and stores the config
        # the autotuner chose for each row with that row (its `autotune`)
        "compile": "PyTorch eager",
    },
]
# --8<-- [end:benchmark]


# --8<-- [start:compiler_report]
def compiler_report() -> str:
    """Registers, spills and shared memory of each step, as compiled for this GPU.

    A launch returns the compiled kernel; its ``n_regs`` (registers per thread),
    ``n_spills`` (registers spilled to local memory) and ``metadata.shared``
    (bytes of shared memory per program) are the compiler's own report.
    """
    x = torch.randn(16384, 4096, device="cuda")
    out = torch.empty(x.shape[0], device="cuda")
    n_rows, n_cols = x.shape
    launches = {
        "v0": lambda: rowsum_v0_kernel[(n_rows,)](x, out, n_cols, x.stride(0)),
        "v1": lambda: rowsum_v1_kernel[(n_rows,)](
            x, out, n_cols, x.stride(0), BLOCK_N=1024
        ),
        "v2": lambda: rowsum_tile_kernel[(n_rows // 4,)](
            x, out, n_rows, n_cols, x.stride(0), BLOCK_M=4, BLOCK_N=1024
        ),
    }
    lines = [
        f"{'step':<6}{'num_warps':>10}{'registers':>11}{'spills':>8}{'shared B':>10}"
    ]
    for step, launch in launches.items():
        k = launch()
        lines.append(
            f"{step:<6}{k.metadata.num_warps:>10}{k.n_regs:>11}{k.n_spills:>8}"
            f"{k.metadata.shared:>10}"
        )
    return "\n".join(lines)


# --8<-- [end:compiler_report]


# --8<-- [start:ncu]
# What Nsight Compute collects for one launch of a step (see the lesson for how
# to read each line): time, throughput as % of the GPU's peak, occupancy,
# registers, and the average number of cycles a warp waits per instruction
# issued, split by the reason it waits.
NCU_METRICS = [
    "gpu__time_duration.sum",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__bytes_read.sum",
    "launch__registers_per_thread",
    "launch__block_size",
    "launch__grid_size",
    "sm__maximum_warps_per_active_cycle_pct",  # theoretical occupancy
    "sm__warps_active.avg.pct_of_peak_sustained_active",  # achieved occupancy
    "smsp__issue_active.avg.per_cycle_active",
    "smsp__average_warps_active_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
]


def profile_one_launch(step: str):
    """Launch one step once on the long-rows matrix: the launch ncu measures."""
    x = torch.randn(16384, 4096, device="cuda")
    {"v0": rowsum_v0, "v1": rowsum_v1, "v2": rowsum_v2}[step](x)
    torch.cuda.synchronize()


# --8<-- [end:ncu]


# For the GPU runner (not part of the lesson): it runs `ncu --metrics ...
# --kernel-name regex:KERNEL --launch-count 1 python
# snippets/optimization_steps.py --ncu STEP` and keeps the output.
CAPTURES = {
    "rowsum_compiler_report": compiler_report,
    "rowsum_v0_ncu": {
        "ncu": {"args": ["--ncu", "v0"], "metrics": NCU_METRICS, "kernel": "rowsum_v0"}
    },
    "rowsum_v2_ncu": {
        "ncu": {
            "args": ["--ncu", "v2"],
            "metrics": NCU_METRICS,
            "kernel": "rowsum_tile",
        }
    },
}
# The compiler's report depends on no timing: the runner may make it while
# its tests use the GPU (the ncu captures run with the GPU alone).
UNTIMED_CAPTURES = ("rowsum_compiler_report",)


# --8<-- [start:main]
def main():
    device = "cuda" if torch.cuda.is_available() and not _interpreting() else "cpu"
    torch.manual_seed(0)
    steps = [rowsum_v0, rowsum_v1, rowsum_v2]
    steps.append(rowsum_v3 if device == "cuda" else _v3_fixed)
    for shape in [(1, 1), (7, 1000), (300, 33)]:
        x = torch.randn(*shape, device=device)
        for step in steps:
            torch.testing.assert_close(step(x), rowsum_ref(x), atol=1e-4, rtol=1e-4)
        print(f"{shape}: all four steps match PyTorch on {device}")
    if device == "cuda":
        x = torch.randn(16384, 4096, device=device)
        for step in steps:
            ms = triton.testing.do_bench(lambda s=step: s(x), return_mode="median")
            gbps = _bench_bytes({"M": 16384, "N": 4096}, x.dtype) / ms / 1e6
            print(f"{step.__name__}: {ms:.3f} ms, {gbps:.0f} GB/s")


def _v3_fixed(x):
    return rowsum_v3(x, config={"BLOCK_M": 4, "BLOCK_N": 256, "num_warps": 4})


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["--ncu"]:
        profile_one_launch(sys.argv[2])
    else:
        main()
# --8<-- [end:main]
