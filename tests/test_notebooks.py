"""Companion notebooks: built from their snippets (no drift) and run on the CPU.

Each notebook is executed here under Triton's interpreter and its outputs are
compared with the stored ones (from the last real GPU run), after masking what
legitimately varies: the device name, timings and memory addresses.
"""

import json
import os
import re

import pytest
from conftest import REPO_ROOT

from triton_course import notebooks as nb

RECIPES = nb.recipes()
VOLATILE = (
    ("/cells/*/outputs", r"running on: [^\n]*", "running on: <device>"),
    ("/cells/*/outputs", r"timing: [^\n]*", "timing: <masked>"),
    ("/cells/*/outputs", r"0x[0-9a-fA-F]+", "0x<address>"),
)


def test_every_recipe_has_a_notebook_and_nav_entry():
    assert RECIPES, "no notebook recipes found in notebooks/"
    nav = (REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for recipe in RECIPES:
        built = nb.notebook_path(recipe)
        assert built.exists(), f"{built} missing: run `make notebooks`"
        assert f"notebooks/{built.name}" in nav, f"{built.name} is not in the nav"


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: p.stem)
def test_notebook_matches_its_recipe_and_snippets(recipe):
    assert nb.drift(recipe) == []


def test_drift_is_detected(tmp_path, monkeypatch):
    # A notebook whose code cell no longer matches the snippet must be reported.
    recipe = RECIPES[0]
    stored = json.loads(nb.notebook_path(recipe).read_text(encoding="utf-8"))
    code = next(c for c in stored["cells"] if c["cell_type"] == "code")
    code["source"] = "print('edited by hand')"
    monkeypatch.setattr(nb, "OUTPUT_DIR", tmp_path)
    (tmp_path / nb.notebook_path(recipe).name).write_text(json.dumps(stored))
    assert any("differs" in p for p in nb.drift(recipe))


def test_missing_section_is_an_error(tmp_path):
    recipe = tmp_path / "broken.md"
    recipe.write_text('Text\n\n--8<-- "vector_add.py:no_such_section"\n')
    with pytest.raises(nb.NotebookError, match="no_such_section"):
        nb.cells_from_recipe(recipe)


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: p.stem)
def test_colab_badge_points_at_the_repository(recipe):
    cells = json.loads(nb.notebook_path(recipe).read_text(encoding="utf-8"))["cells"]
    slug = re.search(
        r"^repo_url:\s*https://github\.com/(\S+?)/?$",
        (REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8"),
        re.M,
    ).group(1)
    expected = (
        f"https://colab.research.google.com/github/{slug}/blob/main/"
        f"docs/notebooks/{nb.notebook_path(recipe).name}"
    )
    assert expected in "".join(cells[0]["source"])


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: p.stem)
def test_notebook_runs_and_reproduces_its_outputs(recipe):
    from pytest_notebook.nb_regression import NBRegressionFixture

    path = nb.notebook_path(recipe)
    stored = json.loads(path.read_text(encoding="utf-8"))
    code_cells = [c for c in stored["cells"] if c["cell_type"] == "code"]
    assert all(c["outputs"] for c in code_cells if "print(" in "".join(c["source"])), (
        f"{path.name} has cells without stored outputs: execute and store it"
    )
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(REPO_ROOT))
    fixture = NBRegressionFixture(
        exec_timeout=300,
        exec_cwd=str(path.parent),
        exec_env=env,
        diff_replace=VOLATILE,
        diff_ignore=("/metadata", "/cells/*/execution_count", "/cells/*/metadata"),
    )
    fixture.diff_color_words = False
    fixture.check(str(path))
