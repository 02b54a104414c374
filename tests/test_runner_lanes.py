"""The runner's notebook lanes and its wall-time call count, on the CPU.

The notebooks of a GPU run share ``NOTEBOOK_LANES`` lanes beside the tests;
these tests replace the notebook execution with a short sleep, so they check
the scheduling (each notebook once, several at a time, never more than the
lanes, a failure named and the rest still run), not Jupyter.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from triton_course.runner import cli
from triton_course.runner.measure import WALL_BUDGET_MS, RunnerError, wall_calls


class _FakeNotebooks:
    """Stands in for ``execute_notebook_isolated``: records who ran when."""

    def __init__(self, fail: set[str] = frozenset(), seconds: float = 0.15):
        self.fail, self.seconds = set(fail), seconds
        self.lock = threading.Lock()
        self.running = 0
        self.most_at_once = 0
        self.ran: list[str] = []

    def __call__(self, path: Path) -> str:
        with self.lock:
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        try:
            time.sleep(self.seconds)
            if path.name in self.fail:
                raise RuntimeError(f"cell 3 of {path.name} raised")
            return f"executed {path.name}"
        finally:
            with self.lock:
                self.running -= 1
                self.ran.append(path.name)


def _notebooks(n: int) -> list[Path]:
    return [Path(f"nb{i}.ipynb") for i in range(n)]


def test_every_notebook_runs_once_in_at_most_the_lanes_at_once(monkeypatch):
    fake = _FakeNotebooks()
    monkeypatch.setattr(cli, "execute_notebook_isolated", fake)
    notebooks, results = _notebooks(7), {}
    lanes = cli._notebook_lanes(notebooks, results)
    assert len(lanes) == cli.NOTEBOOK_LANES
    cli.run_concurrently(lanes, cli.PhaseTimes())
    assert sorted(fake.ran) == sorted(nb.name for nb in notebooks)
    assert set(results) == set(notebooks)
    assert all(results[nb] == f"executed {nb.name}" for nb in notebooks)
    # The lanes did overlap, and never ran more notebooks than there are lanes.
    assert 1 < fake.most_at_once <= cli.NOTEBOOK_LANES


def test_fewer_notebooks_than_lanes_get_one_lane_each(monkeypatch):
    monkeypatch.setattr(cli, "execute_notebook_isolated", _FakeNotebooks())
    lanes = cli._notebook_lanes(_notebooks(2), {})
    assert len(lanes) == 2
    assert cli._notebook_lanes(_notebooks(1), {})[0].name == "notebooks"


def test_a_failed_notebook_is_named_and_the_others_still_run(monkeypatch):
    fake = _FakeNotebooks(fail={"nb1.ipynb"})
    monkeypatch.setattr(cli, "execute_notebook_isolated", fake)
    notebooks = _notebooks(6)
    with pytest.raises(RunnerError) as failed:
        cli.run_concurrently(cli._notebook_lanes(notebooks, {}), cli.PhaseTimes())
    assert "notebook nb1.ipynb" in str(failed.value)
    assert "cell 3 of nb1.ipynb raised" in str(failed.value)
    # The failing lane stops; the other lanes take every notebook left.
    assert set(fake.ran) == {nb.name for nb in notebooks}


def test_wall_calls_keep_three_for_short_calls_and_one_for_long_ones():
    assert wall_calls(0.001, 0.01) == 200  # launch-bound: the cap
    assert wall_calls(0.5, 0.02) == int(WALL_BUDGET_MS / 0.5)
    assert wall_calls(WALL_BUDGET_MS / 3, 0.02) == 3
    assert wall_calls(WALL_BUDGET_MS / 2, 0.02) == 2
    assert wall_calls(WALL_BUDGET_MS, 0.02) == 1
    assert wall_calls(60.0, 0.05) == 1
    # A slow launch path counts like a slow kernel.
    assert wall_calls(0.001, WALL_BUDGET_MS) == 1
    counts = [wall_calls(g / 100, 0.01) for g in range(1, 2000)]
    assert counts == sorted(counts, reverse=True)  # never more calls for longer


def test_concurrent_phase_processes_compile_without_an_inductor_pool(
    tmp_path, monkeypatch, capsys
):
    # The tests lane: a check run by run_pytest sees one compile thread.
    monkeypatch.delenv("TORCHINDUCTOR_COMPILE_THREADS", raising=False)
    # (inherited by that pytest: without the installed plugins, pytest-notebook's
    # nbclient import among them, 5 CPU-seconds, it starts in half a second)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    (tmp_path / "test_env.py").write_text(
        "import os\n\ndef test_env():\n"
        "    assert os.environ['TORCHINDUCTOR_COMPILE_THREADS'] == '1'\n"
    )
    cli.run_pytest(tmp_path, [tmp_path / "test_env.py"], workers=1)
    # The notebook, capture and warm-up workers get the same environment.
    assert cli.worker_env()["TORCHINDUCTOR_COMPILE_THREADS"] == "1"
    # ...and a child of theirs reads it as Inductor's compile_threads.
    code = (
        "import torch._inductor.config as c, torch._inductor.async_compile as a\n"
        "print(a.get_compile_threads())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=cli.worker_env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert out[-1] == "1"
    # A value the maintainer set is kept.
    monkeypatch.setenv("TORCHINDUCTOR_COMPILE_THREADS", "4")
    assert cli.worker_env()["TORCHINDUCTOR_COMPILE_THREADS"] == "4"


class _Item:
    def __init__(self, name, heavy_mark=False, shared=None):
        """``shared``: (module, its module fixtures this item uses) of a
        module marked shared_setup."""
        self.name, self._heavy, self._shared = name, heavy_mark, shared
        self.nodeid = f"{shared[0] if shared else 'tests/test_x.py'}::{name}"
        if shared:
            defs = {f: [types.SimpleNamespace(scope="module")] for f in shared[1]}
            defs["tmp_path"] = [types.SimpleNamespace(scope="function")]
            self._fixtureinfo = types.SimpleNamespace(name2fixturedefs=defs)

    def get_closest_marker(self, name):
        if name == "compile_heavy":
            return object() if self._heavy else None
        return object() if name == "shared_setup" and self._shared else None


def test_compile_heavy_checks_start_one_per_worker():
    from conftest import heavy_first

    items = [_Item(f"test_light_{i}") for i in range(6)]
    items.insert(3, _Item("test_runs_as_a_script"))
    items.insert(5, _Item("test_autotuned", heavy_mark=True))
    items.append(_Item("test_runs_as_a_script[x]"))
    names = [i.name for i in heavy_first(items)]
    # xdist with --maxschedchunk=1 starts worker k on items 2k and 2k+1
    assert names[0::2][:3] == [
        "test_runs_as_a_script",
        "test_autotuned",
        "test_runs_as_a_script[x]",
    ]
    assert sorted(names) == sorted(i.name for i in items)  # nothing lost
    assert [n for n in names if n.startswith("test_light")] == [
        f"test_light_{i}" for i in range(6)
    ]


def test_a_shared_setup_is_computed_early_and_its_waiters_go_last():
    # one worker computes each once-per-run fixture early; the checks that
    # only read it come last, when it is there, instead of idling beside it
    from conftest import heavy_first

    a, b = "tests/test_a.py", "tests/test_b.py"
    items = [
        _Item("a1", shared=(a, {"facts"})),
        _Item("a2", shared=(a, {"facts"})),
        _Item("a3", shared=(a, {"facts", "other"})),
        _Item("light_0"),
        _Item("b1", shared=(b, {"facts"})),  # another module's own fixture
        _Item("a4", shared=(a, {"other"})),
        _Item("light_1"),
        _Item("heavy", heavy_mark=True),
    ]
    names = [i.name for i in heavy_first(items)]
    assert names == ["a1", "light_0", "a3", "light_1", "b1", "heavy", "a2", "a4"]


def test_the_runner_asks_xdist_for_one_item_at_a_time(monkeypatch):
    monkeypatch.setattr(cli.importlib.util, "find_spec", lambda name: object())
    cmd = cli.pytest_command(["tests/test_x.py"], 12)
    assert cmd[cmd.index("-n") + 1] == "12" and "--maxschedchunk=1" in cmd


def _waiting_lane(name: str, grace_s: float, ended: dict) -> cli.Lane:
    def job(stop):  # a warm-up that would compile for a minute
        stop.wait(60)
        ended[name] = time.monotonic()

    return cli.Lane(name, [cli.Job(name, job)], best_effort=True, grace_s=grace_s)


def test_a_warm_up_goes_on_for_its_grace_after_the_others_are_done():
    ended = {}

    def tests(stop):
        time.sleep(0.2)
        ended["tests"] = time.monotonic()

    lanes = [
        cli.Lane("tests", [cli.Job("tests", tests)]),
        _waiting_lane("warm-up-1", 1.0, ended),
        _waiting_lane("warm-up-2", 0.0, ended),
    ]
    times = cli.PhaseTimes()
    t0 = time.monotonic()
    cli.run_concurrently(lanes, times)
    assert time.monotonic() - t0 < 30
    assert 0.9 <= ended["warm-up-1"] - ended["tests"] < 10  # its grace, not more
    assert ended["warm-up-2"] - ended["tests"] < 0.9  # no grace: stopped at once
    notes = {name.strip(): note for name, _, note in times.lanes}
    assert notes["tests"] == ""
    assert "stopped after the others" in notes["warm-up-1"] == notes["warm-up-2"]


def test_a_failure_stops_the_warm_up_at_once_whatever_its_grace():
    ended = {}

    def failing(stop):
        time.sleep(0.2)
        raise RuntimeError("a check failed")

    def notebooks(stop):
        # a required lane still running after the failure: it ends once the
        # warm-up has (at once if stopped by the failure), or after 10 s
        deadline = time.monotonic() + 10
        while "warm-up-1" not in ended and time.monotonic() < deadline:
            time.sleep(0.01)
        ended["notebooks"] = time.monotonic()

    lanes = [
        cli.Lane("tests", [cli.Job("tests", failing)]),
        cli.Lane("notebooks", [cli.Job("notebooks", notebooks)]),
        _waiting_lane("warm-up-1", 30.0, ended),
    ]
    t0 = time.monotonic()
    with pytest.raises(RunnerError, match="a check failed"):
        cli.run_concurrently(lanes, cli.PhaseTimes())
    assert ended["warm-up-1"] - t0 < 2.5  # at once...
    assert ended["warm-up-1"] <= ended["notebooks"]  # ...before the notebooks ended


def test_the_warm_up_processes_share_the_benchmarks(tmp_path, monkeypatch):
    from triton_course.runner import worker

    assert worker._part("1/3") == (1, 3) and worker._part("0/1") == (0, 1)
    for bad in ("3/3", "x", "1/0", "-1/2"):
        with pytest.raises(SystemExit):
            worker._part(bad)
    # The runner starts WARM_UP_PROCESSES of them, part k of n each.
    seen = []
    monkeypatch.setattr(
        cli, "stream_command", lambda cmd, *a, **k: (seen.append(cmd), (0, []))[1]
    )
    stop = threading.Event()
    for k in range(cli.WARM_UP_PROCESSES):
        cli.warm_up_isolated(tmp_path, None, stop, part=(k, cli.WARM_UP_PROCESSES))
    parts = [cmd[cmd.index("--part") + 1] for cmd in seen]
    assert parts == [f"{k}/{cli.WARM_UP_PROCESSES}" for k in range(len(parts))]


def _timed_notebook(path: Path, seconds: float | None) -> Path:
    cells = [{"cell_type": "markdown", "metadata": {}, "source": "# x"}]
    if seconds is not None:  # as nbclient records a cell's execution
        start, end = "2026-11-25T12:00:00.000000Z", f"2026-11-25T12:{seconds:02.0f}:00Z"
        meta = {"iopub.execute_input": start, "shell.execute_reply": end}
        cells.append({"cell_type": "code", "metadata": {"execution": meta}})
    path.write_text(json.dumps({"cells": cells}), encoding="utf-8")
    return path


def test_the_notebooks_that_took_longest_last_time_start_first(tmp_path, monkeypatch):
    # minutes here, so the order cannot come from anything but the records
    short = _timed_notebook(tmp_path / "a_short.ipynb", 1)
    long = _timed_notebook(tmp_path / "b_long.ipynb", 9)
    unknown = _timed_notebook(tmp_path / "c_never_run.ipynb", None)
    middle = _timed_notebook(tmp_path / "d_middle.ipynb", 4)
    broken = tmp_path / "e_broken.ipynb"
    broken.write_text("{not json", encoding="utf-8")
    assert cli.last_run_seconds(long) == 9 * 60
    assert cli.last_run_seconds(unknown) == cli.last_run_seconds(broken) == 0
    started = []
    monkeypatch.setattr(cli, "NOTEBOOK_LANES", 1)  # one lane: the queue's order
    monkeypatch.setattr(
        cli, "execute_notebook_isolated", lambda nb: started.append(nb.name) or ""
    )
    notebooks = [short, long, unknown, middle, broken]
    cli.run_concurrently(cli._notebook_lanes(notebooks, {}), cli.PhaseTimes())
    assert started == [
        "b_long.ipynb",
        "d_middle.ipynb",
        "a_short.ipynb",
        "c_never_run.ipynb",
        "e_broken.ipynb",
    ]


# ------------------------------------------- timing cells, alone (#33) ---
class _FakeTimedNotebooks:
    """Stands in for ``execute_notebook_isolated``: each notebook's first part
    runs at once; its timing part (``finish``) records when it ran."""

    def __init__(self, seconds: float = 0.05):
        self.seconds = seconds
        self.lock = threading.Lock()
        self.untimed: dict[str, tuple[float, float]] = {}
        self.timed: dict[str, tuple[float, float]] = {}
        self.closed: list[str] = []

    def __call__(self, path: Path):
        t0 = time.monotonic()
        time.sleep(self.seconds)
        with self.lock:
            self.untimed[path.name] = (t0, time.monotonic())
        return _FakePaused(self, path)


class _FakePaused:
    def __init__(self, fake, path):
        self.fake, self.path, self.env = fake, path, None

    def finish(self, kernel_env, limit_s):
        t0 = time.monotonic()
        self.env = kernel_env
        time.sleep(self.fake.seconds)
        self.fake.timed[self.path.name] = (t0, time.monotonic())
        return f"timed {self.path.name} with {json.dumps(kernel_env)}"

    def close(self):
        self.fake.closed.append(self.path.name)


def _runner_repo(tmp_path: Path, notebooks: int) -> Path:
    from test_runner import copy_tiny_scale

    (tmp_path / "snippets").mkdir()
    copy_tiny_scale(tmp_path / "snippets")
    nb_dir = tmp_path / "notebooks"
    nb_dir.mkdir()
    for i in range(notebooks):
        (nb_dir / f"nb{i}.ipynb").write_text('{"cells": []}', encoding="utf-8")
    return tmp_path


def _fake_run(repo: Path, **kw):
    from test_runner import fake_env

    return cli.run(
        repo,
        repo / "data",
        repo / "plots",
        repo / "notebooks",
        env=fake_env(),
        check=kw.pop("check", lambda snippets: None),
        skip_notebooks=False,
        **kw,
    )


def test_timing_cells_run_after_the_benchmarks_one_notebook_at_a_time(
    tmp_path, monkeypatch
):
    repo = _runner_repo(tmp_path, 5)
    fake = _FakeTimedNotebooks()
    monkeypatch.setattr(cli, "execute_notebook_isolated", fake)
    benchmarks = []
    real = cli.measure_benchmark

    def measure(*args, **kwargs):
        t0 = time.monotonic()
        record = real(*args, **kwargs)
        benchmarks.append((t0, time.monotonic()))
        return record

    monkeypatch.setattr(cli, "measure_benchmark", measure)
    written = _fake_run(repo)
    assert benchmarks and len(fake.timed) == len(fake.untimed) == 5
    last_benchmark = max(end for _, end in benchmarks)
    first_benchmark = min(start for start, _ in benchmarks)
    # every untimed part ran in the concurrent phase, before any benchmark...
    assert all(end <= first_benchmark for _, end in fake.untimed.values())
    # ...no timing cell before the benchmarks ended...
    assert all(start >= last_benchmark for start, _ in fake.timed.values())
    # ...and never two notebooks' timing cells at once
    spans = sorted(fake.timed.values())
    for (_, a_end), (b_start, _) in zip(spans, spans[1:], strict=False):
        assert a_end <= b_start
    # the kernel is told the commit measured; what finish returned is stored
    stored = (repo / "notebooks" / "nb3.ipynb").read_text(encoding="utf-8")
    env = {cli.TIMED_ALONE_ENV: "000000000000"}  # fake_env's commit, 12 digits
    assert stored == f"timed nb3.ipynb with {json.dumps(env)}"
    assert repo / "notebooks" / "nb3.ipynb" in written


def test_a_failed_run_writes_no_notebook_and_leaves_none_waiting(tmp_path, monkeypatch):
    repo = _runner_repo(tmp_path, 3)
    before = {p.name: p.read_bytes() for p in (repo / "notebooks").iterdir()}
    fake = _FakeTimedNotebooks()
    monkeypatch.setattr(cli, "execute_notebook_isolated", fake)
    monkeypatch.setattr(cli, "NotebookProcess", _FakePaused)  # what is closed

    def failing_check(snippets):
        time.sleep(0.3)  # the notebooks have paused by now
        raise RunnerError("correctness checks failed (pytest exit 1)")

    with pytest.raises(RunnerError, match="correctness checks failed"):
        _fake_run(repo, check=failing_check)
    assert not fake.timed  # nothing timed after a failure...
    assert sorted(fake.closed) == sorted(before)  # ...and every worker ended
    after = {p.name: p.read_bytes() for p in (repo / "notebooks").iterdir()}
    assert after == before


def _tagged_notebook(path: Path, timed_source: str) -> Path:
    import nbformat

    doc = nbformat.v4.new_notebook()
    untimed = nbformat.v4.new_code_cell(
        "import os\nprint('untimed', os.environ.get('TRITON_COURSE_TIMED_ALONE'))"
    )
    timed = nbformat.v4.new_code_cell(timed_source)
    timed.metadata["tags"] = ["timing"]
    after = nbformat.v4.new_code_cell("print('after the timing cell')")
    doc.cells = [untimed, timed, after]
    doc.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    path.write_text(nbformat.writes(doc), encoding="utf-8")
    return path


def _gone(pgid: int) -> bool:
    import os

    for _ in range(50):
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def test_a_real_kernel_waits_before_its_timing_cells_and_runs_nothing_twice(
    tmp_path,
):
    marker = tmp_path / "timed.txt"
    source = (
        f"open({str(marker)!r}, 'a').write('ran\\n')\n"
        "print('timed', os.environ.get('TRITON_COURSE_TIMED_ALONE'))"
    )
    path = _tagged_notebook(tmp_path / "nb.ipynb", source)
    process = cli.execute_notebook_isolated(path)
    try:
        assert isinstance(process, cli.NotebookProcess)
        time.sleep(0.5)
        assert not marker.exists(), "the timing cell ran before the timed phase"
        assert process.proc.poll() is None and process.kernel_pgid
        text = process.finish({"TRITON_COURSE_TIMED_ALONE": "abc123"}, 60)
    finally:
        process.close()
    cells = json.loads(text)["cells"]
    printed = ["".join(o["text"]) for c in cells for o in c["outputs"]]
    assert printed == ["untimed None\n", "timed abc123\n", "after the timing cell\n"]
    assert [c["execution_count"] for c in cells] == [1, 2, 3]
    assert marker.read_text() == "ran\n"  # once
    assert _gone(process.kernel_pgid)


def test_a_hung_timing_cell_is_killed_with_its_kernel(tmp_path):
    path = _tagged_notebook(tmp_path / "hung.ipynb", "import time\ntime.sleep(600)")
    process = cli.execute_notebook_isolated(path)
    try:
        t0 = time.monotonic()
        with pytest.raises(RunnerError, match=r"hung\.ipynb: its timing cells ran"):
            process.finish({}, limit_s=1)  # the cell sleeps 600 s
        assert time.monotonic() - t0 < 30
    finally:
        process.close()
    assert process.proc.poll() is not None and _gone(process.kernel_pgid)


def test_a_waiting_notebook_closed_by_a_failed_run_ends_with_its_kernel(tmp_path):
    marker = tmp_path / "timed.txt"
    path = _tagged_notebook(tmp_path / "nb.ipynb", f"open({str(marker)!r}, 'w')")
    process = cli.execute_notebook_isolated(path)
    pgid = process.kernel_pgid
    process.close()
    assert process.proc.poll() is not None and _gone(pgid)
    assert not marker.exists()


# A notebook without timing cells is executed whole at once, its text
# returned: test_runner.py's test_notebooks_are_executed_and_a_failing_one_…
# checks it on the real worker and kernel it starts anyway.


def test_the_queue_order_counts_only_the_cells_before_the_timing_cells(tmp_path):
    def cell(start_s, end_s, tags=()):
        stamp = "2026-11-25T12:00:{:02d}.000000Z"
        run = {
            "iopub.execute_input": stamp.format(start_s),
            "shell.execute_reply": stamp.format(end_s),
        }
        return {"cell_type": "code", "metadata": {"execution": run, "tags": tags}}

    # 2 s + 3 s before the timing cell; the wait (5 s -> 40 s) and the
    # timing cell itself (40 s -> 55 s) are not the concurrent phase's
    cells = [cell(0, 2), cell(2, 5), cell(40, 55, ["timing"]), cell(55, 56)]
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": cells}), encoding="utf-8")
    assert cli.last_run_seconds(path) == 5.0


# ------------------------------------------------ the GPU test lane (#33) ---
def test_the_gpu_lane_runs_every_compile_only_module_and_the_snippet_scripts(
    tmp_path,
):
    tests = tmp_path / "tests"
    tests.mkdir()
    modules = {
        "test_a.py": "def test_a(): pass\n",  # a snippet's own module
        "test_gpu_only.py": "@pytest.mark.gpu\n",
        "test_compiles.py": "from conftest import compile_in_subprocess\n",
        "test_targets.py": "from triton.backends.compiler import GPUTarget\n",
        "test_excerpts_like.py": "args = ['-m', 'triton_course.excerpts']\n",
        "test_snippet_scripts.py": "def test_runs(): pass\n",
        "test_site.py": "def test_site(): pass\n",  # needs mkdocs: left out
        "test_runner.py": "compile_in_subprocess  # CPU-only by design\n",
        "test_runner_lanes.py": "GPUTarget  # this module: CPU-only too\n",
    }
    for name, text in modules.items():
        (tests / name).write_text(text, encoding="utf-8")
    picked = {p.name for p in cli.select_tests(tests, [Path("snippets/a.py")])}
    assert picked == set(modules) - {"test_site.py", *cli.GPU_SKIPPED_TESTS}
    # --only SNIPPET: that snippet's module alone
    only = cli.select_tests(tests, [Path("snippets/a.py")], gpu_marked=False)
    assert [p.name for p in only] == ["test_a.py"]
    # the real tests: every module that compiles for a GPU target is in
    real = {p.name for p in cli.select_tests(REPO_ROOT / "tests", [])}
    for name in (
        "test_compiler_claims.py",
        "test_module_claims.py",
        "test_series_claims.py",
        "test_home_reference_claims.py",
        "test_chapter_03_claims.py",
        "test_excerpts.py",
    ):
        assert name in real, name
    for path in (REPO_ROOT / "tests").glob("test_*.py"):
        text = path.read_text(encoding="utf-8")
        if ("GPUTarget" in text or "compile_in_subprocess" in text) and (
            path.name not in cli.GPU_SKIPPED_TESTS
        ):
            assert path.name in real, path.name
