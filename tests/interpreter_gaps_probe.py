"""Run by tests/test_interpreter_gaps.py in a child process with
TRITON_INTERPRET=1: each function shows one of the interpreter's gaps that
the reference page lists, and main() prints what happened as JSON."""

from __future__ import annotations

import json
import os
import sys

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "snippets"))


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs))


@triton.jit
def _copy_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)  # no mask: BLOCK may pass the end
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


@triton.autotune(
    configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})], key=[]
)
@triton.jit
def _tuned_copy_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs), mask=offs < 8)


def bf16_arithmetic(device="cpu") -> dict:
    gen = torch.Generator().manual_seed(0)
    x, y = (torch.randn(64, generator=gen).bfloat16().to(device) for _ in range(2))
    out = torch.empty_like(x)
    _add_kernel[(1,)](x, y, out, BLOCK=64)
    error = (out.float() - (x.float() + y.float())).abs().max().item()
    return {"max_error": error if error == error else "nan"}  # nan is not JSON


@triton.jit
def _to_bf16_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs).to(tl.bfloat16))


def bf16_rounding(device="cpu") -> dict:
    # float32 -> bfloat16: round to nearest (torch, the GPU) or truncate?
    x = torch.randn(4096, generator=torch.Generator().manual_seed(0)).to(device)
    out = torch.empty(4096, dtype=torch.bfloat16, device=device)
    _to_bf16_kernel[(1,)](x, out, BLOCK=4096)
    truncated = (x.view(torch.int32) & -65536).view(torch.float32).bfloat16()
    return {
        "matches_round_to_nearest": torch.equal(out, x.bfloat16()),
        "matches_truncation": torch.equal(out, truncated),
    }


def out_of_bounds(device="cpu") -> dict:
    # 10-element tensors cut from 32-element buffers: the 6 stray elements of
    # a 16-wide block land in a guard region this process owns (writing past
    # a real allocation corrupts the heap), poisoned so that a write shows.
    x_buf = torch.randn(32, device=device)
    out_buf = torch.full((32,), float("nan"), device=device)
    try:
        _copy_kernel[(1,)](x_buf[:10], out_buf[:10], BLOCK=16)
    except Exception as exc:  # noqa: BLE001 - what it raises is the finding
        return {"raised": type(exc).__name__}
    stray = out_buf[10:16]
    return {"raised": None, "stray_writes": int((stray == x_buf[10:16]).sum())}


def autotune(device="cpu") -> dict:
    x, out = torch.randn(32, device=device), torch.empty(32, device=device)
    try:
        _tuned_copy_kernel[(1,)](x, out)
    except Exception as exc:  # noqa: BLE001
        return {"raised": type(exc).__name__, "message": str(exc)}
    return {"raised": None}


def triton_op_compile(device="cpu") -> dict:
    import softmax_autograd as sm

    try:
        torch.compile(sm.softmax_op, fullgraph=True)(torch.randn(4, 8, device=device))
    except Exception as exc:  # noqa: BLE001
        return {"raised": type(exc).__name__}
    return {"raised": None}


def cuda_tensors(device="cuda") -> dict:
    """An interpreted kernel given CUDA tensors: copied to the host and back."""
    gen = torch.Generator().manual_seed(0)
    x, y = (torch.randn(64, generator=gen).to(device) for _ in range(2))
    out = torch.zeros_like(x)
    _add_kernel[(1,)](x, y, out, BLOCK=64)
    return {
        "out_device": str(out.device),
        "max_error": (out - (x + y)).abs().max().item(),
    }


GAPS = {f.__name__: f for f in (bf16_arithmetic, bf16_rounding, out_of_bounds, autotune,
                                triton_op_compile, cuda_tensors)}  # fmt: skip

if __name__ == "__main__":
    print(json.dumps({name: GAPS[name]() for name in sys.argv[1:]}))
