"""What an attempt's kernels do, seen from inside Triton's interpreter.

While a ``Watch`` is active (``with watch.active():``):

- every kernel launch is recorded: which ``@triton.jit`` function, from which
  file, its ``tl.constexpr`` arguments, the address of every element its loads
  read, and the address and the value (read back from memory right after the
  store) of every element its stores and atomics wrote; each load's and
  store's addresses are also kept in the shape of its block, with its mask
  (which lanes are neighbours, as a warp would issue them);
- a load, store or atomic outside the memory of every tensor passed to the
  launch is stopped *before* it happens (``OutOfBounds``), so a missing mask
  cannot scribble over the checker's own memory, however the output was
  allocated (``torch.zeros``, ``new_empty``, ...). An access that stays inside
  a checker-made guard buffer but outside the input it surrounds (``fences``)
  is stopped too: an unmasked load past the end of an input would read NaN
  there, and on a GPU memory that is not the input's;
- a masked load without ``other=`` gives NaN in its masked-off lanes (for
  floating-point data): tl.load documents them as undefined, and the
  interpreter's zeros would let a kernel that relies on them pass;
- ``tl.dot`` at TF32 precision on float32 operands first truncates them to TF32's
  10 mantissa bits, as an sm_80+ tensor core does. The interpreter on its own
  multiplies in full float32, so a kernel that leaves ``tl.dot`` at its TF32
  default would pass on the CPU and miss a float32 tolerance on the GPU;
- a ``tl.dot`` whose accumulator is narrower than float32 (``acc`` in float16,
  or ``out_dtype=tl.float16``) is recorded: on a GPU it adds in float16 inside
  the tensor core, while the interpreter rounds only once per ``tl.dot``.

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


def unique(values) -> np.ndarray:
    """np.unique(values), by sorting. NumPy 2.4's np.unique hashes, and on
    addresses (multiples of the element size) that takes some 30 times as
    long; np.isin calls it too (see isin)."""
    ordered = np.sort(np.asarray(values), axis=None)
    if ordered.size < 2:
        return ordered
    keep = np.empty(ordered.size, dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def isin(values, among) -> np.ndarray:
    """np.isin(values, among), by sorting (see unique): a bool array of the
    shape of values, True where the element is one of among's."""
    values, among = np.asarray(values), np.asarray(among)
    if values.dtype != among.dtype:
        return np.isin(values, among)
    ordered = np.sort(among, axis=None)
    if not ordered.size:
        return np.zeros(values.shape, dtype=bool)
    pos = np.minimum(np.searchsorted(ordered, values), ordered.size - 1)
    return np.asarray(ordered[pos] == values)


class OutOfBounds(RuntimeError):
    """A memory access outside every tensor argument, stopped before it ran."""


@dataclasses.dataclass
class Launch:
    kernel: str  # the @triton.jit function's name
    file: str  # resolved path of the file that defines it
    spans: list[tuple[int, int, str]]  # (first byte, end byte, argument name)
    stored: list[np.ndarray] = dataclasses.field(default_factory=list)
    # the bits each store left in memory, aligned with ``stored``
    values: list[np.ndarray] = dataclasses.field(default_factory=list)
    loaded: list[np.ndarray] = dataclasses.field(default_factory=list)
    load_sizes: list[int] = dataclasses.field(default_factory=list)  # per tl.load
    # lanes of each tl.load's block, masked-off ones included (its tile size)
    load_lanes: list[int] = dataclasses.field(default_factory=list)
    load_itemsizes: list[int] = dataclasses.field(default_factory=list)
    # each tl.load's and tl.store's addresses in the shape of its block, its
    # mask (True: the lane runs) and element size: which lanes are neighbours
    load_tiles: list[tuple[np.ndarray, np.ndarray, int]] = dataclasses.field(
        default_factory=list
    )
    store_tiles: list[tuple[np.ndarray, np.ndarray, int]] = dataclasses.field(
        default_factory=list
    )
    constexprs: dict = dataclasses.field(default_factory=dict)
    # Triton's type of every other argument ("*fp16", "i32", "fp32"), for
    # compiling the kernel as a GPU would (_compile.py)
    types: dict = dataclasses.field(default_factory=dict)


class Watch:
    def __init__(self):
        self.launches: list[Launch] = []
        self.out_of_bounds: list[str] = []  # one message per stopped access
        self.tf32_dots = 0  # TF32 dots whose rounding changed an operand
        # dtype names of the accumulators of floating-point dots that were
        # narrower than float32 (acc in float16, or out_dtype=tl.float16)
        self.narrow_dots: set[str] = set()
        # (buffer first byte, buffer end, input first byte, input end, name):
        # guard buffers the checker made around its inputs
        self.fences: list[tuple[int, int, int, int, str]] = []
        # every (file, kernel, argument types) launched, with its constexprs,
        # kept across clear(): what to compile for a GPU at the end
        self.signatures: dict[tuple, dict] = {}

    def clear(self) -> None:
        self.launches.clear()
        self.out_of_bounds.clear()
        self.tf32_dots = 0
        self.narrow_dots = set()
        self.fences = []

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
        written = isin(addresses, np.concatenate(chunks))
        return torch.from_numpy(np.asarray(written, dtype=bool)).reshape(tensor.shape)

    @staticmethod
    def loaded(tensor: torch.Tensor, launches: list[Launch]) -> torch.Tensor:
        """Bool tensor like ``tensor``: which elements a load of ``launches``
        read (by address)."""
        chunks = [a for launch in launches for a in launch.loaded]
        if not chunks:
            return torch.zeros(tensor.shape, dtype=torch.bool)
        read = isin(Watch.addresses(tensor), np.concatenate(chunks))
        return torch.from_numpy(np.asarray(read, dtype=bool)).reshape(tensor.shape)

    @staticmethod
    def addresses(tensor: torch.Tensor) -> np.ndarray:
        """The byte address of every element of ``tensor``, in its shape."""
        offsets = np.zeros((), dtype=np.int64)
        for size, stride in zip(tensor.shape, tensor.stride(), strict=True):
            offsets = offsets[..., None] + np.arange(size, dtype=np.int64) * stride
        return np.uint64(tensor.data_ptr()) + (offsets * tensor.element_size()).astype(
            np.uint64
        )

    @staticmethod
    def changed_since_stored(tensor: torch.Tensor, launches: list[Launch]):
        """Bool tensor like ``tensor``: elements a store of ``launches`` wrote
        whose bits now differ from the last value stored there (PyTorch work on
        the kernel's output after the launch)."""
        shape = tuple(tensor.shape)
        chunks = [a for launch in launches for a in launch.stored]
        if not chunks or tensor.numel() == 0:
            return torch.zeros(shape, dtype=torch.bool)
        where = np.concatenate(chunks)
        # Launches may store tensors of several dtypes (a float32 scratch and
        # a float16 result): widen every value to 64 bits, and keep its size.
        values = [v for launch in launches for v in launch.values]
        bits = np.concatenate([v.astype(np.uint64) for v in values])
        sizes = np.concatenate([np.full(v.size, v.itemsize, np.int8) for v in values])
        # the last store to each address wins: unique over the reversed order
        unique, first = np.unique(where[::-1], return_index=True)
        last, last_size = bits[::-1][first], sizes[::-1][first]
        addresses = Watch.addresses(tensor).ravel()
        pos = np.minimum(np.searchsorted(unique, addresses), len(unique) - 1)
        found = unique[pos] == addresses
        unsigned = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
        as_numpy = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
        size = tensor.element_size()
        now = tensor.detach().cpu().view(unsigned[size]).numpy().ravel()
        now = now.view(as_numpy[size]).astype(np.uint64)
        # stored with another element size: not the value now there
        changed = found & ((last_size[pos] != size) | (now != last[pos]))
        return torch.from_numpy(np.asarray(changed, dtype=bool)).reshape(shape)

    @staticmethod
    def foreign_loads(launches: list[Launch], *inputs: torch.Tensor) -> int:
        """How many distinct elements the loads of ``launches`` read that are
        neither elements of ``inputs`` nor written by a store of ``launches``:
        memory that PyTorch filled (a copy of an input such as ``x / T`` or
        ``x.clone()``, a result computed in PyTorch and copied by a kernel)."""
        loaded = [a for launch in launches for a in launch.loaded]
        if not loaded:
            return 0
        read = unique(np.concatenate(loaded))
        known = [Watch.addresses(t).ravel() for t in inputs if t.numel()]
        known += [a for launch in launches for a in launch.stored]
        if known:
            read = read[~isin(read, np.concatenate(known))]
        return int(read.size)


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


_TORCH_TYPES = {
    "float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
    "bool": "i1",
}  # fmt: skip


def _triton_type(value) -> str | None:
    """Triton's name for a kernel argument's type; None where unknown."""
    if hasattr(value, "data_ptr") and hasattr(value, "dtype"):
        name = _TORCH_TYPES.get(str(value.dtype).removeprefix("torch."))
        return f"*{name}" if name else None
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        return "i32" if -(2**31) <= value < 2**31 else "i64"
    if isinstance(value, float):
        return "fp32"
    return None


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
    for low, high, first, end, name in _active.fences:
        in_guard = (addresses >= low) & (addresses < high)
        in_guard &= (addresses < first) | (addresses + itemsize > end)
        if in_guard.any():
            bad = addresses[in_guard]
            message = (
                f"{launch.kernel} ({_kernel_line(launch)}): a {what} of "
                f"{bad.size} element(s) past the end of {name} (into the "
                "NaN-filled memory the checker put after it): a "
                f"tl.{'load' if what == 'load' else 'store'} without its mask "
                "(or with a mask that lets too many lanes through)? On a GPU "
                "this touches memory that is not the tensor's; here it was "
                "stopped before it happened."
            )
            _active.out_of_bounds.append(message)
            raise OutOfBounds(message)
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


def _tile(ptrs, mask) -> tuple[np.ndarray, np.ndarray, int]:
    """An access's addresses in its block's shape, which lanes run, and the
    size of its elements."""
    addresses = np.asarray(ptrs.data, dtype=np.uint64)
    lanes = np.ones(addresses.shape, dtype=bool)
    if mask is not None and mask.data is not None:
        lanes = np.broadcast_to(np.asarray(mask.data, dtype=bool), addresses.shape)
    return addresses, lanes, _itemsize(ptrs)


def _to_tf32(values: np.ndarray) -> np.ndarray:
    """Truncate float32 values to TF32 (keep 10 mantissa bits), as the tensor
    cores do: Triton emits no conversion, and the mma reads the fp32
    registers and drops the low 13 bits (ser1-03 of the 2026-11-26 review)."""
    values = np.ascontiguousarray(values, dtype=np.float32)
    bits = values.view(np.uint32)
    truncated = (bits & np.uint32(0xFFFFE000)).view(np.float32)
    return np.where(np.isfinite(values), truncated, values)


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

    def _record(addresses, ptrs, mask) -> None:
        """Remember the addresses written and the bits now in memory there,
        read back after the store (an atomic's result included)."""
        if addresses is None or not addresses.size:
            return
        np_dtype = interpreter._get_np_dtype(ptrs.get_element_ty())
        keep = np.ones(ptrs.data.shape, dtype=bool)
        if mask is not None:
            keep = np.broadcast_to(np.asarray(mask.data, dtype=bool), keep.shape)
        back = interpreter._interpreter.load(
            ptrs.data, keep, np.zeros(ptrs.data.shape, dtype=np_dtype), np_dtype
        )
        bits = np.ascontiguousarray(back[keep]).ravel()
        unsigned = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
        _launch.stored.append(addresses)
        _launch.values.append(bits.view(unsigned[bits.dtype.itemsize]))

    def watched_load(self, ptrs, mask, other, *rest, **kwargs):
        addresses = _checked(ptrs.data, mask.data, _itemsize(ptrs), "load")
        if addresses is not None:
            _launch.loaded.append(addresses)
            _launch.load_sizes.append(int(addresses.size))
            _launch.load_lanes.append(int(np.asarray(ptrs.data).size))
            _launch.load_itemsizes.append(_itemsize(ptrs))
            _launch.load_tiles.append(_tile(ptrs, mask))
            element = ptrs.get_element_ty()
            if other is None and element.is_floating():
                # Without other= a masked-off lane is undefined (tl.load's
                # documentation), not the interpreter's 0: NaN shows its use.
                np_dtype = interpreter._get_np_dtype(element)
                nan = {"f": np.nan, "u": 0x7FC0}.get(np_dtype.kind)  # bf16: bits
                if nan is not None and (np_dtype.kind == "f" or element.is_bf16()):
                    lanes = np.full(ptrs.data.shape, nan, dtype=np_dtype)
                    other = interpreter.TensorHandle(lanes, element)
        return load(self, ptrs, mask, other, *rest, **kwargs)

    def watched_store(self, ptrs, value, mask, *rest, **kwargs):
        addresses = _checked(ptrs.data, mask.data, _itemsize(ptrs), "store")
        done = store(self, ptrs, value, mask, *rest, **kwargs)
        _record(addresses, ptrs, mask)
        if addresses is not None:
            _launch.store_tiles.append(_tile(ptrs, mask))
        return done

    def watched_rmw(self, op, ptr, val, mask, *rest, **kwargs):
        addresses = _checked(ptr.data, mask.data, _itemsize(ptr), "atomic")
        done = rmw(self, op, ptr, val, mask, *rest, **kwargs)
        _record(addresses, ptr, mask)
        return done

    def watched_cas(self, ptr, cmp, val, *rest, **kwargs):
        addresses = _checked(ptr.data, None, _itemsize(ptr), "atomic")
        done = cas(self, ptr, cmp, val, *rest, **kwargs)
        _record(addresses, ptr, None)
        return done

    def watched_dot(self, a, b, d, input_precision, *rest, **kwargs):
        fp32 = a.dtype.is_floating() and a.dtype.primitive_bitwidth == 32
        acc = d.dtype.scalar if hasattr(d.dtype, "scalar") else d.dtype
        if _active is not None and acc.is_floating() and acc.primitive_bitwidth < 32:
            _active.narrow_dots.add(str(acc))  # fp16 or bf16 sums
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
            values = [*args_hst, *kwargs_hst.values()]
            constexprs = set(getattr(self, "constexprs", ()))
            _launch = Launch(
                kernel=getattr(self.fn, "__name__", "kernel"),
                file=str(Path(code.co_filename).resolve()) if code else "",
                spans=_spans(names, values),
                constexprs={
                    n: v for n, v in zip(names, values, strict=False) if n in constexprs
                },
                types={
                    n: _triton_type(v)
                    for n, v in zip(names, values, strict=False)
                    if n not in constexprs
                },
            )
            _active.launches.append(_launch)
            key = (_launch.file, _launch.kernel, tuple(sorted(_launch.types.items())))
            _active.signatures.setdefault(
                key, {"constexprs": dict(_launch.constexprs), "names": names}
            )
        return args_hst, kwargs_hst

    def watched_call(self, *args, **kwargs):
        global _launch
        try:
            return call(self, *args, **kwargs)
        finally:
            _launch = None

    executor._init_args_hst, executor.__call__ = watched_init_args, watched_call
