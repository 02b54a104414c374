"""MkDocs hook: ``[[codegen]]`` (alone on a line) renders the per-GPU table of
what Triton emits, from ``data/codegen.json``: written by
``python -m triton_course.codegen table`` and checked against a fresh compile
by ``tests/test_compiler_claims.py``. Nothing in it is typed."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:  # the hooks must work without an install
    sys.path.insert(0, str(REPO_ROOT))

from hooks._directives import rewrite_directives  # noqa: E402

_RE = re.compile(r"^\[\[codegen\]\]\s*$")
_TESTS = "https://github.com/triton-course/triton-course/blob/main/tests/test_compiler_claims.py"


def render(root: Path) -> str:
    path = root / "data" / "codegen.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(
            f"{path}: {exc}; run python -m triton_course.codegen table"
        ) from None
    lines = [
        "| target | GPUs | a float16 `tl.dot` becomes "
        "| a tensor descriptor load becomes |",
        "|---|---|---|---|",
    ]
    for row in data["rows"]:
        cells = (row["arch"], row["gpus"], row["dot_fp16"], row["descriptor"])
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        f"*Compiled with triton {data['triton']} for each target on a machine "
        f"without a GPU (`{data['written_by']}`); `tl.exp` becomes {data['exp']} "
        f"on every target. [The tests]({_TESTS}) recompile it in every CI run.*",
    ]
    return "\n".join(lines)


def on_page_markdown(markdown, page, config, files):
    root = Path(config["config_file_path"]).parent

    def one(line: str) -> str:
        return render(root) if _RE.match(line.strip()) else line

    return rewrite_directives(markdown, page, one)  # errors name page and line
