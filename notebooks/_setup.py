"""The first code cell of every companion notebook (the builder inserts it
where a recipe says --8<-- "_setup.py:setup"). Kept here, in one place, so
that every notebook reports the same things the same way."""

# --8<-- [start:setup]
# Where this notebook runs: on an NVIDIA GPU if there is one, else in Triton's
# interpreter on the CPU, which must be chosen before triton is imported.
# Triton's README names compute capability 8.0 and newer as supported, and
# the course compiles its kernels for 7.5 (T4) to 9.0 in CI; Triton itself
# compiles for older GPUs too. Below 7.0 PyTorch will not use Triton (its
# has_triton() asks for 7.0), so this notebook takes the interpreter there.
import os

import torch

DEVICE, CAPABILITY, SHARED_KB = "cpu", None, None
if torch.cuda.is_available():
    props = torch.cuda.get_device_properties(0)
    capability = f"compute capability {props.major}.{props.minor}"
    if (props.major, props.minor) >= (7, 0):
        DEVICE, CAPABILITY = "cuda", (props.major, props.minor)
        SHARED_KB = props.shared_memory_per_block_optin // 1024
        print(
            f"running on: {props.name}, {capability}, "
            f"{SHARED_KB} KB of shared memory per block"
        )
        if CAPABILITY < (8, 0):
            # What the course checked for this GPU, said plainly
            ci = "compiles its kernels for 7.5 in CI"
            if CAPABILITY < (7, 5):
                ci = "does not compile its kernels for it"
            print(
                "note: below the 8.0 that Triton's README names as supported; "
                f"the course {ci} but has not run them on such a GPU, and "
                "tl.dot runs here without tensor cores."
            )
    else:
        print(
            f"running on: the CPU. {props.name} has {capability}, below the 7.0 "
            "that PyTorch asks of a GPU before it uses Triton: every cell runs in "
            "the interpreter instead (in Colab: Runtime > Change runtime type > "
            "T4 GPU)."
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

# What of this notebook runs here. Lesson 02's attention launcher sizes its
# tiles to the GPU's shared memory; the other launchers use fixed tiles or
# autotuner configs (a config that does not fit a GPU fails there, and the
# autotuner drops it). Each lesson's table of GPUs shows what compiled for
# which. A cell written for Hopper checks CAPABILITY and skips itself with a
# sentence on older GPUs. Timing cells need a GPU.
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


# --8<-- [start:timing]
# How the timing cells time. Each times one row of the lesson's benchmark
# table (the same size, dtype and contenders), with triton.testing.do_bench:
# the median of many calls, each after the L2 cache is flushed. The
# contenders take turns, three rounds each, so that a change of clock speed
# hits them all alike; the ratio is taken round by round.
def timing_header():
    """Name the GPU, and say under which conditions it was timed."""
    by_runner = os.environ.get("TRITON_COURSE_TIMED_ALONE")  # set by the runner
    if by_runner:
        where = (
            "measured by the course's GPU runner with nothing else on the GPU, "
            f"commit {by_runner}"
        )
    else:
        where = "this runtime's GPU: anything else running on it slows these numbers"
    print(f"timing on {torch.cuda.get_device_name()} ({where})")


def time_row(bench, size, dtype, contenders, work, unit, rounds=3):
    """Time each contender (a name -> a call with no arguments; "Triton" first)
    and print its median time and rate (work per second, in ``unit``). Each
    peer's line ends with Triton's speed over it (above 1: Triton is faster)
    and, in brackets, the benchmark row it matches, which the course's tests
    compare with the runner's table."""
    for call in contenders.values():
        call()  # the first call compiles, or autotunes: not timed
    times = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, call in contenders.items():
            ms = triton.testing.do_bench(call, warmup=10, rep=40, return_mode="median")
            times[name].append(ms)

    def median(values):
        return sorted(values)[len(values) // 2]

    per_second = 1e9 if unit == "GB/s" else 1e12  # bytes or FLOPs
    shape = ",".join(f"{key}={value}" for key, value in size.items())
    for name, ms in times.items():
        rate = work / (median(ms) / 1e3) / per_second
        line = f"timing: {bench} {shape} {dtype} {name:>16}: {median(ms):8.4f} ms"
        line += f", {rate:7.1f} {unit}"
        if name != "Triton":
            ratio = median([p / t for t, p in zip(times["Triton"], ms, strict=True)])
            line += f"; Triton/{name} = {ratio:.2f}"
            line += f" [bench={bench} size={shape} dtype={dtype}"
            line += f" Triton/{name}={ratio:.3f}]"
        print(line)


# --8<-- [end:timing]
