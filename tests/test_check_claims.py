"""What the pages say about the course's own checks, held to the code (#33).

Each test backs one kind of sentence ("compiled without a GPU ... for five
compute capabilities ...", "the GPU runner checks ...", "the build fails if
...") and fails if the code stops doing what the sentence says.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from conftest import REPO_ROOT, load_snippet
from triton.runtime.autotuner import Autotuner

from triton_course import codegen, support
from triton_course.runner.cli import select_tests

DOCS = REPO_ROOT / "docs"
TESTS = REPO_ROOT / "tests"
SNIPPETS = sorted((REPO_ROOT / "snippets").glob("*.py"))
NUMBERS = {4: "four", 5: "five", 6: "six"}


def _text(path: Path) -> str:
    return " ".join(path.read_text(encoding="utf-8").split())


def _generation(label: str) -> str:
    return re.search(r"\((\w+)\)$", label).group(1)  # "A100 (Ampere)" -> Ampere


# ---------------------------------- "compiled without a GPU ... for ..." ---
# "(CI fails when a kernel changed since)": tests/test_support.py's quick
# check refuses a table whose snippets or launches changed since it was written
_TARGETS = re.compile(
    r"compiled without a GPU \(CI fails when a kernel changed since\) for (\w+)"
    r" compute capabilities"
    r" of (\w+) GPU generations: (.+?)\. "
)


def _target_sentences():
    for page in sorted(DOCS.rglob("*.md")):
        for m in _TARGETS.finditer(_text(page)):
            yield page.relative_to(REPO_ROOT), m


def test_pages_list_exactly_the_targets_the_tables_are_compiled_for():
    found = list(_target_sentences())
    assert len(found) >= 8  # the support-table pages and the reference page
    archs = sorted(support.SHARED_LIMIT)
    assert archs == sorted(codegen.ARCHS)  # both tables: the same targets
    stored = json.loads(support.DATA.read_text(encoding="utf-8"))
    assert list(stored["shared_limit"]) == [f"sm_{a}" for a in archs]
    generations = {_generation(codegen.ARCHS[a]) for a in archs}
    for page, m in found:
        count, gens, listed = m.groups()
        assert count == NUMBERS[len(archs)], (page, count)
        assert gens == NUMBERS[len(generations)], (page, gens)
        assert sorted(int(a) for a in re.findall(r"sm_(\d+)", listed)) == archs, page
        for generation in generations:
            assert f"({generation})" in listed, (page, generation)


def test_no_page_counts_five_targets_as_five_generations():
    for page in sorted(DOCS.rglob("*.md")):
        text = _text(page)
        assert "five GPU generations" not in text, page
        assert "five architectures" not in text, page


def test_every_config_of_every_autotuner_is_in_the_support_table():
    # "with each config its autotuner can choose": every autotuned kernel of
    # every snippet, whatever the snippet (not a list of known ones)
    rows = json.loads(support.DATA.read_text(encoding="utf-8"))["rows"]
    seen = 0
    for path in SNIPPETS:
        module = load_snippet(path.stem)
        for tuner in (v for v in vars(module).values() if isinstance(v, Autotuner)):
            fn = tuner.fn
            kernel = getattr(fn, "__name__", None) or fn.fn.__name__
            labels = [
                set(r["config"].split(", "))
                for r in rows
                if r["snippet"] == path.name and r["kernel"] == kernel
            ]
            for config in tuner.configs:
                parts = {
                    f"{k}={v}"
                    for k, v in config.kwargs.items()
                    if k.startswith("BLOCK") or k == "ROWS"
                }
                parts |= {f"{config.num_warps} warps", f"{config.num_stages} stages"}
                assert any(parts <= label for label in labels), (path.name, parts)
                seen += 1
    assert seen >= 40  # matmul, TMA GEMM, LayerNorm, softmax, row sums, ...


def test_every_ci_run_runs_the_whole_suite_and_builds_the_site():
    # "in every CI run": ci.yml runs `make test` (pytest over tests/, where the
    # codegen table is compiled afresh and the support table checked current)
    ci = yaml.safe_load((REPO_ROOT / ".github" / "workflows" / "ci.yml").read_text())
    commands = [
        step.get("run", "") for job in ci["jobs"].values() for step in job["steps"]
    ]
    assert any(re.match(r"make test\b", c) for c in commands)
    make = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    test_target = make.split("\ntest:")[1].split("\n\n")[0]
    # nothing deselected: only how the tests are spread over the cores
    assert re.search(r"-m pytest( -n auto --dist loadfile)?\s*$", test_target, re.M)
    assert "--strict" in make.split("\nbuild:")[1].split("\n\n")[0]
    assert re.search(
        r'testpaths = \["tests"\]', (REPO_ROOT / "pyproject.toml").read_text()
    )
    assert "test_the_committed_table_is_what_a_fresh_compile_gives" in _text(
        TESTS / "test_support.py"
    )
    assert "test_the_committed_per_gpu_table_matches_a_fresh_compile" in _text(
        TESTS / "test_compiler_claims.py"
    )


# --------------------------------------------- "the GPU runner checks ..." ---
def _gpu_lane() -> set[str]:
    return {p.name for p in select_tests(TESTS, SNIPPETS)}


def test_the_gpu_runner_compiles_every_cell_with_its_own_triton():
    # lesson 01: "the same test on the GPU runner checks that the GPU image's
    # triton compiles every cell the same way"; every compile-only module and
    # the snippet scripts run in the runner's test lane too
    lane = _gpu_lane()
    for name in ("test_compiler_claims.py", "test_module_claims.py",
                 "test_snippet_scripts.py"):  # fmt: skip
        assert name in lane, name
    for path in TESTS.glob("test_*.py"):
        if "compile_in_subprocess(" in path.read_text(encoding="utf-8"):
            assert path.name in lane, path.name


def test_the_gpu_runner_checks_what_the_interpreter_cannot():
    # lesson 02: "the GPU runner checks bf16"; the reference page: CUDA
    # tensors in the interpreter, "the GPU runner checks this too"
    lane = _gpu_lane()
    assert {"test_flash_attention.py", "test_interpreter_gaps.py"} <= lane
    flash = (TESTS / "test_flash_attention.py").read_text(encoding="utf-8")
    assert "pytest.param(torch.bfloat16, marks=pytest.mark.gpu)" in flash
    gaps = (TESTS / "test_interpreter_gaps.py").read_text(encoding="utf-8")
    marked = gaps.split("@pytest.mark.gpu")[1].split("\ndef ")[1]
    assert marked.startswith("test_cuda_tensors_work_in_the_interpreter")


# ------------------------------------------ "the build fails if a claim ..." ---
def test_a_contradicted_claim_fails_the_build():
    # how-numbers-are-made: "if the data contradicts it, or makes it too close
    # to call, the build fails" (end to end: tests/test_measured_hook.py)
    # The hook needs mkdocs, which the GPU image lacks: CPU CI checks this.
    PluginError = pytest.importorskip("mkdocs.exceptions").PluginError  # noqa: N806
    config = yaml.load(
        (REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader
    )
    assert "hooks/measured.py" in config["hooks"]
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "measured_hook", REPO_ROOT / "hooks" / "measured.py"
    )
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    assert issubclass(hook.ClaimError, ValueError)
    hook._state.update(broken_claims=["index.md:3: claim ratio:x >2 contradicted"])
    with pytest.raises(PluginError, match="1 claim"):
        hook.on_post_build({"site_dir": "/nonexistent"})
