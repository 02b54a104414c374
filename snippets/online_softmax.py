"""Softmax of rows too long for one block: tile along the row, online statistics.

A running maximum m and a running sum d of exp(x - m), rescaled whenever m
grows, give a row's softmax statistics in one read; a second read writes
exp(x - m) / d. Two ways to launch it:

- many rows (at least one per SM): one program per row does both reads, and
  the second finds the row still in the L2 cache, so DRAM sees x read once;
- few long rows: each row is cut into slices, one program per slice, in two
  kernels (statistics per slice; merge, normalise, write), so that every SM
  has work; x is then read twice from DRAM and written once.

Run it:  TRITON_INTERPRET=1 python snippets/online_softmax.py   (CPU, interpreter)
         python snippets/online_softmax.py                      (CUDA GPU)
"""

# --8<-- [start:imports]
import torch
import triton
import triton.language as tl

# --8<-- [end:imports]


# --8<-- [start:stats_kernel]
@triton.jit
def online_softmax_stats_kernel(
    x_ptr,  # input, n_rows rows of n_cols values; columns contiguous
    m_ptr,  # output: float32 (n_rows, n_chunks), running max of each slice
    d_ptr,  # output: float32 (n_rows, n_chunks), sum of exp(x - m) per slice
    n_cols,  # length of a row
    n_chunks,  # slices per row; program pid owns slice pid % n_chunks
    x_row_stride,  # elements between the starts of two rows of x
    CHUNK: tl.constexpr,  # columns per slice, a multiple of BLOCK_SIZE
    BLOCK_SIZE: tl.constexpr,  # columns per tile, a power of two
):
    pid = tl.program_id(axis=0)
    row = pid // n_chunks
    chunk = pid % n_chunks
    x_row = x_ptr + row.to(tl.int64) * x_row_stride
    offsets = tl.arange(0, BLOCK_SIZE)
    # Every lane keeps its own running max and running sum, for the columns
    # it sees; the lanes are merged once, after the loop.
    m = tl.full((BLOCK_SIZE,), -float("inf"), tl.float32)
    d = tl.zeros((BLOCK_SIZE,), tl.float32)
    for start in range(0, CHUNK, BLOCK_SIZE):
        cols = chunk * CHUNK + start + offsets
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf"))
        x = x.to(tl.float32)
        m_new = tl.maximum(m, x)
        # While a lane has seen only -inf, m_new is -inf and x - m_new would
        # be NaN; shifting by 0 instead gives exp(-inf) = 0, the right terms.
        shift = tl.where(m_new == -float("inf"), 0.0, m_new)
        d = d * tl.exp(m - shift) + tl.exp(x - shift)
        m = m_new
    # Merge the lanes: the same rescaling, all at once.
    m_slice = tl.max(m, axis=0)
    shift = tl.where(m_slice == -float("inf"), 0.0, m_slice)
    d_slice = tl.sum(d * tl.exp(m - shift), axis=0)
    tl.store(m_ptr + pid, m_slice)
    tl.store(d_ptr + pid, d_slice)


# --8<-- [end:stats_kernel]


# --8<-- [start:normalize_kernel]
@triton.jit
def online_softmax_normalize_kernel(
    x_ptr,  # input, as in pass 1
    out_ptr,  # output, same shape and dtype as x; columns contiguous
    m_ptr,  # float32 (n_rows, n_chunks), from pass 1
    d_ptr,  # float32 (n_rows, n_chunks), from pass 1
    n_cols,  # length of a row
    n_chunks,  # slices per row
    x_row_stride,  # elements between the starts of two rows of x
    out_row_stride,  # elements between the starts of two rows of out
    CHUNK: tl.constexpr,  # columns per slice, as in pass 1
    BLOCK_SIZE: tl.constexpr,  # columns per tile
    CHUNKS_POW2: tl.constexpr,  # a power of two >= n_chunks
):
    pid = tl.program_id(axis=0)
    row = pid // n_chunks
    chunk = pid % n_chunks
    # Merge the (m, d) of every slice of this row into the row's own.
    slices = tl.arange(0, CHUNKS_POW2)
    in_row = slices < n_chunks
    m = tl.load(m_ptr + row * n_chunks + slices, mask=in_row, other=-float("inf"))
    d = tl.load(d_ptr + row * n_chunks + slices, mask=in_row, other=0.0)
    m_row = tl.max(m, axis=0)
    shift = tl.where(m_row == -float("inf"), 0.0, m_row)
    inv_d_row = 1.0 / tl.sum(d * tl.exp(m - shift), axis=0)
    # Second read of the slice: normalise and write.
    x_row = x_ptr + row.to(tl.int64) * x_row_stride
    out_row = out_ptr + row.to(tl.int64) * out_row_stride
    offsets = tl.arange(0, BLOCK_SIZE)
    for start in range(0, CHUNK, BLOCK_SIZE):
        cols = chunk * CHUNK + start + offsets
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=-float("inf")).to(tl.float32)
        # Unshifted m_row: an all -inf row gives NaN, exactly as torch.softmax.
        y = tl.exp(x - m_row) * inv_d_row
        tl.store(out_row + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


# --8<-- [end:normalize_kernel]


# --8<-- [start:fused_kernel]
@triton.jit
def online_softmax_fused_kernel(
    x_ptr,  # input, n_rows rows of n_cols values; columns contiguous
    out_ptr,  # output, same shape and dtype as x; columns contiguous
    n_cols,  # length of a row
    x_row_stride,  # elements between the starts of two rows of x
    out_row_stride,  # elements between the starts of two rows of out
    BLOCK_SIZE: tl.constexpr,  # columns per tile, a power of two
):
    # One program per row, both passes. The first read marks the row's cache
    # lines "evict last", so that they are still in the L2 when the second
    # read comes for them a moment later; the second marks them "evict first":
    # nothing needs them again.
    row = tl.program_id(axis=0)
    x_row = x_ptr + row.to(tl.int64) * x_row_stride
    out_row = out_ptr + row.to(tl.int64) * out_row_stride
    offsets = tl.arange(0, BLOCK_SIZE)
    m = tl.full((BLOCK_SIZE,), -float("inf"), tl.float32)
    d = tl.zeros((BLOCK_SIZE,), tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):  # pass 1, as in the stats kernel
        cols = start + offsets
        x = tl.load(
            x_row + cols, mask=cols < n_cols, other=-float("inf"),
            eviction_policy="evict_last",
        ).to(tl.float32)  # fmt: skip
        m_new = tl.maximum(m, x)
        shift = tl.where(m_new == -float("inf"), 0.0, m_new)
        d = d * tl.exp(m - shift) + tl.exp(x - shift)
        m = m_new
    m_row = tl.max(m, axis=0)
    shift = tl.where(m_row == -float("inf"), 0.0, m_row)
    inv_d_row = 1.0 / tl.sum(d * tl.exp(m - shift), axis=0)
    for start in range(0, n_cols, BLOCK_SIZE):  # pass 2: the row again, from L2
        cols = start + offsets
        mask = cols < n_cols
        x = tl.load(
            x_row + cols, mask=mask, other=-float("inf"), eviction_policy="evict_first"
        ).to(tl.float32)
        y = tl.exp(x - m_row) * inv_d_row  # an all -inf row gives NaN, as torch
        tl.store(out_row + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


# --8<-- [end:fused_kernel]


# --8<-- [start:launcher]
SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
TARGET_PROGRAMS = 1024  # enough programs to keep every SM of a large GPU busy
# The kernels compute a column index in int32 (chunk * CHUNK + start + offsets);
# with power-of-two slices it stays below 2**31 for any row up to this length.
MAX_COLS = 2**31 - 1


FUSED_BLOCK_SIZE = 8192  # the fused kernel's tile: 16 warps of 16 elements
SLICED_BLOCK_SIZE = 4096  # the two kernels' tile: 8 warps of 16 elements


def _num_warps(block_size: int, max_warps: int) -> int:
    # 16 elements per thread, between 1 and max_warps warps.
    return max(1, min(max_warps, block_size // (32 * 16)))


def online_softmax(x, out=None, block_size=None, chunk=None, fused=None):
    """Softmax over the last dimension of a 2-D tensor, for rows of any length.

    ``fused``: True launches one program per row (both passes in one kernel),
    False the two kernels over slices of rows; by default, fused when there
    are at least as many rows as the GPU has SMs, so that one program per row
    still gives every SM work. ``chunk`` (two kernels only) is the number of
    columns one program handles (a power of two, at least ``block_size``); by
    default it is chosen so that about TARGET_PROGRAMS programs run, and
    never shorter than one tile. ``block_size`` is the tile (a power of two).
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"expected a torch.Tensor, got {type(x).__name__}")
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
        raise ValueError(f"expected a 2-D tensor (rows, cols), got {x.dim()}-D")
    if x.shape[1] > 1 and x.stride(1) != 1:
        raise ValueError(
            f"the last dimension must be contiguous (stride 1), got stride "
            f"{x.stride(1)}: call .contiguous() first"
        )
    if x.shape[1] > MAX_COLS:
        raise ValueError(
            f"rows of {x.shape[1]} elements: at most {MAX_COLS} (2**31 - 1), "
            "because the kernels index columns in int32; split the row"
        )
    if fused is not None and not isinstance(fused, bool):  # 1.0 == True
        raise TypeError(f"fused must be True, False or None, got {fused!r}")
    if fused and chunk is not None:
        raise ValueError("chunk cuts rows into slices: it needs fused=False (or None)")
    if block_size is not None and (
        not isinstance(block_size, int)
        or block_size <= 0
        or block_size & (block_size - 1)
    ):
        raise ValueError(f"block_size must be a power of two, got {block_size}")
    if out is None:
        out = torch.empty_like(x, memory_format=torch.contiguous_format)
    elif out.shape != x.shape or out.dtype != x.dtype or out.device != x.device:
        raise ValueError("out must match x in shape, dtype and device")
    elif out.shape[1] > 1 and out.stride(1) != 1:
        raise ValueError("out must have a contiguous last dimension (stride 1)")
    else:
        _check_out_memory(x, out)
    n_rows, n_cols = x.shape
    if x.numel() == 0:
        return out
    if fused is None:  # a chunk asks for slices
        fused = chunk is None and n_rows >= _num_sms(x.device)

    if fused:
        block_size = min(block_size or FUSED_BLOCK_SIZE, triton.next_power_of_2(n_cols))
        online_softmax_fused_kernel[(n_rows,)](
            x, out, n_cols, x.stride(0), out.stride(0),
            BLOCK_SIZE=block_size, num_warps=_num_warps(block_size, 16),
        )  # fmt: skip
        return out

    block_size = min(block_size or SLICED_BLOCK_SIZE, triton.next_power_of_2(n_cols))
    if chunk is None:
        # Split each row into enough slices that the grid fills the GPU.
        slices_wanted = triton.cdiv(TARGET_PROGRAMS, n_rows)
        chunk = triton.next_power_of_2(triton.cdiv(n_cols, slices_wanted))
        chunk = max(chunk, block_size)
    elif chunk < block_size or chunk & (chunk - 1) or chunk > MAX_COLS + 1:
        raise ValueError(
            f"chunk must be a power of two, at least block_size ({block_size}) "
            f"and at most 2**31, got {chunk}"
        )
    n_chunks = triton.cdiv(n_cols, chunk)
    m = torch.empty(n_rows, n_chunks, dtype=torch.float32, device=x.device)
    d = torch.empty(n_rows, n_chunks, dtype=torch.float32, device=x.device)
    grid = (n_rows * n_chunks,)  # one program per slice of a row
    warps = _num_warps(block_size, 8)
    online_softmax_stats_kernel[grid](
        x, m, d, n_cols, n_chunks, x.stride(0),
        CHUNK=chunk, BLOCK_SIZE=block_size, num_warps=warps,
    )  # fmt: skip
    online_softmax_normalize_kernel[grid](
        x, out, m, d, n_cols, n_chunks, x.stride(0), out.stride(0),
        CHUNK=chunk, BLOCK_SIZE=block_size,
        CHUNKS_POW2=triton.next_power_of_2(n_chunks), num_warps=warps,
    )  # fmt: skip
    return out


def _num_sms(device) -> int:
    if _interpreting():
        return 4  # the interpreter has no SMs: a small count, so both paths run
    return torch.cuda.get_device_properties(device).multi_processor_count


def _check_out_memory(x, out):
    """Refuse an out that the kernels would fill wrongly: rows that overlap, or
    memory shared with x. out=x itself is fine: in both launches a row's
    statistics are complete before anything of it is written (pass 1 has
    finished, or the fused program has read the whole row), and pass 2 reads
    each tile before writing that same tile, which no other program touches."""
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


def online_stats_ref(x: torch.Tensor):
    """The recurrence, one tile at a time, in plain PyTorch: returns (m, d) per row."""
    x = x.double()
    m = torch.full(x.shape[:1], -float("inf"), dtype=x.dtype, device=x.device)
    d = torch.zeros_like(m)
    for tile in x.split(256, dim=1):
        m_new = torch.maximum(m, tile.amax(dim=1))
        shift = torch.where(m_new == -float("inf"), 0.0, m_new)
        d = d * torch.exp(m - shift) + torch.exp(tile - shift[:, None]).sum(dim=1)
        m = m_new
    return m, d


# --8<-- [end:reference]


# --8<-- [start:benchmark]
def _torch_softmax(x):
    return torch.softmax(x, dim=-1)


def _bench_inputs(size: dict, dtype: torch.dtype, device: str):
    return (torch.randn(size["n_rows"], size["n_cols"], dtype=dtype, device=device),)


def _bench_bytes(size: dict, dtype: torch.dtype) -> int:
    # What any softmax must move: x read once, out written once (the slices'
    # m and d, a few bytes per 10**4 elements, are left out). The fused kernel
    # moves about that much to and from DRAM (its second read hits the L2);
    # the two kernels read x twice from DRAM, so by this count they can reach
    # at most two thirds of the copy bandwidth.
    # GB/s = 2 * rows * cols * itemsize / s / 1e9
    itemsize = torch.empty((), dtype=dtype).element_size()
    return 2 * size["n_rows"] * size["n_cols"] * itemsize


def _two_kernels(x):
    return online_softmax(x, fused=False)


# 2**26 elements per call at every row length: 256 MiB of float32 in x.
_SIZES = [{"n_rows": 2**26 // 2**k, "n_cols": 2**k} for k in range(15, 21)]

BENCHMARK = {
    "name": "online_softmax",
    "title": "Online softmax, rows tiled along their length (1 read + 1 write counted)",
    "params": ["n_rows", "n_cols"],
    "sizes": _SIZES,
    "dtypes": ["float16", "float32"],
    "metric": "bandwidth",  # GB/s of one read and one write, against the copy bandwidth
    "work": _bench_bytes,
    "make_inputs": _bench_inputs,
    "triton": online_softmax,
    "peers": {"PyTorch eager": _torch_softmax, "Triton (two kernels)": _two_kernels},
    "compile": "PyTorch eager",
}
# --8<-- [end:benchmark]


# --8<-- [start:main]
def main():
    device = "cuda" if torch.cuda.is_available() and not _interpreting() else "cpu"
    torch.manual_seed(0)
    # under the interpreter (4 "SMs") 8 rows take the fused kernel, the rest
    # the two kernels; on a GPU with more SMs than rows, all take the two
    checks = ((1, 1, None), (3, 5000, None), (2, 20_000, 8192), (8, 3000, None))
    for n_rows, n_cols, chunk in checks:
        x = 4 * torch.randn(n_rows, n_cols, device=device)
        out = online_softmax(x, block_size=1024, chunk=chunk)
        torch.testing.assert_close(out, softmax_ref(x))
        print(f"{n_rows} x {n_cols:<6}: matches PyTorch on {device}")
    if device == "cuda":
        # 2048 rows of 2**15 (the fused kernel on a GPU of up to 2048 SMs) and
        # 64 rows of 2**20 (the two kernels on a GPU of more than 64 SMs)
        for n_rows, n_cols in ((2048, 2**15), (64, 2**20)):
            x = torch.randn(n_rows, n_cols, device=device, dtype=torch.float16)
            gb = 2 * x.numel() * x.element_size() / 1e9  # one read, one write
            for label, fn in (
                ("online", online_softmax),
                ("torch", lambda x: torch.softmax(x, dim=-1)),
            ):
                ms = triton.testing.do_bench(
                    lambda fn=fn, x=x: fn(x), return_mode="median"
                )
                rate = gb / ms * 1e3
                print(f"{n_rows} x {n_cols} float16, {label:>6}: {ms:.3f} ms, "
                      f"{rate:.0f} GB/s")  # fmt: skip


if __name__ == "__main__":
    main()
# --8<-- [end:main]
