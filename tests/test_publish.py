"""The per-GPU publish gate (``python -m triton_course.runner.publish``) on the
CPU: artifacts built from small format-2 documents that cover a temporary copy
of the repository's snippets, merged into a temporary tree. Nothing here goes
near the repository's data, plots or notebooks."""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from triton_course import timings as T
from triton_course.runner import discovery as D
from triton_course.runner import publish as P

COMMIT = "c0ffee" + "0" * 34
OLD_COMMIT = "0ld" + "0" * 37
NOTEBOOKS = ("first.ipynb", "second.ipynb")


# ---------------------------------------------------------------- fixtures ---
def _provenance(slug: str, commit: str) -> dict:
    return {
        "gpu": f"GPU {slug}",
        "sm_count": 1,
        "driver": "test",
        "cuda": "test",
        "torch": "test",
        "triton": "test",
        "python": "test",
        "commit": commit,
        "date": "2026-01-01T00:00:00Z",
        "device": "cuda",
        "gpu_uuid": f"uuid-{slug}",
    }


def _result(ms: float) -> dict:
    return {
        "rounds_ms": [ms] * 3,
        "median_ms": ms,
        "q25_ms": ms,
        "q75_ms": ms,
        "wall_ms": 2 * ms,
        "launch_hidden": True,
        "rate": 1.0 / ms,
    }


@functools.cache
def _names(text: str) -> tuple[list[str], list[str]]:
    # parsing every snippet for every document would dominate these tests
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "snippet.py"
        path.write_text(text, encoding="utf-8")
        return D.static_names(path)


def format2_doc(root: Path, slug: str, commit: str = COMMIT, skip=()) -> dict:
    """A small valid document that measured every benchmark and capture the
    snippets under ``root`` describe, as they are now (except ``skip``)."""
    prov = _provenance(slug, commit)
    benchmarks, captures = {}, {}
    for path in D.snippet_files(root / "snippets"):
        rel, sha = f"snippets/{path.name}", T.sha256_of(path)
        benches, caps = _names(path.read_text(encoding="utf-8"))
        for name in benches:
            benchmarks[name] = {
                "title": name,
                "snippet": rel,
                "snippet_sha256": sha,
                "metric": "bandwidth",
                "unit": "GB/s",
                "params": ["n"],
                "peers": ["Triton"],
                "roofline": {"name": "copy bandwidth", "value": 10.0, "unit": "GB/s"},
                "provenance": prov,
                "timing": {"rounds": 3, "method": "fixture"},
                "clocks": {"start": {}, "end": {}},
                "rows": [
                    {
                        "size": {"n": 1},
                        "dtype": "float32",
                        "work": 1,
                        "results": {"Triton": _result(1.0)},
                    }
                ],
            }
        for name in caps:
            captures[name] = {
                "snippet": rel,
                "snippet_sha256": sha,
                "kind": "text",
                "text": "fixture",
                "provenance": prov,
            }
    for name in skip:
        benchmarks.pop(name)
    doc = {
        "format_version": 2,
        "gpu": {"slug": slug, "name": f"GPU {slug}", "sm_count": 1},
        "benchmarks": benchmarks,
        "captures": captures,
    }
    T.validate(doc, Path(f"{slug}.json"))  # the fixture itself is valid format 2
    return doc


def notebook(output: str) -> str:
    cell = {
        "cell_type": "code",
        "execution_count": 1,
        "metadata": {},
        "outputs": [{"name": "stdout", "output_type": "stream", "text": output}],
        "source": ["print('hello')\n"],
    }
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(nb, indent=1) + "\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def artifact(base: Path, doc, slug: str | None = None, notebooks=None) -> Path:
    """One GPU job's upload: its data file, a plot per benchmark, notebooks."""
    slug = slug or doc["gpu"]["slug"]
    directory = base / f"gpu-results-{slug}"
    data = doc if isinstance(doc, str) else json.dumps(doc, indent=1)
    write(directory / "data" / "timings" / f"{slug}.json", data)
    names = ["vector_add"] if isinstance(doc, str) else list(doc["benchmarks"])[:2]
    for name in names:
        write(directory / "docs/assets/plots" / f"{name}-{slug}.svg", f"<svg>{slug}")
    for name in NOTEBOOKS:
        text = notebook(f"run on {slug}\n") if notebooks is None else notebooks
        write(directory / "docs/notebooks" / name, text)
    write(directory / "compare.txt", f"compare for {slug}\n")
    return directory


@pytest.fixture
def tree(tmp_path):
    """A throw-away tree: the repository's snippets, the committed data and
    plots of gpu-a from an older run, and notebooks not yet executed."""
    root = tmp_path / "tree"
    shutil.copytree(
        REPO_ROOT / "snippets",
        root / "snippets",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    old = format2_doc(root, "gpu-a", OLD_COMMIT)
    write(root / "data/timings/gpu-a.json", json.dumps(old))
    write(root / "data/timings/README.md", "kept\n")
    write(root / "docs/assets/plots/vector_add-gpu-a.svg", "<svg>old")
    write(root / "docs/assets/plots/retired_bench-gpu-a.svg", "<svg>old")
    for name in NOTEBOOKS:
        write(root / "docs/notebooks" / name, notebook(""))
    return root


def snapshot(root: Path) -> dict:
    return {
        p.relative_to(root): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def change_a_snippet(root: Path) -> None:
    src = root / "snippets" / "vector_add.py"
    src.write_text(src.read_text() + "\n# changed after the measurement\n")


def run_main(tree, *args) -> int:
    return P.main(["--root", str(tree), *map(str, args)])


# ------------------------------------------------------------------- gate ---
def test_only_the_current_gpu_is_merged_and_the_stale_one_is_named(
    tree, tmp_path, capsys
):
    stale = artifact(tmp_path, format2_doc(tree, "gpu-b"))  # measured, then ...
    change_a_snippet(tree)  # ... the snippet changed
    current = artifact(tmp_path, format2_doc(tree, "gpu-a"))
    assert run_main(tree, stale, current, "--commit", COMMIT) == 0
    out = capsys.readouterr().out
    assert "published gpu-a" in out
    assert "left out gpu-b" in out and "STALE   vector_add" in out
    data = tree / "data/timings"
    assert sorted(p.name for p in data.iterdir()) == ["README.md", "gpu-a.json"]
    assert (data / "gpu-a.json").read_bytes() == (
        current / "data/timings/gpu-a.json"
    ).read_bytes()
    plots = sorted(p.name for p in (tree / "docs/assets/plots").iterdir())
    assert plots == sorted(p.name for p in (current / "docs/assets/plots").iterdir())
    assert not any("gpu-b" in p for p in plots)  # no tab for the stale GPU
    assert "retired_bench-gpu-a.svg" not in plots  # the new run did not make it
    assert not list(tree.rglob(".*.json.*"))  # no staging file left behind


def test_an_svg_of_no_gpu_known_here_is_left_alone(tree, tmp_path):
    figure = write(tree / "docs/assets/plots/diagram.svg", "<svg>figure")
    other = write(tree / "docs/assets/plots/vector_add-gpu-q.svg", "<svg>q")
    assert run_main(tree, artifact(tmp_path, format2_doc(tree, "gpu-a"))) == 0
    assert figure.exists() and other.exists()
    assert not (tree / "docs/assets/plots/retired_bench-gpu-a.svg").exists()


def test_a_benchmark_the_run_lacks_keeps_the_gpu_out(tree, tmp_path, capsys):
    partial = format2_doc(tree, "gpu-b", skip=["vector_add"])
    whole = format2_doc(tree, "gpu-a")
    code = run_main(tree, artifact(tmp_path, partial), artifact(tmp_path, whole))
    assert code == 0
    assert "left out gpu-b" in capsys.readouterr().out
    assert not (tree / "data/timings/gpu-b.json").exists()


def test_no_current_gpu_fails_and_leaves_the_tree_byte_identical(
    tree, tmp_path, capsys
):
    arts = [artifact(tmp_path, format2_doc(tree, s)) for s in ("gpu-a", "gpu-b")]
    change_a_snippet(tree)
    before = snapshot(tree)
    assert run_main(tree, *arts) == 1
    err = capsys.readouterr().err
    assert "no GPU passed the gate" in err and "nothing was changed" in err
    assert "left out gpu-a" in err and "left out gpu-b" in err
    assert snapshot(tree) == before


def test_data_of_another_commit_is_refused(tree, tmp_path, capsys):
    old = artifact(tmp_path, format2_doc(tree, "gpu-a", OLD_COMMIT))
    before = snapshot(tree)
    assert run_main(tree, old, "--commit", COMMIT) == 1
    err = capsys.readouterr().err
    assert f"measured at commit {OLD_COMMIT}, not at {COMMIT}" in err
    assert snapshot(tree) == before
    # the commit is what refused it: without --commit the same data passes
    assert run_main(tree, old) == 0


def test_a_capture_of_another_commit_is_refused(tree, tmp_path, capsys):
    doc = format2_doc(tree, "gpu-a")
    name = next(iter(doc["captures"]))
    doc["captures"][name]["provenance"] = _provenance("gpu-a", OLD_COMMIT)
    assert run_main(tree, artifact(tmp_path, doc), "--commit", COMMIT) == 1
    assert OLD_COMMIT in capsys.readouterr().err


def test_a_gpu_that_uploaded_nothing_is_not_published_on_old_data(
    tree, tmp_path, capsys
):
    # gpu-a's committed data is current for the snippets, but no run of this
    # commit uploaded it: only gpu-b appears
    assert run_main(tree, artifact(tmp_path, format2_doc(tree, "gpu-b"))) == 0
    assert "left out gpu-a: no run of this commit" in capsys.readouterr().out
    assert not (tree / "data/timings/gpu-a.json").exists()
    assert not list((tree / "docs/assets/plots").glob("*-gpu-a.svg"))


# -------------------------------------------------------------- notebooks ---
def test_notebooks_come_from_the_named_gpu(tree, tmp_path, capsys):
    arts = [artifact(tmp_path, format2_doc(tree, s)) for s in ("gpu-a", "gpu-b")]
    assert run_main(tree, *arts, "--notebooks-from", "gpu-b") == 0
    assert "notebooks executed on gpu-b" in capsys.readouterr().out
    for name in NOTEBOOKS:
        text = (tree / "docs/notebooks" / name).read_text()
        assert "run on gpu-b" in text and "run on gpu-a" not in text


def test_notebooks_default_to_the_first_gpu_that_passes(tree, tmp_path, capsys):
    stale = artifact(tmp_path, format2_doc(tree, "gpu-a"))
    change_a_snippet(tree)
    fresh = [artifact(tmp_path, format2_doc(tree, s)) for s in ("gpu-c", "gpu-b")]
    arts = [stale, *fresh]
    assert run_main(tree, *arts) == 0
    assert "notebooks executed on gpu-b" in capsys.readouterr().out
    assert "run on gpu-b" in (tree / "docs/notebooks/first.ipynb").read_text()


def test_notebooks_from_a_gpu_left_out_is_an_error(tree, tmp_path, capsys):
    stale = artifact(tmp_path, format2_doc(tree, "gpu-b"))
    change_a_snippet(tree)
    current = artifact(tmp_path, format2_doc(tree, "gpu-a"))
    before = snapshot(tree)
    assert run_main(tree, stale, current, "--notebooks-from", "gpu-b") == 1
    assert "--notebooks-from gpu-b: not a GPU being published" in (
        capsys.readouterr().err
    )
    assert snapshot(tree) == before


def test_notebooks_of_another_commit_are_refused(tree, tmp_path, capsys):
    other = notebook("run on gpu-a\n").replace("print('hello')", "print('old')")
    art = artifact(tmp_path, format2_doc(tree, "gpu-a"), notebooks=other)
    before = snapshot(tree)
    assert run_main(tree, art) == 1
    assert "its cells differ" in capsys.readouterr().err
    assert snapshot(tree) == before


# ------------------------------------------------------- malformed input ---
@pytest.mark.parametrize(
    "data, message",
    [
        ("{not json", "not valid JSON"),
        (json.dumps({"format_version": 1, "gpu": {}}), "format_version"),
    ],
    ids=["not-json", "format-1"],
)
def test_a_malformed_data_file_is_named_and_left_out(
    tree, tmp_path, capsys, data, message
):
    bad = artifact(tmp_path, data, slug="gpu-b")
    good = artifact(tmp_path, format2_doc(tree, "gpu-a"))
    assert run_main(tree, bad, good) == 0
    out = capsys.readouterr().out
    (line,) = [line for line in out.splitlines() if "left out gpu-b" in line]
    assert "not valid format-2 data" in line and message in line
    assert "gpu-b.json" in line  # the file is named
    assert not (tree / "data/timings/gpu-b.json").exists()


def _two_for_one(tree, tmp_path):
    doc = format2_doc(tree, "gpu-a")
    first = artifact(tmp_path / "one", doc)
    return [first, artifact(tmp_path / "two", doc)]


def _wrong_plot(tree, tmp_path):
    art = artifact(tmp_path, format2_doc(tree, "gpu-a"))
    write(art / "docs/assets/plots/vector_add-gpu-z.svg", "<svg>")
    return [art]


def _misnamed(tree, tmp_path):
    art = artifact(tmp_path, format2_doc(tree, "gpu-a"))
    (art / "data/timings/gpu-a.json").rename(art / "data/timings/gpu-x.json")
    return [art]


def _stray(tree, tmp_path):
    art = artifact(tmp_path, format2_doc(tree, "gpu-a"))
    write(art / "mkdocs.yml", "site_name: not from a GPU run\n")
    return [art]


def _no_data(tree, tmp_path):
    art = artifact(tmp_path, format2_doc(tree, "gpu-a"))
    (art / "data/timings/gpu-a.json").unlink()
    return [art]


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda tree, tmp: [tmp / "nowhere"], "no such artifact directory"),
        (lambda tree, tmp: [], "no artifact directory given"),
        (_two_for_one, "two artifacts for the GPU 'gpu-a'"),
        (_wrong_plot, "not named <bench>-gpu-a.svg"),
        (_misnamed, "named for 'gpu-x' but its gpu.slug is 'gpu-a'"),
        (_stray, "unexpected file(s) ['mkdocs.yml']"),
        (_no_data, "expected one data file"),
    ],
    ids=["missing", "none", "two-for-one", "wrong-plot", "misnamed", "stray", "empty"],
)
def test_a_malformed_artifact_is_a_clear_error_and_changes_nothing(
    tree, tmp_path, capsys, make, message
):
    dirs = make(tree, tmp_path)
    before = snapshot(tree)
    assert run_main(tree, *dirs) == 1
    err = capsys.readouterr().err
    assert message in err and "nothing was changed" in err
    assert snapshot(tree) == before


def test_the_gate_imports_neither_torch_nor_triton():
    # the merge job runs on a machine without them
    code = (
        "import sys, triton_course.runner.publish\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in ('torch', 'triton')]\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
