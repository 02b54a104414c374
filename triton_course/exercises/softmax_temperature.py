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


def inspect(case, args, result, launches):
    """The kernels compute from x itself: they read every element of x, and
    nothing that PyTorch made (``x / T``, ``x.clone()``, ``torch.softmax``)."""
    from ._watch import Watch

    x = args[0]
    if not launches or x.numel() == 0:
        return []
    foreign = Watch.foreign_loads(launches, x)
    if foreign > 16:  # more than a few scalars passed in a tensor
        return [
            f"your kernels read {foreign} elements of memory that is neither x "
            "nor written by them: a tensor made in PyTorch (x / T, x.clone(), "
            "x.contiguous(), a softmax computed by torch and copied). The "
            "exercise asks the kernel to compute softmax(x / T) from x"
        ]
    unread = ~Watch.loaded(x, launches)
    if unread.any():
        first = tuple(int(i) for i in unread.nonzero()[0])
        return [
            f"{int(unread.sum())} of {x.numel()} elements of x were never loaded "
            f"by your kernels (first at index {first}): each result needs its "
            "whole row of x"
        ]
    return []


EXERCISE = Exercise(
    name="softmax_temperature",
    title="Softmax rows with a temperature",
    page="triton-series/softmax.md",
    function="softmax_temperature",
    signature="softmax_temperature(x, temperature)",
    task="for a 2-D tensor x and a Python float temperature > 0, return "
    "softmax(x / temperature) along each row, one program per row, in x's dtype; "
    "for a non-contiguous x, compute it right or raise a ValueError.",
    target="time it beside the page's softmax_rows on the same 4096 x 4096 "
    "float16 input (both read x once and write the result once) and aim for "
    "softmax_rows' rate there, ahead of PyTorch's two-step "
    "torch.softmax(x / T, dim=-1). Not the table's N = 4096 row: it has 16 384 "
    "rows, and a smaller call need not reach the same share of the bandwidth.",
    cases=[
        {"shape": (0, 5), "T": 1.0},
        {"shape": (4, 0), "T": 1.0},
        {"shape": (1, 1), "T": 1.0},
        {"shape": (3, 7), "T": 0.5},
        {"shape": (5, 1000), "T": 2.0},
        # the same shape, dtype and T again with new values: an attempt that
        # keeps its results by shape returns a stale answer here
        {"shape": (5, 1000), "T": 2.0, "again": True},
        # x / T up to about 1000: exp overflows unless the row's maximum is
        # subtracted first (inf / inf gives NaN)
        {"shape": (3, 300), "T": 0.1, "scale": 30.0},
        # longer than the GPU target's 4096 columns and than 16384: a
        # BLOCK_SIZE hard-coded to 16384 or less leaves the end of each row
        # unread and unwritten (a larger fixed block would pass here and fail
        # on longer rows)
        {"shape": (2, 20000), "T": 1.0},
        # more rows than columns: a grid sized by n_cols leaves rows unwritten
        {"shape": (33, 5), "T": 1.0},
        {"shape": (3, 77), "T": 1.5, "strided": True},  # every second column
        # adjacent columns, but each row followed by 3 unused elements: the
        # row stride is not the row length (a row slice of a wider tensor)
        {"shape": (4, 300), "T": 0.7, "padded": True},
    ],
    make_inputs=make_inputs,
    reference=reference,
    inspect=inspect,
    hints={
        "only:bfloat16": "convert loaded bfloat16 values with .to(tl.float32) "
        "before any arithmetic (a bug of triton 3.9's interpreter), and convert "
        "back on the store.",
        "NaN where": "a NaN where the reference has none is an element no "
        "program wrote (the end of a row longer than BLOCK_SIZE, a row the grid "
        "skips), or one whose row let masked-off lanes win the max or join the "
        "sum: load with other=-float('inf').",
        "inf": "subtract the row's maximum before tl.exp, or large x / T overflows.",
        "only:scale=30.0": "only the rows with large x / T failed: subtract the "
        "row's maximum before tl.exp, or exp overflows to inf and inf / inf "
        "gives NaN.",
        "only:shape=(2, 20000)": "only the rows of 20000 columns failed: one "
        "program must cover its whole row, so BLOCK_SIZE must grow with it "
        "(triton.next_power_of_2(n_cols)), not be a fixed number.",
        "only:again=True": "only the second call with a shape already seen "
        "failed: compute every call's result from its own x, and keep nothing "
        "between calls.",
        "were never loaded": "launch your kernel on x itself (not on a copy or "
        "on a result computed in PyTorch) and load every element of each row.",
        "made in PyTorch": "pass x itself to the kernel and do the whole "
        "computation there: scale by 1 / T after the load.",
        "only:shape=(33, 5)": "only the input with more rows than columns "
        "failed: launch one program per row, a grid of (n_rows,), and use "
        "tl.program_id(0) as the row.",
    },
)
