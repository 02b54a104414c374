"""Row softmax with a temperature: softmax(x / T) along the last dimension."""

from . import Exercise


def make_inputs(case, dtype, generator):
    import torch

    rows, cols = case["shape"]
    x = torch.randn(rows, cols, generator=generator) * case.get("scale", 1.0)
    return (x.to(dtype), case["T"])


def reference(x, temperature):
    import torch

    return torch.softmax(x.double() / temperature, dim=-1)


EXERCISE = Exercise(
    name="softmax_temperature",
    title="Softmax rows with a temperature",
    page="triton-series/softmax.md",
    function="softmax_temperature",
    signature="softmax_temperature(x, temperature)",
    task="for a 2-D tensor x and a Python float temperature > 0, return "
    "softmax(x / temperature) along each row, one program per row, in x's dtype; "
    "for a non-contiguous x, compute it right or raise a ValueError.",
    target="at 4096 x 4096 float16 the kernel reads x once and writes the "
    "result once, like the softmax page's fused kernel: aim for its share of the "
    "copy bandwidth measured on the same GPU, and beat PyTorch's two-step "
    "torch.softmax(x / T).",
    cases=[
        {"shape": (0, 5), "T": 1.0},
        {"shape": (4, 0), "T": 1.0},
        {"shape": (1, 1), "T": 1.0},
        {"shape": (3, 7), "T": 0.5},
        {"shape": (5, 1000), "T": 2.0},
        {"shape": (2, 1500), "T": 0.1, "scale": 30.0},  # exp would overflow unshifted
        {"shape": (3, 77), "T": 1.5, "strided": True},  # every second column
        # adjacent columns, but each row followed by 3 unused elements: the
        # row stride is not the row length (a row slice of a wider tensor)
        {"shape": (4, 300), "T": 0.7, "padded": True},
    ],
    make_inputs=make_inputs,
    reference=reference,
    hints={
        "only:bfloat16": "convert loaded bfloat16 values with .to(tl.float32) "
        "before any arithmetic (a bug of triton 3.9's interpreter), and convert "
        "back on the store.",
        "NaN where": "masked-off lanes must not win the max or add to the sum: "
        "load with other=-float('inf').",
        "inf": "subtract the row's maximum before tl.exp, or large x / T overflows.",
    },
)
