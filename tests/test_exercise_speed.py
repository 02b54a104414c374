"""The speed verdict of an exercise attempt (triton_course/exercises/_speed.py).

On the CPU, a fake clock stands in for the GPU: fake attempts say how long
they take (and on which stream) and return torch's answers, so the timing
logic, the fresh inputs, the output checks and the verdicts are tested
without a GPU. The ``gpu`` tests time real kernels: the solution against a
deliberately slow attempt (tests/fixtures/exercise_speed/), a caching
attempt, and one that launches on another stream.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from conftest import HAS_GPU

from triton_course.exercises import SOLUTIONS_DIR, _speed, registry
from triton_course.exercises._speed import (
    AS_FAST,
    BENCHES,
    FASTER,
    Bench,
    Sample,
    SpeedError,
    Untimed,
    mismatch,
    speed,
)

SLOW = Path(__file__).parent / "fixtures" / "exercise_speed"
TIMED = sorted(n for n, b in BENCHES.items() if isinstance(b, Bench))
# Exercises whose starter is the slow kernel to make fast: it is their slow
# attempt (lesson 04's rmsnorm walks each row one element at a time)
SLOW_STARTERS = {"rmsnorm"}


def _slow_file(name: str) -> Path:
    if name in SLOW_STARTERS:
        return SOLUTIONS_DIR.parent / "starters" / f"{name}.py"
    return SLOW / f"{name}_slow.py"


# Small sizes for the CPU: the same code paths as the benchmark sizes
TINY = {
    "axpy": {"n": 1000},
    "silu_mul": {"rows": 8, "cols": 24},
    "colsum": {"rows": 64, "cols": 40},
    "transpose": {"rows": 24, "cols": 40},
    "rmsnorm": {"rows": 4, "cols": 40, "eps": 1e-6},
    "softmax_temperature": {"rows": 16, "cols": 96, "T": 0.7},
    "online_logsumexp": {"rows": 16, "cols": 300},
    "matmul_bias_relu": {"M": 32, "N": 24, "K": 40},
    "sliding_window_attention": {
        "batch": 1,
        "heads": 2,
        "seq_len": 40,
        "head_dim": 16,
        "window": 7,
    },  # fmt: skip
}


def _silu(a, b):
    return (torch.nn.functional.silu(a.float()) * b.float()).to(a.dtype)


def _swa(q, k, v, window):
    n = q.shape[2]
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    mask = (j <= i) & (j > i - window)
    out = torch.nn.functional.scaled_dot_product_attention(
        q.float(), k.float(), v.float(), attn_mask=mask
    )
    return out.to(q.dtype)


# torch's answer to each exercise: what a correct attempt returns
TORCH = {
    "axpy": lambda a, x, y: a * x + y,
    "silu_mul": _silu,
    "colsum": lambda x: x.sum(dim=0),
    "transpose": lambda x: x.t().contiguous(),
    "rmsnorm": lambda x, w, eps: torch.nn.functional.rms_norm(
        x.float(), (x.shape[1],), w.float(), eps
    ).to(x.dtype),
    "softmax_temperature": lambda x, t: torch.softmax(x.float() / t, -1).to(x.dtype),
    "online_logsumexp": lambda x: torch.logsumexp(x.float(), -1).to(x.dtype),
    "matmul_bias_relu": lambda a, b, bias: torch.relu(
        a.float() @ b.float() + bias.float()
    ).to(a.dtype),
    "sliding_window_attention": _swa,
}


class FakeClock:
    """The GPU's clock, faked: an attempt calls spend(ms, stream) for the
    work it does. Hidden samples see the current stream only (as CUDA events
    on it do); idle samples see every stream (as a device-wide sync does)."""

    def __init__(self):
        self.current = self.side = 0.0
        self.hidden_calls = self.idle_calls = 0

    def spend(self, ms, stream="current"):
        if stream == "current":
            self.current += ms
        else:
            self.side += ms

    def _run(self, call):
        self.current = self.side = 0.0
        return call()

    def idle(self, call):
        self.idle_calls += 1
        out = self._run(call)
        return Sample(self.current, self.current + self.side, 0.01), out

    def hidden(self, call, sleep_us):
        self.hidden_calls += 1
        out = self._run(call)
        return Sample(self.current, 0.0), out


CEILING = {"name": "copy probe", "value": 1.0, "unit": "GB/s"}
FAST = {"rounds": 3, "hidden_samples": 2, "idle_samples": 1}  # calls per run


def _axpy(clock, ms=1.0, stream="current"):
    def attempt(a, x, y):
        clock.spend(ms, stream)
        return a * x + y

    return attempt


def _run(attempt, clock, name="axpy", solution=None, **kw):
    solution = solution or _axpy(clock)
    return speed(
        name, attempt, solution, "cpu", clock=clock, ceiling=CEILING,
        size=TINY[name], **{**FAST, **kw},
    )  # fmt: skip


# ------------------------------------------------------------- the table ---
def test_every_exercise_has_a_benchmark_or_says_why_not():
    assert set(BENCHES) == set(registry())
    for name, bench in BENCHES.items():
        if isinstance(bench, Untimed):
            assert len(bench.why) > 20, name
            continue
        assert bench.metric in ("bandwidth", "compute"), name
        assert bench.work(bench.size) > 0 and bench.model and bench.hint, name
        assert name in TINY, f"{name}: add a small size to TINY"


def test_work_models():
    assert BENCHES["axpy"].work({"n": 2**26}) == 3 * 2**26 * 4
    assert BENCHES["matmul_bias_relu"].work(BENCHES["matmul_bias_relu"].size) == (
        2 * 4096**3
    )
    # pairs a query sees, counted one by one
    for n, w in ((10, 3), (5, 9), (64, 64)):
        brute = sum(1 for i in range(n) for j in range(n) if i - w < j <= i)
        assert _speed._swa_pairs(n, w) == brute
    size = BENCHES["sliding_window_attention"].size
    assert BENCHES["sliding_window_attention"].work(size) == (
        4 * 64 * 4 * 16 * _speed._swa_pairs(8192, 1024)
    )


def test_untimed_and_unknown_exercises():
    result = speed("catch_missing_mask", None, None, "cpu")
    assert result.verdict.startswith("not timed:") and result.median_ms is None
    with pytest.raises(SpeedError, match="no speed benchmark"):
        speed("no_such_exercise", None, None, "cpu")


# ---------------------------------------------------- what cannot be gamed ---
def test_every_timed_call_gets_fresh_inputs():
    clock = FakeClock()
    seen = []

    def spy(a, x, y):
        clock.spend(1.0)
        seen.append((x.sum().item(), y.sum().item(), x.data_ptr()))
        return a * x + y

    result = _run(spy, clock)
    calls = 1 + FAST["rounds"] * (FAST["hidden_samples"] + FAST["idle_samples"])
    assert len(seen) == calls  # the warm-up and every timed call
    assert len({s[:2] for s in seen}) == calls  # new values every time
    assert result.refused is None and result.median_ms == 1.0


def test_a_cache_of_results_is_refused():
    clock = FakeClock()
    cache = {}

    def cached(a, x, y):  # the same tensors again: the answer kept from before
        key = (x.data_ptr(), y.data_ptr())
        if key not in cache:
            clock.spend(1.0)
            cache[key] = a * x + y
        return cache[key]

    result = _run(cached, clock)
    assert result.refused and "the attempt's output" in result.refused
    assert result.verdict.startswith("refused:") and result.median_ms is None


def test_skipping_work_on_repeated_inputs_gains_nothing():
    clock = FakeClock()
    last = {}
    skipped = []

    def skipping(a, x, y):  # skips the work when the inputs repeat
        if "x" in last and torch.equal(x, last["x"]) and torch.equal(y, last["y"]):
            skipped.append(True)
            return last["out"].clone()
        clock.spend(1.0)
        last.update(x=x.clone(), y=y.clone(), out=a * x + y)
        return last["out"]

    result = _run(skipping, clock)
    assert not skipped and result.ratio == 1.0
    assert "as fast as the solution" in result.verdict


@pytest.mark.parametrize("wrong", ["every fifth call", "half the elements"])
def test_a_wrong_output_in_any_timed_call_is_refused(wrong):
    clock = FakeClock()
    calls = []

    def attempt(a, x, y):
        clock.spend(0.5)
        calls.append(1)
        out = a * x + y
        if wrong == "half the elements":
            out[: out.numel() // 2] = 0.0  # work skipped: half never computed
        elif len(calls) % 5 == 0:
            out += 1.0
        return out

    result = _run(attempt, clock)
    assert result.refused and "sampled values differ" in result.refused


def test_work_on_another_stream_is_counted():
    clock = FakeClock()
    result = _run(_axpy(clock, 1.0, stream="side"), clock)
    # the current stream's events saw nothing; the device-wide samples did
    assert result.median_ms == 1.0 and result.ratio == 1.0
    assert result.off_stream and "another stream" in result.verdict
    honest = _run(_axpy(clock, 1.0), clock)
    assert not honest.off_stream and "another stream" not in honest.verdict


def test_hidden_and_idle_samples_are_both_taken():
    clock = FakeClock()
    _run(_axpy(clock), clock)
    per_round = 2 * FAST["rounds"]  # attempt and solution
    assert clock.hidden_calls == per_round * FAST["hidden_samples"]
    assert clock.idle_calls == per_round * FAST["idle_samples"]


# ------------------------------------------------------------ the verdict ---
@pytest.mark.parametrize(
    ("ms", "words"),
    [
        (2.0, "slower than the solution; see the hint"),
        (1.0, "as fast as the solution"),
        (0.5, "faster than the solution"),
    ],
)
def test_verdicts(ms, words):
    clock = FakeClock()
    result = _run(_axpy(clock, ms), clock)
    assert result.ratio == pytest.approx(1.0 / ms)
    assert words in result.verdict
    work = 3 * TINY["axpy"]["n"] * 4
    assert result.rate == pytest.approx(work / ms / 1e6)
    assert result.share == pytest.approx(result.rate / CEILING["value"])
    assert f"{100 * result.share:.0f} % of the copy probe" in result.verdict
    assert f"{result.ratio:.2f}x the course's solution" in result.verdict
    assert bool(result.hint) == (words.startswith("slower"))
    assert "verdict: " in result.report()


def test_thresholds_bracket_a_tie():
    assert AS_FAST < 1.0 < FASTER


def test_the_spread_is_half_the_interquartile_range():
    clock = FakeClock()
    # the warm-up, then one idle and one hidden call per round
    times = iter([1.0, 1.0, 1.0, 1.2, 1.2, 0.8, 0.8])

    def attempt(a, x, y):
        clock.spend(next(times))
        return a * x + y

    result = _run(attempt, clock, hidden_samples=1, idle_samples=1)
    assert result.median_ms == 1.0
    assert result.spread == pytest.approx((1.1 - 0.9) / 2)


# ---------------------------------------------- each exercise's spot check ---
@pytest.mark.parametrize("name", TIMED)
def test_a_correct_output_passes_and_a_stale_one_fails(name):
    bench = BENCHES[name]
    gen = torch.Generator().manual_seed(5)
    args = bench.make(TINY[name], bench.dtype, "cpu", gen)
    call = bench.call or (lambda f, a: f(*a))
    out = call(TORCH[name], args)
    assert mismatch(*bench.spot(args, out, gen), *bench.tol) is None
    bench.refill(args, gen)  # new inputs, the old output: a cached answer
    assert mismatch(*bench.spot(args, out, gen), *bench.tol) is not None


def test_mismatch():
    want = torch.tensor([1.0, math.inf, -math.inf, math.nan, 2.0])
    assert mismatch(want.clone(), want, 0.0, 0.0) is None
    got = want.clone()
    got[0] = math.nan
    assert "1 of 5 sampled values" in mismatch(got, want, 1e-3, 1e-3)
    got = want.clone()
    got[4] = 2.01
    assert mismatch(got, want, 1e-3, 1e-3) is not None
    assert mismatch(got, want, 0.0, 1e-2) is None


def test_an_exception_is_refused_with_its_text():
    clock = FakeClock()

    def attempt(a, x, y):
        raise ValueError("x must be small")

    result = _run(attempt, clock)
    assert result.refused == "the attempt raised ValueError: x must be small"


def test_a_result_autograd_cannot_differentiate_is_refused():
    clock = FakeClock()

    def timed(fn):
        def call(a, b):
            clock.spend(1.0)
            return fn(a, b)

        return call

    result = _run(
        timed(lambda a, b: _silu(a, b).detach()), clock, "silu_mul", timed(_silu)
    )
    assert "no tensor with a grad_fn" in result.refused


@pytest.mark.skipif(HAS_GPU, reason="the interpreter's CPU tensors: CPU machines")
@pytest.mark.parametrize("name", ["axpy", "colsum", "rmsnorm"])
def test_the_solution_and_the_slow_attempt_pass_under_the_interpreter(name):
    """The real files, loaded as the command line loads them (the interpreter
    on the CPU: values only; the fake clock times them)."""
    clock = FakeClock()
    function = registry()[name].function

    def timed(path):
        fn = _speed.load_function(path, function)

        def call(*args):
            clock.spend(1.0)
            return fn(*args)

        return call

    result = speed(
        name, timed(_slow_file(name)), timed(SOLUTIONS_DIR / f"{name}.py"),
        "cpu", clock=clock, ceiling=CEILING, size=TINY[name], rounds=1,
        hidden_samples=1, idle_samples=1,
    )  # fmt: skip
    assert result.refused is None and result.ratio == 1.0, result.report()


def test_a_wrong_shape_is_refused():
    clock = FakeClock()
    result = _run(lambda a, x, y: (a * x + y)[:-1], clock, solution=_axpy(clock))
    assert result.refused and "has shape" in result.refused


# ---------------------------------------------------------- command line ---
def test_the_command_line_needs_a_gpu(capsys, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    file = str(SOLUTIONS_DIR / "axpy.py")
    assert _speed.main(["axpy", file]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().out
    assert _speed.main(["axpy", file, "--quiet-without-gpu"]) == 0
    assert capsys.readouterr().out == ""
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert _speed.main(["axpy", file]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().out


def test_every_slow_fixture_names_an_exercise():
    names = {p.name.removesuffix("_slow.py") for p in SLOW.glob("*_slow.py")}
    assert names | SLOW_STARTERS == set(TIMED)
    assert all(_slow_file(name).is_file() for name in TIMED)


# -------------------------------------------------------------------- GPU ---
gpu = pytest.mark.gpu


def _gpu_speed(name, attempt_fn, solution_fn=None):
    function = registry()[name].function
    solution_fn = solution_fn or _speed.load_function(
        SOLUTIONS_DIR / f"{name}.py", function
    )
    return speed(name, attempt_fn, solution_fn, "cuda")


def _solution(name):
    return _speed.load_function(SOLUTIONS_DIR / f"{name}.py", registry()[name].function)


@gpu
@pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU")
@pytest.mark.parametrize("name", ["axpy", "rmsnorm", "sliding_window_attention"])
def test_gpu_a_slow_attempt_gets_another_verdict(name):
    fast = _gpu_speed(name, _solution(name))
    slow = _gpu_speed(
        name, _speed.load_function(_slow_file(name), registry()[name].function)
    )
    print(fast.report(), slow.report(), sep="\n")
    assert fast.refused is None and slow.refused is None
    assert AS_FAST <= fast.ratio < FASTER, fast.report()
    assert "as fast as the solution" in fast.verdict
    assert slow.ratio < AS_FAST and "slower than the solution" in slow.verdict
    assert 0 < fast.share < 1.3, fast.report()  # a share of a real probe


@gpu
@pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU")
def test_gpu_a_caching_attempt_is_refused():
    solution = _solution("axpy")
    cache = {}

    def cached(a, x, y):
        key = (x.data_ptr(), y.data_ptr())
        if key not in cache:
            cache[key] = solution(a, x, y)
        return cache[key]

    result = _gpu_speed("axpy", cached, solution)
    assert result.refused and result.verdict.startswith("refused:"), result.report()


@gpu
@pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU")
def test_gpu_work_on_another_stream_is_counted():
    solution = _solution("axpy")
    side = torch.cuda.Stream()

    def elsewhere(a, x, y):
        # after the inputs are ready, but the current stream never waits for
        # it: CUDA events on the current stream alone would see nothing
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            return solution(a, x, y)

    result = _gpu_speed("axpy", elsewhere, solution)
    print(result.report())
    assert result.refused is None, result.report()
    assert result.off_stream and "another stream" in result.verdict
    assert result.ratio < FASTER, result.report()


@gpu
@pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU")
def test_gpu_too_little_memory_is_said_clearly():
    solution = _solution("axpy")
    with pytest.raises(SpeedError, match="needs about .* GiB of GPU memory"):
        speed("axpy", solution, solution, "cuda", size={"n": 2**40})
