"""The glossary (issue 34 item 6): every term a newcomer meets, each linking
to the page that teaches it, at an anchor that exists; and the acronyms
defined on hover on every page (includes/abbreviations.md, appended to each
page by pymdownx.snippets)."""

import re
from html import unescape

from conftest import REPO_ROOT

GLOSSARY = "reference/glossary/index.html"
# The terms the issue asks for, by their anchor on the page
TERMS = [
    "sm", "warp", "warpgroup", "program", "block", "grid", "occupancy",
    "coalescing", "l2", "hbm", "roofline", "arithmetic-intensity",
    "tensor-core", "mma", "tma", "tensor-descriptor", "autotuning",
    "interpreter", "ptx", "sass", "kernel-launch", "mask", "stride",
]  # fmt: skip
ABBREVIATIONS = REPO_ROOT / "includes" / "abbreviations.md"


def _article(html: str) -> str:
    return html[html.find("<article") : html.find("</article>")]


def _entries(site) -> dict[str, str]:
    """Anchor -> the HTML of its definition."""
    html = _article((site / GLOSSARY).read_text(encoding="utf-8"))
    return dict(re.findall(r'<dt id="([\w-]+)">.*?</dt>\s*<dd>(.*?)</dd>', html, re.S))


def test_every_term_is_defined_and_links_the_page_that_teaches_it(built_site):
    entries = _entries(built_site[0])
    missing = [t for t in TERMS if t not in entries]
    assert not missing, missing
    for term, body in entries.items():
        taught = body[body.find("Taught in") :]
        assert "Taught in" in body, f"{term}: no page named"
        pages = re.findall(r'href="(\.\./[^"#]+)', taught)
        assert pages, f"{term}: 'Taught in' links no page"
        text = unescape(re.sub(r"<[^>]+>", "", body))
        assert 60 <= len(text) <= 900, (term, len(text))


def test_every_link_of_the_glossary_reaches_an_existing_anchor(built_site):
    site = built_site[0]
    page = site / GLOSSARY
    links = re.findall(r'href="([^"]+)"', _article(page.read_text(encoding="utf-8")))
    checked = 0
    for href in sorted(set(links)):
        if href.startswith(("http://", "https://")):
            continue
        path, _, anchor = href.partition("#")
        target = (page.parent / path).resolve() if path else page
        if target.is_dir():
            target = target / "index.html"
        assert target.is_file(), f"{href}: no such page"
        if anchor:
            html = target.read_text(encoding="utf-8")
            assert f'id="{anchor}"' in html, f"{href}: no anchor {anchor!r}"
        checked += 1
    assert checked >= 30, checked


def test_acronyms_show_their_definition_on_every_page(built_site):
    site = built_site[0]
    defined = dict(
        re.findall(r"^\*\[([^\]]+)\]:\s*(.+)$", ABBREVIATIONS.read_text(), re.M)
    )
    assert {"SM", "HBM", "TMA", "PTX", "SASS"} <= set(defined)
    glossary = unescape((site / GLOSSARY).read_text(encoding="utf-8"))
    for short in defined:  # each one the glossary explains at length
        assert re.search(rf"\b{re.escape(short)}\b", glossary), short
    # appended to every page: the lesson that teaches SMs shows the title
    lesson = site / "gpu-architecture" / "01-gpu-architecture" / "index.html"
    html = lesson.read_text(encoding="utf-8")
    title = defined["SMs"].replace("'", "&#x27;")
    assert f'<abbr title="{title}">SMs</abbr>' in html
    # never inside code: `tl.dot` on an SM in a code block stays plain text
    for block in re.findall(r"<code>.*?</code>", html, re.S):
        assert "<abbr" not in block, block[:200]


# Lesson 01 is where a newcomer meets the hardware's words: each of its pages
# links the glossary at the first use of every term it teaches or leans on.
LESSON_01_TERMS = {
    "01-gpu-architecture.md": [
        "sm", "l2", "grid", "program", "warp", "num-warps", "block", "mask",
        "shared-memory", "hbm", "tensor-core", "warpgroup", "mma", "sass",
        "tensor-descriptor", "tma", "interpreter", "autotuning",
    ],
    "01-roofline.md": [
        "arithmetic-intensity", "roofline", "ridge-point", "ptx", "hbm", "sm",
        "interpreter", "tensor-core", "program", "block", "constexpr", "sass",
    ],
    "01-coalescing-occupancy.md": [
        "warp", "coalescing", "stride", "hbm", "sm", "occupancy",
        "shared-memory", "program", "num-warps", "interpreter", "l2", "block",
    ],
}  # fmt: skip


def test_lesson_01_links_each_term_to_the_glossary_once():
    source = (REPO_ROOT / "docs" / "reference" / "glossary.md").read_text()
    anchors = set(re.findall(r"\{ #([\w-]+) \}", source))
    for page, terms in LESSON_01_TERMS.items():
        text = (REPO_ROOT / "docs" / "gpu-architecture" / page).read_text()
        linked = re.findall(r"\]\(\.\./reference/glossary\.md#([\w-]+)\)", text)
        assert set(linked) <= anchors, (page, set(linked) - anchors)
        missing = [t for t in terms if t not in linked]
        assert not missing, f"{page} does not link {missing} to the glossary"
        twice = sorted({t for t in linked if linked.count(t) > 1})
        assert not twice, f"{page} links {twice} more than once: at first use only"


# review 2026-11-27 (01-roofline finding 4, 01-coalescing-occupancy finding 4):
# the link sits at the first use of the word in the prose, not further down
FIRST_USE = {
    "01-roofline.md": {
        "hbm": r"\bHBM\b", "sm": r"\bSMs?\b", "interpreter": r"\binterpreter\b",
        "tensor-core": r"\btensor[- ]cores?\b", "program": r"\bprograms?\b",
        "block": r"(?<!code )\bblocks?\b", "sass": r"\bSASS\b",
    },
    "01-coalescing-occupancy.md": {
        "stride": r"\bstrides?\b", "warp": r"\bwarps?\b", "l2": r"\bL2\b",
        "block": r"\bblocks?\b", "sm": r"\bSMs?\b", "hbm": r"\bHBM\b",
        "program": r"\bprograms?\b",
    },
}  # fmt: skip


def _prose(markdown: str) -> str:
    """A page's prose: no front matter, code, directives or link targets; each
    glossary link kept as \\0anchor\\1text\\2."""
    text = re.sub(r"\A---\n.*?\n---\n", "", markdown, flags=re.S)
    text = re.sub(r"^\s*```.*?^\s*```", "", text, flags=re.S | re.M)
    text = re.sub(
        r"\[([^\]]*)\]\(\.\./reference/glossary\.md#([\w-]+)\)",
        lambda m: f"\0{m.group(2)}\1{m.group(1)}\2",
        text,
    )
    text = re.sub(r"`[^`]*`", "", text)
    text = re.sub(r"\[\[[^\]]*\]\]", "", text)
    return re.sub(r"\]\([^)]*\)", "]", text)


def test_lesson_01_links_each_term_at_its_first_use():
    for page, words in FIRST_USE.items():
        text = _prose((REPO_ROOT / "docs" / "gpu-architecture" / page).read_text())
        for anchor, word in words.items():
            first = re.search(word, text)
            assert first, (page, anchor)
            start = text.find(f"\0{anchor}\1")
            assert start != -1, f"{page}: no glossary link for {anchor}"
            end = text.find("\2", start)
            assert start < first.start() < end, (
                f"{page}: {anchor!r} is first used before its glossary link: "
                f"...{text[max(0, first.start() - 60) : first.end() + 20]!r}"
            )


def test_the_ridge_point_depends_on_the_units():
    # review 2026-11-27 (01-roofline finding 2): a kernel left of the matmul
    # ridge may be bound by its FP32 arithmetic
    source = (REPO_ROOT / "docs" / "reference" / "glossary.md").read_text()
    entry = source.split("Ridge point { #ridge-point }", 1)[1].split("{ #", 1)[0]
    assert "the units a kernel's arithmetic runs on" in " ".join(entry.split())
