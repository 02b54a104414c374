"""Issue 26 item 5: every "Run this code" link opens its notebook in Colab at
the cell that holds the code (``#scrollTo=<cell id>``), so cell ids must exist
in the notebook Colab fetches (the committed ipynb), match what the builder
writes, and stay put when an unrelated cell is added."""

import json
import re

import pytest
from conftest import REPO_ROOT

from triton_course import notebooks as nb

NOTEBOOKS = REPO_ROOT / "docs" / "notebooks"
RECIPES = nb.recipes()
_PARAGRAPH = re.compile(r'<p class="course-run">(.*?)</p>', re.S)
_HREF = re.compile(r'<a\b[^>]*href="([^"]+)"[^>]*>(.*?)</a>', re.S)


def _colab_form() -> re.Pattern:
    """The one allowed shape of a run link, from mkdocs.yml's repo_url."""
    config = (REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    branch = re.search(r"^\s*colab_branch:\s*(\S+)", config, re.M)
    return re.compile(
        r"https://colab\.research\.google\.com/github/"
        + re.escape(f"{nb.repo_slug()}/blob/{branch[1] if branch else 'main'}/")
        + r"docs/notebooks/(?P<nb>[\w-]+)\.ipynb#scrollTo=(?P<id>[^\"&#\s]+)"
    )


def _committed_ids(stem: str) -> dict[str, str]:
    doc = json.loads((NOTEBOOKS / f"{stem}.ipynb").read_text(encoding="utf-8"))
    return {c["id"]: c["cell_type"] for c in doc["cells"]}


def _built_ids(stem: str) -> dict[str, str]:
    cells = nb.cells_from_recipe(nb.RECIPES_DIR / f"{stem}.md")
    doc = nb.render_notebook(cells)
    return {c["id"]: c["cell_type"] for c in doc["cells"]}


def test_every_run_link_opens_colab_at_an_existing_cell(built_site):
    site = built_site[0]
    form = _colab_form()
    links = 0
    for page in sorted(site.rglob("*.html")):
        html = page.read_text(encoding="utf-8")
        for paragraph in _PARAGRAPH.findall(html):
            where = page.relative_to(site)
            anchors = _HREF.findall(paragraph)
            run = [href for href, text in anchors if "Run this code" in text]
            assert len(run) == 1, f"{where}: run link(s) {anchors}"
            match = form.fullmatch(run[0])
            assert match, f"{where}: {run[0]} is not {form.pattern}"
            stem, cell = match["nb"], match["id"]
            assert (NOTEBOOKS / f"{stem}.ipynb").is_file(), f"{where}: {stem}"
            assert _committed_ids(stem).get(cell) == "code", (
                f"{where}: no code cell {cell!r} in the committed {stem}.ipynb"
            )
            assert _built_ids(stem).get(cell) == "code", (
                f"{where}: the builder gives {stem}.ipynb no code cell {cell!r}"
            )
            # the static notebook page, as a secondary link beside it
            static = [h for h, _ in anchors if h.endswith(f"#cell-id={cell}")]
            assert static and not static[0].startswith("http"), f"{where}: {anchors}"
            links += 1
    # one link under every code block that embeds a launcher (hooks/run_links.py)
    launcher = re.compile(r'--8<--\s+"[\w.-]+\.py:\w*launchers?"')
    docs = (REPO_ROOT / "docs").rglob("*.md")
    wanted = sum(len(launcher.findall(md.read_text(encoding="utf-8"))) for md in docs)
    assert links == wanted >= 10, f"{links} run links, {wanted} launcher blocks"


def _check_ids(ids: list[str], where: str) -> None:
    assert len(set(ids)) == len(ids), f"{where}: repeated ids {ids}"
    for cid in ids:
        assert nb.CELL_ID_RE.fullmatch(cid), f"{where}: {cid!r}"
        assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", cid), f"{where}: {cid!r}"


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: p.stem)
def test_cell_ids_are_valid_unique_and_committed(recipe):
    built = [c["id"] for c in nb.render_notebook(nb.cells_from_recipe(recipe))["cells"]]
    _check_ids(built, f"built {recipe.stem}")
    stored = json.loads(nb.notebook_path(recipe).read_text(encoding="utf-8"))
    committed = [c["id"] for c in stored["cells"]]
    _check_ids(committed, f"committed {recipe.stem}")
    # nbformat's own check (4.5 ids) agrees
    import nbformat

    nbformat.validate(nbformat.from_dict(stored))


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: p.stem)
def test_ids_do_not_move_when_a_cell_is_inserted(recipe):
    cells = nb.cells_from_recipe(recipe)
    before = [c["id"] for c in nb.render_notebook(cells)["cells"]]
    for new in (
        {"cell_type": "markdown", "source": "A new paragraph."},
        {"cell_type": "code", "source": "print('a new cell')"},
    ):
        for at in (0, len(cells) // 2):
            grown = cells[:at] + [new] + cells[at:]
            after = [c["id"] for c in nb.render_notebook(grown)["cells"]]
            assert after[:at] + after[at + 1 :] == before, (recipe.stem, new, at)


def test_snippet_cells_are_named_after_their_section():
    cells = nb.cells_from_recipe(nb.RECIPES_DIR / "vector_addition.md")
    ids = nb.cell_ids(cells)
    assert "vector_add-launcher" in ids and "vector_add-kernel" in ids


def test_a_repeated_or_long_cell_still_gets_a_unique_valid_id():
    same = {"cell_type": "code", "source": "x = 1", "key": "a-launcher"}
    long = {"cell_type": "code", "source": "y", "key": "k" * 80}
    twin_md = {"cell_type": "markdown", "source": "same text"}
    ids = nb.cell_ids([same, same, long, long, twin_md, twin_md])
    _check_ids(ids, "synthetic")
    assert ids[:2] == ["a-launcher", "a-launcher-2"]


def test_check_reports_a_cell_id_that_differs_from_the_builder(tmp_path, monkeypatch):
    recipe = nb.RECIPES_DIR / "vector_addition.md"
    doc = nb.render_notebook(nb.cells_from_recipe(recipe))
    monkeypatch.setattr(nb, "OUTPUT_DIR", tmp_path)
    nb.write_notebook(tmp_path / "vector_addition.ipynb", doc)
    assert nb.drift(recipe) == []
    doc["cells"][-1]["id"] = "cell-12"
    nb.write_notebook(tmp_path / "vector_addition.ipynb", doc)
    assert any("id" in p for p in nb.drift(recipe)), nb.drift(recipe)


def test_executing_a_notebook_keeps_its_cell_ids(tmp_path):
    # Both execution paths (the builder's and the GPU runner's) go through
    # nbclient and nbformat; neither may renumber the ids the links point at.
    from triton_course.runner.cli import execute_notebook

    cells = [
        {"cell_type": "markdown", "source": "Text"},
        {"cell_type": "code", "source": "print(6 * 7)", "key": "demo-launcher"},
    ]
    path = tmp_path / "demo.ipynb"
    nb.write_notebook(path, nb.render_notebook(cells))
    want = nb.cell_ids(cells)
    ran = nb.execute(path)
    assert [c["id"] for c in ran["cells"]] == want
    assert "42" in "".join(ran["cells"][1]["outputs"][0]["text"])
    ran = json.loads(execute_notebook(path))
    assert [c["id"] for c in ran["cells"]] == want
