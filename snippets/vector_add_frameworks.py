"""One small kernel, out = x + y, in Triton, CUDA C++, Numba CUDA and CuPy.

Every version works on PyTorch tensors without copying them: CuPy and Numba see
the same GPU memory through DLPack / __cuda_array_interface__. CuPy and Numba
are imported only inside the functions that use them, so this file imports on
a machine that has neither (the CPU tests run only the Triton version).

Run it:  TRITON_INTERPRET=1 python snippets/vector_add_frameworks.py   (CPU)
         python snippets/vector_add_frameworks.py    (CUDA GPU, with cupy, numba-cuda)
"""

# --8<-- [start:imports]
import functools

import torch
import triton
import triton.language as tl

# --8<-- [end:imports]


# --8<-- [start:checks]
# Triton picks the interpreter when @triton.jit decorates a kernel, at import,
# from triton.knobs (TRITON_INTERPRET = 1, true, on, yes or y, any case). Read
# the knob once, at import too, so launchers and kernels agree; a plain bool
# also traces under torch.compile, which cannot call the knob (C++).
_INTERPRETING = triton.knobs.runtime.interpret


def _interpreting() -> bool:
    return _INTERPRETING


def check_inputs(x, y):
    """The same checks before every version: float32 vectors on one CUDA GPU."""
    if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor):
        raise TypeError("expected two torch.Tensor arguments")
    if x.device != y.device or (x.device.type != "cuda" and not _interpreting()):
        raise ValueError(
            f"x is on {x.device}, y on {y.device}: both must be on one CUDA GPU "
            "(or on the CPU with TRITON_INTERPRET=1, for the Triton version)"
        )
    if x.device.type == "cuda" and x.device.index != torch.cuda.current_device():
        # Triton launches on the current device, not on the tensors'
        raise ValueError(
            f"x and y are on {x.device}, the current device is cuda:"
            f"{torch.cuda.current_device()}: call torch.cuda.set_device"
            f"({x.device.index}) first, or call inside torch.cuda.device(x.device)"
        )
    if x.dtype != torch.float32 or y.dtype != torch.float32:
        raise TypeError(f"float32 only, got {x.dtype} and {y.dtype}")
    if x.shape != y.shape:
        raise ValueError(f"shapes differ: {tuple(x.shape)} vs {tuple(y.shape)}")
    if not (x.is_contiguous() and y.is_contiguous()):
        raise ValueError("contiguous tensors only (call .contiguous())")
    if x.numel() == 0:
        raise ValueError("x and y are empty: there is nothing to launch")


# --8<-- [end:checks]


# --8<-- [start:triton]
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # int64, like the CUDA C++ version's long long: int32 wraps past 2**31 - 1
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def add_triton(x, y):
    check_inputs(x, y)
    out = torch.empty_like(x)
    grid = (triton.cdiv(x.numel(), 1024),)
    add_kernel[grid](x, y, out, x.numel(), BLOCK=1024)
    return out


# --8<-- [end:triton]


# --8<-- [start:cuda_cpp]
CUDA_SOURCE = r"""
extern "C" __global__
void add_kernel(const float* x, const float* y, float* out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = x[i] + y[i];
    }
}
"""


def add_cuda_cpp(x, y):
    check_inputs(x, y)
    import cupy as cp

    kernel = _compiled_cuda_kernel()
    out = torch.empty_like(x)
    n = x.numel()
    threads = 256
    blocks = (n + threads - 1) // threads
    args = (cp.from_dlpack(x), cp.from_dlpack(y), cp.from_dlpack(out), cp.int64(n))
    kernel((blocks,), (threads,), args)
    return out


@functools.cache
def _compiled_cuda_kernel():
    import cupy as cp

    return cp.RawKernel(CUDA_SOURCE, "add_kernel")  # compiled by NVRTC on first use


# --8<-- [end:cuda_cpp]


# --8<-- [start:numba_compat]
def _numba_numpy_compat():
    # NumPy 2.5 removed np.row_stack, which the GPU image's numba still
    # references on import. A section of its own, so that the page's line
    # count of the numba section is of the method alone.
    import numpy as np

    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack


# --8<-- [end:numba_compat]


# --8<-- [start:numba]
@functools.cache
def _numba_kernel():
    from numba import cuda

    @cuda.jit
    def add_kernel(x, y, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i] + y[i]

    return add_kernel


def add_numba(x, y):
    check_inputs(x, y)
    _numba_numpy_compat()
    from numba import cuda

    out = torch.empty_like(x)
    threads = 256
    blocks = (x.numel() + threads - 1) // threads
    arrays = [cuda.as_cuda_array(t) for t in (x, y, out)]  # zero-copy views
    _numba_kernel()[blocks, threads](*arrays)
    return out


# --8<-- [end:numba]


# --8<-- [start:cupy]
@functools.cache
def _cupy_elementwise():
    import cupy as cp

    return cp.ElementwiseKernel("T x, T y", "T out", "out = x + y", "add_kernel")


def add_cupy_elementwise(x, y):
    check_inputs(x, y)
    import cupy as cp

    out = torch.empty_like(x)
    _cupy_elementwise()(cp.from_dlpack(x), cp.from_dlpack(y), cp.from_dlpack(out))
    return out


def add_cupy(x, y):
    check_inputs(x, y)
    import cupy as cp

    out = torch.empty_like(x)
    cp.add(cp.from_dlpack(x), cp.from_dlpack(y), out=cp.from_dlpack(out))
    return out


# --8<-- [end:cupy]


# --8<-- [start:reference]
def add_ref(x, y):
    """PyTorch's own x + y: the reference and the eager peer."""
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


# float32 only: the CUDA C++ and Numba kernels above are written for float.
BENCHMARK = {
    "name": "vector_add_frameworks",
    "title": "out = x + y in five ways, on PyTorch tensors",
    "params": ["n_elements"],
    "sizes": [{"n_elements": 2**k} for k in (16, 20, 24, 27)],
    "dtypes": ["float32"],
    "metric": "bandwidth",  # rate in GB/s, roofline = measured copy bandwidth
    "work": _bench_bytes,
    "make_inputs": _bench_inputs,
    "triton": add_triton,
    "peers": {
        "PyTorch eager": add_ref,
        "CUDA C++": add_cuda_cpp,
        "Numba CUDA": add_numba,
        "CuPy ElementwiseKernel": add_cupy_elementwise,
        "CuPy cp.add": add_cupy,
    },
}
# --8<-- [end:benchmark]

IMPLEMENTATIONS = {
    "Triton": add_triton,
    "CUDA C++": add_cuda_cpp,
    "Numba CUDA": add_numba,
    "CuPy ElementwiseKernel": add_cupy_elementwise,
    "CuPy cp.add": add_cupy,
}
# The snippet section holding each framework's kernel, for the line counts.
KERNEL_SECTIONS = {
    "Triton": "triton",
    "CUDA C++": "cuda_cpp",
    "Numba CUDA": "numba",
    "CuPy": "cupy",
}


# --8<-- [start:main]
def main():
    on_gpu = torch.cuda.is_available() and not _interpreting()
    device = "cuda" if on_gpu else "cpu"
    x = torch.randn(98_432, device=device)
    y = torch.randn(98_432, device=device)
    names = IMPLEMENTATIONS if on_gpu else ["Triton"]  # the rest need a GPU
    for name in names:
        try:
            out = IMPLEMENTATIONS[name](x, y)
        except ImportError as exc:  # cupy or numba-cuda not installed
            print(f"{name}: skipped ({exc})")
            continue
        torch.testing.assert_close(out, add_ref(x, y))
        print(f"{name}: matches PyTorch on {device}")


if __name__ == "__main__":
    main()
# --8<-- [end:main]
