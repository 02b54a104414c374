"""Lesson 03 is a chapter: pages a learner finishes in one sitting, in nav order.

Issue 26: the one-page lesson 03 showed about 11,600 words by default. Each
chapter page must stay under WORD_BUDGET words that a reader sees without a
click: prose and tables, but not code, not collapsed blocks (``???``) and not
any tab but the first of a tabbed set (the second GPU's tab).
"""

from __future__ import annotations

import json
import posixpath
import re

import yaml
from bs4 import BeautifulSoup
from conftest import REPO_ROOT

CHAPTER = "gpu-architecture/03-custom-kernels/"
PAGES = [
    "index.md",
    "memory-access.md",
    "fusion.md",
    "layernorm-linear.md",  # fusion.md's kernels measured
    "matmul-autotuning.md",
    "pytorch-integration.md",  # before profiling, which uses its kernels
    "torch-compile.md",  # pytorch-integration.md's kernels measured
    "profiling-debugging.md",
]
# Pages that measure the kernels of the page before them: their code (the
# benchmark descriptions, the accuracy table's) is in collapsed blocks, so
# they show none to copy; their button opens the notebook of the kernels.
MEASURING = {"layernorm-linear.md", "torch-compile.md"}
WORD_BUDGET = 6000


def visible_words(html: str) -> int:
    """Words a reader sees by default in the page's article."""
    soup = BeautifulSoup(html, "html.parser")
    article = soup.find("article") or soup
    for tag in article.find_all(["pre", "script", "style", "svg", "details"]):
        tag.decompose()
    for tag in article.find_all(class_="highlight"):
        tag.decompose()
    for tabs in article.find_all(class_="tabbed-set"):
        blocks = tabs.find(class_="tabbed-content")
        if blocks is None:
            continue
        for later in blocks.find_all(class_="tabbed-block", recursive=False)[1:]:
            later.decompose()
    for label in article.find_all(class_="tabbed-labels"):
        label.decompose()
    for nav in article.find_all(class_="module-nav"):
        nav.decompose()
    text = article.get_text(" ")
    return len(re.findall(r"[^\s|]+", text))


def _page_html(site, name: str) -> str:
    stem = name[: -len(".md")]
    folder = site / CHAPTER / ("" if stem == "index" else stem)
    return (folder / "index.html").read_text(encoding="utf-8")


def test_word_count_ignores_code_collapsed_blocks_and_later_tabs():
    shown = "<p>one two three</p>"
    hidden = (
        "<pre><code>a b c</code></pre><details><p>d e f</p></details>"
        '<div class="tabbed-set"><div class="tabbed-labels">H100 H200</div>'
        '<div class="tabbed-content"><div class="tabbed-block"><p>g h</p></div>'
        '<div class="tabbed-block"><p>i j k l</p></div></div></div>'
    )
    assert visible_words(f"<article>{shown}{hidden}</article>") == 5


def test_every_chapter_page_fits_one_sitting(built_site):
    site = built_site[0]
    counts = {name: visible_words(_page_html(site, name)) for name in PAGES}
    over = {name: n for name, n in counts.items() if n > WORD_BUDGET}
    assert not over, f"over {WORD_BUDGET} visible words: {over} (all: {counts})"
    # the chapter is the whole lesson: it is not left empty by a broken build
    assert all(n > 300 for n in counts.values()), counts


def _chapter_in_nav():
    nav = yaml.safe_load((REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    (module,) = [e["GPU Architecture"] for e in nav if "GPU Architecture" in e]
    flat = []
    for entry in module:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        if isinstance(value, list):
            flat.append(
                [next(iter(c.values())) if isinstance(c, dict) else c for c in value]
            )
        else:
            flat.append(value)
    return flat


def _first_and_last(entry) -> tuple[str, str]:
    pages = entry if isinstance(entry, list) else [entry]
    return pages[0], pages[-1]


def _neighbours() -> tuple[str, str]:
    """The page before the chapter (lesson 02's last) and after it (04's first)."""
    flat = _chapter_in_nav()
    i = flat.index([f"{CHAPTER}{p}" for p in PAGES])
    return _first_and_last(flat[i - 1])[1], _first_and_last(flat[i + 1])[0]


def test_the_chapter_sits_between_lessons_02_and_04_in_order():
    flat = _chapter_in_nav()
    assert [f"{CHAPTER}{p}" for p in PAGES] in flat
    before, after = _neighbours()
    assert before.startswith("gpu-architecture/02-"), before
    assert after.startswith("gpu-architecture/04-"), after
    for page in PAGES:
        assert (REPO_ROOT / "docs" / CHAPTER / page).is_file(), page


def _resolve(here: str, href: str) -> str:
    return posixpath.normpath(posixpath.join(here, href))


def test_previous_and_next_walk_02_through_the_chapter_to_04(built_site):
    site = built_site[0]
    before, after = (p.split("/", 1)[1][: -len(".md")] for p in _neighbours())
    order = [before] + [f"03-custom-kernels/{p[:-3]}" for p in PAGES] + [after]
    pages = [p.replace("/index", "") for p in order]
    for i, page in enumerate(pages):
        html = (site / "gpu-architecture" / page / "index.html").read_text("utf-8")
        top = re.findall(r'<div class="module-nav">(.*?)</div>', html, re.S)[0]
        nxt = re.search(r"<strong>Next:</strong> <a href=\"([^\"]*)\"", top)
        prev = re.search(r"<strong>Previous:</strong> <a href=\"([^\"]*)\"", top)
        here = f"gpu-architecture/{page}/"
        if i + 1 < len(pages):
            assert nxt, (page, top)
            assert _resolve(here, nxt.group(1)) == f"gpu-architecture/{pages[i + 1]}"
        if i > 0:
            assert prev, (page, top)
            assert _resolve(here, prev.group(1)) == f"gpu-architecture/{pages[i - 1]}"
        if page.startswith("03-custom-kernels/") and page != "03-custom-kernels":
            # breadcrumbs: course -> module -> chapter
            assert "GPU Architecture</a> → <a" in top and "03 Triton" in top, top


def test_no_page_links_to_the_old_single_page_lesson():
    old = "03-triton-custom-kernels"
    for folder in ("docs", "notebooks", "hooks", "triton_course"):
        for path in (REPO_ROOT / folder).rglob("*"):
            if path.suffix in (".md", ".py", ".yml") and path.is_file():
                assert old not in path.read_text(encoding="utf-8"), path
    assert old not in (REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8")


def test_math_shows_no_escaped_underscores():
    # `BLOCK\_M` inside \( \) renders with a visible backslash (issue 26)
    for page in PAGES:
        text = (REPO_ROOT / "docs" / CHAPTER / page).read_text(encoding="utf-8")
        assert "\\_" not in text, page


# ------------------------------------------ each page's "Run in Colab" ---
# Issue 34 item 5: a page's button opens a notebook that holds the code the
# page shows. Not counted: sections of tests/ and compiler excerpts (not
# code to run), a script's `main` (it runs as `python snippets/<file>.py`),
# and sections inside a collapsed `???` block (how the runner measures).
_EMBED = re.compile(r'^\s*--8<--\s+"([\w.-]+\.py):([\w-]+)"\s*$')
_BUTTON = re.compile(r"^\[\[notebook\s+(\S+\.ipynb)\]\]\s*$", re.M)


def shown_sections(markdown: str) -> list[tuple[str, str]]:
    """The (snippet file, section) pairs a page shows as runnable code."""
    shown, collapsed_at = [], None
    for line in markdown.splitlines():
        indent = len(line) - len(line.lstrip())
        if collapsed_at is not None and line.strip() and indent <= collapsed_at:
            collapsed_at = None  # the collapsed block ended
        if line.lstrip().startswith("??? "):
            collapsed_at = indent
            continue
        m = _EMBED.match(line)
        if m and collapsed_at is None and m.group(2) != "main":
            if (REPO_ROOT / "snippets" / m.group(1)).is_file():
                shown.append(m.groups())
    return shown


def _lines(code: str) -> list[str]:
    return [line.strip() for line in code.splitlines() if line.strip()]


def _holds(cells: list[str], section: str) -> bool:
    """Whether one cell holds the section's lines, in order and unbroken (a
    fragment such as a kernel's K loop counts inside its whole kernel)."""
    want = _lines(section)
    for cell in cells:
        have = _lines(cell)
        for i in range(len(have) - len(want) + 1):
            if have[i : i + len(want)] == want:
                return True
    return False


def missing_from_button(page: str) -> tuple[str, list[str]]:
    """The notebook a chapter page's button opens, and what it lacks."""
    from triton_course.notebooks import snippet_section

    text = (REPO_ROOT / "docs" / CHAPTER / page).read_text(encoding="utf-8")
    buttons = _BUTTON.findall(text)
    assert len(buttons) == 1, f"{page}: {len(buttons)} notebook buttons"
    notebook = REPO_ROOT / "docs" / _resolve(CHAPTER, buttons[0])
    cells = [
        "".join(c["source"])
        for c in json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        if c["cell_type"] == "code"
    ]
    lacking = [
        f"{name}:{section}"
        for name, section in shown_sections(text)
        if not _holds(cells, snippet_section(name, section))
    ]
    return notebook.name, lacking


def test_each_page_shows_code_and_its_button_opens_a_notebook_holding_it():
    for page in PAGES:
        text = (REPO_ROOT / "docs" / CHAPTER / page).read_text(encoding="utf-8")
        if page in MEASURING:
            assert not shown_sections(text), f"{page} shows code: not MEASURING"
            assert '--8<-- "' in text, f"{page} embeds no code at all"
        else:
            assert shown_sections(text), f"{page} shows no code: is the parser broken?"
        notebook, lacking = missing_from_button(page)
        assert not lacking, f"{page}: its button opens {notebook}, without {lacking}"


def test_the_button_check_sees_what_it_must_and_nothing_else():
    page = (
        '--8<-- "vector_add.py:kernel"\n'
        '??? info "How this is measured"\n\n'
        '    --8<-- "vector_add.py:benchmark"\n\n'
        'text\n--8<-- "vector_add.py:launcher"\n'
        '--8<-- "vector_add.py:main"\n'
        '--8<-- "test_vector_add.py:anything"\n'
    )
    shown = shown_sections(page)
    assert shown == [("vector_add.py", "kernel"), ("vector_add.py", "launcher")]
    from triton_course.notebooks import snippet_section

    kernel = snippet_section("matmul.py", "kernel")
    assert _holds([kernel], snippet_section("matmul.py", "loop"))  # a fragment
    assert not _holds([kernel], snippet_section("matmul.py", "launcher"))


# ------------------------------------------- code that runs when copied ---
# Issue 34 item 3: a block without a title is code to copy; copied in page
# order, each file's blocks (after the imports the page showed before them)
# must define everything they use. A block titled "excerpt of ..." shows a
# part of a kernel or file whose whole is elsewhere, and is not counted.
_FENCE = re.compile(r"^\s*```python(.*)$")


def copied_programs(markdown: str) -> dict[str, list[str]]:
    """{snippet file: its sections, in page order} from the untitled,
    uncollapsed Python blocks; a file's list starts with the imports sections
    the page showed before its first block (another file's count too)."""
    programs: dict[str, list[str]] = {}
    imports: list[str] = []
    title, collapsed_at = None, None
    for line in markdown.splitlines():
        indent = len(line) - len(line.lstrip())
        if collapsed_at is not None and line.strip() and indent <= collapsed_at:
            collapsed_at = None
        if line.lstrip().startswith("??? "):
            collapsed_at = indent
        if fence := _FENCE.match(line):
            title = fence.group(1).strip()
            continue
        m = _EMBED.match(line)
        if not m or title or collapsed_at is not None:
            continue
        name, section = m.groups()
        if not (REPO_ROOT / "snippets" / name).is_file() or section == "main":
            continue
        programs.setdefault(name, list(imports))
        programs[name].append(f"{name}:{section}")
        if section == "imports":
            imports.append(f"{name}:{section}")
    return programs


def _globals_read(code) -> set[str]:
    import dis

    names = {
        i.argval
        for i in dis.get_instructions(code)
        if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")
    }
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            names |= _globals_read(const)
    return names


def run_copied(sections: list[str], tmp_path) -> dict:
    """Run the sections as one file, as a reader who copied them would; the
    names the code reads but never defines are in the result's MISSING."""
    import builtins
    import importlib.util

    from triton_course.notebooks import snippet_section

    source = "\n\n".join(snippet_section(*s.split(":")) for s in sections)
    # The copied program registers its operators under a namespace of its own:
    # under the course's name it would replace, in this process, the op that
    # the snippet module (and tests/test_memory_safety.py) holds.
    source = source.replace('"triton_course::', '"copied_page::')
    stem = f"copied_{len(list(tmp_path.glob('copied_*.py')))}"
    path = tmp_path / f"{stem}.py"  # triton.jit reads its source from a file
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # kept alive: its functions read its dict
    namespace = vars(module)
    code = compile(source, str(path), "exec")
    missing = {
        n
        for n in _globals_read(code)
        if n not in namespace and not hasattr(builtins, n)
    }
    namespace["MISSING"] = missing
    return namespace


def test_each_pages_code_runs_when_copied_in_order(tmp_path):
    import torch
    from conftest import DEVICE

    defined = {}
    for page in PAGES:
        text = (REPO_ROOT / "docs" / CHAPTER / page).read_text(encoding="utf-8")
        for name, sections in copied_programs(text).items():
            assert sections[0].endswith(":imports"), f"{page}: {name} has no imports"
            ns = run_copied(sections, tmp_path)
            assert not ns["MISSING"], f"{page}, {name}: never shows {ns['MISSING']}"
            defined[(page, name)] = ns
    # and what they define runs: one small call per launcher a page shows
    torch.manual_seed(0)
    x = torch.randn(5, 40, device=DEVICE)
    # index.md shows the fused tail's kernel; its launcher is collapsed
    assert "bias_gelu_dropout_kernel" in defined[("index.md", "fused_mlp_tail.py")]
    add = defined[("index.md", "vector_add.py")]["vector_add_simple"]
    torch.testing.assert_close(add(x[0], x[1]), x[0] + x[1])
    copy = defined[("memory-access.md", "memory_access.py")]
    assert torch.equal(copy["copy_2d"](x.t()), x.t().contiguous())
    assert torch.equal(copy["transpose"](x), x.t().contiguous())
    sm = defined[("pytorch-integration.md", "softmax_autograd.py")]
    torch.testing.assert_close(sm["softmax"](x), torch.softmax(x, dim=-1))


def test_the_copy_check_sees_titles_collapsed_blocks_and_imports():
    page = (
        '```python\n--8<-- "vector_add.py:imports"\n--8<-- "vector_add.py:kernel"\n'
        '```\n```python title="excerpt of matmul_kernel"\n'
        '--8<-- "matmul.py:loop"\n```\n'
        '??? info "How this is measured"\n\n    ```python\n'
        '    --8<-- "vector_add.py:benchmark"\n    ```\n\n'
        '```python\n--8<-- "matmul_tma.py:descriptors"\n```\n'
    )
    assert copied_programs(page) == {
        "vector_add.py": ["vector_add.py:imports", "vector_add.py:kernel"],
        "matmul_tma.py": ["vector_add.py:imports", "matmul_tma.py:descriptors"],
    }
