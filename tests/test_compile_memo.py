"""tests/conftest.py's compile_in_subprocess: under pytest-xdist one worker
runs a compile script, the others read what it printed (for this run)."""

import os

import pytest
from conftest import compile_in_subprocess

# Each run of this script appends a line to the file named by its argument.
COUNTING = (
    "import json, sys\n"
    "open(sys.argv[1], 'a').write('ran\\n')\n"
    "print(json.dumps({'value': 42}))\n"
)


def test_a_script_runs_once_per_run_and_its_json_is_shared(tmp_path, monkeypatch):
    count = tmp_path / "count"
    monkeypatch.setenv("PYTEST_XDIST_TESTRUNUID", f"memo-test-{os.getpid()}")
    first = compile_in_subprocess(COUNTING, str(count))
    first["value"] = 0  # a caller changing its copy changes nobody else's
    second = compile_in_subprocess(COUNTING, str(count))
    assert second == {"value": 42}
    assert count.read_text().splitlines() == ["ran"]
    other = tmp_path / "other"  # other arguments: another script run
    assert compile_in_subprocess(COUNTING, str(other)) == {"value": 42}
    assert other.read_text().splitlines() == ["ran"]


def test_a_failing_script_is_not_kept(tmp_path, monkeypatch):
    count = tmp_path / "count"
    monkeypatch.setenv("PYTEST_XDIST_TESTRUNUID", f"memo-fail-{os.getpid()}")
    failing = COUNTING.replace("print(", "raise SystemExit(3); print(")
    for _ in range(2):
        with pytest.raises(AssertionError):
            compile_in_subprocess(failing, str(count))
    assert count.read_text().splitlines() == ["ran", "ran"]


def test_without_xdist_every_call_runs(tmp_path, monkeypatch):
    count = tmp_path / "count"
    monkeypatch.delenv("PYTEST_XDIST_TESTRUNUID", raising=False)
    for _ in range(2):
        assert compile_in_subprocess(COUNTING, str(count)) == {"value": 42}
    assert count.read_text().splitlines() == ["ran", "ran"]
