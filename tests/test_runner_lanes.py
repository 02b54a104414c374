"""The runner's notebook lanes and its wall-time call count, on the CPU.

The notebooks of a GPU run share ``NOTEBOOK_LANES`` lanes beside the tests;
these tests replace the notebook execution with a short sleep, so they check
the scheduling (each notebook once, several at a time, never more than the
lanes, a failure named and the rest still run), not Jupyter.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

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
