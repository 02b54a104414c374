"""Causal sliding-window attention, forward (lesson 02)."""

from . import Exercise


def make_inputs(case, dtype, generator):
    import torch

    shape = case["shape"]
    size = case.get("scale", 1.0)
    q, k, v = (torch.randn(shape, generator=generator) for _ in range(3))
    return (q * size).to(dtype), (k * size).to(dtype), v.to(dtype), case["window"]


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
    hints={
        "are NaN where the reference is not": "NaN elements are either never "
        "written (does the grid cover every block of queries of every batch "
        "element and head?) or rows that divided by a NaN: a query that has "
        "seen no key yet (its window starts after this tile) keeps m = -inf, "
        "and exp(s - m) is then exp(-inf + inf) = NaN; shift such rows by 0 "
        "(tl.where(m_new == -float('inf'), 0.0, m_new)).",
        "only:scale=": "scores reach about 200 here: subtract the running "
        "maximum before tl.exp, and when it grows multiply the running sum "
        "and acc by exp(m_old - m_new).",
    },
)
