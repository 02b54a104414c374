"""Row softmax in one pass over memory: the fused kernel, and a variant for short rows.

softmax_kernel gives each program one whole row: it reads the row once, finds the
row maximum, exponentiates, sums and divides in registers, and writes the row
once. softmax_rows_kernel gives each program a 2-D block of several short rows,
so that a program still moves enough bytes when rows are short.

Run it:  TRITON_INTERPRET=1 python snippets/softmax.py   (CPU, interpreter)
         python snippets/softmax.py                      (CUDA GPU)
"""

# --8<-- [start:imports]
import torch
import triton
import triton.language as tl

# --8<-- [end:imports]


# --8<-- [start:kernel]
@triton.jit
def softmax_kernel(
    x_ptr,  # input, n_rows rows of n_cols values; columns contiguous
    out_ptr,  # output, same shape and dtype
    n_cols,  # length of a row
    x_row_stride,  # elements between the starts of two rows of x
    out_row_stride,  # elements between the starts of two rows of out
    BLOCK_SIZE: tl.constexpr,  # a power of two >= n_cols: the whole row
):
    row = tl.program_id(axis=0)  # one program per row
    # int64: row * stride overflows int32 once a tensor passes 2**31 elements
    x_row = x_ptr + row.to(tl.int64) * x_row_stride
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_cols
    # Lanes past the end of the row read -inf: exp(-inf) = 0 adds nothing to
    # the sum, and -inf never wins the max.
    x = tl.load(x_row + offsets, mask=mask, other=-float("inf"))
    x = x.to(tl.float32)  # compute in float32 whatever the storage dtype
    row_max = tl.max(x, axis=0)
    numerator = tl.exp(x - row_max)  # every exponent <= 0: no overflow
    denominator = tl.sum(numerator, axis=0)
    y = numerator / denominator
    out_row = out_ptr + row.to(tl.int64) * out_row_stride
    tl.store(out_row + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)


# --8<-- [end:kernel]


# --8<-- [start:rows_kernel]
@triton.jit
def softmax_rows_kernel(
    x_ptr,  # input, n_rows rows of n_cols values; columns contiguous
    out_ptr,  # output, same shape and dtype
    n_rows,  # number of rows
    n_cols,  # length of a row
    x_row_stride,  # elements between the starts of two rows of x
    out_row_stride,  # elements between the starts of two rows of out
    BLOCK_ROWS: tl.constexpr,  # rows per program, a power of two
    BLOCK_SIZE: tl.constexpr,  # a power of two >= n_cols
):
    # int64 from the start: pid * BLOCK_ROWS wraps past 2**31 rows in int32
    pid = tl.program_id(axis=0).to(tl.int64)
    rows = pid * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)  # (BLOCK_ROWS,)
    cols = tl.arange(0, BLOCK_SIZE)  # (BLOCK_SIZE,)
    # A (BLOCK_ROWS, BLOCK_SIZE) block: rows down, columns across.
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x_ptrs = x_ptr + rows[:, None] * x_row_stride + cols[None, :]
    x = tl.load(x_ptrs, mask=mask, other=-float("inf")).to(tl.float32)
    row_max = tl.max(x, axis=1)  # (BLOCK_ROWS,): one maximum per row
    numerator = tl.exp(x - row_max[:, None])
    denominator = tl.sum(numerator, axis=1)
    y = numerator / denominator[:, None]
    # Rows past n_rows held only -inf and computed NaN; the mask drops them.
    out_ptrs = out_ptr + rows[:, None] * out_row_stride + cols[None, :]
    tl.store(out_ptrs, y.to(out_ptr.dtype.element_ty), mask=mask)


# --8<-- [end:rows_kernel]


# --8<-- [start:launcher]
SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
MAX_COLS = 32_768  # a longer row does not fit in one program's registers
ELEMENTS_PER_THREAD = 16  # what num_warps aims for: 16 values per thread
ROWS_TILE = 2048  # softmax_rows aims for this many elements per program
# A block of several short rows gets 32 values per thread (2048 elements: 2
# warps): lighter programs, more of them resident on each SM. The page's
# timings judge the choice against torch.compile at 256 and 512 columns.
ROWS_ELEMENTS_PER_THREAD = 32


def _num_warps(elements: int, per_thread: int = ELEMENTS_PER_THREAD) -> int:
    # Scale the warps with the block: per_thread elements each, 1 to 16 warps.
    return max(1, min(16, elements // (32 * per_thread)))


def _rows_warps(block_rows: int, block_size: int) -> int:
    """softmax_rows' warps: one row per program as softmax has them."""
    per_thread = ROWS_ELEMENTS_PER_THREAD if block_rows > 1 else ELEMENTS_PER_THREAD
    return _num_warps(block_rows * block_size, per_thread)


def _check(x, out, name):
    """Validate x (and out); return the output tensor to write."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} expects a torch.Tensor, got {type(x).__name__}")
    if x.device.type != "cuda" and not _interpreting():
        raise ValueError(
            f"x is on {x.device}: move it to a CUDA GPU, or set "
            "TRITON_INTERPRET=1 to run the kernel on the CPU"
        )
    if x.device.type == "cuda" and x.device.index != torch.cuda.current_device():
        # Triton launches on the current device, not on the tensor's
        raise ValueError(
            f"x is on {x.device}, the current device is cuda:"
            f"{torch.cuda.current_device()}: call torch.cuda.set_device"
            f"({x.device.index}) first, or launch inside torch.cuda.device(x.device)"
        )
    if x.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"unsupported dtype {x.dtype}; use one of {SUPPORTED_DTYPES}")
    if x.dim() != 2:
        raise ValueError(f"{name} expects a 2-D tensor (rows, cols), got {x.dim()}-D")
    if x.shape[1] > 1 and x.stride(1) != 1:
        # Rows may be strided (a slice x[::2] is fine); elements within a row
        # must be adjacent, which is what makes each row one wide load.
        raise ValueError(
            f"the last dimension must be contiguous (stride 1), got stride "
            f"{x.stride(1)}: call .contiguous() first"
        )
    if x.shape[1] > MAX_COLS:
        raise ValueError(
            f"rows of {x.shape[1]} elements do not fit in one program "
            f"(at most {MAX_COLS}); use the online softmax for long rows"
        )
    if out is None:
        return torch.empty_like(x, memory_format=torch.contiguous_format)
    if out.shape != x.shape or out.dtype != x.dtype or out.device != x.device:
        raise ValueError("out must match x in shape, dtype and device")
    if out.shape[1] > 1 and out.stride(1) != 1:
        raise ValueError("out must have a contiguous last dimension (stride 1)")
    _check_out_memory(x, out)
    return out


def _check_out_memory(x, out):
    """Refuse an out that the kernels would fill wrongly: rows that overlap, or
    memory shared with x. out=x itself is fine: every program reads all of its
    rows before it writes them, and no other program touches those rows."""
    n_rows, n_cols = out.shape
    if out.numel() == 0:
        return
    if n_rows > 1 and out.stride(0) < n_cols:
        # e.g. an expanded tensor (row stride 0): rows would overwrite each other
        raise ValueError(
            f"out's rows overlap (row stride {out.stride(0)} < row length "
            f"{n_cols}): pass an out whose rows do not share memory, such as "
            "torch.empty_like(x)"
        )
    if out.data_ptr() == x.data_ptr() and out.stride() == x.stride():
        return  # in place: out is x
    if _overlaps(out, x):
        raise ValueError(
            "out shares memory with x: pass x itself (in place) or an out that "
            "shares no memory with x"
        )


def _overlaps(a, b) -> bool:
    # Whether a and b (same shape and dtype, each row contiguous) share an
    # element. Compared row by row, not first to last element: two column
    # blocks of one buffer, buf[:, :100] and buf[:, 100:], interleave in
    # memory yet share nothing.
    if a.numel() == 0 or b.numel() == 0 or a.device != b.device:
        return False
    size = a.element_size()
    row = a.shape[1] * size  # bytes of one row

    def starts(t):  # byte address of each row's first element, ascending
        return t.data_ptr() + torch.arange(t.shape[0]) * (t.stride(0) * size)

    a_rows, b_rows = starts(a), starts(b)
    # rows starting at s and s' share bytes iff |s - s'| < row: find, for each
    # row of a, the first row of b that starts after s - row
    first = torch.searchsorted(b_rows, a_rows - row, right=True)
    found = first < len(b_rows)
    near = b_rows[first.clamp(max=len(b_rows) - 1)] < a_rows + row
    return bool((found & near).any())


def softmax(x, out=None):
    """Softmax over the last dimension of a 2-D tensor: one program per row."""
    out = _check(x, out, "softmax")
    n_rows, n_cols = x.shape
    if x.numel() == 0:
        return out
    block_size = triton.next_power_of_2(n_cols)
    softmax_kernel[(n_rows,)](
        x, out, n_cols, x.stride(0), out.stride(0),
        BLOCK_SIZE=block_size, num_warps=_num_warps(block_size),
    )  # fmt: skip
    return out


def softmax_rows(x, out=None, block_rows=None):
    """The same softmax, with several short rows per program (a 2-D block)."""
    out = _check(x, out, "softmax_rows")
    n_rows, n_cols = x.shape
    if x.numel() == 0:
        return out
    block_size = triton.next_power_of_2(n_cols)
    if block_rows is None:
        # Enough rows to fill ROWS_TILE elements, but no more than there are.
        fill = ROWS_TILE // block_size
        block_rows = max(1, min(fill, triton.next_power_of_2(n_rows)))
    elif block_rows <= 0 or block_rows & (block_rows - 1):
        raise ValueError(f"block_rows must be a power of two, got {block_rows}")
    grid = (triton.cdiv(n_rows, block_rows),)
    softmax_rows_kernel[grid](
        x, out, n_rows, n_cols, x.stride(0), out.stride(0),
        BLOCK_ROWS=block_rows, BLOCK_SIZE=block_size,
        num_warps=_rows_warps(block_rows, block_size),
    )  # fmt: skip
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
def softmax_ref(x: torch.Tensor) -> torch.Tensor:
    """Row softmax in plain PyTorch, computed in float32, rounded to x's dtype."""
    return torch.softmax(x.float(), dim=-1).to(x.dtype)


# --8<-- [end:reference]


# --8<-- [start:unfused]
def softmax_unfused(x: torch.Tensor) -> torch.Tensor:
    """Softmax as five separate PyTorch operations: each one a trip to memory."""
    row_max = x.amax(dim=-1, keepdim=True)  # read x, write one value per row
    shifted = x - row_max  # read x and the maxima, write a full tensor
    numerator = torch.exp(shifted)  # read it, write another full tensor
    denominator = numerator.sum(dim=-1, keepdim=True)  # read it, one per row
    return numerator / denominator  # read it and the sums, write the output


# --8<-- [end:unfused]


# --8<-- [start:benchmark]
def _torch_softmax(x):
    return torch.softmax(x, dim=-1)


def _bench_inputs(size: dict, dtype: torch.dtype, device: str):
    return (torch.randn(size["n_rows"], size["n_cols"], dtype=dtype, device=device),)


def _bench_bytes(size: dict, dtype: torch.dtype) -> int:
    # Read x once, write out once: GB/s = 2 * rows * cols * itemsize / s / 1e9
    itemsize = torch.empty((), dtype=dtype).element_size()
    return 2 * size["n_rows"] * size["n_cols"] * itemsize


_SIZES = [
    {"n_rows": 16_384, "n_cols": n}
    for n in (256, 512, 1024, 2048, 3000, 4096, 8192, 16_384)
]


def _launch_configs(rows_per_program: bool) -> dict:
    """The block shapes and warps the launchers pick at each benchmarked size."""
    configs = {}
    for size in _SIZES:
        block = triton.next_power_of_2(size["n_cols"])
        rows = max(1, ROWS_TILE // block) if rows_per_program else 1
        warps = _rows_warps(rows, block)
        configs[str(size["n_cols"])] = {
            "BLOCK_ROWS": rows,
            "BLOCK_SIZE": block,
            "num_warps": warps,
        }
    return configs


BENCHMARKS = [
    {
        "name": "softmax_row",
        "title": "Fused softmax, one row per program",
        "params": ["n_rows", "n_cols"],
        "sizes": _SIZES,
        "dtypes": ["float16", "float32"],
        "metric": "bandwidth",  # GB/s against the measured copy bandwidth
        "work": _bench_bytes,
        "make_inputs": _bench_inputs,
        "triton": softmax,
        "peers": {
            "PyTorch eager": _torch_softmax,
            "PyTorch unfused": softmax_unfused,
        },
        "compile": "PyTorch eager",
        "report": lambda: {"launch": _launch_configs(rows_per_program=False)},
    },
    {
        "name": "softmax_rows",
        "title": "Fused softmax, a 2-D block of rows per program",
        "params": ["n_rows", "n_cols"],
        "sizes": _SIZES,
        "dtypes": ["float16", "float32"],
        "metric": "bandwidth",
        "work": _bench_bytes,
        "make_inputs": _bench_inputs,
        "triton": softmax_rows,
        "peers": {"PyTorch eager": _torch_softmax},
        "compile": "PyTorch eager",
        "report": lambda: {"launch": _launch_configs(rows_per_program=True)},
    },
]
# --8<-- [end:benchmark]


# --8<-- [start:main]
def main():
    device = "cuda" if torch.cuda.is_available() and not _interpreting() else "cpu"
    torch.manual_seed(0)
    for n_rows, n_cols in ((1, 1), (7, 1000), (130, 3000)):
        x = 4 * torch.randn(n_rows, n_cols, device=device)
        for launcher in (softmax, softmax_rows):
            torch.testing.assert_close(launcher(x), softmax_ref(x))
        print(f"{n_rows:>4} x {n_cols:<5}: both kernels match PyTorch on {device}")
    if device == "cuda":
        x = torch.randn(16_384, 4096, device=device, dtype=torch.float16)
        gb = 2 * x.numel() * x.element_size() / 1e9  # x read once, out written once
        for label, fn in (
            ("softmax_rows", softmax_rows),
            ("torch.softmax", lambda x: torch.softmax(x, dim=-1)),
            ("unfused", softmax_unfused),
        ):
            ms = triton.testing.do_bench(lambda fn=fn: fn(x), return_mode="median")
            rate = gb / ms * 1e3
            print(f"16384 x 4096 float16, {label:>13}: {ms:.3f} ms, {rate:.0f} GB/s")


if __name__ == "__main__":
    main()
# --8<-- [end:main]
