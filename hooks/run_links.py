"""MkDocs hook: a "Run this" link under every code block that shows a launcher.

A launcher section (``--8<-- "FILE.py:launcher"``, ``...:launchers`` or
``...:*_launcher``) is the complete unit a reader can run: the launcher with
its kernel. Under each code block that embeds one, this hook adds a link that
opens the companion notebook in Colab at the cell holding the same code
(``#scrollTo=<cell id>``: the notebook builder gives cells stable ids), and
beside it a link to that cell on the site's static notebook page. The cell is
found by comparing the section's text with the cells of
``docs/notebooks/*.ipynb`` (the builder copies sections verbatim). A launcher
that no notebook holds fails the build, so every such block stays runnable
from its page. It also keeps the notebook pages out of the search index (their
code is the lessons').

Pure Python (json): the docs build needs neither torch nor triton.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.utils import get_relative_url

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:  # the hooks must work without an install
    sys.path.insert(0, str(REPO_ROOT))

from triton_course.notebooks import colab_url, snippet_section  # noqa: E402

_FENCE_RE = re.compile(r"^(\s*)(```|~~~)")
_LAUNCHER_RE = re.compile(r'--8<--\s+"([\w.-]+\.py):(\w*launchers?)"')
_REPO_RE = re.compile(r"https://github\.com/([^/\s]+/[^/\s]+?)/?$")
_cells: dict[str, tuple[str, str]] = {}  # cell source -> (notebook stem, cell id)
_colab = {"slug": None, "branch": "main"}  # where Colab fetches the notebooks


def on_config(config):
    # Same repository and branch as the notebook pages' "Run in Colab" button.
    match = _REPO_RE.match(config.get("repo_url") or "")
    _colab["slug"] = match.group(1) if match else None
    _colab["branch"] = (config.get("extra") or {}).get("colab_branch", "main")
    _cells.clear()
    for path in sorted((Path(config["docs_dir"]) / "notebooks").glob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "code":
                source = "".join(cell["source"])
                _cells.setdefault(source, (path.stem, cell["id"]))
    return config


def run_link(snippet: str, section: str, page_url: str) -> str:
    """The HTML links (Colab, then the static page) to the notebook cell
    holding this section."""
    where = _cells.get(snippet_section(snippet, section))
    if where is None:
        raise PluginError(
            f"{snippet}:{section} is on a page but in no notebook: add --8<-- "
            f'"{snippet}:{section}" to a recipe in notebooks/ and run make notebooks'
        )
    if _colab["slug"] is None:
        raise PluginError("run links: repo_url must be https://github.com/OWNER/REPO")
    stem, cell = where
    colab = colab_url(f"{stem}.ipynb", _colab["slug"], _colab["branch"])
    # nbconvert's HTML gives each cell the anchor id="cell-id=<id>"
    page = get_relative_url(f"notebooks/{stem}/", page_url) + f"#cell-id={cell}"
    return (
        f'<p class="course-run"><a class="course-run-colab" '
        f'href="{colab}#scrollTo={cell}">▶ Run this code in Colab</a>: it is a '
        f"cell of the <code>{stem}</code> notebook "
        f'(<a class="course-run-page" href="{page}">see it on this site</a>).</p>'
    )


def on_page_markdown(markdown, page, config, files):
    out, fence, launchers = [], None, []
    for line in markdown.split("\n"):
        out.append(line)
        m = _FENCE_RE.match(line)
        if fence is None:
            if m:
                fence = (m.group(1), m.group(2))
            continue
        if m and m.group(1) == fence[0] and m.group(2) == fence[1]:
            # the closing fence: the links go under the block, as indented
            if launchers:
                out.append("")
                out += [fence[0] + run_link(s, sec, page.file.url)
                        for s, sec in launchers]  # fmt: skip
            fence, launchers = None, []
        elif found := _LAUNCHER_RE.search(line):
            launchers.append(found.groups())
    return "\n".join(out)


def on_page_content(html, page, config, files):
    """Keep the notebook pages out of the search index: their code is the
    lessons' own, so every hit would come twice (and indexing their rendered
    HTML cost about 0.4 s a build)."""
    if page.file.src_uri.endswith(".ipynb"):
        page.meta["search"] = {**(page.meta.get("search") or {}), "exclude": True}
    return html
