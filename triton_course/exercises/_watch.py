"""What an attempt's kernels do, seen from inside Triton's interpreter.

While a ``Watch`` is active (``with watch.active():``):

- every kernel launch is recorded: which ``@triton.jit`` function, from which
  file, and the address of every element its stores and atomics wrote;
- a load, store or atomic outside the memory of every tensor passed to the
  launch is stopped *before* it happens (``OutOfBounds``), so a missing mask
  cannot scribble over the checker's own memory, however the output was
  allocated (``torch.zeros``, ``new_empty``, ...);
- ``tl.dot`` at TF32 precision on float32 operands first rounds them to TF32's
  10 mantissa bits, as an sm_80+ tensor core does. The interpreter on its own
  multiplies in full float32, so a kernel that leaves ``tl.dot`` at its TF32
  default would pass on the CPU and miss a float32 tolerance on the GPU.

Outside a watch the interpreter is left exactly as it was.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from pathlib import Path

import numpy as np
import torch

_active: Watch | None = None  # the watch in force, if any
_launch: Launch | None = None  # the launch being interpreted, if watched


class OutOfBounds(RuntimeError):
    """A memory access outside every tensor argument, stopped before it ran."""


@dataclasses.dataclass
class Launch:
    kernel: str  # the @triton.jit function's name
    file: str  # resolved path of the file that defines it
    spans: list[tuple[int, int, str]]  # (first byte, end byte, argument name)
    stored: list[np.ndarray] = dataclasses.field(default_factory=list)


class Watch:
    def __init__(self):
        self.launches: list[Launch] = []
        self.out_of_bounds: list[str] = []  # one message per stopped access
        self.tf32_dots = 0  # TF32 dots whose rounding changed an operand

    def clear(self) -> None:
        self.launches.clear()
        self.out_of_bounds.clear()
        self.tf32_dots = 0

    @contextlib.contextmanager
    def active(self):
        global _active
        install()
        previous, _active = _active, self
        try:
            # numpy's warnings (log(0), exp overflow) would only clutter the
            # report: the results are checked instead
            with np.errstate(all="ignore"):
                yield self
        finally:
            _active = previous

    def launched_from(self, path: Path | str) -> list[Launch]:
        """The launches of kernels defined in the file ``path``."""
        path = str(Path(path).resolve())
        return [launch for launch in self.launches if launch.file == path]

    @staticmethod
    def stored(tensor: torch.Tensor, launches: list[Launch]) -> torch.Tensor:
        """Bool tensor like ``tensor``: which elements a store of ``launches``
        wrote (by address, so a view of the kernel's output counts)."""
        offsets = np.zeros((), dtype=np.int64)
        for size, stride in zip(tensor.shape, tensor.stride(), strict=True):
            offsets = offsets[..., None] + np.arange(size, dtype=np.int64) * stride
        addresses = np.uint64(tensor.data_ptr()) + (
            offsets * tensor.element_size()
        ).astype(np.uint64)
        chunks = [a for launch in launches for a in launch.stored]
        if not chunks:
            return torch.zeros(tensor.shape, dtype=torch.bool)
        written = np.isin(addresses, np.concatenate(chunks))
        return torch.from_numpy(np.asarray(written, dtype=bool)).reshape(tensor.shape)


def _spans(names, values) -> list[tuple[int, int, str]]:
    spans = []
    for name, value in zip(names, values, strict=False):
        if isinstance(value, (tuple, list)):
            spans += _spans([name] * len(value), value)
        elif hasattr(value, "base") and hasattr(value, "block_shape"):
            spans += _spans([name], [value.base])  # a TensorDescriptor
        elif hasattr(value, "untyped_storage"):
            storage = value.untyped_storage()
            low = storage.data_ptr()
            spans.append((low, low + storage.nbytes(), name))
    return spans


def _kernel_line(launch: Launch) -> str:
    frame = sys._getframe(2)
    while frame is not None:
        if str(Path(frame.f_code.co_filename).resolve()) == launch.file:
            return f"line {frame.f_lineno}"
        frame = frame.f_back
    return "a line of the kernel"


def _where(address: int, itemsize: int, spans) -> str:
    before = [(address - high) // itemsize for low, high, _ in spans if high <= address]
    if before:
        gap = min(before)
        name = next(n for low, high, n in spans if (address - high) // itemsize == gap)
        if gap == 0:
            return f"right after the end of {name}'s memory"
        return f"{gap} element(s) after the end of {name}'s memory"
    return "before the start of every tensor argument"


def _checked(ptrs, mask, itemsize: int, what: str) -> np.ndarray | None:
    """The addresses an access touches; raise OutOfBounds if any is outside."""
    launch = _launch
    if launch is None or _active is None:
        return None
    addresses = np.asarray(ptrs, dtype=np.uint64)
    if mask is not None:
        addresses = addresses[
            np.broadcast_to(np.asarray(mask, dtype=bool), addresses.shape)
        ]
    addresses = addresses.ravel()
    inside = np.zeros(addresses.shape, dtype=bool)
    for low, high, _ in launch.spans:
        inside |= (addresses >= low) & (addresses + itemsize <= high)
    if not inside.all():
        bad = addresses[~inside]
        advice = (
            "a tl.load without its mask (or with a mask that lets too many "
            "lanes through)?"
            if what == "load"
            else "a tl.store without its mask (or with a mask that lets too "
            "many lanes through)?"
        )
        message = (
            f"{launch.kernel} ({_kernel_line(launch)}): a {what} of {bad.size} "
            f"element(s) outside every tensor passed to the kernel, the first "
            f"{_where(int(bad[0]), itemsize, launch.spans)}: {advice} On a GPU "
            "this reads garbage or overwrites another tensor; here it was "
            "stopped before it happened."
        )
        _active.out_of_bounds.append(message)
        raise OutOfBounds(message)
    return addresses


def _itemsize(handle) -> int:
    return max(handle.get_element_ty().primitive_bitwidth // 8, 1)


def _to_tf32(values: np.ndarray) -> np.ndarray:
    """Round float32 values to TF32 (10 mantissa bits), to nearest."""
    values = np.ascontiguousarray(values, dtype=np.float32)
    bits = values.view(np.uint32)
    rounded = ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)
    return np.where(np.isfinite(values), rounded, values)


_installed = False


def install() -> None:
    """Wrap the interpreter's memory, dot and launch entry points (once)."""
    global _installed
    if _installed:
        return
    _installed = True
    from triton._C.libtriton import ir
    from triton.runtime import interpreter

    builder, executor = interpreter.InterpreterBuilder, interpreter.GridExecutor
    load, store = builder.create_masked_load, builder.create_masked_store
    rmw, cas, dot = (
        builder.create_atomic_rmw,
        builder.create_atomic_cas,
        builder.create_dot,
    )

    def _record(addresses) -> None:
        if addresses is not None and addresses.size:
            _launch.stored.append(addresses)

    def watched_load(self, ptrs, mask, other, *rest, **kwargs):
        _checked(ptrs.data, mask.data, _itemsize(ptrs), "load")
        return load(self, ptrs, mask, other, *rest, **kwargs)

    def watched_store(self, ptrs, value, mask, *rest, **kwargs):
        _record(_checked(ptrs.data, mask.data, _itemsize(ptrs), "store"))
        return store(self, ptrs, value, mask, *rest, **kwargs)

    def watched_rmw(self, op, ptr, val, mask, *rest, **kwargs):
        _record(_checked(ptr.data, mask.data, _itemsize(ptr), "atomic"))
        return rmw(self, op, ptr, val, mask, *rest, **kwargs)

    def watched_cas(self, ptr, cmp, val, *rest, **kwargs):
        _record(_checked(ptr.data, None, _itemsize(ptr), "atomic"))
        return cas(self, ptr, cmp, val, *rest, **kwargs)

    def watched_dot(self, a, b, d, input_precision, *rest, **kwargs):
        fp32 = a.dtype.is_floating() and a.dtype.primitive_bitwidth == 32
        if _active is not None and fp32 and input_precision == ir.INPUT_PRECISION.TF32:
            a_tf32, b_tf32 = _to_tf32(a.data), _to_tf32(b.data)
            if not (np.array_equal(a_tf32, a.data) and np.array_equal(b_tf32, b.data)):
                _active.tf32_dots += 1
            a = interpreter.TensorHandle(a_tf32, a.dtype)
            b = interpreter.TensorHandle(b_tf32, b.dtype)
        return dot(self, a, b, d, input_precision, *rest, **kwargs)

    builder.create_masked_load, builder.create_masked_store = (
        watched_load,
        watched_store,
    )
    builder.create_atomic_rmw, builder.create_atomic_cas = watched_rmw, watched_cas
    builder.create_dot = watched_dot

    init_args, call = executor._init_args_hst, executor.__call__

    def watched_init_args(self, args_dev, kwargs):
        global _launch
        args_hst, kwargs_hst = init_args(self, args_dev, kwargs)
        if _active is not None:
            names = list(self.arg_names[: len(args_hst)]) + list(kwargs_hst)
            code = getattr(self.fn, "__code__", None)
            _launch = Launch(
                kernel=getattr(self.fn, "__name__", "kernel"),
                file=str(Path(code.co_filename).resolve()) if code else "",
                spans=_spans(names, [*args_hst, *kwargs_hst.values()]),
            )
            _active.launches.append(_launch)
        return args_hst, kwargs_hst

    def watched_call(self, *args, **kwargs):
        global _launch
        try:
            return call(self, *args, **kwargs)
        finally:
            _launch = None

    executor._init_args_hst, executor.__call__ = watched_init_args, watched_call
