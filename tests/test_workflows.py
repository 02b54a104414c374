"""The GitHub Actions workflows: zizmor finds nothing of medium severity or
above, and the GPU workflow keeps the rules that make a self-hosted GPU
runner safe (no pull-request triggers, pinned actions, least privilege)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO_ROOT

WORKFLOWS = REPO_ROOT / ".github" / "workflows"
GPU = WORKFLOWS / "gpu.yml"
_PINNED = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40}$")


def _zizmor() -> str:
    beside = Path(sys.executable).parent / "zizmor"
    found = str(beside) if beside.exists() else shutil.which("zizmor")
    if not found:
        pytest.fail(
            "zizmor is missing: it is in the test extra (pip install -e '.[test]')"
        )
    return found


def _load(path: Path) -> dict:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    # YAML 1.1 reads the key `on` as True.
    doc["on"] = doc.pop(True, doc.get("on"))
    return doc


def test_zizmor_finds_nothing_of_medium_severity_or_above():
    proc = subprocess.run(
        [
            _zizmor(),
            "--offline",
            "--format",
            "json",
            "--min-severity",
            "medium",
            str(WORKFLOWS),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode in (0, 10, 11, 12, 13, 14), proc.stderr  # 1x: findings
    findings = json.loads(proc.stdout or "[]")
    summary = [
        f"{f['ident']} ({f['determinations']['severity']}): {f['desc']}"
        for f in findings
    ]
    assert not summary, "\n".join(summary)


def test_gpu_workflow_never_runs_pull_request_code():
    triggers = _load(GPU)["on"]
    assert set(triggers) == {"push", "workflow_dispatch"}
    assert triggers["push"] == {"branches": ["main"]}


def test_gpu_workflow_has_least_privilege():
    doc = _load(GPU)
    assert doc["permissions"] == {}
    assert "concurrency" in doc
    jobs = doc["jobs"]
    for name, job in jobs.items():
        perms = job.get("permissions")
        assert perms is not None, f"job {name} must set its permissions"
        assert perms.get("contents") in (None, "read"), name
    writers = {n for n, j in jobs.items() if "write" in j["permissions"].values()}
    assert writers == {"deploy"}
    assert jobs["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}
    assert jobs["measure"]["runs-on"] == ["self-hosted", "linux", "gpu"]


def test_every_action_is_pinned_and_checkout_drops_credentials():
    for path in sorted(WORKFLOWS.glob("*.yml")):
        for job in _load(path)["jobs"].values():
            for step in job.get("steps", []):
                uses = step.get("uses")
                if uses is None:
                    continue
                assert _PINNED.match(uses), f"{path.name}: {uses} is not pinned by SHA"
                if uses.startswith("actions/checkout@"):
                    assert step.get("with", {}).get("persist-credentials") is False


def test_gpu_workflow_runs_the_runner_then_the_staleness_gate_then_the_build():
    steps = _load(GPU)["jobs"]["measure"]["steps"]
    runs = [s.get("run", "") for s in steps]
    order = [
        next(i for i, r in enumerate(runs) if "make gpu" in r),
        next(i for i, r in enumerate(runs) if "make stale" in r),
        next(i for i, r in enumerate(runs) if "make build" in r),
    ]
    assert order == sorted(order)
    assert not any("git push" in r or "git commit" in r for r in runs)  # read-only
