"""Starter for "transpose" (lesson 01): fill in the kernel and the launcher,
then check it:

    python -m triton_course.exercises check transpose my_transpose.py

out[j, i] = x[i, j] for a 2-D x of any strides, float32 or float16; out is
a new contiguous (N, M) tensor. Both the loads from x and the stores into out
must be coalesced. The solution: exercises/solutions/transpose.py.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def transpose_kernel(
    x_ptr,  # input, n_rows x n_cols, any strides
    out_ptr,  # output, n_cols x n_rows, contiguous
    n_rows, n_cols, stride_row, stride_col,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    # TODO: the rows and columns of x this program owns (tl.program_id(0)
    # and (1)), a mask for the edges, one tl.load of the tile from x, one
    # tl.store of it into out, where x[r, c] goes to out[c, r]
    pass


def transpose(x: torch.Tensor) -> torch.Tensor:
    if x.ndim != 2:
        raise ValueError("x must be a 2-D tensor")
    n_rows, n_cols = x.shape
    out = torch.empty((n_cols, n_rows), dtype=x.dtype, device=x.device)
    # TODO: a 2-D grid of tiles that covers x, and the launch
    raise NotImplementedError("launch transpose_kernel")
    return out
