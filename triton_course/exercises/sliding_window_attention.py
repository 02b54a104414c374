"""Causal sliding-window attention, forward (lesson 02)."""

from . import Exercise


def make_inputs(case, dtype, generator):
    import torch

    shape = case["shape"]
    size = case.get("scale", 1.0)
    q, k, v = (torch.randn(shape, generator=generator) for _ in range(3))
    if case.get("dominant"):
        # Key 0 scores 0 and every other key -TAIL (no score is large, so the
        # case needs no running maximum), and key 0's value is large: each
        # later key adds exp(-TAIL) to a running sum of about 1, so a tile of
        # up to 32 keys adds less than half of float16's spacing there
        # (2**-11). A running sum rounded to float16 after each tile drops
        # all of it (up to seq_len * exp(-TAIL), 0.8 % here); a float32 sum
        # keeps it.
        q = torch.zeros(shape)
        q[..., 0] = 1.0
        k = torch.zeros(shape)
        k[..., 1:, 0] = -TAIL * shape[-1] ** 0.5
        v[..., 0, :] = 50.0
    return (q * size).to(dtype), (k * size).to(dtype), v.to(dtype), case["window"]


# how far key 0's score stands above the rest in the "dominant" case
TAIL = 11.1


def reference(q, k, v, window):
    """PyTorch's SDPA in float64 with an explicit mask: query i sees the keys
    j with i - window < j <= i."""
    import torch

    n = q.shape[2]
    i = torch.arange(n)[:, None]
    j = torch.arange(n)[None, :]
    mask = (j <= i) & (j > i - window)
    return torch.nn.functional.scaled_dot_product_attention(
        q.double(), k.double(), v.double(), attn_mask=mask
    )


def inspect(case, args, result, launches):
    """The kernels read q, k and v themselves (no copy made in PyTorch), and
    the keys once: as many elements of k loaded as of v."""
    import numpy as np

    from ._watch import Watch, isin

    q, k, v, _ = args
    if not launches or q.numel() == 0:
        return []
    problems = []
    foreign = Watch.foreign_loads(launches, q, k, v)
    if foreign:
        problems.append(
            f"your kernels read {foreign} element(s) of memory that is neither "
            "q, k, v nor written by them: a copy made in PyTorch "
            "(q.contiguous(), k.float(), ...) costs a pass over it on a GPU; "
            "pass the strides of q, k and v themselves to the kernel"
        )
    loaded = [a for launch in launches for a in launch.loaded]
    if loaded and not foreign:
        loaded = np.concatenate(loaded)
        keys = int(isin(loaded, Watch.addresses(k).ravel()).sum())
        values = int(isin(loaded, Watch.addresses(v).ravel()).sum())
        if keys > values:
            problems.append(
                f"your kernels loaded {keys} elements of k but only {values} "
                "of v: a second pass over the keys (one for the maximum, one "
                "for the sums) loads k and computes q k^T twice; the online "
                "softmax needs one, rescaling the sums when the maximum grows"
            )
    return problems


EXERCISE = Exercise(
    name="sliding_window_attention",
    title="Sliding-window attention",
    page="gpu-architecture/02-mixed-precision.md",
    function="sliding_window_attention",
    signature="sliding_window_attention(q, k, v, window)",
    task="for q, k, v of one shape (batch, heads, seq_len, head_dim), one "
    "dtype (float32 or float16), head_dim 16, 32 or 64, any seq_len >= 1 and "
    "any strides, and an int window >= 1, return softmax(q k^T / "
    "sqrt(head_dim) + mask) v where query i sees the keys j with "
    "i - window < j <= i, as a new contiguous tensor of q's shape and dtype, "
    "computed by your own Triton kernel in one pass over the keys (an online "
    "softmax with float32 statistics and accumulator). The checker judges "
    "the values; skipping the key tiles no query of a block sees is what "
    "makes it fast on a GPU.",
    target="at batch 4, 16 heads, seq_len 8192, head_dim 64, window 1024, "
    "float16: time it with time_cuda against SDPA with the same boolean "
    "mask and against lesson 02's causal forward at the same size; a window "
    "kernel reads about window / (seq_len / 2) of the causal kernel's keys.",
    cases=[
        # q, k, v each strided alone first: a stride of the wrong tensor fails
        # fast (every second element of the head dimension)
        {"shape": (2, 2, 9, 16), "window": 4, "strided": (0,)},
        {"shape": (2, 2, 9, 16), "window": 4, "strided": (1,)},
        {"shape": (2, 2, 9, 16), "window": 4, "strided": (2,)},
        {"shape": (1, 1, 1, 16), "window": 1},
        {"shape": (1, 2, 7, 16), "window": 3},
        {"shape": (2, 1, 40, 16), "window": 5},  # windows inside one tile
        {"shape": (1, 1, 50, 16), "window": 1},  # each query sees itself
        {"shape": (1, 3, 37, 32), "window": 100},  # window past the start
        {"shape": (1, 2, 19, 16), "window": 6, "padded": True},
        {"shape": (1, 1, 70, 64), "window": 20},
        # scores up to about 200: exp overflows float32 (past 88) without
        # the running max
        {"shape": (1, 1, 45, 16), "window": 30, "scale": 8.0},
        # one key far above the rest, then hundreds of small ones: a running
        # sum kept in float16 loses them
        {"shape": (1, 1, 512, 16), "window": 512, "dominant": True},
    ],
    dtypes=("float32", "float16"),
    make_inputs=make_inputs,
    reference=reference,
    tolerances={
        "float32": {"atol": 1e-5, "rtol": 1e-5},
        # p is rounded to float16 for the second tl.dot (as lesson 02 does)
        "float16": {"atol": 4e-3, "rtol": 4e-3},
    },
    refusal_ok=False,  # every stride goes to the kernel
    inspect=inspect,
    hints={
        "are NaN where the reference is not": "NaN elements are either never "
        "written (does the grid cover every block of queries of every batch "
        "element and head?) or rows that divided by a NaN: a query that has "
        "seen no key yet (its window starts after this tile) keeps m = -inf, "
        "and exp(s - m) is then exp(-inf + inf) = NaN; shift such rows by 0 "
        "(tl.where(m_new == -float('inf'), 0.0, m_new)).",
        "only:dominant=": "one key scores far above the rest and hundreds of "
        "keys each add about exp(-11) to the running sum: keep that sum in "
        "float32 (tl.zeros(..., dtype=tl.float32)), not rounded to the "
        "input dtype after each tile.",
        "only:scale=": "scores reach about 200 here: subtract the running "
        "maximum before tl.exp, and when it grows multiply the running sum "
        "and acc by exp(m_old - m_new).",
    },
)
