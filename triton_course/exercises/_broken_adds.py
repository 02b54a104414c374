"""Vector additions with and without a correct store mask, for catch_missing_mask."""

import torch
import triton
import triton.language as tl


@triton.jit
def _add_store_unmasked_kernel(
    x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr
):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offsets, (x + y).to(out_ptr.dtype.element_ty))  # no mask


@triton.jit
def _add_off_by_one_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets <= n_elements  # one element too many
    x = tl.load(x_ptr + offsets, mask=offsets < n_elements, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=offsets < n_elements, other=0.0).to(tl.float32)
    tl.store(out_ptr + offsets, (x + y).to(out_ptr.dtype.element_ty), mask=mask)


def _launcher(kernel, block_size=1024):
    def add(x, y, out=None):
        if out is None:
            out = torch.empty_like(x)
        n = x.numel()
        if n:
            kernel[(triton.cdiv(n, block_size),)](x, y, out, n, BLOCK_SIZE=block_size)
        return out

    return add


store_unmasked = _launcher(_add_store_unmasked_kernel)
off_by_one = _launcher(_add_off_by_one_kernel)
# 1000 = 8 * 125 fills 8-element blocks exactly: only a ragged n shows this one
store_unmasked_block8 = _launcher(_add_store_unmasked_kernel, block_size=8)
