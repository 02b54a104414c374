"""Log-sum-exp of long rows in one pass, with a running maximum (online softmax)."""

from . import Exercise


def make_inputs(case, dtype, generator):
    import torch

    rows, cols = case["shape"]
    x = torch.randn(rows, cols, generator=generator) * case.get("scale", 1.0)
    x += case.get("shift", 0.0)
    if case.get("neg_inf"):
        x[:, ::3] = float("-inf")  # some -inf entries, never a whole row
    if case.get("inf_rows"):
        x[0, : cols - 500] = float("-inf")  # whole blocks of -inf, then values
        x[1] = float("-inf")  # a row of nothing but -inf: the result is -inf
    return (x.to(dtype),)


def reference(x):
    import torch

    return torch.logsumexp(x.double(), dim=-1)


EXERCISE = Exercise(
    name="online_logsumexp",
    title="Online log-sum-exp",
    page="triton-series/online-softmax.md",
    function="logsumexp_rows",
    signature="logsumexp_rows(x)",
    task="for a 2-D tensor x return log(sum(exp(x))) of each row (shape "
    "(rows,), x's dtype), reading each row once in blocks of a fixed size and "
    "keeping a running maximum and a rescaled running sum; for a non-contiguous "
    "x, compute it right or raise a ValueError.",
    target="at 4096 x 16384 float16 the kernel reads x once: aim for most of the "
    "copy bandwidth measured on the same GPU, ahead of torch.logsumexp.",
    cases=[
        {"shape": (1, 1)},
        {"shape": (3, 7)},
        {"shape": (4, 5000)},
        {"shape": (2, 3000), "scale": 1e3},  # naive exp overflows
        {"shape": (3, 1001), "neg_inf": True},
        # Row 0 starts with 8500 -inf: a whole block of them for any block
        # size up to 8192; row 1 is all -inf.
        {"shape": (3, 9000), "inf_rows": True},
        # Every entry far below -1e30 (float16 makes them -inf): a running
        # maximum that starts at a finite sentinel such as -1e30 gets them wrong.
        {"shape": (2, 300), "scale": 1e33, "shift": -1e35},
        {"shape": (0, 5)},
        {"shape": (2, 0)},  # empty rows: log(0) = -inf
        {"shape": (3, 1100), "strided": True},  # every second column
    ],
    make_inputs=make_inputs,
    reference=reference,
    hints={
        "only:bfloat16": "convert loaded bfloat16 values with .to(tl.float32) "
        "before any arithmetic (a bug of triton 3.9's interpreter).",
        "NaN where": "a block whose entries are all -inf gives exp(-inf - -inf) = "
        "NaN: while the running maximum is still -inf, subtract 0 instead of it "
        "(tl.where(m == -float('inf'), 0.0, m)), and load masked lanes with "
        "other=-float('inf'). Starting the maximum at a finite number such as "
        "-1e30 instead is wrong for rows whose entries are all below it.",
    },
)
