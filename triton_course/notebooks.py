"""Companion notebooks, built from a recipe and the snippet sections it names.

A recipe (``notebooks/<name>.md``) is Markdown with two kinds of code cell:

- a line ``--8<-- "vector_add.py:kernel"`` becomes a code cell holding exactly
  that section of ``snippets/vector_add.py``, the same text the lesson page
  embeds: one source of truth, so the notebook cannot drift from the snippet.
  The file is found as the site finds it (mkdocs.yml's snippets base_path:
  snippets/, then tests/, ...), so a section of a test file that a page
  shows, ``test_vector_add.py:first_run``, works the same way;
- a fenced ```` ```python ```` block becomes a code cell as written (set-up,
  checks, timing that only the notebook needs). A block fenced
  ```` ```python timing ```` is a timing cell: its cell gets the tag
  ``timing`` (TIMING_TAG), and the GPU runner executes it, and every cell
  after it, only once the benchmarks are done, with nothing else on the GPU.

Everything between code cells becomes one Markdown cell. The first cell is a
"Run in Colab" badge pointing at the repository named in ``mkdocs.yml``.

    python -m triton_course.notebooks build    # write docs/notebooks/*.ipynb
    python -m triton_course.notebooks check    # fail if any notebook drifted
    python -m triton_course.notebooks execute  # run them here, store outputs

Building keeps the outputs, execution count and metadata (nbclient's timings)
of every code cell whose source did not change, and the notebook's own
metadata, so the outputs of the last real run survive a rebuild that changes
only prose, and rebuilding an executed notebook from unchanged recipes
changes nothing.

Every cell gets a stable id (nbformat 4.5), derived from what it holds, never
from its position: a lesson's "Run this code" link opens Colab at
``#scrollTo=<id>``, so an id must not move when a cell is added above it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import textwrap
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
RECIPES_DIR = REPO_ROOT / "notebooks"
OUTPUT_DIR = REPO_ROOT / "docs" / "notebooks"

_INCLUDE_RE = re.compile(r'^--8<--\s+"([^":]+):([\w-]+)"\s*$')
TIMING_TAG = "timing"  # cells the runner executes alone, after the benchmarks
_FENCES = {"```python": [], "```python timing": [TIMING_TAG]}  # fence -> tags
_START = "# --8<-- [start:{}]"
_END = "# --8<-- [end:{}]"
# nbformat 4.5: a cell id is 1-64 letters, digits, '-' or '_'
CELL_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


class NotebookError(ValueError):
    """A recipe names a snippet or section that does not exist, or drifted."""


def embed_dirs(mkdocs_yml: Path = REPO_ROOT / "mkdocs.yml") -> list[Path]:
    """Where the site looks for an embedded file: pymdownx.snippets'
    ``base_path`` in mkdocs.yml, in its order (snippets/ first, then the
    excerpts, tests/, ...), read without a YAML dependency."""
    text = mkdocs_yml.read_text(encoding="utf-8")
    match = re.search(r"^\s*base_path:\s*\[([^\]]*)\]", text, re.M)
    if not match:
        raise NotebookError("mkdocs.yml: pymdownx.snippets needs base_path: [...]")
    return [REPO_ROOT / d.strip() for d in match.group(1).split(",") if d.strip()]


def snippet_section(
    snippet: str, section: str, snippets_dir: Path | None = None
) -> str:
    """The text between a snippet's ``[start:section]`` and ``[end:section]``.

    The file is looked for as the lesson pages find it, along embed_dirs()
    (so a page's section of a test file, such as ``test_vector_add.py``, is
    the same text in its notebook), or in ``snippets_dir`` if given.
    """
    if snippet.startswith("_"):  # notebook-only code, kept beside the recipes
        path = RECIPES_DIR / snippet
    elif snippets_dir is not None:
        path = snippets_dir / snippet
    else:
        dirs = embed_dirs()
        path = next((d / snippet for d in dirs if (d / snippet).is_file()), None)
        if path is None:
            where = ", ".join(str(d.relative_to(REPO_ROOT)) for d in dirs)
            raise NotebookError(f"snippet {snippet} not found in {where}")
    if not path.is_file():
        raise NotebookError(f"snippet {path} not found")
    lines = path.read_text(encoding="utf-8").splitlines()
    start, end = _START.format(section), _END.format(section)
    try:
        first = [line.strip() for line in lines].index(start) + 1
        last = [line.strip() for line in lines].index(end, first)
    except ValueError:
        raise NotebookError(f"{path}: section {section!r} not found") from None
    body = [
        line for line in lines[first:last] if not line.strip().startswith("# --8<--")
    ]
    return textwrap.dedent("\n".join(body)).strip("\n")


def repo_slug(mkdocs_yml: Path = REPO_ROOT / "mkdocs.yml") -> str:
    """OWNER/REPO from mkdocs.yml's repo_url (read without a YAML dependency)."""
    text = mkdocs_yml.read_text(encoding="utf-8")
    match = re.search(
        r"^repo_url:\s*https://github\.com/([^/\s]+/[^/\s]+?)/?\s*$", text, re.M
    )
    if not match:
        raise NotebookError(
            "mkdocs.yml: repo_url must be https://github.com/OWNER/REPO"
        )
    return match.group(1)


def colab_url(notebook_name: str, slug: str, branch: str = "main") -> str:
    return (
        f"https://colab.research.google.com/github/{slug}/blob/{branch}/"
        f"docs/notebooks/{notebook_name}"
    )


def section_key(snippet: str, section: str) -> str:
    """The id stem of a cell embedding ``snippet:section``: ``vector_add-launcher``."""
    stem = Path(snippet).stem.lstrip("_")  # _setup.py (notebook-only) -> setup
    return _ID_UNSAFE.sub("-", f"{stem}-{section}").strip("-") or "cell"


def cell_ids(cells: list[dict]) -> list[str]:
    """A stable, unique, nbformat-valid id for each cell, in order.

    A cell that embeds a snippet section is named after it (its ``key``);
    any other cell after a short hash of its type and text. Neither depends
    on the cell's position, so inserting a cell leaves the others' ids alone.
    A repeat of the same key gets ``-2``, ``-3``, ... in order.
    """
    ids: list[str] = []
    seen: set[str] = set()
    for cell in cells:
        base = cell.get("key")
        if not base:
            digest = hashlib.sha1(
                f"{cell['cell_type']}\0{_source(cell)}".encode()
            ).hexdigest()[:10]
            base = f"{'code' if cell['cell_type'] == 'code' else 'md'}-{digest}"
        if len(base) > 64:  # keep it readable and unique within the limit
            digest = hashlib.sha1(base.encode()).hexdigest()[:8]
            base = f"{base[:55]}-{digest}"
        cid, n = base, 1
        while cid in seen:
            n += 1
            suffix = f"-{n}"
            cid = base[: 64 - len(suffix)] + suffix
        seen.add(cid)
        ids.append(cid)
    return ids


def cells_from_recipe(recipe: Path, snippets_dir: Path | None = None) -> list[dict]:
    """The notebook's cells, as ``{"cell_type": ..., "source": ...}`` dicts.

    A cell embedding a snippet section also has ``"key"`` (see section_key),
    which names its id.
    """
    notebook_name = recipe.with_suffix(".ipynb").name
    badge = (
        f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
        f"({colab_url(notebook_name, repo_slug())})"
    )
    cells: list[dict] = [{"cell_type": "markdown", "source": badge}]
    prose: list[str] = []

    def flush_prose():
        text = "\n".join(prose).strip("\n")
        if text:
            cells.append({"cell_type": "markdown", "source": text})
        prose.clear()

    lines = recipe.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if match := _INCLUDE_RE.match(line.strip()):
            flush_prose()
            snippet, section = match.groups()
            code = snippet_section(snippet, section, snippets_dir)
            key = section_key(snippet, section)
            cells.append({"cell_type": "code", "source": code, "key": key})
        elif line.strip() in _FENCES:
            flush_prose()
            end = lines.index("```", i + 1)
            source = "\n".join(lines[i + 1 : end])
            cells.append({"cell_type": "code", "source": source})
            if tags := _FENCES[line.strip()]:
                cells[-1]["tags"] = list(tags)
            i = end
        elif line.strip().startswith("```python"):
            raise NotebookError(
                f"{recipe}:{i + 1}: unknown fence {line.strip()!r}; "
                f"use one of {sorted(_FENCES)}"
            )
        else:
            prose.append(line)
        i += 1
    flush_prose()
    return cells


def _source(cell: dict) -> str:
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else src


def cell_tags(cell: dict) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def render_notebook(cells: list[dict], previous: dict | None = None) -> dict:
    """A notebook document; a code cell whose source is unchanged keeps its
    outputs, execution count and metadata from ``previous`` (its tags always
    come from the recipe)."""
    old_cells: dict[str, list[dict]] = {}  # source -> its cells, in order
    if previous:
        for cell in previous.get("cells", []):
            if cell["cell_type"] == "code":
                old_cells.setdefault(_source(cell), []).append(cell)
    nb_cells = []
    for cell, cell_id in zip(cells, cell_ids(cells), strict=True):
        entry = {
            "cell_type": cell["cell_type"],
            "id": cell_id,
            "metadata": {},
            "source": cell["source"].splitlines(keepends=True),  # as nbformat
        }
        if cell["cell_type"] == "code":
            same = old_cells.get(cell["source"]) or [{}]
            old = same.pop(0) if len(same) > 1 else same[0]  # repeats in order
            entry["metadata"] = {
                k: v for k, v in old.get("metadata", {}).items() if k != "tags"
            }
            entry["execution_count"] = old.get("execution_count")
            entry["outputs"] = old.get("outputs", [])
        if cell.get("tags"):
            entry["metadata"]["tags"] = list(cell["tags"])
        nb_cells.append(entry)
    metadata = (previous or {}).get("metadata", {})
    # an executed notebook's language_info (nbclient's, fuller) is kept
    metadata.setdefault("language_info", {"name": "python"})
    metadata.update(
        {
            "kernelspec": {
                "display_name": "Python 3",
                "language": "python",
                "name": "python3",
            },
            # Colab opens it on a GPU runtime.
            "accelerator": "GPU",
            "colab": {"provenance": [], "gpuType": "T4"},
        }
    )
    return {"cells": nb_cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}


def recipes() -> list[Path]:
    return sorted(RECIPES_DIR.glob("*.md"))


def notebook_path(recipe: Path) -> Path:
    return OUTPUT_DIR / recipe.with_suffix(".ipynb").name


def build(recipe: Path) -> Path:
    out = notebook_path(recipe)
    previous = json.loads(out.read_text(encoding="utf-8")) if out.exists() else None
    doc = render_notebook(cells_from_recipe(recipe), previous)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_notebook(out, doc)
    return out


def drift(recipe: Path) -> list[str]:
    """Differences between the stored notebook's cells and what the recipe gives."""
    out = notebook_path(recipe)
    if not out.exists():
        return [f"{out} is missing: run `python -m triton_course.notebooks build`"]
    stored = json.loads(out.read_text(encoding="utf-8"))["cells"]
    wanted = cells_from_recipe(recipe)
    problems = []
    if len(stored) != len(wanted):
        problems.append(f"{out.name}: {len(stored)} cells, recipe gives {len(wanted)}")
    wanted_ids = cell_ids(wanted)
    for i, (have, want) in enumerate(zip(stored, wanted, strict=False)):
        if have["cell_type"] != want["cell_type"] or _source(have) != want["source"]:
            problems.append(f"{out.name}: cell {i} differs from its recipe/snippet")
        elif cell_tags(have) != want.get("tags", []):
            # the runner reads the tags: a timing cell must be tagged as one
            problems.append(
                f"{out.name}: cell {i} has tags {cell_tags(have)}, "
                f"the recipe gives {want.get('tags', [])}"
            )
        elif have.get("id") != wanted_ids[i]:
            # the site's run links open Colab at #scrollTo=<id>
            problems.append(
                f"{out.name}: cell {i} has id {have.get('id')!r}, "
                f"the builder gives {wanted_ids[i]!r}"
            )
    return problems


def coalesce_streams(doc: dict) -> dict:
    """Merge consecutive stdout/stderr outputs, as pytest-notebook compares them."""
    for cell in doc["cells"]:
        merged: list[dict] = []
        for output in cell.get("outputs", []):
            last = merged[-1] if merged else None
            if (
                output.get("output_type") == "stream"
                and last is not None
                and last.get("output_type") == "stream"
                and last.get("name") == output.get("name")
            ):
                last["text"] = _source({"source": last["text"]}) + _source(
                    {"source": output["text"]}
                )
            else:
                merged.append(output)
        if "outputs" in cell:
            cell["outputs"] = merged
    return doc


def execute(path: Path, timeout: int = 600) -> dict:
    """Run a notebook top to bottom in its folder and return it with outputs.

    Raises nbclient's CellExecutionError if a cell fails; nothing is written.
    """
    import nbclient  # imported here: building and checking need no Jupyter
    import nbformat

    doc = nbformat.read(str(path), as_version=4)
    client = nbclient.NotebookClient(
        doc,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    return coalesce_streams(json.loads(nbformat.writes(doc)))


def write_notebook(path: Path, doc: dict) -> None:
    """Write atomically, so a failed run never leaves half a notebook."""
    tmp = path.with_name(f".{path.name}.tmp")
    # nbformat's own layout (sorted keys, one-space indent), as the runner
    # stores an executed notebook: a rebuild then changes only what changed
    text = json.dumps(doc, indent=1, ensure_ascii=False, sort_keys=True)
    tmp.write_text(text + "\n", encoding="utf-8")
    tmp.replace(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["build", "check", "execute"])
    args = parser.parse_args(argv)
    if args.command == "execute":
        for recipe in recipes():
            path = notebook_path(recipe)
            write_notebook(path, execute(path))
            print(f"executed {path.relative_to(REPO_ROOT)}")
        return 0
    if args.command == "build":
        for recipe in recipes():
            print(f"wrote {build(recipe).relative_to(REPO_ROOT)}")
        return 0
    problems = [p for recipe in recipes() for p in drift(recipe)]
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
