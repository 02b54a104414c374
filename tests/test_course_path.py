"""One path through the course (#34): the nav is the teaching order.

Every Previous/Next, in each lesson's box and in the footer, follows the nav;
the first kernel is a click or two from the home page; the links the home
page, the module page and the series page give for "start with" and "next"
name the pages the nav puts there; each page of the GPU Architecture module
says which earlier pages it assumes. The site also says how to get the code
and install only what running a kernel needs (the `kernels` extra).
"""

from __future__ import annotations

import ast
import posixpath
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from conftest import REPO_ROOT

DOCS = REPO_ROOT / "docs"
FIRST_KERNEL = "triton-series/vector-addition.md"
# Next from the home page reaches the first kernel in at most this many clicks
# (home -> What Triton is -> Vector addition); before #34 it took 12.
MAX_CLICKS_TO_FIRST_KERNEL = 2
MODULE = "GPU Architecture"

BOX_RE = re.compile(r'<div class="module-nav">(.*?)</div>', re.S)
FOOTER_RE = re.compile(
    r'<a href="([^"]*)" class="md-footer__link md-footer__link--(prev|next)"'
)
LINK_RE = re.compile(r"\[[^\]]*\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _config() -> dict:
    return yaml.safe_load((REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8"))


def _flatten(node) -> list[str]:
    """The nav's pages in order (what MkDocs' nav.pages and the footer use)."""
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [p for value in node.values() for p in _flatten(value)]
    return [p for item in node for p in _flatten(item)]


ORDER = _flatten(_config()["nav"])


def _url(src_uri: str) -> str:
    """The site path a page is built to (directory URLs)."""
    stem = src_uri.rsplit(".", 1)[0]
    if stem == "index":
        return ""
    return stem.removesuffix("/index") + "/"


def _html(site: Path, src_uri: str) -> str:
    return (site / _url(src_uri) / "index.html").read_text(encoding="utf-8")


def _resolve_href(from_uri: str, href: str) -> str:
    """A built page's relative href, as the site path it points to."""
    here = _url(from_uri)
    target = posixpath.normpath(posixpath.join(here, href))
    return "" if target == "." else target + "/"


def _box_links(top: str) -> dict[str, list[str]]:
    """Label -> hrefs in one module-nav box ("Previous", "Next", "Assumes")."""
    links = {}
    for label, rest in re.findall(r"<strong>(\w+):</strong>(.*?)(?:<br|$)", top, re.S):
        links[label] = re.findall(r'<a href="([^"]*)"', rest)
    return links


def _footer(html: str) -> dict[str, str]:
    return {kind: href for href, kind in FOOTER_RE.findall(html)}


def _front_matter(src_uri: str) -> dict:
    text = (DOCS / src_uri).read_text(encoding="utf-8")
    if not text.startswith("---\n"):
        return {}
    return yaml.safe_load(text.split("---\n", 2)[1]) or {}


def _section(src_uri: str, heading: str) -> str:
    """The Markdown under a '## heading' of a page, up to the next '## '."""
    text = (DOCS / src_uri).read_text(encoding="utf-8")
    after = text.split(f"\n## {heading}\n", 1)
    assert len(after) == 2, f"{src_uri} has no '## {heading}' section"
    return after[1].split("\n## ", 1)[0]


def _targets(src_uri: str, markdown: str) -> list[str]:
    """The pages a Markdown fragment of ``src_uri`` links, as src URIs, in
    order (external links and pure anchors left out)."""
    here = posixpath.dirname(src_uri)
    found = []
    for href in LINK_RE.findall(markdown):
        if "://" in href or not href.endswith((".md", ".ipynb")):
            continue
        found.append(posixpath.normpath(posixpath.join(here, href)))
    return found


# ------------------------------------------------------------ nav order ---
def test_the_series_comes_first_and_the_module_assumes_it():
    assert ORDER[0] == "index.md"
    assert ORDER.index("triton-series/index.md") == 1
    assert ORDER.index(FIRST_KERNEL) == 2
    module = ORDER.index("gpu-architecture/index.md")
    assert module > ORDER.index("triton-series/online-softmax.md")


def test_next_from_the_home_page_reaches_the_first_kernel(built_site):
    site = built_site[0]
    page, clicks = "index.md", 0
    while page != FIRST_KERNEL:
        href = _footer(_html(site, page)).get("next")
        assert href, f"{page} has no Next link"
        target = _resolve_href(page, href)
        page = next(p for p in ORDER if _url(p) == target)
        clicks += 1
        assert clicks <= MAX_CLICKS_TO_FIRST_KERNEL, f"Next reached {page}"
    # the home page's own "start with" link is one click
    start = _targets("index.md", _section("index.md", "Where to start"))
    assert FIRST_KERNEL in start[:2], start


def test_every_box_and_footer_follows_the_nav_order(built_site):
    site = built_site[0]
    boxes = 0
    for i, uri in enumerate(ORDER):
        html = _html(site, uri)
        want = {
            "prev": _url(ORDER[i - 1]) if i else None,
            "next": _url(ORDER[i + 1]) if i + 1 < len(ORDER) else None,
        }
        footer = _footer(html)
        for kind, target in want.items():
            got = footer.get(kind)
            assert (got and _resolve_href(uri, got)) == target, (uri, kind, got)
        found = BOX_RE.findall(html)
        if not uri.endswith(".md") or uri == "index.md":
            continue  # notebooks and the home page have no box
        assert len(found) == 2, f"{uri}: a box at the top and at the foot"
        for box in found:
            links = _box_links(box)
            for label, kind in (("Previous", "prev"), ("Next", "next")):
                hrefs = [_resolve_href(uri, h) for h in links.get(label, [])]
                # the box agrees with the footer: lesson 04 had no Next in its
                # box while its footer had one
                assert hrefs == ([want[kind]] if want[kind] is not None else []), (
                    uri,
                    label,
                    hrefs,
                )
        boxes += 1
    assert boxes >= 15


# ------------------------------------------- links that state an order ---
def test_the_home_page_start_links_are_the_navs_first_pages():
    where = _section("index.md", "Where to start")
    newcomer = next(line for line in where.split("\n- ") if "New to GPU" in line)
    assert _targets("index.md", newcomer)[:2] == ORDER[1:3]
    # the course's sections on the home page come in nav order, and so do the
    # lessons their tables list
    text = (DOCS / "index.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+)$", text, re.M)
    series, module = "Triton GPU Programming", MODULE
    assert headings.index(series) < headings.index(module)
    listed = _targets("index.md", _section("index.md", series)) + _targets(
        "index.md", _section("index.md", module)
    )
    listed = [p for p in listed if p.endswith(".md")]
    positions = [ORDER.index(p) for p in listed]
    assert positions == sorted(positions), listed


def test_the_module_and_series_pages_name_the_navs_next_pages():
    module = "gpu-architecture/index.md"
    path = _targets(module, _section(module, "The learning path"))
    lessons = [p for p in path if p.startswith("gpu-architecture/")]
    positions = [ORDER.index(p) for p in lessons]
    assert positions == sorted(positions) and len(lessons) == 4, lessons
    # the series pages it names come before it in the nav
    for page in path:
        if page.startswith("triton-series/"):
            assert ORDER.index(page) < ORDER.index(module), page
    # the series page ends on what comes next: its first tutorial, and the
    # module after the series' last page
    text = (DOCS / "triton-series/index.md").read_text(encoding="utf-8")
    last = text.rstrip().rsplit("\n\n", 1)[1]
    series = "triton-series/index.md"
    named = _targets(series, last)
    assert named[0] == ORDER[ORDER.index(series) + 1], named
    assert named[-1] == module
    assert ORDER[ORDER.index(module) - 1].startswith("triton-series/")


# ------------------------------------------------------------- assumes ---
MODULE_PAGES = [p for p in ORDER if p.startswith("gpu-architecture/")]


@pytest.mark.parametrize("uri", MODULE_PAGES)
def test_each_module_page_names_earlier_pages_it_assumes(uri, built_site):
    assumed = _front_matter(uri).get("assumes")
    assert assumed, f"{uri}: no 'assumes:' in its front matter"
    here = posixpath.dirname(uri)
    for target in assumed:
        page = posixpath.normpath(posixpath.join(here, target))
        assert page in ORDER, (uri, target)
        assert ORDER.index(page) < ORDER.index(uri), (uri, target, "comes later")
    # shown in the box at the top of the page, not repeated at the foot
    top, foot = BOX_RE.findall(_html(built_site[0], uri))
    shown = [_resolve_href(uri, h) for h in _box_links(top).get("Assumes", [])]
    want = [_url(posixpath.normpath(posixpath.join(here, t))) for t in assumed]
    assert shown == want, (uri, shown)
    assert "Assumes:" not in foot


def test_assuming_a_later_page_stops_the_build(tmp_path):
    docs = tmp_path / "docs"
    (docs / "mod").mkdir(parents=True)
    (docs / "index.md").write_text("# Home\n")
    (docs / "mod" / "index.md").write_text("# Module\n")
    (docs / "mod" / "a.md").write_text("---\nassumes: [b.md]\n---\n# A\n")
    (docs / "mod" / "b.md").write_text("---\nassumes: [a.md]\n---\n# B\n")
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: t\n"
        f"hooks:\n  - {REPO_ROOT / 'hooks' / 'module_nav.py'}\n"
        "markdown_extensions: [md_in_html]\n"
        "nav:\n  - index.md\n  - Mod:\n"
        "      - mod/index.md\n      - mod/a.md\n      - mod/b.md\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", "out"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0
    assert "mod/a.md: 'assumes: b.md', but the nav puts that page later" in (
        done.stderr
    )
    # in order, it builds and b's box names a
    (docs / "mod" / "a.md").write_text("# A\n")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", "out"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    b = (tmp_path / "out" / "mod" / "b" / "index.html").read_text()
    assert re.search(r'Assumes:</strong> <a href="../a/">A</a>', b)


# ------------------------------------------------------- get the code ---
def _requirement_name(spec: str) -> str:
    return re.split(r"[<>=!~\[; ]", spec, maxsplit=1)[0].lower()


def test_the_kernels_extra_is_torch_and_triton_and_what_they_run_on():
    extras = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text("utf-8"))
    kernels = extras["project"]["optional-dependencies"]["kernels"]
    # numpy: Triton's interpreter imports it, and neither triton nor the CPU
    # torch wheel declares it
    assert {_requirement_name(r) for r in kernels} == {"torch", "triton", "numpy"}
    assert len(kernels) == 3
    # the script the pages run needs nothing more than the extra
    tree = ast.parse((REPO_ROOT / "snippets" / "vector_add.py").read_text("utf-8"))
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and not node.level
    }
    allowed = {"torch", "triton", "numpy", "__future__"}
    assert imported - allowed <= set(sys.stdlib_module_names), imported


@pytest.mark.parametrize(
    ("source", "section"), [("docs/index.md", "Get the code"), ("README.md", "Set up")]
)
def test_the_install_commands_name_the_extra(source, section):
    text = (REPO_ROOT / source).read_text(encoding="utf-8")
    part = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    blocks = "\n".join(re.findall(r"```bash\n(.*?)```", part, re.S))
    repo = _config()["repo_url"].rstrip("/")
    assert f"git clone {repo}.git" in blocks
    assert "pip install -e '.[kernels]'" in blocks
    assert "--index-url https://download.pytorch.org/whl/cpu" in blocks
    assert "TRITON_INTERPRET=1 python snippets/vector_add.py" in blocks
    assert (REPO_ROOT / "snippets" / "vector_add.py").is_file()


def test_a_next_title_is_the_pages_heading_not_a_front_matter_comment(built_site):
    # A page later in the build has no title yet, so the box reads its first
    # "# " line: the front matter's comment ("# Earlier pages this one builds
    # on ...") was taken for the heading of lesson 03's overview.
    site = built_site[0]
    pages = [uri for uri in ORDER if uri.endswith(".md") and uri != "index.md"]
    for uri in pages:
        for box in BOX_RE.findall(_html(site, uri)):
            assert "Earlier pages this one builds on" not in box, uri
    assert len(pages) >= 15
