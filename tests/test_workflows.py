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
    # Only the GPU jobs run on the course's machines; the merge, the build and
    # the deploy run on GitHub-hosted runners.
    assert jobs["measure"]["runs-on"] == ["self-hosted", "linux", "${{ matrix.label }}"]
    for name in ("publish", "deploy"):
        assert "self-hosted" not in str(jobs[name]["runs-on"]), name


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


def _runs(job: dict) -> list[str]:
    return [s.get("run", "") for s in job["steps"]]


def _step(job: dict, action: str) -> dict:
    return next(s for s in job["steps"] if s.get("uses", "").startswith(action + "@"))


def _index(runs: list[str], text: str) -> int:
    found = [i for i, r in enumerate(runs) if text in r]
    assert found, f"no step runs {text!r}"
    return found[0]


def test_gpu_workflow_measures_each_gpu_model_on_its_own_runner():
    measure = _load(GPU)["jobs"]["measure"]
    strategy = measure["strategy"]
    assert strategy["fail-fast"] is False  # one GPU's failure stops no other
    entries = strategy["matrix"]["include"]
    labels = [e["label"] for e in entries]
    slugs = [e["slug"] for e in entries]
    assert "gpu-h100" in labels
    assert len(set(labels)) == len(labels) and len(set(slugs)) == len(slugs)
    for entry in entries:
        assert re.fullmatch(r"gpu-[a-z0-9-]+", entry["label"]), entry
        assert re.fullmatch(r"[a-z0-9-]+", entry["slug"]), entry
    assert set(strategy["matrix"]) == {"include"}  # no cross product of GPUs
    runs = _runs(measure)
    assert measure["env"]["SLUG"] == "${{ matrix.slug }}"
    # the GPU measured must be the one the label names, or nothing is uploaded
    measured = _index(runs, "make gpu")
    assert measured < _index(runs, 'test -f "data/timings/$SLUG.json"')
    assert measured < _index(runs, "runner compare")
    upload = _step(measure, "actions/upload-artifact")
    assert upload["with"]["name"] == "gpu-results-${{ matrix.label }}"
    assert upload["with"]["if-no-files-found"] == "error"


def test_one_merge_job_gates_every_gpu_then_builds_and_deploys():
    jobs = _load(GPU)["jobs"]
    publish = jobs["publish"]
    assert publish["needs"] == "measure"
    # it runs whatever the GPU jobs did: a failed GPU is left out, not the site
    assert publish["if"] in ("${{ !cancelled() }}", "${{ always() }}")
    download = _step(publish, "actions/download-artifact")
    assert download["with"]["pattern"] == "gpu-results-*"
    runs = _runs(publish)
    gate = _index(runs, "-m triton_course.runner.publish")
    assert '--commit "$GITHUB_SHA"' in runs[gate]
    assert gate < _index(runs, "make stale") < _index(runs, "make build")
    uses = [s.get("uses", "") for s in publish["steps"]]
    assert uses[-1].startswith("actions/upload-pages-artifact@")
    deploy = jobs["deploy"]
    assert deploy["needs"] == "publish"
    assert "needs.publish.result == 'success'" in deploy["if"]
    assert "github.ref == 'refs/heads/main'" in deploy["if"]
    for job in jobs.values():
        assert not any("git push" in r or "git commit" in r for r in _runs(job))
