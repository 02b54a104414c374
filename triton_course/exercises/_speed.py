"""How fast is an attempt on a GPU: a speed verdict beside the checker's.

    python -m triton_course.exercises._speed NAME FILE [NAME FILE ...]

times the attempt's function and the course's solution (``exercises/
solutions/NAME.py``) at one benchmark size per exercise (``BENCHES``), in
interleaved rounds, and prints the attempt's median time and spread, its rate
(the work model's bytes or FLOPs over its time), its share of this GPU's
measured ceiling (the runner's own probe, measured in this process: the copy
for bandwidth, the bf16 matmul for compute) and its ratio to the solution,
with a one-line verdict.

How a call is timed (the runner's method, ``runner/measure.py``, plus what
an attempt could otherwise game):

- the clocks are settled first (``settle_clocks``); every sample starts with
  the L2 flushed by the runner's flush buffer;
- every timed call gets **fresh random inputs**: the input tensors are
  refilled from an unpredictable generator before each call (outside the
  timed span), so a cache of results, or work skipped on repeated inputs,
  finds nothing to reuse;
- **every timed call's output is checked** against a float64 reference on a
  random sample of its elements (rows, columns, heads), computed after the
  call and outside its time: a stale, partial or invented result is refused;
- **the whole device is timed**: each round has samples of two kinds. Hidden
  samples are the runner's (a GPU sleep hides the launch path; CUDA events on
  the current stream). Idle samples start from an idle device, wait for every
  stream (``torch.cuda.synchronize``) and take the span from the start event
  to the device going idle, less the host's enqueue time and the measured lag
  of noticing it: a lower bound of the device's work, whatever stream it ran
  on. A round's time is the larger of the two medians, so work launched on
  another stream (which could run during the sleep, before the start event)
  is counted.

The timing core takes its clock as an argument: the CPU tests drive it with a
fake clock and fake attempts (tests/test_exercise_speed.py).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import os
import secrets
import sys
import time
from collections.abc import Callable
from pathlib import Path

from triton_course.runner import measure as _measure

from . import SOLUTIONS_DIR, registry

# Interleaved rounds, as many as the runner's tables have: the attempt and the
# solution alternate, first in turn, so a drifting clock moves both alike.
ROUNDS = _measure.ROUNDS
# Per contender per round: hidden samples (the runner's sleep-hidden launch)
# and idle samples (from an idle device to every stream done). Few are needed:
# each is a whole call at a size that takes a fraction of a ms or more.
HIDDEN_SAMPLES = 5
IDLE_SAMPLES = 2
# A ratio to the solution within 10 % either way is a tie: the interleaved
# medians of one kernel timed against itself differ by a few % from run to
# run, so a smaller difference is not a difference.
AS_FAST = 0.90
FASTER = 1.10
# Idle samples above the hidden ones by more than this (relative, plus an
# absolute allowance for the lag's jitter): part of the work escaped the
# current stream's events (another stream), and the verdict says so.
OFF_STREAM_RATIO = 1.15
OFF_STREAM_SLACK_MS = 0.02
# Each check compares this many random elements (or rows, columns) of an
# output: a result missing 1 % of its values escapes one check with odds
# 0.99**4096, about 1e-18.
SPOT = 4096
SPOT_ROWS = 256  # for outputs checked a row at a time (rows of 4096 and more)
MIN_SLEEP_US = _measure.MIN_SLEEP_US  # the least sleep before a hidden sample


class SpeedError(RuntimeError):
    """The attempt cannot be timed here (no GPU, too little memory, no such
    exercise); the message says why."""


@dataclasses.dataclass(frozen=True)
class Bench:
    """One exercise's benchmark: its size, its work model, its inputs."""

    size: dict  # the benchmark size, as make() reads it
    dtype: str
    metric: str  # "bandwidth" (work in bytes) or "compute" (work in FLOPs)
    model: str  # the work model in words
    work: Callable[[dict], float]  # bytes a correct kernel moves, or FLOPs
    memory: Callable[[dict], int]  # device bytes the benchmark needs, roughly
    make: Callable  # (size, dtype, device, gen) -> args of the call
    refill: Callable  # (args, gen) -> None: fresh random values, in place
    spot: Callable  # (args, out, gen) -> (got, want): a random part, float64
    tol: tuple[float, float]  # (atol, rtol) of a spot check at this size
    hint: str  # what makes the solution fast, shown when the attempt is slower
    call: Callable | None = None  # (fn, args) -> output; None: fn(*args)


@dataclasses.dataclass(frozen=True)
class Untimed:
    """An exercise with nothing to time, and why."""

    why: str


# ------------------------------------------------------------- the models ---
def _torch():
    import torch

    return torch


def _normal_(args, gen):
    torch = _torch()
    with torch.no_grad():
        for arg in args:
            if isinstance(arg, torch.Tensor):
                arg.normal_(generator=gen)


def _randn(shape, dtype, device, gen):
    torch = _torch()
    return torch.randn(shape, generator=gen, device=device).to(getattr(torch, dtype))


def _pick(n, count, gen, device):
    """``count`` random indices below ``n`` (with repeats: it is a sample)."""
    return _torch().randint(n, (count,), generator=gen, device=device)


def _expect(out, shape, dtype, what="the result"):
    torch = _torch()
    if not isinstance(out, torch.Tensor):
        raise _Wrong(f"{what} is a {type(out).__name__}, expected a torch.Tensor")
    if tuple(out.shape) != tuple(shape) or out.dtype != dtype:
        raise _Wrong(
            f"{what} has shape {tuple(out.shape)} and dtype {out.dtype}, "
            f"expected {tuple(shape)} and {dtype}"
        )
    return out


class _Wrong(Exception):
    """A timed call's output is not the task's answer."""


def _axpy_make(size, dtype, device, gen):
    a = 0.5 + secrets.randbelow(1000) / 1000  # a Python float, fixed for a run
    n = size["n"]
    return (a, _randn(n, dtype, device, gen), _randn(n, dtype, device, gen))


def _axpy_spot(args, out, gen):
    a, x, y = args
    _expect(out, x.shape, x.dtype)
    i = _pick(x.numel(), SPOT, gen, x.device)
    return out[i].double(), a * x[i].double() + y[i].double()


def _silu_make(size, dtype, device, gen):
    shape = (size["rows"], size["cols"])
    a, b, dy = (_randn(shape, dtype, device, gen) for _ in range(3))
    return (a.requires_grad_(True), b.requires_grad_(True), dy)


def _silu_call(fn, args):
    """Forward and backward, as a training step calls them."""
    torch = _torch()
    a, b, dy = args
    y = fn(a, b)
    if not isinstance(y, torch.Tensor) or y.grad_fn is None:
        raise _Wrong("silu_mul(a, b) returned no tensor with a grad_fn")
    da, db = torch.autograd.grad(y, (a, b), dy)
    return (y.detach(), da, db)


def _silu_spot(args, out, gen):
    from .silu_mul import reference

    a, b, dy = args
    y, da, db = (
        _expect(t, a.shape, a.dtype, name)
        for t, name in zip(out, ("y", "da", "db"), strict=True)
    )
    i = _pick(a.numel(), SPOT, gen, a.device)
    flat = [t.detach().reshape(-1)[i] for t in (a, b, dy)]
    got = [t.reshape(-1)[i].double() for t in (y, da, db)]
    return _torch().cat(got), _torch().cat(list(reference(*flat)))


def _colsum_spot(args, out, gen):
    (x,) = args
    _expect(out, (x.shape[1],), x.dtype)
    c = _pick(x.shape[1], SPOT_ROWS, gen, x.device)
    return out[c].double(), x[:, c].double().sum(dim=0)


def _rmsnorm_make(size, dtype, device, gen):
    x = _randn((size["rows"], size["cols"]), dtype, device, gen)
    return (x, _randn(size["cols"], dtype, device, gen), size["eps"])


def _rmsnorm_spot(args, out, gen):
    from .rmsnorm import reference

    x, w, eps = args
    _expect(out, x.shape, x.dtype)
    r = _pick(x.shape[0], SPOT_ROWS, gen, x.device)
    return out[r].double(), reference(x[r], w, eps)


def _transpose_spot(args, out, gen):
    (x,) = args
    _expect(out, (x.shape[1], x.shape[0]), x.dtype)
    r = _pick(x.shape[1], SPOT_ROWS, gen, x.device)  # rows of out: columns of x
    return out[r].double(), x[:, r].t().double()


def _softmax_make(size, dtype, device, gen):
    x = _randn((size["rows"], size["cols"]), dtype, device, gen)
    return (x, size["T"])


def _softmax_spot(args, out, gen):
    x, temperature = args
    _expect(out, x.shape, x.dtype)
    r = _pick(x.shape[0], SPOT_ROWS, gen, x.device)
    return out[r].double(), _torch().softmax(x[r].double() / temperature, dim=-1)


def _lse_refill(args, gen):
    """Normal values plus a random shift per row (-50 to 50): the log-sum-exp
    of 16384 normal values hardly varies from row to row (about 0.01, less
    than float16's step near 10), so without the shift a stale result would
    pass; with it, every call's answers differ by tens."""
    torch = _torch()
    (x,) = args
    x.normal_(generator=gen)
    shift = torch.rand(x.shape[0], 1, generator=gen, device=x.device) * 100 - 50
    x.add_(shift.to(x.dtype))


def _lse_make(size, dtype, device, gen):
    x = _randn((size["rows"], size["cols"]), dtype, device, gen)
    _lse_refill((x,), gen)
    return (x,)


def _lse_spot(args, out, gen):
    (x,) = args
    _expect(out, (x.shape[0],), x.dtype)
    r = _pick(x.shape[0], SPOT_ROWS, gen, x.device)
    return out[r].double(), _torch().logsumexp(x[r].double(), dim=-1)


def _matmul_make(size, dtype, device, gen):
    m, n, k = size["M"], size["N"], size["K"]
    return (
        _randn((m, k), dtype, device, gen),
        _randn((k, n), dtype, device, gen),
        _randn(n, dtype, device, gen),
    )


def _matmul_spot(args, out, gen):
    a, b, bias = args
    _expect(out, (a.shape[0], b.shape[1]), a.dtype)
    r = _pick(a.shape[0], 64, gen, a.device)  # 64 rows: 2 x 64 x N x K FLOPs
    want = _torch().relu(a[r].double() @ b.double() + bias.double())
    return out[r].double(), want


def _swa_make(size, dtype, device, gen):
    shape = (size["batch"], size["heads"], size["seq_len"], size["head_dim"])
    q, k, v = (_randn(shape, dtype, device, gen) for _ in range(3))
    return (q, k, v, size["window"])


def _swa_spot(args, out, gen):
    torch = _torch()
    q, k, v, window = args
    _expect(out, q.shape, q.dtype)
    batch, heads, n, d = q.shape
    b = int(torch.randint(batch, (1,), generator=gen, device=q.device))
    h = int(torch.randint(heads, (1,), generator=gen, device=q.device))
    rows = _pick(n, SPOT_ROWS, gen, q.device)
    s = q[b, h, rows].double() @ k[b, h].double().t() / math.sqrt(d)
    j = torch.arange(n, device=q.device)[None, :]
    seen = (j <= rows[:, None]) & (j > rows[:, None] - window)
    p = torch.softmax(s.masked_fill(~seen, -math.inf), dim=-1)
    return out[b, h, rows].double(), p @ v[b, h].double()


def _swa_pairs(n: int, window: int) -> int:
    """(query, key) pairs with i - window < j <= i: sum of min(i + 1, window)."""
    w = min(window, n)
    return w * (w + 1) // 2 + (n - w) * w


def _elements(size) -> int:
    return math.prod(v for k, v in size.items() if k in ("n", "rows", "cols"))


GiB = 2**30

# One benchmark per exercise of ``python -m triton_course.exercises list``
# (tests/test_exercise_speed.py checks that every one has an entry). Sizes
# are the exercises' own GPU targets where they name one, large enough on an
# H100 for the kernel's memory traffic (or its tensor cores) to dominate.
BENCHES: dict[str, Bench | Untimed] = {
    "axpy": Bench(
        size={"n": 2**26},
        dtype="float32",
        metric="bandwidth",
        model="reads x and y, writes out: 3 x n x 4 bytes",
        work=lambda s: 3 * s["n"] * 4,
        memory=lambda s: 6 * s["n"] * 4,
        make=_axpy_make,
        refill=_normal_,
        spot=_axpy_spot,
        tol=(1e-5, 1e-5),
        hint="one program per BLOCK_SIZE (1024 or more) adjacent elements, "
        "loads and stores whose lanes are adjacent in memory (coalesced).",
    ),
    "silu_mul": Bench(
        size={"rows": 4096, "cols": 14336},
        dtype="bfloat16",
        metric="bandwidth",
        model="forward reads a, b and writes y; backward reads a, b, dy and "
        "writes da, db: 8 x rows x cols x 2 bytes (forward and backward timed "
        "as one call)",
        work=lambda s: 8 * _elements(s) * 2,
        memory=lambda s: 12 * _elements(s) * 2,
        make=_silu_make,
        refill=_normal_,
        spot=_silu_spot,
        tol=(1.6e-2, 1.6e-2),
        hint="one fused kernel forward and one backward, each over adjacent "
        "blocks of 1024 or more elements; no copies (.contiguous() of a dense "
        "tensor is free, of a strided one is not).",
        call=_silu_call,
    ),
    "colsum": Bench(
        size={"rows": 16384, "cols": 4096},
        dtype="float32",
        metric="bandwidth",
        model="reads x once, writes one row: (rows + 1) x cols x 4 bytes",
        work=lambda s: (s["rows"] + 1) * s["cols"] * 4,
        memory=lambda s: 3 * _elements(s) * 4,
        make=lambda s, d, dev, g: (_randn((s["rows"], s["cols"]), d, dev, g),),
        refill=_normal_,
        spot=_colsum_spot,
        tol=(1e-2, 1e-4),  # a float32 sum of 16384 values: rounding, not 1e-5
        hint="tiles whose rows are adjacent columns (coalesced loads) walking "
        "down the rows with a float32 accumulator, and enough programs (or a "
        "split over the rows) to keep every SM busy.",
    ),
    "rmsnorm": Bench(
        size={"rows": 16384, "cols": 4096, "eps": 1e-6},
        dtype="bfloat16",
        metric="bandwidth",
        model="reads x once and w, writes y once: (2 x rows + 1) x cols x 2 "
        "bytes (a second read of a row, from L2, not counted)",
        work=lambda s: (2 * s["rows"] + 1) * s["cols"] * 2,
        memory=lambda s: 3 * s["rows"] * s["cols"] * 2,
        make=_rmsnorm_make,
        refill=_normal_,
        spot=_rmsnorm_spot,
        tol=(1.6e-2, 1.6e-2),  # the exercise's bfloat16 tolerance
        hint="one program per row, each loop trip loading a block of 1024 or "
        "more adjacent elements (tl.arange) into a (BLOCK,) float32 "
        "accumulator, summed once after the loop: the row sums' v1.",
    ),
    "transpose": Bench(
        size={"rows": 16384, "cols": 8192},
        dtype="float32",
        metric="bandwidth",
        model="reads x, writes its transpose: 2 x rows x cols x 4 bytes",
        work=lambda s: 2 * _elements(s) * 4,
        memory=lambda s: 4 * _elements(s) * 4,
        make=lambda s, d, dev, g: (_randn((s["rows"], s["cols"]), d, dev, g),),
        refill=_normal_,
        spot=_transpose_spot,
        tol=(0.0, 0.0),  # a copy: exact
        hint="square tiles (32 x 32 or more) loaded along rows of x and stored "
        "along rows of out, so both the loads and the stores are coalesced.",
    ),
    "softmax_temperature": Bench(
        size={"rows": 16384, "cols": 4096, "T": 0.7},
        dtype="float16",
        metric="bandwidth",
        model="reads x once, writes the result once: 2 x rows x cols x 2 bytes",
        work=lambda s: 2 * s["rows"] * s["cols"] * 2,
        memory=lambda s: 4 * s["rows"] * s["cols"] * 2,
        make=_softmax_make,
        refill=_normal_,
        # results near 1 / 4096: an atol would accept any small value, so
        # relative only (float16 keeps 11 bits: 4.9e-4), beside subnormals
        tol=(1e-6, 4e-3),
        spot=_softmax_spot,
        hint="one program per row, the whole row in one block "
        "(next_power_of_2(n_cols)) held in registers: x read once, the result "
        "written once, 1 / T multiplied in the kernel.",
    ),
    "online_logsumexp": Bench(
        size={"rows": 4096, "cols": 16384},
        dtype="float16",
        metric="bandwidth",
        model="reads x once, writes one value per row: (cols + 1) x rows x 2 bytes",
        work=lambda s: (s["cols"] + 1) * s["rows"] * 2,
        memory=lambda s: 3 * s["rows"] * s["cols"] * 2,
        make=_lse_make,
        refill=_lse_refill,
        spot=_lse_spot,
        tol=(1e-2, 2e-3),
        hint="tiles of 1024 or more elements along the row with a running "
        "maximum per lane, one pass over x; one program per row.",
    ),
    "matmul_bias_relu": Bench(
        size={"M": 4096, "N": 4096, "K": 4096},
        dtype="float16",
        metric="compute",
        model="the product's 2 x M x N x K FLOPs (the bias and ReLU are free)",
        work=lambda s: 2 * s["M"] * s["N"] * s["K"],
        memory=lambda s: (
            (s["M"] * s["K"] + s["K"] * s["N"] + s["M"] * s["N"]) * 2
            + s["K"] * s["N"] * 8
        ),
        make=_matmul_make,
        refill=_normal_,
        spot=_matmul_spot,
        tol=(5e-2, 1e-2),  # float16 results near 64: a step of 0.03
        hint="larger tiles (128 x 128 or 128 x 256 with BLOCK_K 64, several "
        "warps and pipeline stages, as the tiled-GEMM page's autotuned "
        "configs) so each loaded byte feeds more tensor-core work.",
    ),
    "sliding_window_attention": Bench(
        size={
            "batch": 4,
            "heads": 16,
            "seq_len": 8192,
            "head_dim": 64,
            "window": 1024,
        },  # fmt: skip
        dtype="float16",
        metric="compute",
        model="4 x head_dim FLOPs per (query, key) pair a query sees "
        "(q k^T and p v): 4 x head_dim x batch x heads x sum over i of "
        "min(i + 1, window)",
        work=lambda s: (
            4
            * s["head_dim"]
            * s["batch"]
            * s["heads"]
            * _swa_pairs(s["seq_len"], s["window"])
        ),
        memory=lambda s: (
            5 * s["batch"] * s["heads"] * s["seq_len"] * s["head_dim"] * 2
            + 16 * s["seq_len"] * SPOT_ROWS
        ),
        make=_swa_make,
        refill=_normal_,
        spot=_swa_spot,
        tol=(4e-3, 4e-3),  # the exercise's float16 tolerance: p rounded
        hint="visit only the key tiles some query of the block sees (from its "
        "first query's window start to its last query), with query blocks of "
        "64 or 128 rows and several warps.",
    ),
    "catch_missing_mask": Untimed(
        "a detector that runs add() on a few small inputs and answers True or "
        "False: it has no kernel of its own, so nothing to time."
    ),
}


# -------------------------------------------------------------- the timing ---
@dataclasses.dataclass
class Sample:
    stream_ms: float  # the current stream's events, start to end
    device_ms: float  # idle samples: a lower bound of the whole device's work
    host_ms: float = 0.0  # the enqueue's time on the CPU


@dataclasses.dataclass
class SpeedResult:
    exercise: str
    size: dict
    dtype: str
    metric: str
    unit: str
    work: float
    median_ms: float | None = None  # the attempt's, over rounds
    q25_ms: float | None = None
    q75_ms: float | None = None
    solution_ms: float | None = None
    rate: float | None = None  # work / median, in unit
    ceiling: dict | None = None  # the probe: {"name", "value", "unit"}
    share: float | None = None  # rate / ceiling value
    ratio: float | None = None  # the solution's time / the attempt's, per round
    off_stream: bool = False  # work escaped the current stream's events
    refused: str | None = None  # why the attempt was not timed
    verdict: str = ""
    hint: str = ""

    @property
    def spread(self) -> float | None:
        """Half the interquartile range over the median (as the runner logs)."""
        if self.median_ms is None:
            return None
        return (self.q75_ms - self.q25_ms) / 2 / self.median_ms

    def report(self) -> str:
        if not self.size:  # not timed
            return f"speed of {self.exercise!r}: {self.verdict}"
        head = f"speed of {self.exercise!r} at {_size_text(self.size)} {self.dtype}"
        if self.refused or self.median_ms is None:
            return f"{head}\n  {self.verdict}"
        lines = [
            head,
            f"  attempt  {self.median_ms:.4g} ms ±{100 * self.spread:.1f} %  "
            f"{self.rate:.4g} {self.unit}   solution {self.solution_ms:.4g} ms",
            f"  verdict: {self.verdict}",
        ]
        if self.hint:
            lines.append(f"  hint: {self.hint}")
        return "\n".join(lines)


def _size_text(size: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in size.items())


def _quantile(values, q):
    from triton_course.timings import quantile

    return quantile(values, q)


def mismatch(got, want, atol: float, rtol: float) -> str | None:
    """What differs between a spot of the output and its reference, or None."""
    torch = _torch()
    got, want = got.double(), want.double()
    if got.shape != want.shape:
        return f"shape {tuple(got.shape)}, expected {tuple(want.shape)}"
    both = torch.isfinite(got) & torch.isfinite(want)
    same = (got == want) | (torch.isnan(got) & torch.isnan(want))
    close = (got - want).abs() <= atol + rtol * want.abs()
    bad = ~(same | (both & close))
    if not bad.any():
        return None
    first = int(bad.reshape(-1).nonzero()[0])
    return (
        f"{int(bad.sum())} of {bad.numel()} sampled values differ from the "
        f"reference (e.g. got {float(got.reshape(-1)[first]):.6g}, expected "
        f"{float(want.reshape(-1)[first]):.6g}; allowed atol={atol:g} "
        f"rtol={rtol:g})"
    )


def _invoke(bench, fn, args):
    """One call; an exception of the code called (not out of memory) is
    passed on as _Raised, told apart from the timing's own."""
    torch = _torch()
    try:
        return bench.call(fn, args) if bench.call else fn(*args)
    except (_Wrong, torch.cuda.OutOfMemoryError):
        raise
    except Exception as error:
        raise _Raised(error) from error


class _Raised(Exception):
    pass


def _round(clock, bench, fn, args, gen, check, hidden_n, idle_n):
    """One contender's round: idle samples, then hidden ones sleeping long
    enough to hide the enqueue the idle samples saw; every call's inputs fresh
    and its output checked. -> (round time, idle median, hidden median)."""
    idle, hidden = [], []
    for _ in range(idle_n):
        bench.refill(args, gen)
        sample, out = clock.idle(lambda: _invoke(bench, fn, args))
        check(args, out)
        idle.append(sample)
    host_ms = max((s.host_ms for s in idle), default=0.0)
    sleep_us = max(MIN_SLEEP_US, 2.0 * host_ms * 1e3 + 20.0)
    for _ in range(hidden_n):
        bench.refill(args, gen)
        sample, out = clock.hidden(lambda: _invoke(bench, fn, args), sleep_us)
        check(args, out)
        hidden.append(sample)
    stream = _quantile([s.stream_ms for s in hidden], 0.5)
    device = _quantile([s.device_ms for s in idle], 0.5) if idle else 0.0
    return max(stream, device), device, stream


def speed(
    exercise_name: str,
    attempt_fn: Callable,
    solution_fn: Callable,
    device: str = "cuda",
    *,
    clock=None,
    ceiling: dict | None = None,
    size: dict | None = None,
    rounds: int = ROUNDS,
    hidden_samples: int = HIDDEN_SAMPLES,
    idle_samples: int = IDLE_SAMPLES,
) -> SpeedResult:
    """Time ``attempt_fn`` against ``solution_fn`` on ``device`` at the
    exercise's benchmark size (or ``size``); see the module docstring.

    ``clock`` (idle(call) and hidden(call, sleep_us), each -> (Sample,
    output)) and ``ceiling`` ({"name", "value", "unit"}) default, on a CUDA
    device, to the runner's timer and its probe measured in this process."""
    from triton_course.timings import UNITS

    bench = BENCHES.get(exercise_name)
    if bench is None:
        raise SpeedError(
            f"no speed benchmark for {exercise_name!r}; exercises with one: "
            + ", ".join(n for n, b in BENCHES.items() if isinstance(b, Bench))
        )
    if isinstance(bench, Untimed):
        return SpeedResult(exercise_name, {}, "", "", "", 0.0,
                           verdict=f"not timed: {bench.why}")  # fmt: skip
    size = dict(size or bench.size)
    torch = _torch()
    result = SpeedResult(
        exercise_name, size, bench.dtype, bench.metric, UNITS[bench.metric],
        float(bench.work(size)),
    )  # fmt: skip
    if clock is None or ceiling is None:
        cuda_clock, cuda_ceiling = cuda_timing(bench.metric, device)
        clock = clock or cuda_clock
        ceiling = ceiling or cuda_ceiling
    _enough_memory(bench, size, device)
    gen = torch.Generator(device=device).manual_seed(secrets.randbits(62))
    try:
        args = bench.make(size, bench.dtype, device, gen)
    except torch.cuda.OutOfMemoryError as error:
        raise SpeedError(_memory_text(bench, size, device, error)) from None

    def check(who):
        def inner(args, out):
            try:
                got, want = bench.spot(args, out, gen)
            except _Wrong as wrong:
                raise _Refused(f"{who}: {wrong}") from None
            problem = mismatch(got, want, *bench.tol)
            if problem:
                raise _Refused(f"{who}: {problem}")

        return inner

    contenders = {
        "attempt": (attempt_fn, check("the attempt's output")),
        "solution": (solution_fn, check("the solution's output (a bug of ours)")),
    }
    times: dict[str, list] = {"attempt": [], "solution": []}
    ratios, off = [], []
    who = "attempt"
    try:
        for who, (fn, checker) in contenders.items():  # noqa: B007 - warm-up
            bench.refill(args, gen)
            checker(args, _invoke(bench, fn, args))
        for r in range(rounds):
            order = list(contenders)[r % 2 :] + list(contenders)[: r % 2]
            this = {}
            for name in order:
                who, (fn, checker) = name, contenders[name]
                this[name], device_ms, stream_ms = _round(
                    clock, bench, fn, args, gen, checker, hidden_samples, idle_samples
                )
                times[name].append(this[name])
                if name == "attempt":
                    off.append(
                        device_ms > stream_ms * OFF_STREAM_RATIO + OFF_STREAM_SLACK_MS
                    )
            ratios.append(this["solution"] / this["attempt"])
    except (_Refused, _Wrong) as refused:
        if isinstance(refused, _Wrong):  # raised by the call itself
            refused = f"the {who}'s output: {refused}"
        result.refused = str(refused)
        result.verdict = (
            f"refused: {refused}. Every timed call gets new random inputs and its "
            "output is checked: a result kept from an earlier call, computed "
            "only in part, or read before the kernel finished, is wrong."
        )
        return result
    except torch.cuda.OutOfMemoryError as error:
        raise SpeedError(_memory_text(bench, size, device, error)) from None
    except _Raised as raised:  # the code's own exception, said in one line
        error = raised.__cause__
        text = (str(error).strip().splitlines() or [""])[0]
        result.refused = f"the {who} raised {type(error).__name__}: {text}"
        result.verdict = (
            f"refused: {result.refused} (at {_size_text(size)} {bench.dtype}, "
            "larger than the checker's cases)"
        )
        return result
    ms = times["attempt"]
    result.median_ms = _quantile(ms, 0.5)
    result.q25_ms, result.q75_ms = _quantile(ms, 0.25), _quantile(ms, 0.75)
    result.solution_ms = _quantile(times["solution"], 0.5)
    scale = 1e6 if bench.metric == "bandwidth" else 1e9  # as measure.rate
    result.rate = result.work / result.median_ms / scale
    result.ceiling = ceiling
    result.share = result.rate / ceiling["value"]
    result.ratio = _quantile(ratios, 0.5)
    result.off_stream = sum(off) > len(off) // 2
    result.verdict, slower = verdict(result)
    result.hint = bench.hint if slower else ""
    return result


class _Refused(Exception):
    pass


def verdict(result: SpeedResult) -> tuple[str, bool]:
    """The one-line verdict, and whether the attempt is slower."""
    probe = result.ceiling.get("name", "the probe")
    words = (
        f"{result.rate:.4g} {result.unit}, at {100 * result.share:.0f} % of the "
        f"{probe} ({result.ceiling['value']:.4g} {result.unit}) and "
        f"{result.ratio:.2f}x the course's solution: "
    )
    slower = result.ratio < AS_FAST
    if result.ratio >= FASTER:
        words += "faster than the solution"
    elif not slower:
        words += "as fast as the solution"
    else:
        words += "slower than the solution; see the hint"
    if result.off_stream:
        words += (
            " (part of its work ran outside the current stream's events, on "
            "another stream: timed until the whole device was idle)"
        )
    return words, slower


def _needed(bench: Bench, size: dict) -> int:
    from triton_course.runner.measure import FLUSH_BYTES

    return int(bench.memory(size)) + FLUSH_BYTES


def _memory_text(bench, size, device, error=None) -> str:
    torch = _torch()
    free, total = torch.cuda.mem_get_info(device)
    return (
        f"the benchmark at {_size_text(size)} {bench.dtype} needs about "
        f"{_needed(bench, size) / GiB:.1f} GiB of GPU memory; this GPU has "
        f"{free / GiB:.1f} GiB free of {total / GiB:.1f} GiB"
        + (f" ({type(error).__name__})" if error else "")
        + ". Free the memory other processes hold, or use a larger GPU."
    )


def _enough_memory(bench: Bench, size: dict, device: str) -> None:
    torch = _torch()
    if not str(device).startswith("cuda"):
        return
    free, _ = torch.cuda.mem_get_info(device)
    if free < _needed(bench, size):
        raise SpeedError(_memory_text(bench, size, device))


# ------------------------------------------------------- the real GPU clock ---
class CudaClock:
    """Samples on a CUDA GPU, with the runner's timer's flush buffer and SM
    clock (``measure.CudaTimer``)."""

    def __init__(self, timer):
        import torch

        self.torch, self.timer = torch, timer
        # The lag from the device going idle to an event recorded after
        # torch.cuda.synchronize() returns: measured with nothing to wait for.
        self.lag_ms = 0.0
        lags = [self._whole(lambda: None)[0] for _ in range(9)]
        self.lag_ms = _quantile(lags, 0.5)

    def _event(self):
        return self.torch.cuda.Event(enable_timing=True)

    def _whole(self, call):
        """(start to every stream done, ms; host enqueue, ms; stream ms; out)"""
        torch = self.torch
        start, end, after = self._event(), self._event(), self._event()
        start.record()
        t0 = time.perf_counter()
        out = call()
        host_ms = (time.perf_counter() - t0) * 1e3
        end.record()
        torch.cuda.synchronize()  # the whole device, every stream
        after.record()
        after.synchronize()
        return start.elapsed_time(after), host_ms, start.elapsed_time(end), out

    def idle(self, call):
        """From an idle device: nothing of the call can start before the start
        event, on any stream. The span to the device going idle, less the
        enqueue and the lag, is a lower bound of the device's work."""
        self.timer.flush.zero_()  # every sample starts with a cold L2
        self.torch.cuda.synchronize()
        whole, host_ms, stream_ms, out = self._whole(call)
        device_ms = max(0.0, whole - host_ms - self.lag_ms)
        return Sample(stream_ms, device_ms, host_ms), out

    def hidden(self, call, sleep_us):
        """The runner's sample: an L2 flush, a GPU sleep covering the enqueue,
        CUDA events on the current stream around the call."""
        torch = self.torch
        start, end = self._event(), self._event()
        self.timer.flush.zero_()
        torch.cuda._sleep(int(sleep_us * self.timer.cycles_per_us))
        start.record()
        out = call()
        end.record()
        torch.cuda.synchronize()  # the output is checked next: every stream
        return Sample(start.elapsed_time(end), 0.0), out


_CUDA: dict = {}  # per process: the timer, the clock, the settled clocks, probes


def cuda_timing(metric: str, device: str = "cuda"):
    """(CudaClock, ceiling) on this process's GPU: the clocks settled once,
    each probe measured once (the runner's ``measure_rooflines``)."""
    import torch
    import triton

    from triton_course.runner import measure

    if str(device) != "cuda" and not str(device).startswith("cuda"):
        raise SpeedError(f"timing needs a CUDA device, not {device!r}")
    if triton.knobs.runtime.interpret or not torch.cuda.is_available():
        raise SpeedError(
            "the speed verdict needs a CUDA GPU"
            + (
                " (TRITON_INTERPRET is set: unset it)"
                if torch.cuda.is_available()
                else ": none is visible here"
            )
        )
    if "clock" not in _CUDA:
        props = torch.cuda.get_device_properties(0)
        mhz = measure._nvidia_smi("clocks.max.sm")
        mhz = float(mhz) if mhz and mhz.replace(".", "").isdigit() else 2000.0
        _CUDA["gpu"] = props.name
        _CUDA["timer"] = timer = measure.CudaTimer(mhz)
        _CUDA["settled"] = measure.settle_clocks(measure.NvmlReader(props))
        _CUDA["clock"] = CudaClock(timer)
        _CUDA["ceilings"] = {}
    ceilings = _CUDA["ceilings"]
    if metric not in ceilings:
        ceilings.update(
            measure.measure_rooflines({metric}, _CUDA["gpu"], _CUDA["timer"])
        )
    probe = ceilings[metric]
    name = {"bandwidth": "copy probe", "compute": "bf16 matmul probe"}[metric]
    return _CUDA["clock"], {
        "name": name,
        "value": probe["value"],
        "unit": probe["unit"],
    }


# ---------------------------------------------------------- command line ---
def load_function(path: Path, function: str) -> Callable:
    """``function`` from the Python file ``path``, imported under a name of
    its own (an attempt and the solution side by side)."""
    path = Path(path).resolve()
    name = f"_speed_{path.stem}_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise SpeedError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    fn = getattr(module, function, None)
    if not callable(fn):
        raise SpeedError(f"{path.name} does not define {function}()")
    return fn


def speed_of_file(name: str, attempt: Path, device: str = "cuda") -> SpeedResult:
    exercises = registry()
    if name not in exercises:
        raise SpeedError(f"no exercise {name!r}; choose one of: {', '.join(exercises)}")
    function = exercises[name].function
    if isinstance(BENCHES.get(name), Untimed):
        return speed(name, None, None, device)
    try:
        attempt_fn = load_function(attempt, function)
    except SpeedError:
        raise
    except Exception as error:  # SyntaxError, ImportError, anything at import
        raise SpeedError(
            f"{attempt} could not be imported: {type(error).__name__}: {error}"
        ) from None
    solution_fn = load_function(SOLUTIONS_DIR / f"{name}.py", function)
    return speed(name, attempt_fn, solution_fn, device)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m triton_course.exercises._speed",
        description="Time attempts against the course's solutions on a CUDA GPU.",
    )
    parser.add_argument("pairs", nargs="+", metavar="NAME FILE")
    parser.add_argument(
        "--quiet-without-gpu",
        action="store_true",
        help="exit 0 silently where no CUDA GPU is visible (for check)",
    )
    args = parser.parse_args(argv)
    if len(args.pairs) % 2:
        parser.error("give NAME FILE pairs")
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        if args.quiet_without_gpu:
            return 0
        print("speed: needs a CUDA GPU (TRITON_INTERPRET is set: unset it)")
        return 2
    import torch

    if not torch.cuda.is_available():
        if args.quiet_without_gpu:
            return 0
        print("speed: needs a CUDA GPU; none is visible here, so nothing was timed")
        return 2
    status = 0
    for name, file in zip(args.pairs[::2], args.pairs[1::2], strict=True):
        if not Path(file).is_file():
            print(f"{file}: no such file")
            status = 2
            continue
        print(f"timing {name!r} from {file} against the course's solution ...")
        try:
            result = speed_of_file(name, Path(file))
        except SpeedError as error:
            print(f"speed: {error}")
            status = max(status, 2)
            continue
        print(result.report(), flush=True)
        if result.refused:
            status = max(status, 1)
    return status


if __name__ == "__main__":
    sys.exit(main())
