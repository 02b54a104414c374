"""The stored notebooks' timing outputs against the run's own data (#33).

The GPU runner executes each notebook's timing cells (tagged ``timing`` by
the notebook builder) after the benchmarks, alone on the GPU, and stores the
notebooks with the data file of the same run. Each timing cell times rows of
a benchmark with ``triton.testing.do_bench`` and prints, first, the GPU and
the conditions (``timing on GPU (measured by the course's GPU runner with
nothing else on the GPU, commit C)``), then a line per contender; each peer's
line ends with ``[bench=B size=k=v,... dtype=D Triton/PEER=R]``.

Each such ratio is compared with the same ratio in the data file of the GPU
the cell names (``timings.paired_ratio``: the interquartile range of the
round-by-round ratios, widened to ±MIN_REL_HALF_WIDTH), widened once more by
TIMER_ALLOWANCE for the different timer. Ratios, not times: both timers flush
the L2 cache before every call and time the GPU's work, but do_bench's
median of one contender's calls is taken in a window of its own, not
interleaved round by round with the others', and the notebook's autotuners
choose their configs in the notebook's process, among near-equal
candidates; a ratio of two such times moves by a few per cent where each
time alone moves with the clock. 5 % covers that and no more: the committed
under-load outputs (0.56x cuBLAS where the run had 0.98x; LayerNorm 0.83x
eager where it had 1.04x) are 20-43 % off and fail.

Nothing passes by having nothing to compare: a notebook executed on a GPU
must have a matching ratio in every timing cell that does not say it skipped
itself, and at least one in all; a notebook executed on the CPU (its set-up
cell says so) is reported as skipped, not passed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import REPO_ROOT

from triton_course import notebooks as nb
from triton_course import timings as T
from triton_course.runner import discovery as D

NOTEBOOKS = sorted((REPO_ROOT / "docs" / "notebooks").glob("*.ipynb"))
DATA_DIR = REPO_ROOT / "data" / "timings"
TIMER_ALLOWANCE = 0.05  # relative to the run's median ratio: see the docstring
RUNNER_WORDS = "measured by the course's GPU runner with nothing else on the GPU"
HEADER = re.compile(r"^timing on (?P<gpu>.+?) \((?P<where>.+)\)$", re.M)
COMMIT = re.compile(r", commit (?P<commit>[0-9a-f]+)$")
TAIL = re.compile(
    r"\[bench=(?P<bench>\S+) size=(?P<size>\S+) dtype=(?P<dtype>\S+) "
    r"Triton/(?P<peer>[^=\]]+)=(?P<ratio>[0-9.]+)\]"
)
SKIPPED = re.compile(r"^timing: [^\n]*skipped", re.M)


def _text(cell: dict) -> str:
    return "".join(
        "".join(o.get("text", ""))
        for o in cell.get("outputs", [])
        if o.get("output_type") == "stream" and o.get("name") == "stdout"
    )


def ran_on_the_cpu(doc: dict) -> bool:
    """The set-up cell (the first code cell) says where the notebook ran."""
    first = next(c for c in doc["cells"] if c["cell_type"] == "code")
    return "running on: the CPU" in _text(first)


def timing_cells(doc: dict) -> list[tuple[int, dict]]:
    return [
        (i, c) for i, c in enumerate(doc["cells"]) if nb.TIMING_TAG in nb.cell_tags(c)
    ]


def _size(text: str) -> dict:
    return {k: int(v) for k, v in (item.split("=", 1) for item in text.split(","))}


def check_notebook(name: str, doc: dict, runs: dict) -> tuple[str, list[str]]:
    """("cpu" | "gpu", problems) for one executed notebook; ``runs`` maps a
    GPU's name to its loaded data file (``timings.GpuTimings``)."""
    cells = timing_cells(doc)
    if not cells:
        return "gpu", [f"{name}: no timing cell"]
    if ran_on_the_cpu(doc):
        return "cpu", []
    problems, matched = [], 0
    for index, cell in cells:
        where = f"{name} cell {index}"
        text = _text(cell)
        header = HEADER.search(text)
        if not header:
            problems.append(f"{where}: no 'timing on GPU (...)' line in {text!r}")
            continue
        if not header["where"].startswith(RUNNER_WORDS):
            problems.append(f"{where}: not timed alone by the runner: {header[0]!r}")
            continue
        run = runs.get(header["gpu"])
        if run is None:
            problems.append(f"{where}: no data file for the GPU {header['gpu']!r}")
            continue
        commit = COMMIT.search(header["where"])
        tails = list(TAIL.finditer(text))
        if not tails and not SKIPPED.search(text):
            problems.append(f"{where}: a timing cell with no ratio to compare")
        for tail in tails:
            found = _compare(tail, run, commit["commit"] if commit else None)
            if found:
                problems.append(f"{where}: {found}")
            else:
                matched += 1
    if not matched and not problems:
        problems.append(f"{name}: executed on a GPU, but no timing output matched")
    return "gpu", problems


def _compare(tail: re.Match, run, commit: str | None) -> str | None:
    """Why this ratio disagrees with the run's data, or None if it agrees."""
    label = tail[0]
    bench = run.benchmarks.get(tail["bench"])
    if bench is None:
        return f"{label}: benchmark not in the data file"
    if commit is None or not bench["provenance"]["commit"].startswith(commit):
        return (
            f"{label}: timed at commit {commit}, the data file's record at "
            f"{bench['provenance']['commit'][:12]}: not the same run"
        )
    size = _size(tail["size"])
    rows = [
        r for r in bench["rows"] if r["size"] == size and r["dtype"] == tail["dtype"]
    ]
    if not rows:
        return f"{label}: no such row in the data file"
    spread = T.paired_ratio(rows[0], tail["peer"])
    if spread is None:
        return f"{label}: the row has no result for {tail['peer']!r}"
    ratio, slack = float(tail["ratio"]), TIMER_ALLOWANCE * spread.median
    if not spread.low - slack <= ratio <= spread.high + slack:
        return (
            f"{label}: the run measured {spread.median:.3f} "
            f"[{spread.low:.3f}, {spread.high:.3f}] (±{TIMER_ALLOWANCE:.0%} "
            "allowed for the timer): timed under load, or a different row?"
        )
    return None


def _runs(data_dir: Path) -> dict:
    files = T.load_dir(data_dir) if data_dir.is_dir() else []
    return {f.gpu["name"]: f for f in files}


# ------------------------------------------------------ the stored notebooks ---
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_stored_timings_agree_with_the_runs_own_data(path):
    doc = json.loads(path.read_text(encoding="utf-8"))
    kind, problems = check_notebook(path.stem, doc, _runs(DATA_DIR))
    if kind == "cpu":
        pytest.skip(f"{path.name} was executed on the CPU: its timing cells skipped")
    assert not problems, "\n".join(problems)


def test_every_cell_that_times_is_a_timing_cell():
    # An untagged cell would be timed in the concurrent phase, under load;
    # one after the first timing cell runs in the timed phase, alone (the
    # runner's first_timing_cell), as a script's main that times does.
    for recipe in nb.recipes():
        timed_phase = False
        for cell in nb.cells_from_recipe(recipe):
            timing = nb.TIMING_TAG in cell.get("tags", [])
            timed_phase = timed_phase or timing
            source = cell["source"]
            if "do_bench(" in source and "def time_row" not in source:
                why = f"{recipe.name}: an untagged cell times: {source[:80]}"
                assert timed_phase, why
            if "time_row(" in source and "def time_row" not in source:
                assert timing, f"{recipe.name}: an untagged cell times: {source[:80]}"
            if timing:
                assert "timing_header()" in source, f"{recipe.name}: {source[:80]}"


def test_every_timing_cell_names_a_benchmark_of_its_snippets():
    known = set()
    for path in D.snippet_files(REPO_ROOT / "snippets"):
        known |= set(D.static_names(path)[0])
    timed = 0
    for recipe in nb.recipes():
        for cell in nb.cells_from_recipe(recipe):
            if nb.TIMING_TAG in cell.get("tags", []):
                source = cell["source"]
                # time_row("bench", ...), or a table of names it loops over
                called = set(re.findall(r'time_row\(\s*"(\w+)"', source))
                named = set(re.findall(r'"(\w+)"', source)) & known
                assert called <= known, f"{recipe.name}: {called - known}"
                assert named, f"{recipe.name}: a timing cell names no benchmark"
                timed += 1
    assert timed >= len(nb.recipes())  # every notebook times something


# ----------------------------------------------- the checker, on fixtures ---
def _row(size, dtype, triton_ms, peer_ms, peer="cuBLAS"):
    return {
        "size": size,
        "dtype": dtype,
        "results": {
            "Triton": {"rounds_ms": triton_ms},
            peer: {"rounds_ms": peer_ms},
        },
    }


SIZE = {"M": 8192, "N": 8192, "K": 8192}
# The run: cuBLAS/Triton round by round 0.97 .. 0.99 (Triton 0.98x cuBLAS).
RUN = {
    "NVIDIA H100 80GB HBM3": SimpleNamespace(
        benchmarks={
            "matmul": {
                "provenance": {"commit": "1d6a1bb" + "0" * 33},
                "rows": [
                    _row(
                        SIZE,
                        "float16",
                        [1.00, 1.00, 1.00, 1.00, 1.00],
                        [0.97, 0.975, 0.98, 0.985, 0.99],
                    )
                ],
            }
        }
    )
}
ALONE = (
    "timing on NVIDIA H100 80GB HBM3 (measured by the course's GPU runner with "
    "nothing else on the GPU, commit 1d6a1bb00000)\n"
)


def _doc(timing_text: str, where: str = "NVIDIA H100 80GB HBM3") -> dict:
    def code(text, tags=()):
        cell = {"cell_type": "code", "metadata": {}, "source": "x"}
        cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": text}]
        if tags:
            cell["metadata"]["tags"] = list(tags)
        return cell

    return {
        "cells": [
            code(f"running on: {where}, compute capability 9.0\n"),
            code(timing_text, tags=[nb.TIMING_TAG]),
        ]
    }


def _tail(ratio: float, peer="cuBLAS", size="M=8192,N=8192,K=8192") -> str:
    return (
        f"timing: matmul {size} float16 {peer}: 1.5 ms, 700 TFLOP/s; "
        f"Triton/{peer} = {ratio:.2f} "
        f"[bench=matmul size={size} dtype=float16 Triton/{peer}={ratio:.3f}]\n"
    )


def test_a_ratio_within_the_runs_spread_agrees():
    for ratio in (0.98, 0.96, 1.02):
        assert check_notebook("nb", _doc(ALONE + _tail(ratio)), RUN) == ("gpu", [])


def test_the_ratios_timed_under_load_fail():
    # the committed tiled-GEMM notebook: 0.56x cuBLAS where the run had 0.98x
    kind, problems = check_notebook("nb", _doc(ALONE + _tail(0.56)), RUN)
    assert kind == "gpu" and "timed under load" in problems[0]
    # just outside: the run's interval [0.951, 1.009] plus 5 % of 0.98
    assert check_notebook("nb", _doc(ALONE + _tail(0.90)), RUN)[1]
    assert check_notebook("nb", _doc(ALONE + _tail(1.06)), RUN)[1]


def test_nothing_passes_by_having_nothing_to_compare():
    # a GPU notebook whose timing cell printed no ratio at all
    _, problems = check_notebook("nb", _doc(ALONE + "timing: 1.5 ms\n"), RUN)
    assert "no ratio to compare" in problems[0]
    # ...or no output (not executed since its timing cell changed)
    _, problems = check_notebook("nb", _doc(""), RUN)
    assert "no 'timing on GPU" in problems[0]
    # a cell that skipped itself on this GPU, and nothing else: still a failure
    skipped = ALONE + "timing: skipped, the kernel is written for Hopper\n"
    _, problems = check_notebook("nb", _doc(skipped), RUN)
    assert "no timing output matched" in problems[0]
    # a CPU notebook is told apart, not passed as a GPU one
    cpu = _doc("timing: skipped, no GPU\n", where="the CPU, in Triton's interpreter")
    assert check_notebook("nb", cpu, RUN) == ("cpu", [])


def test_the_output_must_say_the_runner_timed_it_alone_on_a_known_gpu():
    colab = "timing on Tesla T4 (this runtime's GPU: anything else ...)\n"
    _, problems = check_notebook("nb", _doc(colab + _tail(0.98)), RUN)
    assert "not timed alone by the runner" in problems[0]
    other = ALONE.replace("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB")
    _, problems = check_notebook("nb", _doc(other + _tail(0.98)), RUN)
    assert "no data file for the GPU" in problems[0]


def test_a_ratio_must_match_a_row_of_the_same_run():
    cases = {
        "no such row": _tail(0.98, size="M=4096,N=4096,K=4096"),
        "has no result for": _tail(0.98, peer="torch.compile"),
        "not the same run": None,
    }
    for why, tail in cases.items():
        text = ALONE + tail if tail else ALONE.replace("1d6a1bb", "abcdef0") + _tail(1)
        _, problems = check_notebook("nb", _doc(text), RUN)
        assert why in problems[0], problems
