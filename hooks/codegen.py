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
    dtypes = data["dtypes"]
    head = ["target", "GPUs", *(f"`tl.dot`, {label}" for label in dtypes.values())]
    lines = [
        "| " + " | ".join([*head, "tensor-descriptor load"]) + " |",
        "|" + "---|" * (len(head) + 1),
    ]
    for row in data["rows"]:
        cells = [row["arch"], row["gpus"], *(row["dot"][dt] for dt in dtypes)]
        lines.append("| " + " | ".join([*cells, row["descriptor"]]) + " |")
    lines += [
        "",
        f"*Compiled with triton {data['triton']} for each target on a machine "
        f"without a GPU (`{data['written_by']}`): the instruction a 64×64×32 "
        "`tl.dot` of two tiles of that type becomes, with the operand type the "
        "tensor cores see (fp8 e5m2 is widened to fp16 before sm_89). FMA: "
        "fused multiply-adds on the CUDA cores, no tensor-core instruction at "
        "all; refused: a compile error naming the supported fp8 types. "
        "`ld.global`: ordinary loads; "
        f"TMA: the Hopper copy engine (`cp.async.bulk.tensor`). `tl.exp` becomes "
        f"{data['exp']} on every target. [The tests]({_TESTS}) recompile it in "
        "every CI run.*",
    ]
    return "\n".join(lines)


def on_page_markdown(markdown, page, config, files):
    root = Path(config["config_file_path"]).parent

    def one(line: str) -> str:
        return render(root) if _RE.match(line.strip()) else line

    return rewrite_directives(markdown, page, one)  # errors name page and line
