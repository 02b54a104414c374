"""Tiled matmul with a fused epilogue: relu(a @ b + bias)."""

from . import Exercise


def make_inputs(case, dtype, generator):
    import torch

    m, n, k = case["M"], case["N"], case["K"]
    a = torch.randn(m, k, generator=generator).to(dtype)
    b = torch.randn(k, n, generator=generator).to(dtype)
    bias = torch.randn(n, generator=generator).to(dtype)
    if case.get("cancel") and dtype == torch.float16 and k >= 128:
        # The last 64 products of every dot sum to 2048 and the bias takes
        # 2048 off again, so the result is the random rest (about +-8). Near
        # 2048 a float16 has a step of 1 or 2: a sum kept in float16 loses
        # the rest by up to 1, whether it starts at 0 (2048 comes last) or at
        # the bias (-2048 first, then the rest), and so does a float32 sum
        # rounded to float16 before the bias is added; float32 keeps it.
        # (float16 only: float32 keeps it to 2.4e-4, near its own tolerance.)
        a[:, -64:], b[-64:, :] = 1.0, 32.0
        bias = torch.full((n,), -2048.0, dtype=dtype)
    return (a, b, bias)


def reference(a, b, bias):
    import torch

    return torch.relu(a.double() @ b.double() + bias.double())


def inspect(case, args, result, launches):
    """Fused and computed from the inputs: the kernels store nothing but the
    result (no scratch product written and read again by a second kernel),
    and read nothing that PyTorch made (a product computed by torch, copied)."""
    import numpy as np

    from ._watch import Watch

    if not launches or result.numel() == 0:
        return []
    stored = [chunk for launch in launches for chunk in launch.stored]
    if stored:
        outside = np.setdiff1d(
            np.concatenate(stored), Watch.addresses(result).ravel()
        ).size
        if outside:
            return [
                f"your kernels stored {outside} element(s) outside the result "
                "(a product kept in a scratch tensor for a second kernel?): "
                "the exercise asks for one kernel that adds the bias and "
                "applies the ReLU to its accumulator and stores C once"
            ]
    foreign = Watch.foreign_loads(launches, *args)
    if foreign:
        return [
            f"your kernels read {foreign} element(s) of memory that is neither "
            "a, b nor bias, nor written by them: a tensor made in PyTorch (the "
            "product computed by torch and copied?). The exercise asks your "
            "kernel to compute relu(a @ b + bias) from a, b and bias"
        ]
    return []


EXERCISE = Exercise(
    name="matmul_bias_relu",
    title="Matmul with fused bias and ReLU",
    page="triton-series/tiled-gemm.md",
    function="matmul_bias_relu",
    signature="matmul_bias_relu(a, b, bias)",
    task="for a (M, K), b (K, N), bias (N,) return relu(a @ b + bias) in a's "
    "dtype, adding the bias and applying the ReLU to the float32 accumulator "
    "before the single store; full float32 precision for float32 inputs "
    '(tl.dot(..., input_precision="ieee")), any strides.',
    target="at 4096 x 4096 x 4096 float16 aim for the tiled-GEMM page's kernel "
    "rate (the epilogue is nearly free), ahead of torch.relu(a @ b + bias) in "
    "eager PyTorch, which reads and writes the product twice more.",
    # cheap and telling cases first: a mutant fails early (tests/test_exercises.py)
    cases=[
        {"M": 1, "N": 1, "K": 1},
        # one input non-contiguous at a time (a, b, bias): a stride taken from
        # the wrong tensor is wrong here
        {"M": 9, "N": 10, "K": 11, "strided": (0,)},
        {"M": 9, "N": 10, "K": 11, "strided": (1,)},
        {"M": 9, "N": 10, "K": 11, "strided": (2,)},
        {"M": 17, "N": 33, "K": 65},
        {"M": 33, "N": 17, "K": 40, "strided": True},  # every second column
        # rows of a and b longer than K and N: the row strides are not K and N
        {"M": 20, "N": 24, "K": 30, "padded": True},
        {"M": 0, "N": 5, "K": 4},
        {"M": 5, "N": 3, "K": 0},  # no products: relu(bias) in every row
        {"M": 8, "N": 16, "K": 128, "cancel": True},  # float32 accumulator
        {"M": 64, "N": 64, "K": 64},
        {"M": 100, "N": 70, "K": 130},
        # the shape of an earlier case, new data: a kept answer fails
        {"M": 17, "N": 33, "K": 65},
        # rows and columns past 128: a grid or tile of fixed size leaves C's
        # far rows or columns unwritten (last: the slowest case)
        {"M": 130, "N": 136, "K": 16},
    ],
    refusal_ok=False,  # the task says any strides
    dtypes=("float32", "float16"),
    make_inputs=make_inputs,
    reference=reference,
    inspect=inspect,
    # Sums of K products: the error grows with K; float16 output rounds at 2**-11.
    tolerances={
        "float32": {"atol": 1e-4, "rtol": 1e-4},
        "float16": {"atol": 1e-2, "rtol": 1e-2},
    },
    hints={
        "refused these strides": "use a.stride(0), a.stride(1), b.stride(0), "
        "b.stride(1) and bias.stride(0) in the addresses instead of refusing.",
        "only:cancel": "accumulate in float32 (tl.zeros(..., dtype=tl.float32)) "
        "and add the bias to that float32 accumulator; convert to the output "
        "dtype only at the store.",
        "tl.dot accumulated in": "start the accumulator from tl.zeros(..., "
        "dtype=tl.float32) (not from the bias loaded in the input dtype, nor "
        "with out_dtype=tl.float16), and add the bias after the loop.",
        "NaN where": "NaN is what was never written, or what a masked-off load "
        "let in: give every tile of C a program, and as tiles along the edges "
        "run past M, N or K, mask the loads with other=0.0 so the extra products "
        "add nothing, and mask the store.",
        "only:M=130": "only the largest C failed: compute the grid from M and "
        "N (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N)) rather than "
        "fixing it, so that every tile of C has a program.",
        "only:strided": "pass a.stride(0), a.stride(1), b.stride(0), b.stride(1) "
        "and bias.stride(0) to the kernel and use them in every address: these "
        "inputs are views of every second column of larger tensors.",
    },
)
