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


_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")

# The matrix's marks, explained in a legend under every support table (a
# touch reader sees no tooltip, so nothing is only in a title attribute).
SUPPORT_LEGEND = (
    ("✓", "every config compiled for this kernel (the caption says which) fits"),
    ("k/n", "k of n configs fit; the autotuner skips the others on that GPU"),
    (
        "✗ N KB",
        "does not fit: the smallest config needs N KB of shared memory, "
        "more than the column's per-block limit",
    ),  # fmt: skip
    ("✗ compile", "does not compile (the errors are listed below)"),
    ("refused", "the launcher refuses this GPU with a clear error"),
    ("mma, wgmma", "the tensor-core instruction `tl.dot` becomes"),
    ("FMA", "`tl.dot` on the CUDA cores, no tensor cores"),
    (
        "TMA",
        "tensor descriptors use the Hopper copy engine "
        "(elsewhere they become ordinary loads)",
    ),  # fmt: skip
    ("¹ ² …", "the tile a launcher that sizes its tiles to the GPU picks there"),
)


def _support_cell(results: list[dict], limit: int) -> tuple[str, str]:
    """One kernel (all the configs it can launch with) on one architecture:
    (short mark, CSS class) for the matrix; SUPPORT_LEGEND says what they mean."""
    if not results:  # the launcher raises a clear error there instead
        return "refused", "no"
    fits = [r for r in results if r["status"] == "runs"]
    compiled = [r for r in results if r["status"] != "does not compile"]
    if not compiled:
        return "✗ compile", "no"
    if not fits:
        need = min(r["shared"] for r in compiled)
        return f"✗ {_kb(need)}", "no"
    words = ["✓" if len(fits) == len(results) else f"{len(fits)}/{len(results)}"]
    words += sorted({r["dot"] for r in fits if "dot" in r})
    if any(r.get("tma") for r in fits):
        words.append("TMA")
    return " ".join(words), "yes" if len(fits) == len(results) else "some"


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _md_code(text: str) -> str:
    """`name` in a legend entry as HTML (the table is raw HTML, not Markdown)."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", _esc(text))


def render_support(snippets: list[str], root: Path) -> str:
    """A compact matrix: one row per kernel (and launch group), one column per
    GPU generation, a short mark per cell and a legend under it."""
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
    head = "".join(
        f'<th scope="col">{a}<br><small>{_esc(data["gpus"][a])}<br>'
        f"{_kb(data['shared_limit'][a])}</small></th>"
        for a in archs
    )
    picks: dict[str, int] = {}  # config -> footnote number, in order of first use
    body = []
    for (_, kernel, group), rows in groups.items():
        label = f"<code>{_esc(kernel)}</code>"
        if group:
            label += f"<br><small>{_esc(group)}</small>"
        cells = []
        for a in archs:
            here = [r for r in rows if _launched_on(r, a)]
            mark, cls = _support_cell(
                [r["archs"][a] for r in here], data["shared_limit"][a]
            )
            if len(here) == 1 and here[0]["launched_on"] is not None:
                number = picks.setdefault(here[0]["config"], len(picks) + 1)
                mark += str(number).translate(_SUPERSCRIPT)
            cells.append(f'<td class="{cls}">{_esc(mark)}</td>')
        body.append(f'<tr><th scope="row">{label}</th>{"".join(cells)}</tr>')
    shown = " ".join(re.findall(r'<td class="\w+">([^<]*)</td>', "".join(body)))
    used = {  # a legend of the marks this table uses, not of every mark
        "✓": "✓" in shown,
        "k/n": re.search(r"\d/\d", shown) is not None,
        "✗ N KB": " KB" in shown,
        "✗ compile": "✗ compile" in shown,
        "refused": "refused" in shown,
        "mma, wgmma": "mma" in shown,
        "FMA": "FMA" in shown,
        "TMA": "TMA" in shown,
        "¹ ² …": bool(picks),
    }
    legend = " · ".join(
        f"<b>{_esc(mark)}</b> {_md_code(text)}"
        for mark, text in SUPPORT_LEGEND
        if used[mark]
    )
    lines = [
        '<div class="course-support" markdown="0"><table class="course-support-table">'
        f'<thead><tr><th scope="col">kernel</th>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
        f'<p class="course-support-legend">{legend}</p></div>',
    ]
    if picks:
        lines += [
            "",
            "*Tiles picked: "
            + "; ".join(
                f"{str(n).translate(_SUPERSCRIPT)} {config}"
                for config, n in picks.items()
            )
            + ".*",
        ]
    failures = sorted(
        {r["archs"][a]["detail"] for rows in groups.values() for r in rows
         for a in archs if _launched_on(r, a)
         and r["archs"][a]["status"] == "does not compile"}
    )  # fmt: skip
    lines += [
        "",
        f"*Compiled with triton {data['triton']} for each target on a machine "
        f"without a GPU (`{data['written_by']}`), at the launches "
        "`triton_course/support.py` records: each launcher called on one small "
        "input, every config of an autotuner, and a launcher that sizes its "
        "tiles to the GPU asked as each one (other sizes and dtypes may launch "
        "other configs); and each config's shared "
        "memory compared with the target's per-block limit (under each column). "
        f"[A test]({_SUPPORT_TEST}) fails in every CI run if a launch or a "
        "snippet changed since, and recompiles per snippet the launch and "
        "target nearest a shared-memory limit, each target in some snippet's "
        "turn.*",
    ]
    if failures:
        lines += ["", "*Compile errors: " + "; ".join(f"`{f}`" for f in failures) + "*"]
    refused: dict[tuple, list[str]] = {}  # (dtype, message) -> archs
    for r in data.get("refusals", []):
        if r["snippet"] in snippets:
            where = refused.setdefault((r["dtype"], r["message"]), [])
            if r["arch"] not in where:  # a refusal is recorded per launch group
                where.append(r["arch"])
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
