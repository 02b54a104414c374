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
    if case.get("late_max"):
        # The row's maximum in its last element, 200 above the rest: a shift
        # taken from the first tiles alone (no running maximum) overflows
        # exp() there, for any tile smaller than the row; a running maximum
        # whose growth never rescales the sum gives too large a sum.
        x[:, -1] = 200.0
    return (x.to(dtype),)


def reference(x):
    import torch

    return torch.logsumexp(x.double(), dim=-1)


# A row this long or longer must not be read by one tl.load: its block would
# grow with the row (next_power_of_2(n_cols)), which is not a fixed tile.
LONG_ROW = 16384

# attempt file -> the largest tile (lanes of one tl.load) of the cases with
# rows shorter than LONG_ROW so far in this check: a long row may not use more
_TILES: dict[str, int] = {}


def inspect(case, args, result, launches):
    """One pass over x itself in fixed-size tiles: no element of x is loaded
    twice, nothing that PyTorch made is loaded, and a long row is read in
    tiles no larger than those of the shorter rows."""
    import numpy as np

    from ._watch import Watch

    x = args[0]
    if launches and case is EXERCISE.cases[0]:
        _TILES.pop(launches[0].file, None)  # a new check of this file
    if not launches or x.numel() == 0:
        return []
    problems = []
    foreign = Watch.foreign_loads(launches, x)
    if foreign > 16:  # more than a few scalars passed in a tensor
        problems.append(
            f"your kernels read {foreign} elements of memory that is neither x "
            "nor written by them: a tensor made in PyTorch (a copy of x such as "
            "x.clone(), or a result of torch.logsumexp copied by a kernel). The "
            "exercise asks the kernel to read x itself, once"
        )
    unread = ~Watch.loaded(x, launches)
    if unread.any():
        first = tuple(int(i) for i in unread.nonzero()[0])
        problems.append(
            f"{int(unread.sum())} of {x.numel()} elements of x were never loaded "
            f"by your kernels (first at index {first}): each result needs its "
            "whole row of x"
        )
    loaded = [a for launch in launches for a in launch.loaded]
    if loaded:
        where, counts = np.unique(np.concatenate(loaded), return_counts=True)
        mine = Watch.addresses(x).ravel()
        pos = np.minimum(np.searchsorted(where, mine), len(where) - 1)
        times = np.where(where[pos] == mine, counts[pos], 0)
        if times.max() > 1:
            first = int(np.argmax(times > 1))
            row, col = divmod(first, x.shape[1])
            problems.append(
                f"element ({row}, {col}) of x was loaded {int(times.max())} times: "
                "the exercise reads each row once, keeping a running maximum and "
                "rescaling the running sum when it grows (no second pass)"
            )
    cols = x.shape[1]
    biggest = max((n for launch in launches for n in launch.load_sizes), default=0)
    tile = max((n for launch in launches for n in launch.load_lanes), default=0)
    file = launches[0].file
    if cols < LONG_ROW:
        _TILES[file] = max(_TILES.get(file, 0), tile)
    elif biggest >= cols:
        problems.append(
            f"one tl.load read {biggest} elements, a whole row of {cols}: a block "
            "that grows with the row does not fit in registers for long rows; "
            "loop over the row in tiles of a fixed size (such as 1024)"
        )
    elif tile > _TILES.get(file, tile):
        problems.append(
            f"a tl.load of {tile} lanes for the rows of {cols}, larger than any "
            f"tile of the shorter rows ({_TILES[file]} lanes at most): a tile "
            "that grows with the row does not fit in registers for longer rows; "
            "loop over the row in tiles of a fixed size (such as 1024)"
        )
    return problems


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
        # the same shape and dtype again with new values: an attempt that
        # keeps its results by shape returns a stale answer here
        {"shape": (4, 5000), "again": True},
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
        # adjacent columns, rows 3 elements longer in memory than n_cols
        {"shape": (3, 700), "padded": True},
        # longer than LONG_ROW: one tile cannot hold it; its maximum comes last
        {"shape": (2, 40000), "late_max": True},
    ],
    make_inputs=make_inputs,
    reference=reference,
    inspect=inspect,
    hints={
        "only:bfloat16": "convert loaded bfloat16 values with .to(tl.float32) "
        "before any arithmetic (a bug of triton 3.9's interpreter).",
        "NaN where": "a block whose entries are all -inf gives exp(-inf - -inf) = "
        "NaN: while the running maximum is still -inf, subtract 0 instead of it "
        "(tl.where(m == -float('inf'), 0.0, m)), and load masked lanes with "
        "other=-float('inf'). Starting the maximum at a finite number such as "
        "-1e30 instead is wrong for rows whose entries are all below it.",
        "only:again=True": "only the second call with a shape already seen "
        "failed: compute every call's result from its own x, and keep nothing "
        "between calls.",
        "were never loaded": "launch your kernel on x itself (not on a copy or "
        "on a result computed in PyTorch) and load every element of each row.",
        "made in PyTorch": "pass x itself to the kernel and read each row of "
        "it once, in fixed-size tiles.",
        "(got inf": "exp() overflowed: shift by the running maximum of all the "
        "row read so far, and when it grows multiply the running sum by "
        "exp(m_old - m_new) before adding the new tile (the rescaling).",
    },
)
