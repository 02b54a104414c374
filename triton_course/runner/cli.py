"""``python -m triton_course.runner run|stale``: check, time, publish; or audit.

``run`` is all-or-nothing: every output (data file, plots, executed
notebooks) is staged in memory and written only after every check, notebook,
Triton timing and capture has succeeded, each file by an atomic rename.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from triton_course import timings as T
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
# (mkdocs, Chromium, zizmor, pytest-notebook) or test the runner itself on CPU.
GPU_SKIPPED_TESTS = ("test_runner.py", "test_workflows.py")
NOTEBOOK_TIMEOUT_S = 600


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
    """The test module of each snippet, plus every module with GPU-only tests."""
    picked = []
    for s in snippets:
        candidate = tests_dir / f"test_{s.stem}.py"
        if candidate.is_file():
            picked.append(candidate)
    for path in sorted(tests_dir.glob("test_*.py")) if gpu_marked else []:
        if path.name in GPU_SKIPPED_TESTS or path in picked:
            continue
        if "mark.gpu" in path.read_text(encoding="utf-8"):
            picked.append(path)
    return picked


def pytest_command(test_files: list[str], workers: int) -> list[str]:
    """pytest over these files; with pytest-xdist, ``workers`` processes share
    the GPU (the checks are compile-bound, not timed)."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    cmd += ["-m", "not browser"]
    if workers > 1 and importlib.util.find_spec("xdist") is not None:
        cmd += ["-n", str(workers)]
    return [*cmd, *test_files]


def run_pytest(repo_root: Path, test_files: list[Path], workers: int = 4) -> None:
    if not test_files:
        log("correctness: no test modules found for these snippets")
        return
    names = [str(p.relative_to(repo_root)) for p in test_files]
    cmd = pytest_command(names, workers)
    log(f"correctness: {' '.join(cmd[1:])}")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run(cmd, cwd=repo_root, env=env)
    if proc.returncode != 0:
        raise RunnerError(f"correctness checks failed (pytest exit {proc.returncode})")


# --------------------------------------------------------------- notebooks ---
_INCLUDE_RE = re.compile(r'^--8<--\s+"([\w.-]+)\.py:', re.M)


def notebook_snippets(notebook: Path, repo_root: Path) -> set[str]:
    """Stems of the snippets a notebook's recipe (notebooks/<name>.md) embeds."""
    recipe = repo_root / "notebooks" / f"{notebook.stem}.md"
    if not recipe.is_file():
        return set()
    return set(_INCLUDE_RE.findall(recipe.read_text(encoding="utf-8")))


def execute_notebook(path: Path) -> str:
    """Run a notebook top to bottom in a fresh kernel; return the .ipynb text."""
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
    test_workers: int = 4,
    commit: str | None = None,
    env: Environment | None = None,
    check=None,
) -> list[Path]:
    """The whole run; returns the files written. Raises RunnerError on failure.

    ``env`` and ``check`` are injection points for the CPU tests (a fake
    timer, no pytest subprocess); a real run builds them itself.
    """
    started = time.time()
    repo_root = Path(repo_root)
    env = env or cuda_environment(repo_root, commit)
    written_dirs = [data_dir, plots_dir] + ([] if skip_notebooks else [notebooks_dir])
    _refuse_repo_paths(env, written_dirs, skip_tests)
    log(f"GPU: {env.gpu['name']} ({env.gpu['sm_count']} SMs), slug {env.gpu['slug']}")

    notebooks = [] if skip_notebooks else D.notebook_files(notebooks_dir)
    if only and only in {nb.stem for nb in notebooks}:
        snippets = []  # --only NOTEBOOK: that notebook and its snippets' tests
        notebooks = [nb for nb in notebooks if nb.stem == only]
        used = notebook_snippets(notebooks[0], repo_root)
        tested = [p for p in D.snippet_files(repo_root / "snippets") if p.stem in used]
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
        f"found {n_bench} benchmark(s), {n_caps} capture(s), {len(snippets)} snippet(s)"
    )
    data_path = Path(data_dir) / f"{env.gpu['slug']}.json"
    existing = T.load_file(data_path) if data_path.exists() else None

    # 1. correctness on the GPU
    if skip_tests:
        log("correctness: SKIPPED (--skip-tests): writing outside the repository only")
    elif check is None:
        tests = select_tests(repo_root / "tests", tested, gpu_marked=not only)
        run_pytest(repo_root, tests, test_workers)
    else:
        check(snippets)

    stage = Stage()
    # 2. notebooks
    for nb in notebooks:
        log(f"notebook {nb.name}: executing")
        stage.add(nb, execute_notebook(nb))
        log(f"notebook {nb.name}: done")

    # 3. rooflines, then every benchmark
    metrics = {d["metric"] for s in snippets for d in s.benchmarks}
    rooflines = env.rooflines(metrics) if metrics else {}
    records = {}
    for s in snippets:
        sha = T.sha256_of(s.path)
        for desc in s.benchmarks:
            n_rows = len(desc["sizes"]) * len(desc["dtypes"])
            log(f"benchmark {desc['name']}: {n_rows} rows")
            t0 = time.time()
            records[desc["name"]] = measure_benchmark(
                desc, _rel(s.path, repo_root), sha, env, rooflines[desc["metric"]]
            )
            log(f"benchmark {desc['name']}: done in {time.time() - t0:.1f} s")
        if T.sha256_of(s.path) != sha:
            raise RunnerError(f"{s.path} changed while it was being measured")

    # 4. captures
    captures = {}
    if not skip_captures:
        for s in snippets:
            for name, spec in s.captures.items():
                t0 = time.time()
                kind, text = run_capture(name, spec, s.path, repo_root)
                captures[name] = {
                    "snippet": _rel(s.path, repo_root),
                    "snippet_sha256": T.sha256_of(s.path),
                    "kind": kind,
                    "text": text,
                    "provenance": dict(env.provenance),
                }
                lines = len(text.splitlines())
                log(f"capture {name}: {lines} lines in {time.time() - t0:.1f} s")

    # 5. the data file and the plots, then write everything at once
    if records or captures or not only:
        doc = build_doc(
            existing,
            env,
            records,
            captures,
            partial=only is not None,
            keep_captures=skip_captures,
        )
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
    log(f"done in {time.time() - started:.0f} s")
    return written


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
        default=4,
        help="pytest-xdist processes for the checks, if installed (1: none)",
    )
    r.add_argument("--commit", help="the commit measured, where git is unavailable")
    s = sub.add_parser("stale", help="list stale or missing timing data; exit 1 if any")
    s.add_argument("--data-dir", type=Path, default=REPO_ROOT / "data" / "timings")
    s.add_argument("--gpu", help="only data files whose slug contains this")
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
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
            commit=args.commit,
        )
        return 0
    except (RunnerError, D.DescriptionError, T.TimingDataError) as exc:
        print(
            f"runner: FAILED, nothing was written: {exc}", file=sys.stderr, flush=True
        )
        return 1
