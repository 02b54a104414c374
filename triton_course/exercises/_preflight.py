"""Can this Triton's interpreter run here? Asked once before a check.

triton 3.6's interpreter fails with NumPy 2.4 on any kernel whose loop bound
is computed at run time (``TypeError: only 0-dimensional arrays can be
converted to Python scalars``): every case of an exercise would fail with it,
which reads as the attempt's fault. The check asks this first and says what
to install instead.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _computed_bound_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    total = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n, BLOCK):  # a bound known only at run time
        offsets = start + tl.arange(0, BLOCK)
        total += tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
    tl.store(out_ptr, tl.sum(total))


def interpreter_problem() -> str | None:
    """None when the interpreter runs a loop with a computed bound; else what
    is wrong and how to fix it (TRITON_INTERPRET must already be set)."""
    import numpy as np
    import torch

    x = torch.arange(10, dtype=torch.float32)
    out = torch.empty(1, dtype=torch.float32)
    try:
        _computed_bound_kernel[(1,)](x, out, x.numel(), BLOCK=4)
    except Exception as exc:  # noqa: BLE001 - any failure here is the setup's
        return (
            f"Triton {triton.__version__}'s interpreter cannot run kernels here "
            f"with NumPy {np.__version__} ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''}). Every case would "
            "fail for this reason, not your kernel's. With triton 3.6 install "
            "NumPy below 2.4: pip install 'numpy<2.4' (the course's kernels "
            "extra does), then check again."
        )
    if out.item() != 45.0:
        return f"Triton {triton.__version__}'s interpreter summed 0..9 as {out.item()}"
    return None
