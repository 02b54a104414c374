"""triton_course/excerpts.py: the compiler-stage excerpts the intro page shows.

The generator compiles vector_add_kernel for sm_90 without a GPU. Two kinds of
check:

- landmarks, on any triton version: every stage is produced, non-empty, and
  still shows what the page talks about (a masked ``tt.load`` in the Triton IR,
  predicated vector ``ld.global`` in the PTX, ``LDG`` in the SASS);
- identity with the committed files, only when the installed triton is the one
  named in their header (3.9.0, the pinned test environment). Another version
  (the GPU image has 3.6) legitimately prints different IR; that case is
  reported as a skip that names both versions and says how to regenerate, not
  as a pass and not as a failure of the code under test.
"""

import os
import re
import subprocess
import sys

import pytest
from conftest import REPO_ROOT

from triton_course import excerpts as ex

STAGE_FILES = [f"vector_add.{stage}.txt" for stage in ex.STAGES]
LANDMARKS = {
    "vector_add.ast.txt": [r"func=Attribute\(value=Name\(id='tl'\), attr='load'\)"],
    "vector_add.ttir.txt": [r"tt\.load %\w+, %mask\w*", r"tt\.store .*%mask",
                            r"tt\.get_program_id x", r"tt\.make_range"],
    "vector_add.ttgir.txt": [r"#ttg\.blocked<\{sizePerThread = \[4\]", r"tt\.load"],
    "vector_add.llir.txt": [r"ld\.global\.v4\.b32", r"fadd float"],
    "vector_add.ptx.txt": [r"@%p\d+ ld\.global\.v4\.b32", r"@%p\d+ st\.global\.v4\.b32",
                           r"%ctaid\.x"],
    "vector_add.sass.txt": [r"@!P\d LDG\.E\.128", r"STG\.E\.128", r"FADD"],
    "vector_add_ragged.ptx.txt": [r"@%p\d+ ld\.global\.b32"],
}  # fmt: skip
HEADER = re.compile(r"^// triton \S+, target cuda sm_90\n")


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """A rebuild in a temporary folder, in a subprocess without the interpreter."""
    out = tmp_path_factory.mktemp("excerpts")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run(
        [sys.executable, "-m", "triton_course.excerpts", "build", "--out", str(out)],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.mark.parametrize("name", sorted(LANDMARKS))
def test_rebuild_shows_the_landmarks(fresh, name):
    text = (fresh / name).read_text()
    assert HEADER.match(text), f"{name} lacks its version/target header"
    assert len(text.splitlines()) > 3, f"{name} is empty"
    for landmark in LANDMARKS[name]:
        assert re.search(landmark, text), f"{name}: no match for {landmark!r}"


@pytest.mark.parametrize("name", sorted(LANDMARKS))
def test_committed_excerpts_show_the_landmarks(name):
    text = (ex.EXCERPTS_DIR / name).read_text()
    assert HEADER.match(text)
    for landmark in LANDMARKS[name]:
        assert re.search(landmark, text), f"{name}: no match for {landmark!r}"


@pytest.mark.parametrize("name", sorted(LANDMARKS))
def test_committed_excerpts_match_a_rebuild(fresh, name):
    committed = ex.EXCERPTS_DIR / name
    made_with, installed = ex.committed_version(committed), ex.triton_version()
    if made_with != installed:
        pytest.skip(
            f"{name} was made with triton {made_with}, this is triton {installed}: "
            "IR text differs between versions; compare in the pinned test "
            "environment, or regenerate with `python -m triton_course.excerpts "
            "build` and review the page text that quotes it"
        )
    assert committed.read_text() == (fresh / name).read_text(), (
        f"{name} differs from a rebuild: run `python -m triton_course.excerpts "
        "build` and check that docs/triton-series/index.md still describes it"
    )


def test_every_stage_is_committed():
    for name in STAGE_FILES:
        assert (ex.EXCERPTS_DIR / name).is_file(), name


def test_refuses_to_run_under_the_interpreter():
    env = dict(os.environ, TRITON_INTERPRET="1")
    done = subprocess.run(
        [sys.executable, "-m", "triton_course.excerpts", "check"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0 and "unset TRITON_INTERPRET" in done.stderr


def test_mlir_locations_are_stripped():
    line = '%x = tt.load %p, %m : tensor<4x!tt.ptr<f32>> loc("x"(#loc7))'
    assert ex._strip_locs(line) == "%x = tt.load %p, %m : tensor<4x!tt.ptr<f32>>"


def test_runs_of_look_alike_lines_are_collapsed():
    lines = [f"    add.f32 %r{i}, %r{i}, %r{i};" for i in range(8)] + ["    ret;"]
    out = ex.collapse_runs("ptx", lines)
    assert (
        out[:2] == lines[:2] and "6 more like this" in out[2] and out[3] == "    ret;"
    )


def test_committed_matmul_excerpt_shows_tensor_core_instructions():
    # Built with `build --matmul` from snippets/matmul.py (tl.dot on sm_90).
    ptx, sass = ex.EXCERPTS_DIR / "matmul.ptx.txt", ex.EXCERPTS_DIR / "matmul.sass.txt"
    assert re.search(
        r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k16\.f32\.f16\.f16", ptx.read_text()
    )
    assert re.search(r"HGMMA\.64x\d+x16\.F32", sass.read_text())
