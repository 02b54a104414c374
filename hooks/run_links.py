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
from its page.

Under every code block that embeds a Python file or a section of one
(``--8<-- "FILE.py:SECTION"``), it also links the whole file in the
repository on GitHub: the file pymdownx.snippets embeds, found along its
``base_path`` as the extension finds it (snippets/, then tests/). A file
outside the repository's tracked folders fails the build. It also keeps the
notebook pages out of the search index (their code is the lessons').

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
_EMBED_RE = re.compile(r'^\s*--8<--\s+"([\w./-]+\.py)(?::[\w-]*)?"')
_REPO_RE = re.compile(r"https://github\.com/([^/\s]+/[^/\s]+?)/?$")
_BRANCH_RE = re.compile(r"^(?:edit|blob)/([^/]+)/")
_cells: dict[str, tuple[str, str]] = {}  # cell source -> (notebook stem, cell id)
_colab = {"slug": None, "branch": "main"}  # where Colab fetches the notebooks
# where an embedded file is looked for (pymdownx.snippets' base_path, in
# order) and the repository's branch its GitHub links point at
_files: dict = {"bases": [], "branch": "main"}


def on_config(config):
    # Same repository and branch as the notebook pages' "Run in Colab" button.
    match = _REPO_RE.match(config.get("repo_url") or "")
    _colab["slug"] = match.group(1) if match else None
    _colab["branch"] = (config.get("extra") or {}).get("colab_branch", "main")
    snippets = (config.get("mdx_configs") or {}).get("pymdownx.snippets") or {}
    bases = snippets.get("base_path") or ["."]
    root = Path(config["config_file_path"]).parent.resolve()
    _files["bases"] = [
        (root / b).resolve() for b in ([bases] if isinstance(bases, str) else bases)
    ]
    branch = _BRANCH_RE.match(config.get("edit_uri") or "")
    _files["branch"] = branch.group(1) if branch else _colab["branch"]
    _files["root"] = root
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


def file_link(name: str) -> str:
    """The HTML link to the whole embedded file on GitHub."""
    root = _files["root"]
    found = next((b / name for b in _files["bases"] if (b / name).is_file()), None)
    if found is None or not found.resolve().is_relative_to(root):
        raise PluginError(f"{name}: embedded, but in no folder of the repository")
    if _colab["slug"] is None:
        raise PluginError("file links: repo_url must be https://github.com/OWNER/REPO")
    path = found.resolve().relative_to(root).as_posix()
    url = f"https://github.com/{_colab['slug']}/blob/{_files['branch']}/{path}"
    return (
        f'<p class="course-file"><small>The whole file: <a href="{url}">'
        f"<code>{path}</code></a> on GitHub</small></p>"
    )


def on_page_markdown(markdown, page, config, files):
    out, fence, launchers, embedded = [], None, [], []
    for line in markdown.split("\n"):
        out.append(line)
        m = _FENCE_RE.match(line)
        if fence is None:
            if m:
                fence = (m.group(1), m.group(2))
            continue
        if m and m.group(1) == fence[0] and m.group(2) == fence[1]:
            # the closing fence: the links go under the block, as indented
            if launchers or embedded:
                out.append("")
                out += [fence[0] + run_link(s, sec, page.file.url)
                        for s, sec in launchers]  # fmt: skip
                out += [fence[0] + file_link(n) for n in dict.fromkeys(embedded)]
            fence, launchers, embedded = None, [], []
        else:
            if found := _LAUNCHER_RE.search(line):
                launchers.append(found.groups())
            embedded += _EMBED_RE.findall(line)
    return "\n".join(out)


def on_page_content(html, page, config, files):
    """Keep the notebook pages out of the search index: their code is the
    lessons' own, so every hit would come twice (and indexing their rendered
    HTML cost about 0.4 s a build). Unwrap the links nested in a paragraph."""
    if page.file.src_uri.endswith(".ipynb"):
        page.meta["search"] = {**(page.meta.get("search") or {}), "exclude": True}
    # Inside a tab or an admonition, Markdown wraps the links' raw <p> in a
    # paragraph of its own (<p><p ...>...</p></p>): unwrap it.
    return _NESTED_RE.sub(r"\1", html)


_NESTED_RE = re.compile(r'<p>\s*(<p class="course-(?:run|file)">.*?</p>)\s*</p>', re.S)
