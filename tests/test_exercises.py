"""The exercise checker: each reference solution passes, each broken attempt
fails with the message that names its mistake.

Solutions and attempts run in this process (the interpreter is already on, see
conftest); one test goes through the command line, subprocess and timeout.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from triton_course.exercises import SOLUTIONS_DIR, registry
from triton_course.exercises._check import check

EXERCISES = registry()

# name -> (text in the solution, replacement, words the report must contain)
BROKEN = {
    "axpy": (
        "(a * x + y).to(out_ptr.dtype.element_ty), mask=mask)",
        "(a * x + y).to(out_ptr.dtype.element_ty))",
        "past the end of the output made by torch.empty_like",
    ),
    "catch_missing_mask": (
        "n, guard = 1000, 2048",
        "n, guard = 2048, 2048",
        "returned False, but this one writes past the end",
    ),
    "softmax_temperature": (
        'other=-float("inf")',
        "other=0.0",
        "elements differ: max abs error",
    ),
    "online_logsumexp": (
        "s = s * tl.exp(m - new_m) + tl.exp(x - new_m)",
        "s = s + tl.exp(x - new_m)",
        "elements differ: max abs error",
    ),
    "matmul_bias_relu": (
        "acc = tl.maximum(acc + bias[None, :], 0.0)",
        "acc = acc + bias[None, :]",
        "elements differ: max abs error",
    ),
}


def test_every_exercise_has_a_solution_and_a_broken_attempt():
    assert set(EXERCISES) == set(BROKEN)
    for name in EXERCISES:
        assert (SOLUTIONS_DIR / f"{name}.py").is_file(), name


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_solution_passes(name, capsys):
    status = check(EXERCISES[name], SOLUTIONS_DIR / f"{name}.py")
    report = capsys.readouterr().out
    assert status == 0, report
    assert "cases passed" in report and "Next, on a GPU:" in report


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_attempt_fails_with_the_right_message(name, tmp_path, capsys):
    old, new, expected = BROKEN[name]
    source = (SOLUTIONS_DIR / f"{name}.py").read_text()
    assert old in source, f"the mutation for {name} no longer applies"
    attempt = tmp_path / f"{name}_attempt.py"
    attempt.write_text(source.replace(old, new))
    status = check(EXERCISES[name], attempt)
    report = capsys.readouterr().out
    assert status == 1, report
    assert expected in report, report
    assert "FAIL" in report and "Next, on a GPU:" not in report


def _attempt(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "attempt.py"
    path.write_text(text)
    return path


def test_unwritten_elements_are_named(tmp_path, capsys):
    source = (SOLUTIONS_DIR / "axpy.py").read_text()
    attempt = _attempt(
        tmp_path, source.replace("offsets < n_elements", "offsets < n_elements - 1")
    )
    assert check(EXERCISES["axpy"], attempt) == 1
    report = capsys.readouterr().out
    assert (
        "1 of 7 elements are NaN where the reference is not (first at index 6)"
        in report
    )


def test_missing_function_and_syntax_error(tmp_path, capsys):
    assert (
        check(EXERCISES["axpy"], _attempt(tmp_path, "def scale(a, x):\n    pass\n"))
        == 1
    )
    assert "does not define axpy(a, x, y)" in capsys.readouterr().out
    assert check(EXERCISES["axpy"], _attempt(tmp_path, "def axpy(a, x, y)\n")) == 1
    report = capsys.readouterr().out
    assert "could not be imported: SyntaxError" in report and "line 1" in report


def test_exception_shows_the_attempts_traceback_once(tmp_path, capsys):
    text = "def axpy(a, x, y):\n    raise ValueError('no kernel yet')\n"
    assert check(EXERCISES["axpy"], _attempt(tmp_path, text)) == 1
    report = capsys.readouterr().out
    assert "raised ValueError: no kernel yet" in report
    assert report.count("Traceback (most recent call last)") == 1
    assert 'attempt.py", line 2, in axpy' in report
    assert "_check.py" not in report  # the checker's own frames are hidden


def test_modified_input_and_wrong_dtype(tmp_path, capsys):
    text = (
        "def axpy(a, x, y):\n    y.mul_(1.0 + 1e-3)\n    return (a * x + y).double()\n"
    )
    assert check(EXERCISES["axpy"], _attempt(tmp_path, text)) == 1
    report = capsys.readouterr().out
    assert "input 3 was modified" in report
    assert "result has dtype torch.float64, expected torch.float32" in report


def test_bfloat16_only_failures_get_the_interpreter_hint(tmp_path, capsys):
    source = (SOLUTIONS_DIR / "axpy.py").read_text()
    attempt = _attempt(tmp_path, source.replace(".to(tl.float32)", ""))
    assert check(EXERCISES["axpy"], attempt) == 1
    report = capsys.readouterr().out
    assert (
        "FAIL n=7 a=-0.5 bfloat16" in report and "FAIL n=7 a=-0.5 float32" not in report
    )
    assert "hint: triton 3.9's interpreter" in report


def _cli(*args, timeout=300):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    return subprocess.run(
        [sys.executable, "-m", "triton_course.exercises", *args],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def test_command_line(tmp_path):
    listing = _cli("list")
    assert listing.returncode == 0
    for name in EXERCISES:
        assert name in listing.stdout
    ok = _cli(
        "check", "catch_missing_mask", str(SOLUTIONS_DIR / "catch_missing_mask.py")
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "All 3 cases passed" in ok.stdout
    assert _cli("check", "no_such_exercise", str(tmp_path)).returncode == 2
    slow = _attempt(tmp_path, "import time\ndef axpy(a, x, y):\n    time.sleep(60)\n")
    stuck = _cli("check", "axpy", str(slow), "--timeout", "8")
    assert stuck.returncode == 1 and "was stopped" in stuck.stdout
