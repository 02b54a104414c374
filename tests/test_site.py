"""The site: strict build, module navigation from the nav, snippet consistency."""

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO_ROOT, SNIPPETS

DOCS = REPO_ROOT / "docs"
INCLUDE_RE = re.compile(r'^\s*--8<--\s+"([^"]+)"\s*$', re.M)


def _load_nav():
    # mkdocs.yml may carry !!python tags in the future; a plain safe_load is
    # enough for the nav today.
    return yaml.safe_load((REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]


def _html(site: Path, src_uri: str) -> str:
    page = src_uri[: -len(".md")]
    page = page[: -len("index")] if page.endswith("index") else page + "/"
    return (site / page / "index.html").read_text(encoding="utf-8")


def test_strict_build_is_clean_and_quick(built_site):
    site, seconds, log = built_site
    assert (site / "index.html").exists()
    assert "WARNING" not in log
    # About 9 s on a quiet 2-core machine; CI's 2 cores, shared with the
    # support table's background compile, took 32 s once (2026-11-26). The
    # bound catches a build gone slow (a hook doing work per page), not noise.
    assert seconds < 60, f"strict build took {seconds:.1f} s"


def test_plots_and_timing_tables_stay_out_of_markdown_and_search(built_site):
    # What keeps the build fast (#14): the plots' SVG and the timing tables
    # are put in after Markdown and the search indexer have run.
    site = built_site[0]
    page = _html(site, "triton-series/tiled-gemm.md")
    assert page.count("<svg") >= 2 and page.count('class="course-timings"') >= 4
    assert "data-deferred" not in page and "<p><div" not in page
    index = json.loads((site / "search" / "search_index.json").read_text("utf-8"))
    text = " ".join(doc["text"] for doc in index["docs"])
    assert "matmul_kernel" in text  # the index is real and has the page's prose
    for absent in ("Triton GPU ms", "Triton ms (p20", "÷ fastest", "÷ cuBLAS"):
        assert absent not in text, absent


def test_docs_build_needs_no_torch_or_triton(built_site):
    # The shared build blocked both imports (conftest.BUILD_WITHOUT_TORCH) and
    # succeeded: the hooks do not reach for them.
    from conftest import BUILD_WITHOUT_TORCH

    assert "sys.modules['torch'] = None" in BUILD_WITHOUT_TORCH
    assert "sys.modules['triton'] = None" in BUILD_WITHOUT_TORCH
    assert (built_site[0] / "index.html").is_file()
    extras = (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    docs_set = extras.split("docs = [", 1)[1].split("]", 1)[0]
    assert "torch" not in docs_set and 'triton"' not in docs_set


def _sections(nav):
    """(title, [src_uri, ...]) for every nav section whose children are pages."""
    for entry in nav:
        if not isinstance(entry, dict):
            continue
        ((title, children),) = entry.items()
        if isinstance(children, list):
            pages = []
            for child in children:
                value = next(iter(child.values())) if isinstance(child, dict) else child
                if isinstance(value, str):
                    pages.append(value)
                elif isinstance(value, list):  # a chapter: its pages, in order
                    pages += [next(iter(c.values())) if isinstance(c, dict) else c
                              for c in value]  # fmt: skip
            yield title, pages


def _is_index(uri):
    return uri.rsplit("/", 1)[-1] == "index.md"


def test_every_lesson_shows_module_navigation_in_nav_order(built_site):
    site = built_site[0]
    checked = 0
    for title, pages in _sections(_load_nav()):
        overview = next((p for p in pages if _is_index(p)), None)
        # a chapter's own index.md is a lesson of the module's reading order
        lessons = [p for p in pages if p.endswith(".md") and p != overview]
        for i, uri in enumerate(lessons):
            html = _html(site, uri)
            blocks = re.findall(r'<div class="module-nav">(.*?)</div>', html, re.S)
            assert len(blocks) == 2, f"{uri}: module nav should be at top and bottom"
            top = blocks[0]
            assert "Course Contents</a> → " in top and title in top, uri
            before = lessons[i - 1] if i else overview
            after = lessons[i + 1] if i + 1 < len(lessons) else None
            if before:
                assert "<strong>Previous:</strong>" in top, uri
            if after:
                target = after[: -len(".md")].removesuffix("/index").rsplit("/", 1)[-1]
                assert re.search(
                    rf"<strong>Next:</strong> <a href=\"[^\"]*{target}/\"", top
                ), uri
            checked += 1
    assert checked >= 1


def test_module_navigation_follows_a_reordered_nav(tmp_path):
    # A throwaway project using the real hook: reorder the nav, rebuild, and
    # Previous/Next must follow without touching any page.
    docs = tmp_path / "docs"
    (docs / "mod").mkdir(parents=True)
    (docs / "index.md").write_text("# Home\n")
    (docs / "mod" / "index.md").write_text("# Module overview\n")
    for name in ("alpha", "beta", "gamma"):
        (docs / "mod" / f"{name}.md").write_text(f"# Lesson {name}\n\nBody.\n")

    def build(order):
        lessons = "\n".join(f"      - mod/{n}.md" for n in order)
        (tmp_path / "mkdocs.yml").write_text(
            "site_name: t\n"
            f"hooks:\n  - {REPO_ROOT / 'hooks' / 'module_nav.py'}\n"
            "markdown_extensions: [md_in_html]\n"
            "nav:\n  - Course Contents: index.md\n  - The Module:\n"
            f"      - mod/index.md\n{lessons}\n"
        )
        out = tmp_path / "site"
        subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
            cwd=tmp_path,
            check=True,
            capture_output=True,
        )
        return lambda n: (out / "mod" / n / "index.html").read_text()

    page = build(["alpha", "beta", "gamma"])
    assert re.search(
        r"Previous:</strong> <a href=\"../alpha/\">Lesson alpha", page("beta")
    )
    assert re.search(r"Next:</strong> <a href=\"../gamma/\">Lesson gamma", page("beta"))
    assert "The Module</a>" in page("beta")
    page = build(["gamma", "beta", "alpha"])
    assert re.search(r"Previous:</strong> <a href=\"../gamma/\">", page("beta"))
    assert re.search(r"Next:</strong> <a href=\"../alpha/\">", page("beta"))
    assert "Next:" not in page("alpha").split("<hr")[0]


def _snippet_base_paths():
    config = yaml.safe_load((REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    for ext in config["markdown_extensions"]:
        if isinstance(ext, dict) and "pymdownx.snippets" in ext:
            return [REPO_ROOT / p for p in ext["pymdownx.snippets"]["base_path"]]
    raise AssertionError("pymdownx.snippets is not configured")


def _includes():
    for md in DOCS.rglob("*.md"):
        for target in INCLUDE_RE.findall(md.read_text(encoding="utf-8")):
            yield md, target


def _sections_of(path: Path) -> set[str]:
    return set(
        re.findall(r"--8<-- \[start:([\w-]+)\]", path.read_text(encoding="utf-8"))
    )


def test_every_embedded_section_exists():
    found = 0
    for md, target in _includes():
        name, _, section = target.partition(":")
        candidates = [base / name for base in _snippet_base_paths()]
        path = next((c for c in candidates if c.is_file()), None)
        assert path, f"{md.relative_to(REPO_ROOT)} embeds missing file {name}"
        if section:
            assert section in _sections_of(path), f"{md.name}: no section {target}"
        found += 1
    assert found > 0


def test_every_snippet_is_embedded_somewhere():
    embedded = {target.partition(":")[0] for _, target in _includes()}
    recipes = "".join(
        p.read_text(encoding="utf-8") for p in (REPO_ROOT / "notebooks").glob("*.md")
    )
    for snippet in sorted(SNIPPETS.glob("*.py")):
        assert snippet.name in embedded or f'"{snippet.name}:' in recipes, (
            f"snippets/{snippet.name} is not shown on any page"
        )


@pytest.mark.parametrize("snippet", sorted(SNIPPETS.glob("*.py")), ids=lambda p: p.name)
def test_section_markers_are_balanced(snippet):
    text = snippet.read_text(encoding="utf-8")
    starts = re.findall(r"# --8<-- \[start:([\w-]+)\]", text)
    ends = re.findall(r"# --8<-- \[end:([\w-]+)\]", text)
    assert sorted(starts) == sorted(ends), f"unbalanced markers in {snippet.name}"
    assert len(set(starts)) == len(starts), f"duplicate section names in {snippet.name}"


def test_the_readme_states_the_pinned_cpu_versions_and_the_runners():
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    pyproject = (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    torch_pin = re.search(r'"torch==([\d.]+)"', pyproject).group(1)
    triton_pin = re.search(r'"triton==([\d.]+)"', pyproject).group(1)
    cpu_row = next(ln for ln in readme.splitlines() if ln.startswith("| CI and"))
    assert f"| {torch_pin} (CPU build) | {triton_pin} |" in cpu_row
    # the GPU row names the versions the committed data was measured with
    gpu_row = next(ln for ln in readme.splitlines() if ln.startswith("| GPU runner"))
    for data in (REPO_ROOT / "data" / "timings").glob("*.json"):
        bench = next(iter(json.loads(data.read_text("utf-8"))["benchmarks"].values()))
        prov = bench["provenance"]
        for key in ("torch", "triton"):
            short = ".".join(prov[key].split("+")[0].split(".")[:2])
            assert f"| {short}" in gpu_row, (data.name, key, prov[key])


_TARGET_RE = re.compile(r"\[\[(?:verdict|measured)\s+([^\]]*\btarget=[^\]]*)\]\]")


def test_every_target_a_page_states_is_drawn_on_its_plot(built_site):
    # "the target drawn where the page states one" (#14): each ratio or
    # roofline target of a measured benchmark appears on that page's plot.
    site = built_site[0]
    measured = set()
    for path in (REPO_ROOT / "data" / "timings").glob("*.json"):
        measured |= set(json.loads(path.read_text("utf-8"))["benchmarks"])
    checked = 0
    for md in (REPO_ROOT / "docs").rglob("*.md"):
        text = md.read_text(encoding="utf-8")
        html = None
        for m in _TARGET_RE.finditer(text):
            args = dict(part.partition("=")[::2] for part in shlex.split(m.group(1)))
            bench, value = args["bench"], args["value"]
            if bench not in measured or f"[[timings {bench}" not in text:
                continue
            if value.startswith("ratio:"):
                drawn = f"ratio:{value[len('ratio:') :]}={float(args['target']):g}"
            elif value == "pct_roofline":
                drawn = f"roofline:={float(args['target']):g}"
            else:
                continue
            html = html or _html(site, md.relative_to(REPO_ROOT / "docs").as_posix())
            assert f'data-target="{drawn}"' in html, f"{md.name}: {drawn}"
            checked += 1
    assert checked >= 10, checked


_LAUNCHER_INCLUDE = re.compile(r'--8<--\s+"[\w.-]+\.py:\w*launchers?"')
_RUN_LINK = re.compile(
    r'<p class="course-run">.*?'
    r'<a class="course-run-page" href="([^"#]+)#(cell-id=[\w-]+)"'
)


def test_every_launcher_on_a_page_links_to_its_notebook_cell(built_site):
    # #16 item 1: a code block that is a complete unit (a launcher with its
    # kernel) has a visible way to run it: a link to the notebook cell
    site = built_site[0]
    pages = 0
    for md in DOCS.rglob("*.md"):
        wanted = len(_LAUNCHER_INCLUDE.findall(md.read_text(encoding="utf-8")))
        if not wanted:
            continue
        pages += 1
        rel = md.relative_to(DOCS).as_posix()
        html = _html(site, rel)
        links = _RUN_LINK.findall(html)
        assert len(links) == wanted, f"{rel}: {len(links)} links, {wanted} launchers"
        page_dir = (site / rel[: -len(".md")].removesuffix("index")).resolve()
        for href, anchor in links:
            target = (page_dir / href / "index.html").resolve()
            assert f'id="{anchor}"' in target.read_text(encoding="utf-8"), href
    assert pages >= 8


def test_a_launcher_in_no_notebook_fails_the_build(tmp_path):
    (tmp_path / "docs" / "notebooks").mkdir(parents=True)
    (tmp_path / "docs" / "index.md").write_text(
        '# P\n\n```python\n--8<-- "vector_add.py:launcher"\n```\n'
    )
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: t\n"
        f"hooks:\n  - {REPO_ROOT / 'hooks' / 'run_links.py'}\n"
        "markdown_extensions:\n"
        f"  - pymdownx.snippets: {{base_path: [{REPO_ROOT / 'snippets'}]}}\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", "site"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0
    assert "vector_add.py:launcher is on a page but in no notebook" in done.stderr


def test_notebook_pages_stay_out_of_the_search_index(built_site):
    # their code is the lessons' own: indexed, every code hit would come twice
    index = json.loads(
        (built_site[0] / "search" / "search_index.json").read_text("utf-8")
    )
    locations = [doc["location"] for doc in index["docs"]]
    assert locations and not [loc for loc in locations if "notebooks/" in loc]
    assert any(loc.startswith("gpu-architecture/02-") for loc in locations)
