"""Vector addition: the smallest complete Triton kernel.

Each program instance adds one block of BLOCK_SIZE elements; a mask switches
off the lanes that fall past the end of the vectors.

Run it:  TRITON_INTERPRET=1 python snippets/vector_add.py   (CPU, interpreter)
         python snippets/vector_add.py                      (CUDA GPU)
"""

# --8<-- [start:imports]
import contextlib

import torch
import triton
import triton.language as tl

# --8<-- [end:imports]


# --8<-- [start:kernel]
@triton.jit
def vector_add_kernel(
    x_ptr,  # first input, n_elements contiguous values
    y_ptr,  # second input, same length and dtype
    out_ptr,  # output, same length and dtype
    n_elements,  # how many elements the vectors hold
    BLOCK_SIZE: tl.constexpr,  # elements per program, a power of two
):
    pid = tl.program_id(axis=0)  # which block this program owns
    # int64: in int32, pid * BLOCK_SIZE wraps round past 2**31 - 1 elements
    offsets = pid.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements  # the last block may run past the end
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    # Add in float32, round once to out's dtype. For one add of two 16-bit
    # values this equals the 16-bit add (which the compiler may emit); later
    # kernels keep longer sums in float32, where it matters.
    total = x.to(tl.float32) + y.to(tl.float32)
    tl.store(out_ptr + offsets, total.to(out_ptr.dtype.element_ty), mask=mask)


# --8<-- [end:kernel]


# --8<-- [start:simple_launcher]
def vector_add_simple(x, y):
    """x + y with the launch alone: no input checks (vector_add has them)."""
    out = torch.empty_like(x)
    n_elements = out.numel()
    grid = (triton.cdiv(n_elements, 1024),)  # one program per 1024 elements
    vector_add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=1024)
    return out


# --8<-- [end:simple_launcher]


# --8<-- [start:launcher]
SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def vector_add(x, y, out=None, block_size=1024):
    """Return x + y computed by vector_add_kernel (written into ``out`` if given)."""
    if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor):
        raise TypeError("vector_add expects two torch.Tensor arguments")
    if x.device != y.device:
        raise ValueError(f"x is on {x.device} but y is on {y.device}")
    if x.device.type != "cuda" and not _interpreting():
        raise ValueError(
            f"tensors are on {x.device}: move them to a CUDA GPU, or set "
            "TRITON_INTERPRET=1 to run the kernel on the CPU"
        )
    if x.dtype != y.dtype:
        raise TypeError(f"dtypes differ: x is {x.dtype}, y is {y.dtype}")
    if x.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"unsupported dtype {x.dtype}; use one of {SUPPORTED_DTYPES}")
    if x.shape != y.shape:
        raise ValueError(f"shapes differ: {tuple(x.shape)} vs {tuple(y.shape)}")
    if not (x.is_contiguous() and y.is_contiguous()):
        # The kernel walks memory with stride 1; a strided view would be read
        # wrongly, so refuse it rather than copy silently.
        raise ValueError("vector_add needs contiguous tensors (call .contiguous())")
    if block_size <= 0 or block_size & (block_size - 1):
        raise ValueError(f"block_size must be a power of two, got {block_size}")

    if out is None:
        out = torch.empty_like(x)
    elif out.shape != x.shape or out.dtype != x.dtype or out.device != x.device:
        raise ValueError("out must match x in shape, dtype and device")
    elif not out.is_contiguous():
        raise ValueError("out must be contiguous")
    for name, t in (("x", x), ("y", y)):
        # out may be x or y itself: each element is read, then written, by the
        # same program. Shifted by even one element, a program would read
        # what another has already written.
        if _overlaps(out, t) and out.data_ptr() != t.data_ptr():
            raise ValueError(
                f"out overlaps {name} without being {name}: pass a new tensor"
            )
    n_elements = x.numel()
    if n_elements == 0:
        return out
    grid = (triton.cdiv(n_elements, block_size),)  # one program per block
    with _on(x.device):  # Triton launches on the current GPU, not on x's
        vector_add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=block_size)
    return out


def _overlaps(a, b) -> bool:
    # whether two contiguous tensors' bytes intersect
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
def vector_add_ref(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The same sum in plain PyTorch: the reference and the eager peer."""
    return x + y


# --8<-- [end:reference]


# --8<-- [start:benchmark]
def _bench_inputs(size: dict, dtype: torch.dtype, device: str):
    n = size["n_elements"]
    return (
        torch.randn(n, dtype=dtype, device=device),
        torch.randn(n, dtype=dtype, device=device),
    )


def _bench_bytes(size: dict, dtype: torch.dtype) -> int:
    # Two vectors read, one written: GB/s = 3 * n * itemsize / seconds / 1e9
    itemsize = torch.empty((), dtype=dtype).element_size()
    return 3 * size["n_elements"] * itemsize


BENCHMARK = {
    "name": "vector_add",
    "title": "Vector addition, out = x + y",
    "params": ["n_elements"],
    "sizes": [{"n_elements": 2**k} for k in (12, 16, 20, 24, 28)],
    "dtypes": ["float32"],
    "metric": "bandwidth",  # rate in GB/s, roofline = measured copy bandwidth
    "work": _bench_bytes,
    "make_inputs": _bench_inputs,
    "triton": vector_add,
    "peers": {"PyTorch eager": vector_add_ref},
    "compile": "PyTorch eager",  # the runner also times torch.compile of this peer
}
# --8<-- [end:benchmark]


# --8<-- [start:main]
def main():
    device = "cuda" if torch.cuda.is_available() and not _interpreting() else "cpu"
    torch.manual_seed(0)
    for n in (1, 1000, 98_432):
        x = torch.randn(n, device=device)
        y = torch.randn(n, device=device)
        out = vector_add(x, y)
        torch.testing.assert_close(out, vector_add_ref(x, y))
        torch.testing.assert_close(vector_add_simple(x, y), out)
        print(f"n={n:>6}: matches PyTorch on {device}")
    if device == "cuda":
        x = torch.randn(2**26, device=device)
        y = torch.randn(2**26, device=device)
        ms = triton.testing.do_bench(lambda: vector_add(x, y), return_mode="median")
        gbps = 3 * x.numel() * x.element_size() / ms / 1e6  # 2 reads, 1 write
        print(f"n=2**26 float32: {ms:.3f} ms, {gbps:.0f} GB/s")


if __name__ == "__main__":
    main()
# --8<-- [end:main]
