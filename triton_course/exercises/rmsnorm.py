"""Make a given slow kernel fast: RMS normalisation (lesson 04, its worked
optimisation). The starter (exercises/starters/rmsnorm.py) is correct and
walks each row one scalar at a time; the attempt must compute the same."""

from . import Exercise


def make_inputs(case, dtype, generator):
    import torch

    rows, cols = case["shape"]
    x = torch.randn(rows, cols, generator=generator) * case.get("scale", 1.0)
    if case.get("zero_row") and rows:
        x[rows // 2] = 0.0  # mean(x**2) = 0: only eps keeps the root nonzero
    w = torch.randn(cols, generator=generator)
    return (x.to(dtype), w.to(dtype), case.get("eps", 1e-6))


def reference(x, w, eps):
    x = x.double()
    rms = (x.square().mean(dim=1, keepdim=True) + eps).sqrt()
    return x / rms * w.double()


# A tl.load of fewer lanes per row than this (or than the row, if shorter)
# walks the row a few elements at a time: v0 of the page's row sums, not v1.
# Lanes per row, not lanes: 32 lanes taking one element from each of 32 rows
# walk every row one column per trip all the same (review 2026-11-27,
# 04-worked-optimisation no. 7), and lanes that repeat one address count once.
WIDE = 32
# The starter reads x twice (the sum of squares, then y); a kernel may keep
# the row in registers and read it once, but never more than twice.
READS = 2


def inspect(case, args, result, launches):
    """The kernels read x and w themselves (nothing PyTorch made), each
    element of x at most twice, in loads of a block of the row."""
    import numpy as np

    from ._watch import Watch, unique

    x, w, _ = args
    if not launches or x.numel() == 0:
        return []
    problems = []
    foreign = Watch.foreign_loads(launches, x, w)
    loaded = [a for launch in launches for a in launch.loaded]
    mine = Watch.addresses(x).ravel()
    where, counts = np.unique(np.concatenate(loaded or [mine[:0]]), return_counts=True)
    pos = np.minimum(np.searchsorted(where, mine), max(len(where) - 1, 0))
    times = np.where(where[pos] == mine, counts[pos], 0) if len(where) else 0 * mine
    if foreign or times.min() == 0:
        problems.append(
            (f"your kernels read {foreign} element(s) of memory that is neither "
             "x nor w nor written by them" if foreign else
             f"{int((times == 0).sum())} element(s) of x were never loaded by "
             "your kernels")
            + ": compute from x and w themselves, in the kernel, not from "
            "something computed in PyTorch (x.float(), x / rms, ...)"
        )  # fmt: skip
        return problems
    if times.max() > READS:
        row, col = divmod(int(np.argmax(times)), x.shape[1])
        problems.append(
            f"element ({row}, {col}) of x was loaded {int(times.max())} times: "
            f"the starter reads each element {READS} times (the sum of "
            "squares, then y), and a fast kernel no more"
        )
        return problems
    wide = min(x.shape[1], WIDE)
    spans = [(a.min(), a.max()) for a in (mine, Watch.addresses(w).ravel())]
    order = np.argsort(mine)
    sorted_x = mine[order]

    def slow(launch, lanes, size, rows):
        spread = f", its lanes spread over {rows} rows" if rows > 1 else ""
        problems.append(
            "correct but slow: a tl.load of "
            f"{launch.kernel} read a block of {lanes} lane(s) "
            f"({size}-byte elements) from a row of {x.shape[1]}{spread}, so "
            "the kernel walks the row one element (or a few) at a "
            "time: a long chain of tiny loads, each waiting on memory "
            "latency (lesson 04: the usual causes of a slow kernel, "
            "no. 4, in 04-nsight-compute.md; the row sums' v0 in "
            "04-worked-optimisation.md). Load a block of the row per "
            "loop trip, as v1 does."
        )
        return problems

    for launch in launches:
        loads = []  # (distinct lanes per row, elements of a row read, size, rows)
        for addresses, (block, _, size) in zip(
            launch.loaded, launch.load_tiles, strict=True
        ):
            if not any(
                ((addresses >= lo) & (addresses <= hi)).any() for lo, hi in spans
            ):
                continue
            # the rows of x the running lanes read (none for a load of w)
            found = np.minimum(np.searchsorted(sorted_x, addresses), mine.size - 1)
            at = order[found][mine[order[found]] == addresses] // x.shape[1]
            rows, per_row = np.unique(at, return_counts=True)
            widest = int(per_row.max()) if rows.size else None
            lanes = unique(block).size // max(rows.size, 1)
            loads.append((lanes, widest, size, rows.size))
        # every load of x in the launch reads a few elements of each row: a
        # walk along the rows, however many rows one load spans
        of_x = [load for load in loads if load[1] is not None]
        if of_x and max(load[1] for load in of_x) < wide:
            _, widest, size, rows = min(of_x, key=lambda load: load[1])
            return slow(launch, widest, size, rows)
        for lanes, _, size, rows in loads:
            if lanes < wide:
                return slow(launch, lanes, size, rows)
    return problems


EXERCISE = Exercise(
    name="rmsnorm",
    title="Make a slow RMS norm fast",
    page="gpu-architecture/04-worked-optimisation.md",
    function="rmsnorm",
    signature="rmsnorm(x, w, eps)",
    task="start from exercises/starters/rmsnorm.py, a correct kernel that "
    "walks each row one element at a time, and make it fast without changing "
    "what it computes: for a 2-D x (any strides; float32, float16 or "
    "bfloat16), w of shape (n_cols,) in x's dtype (any stride) and a Python "
    "float eps, return a new contiguous y in x's dtype with y[i, :] = "
    "x[i, :] / sqrt(mean(x[i, :] ** 2) + eps) * w, computed in float32 by "
    "your own Triton kernel that reads x and w themselves, each element of x "
    "at most twice, in loads of a block of the row (32 elements of one row "
    "or more per load, or the whole row if shorter). Any size, 0 rows or 0 "
    "columns included; other shapes or dtypes of w may raise a ValueError.",
    target="at 16384 x 4096 bfloat16 (a batch of tokens of a 4096-wide "
    "model) the kernel reads x and writes y once each from DRAM: time it with "
    "time_cuda against the starter and torch.nn.functional.rms_norm, and give "
    "its rate (2 x rows x cols x 2 bytes / time) as a share of the copy "
    "bandwidth.",
    cases=[
        {"shape": (1, 1)},
        {"shape": (3, 7)},
        {"shape": (6, 33), "strided": (0,)},  # x: every second column
        {"shape": (9, 20), "strided": (1,)},  # w: every second element
        {"shape": (7, 45), "padded": True},  # rows 3 elements longer in memory
        # more columns than one block of up to 8192, and not a multiple of
        # 1024: a kernel without a loop over the row fails (review 2026-11-27,
        # 04-worked-optimisation no. 8)
        {"shape": (1, 8200)},
        {"shape": (40, 5)},  # many short rows
        {"shape": (3, 60), "eps": 1.0, "scale": 0.1},  # eps dominates
        {"shape": (6, 40), "zero_row": True},  # a row of zeros: y = 0 there
        # squares of about 300**2 pass float16's largest value, 65504
        {"shape": (3, 50), "scale": 300.0},
        {"shape": (0, 5)},
        {"shape": (4, 0)},
    ],
    make_inputs=make_inputs,
    reference=reference,
    inspect=inspect,
    # float32 sums of up to 8200 squares, and one square root
    tolerances={
        "float32": {"atol": 1e-5, "rtol": 1e-5},
        "float16": {"atol": 2e-3, "rtol": 2e-3},
        "bfloat16": {"atol": 1.6e-2, "rtol": 1.6e-2},
    },
    refusal_ok=False,  # the starter takes every stride: so must the attempt
    hints={
        "one element (or a few) at a time": "give the kernel a BLOCK: "
        "tl.constexpr (1024, say) and let each loop trip load cols = start + "
        "tl.arange(0, BLOCK) with mask=cols < n_cols; keep a (BLOCK,) float32 "
        "accumulator and tl.sum it after the loop (the row sums' v1).",
        "only:bfloat16": "convert loaded bfloat16 values with .to(tl.float32) "
        "before any arithmetic (a bug of triton 3.9's interpreter).",
        "only:scale=300.0": "square the values in float32: 300 ** 2 overflows "
        "float16 (its largest value is 65504).",
        "only:eps=1.0": "eps goes inside the square root: sqrt(mean + eps).",
    },
)
