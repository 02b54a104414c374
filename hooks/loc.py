"""MkDocs hook: lines of code of a snippet section, counted at build time.

``[[loc snippets/FILE.py:SECTION]]``, written inline in a page's Markdown
(outside code blocks), becomes the number of lines of code between the
section's ``# --8<-- [start:SECTION]`` and ``[end:SECTION]`` markers: lines
that are neither blank nor comments (``#`` in Python, ``//`` in CUDA source
held in a string). A page comparing frameworks therefore never types a
count that could drift from the code it shows. A missing file or section
fails the build with the page's name.

Pure Python: the docs build needs neither torch nor triton.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:  # the hooks must work without an install
    sys.path.insert(0, str(REPO_ROOT))

from hooks._directives import rewrite_directives  # noqa: E402

_LOC_RE = re.compile(r"\[\[loc\s+([\w./-]+\.py):([\w-]+)\]\]")


def section_lines(path: Path, section: str) -> list[str]:
    """The lines between a section's start and end markers (markers excluded)."""
    if not path.is_file():
        raise ValueError(f"{path} not found")
    lines = path.read_text(encoding="utf-8").splitlines()
    stripped = [line.strip() for line in lines]
    try:
        first = stripped.index(f"# --8<-- [start:{section}]") + 1
        last = stripped.index(f"# --8<-- [end:{section}]", first)
    except ValueError:
        raise ValueError(f"{path}: section {section!r} not found") from None
    return lines[first:last]


def count_loc(path: Path, section: str) -> int:
    """Lines of code in a section: not blank, not a comment, not a marker."""
    count = 0
    for line in section_lines(path, section):
        text = line.strip()
        if text and not text.startswith(("#", "//")):
            count += 1
    return count


def on_page_markdown(markdown, page, config, files):
    root = Path(config["config_file_path"]).parent.resolve()

    def render(line: str) -> str:
        return _LOC_RE.sub(lambda m: str(count_loc(root / m[1], m[2])), line)

    return rewrite_directives(markdown, page, render)
