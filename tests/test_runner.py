"""The GPU runner on the CPU: discovery, validation, writing, merging, safety.

The measuring path runs for real (kernels under the interpreter) but with a
FAKE timer and a fake GPU description, writing only under tmp_path: no test
depends on the interpreter's speed, and no fixture data goes near data/.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import os
import re
import shutil
import sys
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from triton_course import timings as T
from triton_course.runner import cli, worker
from triton_course.runner import discovery as D
from triton_course.runner import plots as P
from triton_course.runner.measure import Environment, RunnerError, rate

FIXTURES = Path(__file__).parent / "fixtures" / "runner"


# ---------------------------------------------------------------- helpers ---
def fake_env(scale: float = 1.0, fail_triton_after: int | None = None) -> Environment:
    """A stand-in GPU: numbers come from the work, never from a clock."""
    calls = {"n": 0}

    def timer(fn, work):
        calls["n"] += 1
        if fail_triton_after is not None and calls["n"] > fail_triton_after:
            raise RuntimeError("simulated failure mid-run")
        fn()
        # rounds differ a little (by the call count), as a real GPU's would
        gpu = scale * (1e-3 + work * 1e-9) * (1 + 0.01 * (calls["n"] % 3))
        return {"gpu_ms": gpu, "wall_ms": 2 * gpu, "launch_hidden": True}

    return Environment(
        device="cpu",
        gpu={"slug": "fake-test-gpu", "name": "Fake Test GPU", "sm_count": 1},
        provenance={
            "gpu": "Fake Test GPU",
            "sm_count": 1,
            "driver": "none",
            "cuda": "none",
            "torch": "test",
            "triton": "test",
            "python": "test",
            "commit": "0" * 40,
            "date": "2026-01-01T00:00:00Z",
            # the validator demands "cuda"; the path guard keeps this run in tmp
            "device": "cuda",
        },
        timer=timer,
        rooflines=lambda metrics: {
            "bandwidth": {"name": "copy bandwidth", "value": 100.0, "unit": "GB/s"},
            "compute": {"name": "bf16 matmul rate", "value": 1.0, "unit": "TFLOP/s"},
        },
        compile=lambda fn: fn,  # torch.compile of a peer needs a GPU here
        fake=True,
        vendor_peaks=FAKE_VENDOR_PEAKS,  # vendor_peaks.py has no fake GPU
    )


# test values, as a datasheet would give them for the fake GPU
FAKE_VENDOR_PEAKS = {
    "bandwidth": {"value": 150.0, "unit": "GB/s", "source": "fake test datasheet"},
    "compute": {"value": 2.0, "unit": "TFLOP/s", "source": "fake test datasheet"},
    "l2": None,
}


FIXTURE_SIZES = '"sizes": [{"n": 64}, {"n": 256}, {"n": 1024}],'
# The runner's tests check its wiring, not the kernel: 7 programs a dtype
# instead of 21 under the interpreter (a full block, then two masked tails)
# halve every run's CPU time. tests/test_dram_bytes.py needs the fixture's own.
SMALL_SIZES = '"sizes": [{"n": 64}, {"n": 100}, {"n": 200}],'


def copy_tiny_scale(snippets_dir: Path) -> Path:
    """The fixture snippet, copied into ``snippets_dir`` with SMALL_SIZES."""
    text = (FIXTURES / "snippets" / "tiny_scale.py").read_text()
    assert FIXTURE_SIZES in text  # else the copy would keep the large sizes
    path = snippets_dir / "tiny_scale.py"
    path.write_text(text.replace(FIXTURE_SIZES, SMALL_SIZES))
    return path


@pytest.fixture
def repo(tmp_path):
    """A throw-away repository holding the fixture snippet."""
    (tmp_path / "snippets").mkdir()
    copy_tiny_scale(tmp_path / "snippets")
    (tmp_path / "notebooks").mkdir()
    return tmp_path


def do_run(repo, env=None, **kw):
    kw.setdefault("skip_notebooks", True)
    return cli.run(
        repo,
        repo / "data",
        repo / "plots",
        repo / "notebooks",
        env=env or fake_env(),
        check=kw.pop("check", lambda snippets: None),
        **kw,
    )


def snapshot(root: Path) -> dict:
    return {
        p.relative_to(root): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


# -------------------------------------------------------------- discovery ---
def test_discovers_vector_add_in_the_real_snippets():
    found = D.discover(REPO_ROOT / "snippets")
    names = [d["name"] for s in found for d in s.benchmarks]
    assert "vector_add" in names
    benches, _ = D.static_names(REPO_ROOT / "snippets" / "vector_add.py")
    assert benches == ["vector_add"]


def test_every_real_description_is_valid_and_names_are_static():
    for path in D.snippet_files(REPO_ROOT / "snippets"):
        D.static_names(path)  # the staleness check reads names without torch
    D.discover(REPO_ROOT / "snippets")  # raises DescriptionError if any is off


def test_malformed_description_fails_with_a_clear_error(tmp_path):
    shutil.copytree(FIXTURES / "bad_snippets", tmp_path / "snippets")
    with pytest.raises(
        D.DescriptionError, match=r"bad_bench.py: missing keys \['dtypes', 'work'\]"
    ):
        D.discover(tmp_path / "snippets")


def _good():
    return {
        "name": "ok",
        "title": "OK",
        "params": ["n"],
        "sizes": [{"n": 4}],
        "dtypes": ["float32"],
        "metric": "bandwidth",
        "work": lambda s, d: 1,
        "make_inputs": lambda s, d, dev: (),
        "triton": lambda: None,
        "peers": {"PyTorch eager": lambda: None},
    }


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d.update(name="Bad-Name"), "snake_case"),
        (lambda d: d.update(sizes=[{"m": 4}]), "exactly the keys"),
        (lambda d: d.update(sizes=[{"n": 4.5}]), "integers"),
        (lambda d: d.update(dtypes=["float33"]), "is not one of"),
        (lambda d: d.update(metric="speed"), "'metric' must be one of"),
        (lambda d: d.update(work=3), "'work' must be callable"),
        (lambda d: d.update(peers={}), "non-empty dict"),
        (lambda d: d.update(peers={"Triton": lambda: None}), "reserved"),
        (lambda d: d.update(compile="cuBLAS"), "not a peer"),
        (lambda d: d.update(extra=1), "unknown keys"),
        (lambda d: d.update(report_untimed=True), "beside a 'report'"),
        (
            lambda d: d.update(report=lambda: {}, report_untimed="yes"),
            "must be True or False",
        ),
        (
            lambda d: d.update(
                peers={"SDPA": lambda: None, "PyTorch eager": lambda: None}
            ),
            "must be the first peer",
        ),
    ],
    ids=[
        "name",
        "size-keys",
        "size-int",
        "dtype",
        "metric",
        "work",
        "no-peers",
        "reserved-peer",
        "compile",
        "unknown-key",
        "untimed-report-alone",
        "untimed-report-not-bool",
        "eager-first",
    ],
)
def test_description_errors(change, message):
    desc = _good()
    change(desc)
    with pytest.raises(D.DescriptionError, match=message):
        D.check_description(desc, "snippets/x.py")
    assert D.check_description(_good(), "snippets/x.py")["name"] == "ok"


def test_duplicate_names_and_unknown_only_are_rejected(repo):
    shutil.copy(repo / "snippets" / "tiny_scale.py", repo / "snippets" / "tiny_copy.py")
    with pytest.raises(D.DescriptionError, match="used by both"):
        D.discover(repo / "snippets")
    (repo / "snippets" / "tiny_copy.py").unlink()
    with pytest.raises(D.DescriptionError, match="no benchmark, capture or snippet"):
        D.discover(repo / "snippets", only="nope")
    assert [
        d["name"]
        for d in D.discover(repo / "snippets", only="tiny_scale_flops")[0].benchmarks
    ] == ["tiny_scale_flops"]


def test_gpu_test_selection_takes_each_snippets_module_and_skips_cpu_only_ones():
    picked = cli.select_tests(
        REPO_ROOT / "tests", D.snippet_files(REPO_ROOT / "snippets")
    )
    names = [p.name for p in picked]
    assert "test_vector_add.py" in names
    assert "test_runner.py" not in names and "test_workflows.py" not in names


# ------------------------------------------------------- measuring + data ---
def test_fake_run_writes_a_valid_file_with_provenance_and_plots(repo):
    written = do_run(repo)
    data = repo / "data" / "fake-test-gpu.json"
    assert data in written
    timings = T.load_file(data)
    bench = timings.benchmarks["tiny_scale"]
    assert bench["peers"] == ["Triton", "PyTorch eager", "Broken", "torch.compile"]
    assert bench["snippet"] == "snippets/tiny_scale.py"
    assert bench["snippet_sha256"] == T.sha256_of(repo / "snippets" / "tiny_scale.py")
    assert bench["provenance"]["device"] == "cuda"
    assert len(bench["rows"]) == 6  # 3 sizes x 2 dtypes
    row = bench["rows"][0]
    assert set(row["results"]) == {"Triton", "PyTorch eager", "torch.compile"}
    tri = row["results"]["Triton"]
    assert tri["q25_ms"] <= tri["median_ms"] <= tri["q75_ms"]
    assert len(tri["rounds_ms"]) == bench["timing"]["rounds"] == 7
    assert tri["wall_ms"] > tri["median_ms"]  # the fake launch path doubles it
    assert set(bench["clocks"]) == {"start", "end"}
    assert tri["rate"] == pytest.approx(
        rate(row["work"], tri["median_ms"], "bandwidth")
    )
    assert row["work"] == 2 * 64 * 4
    assert "always fails" in bench["notes"]["absent"]["Broken"]
    assert bench["notes"]["report"] == {"BLOCK_SIZE": 64}
    flops = timings.benchmarks["tiny_scale_flops"]
    assert flops["unit"] == "TFLOP/s" and flops["roofline"]["value"] == 1.0
    assert (
        timings.captures["tiny_scale_meta"]["text"]
        == "BLOCK_SIZE = 64\nnum_warps = 4\n"
    )
    plot = repo / "plots" / "tiny_scale-fake-test-gpu.svg"
    assert plot in written  # three sizes: a curve
    assert not (
        repo / "plots" / "tiny_scale_flops-fake-test-gpu.svg"
    ).exists()  # one size


def test_rate_units():
    assert rate(3e9, 1.0, "bandwidth") == pytest.approx(3000.0)  # 3 GB in 1 ms
    assert rate(2e12, 2.0, "compute") == pytest.approx(1000.0)  # 2 TFLOP in 2 ms


def test_only_replaces_one_record_and_keeps_the_others(repo):
    do_run(repo)
    before = json.loads((repo / "data" / "fake-test-gpu.json").read_text())
    do_run(repo, env=fake_env(scale=2.0), only="tiny_scale_flops", skip_captures=True)
    after = json.loads((repo / "data" / "fake-test-gpu.json").read_text())
    assert after["benchmarks"]["tiny_scale"] == before["benchmarks"]["tiny_scale"]
    assert after["captures"] == before["captures"]
    old = before["benchmarks"]["tiny_scale_flops"]["rows"][0]["results"]["Triton"]
    new = after["benchmarks"]["tiny_scale_flops"]["rows"][0]["results"]["Triton"]
    assert new["median_ms"] == pytest.approx(2 * old["median_ms"])


def test_a_full_run_drops_records_no_snippet_describes(repo):
    do_run(repo)
    doc = json.loads((repo / "data" / "fake-test-gpu.json").read_text())
    doc["benchmarks"]["gone"] = copy.deepcopy(doc["benchmarks"]["tiny_scale_flops"])
    T.write_atomic(repo / "data" / "fake-test-gpu.json", doc)
    do_run(repo)
    assert "gone" not in T.load_file(repo / "data" / "fake-test-gpu.json").benchmarks


# ---------------------------------------------------------------- safety ---
def test_triton_failure_mid_run_leaves_every_file_byte_identical(repo):
    do_run(repo)
    before = snapshot(repo)
    with pytest.raises(RunnerError, match="Triton failed"):
        do_run(repo, env=fake_env(scale=3.0, fail_triton_after=4))
    assert snapshot(repo) == before  # no temp files left either


def test_failed_correctness_check_writes_nothing(repo):
    def failing_check(snippets):
        raise RunnerError("correctness checks failed (pytest exit 1)")

    with pytest.raises(RunnerError, match="correctness"):
        do_run(repo, check=failing_check)
    assert not (repo / "data").exists() and not (repo / "plots").exists()


def test_failed_capture_writes_nothing(repo):
    src = repo / "snippets" / "tiny_scale.py"
    src.write_text(
        src.read_text().replace(
            'lambda: "BLOCK_SIZE = 64\\nnum_warps = 4"', "lambda: 1 / 0"
        )
    )
    with pytest.raises(RunnerError, match="capture 'tiny_scale_meta'"):
        do_run(repo)
    assert not (repo / "data").exists()


def test_stage_commit_is_all_or_nothing(tmp_path):
    keep = tmp_path / "a.txt"
    keep.write_text("old")
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a directory should be")
    stage = cli.Stage()
    stage.add(keep, "new")
    stage.add(blocker / "b.txt", "cannot be written")
    with pytest.raises(OSError):
        stage.commit()
    assert keep.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "blocker"]


def test_run_refuses_without_cuda(tmp_path, capsys):
    # conftest set TRITON_INTERPRET=1 (no GPU here): the real run must refuse.
    rc = cli.main(["run", "--data-dir", str(tmp_path / "d"), "--skip-notebooks"])
    assert rc == 1
    err = capsys.readouterr().err
    assert "nothing was written" in err
    assert "TRITON_INTERPRET" in err or "no CUDA GPU" in err
    assert not (tmp_path / "d").exists()


def test_fake_env_may_not_write_into_the_repository(repo):
    with pytest.raises(RunnerError, match="refusing to write"):
        cli.run(
            repo,
            REPO_ROOT / "data" / "timings",
            repo / "plots",
            repo / "notebooks",
            env=fake_env(),
            check=lambda s: None,
            skip_notebooks=True,
        )


def test_validator_rejects_data_not_measured_on_cuda(repo):
    do_run(repo)
    path = repo / "data" / "fake-test-gpu.json"
    doc = json.loads(path.read_text())
    doc["benchmarks"]["tiny_scale"]["provenance"]["device"] = "cpu"
    with pytest.raises(T.TimingDataError, match="only numbers measured on a CUDA GPU"):
        T.validate(doc, path)
    doc = json.loads(path.read_text())
    doc["captures"]["tiny_scale_meta"]["text"] = 3
    with pytest.raises(T.TimingDataError, match="'text' must be a string"):
        T.validate(doc, path)


def test_no_fixture_or_fake_data_under_data():
    for path in (REPO_ROOT / "data" / "timings").rglob("*.json"):
        doc = json.loads(path.read_text())
        assert "fake" not in doc["gpu"]["slug"] and "test" not in doc["gpu"]["slug"]


# -------------------------------------------------------------- notebooks ---
def _notebook(code: str) -> str:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(code)]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    return nbformat.writes(nb)


def test_notebooks_are_executed_and_a_failing_one_writes_nothing(repo, monkeypatch):
    """Real notebook workers and kernels (about 5 CPU-seconds each), so one
    test covers what needs them: a notebook executed and stored, and one
    failing while the tests run, which fails the run and writes nothing."""
    nb_dir = repo / "notebooks"
    (nb_dir / "ok.ipynb").write_text(_notebook("print('hello from the kernel')"))
    real = cli.execute_notebook_isolated
    returned = {}

    def execute(path):
        returned[path.name] = real(path)
        return returned[path.name]

    monkeypatch.setattr(cli, "execute_notebook_isolated", execute)
    do_run(repo, skip_notebooks=False)
    # no timing cells: executed whole in the concurrent phase, its text returned
    assert isinstance(returned["ok.ipynb"], str)
    stored = json.loads((nb_dir / "ok.ipynb").read_text())
    assert "hello from the kernel" in "".join(stored["cells"][0]["outputs"][0]["text"])

    # Now zz_bad fails in its real kernel while the tests still run. ok.ipynb's
    # real run is above: here a stand-in returns new text, which a run that
    # wrote anything would store.
    (nb_dir / "zz_bad.ipynb").write_text(_notebook("raise SystemError('broken cell')"))
    before = snapshot(repo)
    started = threading.Event()

    def execute_again(path):
        started.set()
        if path.name == "ok.ipynb":
            return _notebook("print('executed again')")
        return real(path)

    monkeypatch.setattr(cli, "execute_notebook_isolated", execute_again)
    seen = {}

    def check(snippets):  # the tests: still running when the notebooks start
        seen["overlap"] = started.wait(timeout=60)

    with pytest.raises(RunnerError, match="zz_bad.ipynb failed") as err:
        do_run(repo, skip_notebooks=False, check=check)
    assert seen["overlap"], "the notebooks did not run while the tests ran"
    assert "notebook zz_bad.ipynb" in str(err.value)
    assert "SystemError" in str(err.value) and "broken cell" in str(err.value)
    assert snapshot(repo) == before


# ------------------------------------------------------------- staleness ---
def test_stale_and_missing_are_listed(repo):
    do_run(repo)
    lines, problems = cli.stale_report(repo / "data", repo / "snippets", repo)
    assert problems == 0 and "up to date" in lines[0]
    src = repo / "snippets" / "tiny_scale.py"
    src.write_text(src.read_text() + "\n# a change\n")
    (repo / "snippets" / "newer.py").write_text(
        'BENCHMARK = {"name": "newer_bench", "title": "t"}\n'
    )
    lines, problems = cli.stale_report(repo / "data", repo / "snippets", repo)
    text = "\n".join(lines)
    assert "STALE   tiny_scale " in text and "STALE   tiny_scale_flops" in text
    assert "STALE   capture tiny_scale_meta" in text
    assert "MISSING newer_bench" in text
    assert problems == 4


def test_capture_is_missing_only_when_no_gpu_has_it(repo):
    do_run(repo)
    data = repo / "data"
    (first,) = data.glob("*.json")
    doc = json.loads(first.read_text())
    # A second GPU that measured the benchmarks but made no capture.
    doc["gpu"]["slug"] = "second-gpu"
    doc.pop("captures", None)
    (data / "second-gpu.json").write_text(json.dumps(doc))
    lines, problems = cli.stale_report(data, repo / "snippets", repo)
    assert problems == 0, lines
    first.write_text(json.dumps(doc | {"gpu": json.loads(first.read_text())["gpu"]}))
    lines, problems = cli.stale_report(data, repo / "snippets", repo)
    assert problems == 2 and "MISSING capture tiny_scale_meta" in "\n".join(lines)


def test_stale_cli_exit_codes(tmp_path, capsys, repo):
    assert cli.main(["stale", "--data-dir", str(tmp_path / "none")]) == 0
    assert "no timing data yet" in capsys.readouterr().out
    do_run(repo)  # fake-test-gpu has none of the real snippets' benchmarks
    assert cli.main(["stale", "--data-dir", str(repo / "data")]) == 1
    assert "MISSING vector_add" in capsys.readouterr().out


# ------------------------------------------------------ plots and the hook ---
def test_svg_is_valid_and_themeable(repo):
    do_run(repo)
    svg = (repo / "plots" / "tiny_scale-fake-test-gpu.svg").read_text()
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg") and root.get("viewBox") == "0 0 640 600"  # 2 dtypes
    assert svg.count("\n") == 1  # one line: safe to inline in Markdown
    assert 'fill="currentColor"' in svg and "measured on this GPU in this run" in svg
    assert "vendor spec-sheet peak (fake datasheet)" in svg
    for peer in ("Triton", "PyTorch eager", "torch.compile"):
        assert f">{peer}<" in svg
    assert "#000" not in svg and "black" not in svg and "white" not in svg
    assert not P.wants_plot({"rows": [{"size": {"n": 1}}], "plot": True})


def load_hook():
    spec = importlib.util.spec_from_file_location(
        "_measured_hook", REPO_ROOT / "hooks" / "measured.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["_measured_hook"] = module
    spec.loader.exec_module(module)
    return module


def test_hook_renders_plot_and_capture_tabs_from_fixture_data(repo):
    hook = load_hook()
    assert "Not yet measured on a GPU" in hook.render_plot(
        "tiny_scale", [], repo, repo / "plots"
    )
    assert "Not yet captured on a GPU" in hook.render_capture(
        "tiny_scale_meta", [], repo
    )
    do_run(repo)
    gpus = T.load_dir(repo / "data")
    plot_md = hook.render_plot("tiny_scale", gpus, repo, repo / "plots")
    assert plot_md.startswith('===! "Fake Test GPU"')
    assert '    <div class="course-plot" markdown="0"><svg' in plot_md
    # without the file the plot is drawn from the data
    (repo / "plots" / "tiny_scale-fake-test-gpu.svg").unlink()
    assert "<svg" in hook.render_plot("tiny_scale", gpus, repo, repo / "plots")
    cap_md = hook.render_capture("tiny_scale_meta", gpus, repo)
    assert "    ```text\n    BLOCK_SIZE = 64\n    num_warps = 4\n    ```" in cap_md
    assert hook.STALE_TEXT.capitalize() not in cap_md
    src = repo / "snippets" / "tiny_scale.py"
    src.write_text(src.read_text() + "\n")
    assert hook.STALE_TEXT.capitalize() in hook.render_capture(
        "tiny_scale_meta", gpus, repo
    )
    assert hook.STALE_TEXT.capitalize() in hook.render_plot(
        "tiny_scale", gpus, repo, repo / "plots"
    )


def test_plot_and_capture_survive_markdown_conversion(repo):
    import markdown

    hook = load_hook()
    do_run(repo)
    gpus = T.load_dir(repo / "data")
    md = hook.render_plot("tiny_scale", gpus, repo, repo / "plots")
    md += "\n\n" + hook.render_capture("tiny_scale_meta", gpus, repo)
    html = markdown.markdown(
        md,
        extensions=[
            "admonition",
            "md_in_html",
            "pymdownx.superfences",
            "pymdownx.tabbed",
        ],
        extension_configs={"pymdownx.tabbed": {"alternate_style": True}},
    )
    assert "<svg" in html and "&lt;svg" not in html
    assert "BLOCK_SIZE = 64" in html and 'class="tabbed-set' in html


def test_hook_page_directives_are_dispatched(repo):
    hook = load_hook()
    do_run(repo)

    class Page:
        class file:
            src_uri = "x.md"

    hook._state["gpus"] = T.load_dir(repo / "data")
    hook._state["root"] = repo
    config = {"docs_dir": str(repo / "docs")}
    (repo / "docs" / "assets").mkdir(parents=True)
    shutil.copytree(repo / "plots", repo / "docs" / "assets" / "plots")
    out = hook.on_page_markdown(
        "[[plot tiny_scale]]\n\n[[capture tiny_scale_meta]]\n\n```\n[[plot nope]]\n```",
        Page,
        config,
        None,
    )
    assert "<svg" in out and "BLOCK_SIZE = 64" in out
    assert "[[plot nope]]" in out  # directives inside code blocks are left alone


def _outputs(path: Path) -> str:
    cells = json.loads(path.read_text())["cells"]
    return json.dumps([c.get("outputs") for c in cells])


def _stand_in_notebook(path: Path) -> str:
    """For ``execute_notebook_isolated`` where a test checks which notebooks
    run, not how (test_notebooks_are_executed_… runs real ones): the notebook
    with the output its one cell, a print, would give."""
    doc = json.loads(path.read_text())
    source = "".join(doc["cells"][0]["source"])  # a list of lines, as stored
    printed = re.fullmatch(r"print\('(.*)'\)", source).group(1)
    output = {"output_type": "stream", "name": "stdout", "text": printed + "\n"}
    doc["cells"][0]["outputs"] = [output]
    return json.dumps(doc)


def test_only_runs_the_notebooks_built_from_the_measured_snippet(repo, monkeypatch):
    monkeypatch.setattr(cli, "execute_notebook_isolated", _stand_in_notebook)
    nb_dir = repo / "notebooks"
    (nb_dir / "uses_it.md").write_text('Text\n\n--8<-- "tiny_scale.py:kernel"\n')
    (nb_dir / "uses_it.ipynb").write_text(_notebook("print('ran uses_it')"))
    (nb_dir / "other.ipynb").write_text(_notebook("print('ran other')"))
    do_run(repo, only="tiny_scale_flops", skip_notebooks=False)
    assert "ran uses_it" in _outputs(nb_dir / "uses_it.ipynb")
    assert "ran other" not in _outputs(nb_dir / "other.ipynb")
    data = (repo / "data" / "fake-test-gpu.json").read_bytes()
    do_run(repo, only="other", skip_notebooks=False)  # a notebook alone
    assert "ran other" in _outputs(nb_dir / "other.ipynb")
    assert (repo / "data" / "fake-test-gpu.json").read_bytes() == data


def test_written_files_are_readable_like_any_other(repo):
    do_run(repo)
    for path in (repo / "data").iterdir():
        assert path.stat().st_mode & 0o044 == 0o044  # not mkstemp's 0600


def test_skip_tests_refuses_to_write_into_the_repository(repo):
    env = fake_env()
    env.fake = False  # as if on a GPU: --skip-tests alone must still refuse
    with pytest.raises(RunnerError, match="--skip-tests"):
        cli.run(
            repo,
            REPO_ROOT / "data" / "timings",
            repo / "plots",
            repo / "notebooks",
            env=env,
            skip_tests=True,
        )


def test_skip_tests_with_skip_notebooks_may_leave_the_notebooks_dir_default(repo):
    env = fake_env()
    env.fake = False
    written = cli.run(
        repo,
        repo / "data",
        repo / "plots",
        REPO_ROOT / "docs" / "notebooks",  # the default; untouched when skipped
        env=env,
        skip_tests=True,
        skip_notebooks=True,
        skip_captures=True,  # no ncu here: the DRAM check needs a real GPU
    )
    assert all(REPO_ROOT not in p.resolve().parents for p in written)


def test_pytest_command_runs_the_gpu_tests_with_the_gpu_visible():
    cmd = cli.pytest_command(["tests/test_vector_add.py"], workers=1)
    assert cmd[1:4] == ["-m", "pytest", "-q"]
    assert cmd[-3:] == ["-m", "not browser", "tests/test_vector_add.py"]
    assert "-n" not in cmd


def test_skip_captures_keeps_the_stored_captures(repo):
    do_run(repo)
    before = T.load_file(repo / "data" / "fake-test-gpu.json").captures
    do_run(repo, skip_captures=True)
    assert T.load_file(repo / "data" / "fake-test-gpu.json").captures == before


# ---------------------------------------------------------- capture kinds ---
def test_python_capture_runs_a_script_with_its_env(tmp_path):
    from triton_course.runner import measure as M

    script = tmp_path / "show.py"
    script.write_text(
        "import os, sys\n"
        "print('noise')\n"
        "print('LOG', os.environ['TORCH_LOGS'], sys.argv[1:])\n"
        "print('interpret' if 'TRITON_INTERPRET' in os.environ else 'no interpret')\n"
    )
    spec = {
        "python": {
            "args": ["--demo"],
            "env": {"TORCH_LOGS": "output_code"},
            "match": "LOG|interpret",
            "script": str(script),
        }
    }
    kind, text = M.run_capture("demo", lambda: spec, script, tmp_path)
    assert kind == "python"
    assert text == "LOG output_code ['--demo']\nno interpret\n"


def test_ncu_capture_builds_the_command_and_needs_ncu(tmp_path, monkeypatch):
    from triton_course.runner import measure as M

    fake_ncu = tmp_path / "ncu"
    fake_ncu.write_text('#!/bin/sh\necho "ncu called with: $*"\n')
    fake_ncu.chmod(0o755)
    monkeypatch.setattr(M, "find_ncu", lambda: str(fake_ncu))
    spec = M.capture_ncu(["--ncu-target"], ["gpu__time_duration.sum"], "_k_kernel")
    kind, text = M.run_capture("prof", spec, tmp_path / "snip.py", tmp_path)
    assert kind == "ncu"
    assert "--clock-control none --launch-count 1" in text
    assert "--metrics gpu__time_duration.sum --kernel-name regex:_k_kernel" in text
    assert text.rstrip().endswith("snip.py --ncu-target")
    monkeypatch.setattr(M, "find_ncu", lambda: None)
    with pytest.raises(RunnerError, match="ncu not found"):
        M.run_capture("prof", spec, tmp_path / "snip.py", tmp_path)
    with pytest.raises(RunnerError, match="must give a string"):
        M.run_capture("bad", lambda: 42, tmp_path / "snip.py", tmp_path)


# ------------------------------------------------------------ concurrency ---
# The untimed steps (tests, notebooks, untimed captures, warm-up) run at the
# same time; the timed benchmarks only after every one of them has ended.
def _untimed_capture(repo, capture_src: str) -> Path:
    """An untimed capture, ``tiny_notes``, in a snippet of its own that imports
    no torch: its worker process starts in a fraction of a CPU-second, not
    three as tiny_scale's would (test_warm_up_process_wiring runs a worker
    that imports torch)."""
    src = repo / "snippets" / "tiny_notes.py"
    src.write_text(
        "import os\nfrom pathlib import Path\n\n"
        f'CAPTURES = {{"tiny_notes": {capture_src}}}\n'
        'UNTIMED_CAPTURES = ("tiny_notes",)\n'
    )
    return src


# A notebook failing while the tests run: checked with a real kernel in
# test_notebooks_are_executed_and_a_failing_one_writes_nothing.


def test_every_failure_of_the_concurrent_phase_is_named(repo, monkeypatch):
    (repo / "notebooks" / "a.ipynb").write_text(_notebook("print(1)"))

    def fail_notebook(path):
        raise RunnerError(f"notebook {path.name} failed:\nNameError: x")

    def failing_check(snippets):
        raise RunnerError("correctness checks failed (pytest exit 1):\nFAILED t.py")

    monkeypatch.setattr(cli, "execute_notebook_isolated", fail_notebook)
    with pytest.raises(RunnerError) as err:
        do_run(repo, skip_notebooks=False, check=failing_check)
    message = str(err.value)
    assert "2 step(s) failed" in message
    assert "- tests: correctness checks failed" in message and "FAILED t.py" in message
    assert "- notebook a.ipynb: notebook a.ipynb failed" in message
    assert not (repo / "data").exists() and not (repo / "plots").exists()


def test_the_timed_phase_waits_for_every_concurrent_step(repo):
    ended = {}

    def slow_check(snippets):
        time.sleep(0.3)
        ended["tests"] = time.monotonic()

    def stubborn_warm(snippets, stop):
        stop.wait(timeout=60)  # told to stop once the tests are done...
        time.sleep(0.3)  # ...and even so it takes a while to end
        ended["warm"] = time.monotonic()

    env = fake_env()
    timer = env.timer

    def checking_timer(fn, work):
        ended.setdefault("first timing", time.monotonic())
        return timer(fn, work)

    env.timer = checking_timer
    do_run(repo, env=env, check=slow_check, warm=stubborn_warm)
    assert ended["tests"] < ended["first timing"]
    assert ended["warm"] < ended["first timing"]


def test_the_warm_up_is_best_effort(repo, capsys):
    calls = []
    called = threading.Event()

    def failing_warm(snippets, stop):
        calls.append([d["name"] for s in snippets for d in s.benchmarks])
        called.set()
        raise RuntimeError("out of memory while compiling")

    written = do_run(repo, warm=failing_warm, check=lambda s: called.wait(60))
    assert calls == [["tiny_scale", "tiny_scale_flops"]]
    assert repo / "data" / "fake-test-gpu.json" in written
    out = capsys.readouterr().out
    assert "[warm-up] warm-up: RuntimeError('out of memory" in out
    assert "ignored: best effort" in out
    # No tests, notebooks or captures to overlap with: no warm-up at all.
    calls.clear()
    do_run(repo, warm=failing_warm, skip_tests=True, skip_captures=True)
    assert calls == []


def test_an_untimed_capture_runs_in_its_own_process_while_the_tests_run(repo):
    marker = repo / "capture-ran"
    src = _untimed_capture(
        repo,
        "lambda: (Path(__file__).with_name('..').joinpath('capture-ran').touch(),"
        " f'pid {os.getpid()}')[1]",
    )
    seen = {}

    def check(snippets):  # returns only once the capture has run
        deadline = time.monotonic() + 120
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        seen["overlap"] = marker.exists()

    do_run(repo, check=check)
    assert seen["overlap"]
    cap = T.load_file(repo / "data" / "fake-test-gpu.json").captures["tiny_notes"]
    assert cap["text"].startswith("pid ") and cap["text"] != f"pid {os.getpid()}\n"
    assert cap["snippet_sha256"] == T.sha256_of(src)


def _declare_untimed_report(repo, report_src: str) -> Path:
    src = repo / "snippets" / "tiny_scale.py"
    text = src.read_text().replace(
        '"report": lambda: {"BLOCK_SIZE": 64},',
        f'"report": {report_src},\n        "report_untimed": True,',
    )
    src.write_text("from pathlib import Path\n" + text)
    return src


def test_an_untimed_report_is_made_while_the_tests_run_not_in_the_timed_phase(
    repo, monkeypatch
):
    marker = repo / "report-ran"
    _declare_untimed_report(
        repo,
        "lambda: (Path(__file__).parent.parent.joinpath('report-ran').touch(),"
        " {'made': 'beside the tests'})[1]",
    )
    seen = {}

    def check(snippets):  # returns only once the report has been made
        deadline = time.monotonic() + 120
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        seen["overlap"] = marker.exists()

    timed = []
    real = cli.measure_benchmark

    def measure(desc, *args, **kw):
        timed.append((desc["name"], marker.exists(), kw.get("untimed_report")))
        return real(desc, *args, **kw)

    monkeypatch.setattr(cli, "measure_benchmark", measure)
    do_run(repo, check=check)
    assert seen["overlap"]
    assert ("tiny_scale", True, {"made": "beside the tests"}) in timed
    data = T.load_file(repo / "data" / "fake-test-gpu.json")
    report = data.benchmarks["tiny_scale"]["notes"]["report"]
    assert report == {"made": "beside the tests"}


def test_a_failing_untimed_report_writes_nothing_and_is_named(repo):
    _declare_untimed_report(repo, "lambda: 1 / 0")
    with pytest.raises(RunnerError, match=r"tiny_scale: report\(\) failed.*Zero"):
        do_run(repo)
    assert not (repo / "data").exists()


def test_measure_refuses_an_untimed_report_that_was_not_made(repo):
    src = _declare_untimed_report(repo, "lambda: {}")
    (snippet,) = D.discover(repo / "snippets")
    desc = snippet.benchmarks[0]
    with pytest.raises(RunnerError, match="its untimed report was not made"):
        cli.measure_benchmark(desc, "snippets/tiny_scale.py", "0", fake_env(), {})
    assert worker.main(["report", str(src), "tiny_scale", str(repo / "r.json")]) == 0
    assert json.loads((repo / "r.json").read_text()) == {"report": {}}
    assert worker.main(["report", str(src), "nope", str(repo / "r.json")]) == 1
    assert "no benchmark 'nope'" in json.loads((repo / "r.json").read_text())["error"]


def test_the_real_untimed_reports_read_no_autotuner():
    # An autotuner's choice exists only in the process that timed the rows.
    for s in D.discover(REPO_ROOT / "snippets"):
        for desc in s.benchmarks:
            if desc.get("report_untimed"):
                code = desc["report"].__code__
                names = set(code.co_names) | set(code.co_varnames)
                assert not {"_best", "_best_configs", "_tuned_configs"} & names


def test_a_failing_untimed_capture_writes_nothing(repo):
    _untimed_capture(repo, "lambda: 1 / 0")
    with pytest.raises(RunnerError) as err:
        do_run(repo)
    assert "capture tiny_notes: capture 'tiny_notes': raised" in str(err.value)
    assert "ZeroDivisionError" in str(err.value)
    assert not (repo / "data").exists()


def test_untimed_captures_must_be_known_and_not_ncu(repo):
    src = repo / "snippets" / "tiny_scale.py"
    base = src.read_text()
    src.write_text(base + '\nUNTIMED_CAPTURES = ("nope",)\n')
    with pytest.raises(D.DescriptionError, match="'nope', which is not in CAPTURES"):
        D.discover(repo / "snippets")
    src.write_text(
        base
        + '\nCAPTURES["prof"] = {"ncu": {"args": []}}\n'
        + 'UNTIMED_CAPTURES = ("prof",)\n'
    )
    with pytest.raises(D.DescriptionError, match="must run alone on the GPU"):
        D.discover(repo / "snippets")


def test_the_real_snippets_mark_no_counter_or_timing_capture_untimed():
    for s in D.discover(REPO_ROOT / "snippets"):
        for name in s.untimed:
            assert "ncu" not in name and "profile" not in name
            assert "first_call" not in name
        # Triton's on-disk autotuning cache would hand the timed run a config
        # chosen while the tests shared the GPU.
        assert "cache_results" not in s.path.read_text()


def test_run_unsets_triton_autotuning_cache(repo, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_AUTOTUNING", "1")
    do_run(repo)
    assert "TRITON_CACHE_AUTOTUNING" not in os.environ


def test_run_pins_one_triton_cache_for_every_process(repo, monkeypatch):
    # unset, Inductor would point it at its own directory mid-process
    import triton

    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    seen = []
    do_run(repo, check=lambda snippets: seen.append(os.environ["TRITON_CACHE_DIR"]))
    assert seen == [str(triton.knobs.cache.dir)]
    assert os.environ["TRITON_CACHE_DIR"] == seen[0]
    monkeypatch.setenv("TRITON_CACHE_DIR", "/somewhere/else")
    assert cli.share_one_triton_cache() == "/somewhere/else"


def test_time_per_phase_is_logged(repo, capsys):
    do_run(repo, warm=lambda snippets, stop: stop.wait(60))
    out = capsys.readouterr().out
    summary = out[out.index("time per phase:") :]
    for phase in (
        "discovery",
        "concurrent phase",
        "    tests",
        "    warm-up",
        "rooflines",
        "benchmarks",
        "captures (alone)",
        "writing",
        "total",
    ):
        assert f"] {phase}" in summary or f"]   {phase}" in summary, phase


def test_stream_command_prefixes_lines_and_stop_ends_the_process(capsys, monkeypatch):
    stop = threading.Event()
    code = "import time\nprint('first', flush=True)\ntime.sleep(120)\n"
    real_log = cli.log

    def log(line, lane=None):  # stop once the line is out, not after a fixed time
        real_log(line, lane)
        if line == "first":
            stop.set()

    monkeypatch.setattr(cli, "log", log)
    t0 = time.monotonic()
    rc, tail = cli.stream_command(
        [sys.executable, "-c", code], REPO_ROOT, dict(os.environ), "lane", stop
    )
    assert time.monotonic() - t0 < 30 and rc != 0
    assert tail == ["first"]
    assert "] [lane] first" in capsys.readouterr().out


def test_pytest_failures_are_named_in_the_error(tmp_path, monkeypatch):
    # The child pytest inherits this: without the installed plugins (those of
    # pytest-notebook import nbclient, 5 CPU-seconds) it starts in half a second.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    (tmp_path / "test_x.py").write_text(
        "def test_ok():\n    pass\n\ndef test_bad():\n    assert 1 == 2\n"
    )
    with pytest.raises(RunnerError, match=r"(?s)pytest exit 1.*FAILED test_x.py::"):
        cli.run_pytest(tmp_path, [tmp_path / "test_x.py"], workers=1)


def test_warm_benchmark_calls_each_function_once_per_row():
    desc = D.discover(FIXTURES / "snippets", only="tiny_scale")[0].benchmarks[0]
    calls = []
    desc = dict(desc, triton=lambda x: calls.append(x.shape))
    from triton_course.runner import measure as M

    failed = M.warm_benchmark(desc, fake_env(), say=lambda m: None)
    assert len(calls) == 6 and failed == 6  # the "Broken" peer, every row


def test_untimed_autotuning_launches_each_config_once(monkeypatch):
    import triton
    import triton.language as tl
    from triton.runtime.autotuner import Autotuner

    from triton_course.runner import measure as M

    monkeypatch.setattr(Autotuner, "do_bench", Autotuner.__dict__["do_bench"])
    M.untimed_autotuning()
    launches = {16: 0, 32: 0}

    def hook(block):
        def count(nargs):
            launches[block] += 1

        return count

    @triton.autotune(
        [triton.Config({"B": b}, pre_hook=hook(b)) for b in launches], key=["n"]
    )
    @triton.jit
    def fill(out_ptr, n, B: tl.constexpr):
        offs = tl.program_id(0) * B + tl.arange(0, B)
        tl.store(out_ptr + offs, 1.0, mask=offs < n)

    import torch

    out = torch.zeros(40)
    fill[lambda meta: (triton.cdiv(40, meta["B"]),)](out, 40)
    assert launches == {16: 2, 32: 1}  # each timed once, the chosen one re-run
    assert out.sum().item() == 40


def test_warm_up_process_wiring(repo, monkeypatch, capsys):
    """The real warm-up (worker.py) on the CPU: no GPU, so it says so; with a
    pretend GPU, every row is tried and each failure counted, never raised."""
    from triton_course.runner import measure as M
    from triton_course.runner import worker

    stop = threading.Event()
    cli.warm_up_isolated(repo, None, stop)  # a real subprocess, no CUDA here
    assert "[warm-up] no CUDA GPU: nothing to warm up" in capsys.readouterr().out

    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    fractions = []
    monkeypatch.setattr(
        torch.cuda, "set_per_process_memory_fraction", lambda f: fractions.append(f)
    )
    for name in ("untimed_autotuning", "configure_torch", "cleanup_cuda"):
        monkeypatch.setattr(M, name, lambda: None)
    args = argparse.Namespace(repo_root=str(repo), only="tiny_scale", part="0/1")
    assert worker.warm(args) == 0
    out = capsys.readouterr().out
    assert "tiny_scale: compiled in" in out and "6 call(s) failed" in out
    # It must leave most of the GPU's memory to the tests running beside it.
    assert fractions and 0 < fractions[0] <= 0.25


def test_the_phone_plot_wraps_its_title_and_thins_its_size_labels():
    rows = [
        {
            "size": {"M": m, "N": 4096},
            "dtype": "float16",
            "work": 1.0,
            "results": {"Triton": {"median_ms": 1.0, "rate": 1.0 + m / 1e4}},
        }
        for m in range(256, 256 * 21, 256)
    ]
    bench = {
        "title": "A title much longer than a phone is wide",
        "params": ["M", "N"],
        "peers": ["Triton"],
        "unit": "TFLOP/s",
        "roofline": {"name": "tensor-core peak", "value": 3.0, "unit": "TFLOP/s"},
        "rows": rows,
    }
    gpu = {"name": "Fixture GPU"}
    wide, narrow = (P.render_svg(bench, gpu, layout=L) for L in (P.WIDE, P.NARROW))
    title_lines = lambda svg: len(re.findall(r'font-weight="600"', svg))  # noqa: E731
    assert title_lines(wide) == 1 and title_lines(narrow) >= 2

    # every size keeps its point; only the size labels are thinned
    def size_labels(svg):
        texts = re.findall(r"<text[^>]*>([^<]*)<", svg)
        sizes = {str(m) for m in range(256, 256 * 21, 256)}
        return [t for t in texts if t.replace(" ", "") in sizes or "¹" in t]

    assert wide.count('class="point"') == narrow.count('class="point"') == 20
    assert len(size_labels(wide)) == 20
    assert 0 < len(size_labels(narrow)) <= P.NARROW.max_xlabels
    for svg in (wide, narrow):
        assert svg.count('class="point"') == 20
    # no text runs past the phone plot's right edge (an estimate: 6.6 px a
    # character at 11 px, as the layout assumes)
    for attrs, text in re.findall(r"<text ([^>]*)>([^<]*)</text>", narrow):
        if "translate(" in attrs:  # the rotated y label and slanted x labels
            continue
        x = float(re.search(r'x="([\d.]+)"', attrs).group(1))
        width = 6.6 * len(text)
        if 'text-anchor="end"' in attrs:
            right = x
        elif 'text-anchor="middle"' in attrs:
            right = x + width / 2
        else:
            right = x + width
        assert right <= P.NARROW.w + 1, text


def test_a_ratio_point_is_the_median_of_round_by_round_ratios():
    # Medians 1.0 ms and 1.3 ms (ratio of medians 1.3), but round by round the
    # peer took 1.0, 1.0, 1.9 times as long: the median of those is 1.0, the
    # number tables and [[measured ratio:]] print. The plot must agree.
    tri = {"median_ms": 1.0, "q25_ms": 1.0, "q75_ms": 2.0}
    tri["rounds_ms"] = [1.0, 2.0, 1.0]
    peer = {"median_ms": 1.3, "q25_ms": 1.3, "q75_ms": 2.0}
    peer["rounds_ms"] = [1.0, 2.0, 1.9]
    row = {"size": {"n": 1}, "dtype": "float32", "work": 1.0}
    row["results"] = {"Triton": tri, "eager": peer}
    bench = {"rows": [row]}
    (point,) = P.ratio_points(bench, "float32", "eager")
    paired = T.paired_ratio(row, "eager")
    assert point["ratio"] == pytest.approx(paired.median) == pytest.approx(1.0)
    assert (point["low"], point["high"]) == (paired.low, paired.high)


def test_compare_judges_a_newer_peer_in_the_run_that_has_it_only(tmp_path):
    # data/reproducibility predates the SDPA (FLASH backend) column: the
    # page's claims on it are judged on the newer file alone, not an error
    from triton_course.runner import compare

    src = REPO_ROOT / "data" / "timings" / "nvidia-h100-80gb-hbm3.json"
    doc = json.loads(src.read_text(encoding="utf-8"))
    peer = "SDPA (FLASH backend)"
    for name in ("flash_attention_fwd", "flash_attention_bwd"):
        bench = doc["benchmarks"][name]
        assert peer in bench["peers"]
        bench["peers"].remove(peer)
        for row in bench["rows"]:
            del row["results"][peer]
    older = tmp_path / src.name
    older.write_text(json.dumps(doc), encoding="utf-8")
    new = compare.page_judgements(REPO_ROOT / "docs", T.load_file(src))
    old = compare.page_judgements(REPO_ROOT / "docs", T.load_file(older))
    on_peer = {k for k in new if peer in k[1]}
    assert on_peer and not on_peer & set(old)
    assert set(old) == set(new) - on_peer


def test_compare_lists_a_page_verdict_that_flips(tmp_path):
    from triton_course.runner import compare

    src = REPO_ROOT / "data" / "timings" / "nvidia-h100-80gb-hbm3.json"
    old = T.load_file(src)
    judged = compare.page_judgements(REPO_ROOT / "docs", old)
    assert len(judged) > 50  # every verdict, target and claim on the H100
    # The same data: every row judged the same way.
    same = compare.verdict_report(old, old, REPO_ROOT / "docs")
    assert same[0].startswith(f"page verdicts: {len(judged)} judged rows in both; 0 ")
    # One row that a [[verdict]] calls met, with Triton made 10x slower there:
    # its ratio and its share of the roofline both fall far below any target.
    key = next(k for k, v in judged.items() if v == "met" and "[[verdict" in k[1])
    name = re.search(r"bench=(\S+)", key[1]).group(1)
    doc = json.loads(src.read_text(encoding="utf-8"))
    row = next(
        r for r in doc["benchmarks"][name]["rows"] if compare._row_text(r) == key[2]
    )
    tri = row["results"]["Triton"]
    for field in ("median_ms", "q25_ms", "q75_ms"):
        tri[field] *= 10
    tri["rounds_ms"] = [t * 10 for t in tri["rounds_ms"]]
    tri["rate"] /= 10
    changed = tmp_path / src.name
    changed.write_text(json.dumps(doc), encoding="utf-8")
    lines = compare.verdict_report(old, T.load_file(changed), REPO_ROOT / "docs")
    assert " 0 flipped" not in lines[0] and "flipped" in lines[0]
    assert any(key[1] in line and "met → missed" in line for line in lines[1:])
