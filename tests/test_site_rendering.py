"""The built site shows no rendering debris (issue 26): no literal HTML tags
or backslash escapes in the text a reader sees, no Markdown table left as a
paragraph of pipes, no math whose text shows a backslash, and a 404 page and
skip links that lead somewhere."""

import re
from pathlib import Path

from bs4 import BeautifulSoup

# What a reader must never see in prose, captions, table cells or plot text:
# a tag printed as text, a Markdown backslash escape, an entity escaped twice.
DEBRIS = [
    re.compile(r"</?(?:sup|sub|br|code|em|strong|small|b|i|span|div|a)\b[^>]*>"),
    re.compile(r"\\[_*|#`\[\]]"),
    re.compile(r"&(?:lt|gt|amp|quot|nbsp);"),
]
# A Markdown table that was not parsed: a run of pipes and a --- separator.
TABLE_AS_TEXT = re.compile(r"\|\s*:?-{3,}:?\s*\|")
# Math: \text{...} is set as text, where a \_ shows its backslash.
TEXT_IN_MATH = re.compile(r"\\(?:text|textrm|texttt|mbox)\{([^{}]*)\}")


def _visible_text(soup: BeautifulSoup) -> list[tuple[str, str]]:
    """(where, text) for every text node a reader sees, outside code."""
    for hidden in soup(["script", "style", "pre", "code", "kbd", "template"]):
        hidden.decompose()
    out = []
    for node in soup.find_all(string=True):
        text = str(node)
        if text.strip():
            out.append((node.parent.name, text))
    return out


def problems(site: Path) -> list[str]:
    found = []
    for html in sorted(site.rglob("*.html")):
        page = html.relative_to(site).as_posix()
        soup = BeautifulSoup(html.read_text(encoding="utf-8"), "html.parser")
        for math in soup.select(".arithmatex"):
            for m in TEXT_IN_MATH.finditer(math.get_text()):
                if "\\" in m.group(1):
                    found.append(f"{page}: math text shows a backslash: {m.group()}")
        for math in soup.select(".arithmatex"):
            math.decompose()  # TeX source is not what a reader sees
        for where, text in _visible_text(soup):
            for pattern in DEBRIS:
                if m := pattern.search(text):
                    found.append(f"{page} <{where}>: {m.group()!r} in {text[:80]!r}")
            if TABLE_AS_TEXT.search(text):
                found.append(f"{page} <{where}>: a Markdown table left as text")
    return found


def test_no_literal_tags_escapes_or_raw_tables_in_visible_text(built_site):
    site = built_site[0]
    assert len(list(site.rglob("index.html"))) > 10
    found = problems(site)
    assert not found, "\n".join(found[:40])


def test_the_checker_sees_the_debris_issue_26_found(tmp_path):
    # what the pages at ffa3b6a showed, each on its own page
    pages = {
        "sup.html": "<p><em>In every row: n 2&lt;sup&gt;24&lt;/sup&gt;.</em></p>",
        "math.html": '<p><span class="arithmatex">\\(\\text{BLOCK\\_M}\\)</span></p>',
        "table.html": "<p>| max error / max | O | | --- | --- |</p>",
        "fine.html": "<p>2<sup>24</sup> and <code>&lt;sup&gt;</code> in code</p>",
    }
    for name, body in pages.items():
        (tmp_path / name).write_text(f"<html><body>{body}</body></html>")
    found = "\n".join(problems(tmp_path))
    assert "sup.html" in found and "math.html" in found and "table.html" in found
    assert "fine.html" not in found


def test_every_skip_link_leads_to_an_anchor_on_its_page(built_site):
    site = built_site[0]
    missing = []
    for html in sorted(site.rglob("index.html")):
        text = html.read_text(encoding="utf-8")
        m = re.search(r'<a href="#([^"]+)" class="md-skip">', text)
        if m and f'id="{m.group(1)}"' not in text:
            missing.append(f"{html.relative_to(site)}: #{m.group(1)}")
    assert not missing, missing


def test_the_404_page_links_relative_to_the_root_it_finds(built_site):
    # MkDocs writes 404.html with /triton-course/... links, which break when
    # the site is served anywhere else; tests/test_browser.py serves it at /
    text = (built_site[0] / "404.html").read_text(encoding="utf-8")
    links = re.findall(r'\b(?:href|src)="([^"]+)"', text)
    assert links
    assert not [u for u in links if u.startswith("/")], links
    assert "Page not found" in text and 'href="triton-series/"' in text
    assert "document.write('<base href=" in text
