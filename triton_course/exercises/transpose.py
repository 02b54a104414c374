"""A transpose whose loads and stores are both coalesced (lesson 01)."""

from . import Exercise


def make_inputs(case, dtype, generator):
    import torch

    rows, cols = case["shape"]
    # integers up to 1000: exact in float16, so only a wrong copy differs
    x = torch.randint(-1000, 1000, (rows, cols), generator=generator)
    return (x.to(dtype),)


def reference(x):
    return x.double().t()


# A sector is the 32 bytes the memory moves at a time (lesson 01).
SECTOR = 32


def _sector_use(addresses, itemsize: int) -> tuple[int, int]:
    """(bytes an access asked for, bytes of the 32-byte sectors it touched)."""
    import numpy as np

    from ._watch import unique

    first = addresses // np.uint64(SECTOR)
    last = (addresses + np.uint64(itemsize - 1)) // np.uint64(SECTOR)
    sectors = unique(np.concatenate([first, last])).size
    return addresses.size * itemsize, sectors * SECTOR


def _warp_groups(addresses, lanes, itemsize: int):
    """The addresses of an access split as a GPU's warps would issue them.

    Triton lays the lanes of a warp along the axis of the block whose
    neighbouring elements are neighbours in memory (the last axis where none
    is), 32 lanes to a warp: the block is read in that order, 32 lanes at a
    time, and the lanes its mask turns off fetch nothing."""
    import numpy as np

    if addresses.ndim == 0:
        return [addresses[lanes].ravel()]
    axis = addresses.ndim - 1
    for a, size in enumerate(addresses.shape):
        steps = np.diff(addresses.astype(np.int64), axis=a)
        if size > 1 and (steps == itemsize).all():
            axis = a
            break
    order = np.moveaxis(addresses, axis, -1).ravel()
    keep = np.moveaxis(lanes, axis, -1).ravel()
    return [
        order[i : i + 32][keep[i : i + 32]]
        for i in range(0, order.size, 32)
        if keep[i : i + 32].any()
    ]


def inspect(case, args, result, launches):
    """A contiguous result; the launches that write it read every element of x
    and nothing but x; and on the case whose rows start on sector boundaries,
    every sector a load or store touches used whole, by the access as a whole
    and by each warp of it."""
    import numpy as np

    from ._watch import Watch, isin, unique

    x = args[0]
    problems = []
    if not result.is_contiguous():
        problems.append(
            f"the result has strides {tuple(result.stride())}: return a "
            f"contiguous {tuple(result.shape)} tensor that your kernel wrote "
            "(a .t() view of a copy moves no data: that is not a transpose)"
        )
    if not launches or x.numel() == 0:
        return problems
    # the launches that store into the result: they must do the transpose,
    # from x itself (not from a copy PyTorch transposed between two launches)
    out = Watch.addresses(result.detach()).ravel()
    writers = [
        launch for launch in launches if any(isin(a, out).any() for a in launch.stored)
    ] or launches
    loaded = [a for launch in writers for a in launch.loaded]
    everything = np.concatenate(loaded or [np.zeros(0, dtype=np.uint64)])
    of_x = Watch.addresses(x).ravel()
    read = isin(of_x, everything)
    if not read.all():
        row, col = divmod(int(np.argmax(~read)), x.shape[1])
        problems.append(
            f"element ({row}, {col}) of x was never loaded by your kernel (by "
            "the launch that writes the result): it must read x itself, not a "
            "copy made in PyTorch (x.t().contiguous() does the transpose for you)"
        )
    foreign = unique(everything[~isin(everything, of_x)])
    if foreign.size:
        problems.append(
            f"the kernel that writes the result read {foreign.size} element(s) "
            "of memory that is not x: a tensor made in PyTorch (x.t(), "
            "x.t().contiguous(), a copy of x), or another launch's output. The "
            "kernel that writes out must load x itself and nothing else, and "
            "do the transpose"
        )
    if problems or not case.get("_coalesced"):
        return problems
    for launch in launches:
        accesses = [
            ("tl.load", a, s)
            for a, s in zip(launch.loaded, launch.load_itemsizes, strict=True)
        ] + [("tl.store", a, v.dtype.itemsize) for a, v in
             zip(launch.stored, launch.values, strict=True)]  # fmt: skip
        for what, addresses, size in accesses:
            used, moved = _sector_use(addresses, size)
            if used < moved:
                problems.append(
                    f"a {what} of {launch.kernel} asked for {used} bytes "
                    f"({addresses.size} elements) but touched {moved // SECTOR} "
                    f"32-byte sectors ({moved} bytes): only {100 * used // moved} "
                    "% of what the memory moves is used. Here every row starts "
                    "on a sector boundary, so a coalesced access uses whole "
                    "sectors: neighbouring lanes must touch neighbouring "
                    "elements in x and in out (tiles at least 32 bytes wide "
                    "both ways)"
                )
                return problems
        tiles = [("tl.load", t) for t in launch.load_tiles]
        tiles += [("tl.store", t) for t in launch.store_tiles]
        for what, (addresses, lanes, size) in tiles:
            for group in _warp_groups(addresses, lanes, size):
                used, moved = _sector_use(group, size)
                if used < moved:
                    problems.append(
                        f"a {what} of {launch.kernel}, taken 32 lanes (a warp) "
                        f"at a time, asks for {used} bytes in one warp's "
                        f"access but touches {moved // SECTOR} 32-byte sectors "
                        f"({moved} bytes): only {100 * used // moved} % of what "
                        "the memory moves is used. The access as a whole may "
                        "cover whole sectors, but a warp issues its own: its "
                        "lanes lie along the axis of the block whose "
                        "neighbouring elements are neighbours in memory, and "
                        "along that axis neighbouring lanes must touch "
                        "neighbouring elements, in x and in out"
                    )
                    return problems
    return problems


EXERCISE = Exercise(
    name="transpose",
    title="A coalesced transpose",
    page="gpu-architecture/01-coalescing-occupancy.md",
    function="transpose",
    signature="transpose(x)",
    task="for a 2-D tensor x of shape (M, N), any strides, float32 or float16, "
    "return a new contiguous (N, M) tensor out with out[j, i] = x[i, j], "
    "written by your own Triton kernel that reads x itself and nothing else; "
    "its loads and its stores must both be coalesced (in each warp, "
    "neighbouring lanes touch neighbouring elements). Sizes need not be "
    "multiples of your blocks; M or N may be 0.",
    target="at 16384 x 8192 float32 a transpose reads 512 MiB and writes 512 "
    "MiB: time it with time_cuda against x.t().contiguous() and the tiled "
    "transpose of lesson 03's memory-access page (its table's row at that "
    "size), and give its rate (2 * M * N * 4 bytes / time) as a share of "
    "the copy bandwidth this page measures.",
    cases=[
        {"shape": (1, 1)},
        {"shape": (3, 7)},
        {"shape": (40, 3)},  # fewer columns than one block
        {"shape": (5, 70)},  # fewer rows than one block, several column blocks
        {"shape": (70, 45)},
        {"shape": (0, 5)},
        {"shape": (4, 0)},
        {"shape": (33, 20), "strided": True},  # every second column of a tensor
        {"shape": (21, 40), "padded": True},  # rows 3 elements longer in memory
        # rows of x and of out start on 32-byte sector boundaries here, so
        # the sector use of every access can be judged
        {"shape": (64, 96), "_coalesced": True},
    ],
    dtypes=("float32", "float16"),
    make_inputs=make_inputs,
    reference=reference,
    inspect=inspect,
    # a transpose copies bits: nothing may differ
    tolerances={
        "float32": {"atol": 0.0, "rtol": 0.0},
        "float16": {"atol": 0.0, "rtol": 0.0},
    },
    refusal_ok=False,  # the kernel takes both strides of x
    hints={
        "32-byte sectors": "give each program a (BLOCK_M, BLOCK_N) tile: load it "
        "with rows[:, None] * stride_row + cols[None, :] * stride_col, and store "
        "it at cols[None, :] * M + rows[:, None], so that along a tile column "
        "adjacent rows land next to each other in out. On a GPU Triton swaps "
        "the tile between the two layouts through shared memory.",
        "never loaded": "pass x itself to the kernel, with x.stride(0) and "
        "x.stride(1), and load from it.",
        "only:shape=(0, 5)": "a grid dimension of 0 launches nothing; the empty "
        "(5, 0) result must still be returned.",
    },
)
