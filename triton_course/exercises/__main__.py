"""Command line: ``python -m triton_course.exercises list | check NAME FILE``."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path

from . import REPO_ROOT, registry


def _list() -> int:
    for name, exercise in registry().items():
        print(f"{name:<22} {exercise.title}  ({exercise.page})")
        print(f"{'':<22} write {exercise.signature}: {exercise.task}")
    return 0


def _check(name: str, attempt: Path, timeout: float) -> int:
    exercises = registry()
    if name not in exercises:
        print(f"no exercise {name!r}; choose one of: {', '.join(exercises)}")
        return 2
    if not attempt.is_file():
        print(f"{attempt}: no such file")
        return 2
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")])
    )
    command = [sys.executable, "-m", "triton_course.exercises", "_run", name]
    try:
        done = subprocess.run(
            command + [str(attempt.resolve())], env=env, timeout=timeout, text=True
        )
    except subprocess.TimeoutExpired:
        print(
            f"\nFAIL: the attempt ran for more than {timeout:g} s and was stopped. "
            "An endless loop in the kernel (a loop bound that never changes?), "
            "or a grid far larger than the data? The interpreter runs one "
            "program after another, so keep BLOCK_SIZE-sized programs few."
        )
        return 1
    if done.returncode < 0:
        try:
            name = signal.Signals(-done.returncode).name
        except ValueError:
            name = f"signal {-done.returncode}"
        print(
            f"\nFAIL: the checking process crashed ({name}) while running the case "
            "after the last one listed. Under the interpreter this usually means "
            "a tl.store (or tl.load) far past the end of a tensor corrupted "
            "memory: check the masks."
        )
        return 1
    return done.returncode


def _speed(name: str, attempt: Path) -> int:
    """After every case passed: on a CUDA GPU, time the attempt against the
    course's solution (_speed.py) and print the verdict; elsewhere nothing.
    Its own process, without TRITON_INTERPRET (the check ran under it).
    1 when a timed call's output was wrong (refused), else 0."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")])
    )
    command = [sys.executable, "-m", "triton_course.exercises._speed", name,
               str(attempt.resolve()), "--quiet-without-gpu"]  # fmt: skip
    done = subprocess.run(command, env=env, text=True)
    return 1 if done.returncode == 1 else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m triton_course.exercises",
        description="Check an exercise attempt under Triton's interpreter.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the exercises and what each asks for")
    check = sub.add_parser("check", help="check ATTEMPT against exercise NAME")
    check.add_argument("name")
    check.add_argument("attempt", type=Path)
    check.add_argument("--timeout", type=float, default=120, help="seconds (120)")
    check.add_argument(
        "--no-speed",
        action="store_true",
        help="skip the speed verdict that follows a pass on a CUDA GPU",
    )
    run = sub.add_parser("_run")  # internal: the checking subprocess
    run.add_argument("name")
    run.add_argument("attempt", type=Path)
    args = parser.parse_args(argv)
    if args.command == "list":
        return _list()
    if args.command == "check":
        status = _check(args.name, args.attempt, args.timeout)
        if status == 0 and not args.no_speed:
            status = _speed(args.name, args.attempt)
        return status
    from ._preflight import interpreter_problem  # imports torch: the subprocess

    problem = interpreter_problem()
    if problem:
        print(f"CANNOT CHECK: {problem}")
        return 2
    from ._check import check as run_check

    return run_check(registry()[args.name], args.attempt)


if __name__ == "__main__":
    sys.exit(main())
