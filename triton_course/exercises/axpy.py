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


def inspect(case, args, result, launches):
    """``a`` must reach the kernel as a runtime argument: as a tl.constexpr
    every new value of ``a`` compiles the kernel again."""
    a = args[0]
    for launch in launches:
        for name, value in launch.constexprs.items():
            if isinstance(value, float) and value == a:
                return [
                    f"a reached {launch.kernel} as the tl.constexpr {name}: "
                    "every new value of a would compile the kernel again. Pass "
                    "it as a plain kernel argument (no tl.constexpr annotation)."
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
        {"n": 1001, "a": -2.0, "strided": True},  # every second element
        # only x, then only y non-contiguous: each input's layout is checked
        {"n": 999, "a": 0.5, "strided": (1,)},
        {"n": 999, "a": 0.5, "strided": (2,)},
    ],
    make_inputs=make_inputs,
    reference=reference,
    inspect=inspect,
    hints={
        "only:bfloat16": "triton 3.9's interpreter computes garbage for arithmetic on "
        "bfloat16 values: load, convert with .to(tl.float32), compute, and "
        "convert back on the store (the vector_add kernel shows how).",
        "past the end": "the last program's block runs past n: pass mask= to "
        "tl.store (and tl.load).",
    },
)
