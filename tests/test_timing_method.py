"""The runner's timing method (issue #13): interleaved rounds, spreads,
confirmed autotuning, ``runner compare``, format-1 data refused.

CPU tests use a fake timer; the ``gpu`` tests check the real timer on a GPU
(the runner runs them)."""

from __future__ import annotations

import copy
import json

import pytest
from test_measured_hook import fixture_doc, format_1_doc

from triton_course import timings as T
from triton_course.runner import cli
from triton_course.runner import compare as C
from triton_course.runner import measure as M


# ------------------------------------------------------------ statistics ---
def test_quantile_matches_numpy_linear_interpolation():
    values = [5.0, 1.0, 4.0, 2.0, 3.0, 10.0]
    assert T.quantile(values, 0.5) == pytest.approx(3.5)
    assert T.quantile(values, 0.25) == pytest.approx(2.25)
    assert T.quantile(values, 0.75) == pytest.approx(4.75)
    assert T.quantile([7.0], 0.25) == 7.0
    with pytest.raises(ValueError):
        T.quantile([], 0.5)


def test_paired_ratio_is_taken_round_by_round():
    # Both contenders slow down together in round 3 (a clock drop): the
    # ratio does not move, so its interval is only the ±3 % floor.
    row = {
        "results": {
            "Triton": {"rounds_ms": [1.0, 1.0, 2.0, 1.0, 1.0]},
            "cuBLAS": {"rounds_ms": [0.5, 0.5, 1.0, 0.5, 0.5]},
        }
    }
    spread = T.paired_ratio(row, "cuBLAS")
    assert spread.median == pytest.approx(0.5)
    assert spread.low == pytest.approx(0.5 * 0.97)
    assert spread.high == pytest.approx(0.5 * 1.03)
    assert T.paired_ratio(row, "absent") is None


@pytest.mark.parametrize(
    "low, high, target, expected",
    [
        (0.95, 1.05, 0.9, "met"),
        (0.95, 1.05, 1.1, "missed"),
        (0.95, 1.05, 1.0, "too close to call"),
        (0.95, 1.05, 0.95, "met"),
    ],
)
def test_verdict_is_three_way(low, high, target, expected):
    assert T.verdict(T.Spread(1.0, low, high), target) == expected


# ------------------------------------------------------------- the rounds ---
def test_rotation_puts_each_contender_first_in_turn():
    names = ["Triton", "eager", "compile"]
    firsts = [M.rotation(names, r)[0] for r in range(6)]
    assert firsts == names + names
    assert sorted(M.rotation(names, 1)) == sorted(names)


def _env(order: list, rounds=4, fail=None, tuners=()):
    def timer(fn, work):
        name = fn()
        order.append(name)
        if name == fail:
            raise RuntimeError("peer broke in a round")
        return {"gpu_ms": 1.0, "wall_ms": 3.0, "launch_hidden": True}

    return M.Environment(
        device="cpu",
        gpu={},
        provenance={},
        timer=timer,
        rooflines=None,
        vendor_peaks={},
        rounds=rounds,
        autotuners=lambda: list(tuners),
        gpu_state=lambda: {"sm_mhz": 1000},
    )


def test_contenders_are_timed_in_interleaved_rotating_rounds():
    order: list = []
    fns = {n: (lambda n=n: n) for n in ("Triton", "eager", "compile")}
    out = M._interleaved_rounds(fns, 1, _env(order, rounds=3), "row", {})
    assert {k: len(v) for k, v in out.items()} == {
        "Triton": 3,
        "eager": 3,
        "compile": 3,
    }
    assert order == [  # (the untimed warm-up calls do not go through the timer)
        "Triton", "eager", "compile",
        "eager", "compile", "Triton",
        "compile", "Triton", "eager",
    ]  # fmt: skip


def test_a_peer_failing_in_a_round_is_dropped_and_recorded():
    order: list = []
    absent: dict = {}
    fns = {n: (lambda n=n: n) for n in ("Triton", "eager")}
    out = M._interleaved_rounds(fns, 1, _env(order, fail="eager"), "row", absent)
    assert list(out) == ["Triton"] and len(out["Triton"]) == 4
    assert "peer broke" in absent["eager"]


def test_triton_failing_in_a_round_stops_the_run():
    fns = {"Triton": lambda: "Triton"}
    with pytest.raises(M.RunnerError, match="Triton failed"):
        M._interleaved_rounds(fns, 1, _env([], fail="Triton"), "row", {})


def test_summarise_stores_rounds_quartiles_wall_time_and_rate():
    rounds = [
        {"gpu_ms": t, "wall_ms": 5 * t, "launch_hidden": i != 2}
        for i, t in enumerate([1.0, 2.0, 3.0, 4.0, 5.0])
    ]
    res = M.summarise(rounds, work=3e6, metric="bandwidth")
    assert res["rounds_ms"] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert (res["q25_ms"], res["median_ms"], res["q75_ms"]) == (2.0, 3.0, 4.0)
    assert res["wall_ms"] == 15.0
    assert res["launch_hidden"] is False  # one round did not hide it
    assert res["rate"] == pytest.approx(1.0)  # 3e6 bytes / 3 ms = 1 GB/s


# ------------------------------------------------------------- autotuning ---
class FakeTuner:
    """Enough of triton's Autotuner: a cache, best_config, and a choice that
    follows a script (one entry per tuning)."""

    def __init__(self, script):
        self.script = list(script)
        self.cache: dict = {}
        self.best_config = None
        self.tunings = 0

    def __call__(self):
        if ("key",) not in self.cache:
            self.tunings += 1
            self.cache[("key",)] = self.script.pop(0)
        self.best_config = self.cache[("key",)]


@pytest.mark.parametrize(
    "script, kept, agreed, tunings",
    [
        (["A", "A"], "A", True, 2),
        (["A", "B", "B"], "B", False, 3),
        (["A", "B", "A"], "A", False, 3),
        (["A", "B", "C"], "C", False, 3),  # no majority: the last one
    ],
)
def test_autotuning_is_repeated_until_a_choice_is_made_twice(
    script, kept, agreed, tunings
):
    tuner = FakeTuner(script)
    env = _env([], tuners=[("matmul_kernel", tuner)])
    out = M.tune_confirmed(tuner, env.autotuners(), env)
    assert out["matmul_kernel"]["config"] == kept
    assert out["matmul_kernel"]["agreed"] is agreed
    assert len(out["matmul_kernel"]["tunings"]) == tunings == tuner.tunings
    assert tuner.cache == {("key",): kept}  # the timed calls use the kept one


def test_a_call_that_uses_no_autotuner_records_nothing():
    unused = FakeTuner(["A"])
    env = _env([], tuners=[("other_kernel", unused)])
    assert M.tune_confirmed(lambda: None, env.autotuners(), env) == {}


# ---------------------------------------------------------------- compare ---
def _write(tmp_path, name, doc):
    path = tmp_path / name / f"{doc['gpu']['slug']}.json"
    path.parent.mkdir()
    path.write_text(json.dumps(doc))
    return path


def _scaled(doc, peer, factor):
    """A copy of doc with one contender's times scaled by factor."""
    doc = copy.deepcopy(doc)
    for row in doc["benchmarks"]["vector_add"]["rows"]:
        res = row["results"][peer]
        for key in ("median_ms", "q25_ms", "q75_ms", "wall_ms"):
            res[key] *= factor
        res["rounds_ms"] = [t * factor for t in res["rounds_ms"]]
        res["rate"] /= factor
    return doc


@pytest.mark.parametrize(
    "factor, kind",
    [(1.0, "same"), (1.02, "same"), (0.8, "faster"), (1.25, "slower")],
)
def test_compare_classifies_each_ratio(tmp_path, factor, kind):
    old = fixture_doc()
    new = _scaled(old, "Triton", factor)  # Triton's time × factor
    moves = C.compare(
        T.validate(old, _write(tmp_path, "old", old)),
        T.validate(new, _write(tmp_path, "new", new)),
    )
    assert len(moves) == 2 and {m.kind for m in moves} == {kind}


def test_compare_is_undecided_when_a_run_is_noisy(tmp_path):
    old = fixture_doc()
    new = fixture_doc(jitter=(-0.4, -0.2, 0.0, 0.2, 0.4))
    moves = C.compare(
        T.validate(old, _write(tmp_path, "old", old)),
        T.validate(new, _write(tmp_path, "new", new)),
    )
    assert {m.kind for m in moves} == {"undecided"}


def test_compare_command_prints_a_summary_and_the_largest_moves(tmp_path, capsys):
    old = _write(tmp_path, "old", fixture_doc())
    new = _write(tmp_path, "new", _scaled(fixture_doc(), "PyTorch eager", 2.0))
    assert cli.main(["compare", str(old), str(new)]) == 0
    out = capsys.readouterr().out
    assert "2 Triton/peer ratios: 2 faster" in out
    assert "within ±5 %" in out and "0/2 (0.0 %)" in out
    assert "largest moves" in out and "+100.0 %" in out


def test_compare_refuses_a_format_1_file_naming_it(tmp_path, capsys):
    old = _write(tmp_path, "old", format_1_doc())
    new = _write(tmp_path, "new", fixture_doc())
    assert cli.main(["compare", str(old), str(new)]) == 1
    err = capsys.readouterr().err
    assert str(old) in err and "format_version 1" in err and "runner run" in err


def test_compare_of_a_missing_file_is_a_clear_error(tmp_path, capsys):
    good = _write(tmp_path, "new", fixture_doc())
    assert cli.main(["compare", str(tmp_path / "nope.json"), str(good)]) == 1
    assert "nope.json: file not found" in capsys.readouterr().err


# ----------------------------------------------------- format-1 data files ---
def test_a_format_1_file_is_refused_and_named(tmp_path):
    path = _write(tmp_path, "old", format_1_doc())
    with pytest.raises(T.TimingDataError) as err:
        T.load_file(path)
    assert str(path) in str(err.value) and "format_version 1" in str(err.value)
    assert "python -m triton_course.runner run" in str(err.value)
    with pytest.raises(T.TimingDataError, match="format_version 1"):
        T.load_dir(path.parent)


def test_the_runner_never_writes_format_1():
    with pytest.raises(T.TimingDataError, match="format_version 1"):
        T.validate(format_1_doc(), __import__("pathlib").Path("fixture-gpu-a.json"))


# -------------------------------------------------------------- on a GPU ---
@pytest.mark.gpu
def test_the_gpu_timer_hides_the_launch_path_and_measures_the_gpu(monkeypatch):
    import torch

    # The runner times alone; this test shares 16 cores with a dozen test
    # workers, the notebooks and the warm-up, and there an enqueue can be
    # preempted for longer than the runner's sleep of a few tens of µs (on
    # an H100 in issue #25's runs, every round). With a 5 ms sleep the
    # mechanism is tested, not the machine's load.
    monkeypatch.setattr(M, "MIN_SLEEP_US", 5000.0)

    timer = M.CudaTimer(1500)  # cycles per µs: the sleep below is 1-2 ms
    x = torch.empty(1, device="cuda")

    def tiny():  # far less GPU work than Python launch cost
        x.add_(1)

    res = timer.round(tiny)
    assert res["launch_hidden"] is True, res
    # a one-element add takes a few µs of GPU time (the events around one
    # call count their own few µs too: on an H100 this can exceed the
    # back-to-back cost of a call, so the two are not compared)
    assert 0 < res["gpu_ms"] < 0.05
    # wall_ms (back-to-back calls, timed by events on the GPU) is not checked
    # against the launch path here: with other processes on the GPU, kernels
    # queue up behind their work and then run back to back (an H100 in issue
    # #25: 2.2 µs a call against 10.9 µs of Python enqueue). The runner times
    # alone, where the premise holds.
    assert res["wall_ms"] > 0
    # a known amount of GPU work: 2 ms of sleep at the timer's clock estimate
    cycles = int(2000 * timer.cycles_per_us)
    slept = timer.round(lambda: torch.cuda._sleep(cycles))["gpu_ms"]
    assert 0.5 < slept < 4.0


def test_a_rows_calls_are_sized_once_and_every_round_takes_its_samples():
    # The sleep and the sample count come from the first round's enqueue time
    # and probe; later rounds of the same call only take samples (the
    # attention rows' eager peer spent most of its time re-sizing itself).
    import weakref

    timer = object.__new__(M.CudaTimer)  # no CUDA here: the GPU parts are stubs
    timer._plans = weakref.WeakKeyDictionary()
    asked = {"host": 0, "samples": []}

    def host_ms(fn):
        asked["host"] += 1
        return 0.01

    def gpu_samples(fn, n, sleep_us):
        asked["samples"].append(n)
        return [2.0] * n, True

    timer._host_ms, timer.gpu_samples = host_ms, gpu_samples
    timer.wall_ms = lambda fn, n: 2.0

    def call():
        pass

    rounds = [timer.round(call) for _ in range(M.ROUNDS)]
    assert asked["host"] == 2  # two enqueue timings, once
    n = asked["samples"][1]
    assert asked["samples"] == [1] + [n] * M.ROUNDS  # one probe, then samples
    per_sample = 2.0 + M.MIN_SLEEP_US / 1e3 + 0.1  # the probe, sleep and flush
    assert n == int(M.ROUND_BUDGET_MS / per_sample) > 1
    assert all(r["gpu_ms"] == 2.0 and r["launch_hidden"] for r in rounds)

    def other():
        pass

    timer.round(other)  # another call of the row: sized on its own
    assert asked["host"] == 4 and asked["samples"][-2:] == [1, n]
