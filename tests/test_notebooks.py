"""Companion notebooks: built from their snippets (no drift) and run on the CPU.

Each notebook is executed here under Triton's interpreter and its outputs are
compared with the stored ones (from the last real GPU run), after masking what
legitimately varies: the device name, timings and memory addresses. The
timing cells (tagged ``timing``) are executed but their outputs are not
compared: on the CPU they skip themselves, and what they print on a GPU is
checked against the run's data by tests/test_notebook_timings.py.
"""

import json
import os
import re
import subprocess
import sys

import pytest
from conftest import REPO_ROOT

from triton_course import notebooks as nb

RECIPES = nb.recipes()
VOLATILE = (
    ("/cells/*/outputs", r"running on: [^\n]*", "running on: <device>"),
    # A run of consecutive timing lines is one mask: on a GPU a timing cell prints
    # one line per size and kernel, on the CPU a single "skipped" line.
    (
        "/cells/*/outputs",
        r"timing[: ][^\n]*(?:\ntiming[: ][^\n]*)*",
        "timing: <masked>",
    ),
    ("/cells/*/outputs", r"0x[0-9a-fA-F]+", "0x<address>"),
    # The set-up cell's report of where it ran and with which versions
    ("/cells/*/outputs", r"this notebook: [^\n]*", "this notebook: <where>"),
    ("/cells/*/outputs", r"versions: [^\n]*", "versions: <versions>"),
    # a check that names the device it ran on (vector addition's first run,
    # a section of tests/test_vector_add.py, says "equals x + y on cpu")
    ("/cells/*/outputs", r"matches PyTorch on (?:cuda|cpu)", "matches PyTorch"),
    ("/cells/*/outputs", r"equals x \+ y on (?:cuda|cpu)", "equals x + y"),
    # A cell that needs a GPU prints "gpu only: " first: on the CPU one line
    # saying it skipped, on a GPU what it found there (registers, memory,
    # errors of that GPU), which the CPU cannot reproduce: the rest of the
    # cell's output is masked.
    ("/cells/*/outputs", r"gpu only: [\s\S]*", "gpu only: <masked>"),
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


def _regression_fixture(cwd, ignore=()):
    from pytest_notebook.nb_regression import NBRegressionFixture

    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(REPO_ROOT))
    fixture = NBRegressionFixture(
        exec_timeout=300,
        exec_cwd=str(cwd),
        exec_env=env,
        diff_replace=VOLATILE,
        diff_ignore=(
            "/metadata",
            "/cells/*/execution_count",
            "/cells/*/metadata",
            *ignore,
        ),
    )
    fixture.diff_color_words = False
    return fixture


def _as_compared(path, post_processors):
    """The stored notebook, post-processed as pytest-notebook treats the fresh run.

    pytest-notebook coalesces the stream outputs of the notebook it executes
    (all stdout of a cell into one output, all stderr into another) but not of
    the stored one, so a notebook whose prints arrived in several chunks (how
    stdout is chunked depends on timing, e.g. in the GPU runner's run) would
    differ from an identical re-run only by that chunking. Applying the same
    post-processors to the stored side forgets the chunk boundaries, nothing else.
    """
    import io

    import nbformat
    from pytest_notebook.post_processors import load_processor

    doc = nbformat.read(str(path), as_version=4)
    for name in post_processors:
        doc, _ = load_processor(name)(doc, {})
    return io.StringIO(nbformat.writes(doc))


def _prints(source: str) -> bool:
    """Whether running the cell calls print: a call outside the functions it
    defines (a section that defines main() and prints only inside it, its
    `if __name__ == "__main__"` turned off, prints nothing)."""
    return _calls(source, "print")


def _calls(source: str, name: str) -> bool:
    """Whether running the cell calls the function ``name`` itself, outside
    the functions it defines."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return f"{name}(" in source
    defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
    todo = list(ast.iter_child_nodes(tree))
    while todo:
        node = todo.pop()
        if isinstance(node, defs):
            continue
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == name
        ):
            return True
        todo.extend(ast.iter_child_nodes(node))
    return False


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: p.stem)
def test_notebook_runs_and_reproduces_its_outputs(recipe):
    path = nb.notebook_path(recipe)
    stored = json.loads(path.read_text(encoding="utf-8"))
    timing = {
        i for i, c in enumerate(stored["cells"]) if nb.TIMING_TAG in nb.cell_tags(c)
    }
    helper = nb.snippet_section("_setup.py", "timing")  # defines, prints nothing
    code_cells = [
        c
        for i, c in enumerate(stored["cells"])
        if c["cell_type"] == "code" and i not in timing and nb._source(c) != helper
    ]
    assert all(c["outputs"] for c in code_cells if _prints(nb._source(c))), (
        f"{path.name} has cells without stored outputs: execute and store it"
    )
    fixture = _regression_fixture(
        path.parent, ignore=[f"/cells/{i}/outputs" for i in sorted(timing)]
    )
    fixture.check(_as_compared(path, fixture.post_processors))


def test_timing_cells_are_tagged_from_their_recipes():
    # the runner finds the timing cells by their tag: every recipe's timing
    # fences give tagged cells, and nothing else is tagged
    tagged = 0
    for recipe in RECIPES:
        cells = json.loads(nb.notebook_path(recipe).read_text(encoding="utf-8"))
        text = recipe.read_text(encoding="utf-8")
        tags = [nb.cell_tags(c) for c in cells["cells"]]
        assert tags.count([nb.TIMING_TAG]) == text.count("```python timing")
        assert all(t in ([], [nb.TIMING_TAG]) for t in tags)
        tagged += tags.count([nb.TIMING_TAG])
    assert tagged >= len(RECIPES)


def test_a_missing_or_extra_timing_tag_is_drift(tmp_path, monkeypatch):
    recipe = next(r for r in RECIPES if "```python timing" in r.read_text())
    stored = json.loads(nb.notebook_path(recipe).read_text(encoding="utf-8"))
    timed = next(c for c in stored["cells"] if nb.TIMING_TAG in nb.cell_tags(c))
    timed["metadata"].pop("tags")
    monkeypatch.setattr(nb, "OUTPUT_DIR", tmp_path)
    (tmp_path / nb.notebook_path(recipe).name).write_text(json.dumps(stored))
    assert any("has tags []" in p for p in nb.drift(recipe))


def test_an_unknown_fence_is_an_error(tmp_path):
    recipe = tmp_path / "typo.md"
    recipe.write_text("Text\n\n```python timed\nprint(1)\n```\n")
    with pytest.raises(nb.NotebookError, match="unknown fence"):
        nb.cells_from_recipe(recipe)


def test_rebuilding_an_executed_notebook_changes_nothing(tmp_path, monkeypatch):
    # the outputs, execution counts and nbclient's metadata of unchanged cells
    # are kept, in nbformat's layout: `make notebooks` on a clean tree is a no-op
    monkeypatch.setattr(nb, "OUTPUT_DIR", tmp_path)
    for recipe in RECIPES:
        stored = nb.notebook_path(recipe).name
        original = (REPO_ROOT / "docs" / "notebooks" / stored).read_bytes()
        (tmp_path / stored).write_bytes(original)
        nb.build(recipe)
        assert (tmp_path / stored).read_bytes() == original, stored


def test_reproduction_check_still_sees_a_changed_output(tmp_path):
    # The masks and the stream coalescing must not hide a real change: alter one
    # non-volatile stored line (split over two chunks, as the GPU runner stores
    # them) and the comparison must fail.
    from pytest_notebook.nb_regression import NBRegressionError

    path = nb.notebook_path(RECIPES[0])
    stored = json.loads(path.read_text(encoding="utf-8"))
    cell = next(
        c
        for c in stored["cells"]
        if any(
            o.get("output_type") == "stream" and "timing:" not in "".join(o["text"])
            for o in c.get("outputs", [])
        )
    )
    out = next(o for o in cell["outputs"] if o.get("output_type") == "stream")
    text = "".join(out["text"])
    cut = text.index("\n") + 1 if "\n" in text[:-1] else len(text)
    out["text"] = text[:cut]
    cell["outputs"].insert(
        cell["outputs"].index(out) + 1,
        {"output_type": "stream", "name": out["name"], "text": "not what it printed\n"},
    )
    # the cells after the changed one cannot make the check see it: they are
    # left out, so that this executes a few cells, not the whole notebook
    # again (test_notebook_runs_and_reproduces_its_outputs runs them all)
    del stored["cells"][stored["cells"].index(cell) + 1 :]
    changed = tmp_path / path.name
    changed.write_text(json.dumps(stored), encoding="utf-8")
    fixture = _regression_fixture(path.parent)
    with pytest.raises(NBRegressionError, match="not what it printed"):
        fixture.check(_as_compared(changed, fixture.post_processors))


# ------------------------------------------------------ the set-up cell (#16) ---
SETUP = nb.snippet_section("_setup.py", "setup")


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: p.stem)
def test_every_notebook_starts_by_saying_where_it_runs(recipe):
    cells = json.loads(nb.notebook_path(recipe).read_text(encoding="utf-8"))["cells"]
    first = next(c for c in cells if c["cell_type"] == "code")
    assert "".join(first["source"]) == SETUP
    printed = "".join("".join(o.get("text", "")) for o in first["outputs"])
    for line in ("running on:", "this notebook:", "versions: torch"):
        assert line in printed, f"{recipe.stem}: no {line!r} in {printed!r}"


def test_every_lesson_with_code_has_its_notebook_button():
    pages = sorted((REPO_ROOT / "docs" / "gpu-architecture").glob("0*.md"))
    # a chapter (lesson 03) is a folder of pages, each with its button
    pages += sorted((REPO_ROOT / "docs" / "gpu-architecture").glob("0*/*.md"))
    pages += [
        p
        for p in (REPO_ROOT / "docs" / "triton-series").glob("*.md")
        if p.name != "index.md"
    ]
    assert len(pages) >= 8
    # lesson 01's first page shows the hardware, no code: no button either
    code_free = {"01-gpu-architecture.md"}
    for page in pages:
        text = page.read_text(encoding="utf-8")
        if page.name in code_free:
            assert '--8<-- "' not in text and "[[notebook" not in text, page.name
            continue
        assert '--8<-- "' in text, f"{page.name} embeds no code"
        match = re.search(r"\[\[notebook (?:\.\./)+notebooks/(\w+)\.ipynb\]\]", text)
        assert match, f"{page.name} has no notebook button"
        assert (nb.OUTPUT_DIR / f"{match.group(1)}.ipynb").is_file()


# ------------------------------- each page's "Run in Colab" button (#34 item 5) ---
# A page's button opens a notebook that holds every snippet section the page
# embeds (`--8<-- "FILE.py:SECTION"`), wherever it stands: in the text, in a
# tab, an admonition or a collapsed block (indented lines), a script's `main`
# and its benchmark description included. Compiler output (`*.txt`) is not
# code. A section counts as held when one code cell of the built notebook has
# its lines, in order and unbroken (a fragment, such as a kernel's K loop,
# counts inside its whole kernel). Pure file parsing: no site build.
_EMBED = re.compile(r'^[ \t]*--8<--[ \t]+"([\w.-]+\.py):([\w-]+)"[ \t]*$', re.M)
_BUTTON = re.compile(r"\[\[notebook (?:\.\./)+notebooks/(\w+)\.ipynb\]\]")


def _code_lines(code: str) -> list[str]:
    return [line.strip() for line in code.splitlines() if line.strip()]


def _held(cells: list[str], code: str) -> bool:
    want = _code_lines(code)
    for cell in cells:
        have = _code_lines(cell)
        for i in range(len(have) - len(want) + 1):
            if have[i : i + len(want)] == want:
                return True
    return False


def button_gaps(markdown: str) -> tuple[list[str], list[str]]:
    """(the notebooks the page's buttons open, the embedded sections they lack)."""
    notebooks = sorted(set(_BUTTON.findall(markdown)))
    embedded = [f"{f}:{s}" for f, s in _EMBED.findall(markdown)]
    cells = []
    for name in notebooks:
        doc = json.loads((nb.OUTPUT_DIR / f"{name}.ipynb").read_text("utf-8"))
        cells += [nb._source(c) for c in doc["cells"] if c["cell_type"] == "code"]
    lacking = []
    for item in dict.fromkeys(embedded):  # each once, in page order
        file, section = item.split(":")
        # found along mkdocs.yml's base_path, as the page and the builder find it
        if not notebooks or not _held(cells, nb.snippet_section(file, section)):
            lacking.append(item)
    return notebooks, lacking


def test_every_page_button_opens_a_notebook_holding_all_the_pages_code():
    pages = sorted((REPO_ROOT / "docs").rglob("*.md"))
    problems, checked = [], 0
    for page in pages:
        name = page.relative_to(REPO_ROOT / "docs").as_posix()
        text = page.read_text(encoding="utf-8")
        if not _EMBED.search(text) and not _BUTTON.search(text):
            continue
        notebooks, lacking = button_gaps(text)
        if not notebooks:
            problems.append(f"{name} shows code but has no notebook button")
            continue
        checked += 1
        if lacking:
            problems.append(f"{name}: its button opens {notebooks}, without {lacking}")
    assert checked >= 20, "no pages with a button found: is the parser broken?"
    assert not problems, "\n".join(problems)


def test_the_button_check_reads_every_embed_and_wants_a_button():
    # indented embeds (tabs, admonitions, collapsed blocks) and a script's main
    # count; compiler output does not; a section of a test file is found along
    # the base_path, as the page finds it; a page with code and no button
    # lacks all
    page = (
        "[[notebook ../notebooks/softmax.ipynb]]\n"
        '--8<-- "softmax.py:kernel"\n'
        '--8<-- "test_softmax.py:launch_row"\n'
        '??? info "How this is measured"\n\n'
        '    --8<-- "vector_add.py:no_such_cell"\n'
        '=== "GPU"\n\n'
        '    --8<-- "vector_add.py:main"\n'
        '--8<-- "vector_add.ptx.txt"\n'
    )
    with pytest.raises(nb.NotebookError, match="no_such_cell"):
        button_gaps(page)
    page = page.replace("no_such_cell", "benchmark")
    notebooks, lacking = button_gaps(page)
    assert notebooks == ["softmax"]
    assert lacking == ["vector_add.py:benchmark", "vector_add.py:main"]
    no_button = page.split("\n", 1)[1]
    assert button_gaps(no_button) == (
        [],
        [
            "softmax.py:kernel",
            "test_softmax.py:launch_row",
            "vector_add.py:benchmark",
            "vector_add.py:main",
        ],
    )
    # a fragment counts inside the cell that holds its whole
    assert _held(
        [nb.snippet_section("matmul.py", "kernel")],
        nb.snippet_section("matmul.py", "loop"),
    )


def _run_setup(name, major, minor, shared_bytes):
    """The set-up cell in a fresh process whose torch reports one fake GPU."""
    code = (
        "import types, torch\n"
        "torch.cuda.is_available = lambda: True\n"
        "torch.cuda.get_device_properties = lambda i: types.SimpleNamespace(\n"
        f"    name={name!r}, major={major}, minor={minor},\n"
        f"    shared_memory_per_block_optin={shared_bytes})\n"
        f"exec({SETUP!r})\n"
        "import os; print('DEVICE', DEVICE, os.environ.get('TRITON_INTERPRET'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_the_setup_reports_a_t4_and_runs_on_it():
    out = _run_setup("Tesla T4", 7, 5, 65536)
    assert "Tesla T4, compute capability 7.5, 64 KB of shared memory" in out
    assert "a cell written for Hopper (compute capability 9.0) skips itself" in out
    assert "DEVICE cuda None" in out
    h100 = _run_setup("NVIDIA H100 80GB HBM3", 9, 0, 232448)
    assert "227 KB of shared memory" in h100 and "no cell is skipped here" in h100


def test_cells_written_for_hopper_skip_themselves_before_it():
    # the TMA kernels are run by the course only on Hopper (their snippet's
    # main refuses older GPUs): a notebook cell launching them checks first.
    # A cell that only defines functions calling them (the launcher itself,
    # the snippet's main, defined and not called) launches nothing.
    guarded = 0
    for recipe in RECIPES:
        cells = json.loads(nb.notebook_path(recipe).read_text(encoding="utf-8"))
        for cell in cells["cells"]:
            source = "".join(cell["source"])
            if cell["cell_type"] == "code" and _calls(source, "matmul_tma"):
                assert "CAPABILITY < (9, 0)" in source, f"{recipe.stem}: {source[:80]}"
                guarded += 1
    assert guarded >= 1


def test_the_setup_falls_back_to_the_interpreter_on_a_gpu_triton_cannot_use():
    out = _run_setup("Tesla P100", 6, 0, 49152)
    # below PyTorch's own floor for Triton (7.0), not a course-made 7.5 (ser1-04)
    assert "below the 7.0 that PyTorch asks of a GPU before it uses Triton" in out
    assert "Tesla P100 has compute capability 6.0" in out and "T4 GPU" in out
    assert "DEVICE cpu 1" in out
