"""Shared test set-up: device choice, snippet loading, tolerances, poisoning.

On a machine without CUDA every kernel runs in Triton's interpreter on the CPU
(TRITON_INTERPRET=1 is set here, before anything imports triton). On a CUDA
machine the same tests run on the GPU, plus those marked ``gpu``, which the
CPU run deselects and names (they are never counted as passed).
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from pathlib import Path

import pytest
import torch

REPO_ROOT = Path(__file__).resolve().parent.parent
SNIPPETS = REPO_ROOT / "snippets"
HAS_GPU = torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1"
if not HAS_GPU:
    os.environ["TRITON_INTERPRET"] = "1"
DEVICE = "cuda" if HAS_GPU else "cpu"
if not HAS_GPU and os.environ.get("PYTEST_XDIST_WORKER"):
    # One PyTorch thread per test worker: `make test` runs a worker per core,
    # and under the interpreter the tensors are small, so a second thread per
    # op mostly spins waiting for a core the other worker holds (about a
    # tenth more CPU for the same tests). Subprocesses keep their default.
    torch.set_num_threads(1)

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from triton_course.snippet_modules import load_file  # noqa: E402

if not HAS_GPU:
    # Under the interpreter an unmasked out-of-bounds access corrupts memory
    # instead of faulting: make it an error at the access (tests/bounds_check.py).
    import bounds_check
    import interpreter_speed

    bounds_check.install()
    # the same interpretation for less CPU (tests/interpreter_speed.py)
    interpreter_speed.install()

# Tolerances per dtype, in one place. Each bounds the error against a float64
# reference by a small multiple of what the dtype's own rounding gives: half
# precision keeps 11 significant bits (eps 9.8e-4), bfloat16 8 bits (7.8e-3).
TOLERANCES = {
    torch.float32: {"atol": 1e-5, "rtol": 1e-5},
    torch.float16: {"atol": 2e-3, "rtol": 2e-3},
    torch.bfloat16: {"atol": 1.6e-2, "rtol": 1.6e-2},
    torch.float64: {"atol": 1e-10, "rtol": 1e-10},
}


def assert_close(actual: torch.Tensor, expected: torch.Tensor, **override):
    """Compare to a reference computed in higher precision, with TOLERANCES."""
    tol = dict(TOLERANCES[actual.dtype], **override)
    torch.testing.assert_close(
        actual.to(torch.float64), expected.to(torch.float64), equal_nan=True, **tol
    )


# ------------------------------------------------ big GPU allocations ---
# On the GPU runner the tests share the GPU with each other (pytest-xdist),
# with the notebooks and with the benchmarks' warm-up. A test that needs tens
# of GiB (2**31 elements and more) takes them one at a time, and waits for
# them: PyTorch's caching allocator keeps what a worker freed until it empties
# its cache, so free memory comes back between tests (see the fixture below).
BIG_MEMORY_WAIT_S = 300


@contextlib.contextmanager
def gpu_memory(n_bytes: int):
    """Hold the GPU runner's one big-allocation slot until ``n_bytes`` (and
    1 GiB of slack) are free, then run the block. Skips, saying why, on a GPU
    too small for it; fails if the memory is never freed."""
    import tempfile
    import time

    from filelock import FileLock

    need = n_bytes + 2**30
    _, total = torch.cuda.mem_get_info()
    if total < need:
        pytest.skip(f"needs {need / 2**30:.1f} GiB on the GPU, it has "
                    f"{total / 2**30:.1f}")  # fmt: skip
    # one slot per run of the suite, shared by its workers
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID", str(os.getpid()))
    lock = Path(tempfile.gettempdir()) / f"course-gpu-memory-{run}.lock"
    with FileLock(str(lock)):
        deadline = time.monotonic() + BIG_MEMORY_WAIT_S
        while (free := torch.cuda.mem_get_info()[0]) < need:
            if time.monotonic() > deadline:
                pytest.fail(
                    f"{need / 2**30:.1f} GiB never came free on the GPU in "
                    f"{BIG_MEMORY_WAIT_S} s ({free / 2**30:.1f} GiB free): "
                    "another process holds it"
                )
            time.sleep(0.5)
        try:
            yield
        finally:
            gc.collect()
            torch.cuda.empty_cache()


@pytest.fixture(autouse=True)
def _give_back_cached_gpu_memory():
    """After each test on a GPU, return what PyTorch cached to the driver, so
    that the other workers' large tests find it free."""
    yield
    if HAS_GPU and torch.cuda.memory_reserved() > 2**30:
        gc.collect()
        torch.cuda.empty_cache()


def load_snippet(name: str):
    """Import ``snippets/<name>.py`` as a module, the same one the runner's
    discovery and the compiler helpers get (see triton_course.snippet_modules)."""
    return load_file(SNIPPETS / f"{name}.py")


def compile_in_subprocess(script: str | Path, *args: str, timeout: int = 600):
    """Run a script that compiles kernels for a GPU target (no GPU needed) in
    a process without TRITON_INTERPRET, and return the JSON it prints last.
    Compiling needs the real compiler, which the interpreter replaces.
    ``script`` is source text (run with -c) or a file (needed when triton.jit
    must read a kernel's source); either way the repository is importable.

    Under pytest-xdist every worker that runs one test of a module builds the
    module's fixtures: a script's compiles (tens of seconds each) would run
    once per worker. The first worker to ask runs it and keeps its JSON for
    the others, for this run only (nothing in the repository changes during
    a run); a failing script is not kept, so each asker sees it fail."""
    text = script.read_text("utf-8") if isinstance(script, Path) else script
    return once_per_run(
        repr((str(script), text, args)),
        lambda: _compile_in_subprocess(script, *args, timeout=timeout),
    )


def once_per_run(key: str, compute):
    """``compute()``'s JSON result, computed by the first pytest-xdist worker
    that asks for ``key`` and read back by the others, for this run only
    (nothing in the repository changes during a run). Without xdist, just
    ``compute()``. A failure is not kept, so each asker sees it fail."""
    import hashlib
    import json
    import tempfile

    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run:
        return compute()
    from filelock import FileLock

    digest = hashlib.sha256(key.encode()).hexdigest()[:24]
    memo = Path(tempfile.gettempdir()) / f"course-compiles-{run}"
    memo.mkdir(exist_ok=True)
    kept = memo / f"{digest}.json"
    with FileLock(str(memo / f"{digest}.lock")):
        if kept.is_file():
            return json.loads(kept.read_text("utf-8"))
        result = compute()
        kept.write_text(json.dumps(result), "utf-8")
        return result


def _compile_in_subprocess(script: str | Path, *args: str, timeout: int):
    import json
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p
    )
    source = [str(script)] if isinstance(script, Path) else ["-c", script]
    done = subprocess.run(
        [sys.executable, *source, *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def poison_(tensor: torch.Tensor) -> torch.Tensor:
    """Fill with NaN (or the dtype's max for integers): an unwritten element fails."""
    if tensor.dtype.is_floating_point:
        return tensor.fill_(float("nan"))
    return tensor.fill_(torch.iinfo(tensor.dtype).max)


@pytest.fixture(scope="module")
def one_torch_thread():
    """The checker's tensors are small: a second thread per PyTorch op only
    waits, and spins, for the other test worker on CI's two cores (the exercise
    tests use it; under pytest-xdist every CPU worker has one thread anyway)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def device() -> str:
    return DEVICE


@pytest.fixture
def seeded():
    torch.manual_seed(1234)


def _compile_heavy(item) -> bool:
    return item.name.startswith("test_runs_as_a_script") or bool(
        item.get_closest_marker("compile_heavy")
    )


def _module_fixtures(item) -> set:
    """The module-scoped fixtures this item uses (none for a stand-in)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return set()
    return {
        name
        for name, defs in info.name2fixturedefs.items()
        if defs and defs[-1].scope == "module"
    }


def heavy_first(items: list) -> list:
    """The compile-heavy checks interleaved with the others at the front:
    heavy, light, heavy, light, ... then the rest, each group in its order.

    The GPU runner's checks take minutes on 12 pytest-xdist workers, bound by
    compiling. With ``--maxschedchunk=1`` (the runner passes it) xdist gives
    worker k items 2k and 2k+1 first, then one item each time one finishes:
    so every worker starts on a check that compiles for a minute, and none of
    those starts last and finishes alone.

    In a module marked ``shared_setup`` (its module fixtures are computed
    once per run, see ``once_per_run``), the first item to use each module
    fixture counts as heavy and the module's other items go last: spread
    over the workers at once, they all waited for the one that computes
    (measured on the H100: 20 checks idle 10-16 s each)."""
    heavy, light, late = [], [], []
    claimed: set = set()
    for item in items:
        if _compile_heavy(item):
            heavy.append(item)
        elif item.get_closest_marker("shared_setup"):
            module = item.nodeid.split("::", 1)[0]
            fixtures = {(module, f) for f in _module_fixtures(item)}
            (heavy if fixtures - claimed else late).append(item)
            claimed |= fixtures
        else:
            light.append(item)
    front = []
    for pair in zip(heavy, light, strict=False):
        front.extend(pair)
    n = min(len(heavy), len(light))
    return front + heavy[n:] + light[n:] + late


# The CPU suite's longest modules (minutes each on CI's two cores): under
# pytest-xdist (`make test` runs `-n auto --dist loadfile`) they go first, so
# that no worker starts one of them while the other has nothing left.
LONG_MODULES = (
    "tests/test_browser.py",
    "tests/test_support.py",
    "tests/test_browser_phone.py",
)


def long_modules_first(items: list) -> list:
    def rank(item) -> int:
        module = item.nodeid.split("::", 1)[0]
        return (
            LONG_MODULES.index(module) if module in LONG_MODULES else len(LONG_MODULES)
        )

    return sorted(items, key=rank)  # stable: each module keeps its order


def pytest_configure(config):
    """pytest-xdist sorts the files by their number of tests before it hands
    them out (--loadscope-reorder, on by default), which undid
    long_modules_first: the browser tests (20 tests, minutes) started six
    minutes into CI's run and finished alone. Keep the collection's order."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config, items):
    if HAS_GPU:
        items[:] = heavy_first(items)
        return
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items[:] = long_modules_first(items)
    gpu_only = [item for item in items if item.get_closest_marker("gpu")]
    if gpu_only:
        config.hook.pytest_deselected(items=gpu_only)
        items[:] = [item for item in items if not item.get_closest_marker("gpu")]
        config._course_gpu_deselected = len(gpu_only)


def _start_support_compile(out: Path, background: bool):
    """``python -m triton_course.support fresh OUT``, the quick check's
    record and sample compile (about 1.5 CPU-minutes in one process): in the
    ``background`` at the lowest priority, on the core the interpreter tests
    leave idle; otherwise at normal priority, for a
    pytest-xdist worker that waits for it (at the lowest priority it would
    starve beside the other workers while this one sits idle)."""
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(REPO_ROOT)
    return subprocess.Popen(
        [sys.executable, "-m", "triton_course.support", "fresh", str(out)]
        + ["--workers=1"],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # lowest priority: it fills idle CPU instead of slowing the tests
        preexec_fn=(lambda: os.nice(19)) if background else None,
        start_new_session=True,  # its own group: stopped with its workers
    )


def support_compile(config, background: bool = False) -> tuple:
    """(process, output path) of the GPU-support table's fresh compile,
    started now if collection did not start it already (under pytest-xdist
    it starts in the worker that runs tests/test_support.py, whose tests
    share one xdist_group)."""
    started = getattr(config, "_course_support", None)
    if started is None:
        import tempfile

        out = Path(tempfile.mkdtemp(prefix="support-")) / "support.json"
        proc = _start_support_compile(out, background)
        started = config._course_support = (proc, out)
    return started


def pytest_collection_finish(session):
    """Start compiling the GPU-support table in the background as soon as a
    test that compares with it (fixture ``fresh``) is selected, on the core
    the interpreter tests (one thread) leave idle; tests/test_support.py
    waits for it. Under pytest-xdist every worker collects every test, and
    only the one that runs tests/test_support.py should compile: it starts
    there, when the fixture first asks (support_compile)."""
    if (
        HAS_GPU
        or os.environ.get("PYTEST_XDIST_WORKER")
        or not any(
            item.nodeid.startswith("tests/test_support.py")
            and "fresh" in getattr(item, "fixturenames", ())
            for item in session.items
        )
    ):
        return
    support_compile(session.config, background=True)


def pytest_unconfigure(config):
    proc, out = getattr(config, "_course_support", (None, None))
    if proc is None:
        return
    import contextlib
    import shutil
    import signal

    if proc.poll() is None:  # the run stopped early: no orphaned compilers
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    # the table and the compile cache (support.py puts it beside the table)
    shutil.rmtree(out.parent, ignore_errors=True)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    count = getattr(config, "_course_gpu_deselected", 0)
    if count:
        terminalreporter.write_line(
            f"{count} GPU-only tests were not run here (no CUDA GPU): "
            "the GPU runner runs them (`make gpu`)."
        )


def _build_site(site: Path) -> dict:
    """mkdocs build --strict into ``site``: {"ok", "seconds", "log"}."""
    import subprocess
    import time

    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", BUILD_WITHOUT_TORCH.format(site=str(site))],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env=dict(os.environ, NO_MKDOCS_2_WARNING="1"),
    )
    seconds = time.perf_counter() - started
    return {
        "ok": done.returncode == 0,
        "seconds": seconds,
        "log": done.stderr,
        "without": ["torch", "triton"],
    }


# The shared build runs with torch and triton unimportable, as on a docs-only
# install (`pip install -e '.[docs]'`): one build shows both that the site
# builds strictly and that the hooks never reach for them (tests/test_site.py).
BUILD_WITHOUT_TORCH = (
    "import sys; sys.modules['torch'] = None; sys.modules['triton'] = None\n"
    "from mkdocs.__main__ import cli\n"
    "cli(['build', '--strict', '-d', {site!r}])\n"
)


@pytest.fixture(scope="session")
def built_site(tmp_path_factory):
    """Build the whole site once, strictly, and return (site_dir, seconds, log).
    No -q: it hides the warnings that --strict turns into a failure.

    Under pytest-xdist the workers share one build: the first to ask builds
    it in the run's shared temporary folder, under a lock, and records how it
    went; the others wait for the lock and read the record (a failed build
    fails them too, without building again)."""
    import json

    from filelock import FileLock

    if not os.environ.get("PYTEST_XDIST_WORKER"):
        site = tmp_path_factory.mktemp("site")
        built = _build_site(site)
    else:
        shared = tmp_path_factory.getbasetemp().parent  # one per run, all workers
        site, record = shared / "site", shared / "site-build.json"
        with FileLock(str(shared / "site.lock")):
            if not record.is_file():
                record.write_text(json.dumps(_build_site(site)))
        built = json.loads(record.read_text())
    assert built["ok"], f"mkdocs build --strict failed:\n{built['log'][-3000:]}"
    assert built["without"] == ["torch", "triton"]  # see BUILD_WITHOUT_TORCH
    return site, built["seconds"], built["log"]
