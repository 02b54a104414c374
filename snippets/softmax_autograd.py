"""Softmax with a hand-written backward pass, wired into autograd and torch.compile.

A forward and a backward Triton kernel (one block of rows per program, the
whole row in registers), autotuned; a torch.autograd.Function around them; and
the same kernels registered as a torch.library custom op so torch.compile can
trace them without a graph break.

Run it:  TRITON_INTERPRET=1 python snippets/softmax_autograd.py   (CPU, interpreter)
         python snippets/softmax_autograd.py                      (CUDA GPU)
"""

# --8<-- [start:imports]
import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time

import torch
import triton
import triton.language as tl
from torch._subclasses.fake_tensor import is_fake

# --8<-- [end:imports]


# --8<-- [start:fwd_kernel]
@triton.jit
def _to_compute_dtype(x):
    # float64 stays float64 (gradcheck needs it); every other dtype is computed
    # in float32. The test is on a compile-time type, so it costs nothing.
    if x.dtype != tl.float64:
        x = x.to(tl.float32)
    return x


@triton.jit
def _softmax_fwd_kernel(
    x_ptr,  # input, n_rows x n_cols, rows x_row_stride elements apart
    y_ptr,  # output, same shape and dtype
    n_rows,
    n_cols,
    x_row_stride,
    y_row_stride,
    BLOCK_SIZE: tl.constexpr,  # a power of two >= n_cols: a whole row at once
    ROWS: tl.constexpr,  # rows per program: several short rows share one program
):
    pid = tl.program_id(axis=0)
    rows = pid * ROWS + tl.arange(0, ROWS)  # [ROWS]
    cols = tl.arange(0, BLOCK_SIZE)  # [BLOCK_SIZE]
    # A 2-D block of [ROWS, BLOCK_SIZE] elements. int64 row offsets: a tensor
    # of more than 2**31 elements would overflow 32-bit index arithmetic.
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x_offsets = rows.to(tl.int64)[:, None] * x_row_stride + cols[None, :]
    # Padding lanes read -inf: they do not change the max, and exp(-inf) = 0.
    x = tl.load(x_ptr + x_offsets, mask=mask, other=-float("inf"))
    x = _to_compute_dtype(x)
    row_max = tl.max(x, axis=1)  # [ROWS]
    numerator = tl.exp(x - row_max[:, None])
    denominator = tl.sum(numerator, axis=1)  # [ROWS]
    y = numerator / denominator[:, None]
    y_offsets = rows.to(tl.int64)[:, None] * y_row_stride + cols[None, :]
    tl.store(y_ptr + y_offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


# --8<-- [end:fwd_kernel]


# --8<-- [start:bwd_kernel]
@triton.jit
def _softmax_bwd_kernel(
    y_ptr,  # the forward's output, n_rows x n_cols
    dy_ptr,  # gradient of the loss with respect to y, same shape
    dx_ptr,  # gradient with respect to x (written), same shape
    n_rows,
    n_cols,
    row_stride,  # elements between rows, the same for all three tensors
    BLOCK_SIZE: tl.constexpr,
    ROWS: tl.constexpr,
):
    pid = tl.program_id(axis=0)
    rows = pid * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offsets = rows.to(tl.int64)[:, None] * row_stride + cols[None, :]
    # Padding lanes read 0, so they add nothing to the row sum below.
    y = _to_compute_dtype(tl.load(y_ptr + offsets, mask=mask, other=0.0))
    dy = _to_compute_dtype(tl.load(dy_ptr + offsets, mask=mask, other=0.0))
    row_dot = tl.sum(y * dy, axis=1)  # [ROWS]: sum_j y_j * dy_j
    dx = y * (dy - row_dot[:, None])  # dx_i = y_i * (dy_i - sum_j y_j dy_j)
    tl.store(dx_ptr + offsets, dx.to(dx_ptr.dtype.element_ty), mask=mask)


# --8<-- [end:bwd_kernel]


# --8<-- [start:autotune]
# (ROWS, num_warps) pairs to try. Short rows want several rows per program,
# long rows want more warps per row; the pruning below keeps only the pairs
# that make sense for the row length being launched.
_PAIRS = [(1, 4), (1, 8), (1, 16), (2, 8), (4, 4), (4, 8), (8, 4), (16, 4)]
_CONFIGS = [triton.Config({"ROWS": rows}, num_warps=warps) for rows, warps in _PAIRS]


def _prune_configs(configs, named_args, **kwargs):
    """Drop configs that hold too much per program or give threads too little."""
    block = kwargs["BLOCK_SIZE"]
    kept = []
    for config in configs:
        elements = config.kwargs["ROWS"] * block  # elements one program holds
        threads = 32 * config.num_warps
        too_big = config.kwargs["ROWS"] > 1 and elements > 8192
        # under 4 elements a thread (8 bytes in 16-bit types, 16 in float32)
        too_thin = elements < 4 * threads
        if not too_big and not too_thin:
            kept.append(config)
    return kept or [triton.Config({"ROWS": 1}, num_warps=4)]


def _autotuned(kernel, output):
    # The autotuner wraps the plain @triton.jit kernel instead of decorating
    # it, so the CPU tests (where autotuning cannot run: it needs a GPU driver
    # to time configs) can still launch the kernel itself with a fixed config.
    # Each autotuner gets its own copy of the list: Triton keeps the list it is
    # given, and torch.compile refuses one list reached through two autotuners.
    # restore_value: tuning runs the kernel many times; with out the input
    # itself (in place), each run would start from the last one's result.
    return triton.autotune(
        configs=list(_CONFIGS),
        key=["n_cols"],  # re-tune per row length (and, implicitly, per dtype)
        prune_configs_by={"early_config_prune": _prune_configs},
        restore_value=[output],
    )(kernel)


_softmax_fwd_autotuned = _autotuned(_softmax_fwd_kernel, "y_ptr")
_softmax_bwd_autotuned = _autotuned(_softmax_bwd_kernel, "dx_ptr")
# --8<-- [end:autotune]


# --8<-- [start:launcher]
SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)
MAX_COLS = 32768  # a whole row must fit in one program's registers


# Triton picks the interpreter when @triton.jit decorates a kernel, at import,
# from triton.knobs (TRITON_INTERPRET = 1, true, on, yes or y, any case). Read
# the knob once, at import too, so launchers and kernels agree; a plain bool
# also traces under torch.compile, which cannot call the knob (C++).
_INTERPRETING = triton.knobs.runtime.interpret


def _interpreting() -> bool:
    return _INTERPRETING


def _check(name, t, like=None):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.device.type != "cuda" and not _interpreting():
        raise ValueError(
            f"{name} is on {t.device}: move it to a CUDA GPU, or set "
            "TRITON_INTERPRET=1 to run the kernels on the CPU"
        )
    if t.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"unsupported dtype {t.dtype}; use one of {SUPPORTED_DTYPES}")
    if t.dim() == 0:
        raise ValueError(f"{name} must have at least one dimension")
    if t.shape[-1] > MAX_COLS:
        raise ValueError(f"rows of {t.shape[-1]} elements exceed MAX_COLS={MAX_COLS}")
    if not t.is_contiguous():
        raise ValueError(f"{name} must be contiguous (call .contiguous())")
    if like is not None:
        if t.device != like.device:
            raise ValueError(f"{name} is on {t.device} but y is on {like.device}")
        if t.dtype != like.dtype:
            raise TypeError(f"dtypes differ: {name} is {t.dtype}, y is {like.dtype}")
        if t.shape != like.shape:
            raise ValueError(f"shapes differ: {tuple(t.shape)} vs {tuple(like.shape)}")


def _output(out, like, *inputs):
    if out is None:
        return torch.empty_like(like)
    if out.shape != like.shape or out.dtype != like.dtype or out.device != like.device:
        raise ValueError("out must match the input in shape, dtype and device")
    if not out.is_contiguous():
        raise ValueError("out must be contiguous")
    for name, t in inputs:
        # in place (out is t) is safe: a program reads its rows, then writes
        # them. A shifted overlap is not: it writes rows another program reads.
        if _overlaps(out, t) and out.data_ptr() != t.data_ptr():
            raise ValueError(f"out must be {name} itself or share no memory with it")
    return out


def _overlaps(a, b) -> bool:
    # whether two dense tensors' bytes intersect; torch.compile's stand-in
    # tensors have no memory to compare (their own op allocated out anyway)
    if torch.compiler.is_compiling() or is_fake(a) or is_fake(b):
        return False
    if a.numel() == 0 or b.numel() == 0 or a.device != b.device:
        return False
    a0, b0 = a.data_ptr(), b.data_ptr()
    a1, b1 = a0 + a.numel() * a.element_size(), b0 + b.numel() * b.element_size()
    return a0 < b1 and b0 < a1


def _on(device):
    # Triton launches on the current GPU, not on the tensors' one
    return (
        torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext()
    )


def _pick(raw_kernel, tuned_kernel, block_size, config, launch_wrapper):
    """The kernel to launch and its extra arguments (ROWS, num_warps)."""
    if config is None and _interpreting():
        # No autotuning without a GPU: a reasonable fixed choice instead.
        config = {"ROWS": max(1, min(16, 2048 // block_size)), "num_warps": 4}
    if config is None:
        return launch_wrapper(tuned_kernel), {}
    return launch_wrapper(raw_kernel), dict(config)


def softmax_fwd(x, out=None, config=None, launch_wrapper=lambda k: k):
    """softmax(x) along the last dimension, by _softmax_fwd_kernel.

    ``config`` ({"ROWS": r, "num_warps": w}) launches one fixed configuration;
    by default the autotuned kernel chooses (on a GPU).
    """
    _check("x", x)
    y = _output(out, x, ("x", x))
    n_cols = x.shape[-1]
    n_rows = x.numel() // n_cols if n_cols else 0
    if n_rows == 0:
        return y
    block = triton.next_power_of_2(n_cols)
    kernel, extra = _pick(
        _softmax_fwd_kernel, _softmax_fwd_autotuned, block, config, launch_wrapper
    )

    def grid(meta):  # one program per ROWS rows
        return (triton.cdiv(n_rows, meta["ROWS"]),)

    with _on(x.device):
        kernel[grid](x, y, n_rows, n_cols, n_cols, n_cols, BLOCK_SIZE=block, **extra)
    return y


def softmax_bwd(y, dy, out=None, config=None, launch_wrapper=lambda k: k):
    """dx for y = softmax(x) along the last dimension, by _softmax_bwd_kernel."""
    _check("y", y)
    _check("dy", dy, like=y)
    dx = _output(out, y, ("y", y), ("dy", dy))
    n_cols = y.shape[-1]
    n_rows = y.numel() // n_cols if n_cols else 0
    if n_rows == 0:
        return dx
    block = triton.next_power_of_2(n_cols)
    kernel, extra = _pick(
        _softmax_bwd_kernel, _softmax_bwd_autotuned, block, config, launch_wrapper
    )

    def grid(meta):
        return (triton.cdiv(n_rows, meta["ROWS"]),)

    with _on(y.device):
        kernel[grid](y, dy, dx, n_rows, n_cols, n_cols, BLOCK_SIZE=block, **extra)
    return dx


# --8<-- [end:launcher]


# --8<-- [start:reference]
def softmax_ref(x: torch.Tensor) -> torch.Tensor:
    """PyTorch's softmax over the last dimension: the reference and eager peer."""
    return torch.softmax(x, dim=-1)


def softmax_bwd_ref(y: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    """The backward formula in plain PyTorch, computed in float64."""
    y64, dy64 = y.double(), dy.double()
    return y64 * (dy64 - (y64 * dy64).sum(dim=-1, keepdim=True))


# --8<-- [end:reference]


# --8<-- [start:autograd]
class SoftmaxFunction(torch.autograd.Function):
    """softmax over the last dimension, forward and backward in Triton."""

    @staticmethod
    def forward(ctx, x):
        y = softmax_fwd(x.contiguous())
        ctx.save_for_backward(y)  # the backward needs only the output
        return y

    @staticmethod
    def backward(ctx, dy):
        (y,) = ctx.saved_tensors
        # The incoming gradient is often a strided or expanded view (the
        # gradient of y.sum() is a stride-0 tensor of ones): make it dense.
        return softmax_bwd(y, dy.contiguous())


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Differentiable softmax over the last dimension."""
    return SoftmaxFunction.apply(x)


# --8<-- [end:autograd]


# --8<-- [start:triton_op]
# A custom operator: a named op with a schema (torch.ops.triton_course.softmax)
# that torch.export, opcheck and other operator tools accept. wrap_triton lets
# torch.compile see the kernel launches inside it.
@torch.library.triton_op("triton_course::softmax", mutates_args=())
def softmax_op(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()  # as SoftmaxFunction does: any layout in, dense rows out
    y = torch.empty_like(x)
    softmax_fwd(x, out=y, launch_wrapper=torch.library.wrap_triton)
    return y


@torch.library.triton_op("triton_course::softmax_backward", mutates_args=())
def softmax_backward_op(y: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    dx = torch.empty_like(y)
    softmax_bwd(y, dy, out=dx, launch_wrapper=torch.library.wrap_triton)
    return dx


def _op_setup_context(ctx, inputs, output):
    ctx.save_for_backward(output)


def _op_backward(ctx, dy):
    (y,) = ctx.saved_tensors
    return softmax_backward_op(y, dy.contiguous())


softmax_op.register_autograd(_op_backward, setup_context=_op_setup_context)
# --8<-- [end:triton_op]


# --8<-- [start:benchmark]
def _fwd_inputs(size: dict, dtype: torch.dtype, device: str):
    return (torch.randn(size["n_rows"], size["n_cols"], dtype=dtype, device=device),)


def _bwd_inputs(size: dict, dtype: torch.dtype, device: str):
    x = torch.randn(size["n_rows"], size["n_cols"], dtype=dtype, device=device)
    return torch.softmax(x, dim=-1), torch.randn_like(x)


def _fwd_bytes(size: dict, dtype: torch.dtype) -> int:
    # read x, write y: GB/s = 2 * rows * cols * itemsize / seconds / 1e9
    return 2 * size["n_rows"] * size["n_cols"] * dtype.itemsize


def _bwd_bytes(size: dict, dtype: torch.dtype) -> int:
    # read y and dy, write dx: GB/s = 3 * rows * cols * itemsize / seconds / 1e9
    return 3 * size["n_rows"] * size["n_cols"] * dtype.itemsize


def _aten_softmax_bwd(y, dy):
    # The kernel PyTorch's autograd runs for the backward of torch.softmax.
    return torch._softmax_backward_data(dy, y, -1, y.dtype)


def _tuned_configs(tuned_kernel) -> list:
    """The autotuner's choice per key, as JSON-able facts for the timing data."""
    return [
        {
            "n_cols": key[0],
            "dtype": str(key[1]).removeprefix("torch."),  # key = (n_cols, dtypes...)
            "ROWS": config.kwargs["ROWS"],
            "num_warps": config.num_warps,
        }
        for key, config in sorted(tuned_kernel.cache.items())
    ]


# 2**25 elements (64 MiB in float16) per tensor: more than an H100's L2
# (50 MiB), but not by much. Part of the last writes can still sit in L2 when
# the kernel ends (the ncu capture shows it), and a rate counts them as moved.
_SIZES = [{"n_rows": 2**25 // n, "n_cols": n} for n in (256, 1024, 4096, 16384)]

BENCHMARKS = [
    {
        "name": "softmax_autograd_fwd",
        "title": "Softmax forward, y = softmax(x) over rows",
        "params": ["n_rows", "n_cols"],
        "sizes": _SIZES,
        "dtypes": ["float16"],
        "metric": "bandwidth",  # GB/s against the measured copy bandwidth
        "work": _fwd_bytes,
        "make_inputs": _fwd_inputs,
        "triton": softmax_fwd,
        "peers": {"PyTorch eager": softmax_ref},
        "compile": "PyTorch eager",
        "report": lambda: {"autotuned": _tuned_configs(_softmax_fwd_autotuned)},
    },
    {
        "name": "softmax_autograd_bwd",
        "title": "Softmax backward, dx = y * (dy - rowsum(y * dy))",
        "params": ["n_rows", "n_cols"],
        "sizes": _SIZES,
        "dtypes": ["float16"],
        "metric": "bandwidth",
        "work": _bwd_bytes,
        "make_inputs": _bwd_inputs,
        "triton": softmax_bwd,
        "peers": {"PyTorch eager": _aten_softmax_bwd},
        "compile": "PyTorch eager",
        "report": lambda: {"autotuned": _tuned_configs(_softmax_bwd_autotuned)},
    },
]
# --8<-- [end:benchmark]


# --8<-- [start:captures]
def _run_self(
    mode: str, env: dict | None = None, prefix=()
) -> subprocess.CompletedProcess:
    """Run this file again in a fresh process, in one of main()'s modes."""
    done = subprocess.run(
        [*prefix, sys.executable, os.path.abspath(__file__), mode],
        capture_output=True,
        text=True,
        timeout=540,
        env={**os.environ, **(env or {})},
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"{mode} failed:\n{done.stdout[-2000:]}{done.stderr[-4000:]}"
        )
    return done


def capture_first_call() -> str:
    """The cost of autotuning: first call vs steady state, in a cold process."""
    with tempfile.TemporaryDirectory() as cache:  # empty compile cache
        return _run_self("--first-call", env={"TRITON_CACHE_DIR": cache}).stdout


def _first_call_report() -> str:
    lines = [
        "n_rows x n_cols  kernel  first call (ms)  second call (ms)  "
        "steady state (ms)  configs tried  chosen config",
    ]
    for n_cols in (1024, 4096):
        n_rows = 2**24 // n_cols
        y, dy = _bwd_inputs({"n_rows": n_rows, "n_cols": n_cols}, torch.float16, "cuda")
        for label, fn, tuned, block in (
            ("fwd", lambda y=y: softmax_fwd(y), _softmax_fwd_autotuned, n_cols),
            (
                "bwd",
                lambda y=y, dy=dy: softmax_bwd(y, dy),
                _softmax_bwd_autotuned,
                n_cols,
            ),
        ):
            times = []
            for _ in range(2):
                torch.cuda.synchronize()
                start = time.perf_counter()
                fn()
                torch.cuda.synchronize()
                times.append(1e3 * (time.perf_counter() - start))
            steady = triton.testing.do_bench(fn, return_mode="median")
            tried = len(_prune_configs(_CONFIGS, {}, BLOCK_SIZE=block))
            best = tuned.best_config
            chosen = f"ROWS={best.kwargs['ROWS']}, num_warps={best.num_warps}"
            lines.append(
                f"{n_rows:>6} x {n_cols:<6}  {label:<6}  {times[0]:>15.1f}  "
                f"{times[1]:>16.3f}  {steady:>17.4f}  {tried:>13}  {chosen}"
            )
    return "\n".join(lines)


# --8<-- [start:capture_profiler]
def capture_profiler() -> str:
    """torch.profiler's table for a forward + backward through SoftmaxFunction."""
    from torch.profiler import ProfilerActivity, profile

    x = torch.randn(8192, 4096, device="cuda", dtype=torch.float16, requires_grad=True)
    dy = torch.randn_like(x)
    for _ in range(3):  # warm up: compile and autotune outside the trace
        softmax(x).backward(dy)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(10):
            softmax(x).backward(dy)
        torch.cuda.synchronize()
    return prof.key_averages().table(sort_by="cuda_time_total", row_limit=12)


# --8<-- [end:capture_profiler]


def capture_compiler_report() -> str:
    """Registers, spills and shared memory of each compiled kernel, per config."""
    lines = ["kernel                n_cols  ROWS  num_warps  registers  spills  shared"]
    n_rows = 64
    for n_cols in (1024, 16384):
        y, dy = _bwd_inputs({"n_rows": n_rows, "n_cols": n_cols}, torch.float16, "cuda")
        dx = torch.empty_like(y)
        block = triton.next_power_of_2(n_cols)
        for rows, warps in ((1, 4), (1, 16), (4, 4)):
            grid = (triton.cdiv(n_rows, rows),)
            meta = dict(BLOCK_SIZE=block, ROWS=rows, num_warps=warps)
            fwd = _softmax_fwd_kernel[grid](
                dy, dx, n_rows, n_cols, n_cols, n_cols, **meta
            )
            bwd = _softmax_bwd_kernel[grid](y, dy, dx, n_rows, n_cols, n_cols, **meta)
            for name, compiled in (
                ("_softmax_fwd_kernel", fwd),
                ("_softmax_bwd_kernel", bwd),
            ):
                lines.append(
                    f"{name:<21} {n_cols:>6}  {rows:>4}  {warps:>9}  "
                    f"{compiled.n_regs:>9}  {compiled.n_spills:>6}  "
                    f"{compiled.metadata.shared:>6}"
                )
    return "\n".join(lines)


def capture_output_code() -> str:
    """What torch.compile writes for softmax forward + backward on its own."""
    # Caches off: on a cache hit Inductor may log where the code is, not the code.
    env = {"TORCH_LOGS": "output_code", "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"}
    done = _run_self("--compile-demo", env=env)
    log = done.stdout + done.stderr
    # Some versions log only the path of the generated module: read it too.
    for path in re.findall(r"Output code written to: (\S+\.py)", log):
        if os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                log += "\n" + handle.read()
    return _extract_triton_kernels(log)


def _extract_triton_kernels(log: str, max_lines: int = 70) -> str:
    """The @triton.jit kernels from an output_code log, one after another."""
    kernels, current = [], None
    for line in log.splitlines():
        if line.strip() == "@triton.jit":
            current = [line]
        elif current is not None:
            if line.strip().startswith("'''"):  # end of the kernel's source
                kernels.append("\n".join(current[:max_lines]).rstrip())
                current = None
            else:
                current.append(line)
    if not kernels:
        raise RuntimeError("no @triton.jit kernel found in the output_code log")
    return "\n\n# ----\n\n".join(kernels)


# --8<-- [start:capture_ncu]
# Nsight Compute: the runner runs this file under ncu (`--ncu-target` launches
# the backward kernel once, with a fixed config) and keeps these metrics.
_NCU = {
    "args": ["--ncu-target"],
    "kernel": "_softmax_bwd_kernel",
    "metrics": [
        "gpu__time_duration.sum",  # kernel time
        "dram__bytes_read.sum",  # bytes read from HBM
        "dram__bytes_write.sum",  # bytes written to HBM
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",  # % of peak HBM
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",  # % of peak SM work
        "launch__registers_per_thread",
        "launch__occupancy_limit_registers",  # blocks per SM the registers allow
        "sm__maximum_warps_per_active_cycle_pct",  # theoretical occupancy
        "sm__warps_active.avg.pct_of_peak_sustained_active",  # achieved occupancy
    ],
}
# --8<-- [end:capture_ncu]

CAPTURES = {
    "softmax_autograd_first_call": capture_first_call,
    "softmax_autograd_profiler": capture_profiler,
    "softmax_autograd_compiler_report": capture_compiler_report,
    "softmax_autograd_output_code": capture_output_code,
    "softmax_autograd_ncu": {"ncu": _NCU},
}
# --8<-- [end:captures]

# Generated code and register counts depend on no timing: the runner may make
# these two while its tests use the GPU (the others run with the GPU alone).
UNTIMED_CAPTURES = ("softmax_autograd_compiler_report", "softmax_autograd_output_code")


def _compile_demo():
    # Plain PyTorch softmax, forward and backward, left to torch.compile.
    # The forward is compiled; calling backward() on its output makes
    # AOTAutograd compile the backward graph too (autograd.grad inside the
    # compiled region would be a graph break).
    def forward(x):
        return torch.softmax(x, dim=-1)

    x = torch.randn(4096, 1024, device="cuda", dtype=torch.float16, requires_grad=True)

    def step():
        y = torch.compile(forward, fullgraph=True)(x)
        y.backward(torch.randn_like(y))
        torch.cuda.synchronize()

    # TORCH_LOGS=output_code prints the generated modules to the log; where a
    # version logs only their paths, run_and_get_code hands back the same
    # source, which is printed too so the capture never depends on log format.
    from torch._inductor.utils import run_and_get_code

    _, modules = run_and_get_code(step)
    print("\n".join(modules))


def _ncu_target():
    y, dy = _bwd_inputs({"n_rows": 8192, "n_cols": 4096}, torch.float16, "cuda")
    softmax_bwd(y, dy, config={"ROWS": 1, "num_warps": 8})
    torch.cuda.synchronize()


# --8<-- [start:main]
def main():
    modes = {
        "--first-call": lambda: print(_first_call_report()),
        "--compile-demo": _compile_demo,
        "--ncu-target": _ncu_target,
    }
    if len(sys.argv) > 1:
        return modes[sys.argv[1]]()
    device = "cuda" if torch.cuda.is_available() and not _interpreting() else "cpu"
    torch.manual_seed(0)
    for shape in ((1, 1), (7, 1000), (300, 129)):
        x = torch.randn(shape, device=device, dtype=torch.float64, requires_grad=True)
        y = softmax(x)
        dy = torch.randn_like(y)
        (dx,) = torch.autograd.grad(y, x, dy)
        torch.testing.assert_close(y, softmax_ref(x))
        torch.testing.assert_close(dx, softmax_bwd_ref(y, dy))
        print(f"shape={str(shape):<11}: forward and backward match PyTorch on {device}")
    x = torch.randn(3, 5, device=device, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(softmax, (x,))
    assert torch.autograd.gradcheck(softmax_op, (x,))
    print("gradcheck passes (float64) for SoftmaxFunction and the custom op")


if __name__ == "__main__":
    main()
# --8<-- [end:main]
