"""Tiled matmul with a fused epilogue: relu(a @ b + bias)."""

from . import Exercise


def make_inputs(case, dtype, generator):
    import torch

    m, n, k = case["M"], case["N"], case["K"]
    a = torch.randn(m, k, generator=generator).to(dtype)
    b = torch.randn(k, n, generator=generator).to(dtype)
    bias = torch.randn(n, generator=generator).to(dtype)
    return (a, b, bias)


def reference(a, b, bias):
    import torch

    return torch.relu(a.double() @ b.double() + bias.double())


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
    cases=[
        {"M": 1, "N": 1, "K": 1},
        {"M": 17, "N": 33, "K": 65},
        {"M": 64, "N": 64, "K": 64},
        {"M": 100, "N": 70, "K": 130},
        {"M": 0, "N": 5, "K": 4},
        {"M": 5, "N": 3, "K": 0},  # no products: relu(bias) in every row
        {"M": 33, "N": 17, "K": 40, "strided": True},  # every second column
    ],
    dtypes=("float32", "float16"),
    make_inputs=make_inputs,
    reference=reference,
    # Sums of K products: the error grows with K; float16 output rounds at 2**-11.
    tolerances={
        "float32": {"atol": 1e-4, "rtol": 1e-4},
        "float16": {"atol": 1e-2, "rtol": 1e-2},
    },
    hints={
        "NaN where": "tiles along the edges run past M, N or K: mask the loads "
        "with other=0.0 so the extra products add nothing, and mask the store.",
        "only:strided": "pass a.stride(0), a.stride(1), b.stride(0), b.stride(1) "
        "and bias.stride(0) to the kernel and use them in every address: these "
        "inputs are views of every second column of larger tensors.",
    },
)
