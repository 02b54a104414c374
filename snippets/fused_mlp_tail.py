"""Why custom kernels: fuse the elementwise tail of an MLP block.

LayerNorm -> Linear -> GELU -> dropout runs as four kernels in PyTorch eager,
each a round trip through HBM. The matmul is cuBLAS's job; the tail after it
(bias add, exact GELU, dropout) is one Triton kernel here, reading the matmul's
output once and writing the result once. Dropout draws its mask from a seed
with ``tl.rand4x``, so the mask is never stored: it can be drawn again.

Run it:  TRITON_INTERPRET=1 python snippets/fused_mlp_tail.py   (CPU, interpreter)
         python snippets/fused_mlp_tail.py                      (CUDA GPU)
"""

# --8<-- [start:imports]
import contextlib

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

# --8<-- [end:imports]


# --8<-- [start:kernel]
@triton.jit
def _keep_mask(seed, row, pid_c, n_cols, p, BLOCK_SIZE: tl.constexpr):
    """Keep (True) or drop each of the BLOCK_SIZE elements of a block.

    Element (row, col) takes draw number col % 4 of Philox counter
    row * ceil(n_cols / 4) + col // 4: one call of the generator gives four
    uniform numbers, and the mask depends only on (seed, row, col). The
    counter is 64-bit: an int32 one wraps at 2**32, and elements 2**34 apart
    would share their mask.
    """
    groups = pid_c * (BLOCK_SIZE // 4) + tl.arange(0, BLOCK_SIZE // 4)
    counters = row.to(tl.int64) * tl.cdiv(n_cols, 4) + groups
    r0, r1, r2, r3 = tl.rand4x(seed, counters)  # four blocks, each in [0, 1)
    # back in column order, r0[g], r1[g], r2[g], r3[g] for group g: a flat
    # block, so the loads and stores stay contiguous and vectorised
    r = tl.interleave(tl.interleave(r0, r2), tl.interleave(r1, r3))
    return r >= p


@triton.jit
def bias_gelu_dropout_kernel(
    y_ptr,  # matmul output without bias, (n_rows, n_cols) contiguous
    bias_ptr,  # bias of the linear layer, (n_cols,)
    out_ptr,  # result, same shape as y (may be y itself: in place is safe)
    n_cols,  # features per row
    p,  # dropout probability, 0 <= p < 1
    scale,  # 1 / (1 - p): kept values are scaled so the mean is unchanged
    seed,  # the dropout mask is a pure function of (seed, row, col)
    BLOCK_SIZE: tl.constexpr,  # columns per program, a power of two >= 4
):
    row = tl.program_id(axis=0)  # one row of y per program along axis 0...
    pid_c = tl.program_id(axis=1)  # ...and BLOCK_SIZE of its columns
    cols = pid_c * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    offsets = row.to(tl.int64) * n_cols + cols
    y = tl.load(y_ptr + offsets, mask=mask).to(tl.float32)
    b = tl.load(bias_ptr + cols, mask=mask).to(tl.float32)
    h = y + b
    # exact GELU, as torch.nn.functional.gelu(approximate="none"):
    # h * Phi(h), with Phi the standard normal CDF written through erf
    g = 0.5 * h * (1.0 + tl.erf(h * 0.7071067811865476))
    keep = _keep_mask(seed, row, pid_c, n_cols, p, BLOCK_SIZE)
    out = tl.where(keep, g * scale, 0.0)
    tl.store(out_ptr + offsets, out.to(out_ptr.dtype.element_ty), mask=mask)


# --8<-- [end:kernel]


# --8<-- [start:mask_kernel]
@triton.jit
def dropout_keep_mask_kernel(
    keep_ptr,  # output, (n_rows, n_cols) uint8: 1 = kept, 0 = dropped
    n_cols,
    p,
    seed,
    BLOCK_SIZE: tl.constexpr,
):
    # The same draws as bias_gelu_dropout_kernel, element for element: a
    # backward pass (or a test) regenerates the mask instead of storing it.
    row = tl.program_id(axis=0)
    pid_c = tl.program_id(axis=1)
    cols = pid_c * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    keep = _keep_mask(seed, row, pid_c, n_cols, p, BLOCK_SIZE)
    offsets = row.to(tl.int64) * n_cols + cols
    tl.store(keep_ptr + offsets, keep.to(tl.uint8), mask=cols < n_cols)


# --8<-- [end:mask_kernel]


# --8<-- [start:launcher]
SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def bias_gelu_dropout(y, bias, p=0.0, seed=0, out=None, block_size=1024):
    """Return dropout(gelu(y + bias), p) with a mask drawn from ``seed``.

    ``y`` is (n_rows, n_cols), ``bias`` (n_cols,). ``out`` may be ``y`` itself.
    """
    if not isinstance(y, torch.Tensor) or not isinstance(bias, torch.Tensor):
        raise TypeError("bias_gelu_dropout expects torch.Tensor y and bias")
    _check_device(y, bias)
    if y.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"unsupported dtype {y.dtype}; use one of {SUPPORTED_DTYPES}")
    if bias.dtype != y.dtype:
        raise TypeError(f"dtypes differ: y is {y.dtype}, bias is {bias.dtype}")
    if y.dim() != 2:
        raise ValueError(f"y must be 2-D (rows, features), got shape {tuple(y.shape)}")
    if bias.shape != (y.shape[1],):
        raise ValueError(f"bias must be ({y.shape[1]},), got {tuple(bias.shape)}")
    if not (y.is_contiguous() and bias.is_contiguous()):
        raise ValueError("bias_gelu_dropout needs contiguous tensors")
    _check_dropout_args(p, seed, block_size)

    if out is None:
        out = torch.empty_like(y)
    elif out.shape != y.shape or out.dtype != y.dtype or out.device != y.device:
        raise ValueError("out must match y in shape, dtype and device")
    elif not out.is_contiguous():
        raise ValueError("out must be contiguous")
    # out may be y itself (each element is read, then written, by one program),
    # but no other tensor sharing memory with y or bias
    if (_overlaps(out, y) and out.data_ptr() != y.data_ptr()) or _overlaps(out, bias):
        raise ValueError("out must be y itself or share no memory with y and bias")
    n_rows, n_cols = y.shape
    if y.numel() == 0:
        return out
    grid = _grid(n_rows, n_cols, block_size)
    scale = 1.0 / (1.0 - p)
    with _on(y.device):  # Triton launches on the current GPU, not y's
        bias_gelu_dropout_kernel[grid](
            y, bias, out, n_cols, float(p), scale, seed, BLOCK_SIZE=block_size
        )
    return out


def dropout_keep_mask(shape, p, seed, device, block_size=1024):
    """The keep mask (bool) that bias_gelu_dropout uses for this 2-D shape and seed."""
    if torch.device(device).type != "cuda" and not _interpreting():
        raise ValueError("a CPU device needs TRITON_INTERPRET=1 (or use a CUDA GPU)")
    _check_dropout_args(p, seed, block_size)
    if len(shape) != 2:
        raise ValueError(f"shape must be (rows, cols), got {tuple(shape)}")
    keep = torch.empty(shape, dtype=torch.uint8, device=device)
    if keep.numel():
        grid = _grid(*shape, block_size)
        with _on(keep.device):
            dropout_keep_mask_kernel[grid](
                keep, shape[1], float(p), seed, BLOCK_SIZE=block_size
            )
    return keep.bool()


def _grid(n_rows, n_cols, block_size):
    if triton.cdiv(n_cols, block_size) > 65535:
        raise ValueError("too many column blocks for grid axis 1: raise block_size")
    return (n_rows, triton.cdiv(n_cols, block_size))  # (rows, column blocks)


def _check_device(*tensors):
    device = tensors[0].device
    for t in tensors[1:]:
        if t.device != device:
            raise ValueError(f"tensors are on {device} and {t.device}")
    if device.type != "cuda" and not _interpreting():
        raise ValueError(
            f"tensors are on {device}: move them to a CUDA GPU, or set "
            "TRITON_INTERPRET=1 to run the kernel on the CPU"
        )


def _check_dropout_args(p, seed, block_size):
    if not isinstance(p, (int, float)) or not 0.0 <= p < 1.0:
        raise ValueError(f"dropout probability p must be in [0, 1), got {p!r}")
    if not isinstance(seed, int) or not 0 <= seed < 2**31:
        raise ValueError(f"seed must be an int in [0, 2**31), got {seed!r}")
    if block_size < 4 or block_size & (block_size - 1):
        raise ValueError(f"block_size must be a power of two >= 4, got {block_size}")


def _overlaps(a, b) -> bool:
    # whether two dense tensors' bytes intersect
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
def bias_gelu_dropout_ref(y, bias, p=0.0, seed=0):
    """The same tail in float32 PyTorch, with the kernel's own mask regenerated."""
    g = F.gelu(y.float() + bias.float())  # approximate="none": the erf form
    if p == 0.0:
        return g
    keep = dropout_keep_mask(y.shape, p, seed, y.device)
    return torch.where(keep, g / (1.0 - p), 0.0)


# --8<-- [end:reference]


# --8<-- [start:chain]
def mlp_chain_eager(x, ln_weight, ln_bias, weight, bias, p, seed):
    """LayerNorm -> Linear -> GELU -> dropout: four kernels in PyTorch eager.

    ``seed`` is unused: eager dropout draws from PyTorch's own generator.
    """
    h = F.layer_norm(x, (x.shape[-1],), ln_weight, ln_bias)
    h = F.linear(h, weight, bias)  # cuBLAS, bias added in its epilogue
    h = F.gelu(h)
    return F.dropout(h, p=p, training=True)


def mlp_chain_fused_tail(x, ln_weight, ln_bias, weight, bias, p, seed):
    """LayerNorm, a cuBLAS matmul, then the Triton tail into a new tensor.

    Not in place: GELU's backward needs the pre-activation y (with the bias
    and the seed), so a training step keeps it.
    """
    h = F.layer_norm(x, (x.shape[-1],), ln_weight, ln_bias)
    y = torch.matmul(h, weight.t())  # cuBLAS, no bias: the tail adds it
    return bias_gelu_dropout(y, bias, p, seed)


# --8<-- [end:chain]


# --8<-- [start:benchmark]
DROPOUT_P = 0.1


def _itemsize(dtype):
    return torch.empty((), dtype=dtype).element_size()


def _tail_inputs(size: dict, dtype: torch.dtype, device: str):
    t, f = size["tokens"], size["out_features"]
    y = torch.randn(t, f, dtype=dtype, device=device)
    bias = torch.randn(f, dtype=dtype, device=device)
    return y, bias, DROPOUT_P, 0


def _tail_bytes(size: dict, dtype: torch.dtype) -> int:
    # fused tail: read y and bias, write out once.
    # GB/s = (2 * T * F + F) * itemsize / seconds / 1e9
    t, f = size["tokens"], size["out_features"]
    return (2 * t * f + f) * _itemsize(dtype)


def _tail_eager(y, bias, p, seed):
    return F.dropout(F.gelu(y + bias), p=p, training=True)


def _chain_inputs(size: dict, dtype: torch.dtype, device: str):
    t, h, f = size["tokens"], size["hidden"], size["out_features"]
    x = torch.randn(t, h, dtype=dtype, device=device)
    ln_weight = 1 + 0.1 * torch.randn(h, dtype=dtype, device=device)
    ln_bias = 0.1 * torch.randn(h, dtype=dtype, device=device)
    weight = torch.randn(f, h, dtype=dtype, device=device) / h**0.5
    bias = 0.1 * torch.randn(f, dtype=dtype, device=device)
    return x, ln_weight, ln_bias, weight, bias, DROPOUT_P, 0


def _chain_flops(size: dict, dtype: torch.dtype) -> int:
    # the Linear dominates: TFLOP/s = 2 * T * H * F / seconds / 1e12
    return 2 * size["tokens"] * size["hidden"] * size["out_features"]


BENCHMARKS = [
    {
        "name": "fused_mlp_tail",
        "title": "Bias + GELU + dropout after a matmul, one kernel",
        "params": ["tokens", "out_features"],
        "sizes": [
            {"tokens": 2048, "out_features": 16384},
            {"tokens": 8192, "out_features": 16384},
        ],
        "dtypes": ["float16", "bfloat16"],
        "metric": "bandwidth",  # GB/s of the fused tail's own traffic
        "work": _tail_bytes,
        "make_inputs": _tail_inputs,
        "triton": bias_gelu_dropout,
        "peers": {"PyTorch eager": _tail_eager},
        "compile": "PyTorch eager",
    },
    {
        "name": "fused_mlp_chain",
        "title": "LayerNorm -> Linear -> GELU -> dropout, unfused vs fused tail",
        "params": ["tokens", "hidden", "out_features"],
        "sizes": [
            {"tokens": 2048, "hidden": 4096, "out_features": 16384},
            {"tokens": 8192, "hidden": 4096, "out_features": 16384},
        ],
        "dtypes": ["float16", "bfloat16"],
        "metric": "compute",  # TFLOP/s of the Linear, 2 * T * H * F
        "work": _chain_flops,
        "make_inputs": _chain_inputs,
        "triton": mlp_chain_fused_tail,
        "peers": {"PyTorch eager": mlp_chain_eager},
        "compile": "PyTorch eager",
    },
]
# --8<-- [end:benchmark]


# --8<-- [start:main]
def main():
    device = "cuda" if torch.cuda.is_available() and not _interpreting() else "cpu"
    torch.manual_seed(0)
    for rows, cols in ((1, 7), (33, 100), (64, 1000)):
        y = torch.randn(rows, cols, device=device)
        bias = torch.randn(cols, device=device)
        out = bias_gelu_dropout(y, bias, p=0.0)
        torch.testing.assert_close(out, bias_gelu_dropout_ref(y, bias))
        out = bias_gelu_dropout(y, bias, p=0.25, seed=42)
        torch.testing.assert_close(out, bias_gelu_dropout_ref(y, bias, 0.25, 42))
        kept = (out != 0).float().mean().item()
        print(f"{rows}x{cols}: matches PyTorch on {device}, kept {kept:.2f}")
    if device == "cuda":
        args = _chain_inputs(
            {"tokens": 8192, "hidden": 4096, "out_features": 16384},
            torch.float16,
            device,
        )
        for name, fn in (("eager", mlp_chain_eager), ("fused", mlp_chain_fused_tail)):
            ms = triton.testing.do_bench(lambda fn=fn: fn(*args), return_mode="median")
            print(f"chain {name}: {ms:.3f} ms")


if __name__ == "__main__":
    main()
# --8<-- [end:main]
