"""The first code cell of every companion notebook (the builder inserts it
where a recipe says --8<-- "_setup.py:setup"). Kept here, in one place, so
that every notebook reports the same things the same way."""

# --8<-- [start:setup]
# Where this notebook runs. Triton compiles for NVIDIA GPUs of compute
# capability 7.5 (T4) or newer; anywhere else the kernels run in Triton's
# interpreter on the CPU, which must be chosen before triton is imported.
import os

import torch

DEVICE, CAPABILITY, SHARED_KB = "cpu", None, None
if torch.cuda.is_available():
    props = torch.cuda.get_device_properties(0)
    if (props.major, props.minor) >= (7, 5):
        DEVICE, CAPABILITY = "cuda", (props.major, props.minor)
        SHARED_KB = props.shared_memory_per_block_optin // 1024
        print(
            f"running on: {props.name}, compute capability "
            f"{props.major}.{props.minor}, {SHARED_KB} KB of shared memory per block"
        )
    else:
        print(
            f"running on: the CPU. Triton needs compute capability 7.5 or newer and "
            f"{props.name} is {props.major}.{props.minor}: every cell runs in the "
            "interpreter instead (in Colab: Runtime > Change runtime type > T4 GPU)."
        )
if DEVICE == "cpu":
    os.environ["TRITON_INTERPRET"] = "1"
    # The interpreter computes with NumPy, which warns about the NaN that
    # masked-off padding lanes produce and the kernels never store.
    import numpy

    numpy.seterr(invalid="ignore", divide="ignore")
    if not torch.cuda.is_available():
        print("running on: the CPU, in Triton's interpreter (no CUDA GPU here)")

import triton  # noqa: E402  (after TRITON_INTERPRET is decided)

# What of this notebook runs here. The launchers size their tiles to the
# GPU's shared memory, and each lesson's table "Which GPUs run these kernels"
# shows what was compiled for each GPU generation. A cell written for Hopper
# checks CAPABILITY and skips itself with a sentence on older GPUs. Timing
# cells need a GPU.
if DEVICE == "cpu":
    runs_here = "every cell runs here, slowly; the timing cells are skipped"
elif CAPABILITY >= (9, 0):
    runs_here = "no cell is skipped here"
else:
    runs_here = (
        "a cell written for Hopper (compute capability 9.0) skips itself and "
        "says why; every other cell runs here"
    )
print("this notebook:", runs_here)
print(f"versions: torch {torch.__version__}, triton {triton.__version__}")
# --8<-- [end:setup]
