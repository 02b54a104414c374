"""Column sums with coalesced loads (worked optimisation page, exercise 1)."""

from . import Exercise


def make_inputs(case, dtype, generator):
    import torch

    rows, cols = case["shape"]
    return (torch.randn(rows, cols, generator=generator).to(dtype),)


def reference(x):
    return x.double().sum(dim=0)


# A load of at least this many elements, each in its own 32-byte sector, is a
# column walk: the memory moves a whole sector for every value it delivers.
# Judged on the load's whole block, masked-off lanes included: the last block
# of a tiled kernel may hold a single column of x (column 32, the last of 33,
# with BLOCK_N = 32), its lanes one per sector only because the mask cut
# off their neighbours (review 2026-11-27, 04-worked-optimisation no. 1).
WALK = 4


def inspect(case, args, result, launches):
    """Every element of x read once, by loads whose lanes share sectors."""
    import numpy as np

    from ._watch import Watch, unique

    x = args[0]
    if not launches or x.numel() == 0:
        return []
    problems = []
    loaded = [a for launch in launches for a in launch.loaded]
    mine = Watch.addresses(x).ravel()
    if loaded:
        where, counts = np.unique(np.concatenate(loaded), return_counts=True)
        pos = np.minimum(np.searchsorted(where, mine), len(where) - 1)
        times = np.where(where[pos] == mine, counts[pos], 0)
    else:
        times = np.zeros(mine.shape, dtype=np.int64)
    if times.min() == 0 or times.max() > 1:
        bad = int(np.argmax(times != 1))
        row, col = divmod(bad, x.shape[1])
        problems.append(
            f"element ({row}, {col}) of x was loaded {int(times[bad])} times by "
            "your kernel: it must read x itself (not a copy made in PyTorch, "
            "such as x.t().contiguous()), each element exactly once"
        )
    advice = (
        "Give each program a block of adjacent columns and walk down the rows "
        "in tiles, so that neighbouring lanes read neighbouring elements of a "
        "row."
    )
    first, last = mine.min(), mine.max()
    shared = unique(mine // np.uint64(32)).size < mine.size  # x's values share
    for launch in launches:
        values = reads = 0  # x's values loaded; 32-byte sectors each load touched
        for addresses, (block, _, size) in zip(
            launch.loaded, launch.load_tiles, strict=True
        ):
            sectors = unique(addresses // np.uint64(32)).size
            lanes = unique(block)  # distinct addresses of the whole block
            walk = unique(lanes // np.uint64(32)).size == lanes.size
            if addresses.size >= WALK and sectors == addresses.size and walk:
                problems.append(
                    f"a tl.load of {launch.kernel} read {addresses.size} elements "
                    f"from {sectors} different 32-byte sectors, one each: the "
                    f"memory moves 32 bytes for every {size}-byte value (lesson "
                    "01's strided copy). " + advice
                )
                return problems
            of_x = addresses[(addresses >= first) & (addresses <= last)]
            values += of_x.size
            reads += unique(of_x // np.uint64(32)).size
        # A load of one value (or of a few, each in its own sector) is as bad:
        # a program walking down its column one scalar at a time (review
        # 2026-11-27 mod-03) moves a whole sector for every value.
        if shared and values > 1 and reads == values:
            problems.append(
                f"the tl.loads of {launch.kernel} read {values} values of x "
                f"in {reads} reads of 32-byte sectors, one per value, although "
                "neighbouring values of x share a sector: the memory moves 32 "
                "bytes for every value (a program per column, one row at a "
                "time?). " + advice
            )
            return problems
    return problems


EXERCISE = Exercise(
    name="colsum",
    title="Column sums",
    page="gpu-architecture/04-worked-optimisation.md",
    function="colsum",
    signature="colsum(x)",
    task="for a 2-D tensor x return its sum over dim 0 (shape (n_cols,), x's "
    "dtype), summed in float32 by your own Triton kernel that reads each "
    "element of x once, with coalesced loads: neighbouring lanes of a tl.load "
    "read neighbouring elements of a row; for a non-contiguous x, compute it "
    "right or raise a ValueError.",
    target="at 16384 x 4096 and 4096 x 16384 float32 the kernel reads x once "
    "and writes one row: time it with time_cuda and aim for the page's v2 "
    "row-sum rate at the same shape, ahead of torch.sum(x, dim=0).",
    cases=[
        {"shape": (1, 1)},
        {"shape": (3, 7)},
        # the same shape again, new values: a result kept from an earlier call
        # (a cache by shape) fails
        {"shape": (3, 7), "new_values": True},
        {"shape": (40, 3)},  # rows of 12 bytes: few columns, many rows
        {"shape": (5, 300)},  # more columns than rows
        {"shape": (2053, 5)},  # more rows than a loop hard-coded to 1024 or 2048
        {"shape": (300, 70)},
        {"shape": (0, 5)},  # no rows: every column sums to 0
        {"shape": (4, 0)},
        {"shape": (50, 33), "strided": True},  # every second column
        {"shape": (60, 40), "padded": True},  # rows 3 elements longer in memory
        {"shape": (1000, 9)},
    ],
    make_inputs=make_inputs,
    reference=reference,
    inspect=inspect,
    # sums of up to 2053 values of about 1: float32 keeps them to ~1e-5
    tolerances={
        "float32": {"atol": 1e-4, "rtol": 1e-5},
        "float16": {"atol": 2e-3, "rtol": 2e-3},
        "bfloat16": {"atol": 1.6e-2, "rtol": 1.6e-2},
    },
    hints={
        "only:bfloat16": "convert loaded bfloat16 values with .to(tl.float32) "
        "before any arithmetic (a bug of triton 3.9's interpreter).",
        "32-byte sectors": "v2 of the page loads a (BLOCK_M, BLOCK_N) tile; "
        "here let program j own columns j * BLOCK_N ... and loop over the rows, "
        "adding each tile into a float32 accumulator, then tl.sum(acc, axis=0).",
        "only:shape=(0, 5)": "with no rows every column sums to 0: the output "
        "must still be written (a loop over no rows leaves the accumulator 0).",
    },
)
