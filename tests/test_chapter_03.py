"""Lesson 03 is a chapter: pages a learner finishes in one sitting, in nav order.

Issue 26: the one-page lesson 03 showed about 11,600 words by default. Each
chapter page must stay under WORD_BUDGET words that a reader sees without a
click: prose and tables, but not code, not collapsed blocks (``???``) and not
any tab but the first of a tabbed set (the second GPU's tab).
"""

from __future__ import annotations

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
    "matmul-autotuning.md",
    "profiling-debugging.md",
    "pytorch-integration.md",
]
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


def test_the_chapter_sits_between_lessons_02_and_04_in_order():
    flat = _chapter_in_nav()
    i = next(i for i, v in enumerate(flat) if isinstance(v, list))
    assert flat[i - 1].endswith("02-flash-attention-mixed-precision.md")
    assert flat[i + 1].endswith("04-gpu-profiling.md")
    assert flat[i] == [f"{CHAPTER}{p}" for p in PAGES]
    for page in PAGES:
        assert (REPO_ROOT / "docs" / CHAPTER / page).is_file(), page


def _resolve(here: str, href: str) -> str:
    return posixpath.normpath(posixpath.join(here, href))


def test_previous_and_next_walk_02_through_the_chapter_to_04(built_site):
    site = built_site[0]
    order = ["02-flash-attention-mixed-precision"] + [
        f"03-custom-kernels/{p[:-3]}" for p in PAGES
    ] + ["04-gpu-profiling"]  # fmt: skip
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
