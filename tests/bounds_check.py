"""A bounds checker for Triton's interpreter: every load, store and atomic a
kernel makes must fall inside the memory of a tensor passed to that launch.

On the CPU the interpreter reads and writes the tensors' memory through raw
addresses, so an access a mask fails to cover does not raise: it reads or
corrupts whatever lies beside the tensor, and the process may crash much later
in unrelated code. (On a GPU the same bug is an illegal address, or silent.)
This makes it an error at the access, naming the kernel.

Bounds are the whole storage of each tensor argument (also a tensor
descriptor's base): an access outside a view but inside its storage is a logic
error the tests' results catch, not memory corruption.
"""

from __future__ import annotations

import threading

import numpy as np
from triton.runtime import interpreter

_state = threading.local()


class OutOfBoundsAccess(RuntimeError):
    pass


def _storages(args) -> list[tuple[int, int]]:
    spans = []
    for arg in args:
        if isinstance(arg, (tuple, list)):
            spans += _storages(arg)
        elif hasattr(arg, "base") and hasattr(arg, "block_shape"):  # TensorDescriptor
            spans += _storages([arg.base])
        elif hasattr(arg, "untyped_storage"):
            storage = arg.untyped_storage()
            spans.append((storage.data_ptr(), storage.data_ptr() + storage.nbytes()))
    return spans


def _check(ptrs, mask, itemsize: int, what: str) -> None:
    spans = getattr(_state, "spans", None)
    if spans is None:  # not inside a launch we watch
        return
    addresses = np.asarray(ptrs, dtype=np.uint64)
    if mask is not None:
        addresses = addresses[
            np.broadcast_to(np.asarray(mask, dtype=bool), addresses.shape)
        ]
    addresses = addresses.ravel()
    if addresses.size == 0:
        return
    inside = np.zeros(addresses.shape, dtype=bool)
    for low, high in spans:
        inside |= (addresses >= low) & (addresses + itemsize <= high)
    if not inside.all():
        bad = addresses[~inside]
        raise OutOfBoundsAccess(
            f"{_state.kernel}: {what} of {bad.size} element(s) outside every tensor "
            f"argument (first address {int(bad[0]):#x}; tensors at "
            + ", ".join(f"[{low:#x}, {high:#x})" for low, high in spans)
            + ")"
        )


def _itemsize(handle) -> int:
    return max(handle.get_element_ty().primitive_bitwidth // 8, 1)


def install() -> None:
    """Wrap the interpreter's memory operations (idempotent)."""
    builder = interpreter.InterpreterBuilder
    executor = interpreter.GridExecutor
    if getattr(builder, "_bounds_checked", False):
        return
    builder._bounds_checked = True

    load, store = builder.create_masked_load, builder.create_masked_store
    rmw, cas = builder.create_atomic_rmw, builder.create_atomic_cas

    def checked_load(self, ptrs, mask, other, *rest, **kwargs):
        _check(ptrs.data, mask.data, _itemsize(ptrs), "load")
        return load(self, ptrs, mask, other, *rest, **kwargs)

    def checked_store(self, ptrs, value, mask, *rest, **kwargs):
        _check(ptrs.data, mask.data, _itemsize(ptrs), "store")
        return store(self, ptrs, value, mask, *rest, **kwargs)

    def checked_rmw(self, op, ptr, val, mask, *rest, **kwargs):
        _check(ptr.data, mask.data, _itemsize(ptr), "atomic")
        return rmw(self, op, ptr, val, mask, *rest, **kwargs)

    def checked_cas(self, ptr, cmp, val, *rest, **kwargs):
        _check(ptr.data, None, _itemsize(ptr), "atomic_cas")
        return cas(self, ptr, cmp, val, *rest, **kwargs)

    builder.create_masked_load, builder.create_masked_store = (
        checked_load,
        checked_store,
    )
    builder.create_atomic_rmw, builder.create_atomic_cas = checked_rmw, checked_cas

    init_args = executor._init_args_hst

    def watched_init_args(self, args_dev, kwargs):
        args_hst, kwargs_hst = init_args(self, args_dev, kwargs)
        _state.spans = _storages([*args_hst, *kwargs_hst.values()])
        _state.kernel = getattr(self.fn, "__name__", "kernel")
        return args_hst, kwargs_hst

    call = executor.__call__

    def watched_call(self, *args, **kwargs):
        try:
            return call(self, *args, **kwargs)
        finally:
            _state.spans = None

    executor._init_args_hst, executor.__call__ = watched_init_args, watched_call
