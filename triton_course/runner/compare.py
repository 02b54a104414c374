"""``python -m triton_course.runner compare OLD.json NEW.json``: did it move?

Every Triton/peer ratio present in both files is classified, after NVBench's
robust compare, from both runs' spreads (``timings.paired_ratio``: the
interquartile interval of the round-by-round ratios, at least ±3 % wide):

- ``same``: the two intervals overlap;
- ``faster`` / ``slower``: they do not, and Triton's ratio went up / down;
- ``undecided``: either interval is wider than ±``MAX_NOISE``: too noisy to say.

It also prints the share of ratios that agree within ±5 %, separately for
rows whose Triton time is at least 50 µs and for shorter ones, and the
largest moves. Pure Python: it runs anywhere the data files are. With
``--pages DOCS`` (and mkdocs installed) it also judges every verdict, target
and claim of the pages on both files and lists each flip.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from triton_course import timings as T

MAX_NOISE = 0.10  # a ratio interval wider than ±10 % decides nothing
AGREE = 0.05  # the reproducibility target: ratios within ±5 %
LONG_MS = 0.050  # rows at least this long are judged on GPU time alone


@dataclass(frozen=True)
class Move:
    bench: str
    row: str  # "M=4096 N=4096 K=4096 float16"
    peer: str
    old: float
    new: float
    kind: str  # same / faster / slower / undecided
    triton_ms: float  # the new run's Triton time (the old one's if absent)

    @property
    def change(self) -> float:
        return self.new / self.old - 1.0


def _row_key(row: dict) -> tuple:
    return (tuple(sorted(row["size"].items())), row["dtype"])


def _row_text(row: dict) -> str:
    sizes = " ".join(f"{k}={v}" for k, v in row["size"].items())
    return f"{sizes} {row['dtype']}"


def classify(old: T.Spread, new: T.Spread) -> str:
    if max(old.rel_half_width, new.rel_half_width) > MAX_NOISE:
        return "undecided"
    if old.high < new.low:
        return "faster"
    if new.high < old.low:
        return "slower"
    return "same"


def compare(old: T.GpuTimings, new: T.GpuTimings) -> list[Move]:
    moves = []
    for name, new_bench in new.benchmarks.items():
        old_bench = old.benchmarks.get(name)
        if old_bench is None:
            continue
        old_rows = {_row_key(r): r for r in old_bench["rows"]}
        for row in new_bench["rows"]:
            old_row = old_rows.get(_row_key(row))
            if old_row is None:
                continue
            for peer in new_bench["peers"]:
                if peer == "Triton":
                    continue
                a = T.paired_ratio(old_row, peer)
                b = T.paired_ratio(row, peer)
                if a is None or b is None:
                    continue
                tri = row["results"]["Triton"]["median_ms"]
                moves.append(
                    Move(
                        name,
                        _row_text(row),
                        peer,
                        a.median,
                        b.median,
                        classify(a, b),
                        tri,
                    )
                )
    return moves


def _describe(t: T.GpuTimings) -> str:
    provs = [b["provenance"] for b in t.benchmarks.values()]
    commits = sorted({str(p["commit"])[:10] for p in provs})
    dates = sorted({p["date"][:10] for p in provs})
    # the physical card (recorded since issue #25): same card or another
    cards = sorted({str(p.get("gpu_uuid", "not recorded")) for p in provs})
    return (
        f"{t.path} ({t.gpu['name']}; card {', '.join(cards)}; commit "
        f"{', '.join(commits)}; {dates[0]}..{dates[-1]})"
    )


def _share(moves: list[Move]) -> str:
    if not moves:
        return "none"
    inside = sum(abs(m.change) <= AGREE for m in moves)
    return f"{inside}/{len(moves)} ({100 * inside / len(moves):.1f} %)"


def report(old: T.GpuTimings, new: T.GpuTimings, top: int = 15) -> list[str]:
    moves = compare(old, new)
    lines = [f"old: {_describe(old)}", f"new: {_describe(new)}"]
    if old.gpu["slug"] != new.gpu["slug"]:
        lines.append(
            f"note: different GPU models ({old.gpu['name']} vs {new.gpu['name']})"
        )
    if not moves:
        lines.append("no Triton/peer ratio is in both files")
        return lines
    kinds = ["same", "faster", "slower", "undecided"]
    counts = {k: sum(m.kind == k for m in moves) for k in kinds}
    lines.append(
        f"{len(moves)} Triton/peer ratios: "
        + ", ".join(f"{counts[k]} {k}" for k in kinds if counts[k])
    )
    long = [m for m in moves if m.triton_ms >= LONG_MS]
    short = [m for m in moves if m.triton_ms < LONG_MS]
    lines.append(
        f"within ±{100 * AGREE:.0f} %: Triton ≥ {1000 * LONG_MS:.0f} µs: "
        f"{_share(long)}; Triton < {1000 * LONG_MS:.0f} µs: {_share(short)}"
    )
    worst = sorted(moves, key=lambda m: -abs(math.log(m.new / m.old)))[:top]
    lines.append(f"largest moves (top {len(worst)}):")
    for m in worst:
        lines.append(
            f"  {m.bench:<28} {m.row:<34} ÷ {m.peer:<22} "
            f"{m.old:6.3f}× → {m.new:6.3f}× ({100 * m.change:+6.1f} %) {m.kind}"
        )
    return lines


# ------------------------------------------------------------ page verdicts ---
# The pages judge data three ways ([[verdict]], [[measured ... target=]]:
# met / missed / too close to call; [[claim]]: holds / false / too close to
# call). A flip is a row judged one way in one run and the opposite way in
# the other: a page whose sentence would turn from true to false.
OPPOSITES = {
    ("met", "missed"),
    ("missed", "met"),
    ("holds", "false"),
    ("false", "holds"),
}


def _measured_hook():
    """hooks/measured.py, the build's own parser and judge (needs mkdocs);
    loaded once per process."""
    from triton_course.snippet_modules import load_file

    return load_file(Path(__file__).resolve().parents[2] / "hooks" / "measured.py")


def page_judgements(docs: Path, g: T.GpuTimings) -> dict[tuple, str]:
    """{(page, directive, row): judgement} for every row a page judges on
    ``g``'s data; directives about other GPUs are left out."""
    hook = _measured_hook()
    out: dict[tuple, str] = {}
    patterns = [("verdict", hook._VERDICT_RE), ("claim", hook._CLAIM_RE)]
    patterns.append(("measured", hook._MEASURED_RE))
    for page in sorted(Path(docs).rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        for kind, pattern in patterns:
            for match in pattern.finditer(text):
                args = hook._parse_args(match.group(1))
                if kind == "measured" and "target" not in args:
                    continue
                if hook._one_gpu([g], args.pop("gpu", "")) is None:
                    continue
                bench = hook._measured_bench(g, args.pop("bench", None))
                if bench is None:
                    continue
                value, peer = args.pop("value"), args.pop("peer", "Triton")
                if hook.newer_peer(bench, value, peer):
                    continue  # a peer this run predates: judged in one run only
                target = args.pop("target", None)
                claim = args.pop("is", None)
                if kind == "measured":
                    rows = [hook._select_row(bench, args)]
                else:
                    rows = hook._selected_rows(bench, args, bench["title"], kind)
                for row in rows:
                    spread, _ = hook._shown(row, bench, value, peer, g)
                    if kind == "claim":
                        op, x = hook._parse_claim(claim)
                        judged = (
                            "holds" if hook._CLAIM_OPS[op](spread, x)
                            else "false" if hook._CLAIM_FALSE[op](spread, x)
                            else "too close to call"
                        )  # fmt: skip
                    else:
                        judged = T.verdict(spread, float(target))
                    key = (str(page.relative_to(docs)), match.group(0), _row_text(row))
                    out[key] = judged
    return out


def verdict_report(old: T.GpuTimings, new: T.GpuTimings, docs: Path) -> list[str]:
    """Lines on the pages' judgements: how many, and every flip."""
    try:
        _measured_hook()
    except ImportError as exc:
        return [f"page verdicts: not compared ({exc.name} is not installed)"]
    before = page_judgements(docs, old)
    after = page_judgements(docs, new)
    both = sorted(set(before) & set(after))
    flips = [k for k in both if (before[k], after[k]) in OPPOSITES]
    moved = [k for k in both if before[k] != after[k] and k not in flips]
    lines = [
        f"page verdicts: {len(both)} judged rows in both; {len(flips)} flipped "
        f"(met↔missed, holds↔false); {len(moved)} moved to or from too close to call"
    ]
    for k in flips + moved:
        lines.append(f"  {k[0]}: {k[1]} at {k[2]}: {before[k]} → {after[k]}")
    return lines


def main(
    old_path: Path, new_path: Path, top: int = 15, docs: Path | None = None
) -> int:
    old = T.load_file(old_path)
    new = T.load_file(new_path)
    lines = report(old, new, top)
    if docs is not None:
        lines += verdict_report(old, new, docs)
    print("\n".join(lines))
    return 0
