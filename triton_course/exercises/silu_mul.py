"""A fused SiLU-gated product with its own backward, wired into autograd
(lesson 03, Integration with PyTorch)."""

from . import DEFAULT_TOLERANCES, Exercise

# Each case: the shape of a and b; "strided": a and b every second element of
# a larger tensor; "dy": the gradient autograd hands to the backward, "dense"
# (contiguous), "strided" (every second element), "expanded" (one value at
# stride 0, as y.sum().backward() gives) or "transposed" (a .t() of a dense
# tensor); "large": a in [-3, 0] and b, dy of magnitude 200 to 300, where
# the results fit in float16 but dy * b does not.
CASES = [
    {"shape": (1,)},
    {"shape": (7,)},
    {"shape": (3, 5)},
    {"shape": (40, 33)},  # 1320 elements: more than one block of 1024
    {"shape": (2, 3, 5)},
    {"shape": (0, 4)},
    # a layout is a layout whatever the dtype: fewer dtypes, a faster check
    {"shape": (20, 9), "strided": True, "_dtypes": ("float32", "bfloat16")},
    {"shape": (6, 35), "dy": "expanded", "_dtypes": ("float32",)},
    {"shape": (21, 10), "dy": "strided", "_dtypes": ("float32",)},
    {"shape": (9, 13), "dy": "transposed", "_dtypes": ("float16",)},
    {"shape": (50,), "large": True, "_dtypes": ("float16",)},
    # a shape and dtype seen above, with new values: a result kept from an
    # earlier call (a cache keyed by shape) fails here
    {"shape": (40, 33), "call": "again", "_dtypes": ("float32", "bfloat16")},
]
DTYPES = ("float32", "float16", "bfloat16")
# float64: the values, then torch.autograd.gradcheck (finite differences of
# your forward against your backward)
GRADCHECK_CASES = [{"shape": (3, 5)}, {"shape": (4, 3), "strided": True}]

TOLERANCES = {**DEFAULT_TOLERANCES, "float64": {"atol": 1e-10, "rtol": 1e-10}}


def _values(case, dtype, generator):
    import torch

    shape = case["shape"]

    def randn(scale=1.0):
        return torch.randn(shape, generator=generator, dtype=torch.float64) * scale

    if case.get("large"):
        a = -3 * torch.rand(shape, generator=generator, dtype=torch.float64)
        sign = torch.randint(0, 2, (2, *shape), generator=generator) * 2 - 1
        size = 200 + 100 * torch.rand((2, *shape), generator=generator)
        b, dy = (sign * size).to(torch.float64)
    else:
        a, b, dy = randn(3.0), randn(), randn()
    return a.to(dtype), b.to(dtype), dy.to(dtype)


def reference(a, b, dy):
    """y, da, db in float64 from the inputs as given."""
    a, b = a.detach().double(), b.detach().double()
    s = a.sigmoid()
    y = a * s * b
    if dy is None:
        return y, None, None
    dy = dy.double()
    return y, dy * b * s * (1 + a * (1 - s)), dy * a * s


def _dy(case, value):
    """The gradient handed to the backward, laid out as the case says."""
    from ._check import guarded_input

    kind = case.get("dy", "dense")
    if kind == "expanded":
        base = guarded_input(value.reshape(-1)[:1].clone())
        dy = base.reshape((1,) * value.ndim).expand(value.shape)
        dy.guard = base.guard
        return dy
    if kind == "transposed":
        dense = guarded_input(value.t().contiguous())
        dy = dense.t()
        dy.guard = dense.guard
        return dy
    return guarded_input(value, strided=kind == "strided")


def _bits(tensor):
    import torch

    ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    return tensor.detach().view(ints[tensor.element_size()]).clone()


class _Failed(Exception):
    """A case's problems, raised to stop the case."""


def _one_case(fn, case, dtype, generator, poisoner, watch):
    import torch

    from ._check import (
        _one_line,
        compare,
        fence,
        guarded_input,
        kernel_problems,
        traceback_tail,
    )

    exercise = EXERCISE
    strided = bool(case.get("strided"))
    a0, b0, dy0 = _values(case, getattr(torch, dtype), generator)
    a = guarded_input(a0, strided).requires_grad_(True)
    b = guarded_input(b0, strided).requires_grad_(True)
    dy = _dy(case, dy0)
    guards = [(name, t.guard, _bits(t.guard)) for name, t in
              (("a", a), ("b", b), ("dy", dy))]  # fmt: skip
    fences = [fence(a, "a"), fence(b, "b"), fence(dy, "dy")]
    want_y, want_da, want_db = reference(a, b, dy)

    def run(stage, call):
        watch.clear()
        watch.fences = list(fences)
        try:
            with poisoner.active(), watch.active():
                return call()
        except Exception as error:  # the learner's exception, in full
            poisoner.buffers.clear()
            if watch.out_of_bounds:
                raise _Failed([f"{stage}: {watch.out_of_bounds[0]}"]) from None
            raise _Failed(
                [f"{stage} raised {_one_line(error)}\n" + traceback_tail(error)]
            ) from None

    def values(stage, result, want, args):
        found = watch.out_of_bounds[:1] + poisoner.stray_writes()
        found += kernel_problems(result, args, watch, poisoner.attempt_file)
        found += compare(result, want, dtype, exercise)
        return [f"{stage}: {p}" for p in found]

    try:
        y = run("the forward", lambda: fn(a, b))
        problems = values("the forward (y)", y, want_y, (a, b))
        if problems:
            return problems
        if not y.requires_grad or y.grad_fn is None:
            return [
                "y has no grad_fn: autograd cannot differentiate it. Return "
                "YourFunction.apply(a, b) from a torch.autograd.Function "
                "subclass whose forward launches your kernel"
            ]
        grads = run(
            "the backward",
            lambda: torch.autograd.grad(y, (a, b), dy, allow_unused=True),
        )
    except _Failed as failed:
        return failed.args[0]
    problems = []
    for name, grad, want, of in (("da", grads[0], want_da, "a"),
                                 ("db", grads[1], want_db, "b")):  # fmt: skip
        if grad is None:
            problems.append(f"the backward returned None for {of}'s gradient")
            continue
        problems += values(f"the backward ({name})", grad, want, (a, b, dy))
    for name, guard, old in guards:
        if not torch.equal(_bits(guard), old):
            problems.append(
                f"{name} or the memory around it was modified; inputs must "
                "stay as given"
            )
    return problems


def _gradcheck(fn, case, generator, poisoner, watch):
    import torch

    from ._check import _one_line, guarded_input

    a0, b0, _ = _values(case, torch.float64, generator)
    strided = bool(case.get("strided"))
    a = guarded_input(a0, strided).requires_grad_(True)
    b = guarded_input(b0, strided).requires_grad_(True)
    watch.clear()
    try:
        with poisoner.active(), watch.active():
            torch.autograd.gradcheck(fn, (a, b), fast_mode=True)
    except Exception as error:
        poisoner.buffers.clear()
        text = str(error).strip().splitlines()
        first = watch.out_of_bounds[:1] or [_one_line(error)]
        return first + [line for line in text[1:8] if line.strip()]
    return []


def check_autograd(fn, poisoner, watch):
    """(label, problems) for every case: forward and backward values, then
    gradcheck in float64, then (all passed) the kernels compiled for sm_90."""
    import torch

    from ._check import _label, compile_problems

    generator = torch.Generator().manual_seed(20242)
    failed = False
    for case in CASES:
        for dtype in case.get("_dtypes", DTYPES):
            problems = _one_case(fn, case, dtype, generator, poisoner, watch)
            failed |= bool(problems)
            yield _label(case, dtype), problems
    for case in GRADCHECK_CASES:
        label = _label(case, "float64")
        problems = _one_case(fn, case, "float64", generator, poisoner, watch)
        failed |= bool(problems)
        yield label, problems
        if not problems:
            problems = _gradcheck(fn, case, generator, poisoner, watch)
            failed |= bool(problems)
            yield f"gradcheck {label}", [f"gradcheck: {p}" for p in problems]
    if not failed:
        yield from compile_problems(watch, poisoner.attempt_file)


EXERCISE = Exercise(
    name="silu_mul",
    title="SiLU-gated product with autograd",
    page="gpu-architecture/03-custom-kernels/pytorch-integration.md",
    function="silu_mul",
    signature="silu_mul(a, b)",
    task="return y = silu(a) * b = a * sigmoid(a) * b through your own "
    "torch.autograd.Function: its forward launches your Triton kernel, its "
    "backward launches your Triton kernel for da = dy * b * s * (1 + a * (1 - "
    "s)) and db = dy * a * s (s = sigmoid(a)). a and b: the same shape (any, "
    "0 elements included) and dtype (float32, float16, bfloat16, float64), any "
    "strides; dy, the gradient autograd passes to backward, any strides too "
    "(stride 0 from y.sum()). Compute in float32, float64 in float64.",
    target="at 4096 x 14336 (an MLP's gate) bfloat16 the forward reads a and b "
    "and writes y (3 x 2 bytes per element), the backward reads a, b, dy and "
    "writes da, db (5 x 2): time both with triton.testing.do_bench against eager "
    "F.silu(a) * b and torch.compile of it, and compare the rates with the "
    "copy bandwidth lesson 01 measures.",
    tolerances=TOLERANCES,
    custom=check_autograd,
    hints={
        "only:dy=": "only the cases where autograd's dy is not a dense tensor "
        "failed: make dy contiguous in backward (dy.contiguous()) or pass its "
        "strides to the kernel.",
        "only:strided=True": "only the cases with non-contiguous a and b "
        "failed: make them contiguous in forward, and save those copies.",
        "only:large=True": "only the case whose products pass float16's range "
        "failed (dy * b up to 90000, float16 stops at 65504): convert the "
        "loaded values to float32 before any arithmetic.",
        "only:bfloat16": "convert loaded bfloat16 values with .to(tl.float32) "
        "before any arithmetic (a bug of triton 3.9's interpreter).",
        "only:float64": "float64 must stay float64: convert to float32 only when "
        "x.dtype != tl.float64 (a test on the compile-time type costs nothing).",
        "no grad_fn": "see the page's SoftmaxFunction: forward(ctx, a, b) "
        "launches the kernel and saves what backward needs with "
        "ctx.save_for_backward; silu_mul returns SiluMul.apply(a, b).",
        "never written by a tl.store": "return the tensors your kernels stored "
        "into, in the inputs' dtype: autograd converts a float32 gradient of a "
        "float16 input for you, and then it is no longer your kernel's.",
    },
)
