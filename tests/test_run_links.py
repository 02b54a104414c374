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


# ------------------------------------- the whole file under each block (#34) ---
_EMBED = re.compile(r'^\s*--8<--\s+"([\w./-]+\.py):([\w-]+)"', re.M)
_BLOCK = re.compile(r"<pre\b.*?</pre>", re.S)
_LINKS_AFTER = re.compile(
    r'(?:\s|</div>|<p class="course-run">(?:(?!</p>).)*</p>)*'
    r'((?:\s*<p class="course-file">(?:(?!</p>).)*</p>)+)',
    re.S,
)
_FILE_HREF = re.compile(
    r'<p class="course-file"><small>The whole file: <a href="([^"]+)">'
)


def _code_lines(html: str) -> list[str]:
    from html import unescape

    text = unescape(re.sub(r"<[^>]+>", "", html))
    return [line.strip() for line in text.splitlines() if line.strip()]


def _blocks_with_links(html: str) -> list[tuple[list[str], list[str]]]:
    """(code lines, whole-file links right under it) of every code block."""
    out = []
    for m in _BLOCK.finditer(html):
        after = _LINKS_AFTER.match(html, m.end())
        links = _FILE_HREF.findall(after.group(1)) if after else []
        out.append((_code_lines(m.group(0)), links))
    return out


def _contains(lines: list[str], part: list[str]) -> bool:
    n = len(part)
    return any(lines[i : i + n] == part for i in range(len(lines) - n + 1))


def test_every_embedded_snippet_links_its_whole_file_on_github(built_site):
    site = built_site[0]
    blob = f"https://github.com/{nb.repo_slug()}/blob/main/"
    checked = 0
    for md in sorted((REPO_ROOT / "docs").rglob("*.md")):
        embeds = _EMBED.findall(md.read_text(encoding="utf-8"))
        if not embeds:
            continue
        rel = md.relative_to(REPO_ROOT / "docs").with_suffix("")
        page = site / (rel.parent if rel.name == "index" else rel) / "index.html"
        blocks = _blocks_with_links(page.read_text(encoding="utf-8"))
        for links in (links for _, links in blocks):  # each link: a real file
            for href in links:
                assert href.startswith(blob), (md.name, href)
                assert (REPO_ROOT / href[len(blob) :]).is_file(), (md.name, href)
        for name, section in embeds:
            base = next(
                d for d in ("snippets", "tests") if (REPO_ROOT / d / name).is_file()
            )
            part = nb.snippet_section(name, section, REPO_ROOT / base).splitlines()
            part = [line.strip() for line in part if line.strip()]
            holding = [links for lines, links in blocks if _contains(lines, part)]
            assert holding, f"{md.name}: {name}:{section} is in no code block"
            assert any(f"{blob}{base}/{name}" in links for links in holding), (
                f"{md.name}: no link to {base}/{name} under the block of {section}"
            )
            checked += 1
    assert checked >= 100, checked


def test_a_file_link_names_the_file_the_extension_embeds(tmp_path):
    hook = _run_links_hook()
    (tmp_path / "snippets").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("# a test\n")
    (tmp_path / "snippets" / "x.py").write_text("# a snippet\n")
    config = {
        "repo_url": "https://github.com/o/r",
        "edit_uri": "edit/trunk/docs/",
        "extra": {},
        "docs_dir": str(tmp_path / "docs"),
        "config_file_path": str(tmp_path / "mkdocs.yml"),
        "mdx_configs": {"pymdownx.snippets": {"base_path": ["snippets", "tests"]}},
    }
    hook.on_config(config)
    assert 'href="https://github.com/o/r/blob/trunk/snippets/x.py"' in hook.file_link(
        "x.py"
    )
    assert "blob/trunk/tests/test_x.py" in hook.file_link("test_x.py")
    from mkdocs.exceptions import PluginError

    with pytest.raises(PluginError, match="in no folder"):
        hook.file_link("missing.py")

    class Page:
        class file:  # noqa: N801 - mimics mkdocs' page.file
            url = "p/"
            src_uri = "p.md"

    text = (
        '!!! note\n\n    ```python\n    --8<-- "x.py:a"\n    --8<-- "x.py:b"\n    ```\n'
    )
    out = hook.on_page_markdown(text, Page, config, None)
    # one link per file, indented as the block is
    assert out.count("blob/trunk/snippets/x.py") == 1
    assert '\n    <p class="course-file">' in out
    # an escaped embed (;--8<--) is shown literally, not embedded: no link
    literal = '```text\n;--8<-- "x.py:a"\n```\n'
    assert "course-file" not in hook.on_page_markdown(literal, Page, config, None)
    # Markdown nests the raw paragraph in a tab's paragraph: unwrapped
    nested = '<p><p class="course-file"><small>f</small></p></p>'
    assert hook.on_page_content(nested, Page, config, None) == nested[3:-4]


def _run_links_hook():
    pytest.importorskip("mkdocs")
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "run_links_hook", REPO_ROOT / "hooks" / "run_links.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
