"""MkDocs hook: what the GPU runner checked about its own numbers (#33).

Two directives, each alone on a line, outside code blocks:

``[[dram_bytes]]``
    Per GPU whose data file holds the byte-model check (``"dram_bytes"``,
    format in ``triton_course/dram_bytes.py``): per bandwidth benchmark, at
    the one size profiled, the model's bytes beside the DRAM bytes Nsight
    Compute counted for Triton's call, their ratio and the verdict; the
    size profiled, and where it was scaled up from the largest benchmarked
    size (to many L2s, so that writes still dirty in L2 at the kernel's end
    cannot sway the verdict), by how much; the peers' bytes in a fold below
    (a peer that launched no kernel, a copy-engine transfer, said as such);
    the benchmarks skipped, with why. A GPU without the check says "not yet
    measured on a GPU".

``[[run_compare]]``
    Per GPU with a second whole run committed at
    ``data/reproducibility/<gpu-slug>.json`` (``extra.reproducibility_dir``
    in mkdocs.yml changes the directory): both runs' cards and commits, and
    what ``runner compare PUBLISHED SECOND`` finds, from its own functions
    (``triton_course/runner/compare.py``): how many Triton/peer ratios are
    the same, faster, slower or undecided, and the share within ±5 % for
    rows of at least 50 µs and for shorter ones. Without a second run, a
    sentence says none is committed.

Every number comes from the data files; the build needs neither torch,
triton nor a GPU.
"""

from __future__ import annotations

import html
import json
import re
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:  # the hooks must work without an install
    sys.path.insert(0, str(REPO_ROOT))

from hooks._directives import rewrite_directives  # noqa: E402
from triton_course import dram_bytes as DB  # noqa: E402
from triton_course import timings as T  # noqa: E402
from triton_course.runner import compare as C  # noqa: E402

_DRAM_RE = re.compile(r"^\[\[dram_bytes\]\]\s*$")
_COMPARE_RE = re.compile(r"^\[\[run_compare\]\]\s*$")
REPRODUCIBILITY_DIR = "data/reproducibility"
KINDS = ("same", "faster", "slower", "undecided")  # runner compare's classes
_state: dict = {}


def on_config(config):
    root = Path(config["config_file_path"]).parent.resolve()
    try:
        _state["gpus"] = T.load_for_site(config)
    except T.TimingDataError as exc:
        raise PluginError(f"timing data: {exc}") from None
    extra = config.get("extra", {})
    repro = root / extra.get("reproducibility_dir", REPRODUCIBILITY_DIR)
    seconds = {}
    for g in _state["gpus"]:
        path = repro / f"{g.gpu['slug']}.json"
        if path.is_file():
            try:
                seconds[g.gpu["slug"]] = T.load_file(path)
            except T.TimingDataError as exc:
                raise PluginError(f"second run: {exc}") from None
    _state.update(root=root, repro=repro, seconds=seconds)
    return config


# ------------------------------------------------------------- formatting ---
def _mb(value: float) -> str:
    return f"{value / 1e6:,.1f}".replace(",", " ")


def _size(size: dict) -> str:
    def one(v):
        if v >= 1024 and v & (v - 1) == 0:
            return f"2<sup>{v.bit_length() - 1}</sup>"
        return f"{v:,}".replace(",", " ")

    return ", ".join(f"{html.escape(k)} {one(v)}" for k, v in size.items())


def _table(head: list[str], rows: list[list[str]]) -> str:
    """Raw HTML (cells already escaped): no `|` in a kernel name can break it."""
    th = "".join(f"<th>{h}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _tabs(blocks: list[tuple[str, str]]) -> str:
    out = []
    for label, body in blocks:
        indented = "\n".join(("    " + ln) if ln else "" for ln in body.split("\n"))
        marker = "===!" if not out else "==="  # a new tab set per directive
        out.append(f'{marker} "{label}"\n\n{indented}\n')
    return "\n".join(out)


def _ratio(contender: dict) -> str:
    if not contender["kernels"]:
        return "—"
    ratio = DB.model_over_measured(contender)
    return f"{ratio:.2f}" if ratio is not None else "nothing counted"


def _bytes(contender: dict) -> str:
    """Read + written, or why there is nothing to count."""
    if not contender["kernels"]:
        return html.escape(DB.NO_KERNEL)
    return f"{_mb(contender['dram_read_bytes'])} + {_mb(contender['dram_write_bytes'])}"


def _profiled_size(b: dict) -> str:
    """The size profiled; where scaled, from which benchmarked size."""
    text = _size(b["size"])
    if b["scale_factor"] > 1:
        param = b["scaled_param"]
        text += (
            f" ({html.escape(param)} ×{b['scale_factor']} of the largest "
            f"benchmarked, {_size({param: b['benchmarked_size'][param]})})"
        )
    if b["capped"]:
        text += " (capped by the GPU's memory)"
    return text


# -------------------------------------------------------------- dram bytes ---
def _dram_record(g) -> dict | None:
    """The file's validated ``dram_bytes`` (``timings.validate`` checks it)."""
    if hasattr(g, "dram_bytes"):
        return g.dram_bytes
    # GpuTimings does not carry the key yet: the same file, already validated
    return json.loads(Path(g.path).read_text(encoding="utf-8")).get("dram_bytes")


def render_dram_bytes(gpus: list, root: Path) -> str:
    if not gpus:
        return (
            "*Not yet measured on a GPU: the byte-model check appears here once "
            "the GPU runner has run on one.*\n"
        )
    blocks = []
    for g in gpus:
        record = _dram_record(g)
        if not record:
            blocks.append((g.label, "*Not yet measured on a GPU.*"))
            continue
        blocks.append((g.label, _dram_block(record, g, root)))
    return _tabs(blocks)


def _dram_block(record: dict, g, root: Path) -> str:
    head = [
        "Benchmark",
        "Size profiled",
        "dtype",
        "Model MB",
        "DRAM MB read + written",
        "Model ÷ measured",
        "Verdict",
    ]
    rows, peers = [], []
    for name, b in record["benchmarks"].items():
        tri = b["contenders"]["Triton"]
        label = f"<code>{html.escape(name)}</code>"
        if T.is_stale(b, root):
            label += " (kernel changed since)"
        rows.append(
            [
                label,
                _profiled_size(b),
                html.escape(b["dtype"]),
                _mb(b["working_set_bytes"]),
                _bytes(tri),
                _ratio(tri),
                html.escape(DB.VERDICTS[b["verdict"]]),
            ]
        )
        for who, c in b["contenders"].items():
            if who == "Triton":
                continue
            peers.append(
                [
                    label,
                    html.escape(who),
                    str(len(c["kernels"])),
                    _bytes(c),
                    _ratio(c),
                ]
            )
        for who, why in b.get("absent", {}).items():
            peers.append([label, html.escape(who), "", html.escape(why), ""])
    prov = record["provenance"]
    lines = [_table(head, rows), ""]
    when = f", {prov['date'][:10]}" if "date" in prov else ""
    rule = html.escape(DB.residue_rule(record["min_l2_multiple"]), quote=False)
    lines.append(
        f"*{html.escape(g.gpu['name'])}, Nsight Compute "
        f"{html.escape(record['ncu_version'])}, commit "
        f"`{str(prov['commit'])[:10]}`{when}. Triton's call, once, at the "
        "benchmark's first dtype, every cache flushed before each kernel. "
        f"{rule} (within "
        f"{100 * DB.MAX_MEMORY_SHARE:.0f} % of the GPU's memory). L2 "
        f"{_mb(record['l2_bytes'])} MB: where the working set fits in it, the "
        "counters see the cache and nothing is judged.*"
    )
    for name, b in record["benchmarks"].items():
        if b["capped"]:
            note = DB.capped_note(b, record["l2_bytes"])
            lines += ["", f"*`{name}`: {html.escape(note, quote=False)}.*"]
    for name, why in record["skipped"].items():
        lines += ["", f"*`{name}` is not profiled: {html.escape(why)}.*"]
    if peers:
        lines += ["", '??? note "The peers\' DRAM bytes (shown, not judged)"', ""]
        table = _table(
            [
                "Benchmark",
                "Peer",
                "Kernels",
                "DRAM MB read + written",
                "Model ÷ measured",
            ],
            peers,
        )
        lines.append("    " + table)
    lines += ["", f"*The command:* `{record['command']}`"]
    return "\n".join(lines)


# ------------------------------------------------------------- run compare ---
def _runs(t) -> dict:
    provs = [b["provenance"] for b in t.benchmarks.values()]
    return {
        "card": sorted({str(p.get("gpu_uuid", "not recorded")) for p in provs}),
        "commit": sorted({str(p["commit"])[:10] for p in provs}),
        "date": sorted({p["date"][:10] for p in provs}),
    }


def _share(moves: list) -> str:
    if not moves:
        return "no ratio"
    inside = sum(abs(m.change) <= C.AGREE for m in moves)
    return f"{inside} of {len(moves)} ({100 * inside / len(moves):.1f} %)"


def render_run_compare(gpus: list, seconds: dict, repro: Path, root: Path) -> str:
    if not gpus:
        return "*Not yet measured on a GPU: no run to compare.*\n"
    blocks = []
    for g in gpus:
        second = seconds.get(g.gpu["slug"])
        rel = _rel(repro / f"{g.gpu['slug']}.json", root)
        if second is None:
            blocks.append(
                (
                    g.label,
                    f"*No second run of the {html.escape(g.gpu['name'])} is "
                    f"committed (`{rel}`): the two-machine comparison appears "
                    "here once one is.*",
                )
            )
            continue
        blocks.append((g.label, _compare_block(g, second, rel, root)))
    return _tabs(blocks)


def _rel(path: Path, root: Path) -> str:
    try:
        return Path(path).resolve().relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _compare_block(g, second, second_rel: str, root: Path) -> str:
    moves = C.compare(g, second)
    strange = sorted({m.kind for m in moves} - set(KINDS))
    if strange:  # compare.py grew a class this page does not explain
        raise ValueError(f"runner compare returned unknown classes {strange}")
    a, b = _runs(g), _runs(second)
    rows = [
        [what, ", ".join(f"<code>{html.escape(v)}</code>" for v in a[key]),
         ", ".join(f"<code>{html.escape(v)}</code>" for v in b[key])]
        for what, key in (("Card", "card"), ("Commit", "commit"), ("Date", "date"))
    ]  # fmt: skip
    lines = [_table(["", "Published run", "Second run"], rows), ""]
    if not moves:
        lines.append("*The two runs have no Triton/peer ratio in common.*")
        return "\n".join(lines)
    counts = {k: sum(m.kind == k for m in moves) for k in KINDS}
    long = [m for m in moves if m.triton_ms >= C.LONG_MS]
    short = [m for m in moves if m.triton_ms < C.LONG_MS]
    agree, limit = f"{100 * C.AGREE:.0f} %", f"{1000 * C.LONG_MS:.0f} µs"
    lines.append(
        f"{len(moves)} Triton/peer ratios are in both runs: "
        + ", ".join(f"{counts[k]} {k}" for k in KINDS)
        + " (the second run against the published one). Within ±"
        f"{agree} of each other: {_share(long)} of the ratios whose Triton "
        f"time is at least {limit}, {_share(short)} of the shorter ones."
    )
    published = _rel(g.path, root)
    lines += [
        "",
        f"*From `python -m triton_course.runner compare {published} {second_rel}`.*",
    ]
    return "\n".join(lines)


# -------------------------------------------------------------------- hook ---
def on_page_markdown(markdown, page, config, files):
    gpus, root = _state["gpus"], _state["root"]

    def render(line: str) -> str:
        if _DRAM_RE.match(line.strip()):
            return render_dram_bytes(gpus, root)
        if _COMPARE_RE.match(line.strip()):
            return render_run_compare(gpus, _state["seconds"], _state["repro"], root)
        return line

    return rewrite_directives(markdown, page, render)
