"""The runner's helper processes (``python -m triton_course.runner.worker``).

The concurrent phase runs each notebook, each untimed capture and the compile
warm-up in a process of its own: nothing they do (an autotuner's choice made
while the tests share the GPU, a changed environment variable, a CUDA context)
can leak into the runner process, which times the benchmarks afterwards.

    worker notebook [--pause] NOTEBOOK RESULT_JSON
    worker capture SNIPPET NAME REPO_ROOT RESULT_JSON
    worker report SNIPPET BENCHMARK RESULT_JSON
    worker warm REPO_ROOT [--only NAME] [--part K/N]

``notebook`` and ``capture`` write ``{"text": ...}`` (plus ``"kind"``) or
``{"error": ...}`` to RESULT_JSON and exit 0 or 1; ``report`` writes a
benchmark's untimed report (``"report_untimed"``) as ``{"report": ...}``.
``warm`` prints one line per benchmark and always exits 0 unless it cannot
start at all.

``notebook --pause`` stops before the notebook's first timing cell: it frees
the kernel's cached GPU memory, prints ``cli.NOTEBOOK_PAUSED`` and its
kernel's process group, and waits for one line on stdin. ``go {JSON}`` sets
those environment variables in the kernel and executes the rest, each cell
limited to ``cli.TIMED_CELL_TIMEOUT_S``; anything else, or the end of stdin
(the runner stopped), ends it with an error and nothing executed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def _write(path: str, result: dict) -> None:
    Path(path).write_text(json.dumps(result), encoding="utf-8")


# Run in the kernel before it waits: what the notebook's cells no longer hold
# goes back to the GPU, which the tests and the benchmarks need meanwhile.
# (No name is left behind in the notebook's namespace.)
_RELEASE_GPU_MEMORY = (
    "__import__('gc').collect(); (lambda torch: torch is not None and "
    "torch.cuda.is_available() and torch.cuda.empty_cache())("
    "__import__('sys').modules.get('torch'))"
)


async def _wait_for_go(client) -> None:
    """Pause before the timing cells until the runner says go (see above)."""
    import asyncio

    from triton_course.runner import cli
    from triton_course.runner.measure import RunnerError

    await cli.run_hidden(client, _RELEASE_GPU_MEMORY)
    provisioner = getattr(client.km, "provisioner", None)
    pgid = getattr(provisioner, "pgid", None) or 0
    print(f"{cli.NOTEBOOK_PAUSED} {pgid}", flush=True)
    line = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    word, _, payload = line.strip().partition(" ")
    if word != "go":
        raise RunnerError("the run ended before this notebook's timing cells")
    env = json.loads(payload or "{}")
    await cli.run_hidden(client, f"__import__('os').environ.update({env!r})")
    client.timeout = cli.TIMED_CELL_TIMEOUT_S


def notebook(args) -> int:
    from triton_course.runner.cli import execute_notebook
    from triton_course.runner.measure import RunnerError

    try:
        text = execute_notebook(
            Path(args.notebook), before_timing=_wait_for_go if args.pause else None
        )
    except RunnerError as exc:
        _write(args.result, {"error": str(exc)})
        return 1
    _write(args.result, {"text": text})
    return 0


def capture(args) -> int:
    from triton_course.runner import discovery as D
    from triton_course.runner.measure import RunnerError, run_capture

    path = Path(args.snippet)
    try:
        try:
            spec = D.load_snippet(path).CAPTURES[args.name]
        except Exception as exc:
            raise RunnerError(
                f"capture {args.name!r}: cannot load {path}: {exc!r}"
            ) from None
        kind, text = run_capture(args.name, spec, path, Path(args.repo_root))
    except RunnerError as exc:
        _write(args.result, {"error": str(exc)})
        return 1
    _write(args.result, {"kind": kind, "text": text})
    return 0


def report(args) -> int:
    from triton_course.runner import measure as M

    try:
        result = M.untimed_report(Path(args.snippet), args.benchmark)
    except M.RunnerError as exc:
        _write(args.result, {"error": str(exc)})
        return 1
    _write(args.result, {"report": result})
    return 0


WARM_UP_MEMORY_FRACTION = 0.12  # of the GPU's memory, for each warm-up process


def warm(args) -> int:
    import torch

    from triton_course.runner import discovery as D
    from triton_course.runner import measure as M

    if not torch.cuda.is_available():
        print("no CUDA GPU: nothing to warm up")
        return 0
    # The tests run at the same time and need the GPU's memory more: a peer
    # that would fill it (naive attention at 16k tokens takes 64 GiB) fails
    # here, counted, instead of making the tests run out of memory.
    torch.cuda.set_per_process_memory_fraction(WARM_UP_MEMORY_FRACTION)
    M.untimed_autotuning()
    M.configure_torch()
    env = M.Environment(
        device="cuda",
        gpu={},
        provenance={},
        timer=None,
        rooflines=None,
        compile=M.compile_peer,
        sync=torch.cuda.synchronize,
        cleanup=M.cleanup_cuda,
        vendor_peaks={},  # nothing is timed or judged here: no peaks needed
    )
    snippets = D.discover(Path(args.repo_root) / "snippets", only=args.only)
    k, n = _part(args.part)
    benchmarks = [desc for s in snippets for desc in s.benchmarks]
    for desc in benchmarks[k::n]:  # in the timed phase's order
        t0 = time.time()
        failed = M.warm_benchmark(desc, env, say=print)
        note = f", {failed} call(s) failed (timed run: says why)" if failed else ""
        print(f"{desc['name']}: compiled in {time.time() - t0:.1f} s{note}")
    return 0


def _part(text: str) -> tuple[int, int]:
    """ "K/N" -> (K, N): this process warms benchmarks K, K + N, K + 2N, ..."""
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise SystemExit(f"--part {text!r}: expected K/N, e.g. 0/2") from None
    if not 0 <= k < n:
        raise SystemExit(f"--part {text!r}: K must be in 0..N-1")
    return k, n


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m triton_course.runner.worker")
    sub = p.add_subparsers(dest="command", required=True)
    n = sub.add_parser("notebook")
    n.add_argument("--pause", action="store_true", help="wait before timing cells")
    n.add_argument("notebook")
    n.add_argument("result")
    c = sub.add_parser("capture")
    c.add_argument("snippet")
    c.add_argument("name")
    c.add_argument("repo_root")
    c.add_argument("result")
    r = sub.add_parser("report")
    r.add_argument("snippet")
    r.add_argument("benchmark")
    r.add_argument("result")
    w = sub.add_parser("warm")
    w.add_argument("repo_root")
    w.add_argument("--only")
    w.add_argument("--part", default="0/1", help="K/N: every N-th benchmark from K")
    args = p.parse_args(argv)
    return {
        "notebook": notebook,
        "capture": capture,
        "report": report,
        "warm": warm,
    }[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
