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
_SUPPORT_RE = re.compile(r"^\[\[support\s+([\w.\s-]+)\]\]\s*$")
_SUPPORT_TEST = (
    "https://github.com/triton-course/triton-course/blob/main/tests/test_support.py"
)
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


def _kb(n: int) -> str:
    return f"{n / 1024:.0f} KB"


def _support_cell(results: list[dict], limit: int) -> str:
    """One kernel (all the configs it can launch with) on one architecture."""
    if not results:  # the launcher raises a clear error there instead
        return "refused by the launcher (below)"
    fits = [r for r in results if r["status"] == "runs"]
    compiled = [r for r in results if r["status"] != "does not compile"]
    if not compiled:
        return "does not compile"
    if not fits:
        need = min(r["shared"] for r in compiled)
        return f"exceeds shared memory ({_kb(need)} > {_kb(limit)})"
    words = ["runs" if len(fits) == len(results) else
             f"{len(fits)} of {len(results)} configs fit"]  # fmt: skip
    dots = {r["dot"] for r in fits if "dot" in r}
    words += sorted("tensor cores: " + d if d != "FMA" else "FMA, no tensor cores"
                    for d in dots)  # fmt: skip
    if any(r.get("tma") for r in fits):
        words.append("TMA")
    return " · ".join(words)


def render_support(snippets: list[str], root: Path) -> str:
    path = root / "data" / "support.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(
            f"{path}: {exc}; run python -m triton_course.support table"
        ) from None
    archs = list(data["shared_limit"])
    groups: dict[tuple, list[dict]] = {}
    for row in data["rows"]:
        if row["snippet"] in snippets:
            key = (row["snippet"], row["kernel"], row["group"])
            groups.setdefault(key, []).append(row)
    missing = set(snippets) - {k[0] for k in groups}
    if missing:
        raise ValueError(f"[[support]]: no launches recorded for {sorted(missing)}")
    head = ["kernel", *(f"{a} ({data['gpus'][a]})" for a in archs)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (_, kernel, group), rows in groups.items():
        label = f"`{kernel}`" + (f", {group}" if group else "")
        cells = []
        for a in archs:
            here = [r for r in rows if _launched_on(r, a)]
            cell = _support_cell([r["archs"][a] for r in here], data["shared_limit"][a])
            if len(here) == 1 and here[0]["launched_on"] is not None:
                # a launcher that sizes its tiles to the GPU: what it picks there
                cell += f" · picks {here[0]['config']}"
            cells.append(cell)
        lines.append("| " + " | ".join([label, *cells]) + " |")
    failures = sorted(
        {r["archs"][a]["detail"] for rows in groups.values() for r in rows
         for a in archs if _launched_on(r, a)
         and r["archs"][a]["status"] == "does not compile"}
    )  # fmt: skip
    lines += [
        "",
        f"*Compiled with triton {data['triton']} for each target on a machine "
        f"without a GPU (`{data['written_by']}`), at every config the launcher "
        "or its autotuner can launch with on that GPU (a launcher that sizes "
        "its tiles to the GPU is asked as each one), and each config's shared memory "
        "compared with the target's per-block limit ("
        + ", ".join(f"{a}: {_kb(b)}" for a, b in data["shared_limit"].items())
        + '). "k of n configs fit": the autotuner skips the others on that '
        "GPU. FMA: `tl.dot` on the CUDA cores. TMA: the Hopper copy engine; "
        "elsewhere tensor descriptors become ordinary loads. "
        f"[The test]({_SUPPORT_TEST}) recompiles it in every CI run.*",
    ]
    if failures:
        lines += ["", "*Compile errors: " + "; ".join(f"`{f}`" for f in failures) + "*"]
    refused: dict[tuple, list[str]] = {}  # (dtype, message) -> archs
    for r in data.get("refusals", []):
        if r["snippet"] in snippets:
            refused.setdefault((r["dtype"], r["message"]), []).append(r["arch"])
    for (dtype, message), where in refused.items():
        lines += ["", f"*The launcher refuses {dtype} on {', '.join(where)}: "
                      f"“{message}”*"]  # fmt: skip
    return "\n".join(lines)


def _launched_on(row: dict, arch: str) -> bool:
    """Whether the launcher launches this config on that GPU (None: on
    every GPU, the autotuner choosing among the configs that fit)."""
    return row.get("launched_on") is None or arch in row["launched_on"]


def on_page_markdown(markdown, page, config, files):
    root = Path(config["config_file_path"]).parent

    def one(line: str) -> str:
        if m := _SUPPORT_RE.match(line.strip()):
            return render_support([f"{s}.py" for s in m.group(1).split()], root)
        return render(root) if _RE.match(line.strip()) else line

    return rewrite_directives(markdown, page, one)  # errors name page and line
