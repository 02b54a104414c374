"""``python -m triton_course.runner run|stale``: check, time, publish; or audit.

``run`` is all-or-nothing: every output (data file, plots, executed
notebooks) is staged in memory and written only after every check, notebook,
Triton timing and capture has succeeded, each file by an atomic rename.

It runs in two phases. First, at the same time and each in its own process:
the GPU tests, the notebooks up to their first timing cell, the untimed
captures and a compile warm-up of every benchmark; nothing there is timed.
Then, with nothing else on the GPU: the rooflines, every benchmark, the
captures that time or count something, and the notebooks' timing cells, one
notebook at a time, each in the kernel that ran its first cells.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from triton_course import dram_bytes as DB
from triton_course import timings as T
from triton_course.notebooks import TIMING_TAG
from triton_course.runner import discovery as D
from triton_course.runner import plots as P
from triton_course.runner.measure import (
    Environment,
    RunnerError,
    cuda_environment,
    log,
    measure_benchmark,
    run_capture,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
# Test modules the GPU run leaves out: they need tools the GPU image lacks
# (mkdocs, Chromium, zizmor, pytest-notebook) or test the runner itself on CPU;
# test_exercise_speed.py times kernels and allocates gigabytes, so it must not
# share the GPU with the concurrent checks (run it alone: `pytest
# tests/test_exercise_speed.py -m gpu`).
GPU_SKIPPED_TESTS = ("test_runner.py", "test_runner_lanes.py", "test_workflows.py",
                     "test_exercise_speed.py")  # fmt: skip
# Test modules the GPU run adds to the snippets' own: every module that
# compiles kernels for GPU targets without a GPU (triton.compile of an
# ASTSource for a GPUTarget: directly, through conftest's compile_in_subprocess
# or through the excerpts generator), so that the GPU image's triton checks
# them as well as the CPU tests' (a module naming any of COMPILE_ONLY_MARKERS),
# and the module that runs every snippet as a script.
COMPILE_ONLY_MARKERS = (
    "compile_in_subprocess",
    "GPUTarget",
    "triton_course.excerpts",
)
GPU_EXTRA_TESTS = ("test_snippet_scripts.py",)
NOTEBOOK_TIMEOUT_S = 600  # per cell, before the timing cells
NOTEBOOK_LANES = 3  # notebooks executed at once, beside the tests
# The timing cells (tagged TIMING_TAG by the notebook builder) and every cell
# after them run in the timed phase, alone on the GPU. A timing cell times a
# few rows for a few seconds: a cell still running after TIMED_CELL_TIMEOUT_S
# is hung, and a notebook whose timing cells have not ended after
# NOTEBOOK_TIMED_LIMIT_S is killed, kernel and all (the run must fit 8 minutes).
TIMED_CELL_TIMEOUT_S = 120
NOTEBOOK_TIMED_LIMIT_S = 180
# Set in the kernel just before its timing cells run in the timed phase (the
# commit measured): the cells then say the runner timed them alone.
TIMED_ALONE_ENV = "TRITON_COURSE_TIMED_ALONE"
WORKER = [sys.executable, "-m", "triton_course.runner.worker"]


def default_test_workers() -> int:
    """pytest-xdist processes: all cores but four, which the notebooks, the
    untimed captures and the warm-up use beside the tests (12 on 16 cores)."""
    return max(1, min(12, (os.cpu_count() or 1) - 4))


# ---------------------------------------------------------------- staging ---
class Stage:
    """Files to write at the very end, all or none."""

    def __init__(self):
        self.files: dict[Path, bytes] = {}

    def add(self, path: Path, content: str | bytes) -> None:
        data = content.encode("utf-8") if isinstance(content, str) else content
        self.files[Path(path)] = data

    def commit(self) -> list[Path]:
        """Write every file beside its target, then rename each into place."""
        temps: list[tuple[str, Path]] = []
        try:
            for path, data in self.files.items():
                path.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
                temps.append((tmp, path))
                os.chmod(tmp, _mode_for(path))
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())
        except BaseException:
            for tmp, _ in temps:
                Path(tmp).unlink(missing_ok=True)
            raise
        for tmp, path in temps:
            os.replace(tmp, path)
        return [path for _, path in temps]


def _mode_for(path: Path) -> int:
    """Keep an existing file's mode; a new one gets 0o666 less the umask."""
    if path.exists():
        return path.stat().st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


# ------------------------------------------------------------ correctness ---
def select_tests(
    tests_dir: Path, snippets: list[Path], gpu_marked: bool = True
) -> list[Path]:
    """The test module of each snippet; in a whole run (``gpu_marked``) also
    every module with GPU-only tests, every compile-only module and the
    snippet-script checks (GPU_EXTRA_TESTS)."""
    picked = []
    for s in snippets:
        candidate = tests_dir / f"test_{s.stem}.py"
        if candidate.is_file():
            picked.append(candidate)
    for path in sorted(tests_dir.glob("test_*.py")) if gpu_marked else []:
        if path.name in GPU_SKIPPED_TESTS or path in picked:
            continue
        text = path.read_text(encoding="utf-8")
        compiles = any(marker in text for marker in COMPILE_ONLY_MARKERS)
        if "mark.gpu" in text or compiles or path.name in GPU_EXTRA_TESTS:
            picked.append(path)
    return picked


def pytest_command(test_files: list[str], workers: int) -> list[str]:
    """pytest over these files; with pytest-xdist, ``workers`` processes share
    the GPU (the checks are compile-bound, not timed)."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    cmd += ["--durations=25"]  # the slowest checks: where the phase's time goes
    if workers > 1 and importlib.util.find_spec("xdist") is not None:
        # One item at a time after the first two per worker: tests/conftest.py
        # puts the checks that compile for a minute where each worker starts.
        cmd += ["-n", str(workers), "--maxschedchunk=1"]
    cmd += ["-m", "not browser"]
    return [*cmd, *test_files]


def run_pytest(
    repo_root: Path, test_files: list[Path], workers: int = 4, lane: str = "tests"
) -> None:
    if not test_files:
        log("no test modules found for these snippets", lane)
        return
    names = [str(p.relative_to(repo_root)) for p in test_files]
    cmd = pytest_command(names, workers)
    log(" ".join(cmd[1:]), lane)
    env = {k: v for k, v in concurrent_env().items() if k != "TRITON_INTERPRET"}
    rc, tail = stream_command(cmd, repo_root, env, lane)
    if rc != 0:
        failed = [line for line in tail if line.startswith(("FAILED ", "ERROR "))]
        summary = "\n".join(failed[:20] or tail[-20:])
        raise RunnerError(
            f"correctness checks failed (pytest exit {rc}; the [{lane}] lines "
            f"above have the details):\n{summary}"
        )


# ------------------------------------------------------------ subprocesses ---
def stream_command(
    cmd: list[str], cwd: Path, env: dict, lane: str, stop=None
) -> tuple[int, list[str]]:
    """Run ``cmd``, logging each output line under ``lane``; (exit code, last
    lines). If ``stop`` (an Event) is set first, the process and its children
    are ended: only the best-effort warm-up is run this way."""
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=stop is not None,  # its own group: ended as one
    )
    if stop is not None:
        threading.Thread(target=_end_on_stop, args=(proc, stop), daemon=True).start()
    tail: collections.deque[str] = collections.deque(maxlen=400)
    for line in proc.stdout:
        line = line.rstrip()
        tail.append(line)
        log(line, lane)
    return proc.wait(), list(tail)


def _end_on_stop(proc: subprocess.Popen, stop: threading.Event) -> None:
    # The whole group, even if the process itself has ended: a child of it
    # (a compile worker) could hold the output pipe open.
    stop.wait()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(10)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


# Every process of the concurrent phase that calls torch.compile would start
# Inductor's compile pool, one worker per core (torch 2.11: compile_threads is
# min(32, cores), and the inductor backend starts the pool on first use). That
# phase already runs about one process per core (pytest workers, notebooks,
# captures, the warm-up), so its processes compile in-process instead. A value
# the caller set is kept.
CONCURRENT_PHASE_ENV = {"TORCHINDUCTOR_COMPILE_THREADS": "1"}


def concurrent_env(base: dict | None = None) -> dict:
    """The environment of a concurrent-phase process (see CONCURRENT_PHASE_ENV)."""
    env = dict(os.environ if base is None else base)
    for key, value in CONCURRENT_PHASE_ENV.items():
        env.setdefault(key, value)
    return env


def share_one_triton_cache() -> str:
    """Pin TRITON_CACHE_DIR for this process and every process it starts;
    return it (a value the caller set is kept).

    Left unset, Inductor sets it (torch 2.11, on a process's first compiled
    kernel) to its own ``/tmp/torchinductor_<user>/triton/<device>``: a
    process's Triton kernels then land in ``~/.triton/cache`` before its first
    ``torch.compile`` and in Inductor's directory after it, so the warm-up and
    the timed phase missed each other's kernels (measured on a fresh H100:
    layernorm_linear's 14 bfloat16 kernels compiled again in the timed phase,
    about 20 of its 25 s)."""
    import triton

    current = os.environ.get("TRITON_CACHE_DIR")
    if not current:
        current = os.environ["TRITON_CACHE_DIR"] = str(triton.knobs.cache.dir)
    return current


def worker_env() -> dict:
    return {**concurrent_env(), "PYTHONUNBUFFERED": "1"}


def run_worker(args: list[str], what: str) -> dict:
    """One ``triton_course.runner.worker`` process; its JSON result, or a
    RunnerError saying why it failed."""
    with tempfile.TemporaryDirectory(prefix="runner-") as tmp:
        result = Path(tmp) / "result.json"
        proc = subprocess.run(
            [*WORKER, *args, str(result)],
            cwd=REPO_ROOT,  # where the triton_course package is importable
            env=worker_env(),
            capture_output=True,
            text=True,
            errors="replace",
        )
        data = json.loads(result.read_text("utf-8")) if result.is_file() else None
    if data is not None and "error" in data:
        raise RunnerError(data["error"])
    if data is None or proc.returncode != 0:
        tail = (proc.stdout + proc.stderr)[-3000:]
        raise RunnerError(f"{what}: its process exited {proc.returncode}:\n{tail}")
    return data


# What the notebook worker prints when it has run every cell before the first
# timing cell and waits (followed by its kernel's process group).
NOTEBOOK_PAUSED = "runner-worker: paused before the timing cells, kernel group"


class NotebookProcess:
    """A notebook's worker process (``worker notebook --pause``): it executes
    every cell before the first timing cell, then waits, its kernel alive,
    until ``finish`` tells it to execute the rest. Nothing is executed twice."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._tmp = tempfile.TemporaryDirectory(prefix="runner-")
        self.result = Path(self._tmp.name) / "result.json"
        cmd = [*WORKER, "notebook", "--pause", str(self.path.resolve())]
        self.proc = subprocess.Popen(
            [*cmd, str(self.result)],
            cwd=REPO_ROOT,  # where the triton_course package is importable
            env=worker_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            start_new_session=True,  # its own group: killed as one if it hangs
        )
        self.kernel_pgid: int | None = None  # the kernel has a group of its own
        self.tail: collections.deque[str] = collections.deque(maxlen=400)
        self._paused = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            if line.startswith(NOTEBOOK_PAUSED):
                with contextlib.suppress(ValueError):
                    self.kernel_pgid = int(line.split()[-1])
                self._paused.set()
            else:
                self.tail.append(line.rstrip("\n"))

    def wait_untimed(self) -> bool:
        """Wait until the worker pauses before the timing cells (True) or ends
        (False: the notebook has none, or it failed)."""
        while not self._paused.wait(0.2) and self._reader.is_alive():
            pass
        if self._paused.is_set():
            return True
        self.proc.wait()
        return False

    def text(self) -> str:
        """The executed notebook, once the worker has ended."""
        data = None
        if self.result.is_file():
            data = json.loads(self.result.read_text("utf-8"))
        if data is not None and "error" in data:
            raise RunnerError(data["error"])
        if data is None or self.proc.returncode != 0:
            tail = "\n".join(self.tail)[-3000:]
            raise RunnerError(
                f"notebook {self.path.name}: its process exited "
                f"{self.proc.returncode}:\n{tail}"
            )
        return data["text"]

    def finish(self, kernel_env: dict, limit_s: float) -> str:
        """Execute the timing cells and the rest (``kernel_env`` set in the
        kernel first); the executed notebook. Killed after ``limit_s``."""
        with contextlib.suppress(BrokenPipeError, OSError):  # if it died: text()
            self.proc.stdin.write(f"go {json.dumps(kernel_env)}\n")
            self.proc.stdin.flush()
        try:
            self.proc.wait(limit_s)
        except subprocess.TimeoutExpired:
            self.kill()
            raise RunnerError(
                f"notebook {self.path.name}: its timing cells ran for more than "
                f"{limit_s:.0f} s (hung?); its worker and kernel were killed"
            ) from None
        self._reader.join(10)
        return self.text()

    def kill(self) -> None:
        for pgid in (self.kernel_pgid, self.proc.pid):
            if pgid:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(10)

    def close(self) -> None:
        """End a worker still waiting (the run failed or stopped first): its
        stdin closed, it shuts its kernel down; killed if it does not."""
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()
        self._tmp.cleanup()


def execute_notebook_isolated(path: Path) -> str | NotebookProcess:
    """``execute_notebook`` in a process of its own (see worker.py): the
    executed notebook's text, or, if it has timing cells, its NotebookProcess
    paused before them (``finish`` it in the timed phase, or ``close`` it)."""
    process = NotebookProcess(path)
    try:
        if process.wait_untimed():
            return process
        return process.text()
    except BaseException:
        process.close()
        raise
    finally:
        if process.proc.poll() is not None:
            process.close()


def run_capture_isolated(name: str, snippet: Path, repo_root: Path):
    """``run_capture`` in a process of its own: (kind, text)."""
    args = [
        "capture",
        str(Path(snippet).resolve()),
        name,
        str(Path(repo_root).resolve()),
    ]
    data = run_worker(args, f"capture {name!r}")
    return data["kind"], data["text"]


# The warm-up compiles what the timed phase would otherwise compile one kernel
# after another. It runs in WARM_UP_PROCESSES processes (each takes every
# n-th benchmark) at the tests' priority, and may go on WARM_UP_GRACE_S after
# the tests and notebooks are done: compiling there, on idle cores, is
# cheaper than compiling in the timed phase, one kernel at a time.
WARM_UP_PROCESSES = 2
WARM_UP_GRACE_S = 45.0


def warm_up_isolated(
    repo_root: Path, only: str | None, stop, part: tuple[int, int] = (0, 1),
    lane: str = "warm-up",
) -> None:  # fmt: skip
    """The compile warm-up (worker.py ``warm``) of benchmarks number ``part[0]``,
    ``part[0] + part[1]``, ... in discovery order; ended early by ``stop``."""
    cmd = [*WORKER, "warm", str(Path(repo_root).resolve())]
    cmd += ["--only", only] if only else []
    cmd += ["--part", f"{part[0]}/{part[1]}"]
    rc, _ = stream_command(cmd, REPO_ROOT, worker_env(), lane, stop=stop)
    if stop.is_set() and rc != 0:
        log("stopped: the rest compiles in the timed phase", lane)
    elif rc != 0:
        raise RunnerError(f"warm-up exited {rc}")


# ------------------------------------------------------------- concurrency ---
@dataclass
class Job:
    label: str  # "tests", "notebook x.ipynb", "capture y": named in failures
    fn: Callable  # fn(stop: threading.Event) -> None; raises on failure


@dataclass
class Lane:
    """Jobs run one after another; lanes run at the same time."""

    name: str  # the log prefix, e.g. "tests"
    jobs: list[Job] = field(default_factory=list)
    best_effort: bool = False  # stopped once the others are done; never fails
    title: str = ""  # in the time summary, if not the name
    grace_s: float = 0.0  # best effort: may go on this long after the others


def run_concurrently(lanes: list[Lane], times: PhaseTimes) -> None:
    """Run every lane at once; raise RunnerError naming every failed job.

    A required lane runs all its jobs even after a failure elsewhere (the
    error then names every failure). A best-effort lane is told to stop
    ``lane.grace_s`` seconds after every required lane is done, and at once
    if any job has failed; this returns only when each lane's thread, and so
    each process it started, has ended.
    """
    lanes = [lane for lane in lanes if lane.jobs]
    stops = {lane.name: threading.Event() for lane in lanes}
    lock = threading.Lock()
    failures: list[str] = []
    required = {lane.name for lane in lanes if not lane.best_effort}
    best_effort = [lane for lane in lanes if lane.best_effort]

    def stop_all() -> None:
        for event in stops.values():
            event.set()

    def others_done() -> None:
        for lane in best_effort:
            timer = threading.Timer(lane.grace_s, stops[lane.name].set)
            timer.daemon = True
            timer.start()

    if not required:
        stop_all()  # nothing to overlap with: a warm-up would only add time

    def work(lane: Lane) -> None:
        t0 = time.time()
        stop = stops[lane.name]
        try:
            for job in lane.jobs:
                if lane.best_effort and stop.is_set():
                    break
                try:
                    job.fn(stop)
                except Exception as exc:  # noqa: BLE001 - reported below
                    why = str(exc) if isinstance(exc, RunnerError) else repr(exc)
                    if lane.best_effort:
                        log(f"{job.label}: {why} (ignored: best effort)", lane.name)
                        continue
                    log(
                        f"{job.label}: FAILED: {(why.splitlines() or [''])[0]}",
                        lane.name,
                    )
                    with lock:
                        failures.append(f"{job.label}: {why}")
                    stop_all()
        finally:
            stopped = lane.best_effort and stop.is_set()
            times.lane(lane.title or lane.name, time.time() - t0, stopped=stopped)
            if not lane.best_effort:
                with lock:
                    required.discard(lane.name)
                    if not required:
                        others_done()

    threads = [
        threading.Thread(target=work, args=(lane,), name=lane.name, daemon=True)
        for lane in lanes
    ]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        stop_all()  # interrupted: the warm-up ends its process...
        for t in threads:
            t.join(timeout=30)  # ...before this process may exit
    if failures:
        raise RunnerError(
            f"{len(failures)} step(s) failed while the tests, notebooks and "
            "captures ran:\n- " + "\n- ".join(failures)
        )


class PhaseTimes:
    """Seconds per phase, printed at the end of a run (and of a failed one)."""

    def __init__(self):
        self.rows: list[tuple[str, float, str]] = []
        self.lanes: list[tuple[str, float, str]] = []
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def phase(self, name: str):
        t0 = time.time()
        try:
            yield
        finally:
            self.rows.append((name, time.time() - t0, ""))
            if name == "concurrent phase":
                self.rows.extend(sorted(self.lanes))
                self.lanes = []

    def lane(self, name: str, seconds: float, stopped: bool = False) -> None:
        with self._lock:
            note = "(stopped after the others were done)" if stopped else ""
            self.lanes.append((f"  {name}", seconds, note))

    def report(self, total: float) -> None:
        log("time per phase:")
        for name, seconds, note in [*self.rows, ("total", total, "")]:
            log(f"  {name:<24} {seconds:7.1f} s {note}".rstrip())


# --------------------------------------------------------------- notebooks ---
_INCLUDE_RE = re.compile(r'^--8<--\s+"([\w.-]+)\.py:', re.M)


def notebook_snippets(notebook: Path, repo_root: Path) -> set[str]:
    """Stems of the snippets a notebook's recipe (notebooks/<name>.md) embeds."""
    recipe = repo_root / "notebooks" / f"{notebook.stem}.md"
    if not recipe.is_file():
        return set()
    return set(_INCLUDE_RE.findall(recipe.read_text(encoding="utf-8")))


def first_timing_cell(cells) -> int | None:
    """The index of the first cell tagged as a timing cell, or None."""
    for index, cell in enumerate(cells):
        if TIMING_TAG in cell.get("metadata", {}).get("tags", []):
            return index
    return None


async def run_hidden(client, code: str) -> None:
    """Execute ``code`` in the client's kernel without a cell: no output, no
    execution count, nothing stored in the notebook."""
    from nbclient.util import ensure_async

    msg_id = await ensure_async(
        client.kc.execute(code, silent=True, store_history=False)
    )
    reply = await client.async_wait_for_reply(msg_id)
    if reply is None or reply["content"]["status"] != "ok":
        why = (reply or {}).get("content", {}).get("evalue", "no reply")
        raise RunnerError(f"the runner's own code failed in the kernel: {why}")


def execute_notebook(path: Path, before_timing=None) -> str:
    """Run a notebook top to bottom in a fresh kernel; return the .ipynb text.

    ``before_timing(client)`` (a coroutine function), if given, is awaited
    just before the first timing cell executes: the worker waits there for
    the timed phase (worker.py)."""
    try:
        import nbformat
        from nbclient import NotebookClient
    except ImportError as exc:
        raise RunnerError(
            f"{exc.name} is missing: install nbclient, nbformat and ipykernel "
            "(pip install -e '.[gpu]'), or pass --skip-notebooks"
        ) from None
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=NOTEBOOK_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    first = first_timing_cell(nb.cells)
    if before_timing is not None and first is not None:

        async def on_cell_start(cell, cell_index):
            if cell_index == first:
                await before_timing(client)

        client.on_cell_start = on_cell_start
    saved = os.environ.pop("TRITON_INTERPRET", None)  # the kernel inherits env
    try:
        client.execute()
    except Exception as exc:
        raise RunnerError(f"notebook {path.name} failed:\n{str(exc)[-3000:]}") from None
    finally:
        if saved is not None:
            os.environ["TRITON_INTERPRET"] = saved
    # Stored as the notebook builder stores CPU runs: consecutive stream
    # outputs merged, so the file does not depend on how output was flushed.
    from triton_course.notebooks import coalesce_streams

    doc = coalesce_streams(json.loads(nbformat.writes(nb)))
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


# --------------------------------------------------------------------- run ---
def _rel(path: Path, root: Path) -> str:
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(Path(path).resolve())


def _refuse_repo_paths(env: Environment, paths: list[Path], skip_tests: bool) -> None:
    """A fake (test) environment, or a run that skipped the correctness
    checks, may only ever write outside the repository."""
    if not (env.fake or skip_tests):
        return
    why = (
        "this run has no CUDA GPU (fake timer)"
        if env.fake
        else "--skip-tests was given (a diagnostic run)"
    )
    for path in paths:
        resolved = Path(path).resolve()
        if resolved == REPO_ROOT or REPO_ROOT in resolved.parents:
            raise RunnerError(
                f"refusing to write {path}: {why}, and its numbers must never "
                "reach the repository's data"
            )


def build_doc(
    existing,
    env: Environment,
    records: dict,
    captures: dict,
    partial: bool,
    keep_captures: bool = False,
):
    """The new data file. A partial run (--only) keeps every other record; a
    run that skipped the captures keeps the stored ones (the staleness check
    still flags those whose snippet changed)."""
    doc = {"format_version": T.FORMAT_VERSION, "gpu": env.gpu, "benchmarks": {}}
    old_caps = {}
    if existing is not None:
        if partial:
            doc["benchmarks"].update(existing.benchmarks)
        if partial or keep_captures:
            old_caps = dict(existing.captures or {})
    doc["benchmarks"].update(records)
    caps = {**old_caps, **captures}
    if caps:
        doc["captures"] = caps
    return doc


def run(
    repo_root: Path,
    data_dir: Path,
    plots_dir: Path,
    notebooks_dir: Path,
    only: str | None = None,
    skip_notebooks: bool = False,
    skip_captures: bool = False,
    skip_tests: bool = False,
    test_workers: int | None = None,
    warm_up: bool = True,
    commit: str | None = None,
    env: Environment | None = None,
    check=None,
    warm=None,
) -> list[Path]:
    """The whole run; returns the files written. Raises RunnerError on failure.

    ``env``, ``check`` (replaces the pytest subprocess: ``check(snippets)``)
    and ``warm`` (replaces the warm-up process: ``warm(snippets, stop)``) are
    injection points for the CPU tests; a real run builds them itself. A fake
    environment gets no warm-up unless one is injected.
    """
    started = time.time()
    times = PhaseTimes()
    if test_workers is None:
        test_workers = default_test_workers()
    try:
        return _run(
            repo_root=Path(repo_root),
            data_dir=data_dir,
            plots_dir=plots_dir,
            notebooks_dir=notebooks_dir,
            only=only,
            skip_notebooks=skip_notebooks,
            skip_captures=skip_captures,
            skip_tests=skip_tests,
            test_workers=test_workers,
            warm_up=warm_up,
            commit=commit,
            env=env,
            check=check,
            warm=warm,
            times=times,
        )
    finally:
        times.report(time.time() - started)


def _run(
    *,
    repo_root,
    data_dir,
    plots_dir,
    notebooks_dir,
    only,
    skip_notebooks,
    skip_captures,
    skip_tests,
    test_workers,
    warm_up,
    commit,
    env,
    check,
    warm,
    times,
):
    # Triton would reuse autotuning results stored on disk by earlier
    # processes (the tests, the notebooks: all timed on a shared GPU).
    if os.environ.pop("TRITON_CACHE_AUTOTUNING", None) is not None:
        log("TRITON_CACHE_AUTOTUNING unset: every autotuner times its configs here")
    log(f"Triton's compile cache, shared by every process: {share_one_triton_cache()}")
    with times.phase("discovery"):
        env = env or cuda_environment(repo_root, commit)
        written_dirs = [data_dir, plots_dir] + (
            [] if skip_notebooks else [notebooks_dir]
        )
        _refuse_repo_paths(env, written_dirs, skip_tests)
        log(
            f"GPU: {env.gpu['name']} ({env.gpu['sm_count']} SMs), "
            f"slug {env.gpu['slug']}"
        )
        notebooks = [] if skip_notebooks else D.notebook_files(notebooks_dir)
        if only and only in {nb.stem for nb in notebooks}:
            snippets = []  # --only NOTEBOOK: that notebook and its snippets' tests
            notebooks = [nb for nb in notebooks if nb.stem == only]
            used = notebook_snippets(notebooks[0], repo_root)
            tested = [
                p for p in D.snippet_files(repo_root / "snippets") if p.stem in used
            ]
        else:
            snippets = D.discover(repo_root / "snippets", only=only)
            if only:  # notebooks built from the snippets measured
                stems = {s.stem for s in snippets}
                notebooks = [
                    nb for nb in notebooks if notebook_snippets(nb, repo_root) & stems
                ]
                tested = [s.path for s in snippets]
            else:
                tested = D.snippet_files(repo_root / "snippets")
        n_bench = sum(len(s.benchmarks) for s in snippets)
        n_caps = sum(len(s.captures) for s in snippets)
        log(
            f"found {n_bench} benchmark(s), {n_caps} capture(s), "
            f"{len(snippets)} snippet(s)"
        )
        data_path = Path(data_dir) / f"{env.gpu['slug']}.json"
        # (timings.py refuses a data file of another format, naming it)
        existing = T.load_file(data_path) if data_path.exists() else None
        captures_untimed = [] if skip_captures else _captures(snippets, untimed=True)
        captures_alone = [] if skip_captures else _captures(snippets, untimed=False)

    # 1. Untimed, all at once, each in its own process: the checks, the
    # notebooks, the captures that time nothing, and a warm-up that compiles
    # what the benchmarks will compile (the timed phase then loads it from
    # the on-disk caches). ncu and timing captures are not among them: a
    # kernel sharing the GPU with other processes is slower and its counters
    # see their traffic.
    results: dict = {}
    tests_lane = Lane("tests")
    if skip_tests:
        log("correctness: SKIPPED (--skip-tests): writing outside the repository only")
    elif check is None:
        tests = select_tests(repo_root / "tests", tested, gpu_marked=not only)
        tests_lane.jobs.append(
            Job("tests", lambda stop: run_pytest(repo_root, tests, test_workers))
        )
    else:
        tests_lane.jobs.append(Job("tests", lambda stop: check(snippets)))
    nb_lanes = _notebook_lanes(notebooks, results)
    cap_lane = Lane("captures", title="captures and reports (untimed)")
    for s, name, spec in captures_untimed:
        cap_lane.jobs.append(
            Job(f"capture {name}", _capture_job(s, name, spec, repo_root, results))
        )
    for s in snippets:  # reports that time nothing: made now, not in the timed phase
        for desc in s.benchmarks:
            if desc.get("report_untimed"):
                job = _report_job(s, desc, env, results)
                cap_lane.jobs.append(Job(f"report {desc['name']}", job))
    warm_lanes = []
    if warm_up and n_bench and warm is not None:  # the CPU tests' stand-in
        warm_lanes = [Lane("warm-up", [Job("warm-up", partial(warm, snippets))], True)]
    elif warm_up and n_bench and not env.fake:
        n = WARM_UP_PROCESSES
        for k in range(n):
            name = f"warm-up-{k + 1}" if n > 1 else "warm-up"
            job = partial(
                warm_up_isolated, repo_root, only, part=(k, n), lane=name
            )  # called with the lane's stop event
            warm_lanes.append(
                Lane(name, [Job(name, job)], best_effort=True, grace_s=WARM_UP_GRACE_S)
            )
    try:
        with times.phase("concurrent phase"):
            run_concurrently([tests_lane, *nb_lanes, cap_lane, *warm_lanes], times)
        return _timed_phase(
            repo_root=repo_root,
            data_path=data_path,
            plots_dir=plots_dir,
            only=only,
            skip_captures=skip_captures,
            env=env,
            times=times,
            snippets=snippets,
            n_bench=n_bench,
            notebooks=notebooks,
            results=results,
            captures_alone=captures_alone,
            existing=existing,
        )
    finally:  # after a failure or an interruption, no notebook is left waiting
        for handle in list(results.values()):
            if isinstance(handle, NotebookProcess):
                handle.close()


def _timed_phase(
    *,
    repo_root,
    data_path,
    plots_dir,
    only,
    skip_captures,
    env,
    times,
    snippets,
    n_bench,
    notebooks,
    results,
    captures_alone,
    existing,
) -> list[Path]:
    """2. Alone on the GPU: rooflines, every benchmark, the other captures,
    then the notebooks' timing cells; then everything is written at once."""
    stage = Stage()
    with times.phase("settling clocks"):
        settle = env.settle() if snippets and n_bench else {}
    with times.phase("rooflines"):
        ceilings = {d["name"]: D.ceiling_of(d) for s in snippets for d in s.benchmarks}
        rooflines = env.rooflines(set(ceilings.values())) if ceilings else {}
    records = {}
    with times.phase("benchmarks"):
        for s in snippets:
            sha = T.sha256_of(s.path)
            for desc in s.benchmarks:
                n_rows = len(desc["sizes"]) * len(desc["dtypes"])
                log(f"benchmark {desc['name']}: {n_rows} rows")
                t0 = time.time()
                records[desc["name"]] = measure_benchmark(
                    desc,
                    _rel(s.path, repo_root),
                    sha,
                    env,
                    rooflines[ceilings[desc["name"]]],
                    untimed_report=results.get(("report", desc["name"])),
                )
                log(f"benchmark {desc['name']}: done in {time.time() - t0:.1f} s")
            if T.sha256_of(s.path) != sha:
                raise RunnerError(f"{s.path} changed while it was being measured")
    captures = {}
    with times.phase("captures (alone)"):
        for s, name, spec in captures_alone:
            t0 = time.time()
            kind, text = run_capture(name, spec, s.path, repo_root)
            results[("capture", name)] = (kind, text)
            lines = len(text.splitlines())
            log(f"capture {name}: {lines} lines in {time.time() - t0:.1f} s")
    dram = None
    with times.phase("DRAM bytes (alone)"):
        # Nsight Compute's DRAM counters against each bandwidth benchmark's
        # byte model (#33): alone on the GPU, since the counters see every
        # process's traffic. A model more than 10 % off fails the run.
        if not skip_captures and not env.fake:
            from triton_course.runner.dram import measure_dram_bytes

            dram = measure_dram_bytes(snippets, env, repo_root, say=log)
    with times.phase("notebook timings (alone)"):
        # Each notebook's timing cells, and the cells after them, in the
        # kernel that ran its first cells: one notebook at a time, after the
        # benchmarks, with nothing else on the GPU.
        commit = str(env.provenance.get("commit", ""))[:12] or "unknown"
        for nb in notebooks:
            if isinstance(results[nb], str):
                continue  # no timing cell: executed whole in the first phase
            t0 = time.time()
            results[nb] = results[nb].finish(
                {TIMED_ALONE_ENV: commit}, NOTEBOOK_TIMED_LIMIT_S
            )
            log(f"{nb.name}: timing cells done in {time.time() - t0:.1f} s")
    for nb in notebooks:
        stage.add(nb, results[nb])
    for s, name, _ in _captures(snippets, untimed=None):  # in discovery order
        if ("capture", name) not in results:
            continue  # --skip-captures
        kind, text = results[("capture", name)]
        captures[name] = {
            "snippet": _rel(s.path, repo_root),
            "snippet_sha256": T.sha256_of(s.path),
            "kind": kind,
            "text": text,
            "provenance": dict(env.provenance),
        }

    # 3. The data file and the plots, then write everything at once
    with times.phase("writing"):
        if records or captures or not only:
            doc = build_doc(
                existing,
                env,
                records,
                captures,
                partial=only is not None,
                keep_captures=skip_captures,
            )
            if settle:
                doc["settle"] = settle
            old_dram = getattr(existing, "dram_bytes", None) if existing else None
            if dram is not None:
                doc["dram_bytes"] = DB.merge(old_dram if only else None, dram)
            elif old_dram and (only or skip_captures):
                doc["dram_bytes"] = old_dram  # not profiled again: keep the check
            T.validate(doc, data_path)
            stage.add(data_path, json.dumps(doc, indent=1) + "\n")
        for name, bench in records.items():
            if P.wants_plot(bench):
                stage.add(
                    Path(plots_dir) / f"{name}-{env.gpu['slug']}.svg",
                    P.render_svg(bench, env.gpu),
                )
        written = stage.commit()
    for path in written:
        log(f"wrote {path}")
    return written


def _captures(snippets, untimed: bool | None) -> list[tuple]:
    """(snippet, name, spec) of the untimed captures, of all the others, or
    (None) of every capture."""
    return [
        (s, name, spec)
        for s in snippets
        for name, spec in s.captures.items()
        if untimed is None or (name in s.untimed) == untimed
    ]


def last_run_seconds(notebook: Path) -> float:
    """How long the stored notebook's cells before its first timing cell (the
    part the concurrent phase runs) took when it was last executed: the sum
    of each cell's time from its start to its reply, as nbclient records them
    in ``metadata.execution`` (the wait before the timing cells is in no
    cell). 0 when it records nothing (or cannot be read): such a notebook
    simply goes after the timed ones."""
    from datetime import datetime

    def stamp(text: str) -> datetime:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))

    try:
        cells = json.loads(Path(notebook).read_text(encoding="utf-8"))["cells"]
        first = first_timing_cell(cells)
        seconds = 0.0
        for cell in cells[:first]:
            run = cell.get("metadata", {}).get("execution", {})
            if "iopub.execute_input" in run and "shell.execute_reply" in run:
                took = stamp(run["shell.execute_reply"]) - stamp(
                    run["iopub.execute_input"]
                )
                seconds += took.total_seconds()
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return 0.0
    return seconds


def _notebook_lanes(notebooks: list[Path], results: dict) -> list[Lane]:
    """NOTEBOOK_LANES lanes that share the notebooks: each lane takes the next
    notebook left when its last one ends, so a long notebook holds up one
    lane, not the phase (one after another they took 214 s on an H100, the
    tests 129 s). The longest notebooks go first (``last_run_seconds``), so
    that none of them starts last and finishes alone. A failure is named by
    its notebook (the job's label follows the notebook it runs) and ends only
    its lane: the others run the rest."""
    queue = collections.deque(
        sorted(notebooks, key=lambda nb: -last_run_seconds(nb))  # stable
    )
    lock = threading.Lock()

    def lane(i: int) -> Lane:
        job = Job("notebooks", lambda stop: None)

        def take_until_empty(stop):
            while True:
                with lock:
                    if not queue:
                        return
                    nb = queue.popleft()
                job.label = f"notebook {nb.name}"
                _notebook_job(nb, results)(stop)

        job.fn = take_until_empty
        return Lane(f"notebooks-{i + 1}" if count > 1 else "notebooks", [job])

    count = min(NOTEBOOK_LANES, len(notebooks))
    return [lane(i) for i in range(count)]


def _notebook_job(nb: Path, results: dict):
    def job(stop):
        log(f"{nb.name}: executing", "notebooks")
        t0 = time.time()
        results[nb] = execute_notebook_isolated(nb)
        log(f"{nb.name}: done in {time.time() - t0:.1f} s", "notebooks")

    return job


def _capture_job(s, name: str, spec, repo_root: Path, results: dict):
    def job(stop):
        t0 = time.time()
        if callable(spec) or not isinstance(spec, dict):
            kind, text = run_capture_isolated(name, s.path, repo_root)
        else:  # a command spec already runs in a subprocess of its own
            kind, text = run_capture(name, spec, s.path, repo_root)
        results[("capture", name)] = (kind, text)
        lines = len(text.splitlines())
        log(f"{name}: {lines} lines in {time.time() - t0:.1f} s", "captures")

    return job


def _report_job(s, desc: dict, env, results: dict):
    """A benchmark's untimed report, in a worker process of its own (in the
    CPU tests' fake environment, in this process: it has no GPU to share)."""
    name = desc["name"]

    def job(stop):
        t0 = time.time()
        if env.fake:
            from triton_course.runner.measure import untimed_report

            report = untimed_report(s.path, name)
        else:
            data = run_worker(
                ["report", str(Path(s.path).resolve()), name], f"report {name!r}"
            )
            report = data["report"]
        results[("report", name)] = report
        log(f"report {name}: made in {time.time() - t0:.1f} s", "captures")

    return job


# ------------------------------------------------------------------- stale ---
def stale_report(
    data_dir: Path, snippets_dir: Path, repo_root: Path, gpu: str | None = None
):
    """(lines, problems): per data file, stale and missing benchmarks/captures."""
    discovered: dict[str, Path] = {}
    discovered_caps: dict[str, Path] = {}
    for path in D.snippet_files(snippets_dir):
        benches, caps = D.static_names(path)
        discovered.update({b: path for b in benches})
        discovered_caps.update({c: path for c in caps})
    lines, problems = [], 0
    files = T.load_dir(data_dir) if Path(data_dir).is_dir() else []
    if gpu:
        files = [f for f in files if gpu.lower() in f.gpu["slug"]]
    if not files:
        lines.append(
            f"{data_dir}: no timing data yet; nothing is published as measured"
        )
    # Captures (profiler tables, ncu reports...) are shown from whichever GPU
    # made them; a capture counts as missing only when no GPU has it.
    captured_anywhere = {n for f in files for n in (f.captures or {})}
    for f in files:
        caps = f.captures or {}
        stale = sorted(n for n, b in f.benchmarks.items() if T.is_stale(b, repo_root))
        stale += sorted(
            f"capture {n}" for n, c in caps.items() if T.is_stale(c, repo_root)
        )
        missing = sorted(set(discovered) - set(f.benchmarks))
        missing += sorted(
            f"capture {n}" for n in set(discovered_caps) - captured_anywhere
        )
        gone = sorted(set(f.benchmarks) - set(discovered))
        head = f"{f.path.name} ({f.gpu['name']}):"
        if not stale and not missing:
            lines.append(f"{head} up to date ({len(f.benchmarks)} benchmarks)")
        for n in stale:
            lines.append(
                f"{head} STALE   {n} (its snippet changed since it was measured)"
            )
        for n in missing:
            lines.append(f"{head} MISSING {n} (never measured on this GPU)")
        for n in gone:
            lines.append(f"{head} note: {n} is no longer described by any snippet")
        problems += len(stale) + len(missing)
    return lines, problems


# --------------------------------------------------------------------- CLI ---
def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m triton_course.runner", description=__doc__
    )
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="check, time and publish on this CUDA GPU")
    r.add_argument(
        "--only", metavar="NAME", help="one benchmark, capture, snippet or notebook"
    )
    r.add_argument("--data-dir", type=Path, default=REPO_ROOT / "data" / "timings")
    r.add_argument(
        "--plots-dir", type=Path, default=REPO_ROOT / "docs" / "assets" / "plots"
    )
    r.add_argument(
        "--notebooks-dir", type=Path, default=REPO_ROOT / "docs" / "notebooks"
    )
    r.add_argument("--skip-notebooks", action="store_true")
    r.add_argument("--skip-captures", action="store_true")
    r.add_argument(
        "--skip-tests",
        action="store_true",
        help="diagnostics only: refuses to write inside the repository",
    )
    r.add_argument(
        "--test-workers",
        type=int,
        default=None,
        help="pytest-xdist processes for the checks, if installed (1: none; "
        "default: the number of cores less 4, at most 12)",
    )
    r.add_argument(
        "--no-warm-up",
        action="store_true",
        help="do not compile the benchmarks' kernels while the tests run",
    )
    r.add_argument("--commit", help="the commit measured, where git is unavailable")
    c = sub.add_parser(
        "compare",
        help="classify every Triton/peer ratio of two data files: "
        "same / faster / slower / undecided",
    )
    c.add_argument("old", type=Path, help="e.g. the committed data/timings/GPU.json")
    c.add_argument("new", type=Path, help="e.g. a new run's data file")
    c.add_argument("--top", type=int, default=15, help="how many largest moves")
    c.add_argument(
        "--pages",
        type=Path,
        metavar="DOCS",
        help="also judge every verdict, target and claim of these pages (e.g. "
        "docs) on both files and list each flip (needs mkdocs)",
    )
    s = sub.add_parser("stale", help="list stale or missing timing data; exit 1 if any")
    s.add_argument("--data-dir", type=Path, default=REPO_ROOT / "data" / "timings")
    s.add_argument("--gpu", help="only data files whose slug contains this")
    from triton_course.runner import replot

    replot.add_parser(sub)  # redraw the committed plots from the committed data
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.command == "replot":
            from triton_course.runner import replot

            return replot.main(args)
        if args.command == "compare":
            from triton_course.runner import compare

            return compare.main(args.old, args.new, args.top, docs=args.pages)
        if args.command == "stale":
            lines, problems = stale_report(
                args.data_dir, REPO_ROOT / "snippets", REPO_ROOT, gpu=args.gpu
            )
            print("\n".join(lines))
            if problems:
                print(f"{problems} stale or missing: run `make gpu` on each GPU listed")
            return 1 if problems else 0
        run(
            REPO_ROOT,
            args.data_dir,
            args.plots_dir,
            args.notebooks_dir,
            only=args.only,
            skip_notebooks=args.skip_notebooks,
            skip_captures=args.skip_captures,
            skip_tests=args.skip_tests,
            test_workers=args.test_workers,
            warm_up=not args.no_warm_up,
            commit=args.commit,
        )
        return 0
    except (RunnerError, D.DescriptionError, T.TimingDataError) as exc:
        print(
            f"runner: FAILED, nothing was written: {exc}", file=sys.stderr, flush=True
        )
        return 1
