"""Scale and add: out = a * x + y, with ``a`` a Python float (vector addition page)."""

from . import Exercise


def make_inputs(case, dtype, generator):
    import torch

    n = case["n"]
    x = torch.randn(n, generator=generator).to(dtype)
    y = torch.randn(n, generator=generator).to(dtype)
    return (case["a"], x, y)


def reference(a, x, y):
    return a * x.double() + y.double()


# (attempt file, kernel, n, dtype, strides) -> (a, constexprs) of the first
# case that launched it: a later case with the same n and dtype but another a
# must launch it with the same constexprs, or every new a compiles it again
_FIRST_SEEN: dict[tuple, tuple] = {}


def inspect(case, args, result, launches):
    """``a`` must reach the kernel as a runtime argument: as a tl.constexpr
    (as itself, or in any form derived from it) every new value of ``a``
    compiles the kernel again. And the kernels compute from x and y: they
    read nothing that PyTorch made (a result computed in PyTorch, copied)."""
    from ._watch import Watch

    a, x, y = args
    if case is EXERCISE.cases[0]:  # a new check (of a new attempt) begins
        _FIRST_SEEN.clear()
    for launch in launches:
        for name, value in launch.constexprs.items():
            if isinstance(value, float) and value == a:
                return [
                    f"a reached {launch.kernel} as the tl.constexpr {name}: "
                    "every new value of a would compile the kernel again. Pass "
                    "it as a plain kernel argument (no tl.constexpr annotation)."
                ]
    layout = (x.numel(), str(x.dtype), x.stride(), y.stride())
    for launch in launches:
        key = (launch.file, launch.kernel, *layout)
        first_a, first = _FIRST_SEEN.setdefault(key, (a, launch.constexprs))
        if first_a != a and first != launch.constexprs:
            changed = sorted(
                n
                for n in set(first) | set(launch.constexprs)
                if first.get(n) != launch.constexprs.get(n)
            )
            return [
                f"{launch.kernel}'s tl.constexpr arguments ({', '.join(changed)}) "
                f"changed when only a changed (a = {first_a}, then a = {a}, "
                "same n and dtype): every new value of a would compile the "
                "kernel again. Pass a as a plain kernel argument."
            ]
    foreign = Watch.foreign_loads(launches, x, y) if x.numel() else 0
    if foreign:
        return [
            f"your kernels read {foreign} element(s) "
            "of memory that is neither x nor y nor written by them: a tensor "
            "made in PyTorch (a * x, or the whole answer computed by torch and "
            "copied by a kernel). The exercise asks your kernel to compute "
            "a * x + y from x and y"
        ]
    return []


EXERCISE = Exercise(
    name="axpy",
    title="Scale and add",
    page="triton-series/vector-addition.md",
    function="axpy",
    signature="axpy(a, x, y)",
    task="return a * x + y for 1-D tensors x, y of the same dtype and a Python "
    "float a, computed by your own Triton kernel (a passed as a kernel argument); "
    "for non-contiguous x or y, compute it right or raise a ValueError.",
    target="time it at n = 2**24 float32 the way the vector addition page times "
    "vector_add: axpy moves the same 3 * n * 4 bytes, so aim for at least 85% of "
    "the copy bandwidth measured on the same GPU.",
    cases=[
        {"n": 0, "a": 2.0},
        {"n": 1, "a": 2.0},
        {"n": 7, "a": -0.5},
        {"n": 1000, "a": 3.25},
        {"n": 4099, "a": 1e-3},
        # n = 1000 again, new data: an answer kept from an earlier call fails
        {"n": 1000, "a": 3.25},
        # n = 1000, another a: the kernel's constexprs must not change with a
        {"n": 1000, "a": -1.75},
        {"n": 1001, "a": -2.0, "strided": True},  # every second element
        # only x, then only y non-contiguous: each input's layout is checked
        {"n": 999, "a": 0.5, "strided": (1,)},
        {"n": 999, "a": 0.5, "strided": (2,)},
        # 65 blocks of 1024: a grid or a block of fixed size leaves a tail
        # (last: the slowest case, reached by few wrong attempts)
        {"n": 2**16 + 3, "a": 0.75},
    ],
    make_inputs=make_inputs,
    reference=reference,
    inspect=inspect,
    hints={
        "only:bfloat16": "Triton's interpreter (3.6 and 3.9) computes garbage for "
        "arithmetic on bfloat16 values: load, convert with .to(tl.float32), "
        "compute, and convert back on the store (the vector_add kernel shows how).",
        "only:n=65539": "only the largest n failed: every element needs a "
        "program that stores it, so compute the grid from n "
        "(triton.cdiv(n, BLOCK_SIZE) programs) rather than fixing it.",
        "past the end": "the last program's block runs past n: pass mask= to "
        "tl.store (and tl.load).",
    },
)
