"""Running one attempt against one exercise (inside the checking subprocess)."""

from __future__ import annotations

import contextlib
import importlib.util
import sys
import time
import traceback
from pathlib import Path

import torch

from . import GUARD, Exercise
from ._watch import Watch


class Poisoner:
    """Patch torch.empty/empty_like so that calls from one file get NaN-filled
    views at the start of a larger buffer, and remember those buffers."""

    def __init__(self, attempt_file: Path, fill=None, watch: Watch | None = None):
        self.attempt_file = str(Path(attempt_file).resolve())
        self.buffers: list[tuple[torch.Tensor, int, str]] = []
        self.fill = fill or poison_  # what the attempt's allocations hold
        # With a watch, the tail of each buffer is fenced: a kernel's access
        # there is stopped and named, whatever value it would have written.
        self.watch = watch

    def _from_attempt(self) -> bool:
        frame = sys._getframe(2)  # the caller of the patched function
        return str(Path(frame.f_code.co_filename).resolve()) == self.attempt_file

    def _guarded(self, plain: torch.Tensor, how: str) -> torch.Tensor:
        if not plain.is_contiguous():
            return plain
        size = plain.numel() + guard_size(plain)
        buffer = self.fill(torch.empty(size, dtype=plain.dtype, device=plain.device))
        line = sys._getframe(2).f_lineno
        self.buffers.append((buffer, plain.numel(), f"{how} on line {line}"))
        if self.watch is not None:
            low, size = buffer.data_ptr(), buffer.element_size()
            self.watch.fences.append(
                (low, low + size * buffer.numel(), low, low + size * plain.numel(),
                 f"the output made by {how} on line {line}")
            )  # fmt: skip
        return buffer[: plain.numel()].view(plain.shape)

    @contextlib.contextmanager
    def active(self):
        real_empty, real_empty_like = torch.empty, torch.empty_like

        def empty(*args, **kwargs):
            plain = real_empty(*args, **kwargs)
            return (
                self._guarded(plain, "torch.empty") if self._from_attempt() else plain
            )

        def empty_like(*args, **kwargs):
            plain = real_empty_like(*args, **kwargs)
            if self._from_attempt():
                return self._guarded(plain, "torch.empty_like")
            return plain

        torch.empty, torch.empty_like = empty, empty_like
        try:
            yield self
        finally:
            torch.empty, torch.empty_like = real_empty, real_empty_like

    def stray_writes(self) -> list[str]:
        problems = []
        for buffer, n, how in self.buffers:
            tail = buffer[n:]
            written = ~_is_poison(tail)
            if written.any():
                first = int(written.nonzero()[0])
                problems.append(
                    f"wrote {int(written.sum())} element(s) past the end of the "
                    f"output made by {how} (from element {n + first} on): "
                    "a tl.store without its mask?"
                )
        self.buffers.clear()
        return problems


def poison_(tensor: torch.Tensor) -> torch.Tensor:
    if tensor.dtype.is_floating_point:
        return tensor.fill_(float("nan"))
    if tensor.dtype == torch.bool:
        return tensor.fill_(True)
    return tensor.fill_(torch.iinfo(tensor.dtype).max)


def _is_poison(tensor: torch.Tensor) -> torch.Tensor:
    if tensor.dtype.is_floating_point:
        return torch.isnan(tensor)
    if tensor.dtype == torch.bool:
        return tensor
    return tensor == torch.iinfo(tensor.dtype).max


def garbage_(tensor: torch.Tensor) -> torch.Tensor:
    """Fill with finite values that are neither NaN nor zero: what fresh GPU
    memory may hold, so that a test relying on torch.empty being NaN fails."""
    if tensor.dtype.is_floating_point:
        return tensor.copy_(torch.arange(tensor.numel()).remainder(7).add(1.5))
    return tensor.fill_(3)


def guard_size(tensor: torch.Tensor) -> int:
    return max(GUARD, tensor.numel())


def guarded_input(
    tensor: torch.Tensor, strided: bool = False, padded: bool = False
) -> torch.Tensor:
    """A copy of ``tensor`` inside a NaN-filled buffer: followed in memory by
    NaNs; with ``strided`` every second element of its last dimension (a
    non-contiguous view, NaN in the gaps); with ``padded`` (2-D and up) each
    row followed by 3 NaN, so the last dimension is adjacent but the row
    stride is not the row length. The buffer is ``view.guard``."""
    n = tensor.numel()
    spread = 2 if strided and n and tensor.ndim else 1
    pad = 3 if padded and n and tensor.ndim >= 2 else 0
    shape = (*tensor.shape[:-1], tensor.shape[-1] * spread + pad) if n else ()
    whole = n * spread + (n // tensor.shape[-1] * pad if pad else 0)
    buffer = poison_(torch.empty(whole + guard_size(tensor), dtype=tensor.dtype))
    if spread == 1 and not pad:
        view = buffer[:n].view(tensor.shape)
    else:
        view = buffer[:whole].view(shape)[..., : tensor.shape[-1] * spread : spread]
    view.copy_(tensor)
    view.guard = buffer
    return view


def fence(view: torch.Tensor, name: str) -> tuple[int, int, int, int, str]:
    """The watch's fence for an input made by guarded_input: its buffer, and
    the bytes from its first to just past its last element."""
    size = view.element_size()
    low = view.guard.data_ptr()
    first = view.data_ptr()
    span = sum((d - 1) * s for d, s in zip(view.shape, view.stride(), strict=True))
    end = first + (span + 1) * size if view.numel() else first
    return (low, low + view.guard.numel() * size, first, end, name)


def written_beside(view: torch.Tensor) -> int:
    """How many guard elements around an input made by guarded_input changed."""
    around = view.guard.clone()
    offset = view.storage_offset() - view.guard.storage_offset()
    around.as_strided(view.shape, view.stride(), offset).fill_(float("nan"))
    return int((~_is_poison(around)).sum())


def load_attempt(path: Path):
    spec = importlib.util.spec_from_file_location("attempt", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["attempt"] = module
    spec.loader.exec_module(module)
    return module


def traceback_tail(error: BaseException, lines: int = 14) -> str:
    """The end of the traceback, without the checker's own frames."""
    here = str(Path(__file__).resolve().parent)
    tb = traceback.TracebackException.from_exception(error)
    tb.stack = traceback.StackSummary.from_list(
        [f for f in tb.stack if not str(Path(f.filename).resolve()).startswith(here)]
    )
    kept = "".join(tb.format()).rstrip().splitlines()[-lines:]
    return "\n".join("      | " + line for line in kept)


def _label(case: dict, dtype: str | None) -> str:
    parts = [f"{k}={v}" for k, v in case.items() if not k.startswith("_")]
    return " ".join(parts + ([dtype] if dtype else []))


def compare(
    result, expected: torch.Tensor, dtype: str, exercise: Exercise
) -> list[str]:
    """What is wrong with ``result`` (empty list: nothing)."""
    want_dtype = getattr(torch, exercise.result_dtype(dtype))
    if not isinstance(result, torch.Tensor):
        return [f"returned {type(result).__name__}, expected a torch.Tensor"]
    if tuple(result.shape) != tuple(expected.shape):
        return [
            f"result has shape {tuple(result.shape)}, expected {tuple(expected.shape)}"
        ]
    if result.dtype != want_dtype:
        return [f"result has dtype {result.dtype}, expected {want_dtype}"]
    got = result.detach().to(torch.float64).cpu()
    want = expected.to(torch.float64)
    if got.numel() == 0:
        return []
    problems = []
    unwritten = torch.isnan(got) & ~torch.isnan(want)
    if unwritten.any():
        flat = unwritten.flatten().nonzero().flatten()
        first = _index(int(flat[0]), got.shape)
        problems.append(
            f"{int(unwritten.sum())} of {got.numel()} elements are NaN where the "
            f"reference is not (first at {first}): never written, or a masked-off "
            "load used without other=? (inputs are followed by NaN in memory)"
        )
    tol = exercise.tolerances[dtype]
    both = ~torch.isnan(got) & ~torch.isnan(want)
    same_inf = torch.isinf(got) & torch.isinf(want) & (got == want)
    error = (got - want).abs().masked_fill(~both | same_inf, 0.0)
    allowed = tol["atol"] + tol["rtol"] * want.abs().masked_fill(~both, 0.0)
    bad = (error > allowed) | (torch.isinf(got) != torch.isinf(want)) & both
    if bad.any():
        worst = int(torch.where(bad, error.nan_to_num(posinf=1e300), -1.0).argmax())
        at = _index(worst, got.shape)
        problems.append(
            f"{int(bad.sum())} of {got.numel()} elements differ: max abs error "
            f"{float(error.flatten()[worst]):.3g} at {at} (got "
            f"{float(got.flatten()[worst]):.6g}, expected "
            f"{float(want.flatten()[worst]):.6g}); allowed atol={tol['atol']:g} "
            f"rtol={tol['rtol']:g}"
        )
    return problems


def _index(flat: int, shape) -> str:
    if len(shape) <= 1:
        return f"index {flat}"
    idx = []
    for size in reversed(shape):
        idx.append(flat % size)
        flat //= size
    return "index " + str(tuple(reversed(idx)))


def run_cases(exercise: Exercise, fn, poisoner: Poisoner, watch: Watch):
    """Yield (case label, problems) for every case, as each one finishes."""
    generator = torch.Generator().manual_seed(20240)
    for case in exercise.cases:
        for dtype in exercise.dtypes:
            label = _label(case, dtype)
            padded = bool(case.get("padded"))
            strided = bool(case.get("strided")) or padded
            # "strided": True makes every tensor input non-contiguous; a tuple
            # of positions only those inputs (the others stay contiguous)
            which = case.get("strided") or ()
            args = tuple(
                guarded_input(a, which is True or i in which, padded)
                if isinstance(a, torch.Tensor)
                else a
                for i, a in enumerate(
                    exercise.make_inputs(case, getattr(torch, dtype), generator)
                )
            )
            before = [a.clone() if isinstance(a, torch.Tensor) else None for a in args]
            watch.clear()
            watch.fences = [
                fence(a, f"input {i + 1}")
                for i, a in enumerate(args)
                if isinstance(a, torch.Tensor)
            ]
            try:
                with poisoner.active(), watch.active():
                    result = fn(*args)
            except Exception as error:  # the learner's exception, reported in full
                poisoner.buffers.clear()
                if watch.out_of_bounds:
                    yield label, watch.out_of_bounds[:1]
                elif strided and isinstance(error, (ValueError, TypeError)):
                    if exercise.refusal_ok:
                        yield f"{label} (refused: {_one_line(error)})", []
                    else:
                        yield (
                            label,
                            [
                                f"refused these strides ({_one_line(error)}), "
                                "but the exercise asks for any strides: pass "
                                "every stride to the kernel and use it"
                            ],
                        )
                else:
                    yield (
                        label,
                        [f"raised {_one_line(error)}\n" + traceback_tail(error)],
                    )
                continue
            problems = watch.out_of_bounds[:1] + poisoner.stray_writes()
            for i, arg in enumerate(args):
                beside = written_beside(arg) if isinstance(arg, torch.Tensor) else 0
                if beside:
                    problems.append(
                        f"wrote {beside} element(s) of the memory "
                        f"around input {i + 1} (past its end, or between its "
                        "elements): a tl.store without its mask, or through the "
                        "wrong pointer?"
                    )
            problems += kernel_problems(result, args, watch, poisoner.attempt_file)
            problems += compare(result, exercise.reference(*args), dtype, exercise)
            if exercise.inspect is not None and not problems:
                own = watch.launched_from(poisoner.attempt_file)
                problems += exercise.inspect(case, args, result, own)
            if watch.tf32_dots:
                problems.append(
                    "tl.dot multiplied float32 operands in TF32, its default "
                    "on NVIDIA GPUs since sm_80: each operand keeps only 10 "
                    "mantissa bits (a relative error up to 2**-10, about 1e-3, "
                    "each, toward zero), which "
                    "no float32 tolerance allows. Pass "
                    'input_precision="ieee" to tl.dot for float32 inputs (the '
                    "checker truncates the operands as a tensor core does; the "
                    "interpreter alone would not)."
                )
            for acc in sorted(watch.narrow_dots):
                problems.append(narrow_dot_problem(acc))
            for i, (arg, old) in enumerate(zip(args, before, strict=True)):
                if old is not None and not torch.equal(
                    arg.nan_to_num(1.0), old.nan_to_num(1.0)
                ):
                    problems.append(
                        f"input {i + 1} was modified; inputs must stay as given"
                    )
            yield label, problems


def kernel_problems(result, args, watch: Watch, attempt_file) -> list[str]:
    """The result must be what a kernel of the attempt stored (when the
    inputs hold data): not PyTorch's work, nor a copy or conversion of it."""
    if not isinstance(result, torch.Tensor) or result.numel() == 0:
        return []
    if any(isinstance(a, torch.Tensor) and a.numel() == 0 for a in args):
        return []  # empty inputs: the attempt may skip the launch
    own = watch.launched_from(attempt_file)
    if not own:
        others = sorted({launch.kernel for launch in watch.launches})
        ran = f" (only {', '.join(others)} ran, not defined there)" if others else ""
        return [
            "no Triton kernel defined in your file was launched" + ran + ": the "
            "exercise asks for the result to be computed by your own "
            "@triton.jit kernel, launched as kernel[grid](...) from this file"
        ]
    written = Watch.stored(result.detach(), own)
    if result.dtype.is_floating_point:
        written |= torch.isnan(result.detach())  # compare() names those
    problems = []
    if not written.all():
        missing = (~written).flatten().nonzero().flatten()
        problems.append(
            f"{missing.numel()} of {result.numel()} elements of the returned "
            f"tensor were never written by a tl.store of your kernel (first at "
            f"{_index(int(missing[0]), result.shape)}): a block the grid or the "
            "mask skips, or a result computed, copied or converted afterwards in "
            "PyTorch? Return the tensor your kernel stores into."
        )
    # Written by the kernel, then changed: PyTorch work on the output after
    # the launch (out.copy_(...), out.add_(...), c.relu_()).
    changed = Watch.changed_since_stored(result, own)
    if changed.any():
        first = changed.flatten().nonzero().flatten()
        problems.append(
            f"{int(changed.sum())} of {result.numel()} elements of the returned "
            "tensor differ from what your kernel stored there (first at "
            f"{_index(int(first[0]), result.shape)}): they were changed in "
            "PyTorch after the kernel ran. Compute the whole result in the "
            "kernel and store it once."
        )
    return problems


def compile_problems(
    watch: Watch, attempt: Path, done: set | None = None, early: bool = False
):
    """(label, problems) for each kernel launch of the attempt, one per
    combination of argument types, that Triton's compiler refuses for sm_90
    (see _compile.py): what the interpreter ran but a GPU would not.
    Signatures in ``done`` were compiled already (each compiles alone, the
    same way every time): skipped, and those compiled now are added. With
    ``early`` (before the last case) nothing is printed but refusals."""
    import json

    from ._compile import ARCH, refusals

    file = str(Path(attempt).resolve())
    done = set() if done is None else done
    launches, keys, known = [], [], False
    for key, seen in watch.signatures.items():
        where, kernel, types = key
        try:
            json.dumps(seen["constexprs"])
        except TypeError:
            continue  # a constexpr that cannot be passed on (a tl.dtype, say)
        if where == file:
            known = True
            if key in done:
                continue
            keys.append(key)
            launches.append(
                {
                    "kernel": kernel,
                    "types": dict(types),
                    "constexprs": seen["constexprs"],
                }
            )
    if not known:
        return
    if not early:
        print(f"  compiling your kernels for sm_{ARCH}, as a GPU would ...", flush=True)
    if not launches:
        return
    found = refusals(file, launches)
    if isinstance(found, str):  # no compiler here: say so, refuse nothing
        if not early:  # (early: the last compile tries them all again)
            print(f"  (skipped: the compiler could not run here: {found})")
        return
    done.update(keys)
    for refusal in found:
        pointers = sorted(
            {t[1:] for t in refusal["types"].values() if t and t[0] == "*"}
        )
        yield (
            f"compiling {refusal['kernel']} for sm_{ARCH} ({', '.join(pointers)} "
            "pointers)",
            [
                "the interpreter ran it, but Triton's compiler refuses it, so "
                "on a GPU it would not run at all: " + refusal["error"]
            ],
        )


def narrow_dot_problem(acc: str) -> str:
    """What a tl.dot with an accumulator narrower than float32 does."""
    name = {"fp16": "float16", "bf16": "bfloat16"}.get(acc, acc)
    gpu = (
        " On a GPU triton 3.9 compiles it to a tensor-core instruction that "
        "adds in float16 (mma.sync ...f16.f16.f16.f16 on sm_80, wgmma "
        "...f16.f16.f16 on sm_90); triton 3.6 refuses an acc whose dtype is "
        "not out_dtype (float32 by default)."
        if name == "float16"
        else ""
    )
    return (
        f"tl.dot accumulated in {name} (its acc argument, or its out_dtype, "
        f"was {name}): the running sum keeps only {name}'s precision, and "
        "a sum that grows large loses its low bits." + gpu + " The interpreter "
        "rounds only at the end of each tl.dot, so the values alone may not "
        "show it here."
    )


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"


def _print_failure(label: str, problems: list[str], seen: set) -> None:
    print(f"  FAIL {label}")
    for problem in problems:
        first, _, rest = problem.partition("\n")
        print(f"       - {first}")
        if rest and first not in seen:  # each traceback once
            print(rest)
        seen.add(first)
    sys.stdout.flush()


def _report_compiles(watch, attempt, compiled, failed, early=False) -> int:
    """Print and append to ``failed`` each launch the compiler refuses (see
    compile_problems); return how many cases that added."""
    added = 0
    for label, problems in compile_problems(watch, attempt, compiled, early):
        added += 1
        failed.append((label, problems))
        print(f"  FAIL {label}")
        for problem in problems:
            print(f"       - {problem}")
    return added


def check(
    exercise: Exercise,
    attempt: Path,
    first_failure: bool = False,
    compile_after: float | None = None,
) -> int:
    """Print a report; return the exit status (0: every case passed). With
    ``first_failure``, stop at the first failing case (mutation testing).
    With it and ``compile_after``, the kernels launched so far are compiled
    once the cases have taken that many CPU seconds, not only after the last
    case: a mutant that only the compiler refuses stops before the slowest
    cases. The status is the same: each signature compiles alone, with the
    constexprs of its first launch, whenever it is compiled."""
    print(f"checking {exercise.name!r} from {attempt} (Triton interpreter, CPU)")
    try:
        module = load_attempt(attempt)
    except BaseException as error:  # SyntaxError, ImportError, anything at import
        print(f"  FAIL the file could not be imported: {_one_line(error)}")
        print(traceback_tail(error))
        return 1
    fn = getattr(module, exercise.function, None)
    if not callable(fn):
        print(f"  FAIL {attempt.name} does not define {exercise.signature}")
        return 1
    watch = Watch()
    poisoner = Poisoner(attempt, watch=watch)
    if exercise.custom is not None:
        results = exercise.custom(fn, poisoner, watch)
    else:
        results = run_cases(exercise, fn, poisoner, watch)
    failed, count, seen = [], 0, set()
    compiled: set = set()  # signatures compiled before the last case
    early = first_failure and compile_after is not None and exercise.custom is None
    started = time.process_time()
    for label, problems in results:
        count += 1
        if not problems:
            print(f"  ok   {label}", flush=True)
        else:
            failed.append((label, problems))
            _print_failure(label, problems, seen)
            if first_failure:
                break
        if early and time.process_time() - started > compile_after:
            early = False
            count += _report_compiles(watch, attempt, compiled, failed, early=True)
            if failed:
                break
    if not failed and exercise.custom is None:
        count += _report_compiles(watch, attempt, compiled, failed)
    if failed:
        print(f"\n{len(failed)} of {count} cases failed.")
        if all("strided" in label or "padded" in label for label, _ in failed):
            print(
                "hint: only the cases with non-contiguous inputs failed (every "
                "second element of a larger tensor, or rows longer in memory "
                "than the row length): use the tensors' strides in the address "
                "arithmetic"
                + (
                    ", or refuse such inputs with a ValueError."
                    if exercise.refusal_ok
                    else "."
                )
            )
        for words, advice in exercise.hints.items():
            if words.startswith("only:"):
                show = all(words[5:] in label for label, _ in failed)
            else:
                show = any(words in p for _, ps in failed for p in ps)
            if show:
                print(f"hint: {advice}")
        return 1
    print(f"\nAll {count} cases passed.")
    print(f"Next, on a GPU: {exercise.target}")
    return 0
