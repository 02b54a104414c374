"""The byte-model check: Nsight Compute's DRAM counters beside each model's bytes.

One ncu process profiles every bandwidth benchmark (importing torch and
compiling cost seconds per process), each at one size: its largest working
set, scaled up to at least ``dram_bytes.MIN_L2_MULTIPLE`` L2s (writes still
dirty in L2 when a kernel ends reach DRAM after it, unseen by its counters;
``dram_bytes.scale_size``). The runner (``measure_dram_bytes``) writes a
plan, then runs

    ncu --profile-from-start off --cache-control all ... --csv --page raw \\
        python -m triton_course.runner.dram --target PLAN --outputs OUT

In that process (``profile_plan``) each benchmark's inputs are built and every
contender (Triton, each peer, torch.compile of the ``compile`` peer) is called
once with the profiler off: it compiles, autotunes and fills its caches
there. Then, per contender, with the profiler on: a marker kernel
(``_dram_marker_kernel``, launched on a grid of (k + 1) blocks for the k-th
contender), one call, a synchronize, profiler off. ``--cache-control all``
flushes the caches before every kernel, so each call starts cold, as in the
timed rounds. The process writes the order it profiled in; the runner splits
ncu's CSV rows at the marker kernels, checks that segment k follows marker k,
and sums each segment's ``dram__bytes_read.sum`` and ``dram__bytes_write.sum``.

``python -m triton_course.runner.dram --probe [--only a,b]`` runs the same on
two benchmarks and prints the table and the head of ncu's raw CSV: a quick
check, on a GPU machine, of the CSV format the parser expects.

What is stored, and the verdict, are defined in ``triton_course/dram_bytes.py``.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import shlex
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

from triton_course import dram_bytes as DB
from triton_course import timings as T
from triton_course.runner import discovery as D
from triton_course.runner.measure import (
    RunnerError,
    _subprocess_env,
    cuda_environment,
    find_ncu,
    git_commit,
)

try:  # the plan and the CSV need no triton; only the profiled process does
    import triton
    import triton.language as tl
except ImportError:  # pragma: no cover - the docs environment
    triton = None

REPO_ROOT = Path(__file__).resolve().parents[2]
DRAM_TIMEOUT_S = 240  # the whole ncu process: imports, compiles, every call
MARKER = "_dram_marker_kernel"
PROBE_ONLY = ("vector_add", "softmax_row")
KERNEL_COLUMN = "Kernel Name"
GRID_COLUMN = "Grid Size"
ID_COLUMN = "ID"
L2_SKIP_REASON = (
    'L2-resident by design ("ceiling": "l2"): its data stays in L2 between '
    "passes, so DRAM's counters do not see what its model counts"
)

if triton is not None:

    @triton.jit(do_not_specialize=["tag"])  # one compile for every tag
    def _dram_marker_kernel(out_ptr, tag):
        tl.store(out_ptr + tl.program_id(0), tag)


# ------------------------------------------------------------------- plan ---
def _rel(path: Path, repo_root: Path) -> str:
    try:
        return Path(path).resolve().relative_to(Path(repo_root).resolve()).as_posix()
    except ValueError:
        return str(path)


def build_plan(
    snippets: list, l2_bytes, memory_bytes, repo_root: Path, names=None
) -> dict:
    """Which benchmarks to profile, at which size, with which contenders.

    Every ``"metric": "bandwidth"`` description, at its first dtype and the
    size with the largest working set (``dram_bytes.pick_size``), its first
    parameter (or the description's ``"dram_check_scale"``) doubled until
    the model's bytes reach ``MIN_L2_MULTIPLE`` L2s, within
    ``MAX_MEMORY_SHARE`` of ``memory_bytes`` (``dram_bytes.scale_size``);
    those with ``"ceiling": "l2"`` are skipped, with why. ``names`` keeps only
    those benchmarks (an unknown name is an error).
    """
    import torch

    if not isinstance(l2_bytes, int) or l2_bytes <= 0:
        raise RunnerError(
            f"the GPU's L2 size is unknown ({l2_bytes!r}): the byte-model check "
            "cannot tell which working sets exceed it"
        )
    if not isinstance(memory_bytes, int) or memory_bytes <= 0:
        raise RunnerError(
            f"the GPU's memory size is unknown ({memory_bytes!r}): the byte-model "
            "check cannot bound the size it scales a benchmark to"
        )
    plan = {
        "l2_bytes": l2_bytes,
        "min_l2_multiple": DB.MIN_L2_MULTIPLE,
        "max_model_bytes": int(DB.MAX_MEMORY_SHARE * memory_bytes),
        "benchmarks": [],
        "skipped": {},
    }
    seen = set()
    for s in snippets:
        for desc in s.benchmarks:
            name = desc["name"]
            seen.add(name)
            if desc["metric"] != "bandwidth" or (names and name not in names):
                continue
            if D.ceiling_of(desc) == "l2":
                plan["skipped"][name] = L2_SKIP_REASON
                continue
            dtype = getattr(torch, desc["dtypes"][0])
            param = desc.get(DB.SCALE_KEY, desc["params"][0])
            try:
                works = [desc["work"](size, dtype) for size in desc["sizes"]]
                pick, _ = DB.pick_size(works, l2_bytes)
                size, factor, capped = DB.scale_size(
                    desc["sizes"][pick],
                    param,
                    lambda size, work=desc["work"], dt=dtype: work(size, dt),
                    l2_bytes,
                    memory_bytes,
                )
                work = desc["work"](size, dtype)
            except ValueError as exc:
                raise RunnerError(f"{name}: {exc}") from exc
            except Exception as exc:
                raise RunnerError(f"{name}: work() failed: {exc!r}") from exc
            contenders = ["Triton", *desc["peers"]]
            if "compile" in desc:
                contenders.append("torch.compile")
            plan["benchmarks"].append(
                {
                    "name": name,
                    "path": str(Path(s.path).resolve()),
                    "snippet": _rel(s.path, repo_root),
                    "snippet_sha256": T.sha256_of(s.path),
                    "benchmarked_size": dict(desc["sizes"][pick]),
                    "scaled_param": param,
                    "scale_factor": factor,
                    "capped": capped,
                    "size": size,
                    "dtype": desc["dtypes"][0],
                    "working_set_bytes": work,
                    "contenders": contenders,
                }
            )
    unknown = sorted(set(names or ()) - seen)
    if unknown:
        raise RunnerError(f"no benchmark named {unknown} (known: {sorted(seen)})")
    return plan


# ---------------------------------------------------- the profiled process ---
def _description(path: str, name: str) -> dict:
    module = D.load_snippet(Path(path))
    descs = getattr(module, "BENCHMARKS", None) or [getattr(module, "BENCHMARK", None)]
    for desc in descs:
        if isinstance(desc, dict) and desc.get("name") == name:
            return D.check_description(desc, path)
    raise RunnerError(f"{path}: no benchmark named {name!r}")


def profile_plan(plan: dict, device: str, start, stop, sync, marker, say=print) -> dict:
    """Call every contender of every planned benchmark once untimed, then once
    between ``start()`` and ``stop()`` behind ``marker(k)``; returns
    ``{"order": [[benchmark, contender], ...], "absent": {benchmark: {peer:
    why}}}``. A peer that raises is absent; Triton raising is an error."""
    import torch

    from triton_course.runner.measure import compile_peer, configure_torch

    configure_torch()
    order: list[list[str]] = []
    absent: dict[str, dict] = {}
    for item in plan["benchmarks"]:
        name = item["name"]
        desc = _description(item["path"], name)
        where = f"{name} {item['size']} {item['dtype']}"
        fns = {"Triton": desc["triton"], **desc["peers"]}
        missing: dict[str, str] = {}
        if "torch.compile" in item["contenders"]:
            try:
                fns["torch.compile"] = compile_peer(desc["peers"][desc["compile"]])
            except Exception as exc:  # noqa: BLE001 - a peer may fail; say why
                missing["torch.compile"] = f"{type(exc).__name__}: {exc}"
        inputs = desc["make_inputs"](
            item["size"], getattr(torch, item["dtype"]), device
        )
        live = {}
        for who in item["contenders"]:
            if who in missing:
                continue
            try:  # untimed and unprofiled: compiles, autotunes, fills caches
                fns[who](*inputs)
                sync()
                live[who] = fns[who]
            except Exception as exc:  # noqa: BLE001
                if who == "Triton":
                    raise RunnerError(f"{where}: Triton failed: {exc!r}") from exc
                missing[who] = (
                    f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:300]}"
                )
        for who, fn in live.items():
            sync()
            start()
            marker(len(order))
            fn(*inputs)
            sync()
            stop()
            order.append([name, who])
        if missing:
            absent[name] = missing
            for who, why in missing.items():
                say(f"{where}: {who} not profiled: {why}")
        del inputs, live
        if device == "cuda":
            torch.cuda.empty_cache()
    return {"order": order, "absent": absent}


def _target_main(plan_path: Path, outputs_path: Path) -> int:
    import torch

    plan = json.loads(Path(plan_path).read_text(encoding="utf-8"))
    total = sum(len(b["contenders"]) for b in plan["benchmarks"])
    tags = torch.zeros(total + 1, dtype=torch.int32, device="cuda")

    def marker(k: int) -> None:
        _dram_marker_kernel[(k + 1,)](tags, k)

    marker(0)  # compiled before anything is profiled
    torch.cuda.synchronize()
    try:
        out = profile_plan(
            plan,
            "cuda",
            torch.cuda.profiler.start,
            torch.cuda.profiler.stop,
            torch.cuda.synchronize,
            marker,
        )
    except Exception:  # noqa: BLE001 - the runner shows this process's output
        traceback.print_exc()
        return 1
    Path(outputs_path).write_text(json.dumps(out), encoding="utf-8")
    return 0


# ------------------------------------------------------------ ncu's output ---
def _number(text: str, where: str) -> float:
    cleaned = text.strip().replace(",", "").replace("\u202f", "").replace(" ", "")
    try:
        return float(cleaned)
    except ValueError:
        raise RunnerError(f"{where}: {text!r} is not a number") from None


def parse_ncu_csv(text: str) -> list[dict]:
    """The kernels of ``ncu --csv --page raw --print-units base`` output, in
    the order they were profiled: ``{"id", "name", "grid", "read", "write"}``.

    Columns are found by their header ("Kernel Name", the two metrics); ncu's
    own lines (``==PROF==``, ``==WARNING==``) and the units row are skipped,
    thousands separators stripped. No header at all: nothing was profiled.
    """
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("==")]
    rows = list(csv.reader(lines))
    start = next((i for i, r in enumerate(rows) if KERNEL_COLUMN in r), None)
    if start is None:
        return []
    head = rows[start]
    lacking = [c for c in DB.METRICS if c not in head]
    if lacking:
        raise RunnerError(f"ncu's CSV lacks the columns {lacking}; its header: {head}")
    col = {c: head.index(c) for c in (KERNEL_COLUMN, *DB.METRICS)}
    kernels = []
    for row in rows[start + 1 :]:
        if row == head:  # a second report's header (one per process)
            continue
        if len(row) != len(head):
            raise RunnerError(
                f"ncu's CSV row has {len(row)} fields, not {len(head)}: {row}"
            )
        name = row[col[KERNEL_COLUMN]].strip()
        if not name:  # the units row
            continue
        where = f"ncu's CSV, kernel {name!r}"
        kernels.append(
            {
                "id": row[head.index(ID_COLUMN)] if ID_COLUMN in head else "",
                "name": name,
                "grid": row[head.index(GRID_COLUMN)] if GRID_COLUMN in head else "",
                "read": _number(row[col[DB.METRICS[0]]], where),
                "write": _number(row[col[DB.METRICS[1]]], where),
            }
        )
    return kernels


def _grid_x(grid: str) -> int | None:
    m = re.match(r"\(\s*(\d+)", grid or "")
    return int(m.group(1)) if m else None


def split_at_markers(kernels: list[dict]) -> list[list[dict]]:
    """The kernels of each profiled call: those after marker k, up to the next.

    A kernel before the first marker, or marker k on a grid other than
    (k + 1) blocks (where ncu reports the grid), means the rows and the
    contenders no longer line up: an error, not a guess.
    """
    segments: list[list[dict]] = []
    for k in kernels:
        if MARKER in k["name"]:
            x = _grid_x(k["grid"])
            if x is not None and x != len(segments) + 1:
                raise RunnerError(
                    f"marker kernel {len(segments)} ran on {x} blocks, not "
                    f"{len(segments) + 1}: ncu's rows are out of order or some "
                    "were not profiled"
                )
            segments.append([])
        elif not segments:
            raise RunnerError(f"kernel {k['name']!r} was profiled before any marker")
        else:
            segments[-1].append(k)
    return segments


# ------------------------------------------------------------------ record ---
def build_record(plan, outputs, segments, ncu_version, command, provenance) -> dict:
    """The data file's ``dram_bytes`` value from the plan, what the profiled
    process did, and the kernels of each call."""
    order = outputs["order"]
    if len(segments) != len(order):
        raise RunnerError(
            f"ncu profiled {len(segments)} call(s) (marker kernels) but the "
            f"process made {len(order)}: {order}"
        )
    calls = {tuple(key): seg for key, seg in zip(order, segments, strict=True)}
    benches = {}
    for item in plan["benchmarks"]:
        name, work = item["name"], item["working_set_bytes"]
        contenders = {}
        for who in item["contenders"]:
            seg = calls.get((name, who))
            if seg is None:
                continue
            contenders[who] = {
                "model_bytes": work,
                "dram_read_bytes": sum(k["read"] for k in seg),
                "dram_write_bytes": sum(k["write"] for k in seg),
                "kernels": [k["name"] for k in seg],
            }
        if "Triton" not in contenders:
            raise RunnerError(f"{name}: Triton's call was not profiled")
        tri = contenders["Triton"]
        bench = {key: item[key] for key in DB.PLAN_KEYS}
        bench["verdict"] = DB.judge(
            work, DB.measured_bytes(tri), work, plan["l2_bytes"]
        )
        bench["contenders"] = contenders
        if outputs["absent"].get(name):
            bench["absent"] = dict(outputs["absent"][name])
        benches[name] = bench
    record = {
        "ncu_version": ncu_version,
        "command": command,
        "tolerance": DB.TOLERANCE,
        "l2_bytes": plan["l2_bytes"],
        "min_l2_multiple": plan["min_l2_multiple"],
        "max_model_bytes": plan["max_model_bytes"],
        "provenance": dict(provenance),
        "benchmarks": benches,
        "skipped": dict(plan["skipped"]),
    }
    DB.validate(record, "the byte-model check")
    return record


def scaling_text(bench: dict) -> str:
    """How the size profiled came from the benchmarked one ('' if it did not)."""
    if bench["scale_factor"] == 1 and not bench["capped"]:
        return ""
    text = (
        f"{bench['scaled_param']} x{bench['scale_factor']} of the largest "
        f"benchmarked ({bench['benchmarked_size'][bench['scaled_param']]})"
    )
    return text + (", capped by memory" if bench["capped"] else "")


def table_lines(record: dict) -> list[str]:
    """The log's table: per benchmark and contender, model and counters in MB."""
    mb = 1e6
    lines = [
        f"DRAM bytes (Nsight Compute {record['ncu_version']}) against each "
        f"model, one call each, L2 {record['l2_bytes'] / mb:.1f} MB. "
        f"{DB.residue_rule(record['min_l2_multiple'])}:"
    ]
    for name, b in record["benchmarks"].items():
        size = " ".join(f"{k}={v}" for k, v in b["size"].items())
        scaled = scaling_text(b)
        lines.append(
            f"  {name} ({size}{'; ' + scaled if scaled else ''}, {b['dtype']}): "
            f"model {b['working_set_bytes'] / mb:.1f} MB; Triton "
            f"{DB.VERDICTS[b['verdict']]}"
        )
        if b["capped"]:
            lines.append(f"    {DB.capped_note(b, record['l2_bytes'])}")
        for who, c in b["contenders"].items():
            if not c["kernels"]:
                lines.append(f"    {who:<24} {DB.NO_KERNEL}")
                continue
            ratio = DB.model_over_measured(c)
            shown = f"{ratio:.3f}" if ratio is not None else "no bytes"
            lines.append(
                f"    {who:<24} read {c['dram_read_bytes'] / mb:10.1f} MB, written "
                f"{c['dram_write_bytes'] / mb:10.1f} MB, model/measured {shown}, "
                f"{len(c['kernels'])} kernel(s)"
            )
        for who, why in b.get("absent", {}).items():
            lines.append(f"    {who:<24} not profiled: {why}")
    for name, why in record["skipped"].items():
        lines.append(f"  {name}: skipped, {why}")
    return lines


# --------------------------------------------------------------------- ncu ---
def ncu_command(ncu: str, plan: Path, outputs: Path, log: Path) -> list[str]:
    return [
        ncu,
        "--profile-from-start",
        "off",
        "--target-processes",
        "application-only",
        "--cache-control",
        "all",
        "--clock-control",
        "none",
        "--metrics",
        ",".join(DB.METRICS),
        "--csv",
        "--page",
        "raw",
        "--print-units",
        "base",
        "--log-file",
        str(log),
        sys.executable,
        "-m",
        "triton_course.runner.dram",
        "--target",
        str(plan),
        "--outputs",
        str(outputs),
    ]


def ncu_version(ncu: str) -> str:
    try:
        out = subprocess.run(
            [ncu, "--version"], capture_output=True, text=True, timeout=60
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise RunnerError(f"{ncu} --version failed: {exc!r}") from None
    m = re.search(r"Version\s+(\S+)", out)
    if m:
        return m.group(1)
    last = out.strip().splitlines()
    if not last:
        raise RunnerError(f"{ncu} --version printed nothing")
    return last[-1].strip()


def measure_dram_bytes(
    snippets: list,
    env,
    repo_root: Path,
    say=print,
    *,
    ncu: str | None = None,
    names=None,
    timeout_s: float = DRAM_TIMEOUT_S,
    keep_log=None,
) -> dict | None:
    """The data file's ``dram_bytes``: every bandwidth benchmark of
    ``snippets`` profiled in one ncu process (None if there is none to
    profile). Raises RunnerError when ncu is missing, fails or profiles
    nothing, and when Triton's model is more than ``dram_bytes.TOLERANCE``
    off its DRAM bytes where the working set exceeds L2 (the table is
    logged first). ``keep_log(text)`` receives ncu's raw output."""
    repo_root = Path(repo_root)
    plan = build_plan(
        snippets, env.gpu.get("l2_bytes"), env.gpu.get("memory_bytes"), repo_root, names
    )
    for name, why in plan["skipped"].items():
        say(f"DRAM bytes: {name} skipped: {why}")
    if not plan["benchmarks"]:
        return None
    ncu = ncu or find_ncu()
    if not ncu:
        raise RunnerError(
            "the byte-model check needs Nsight Compute: ncu not found "
            "(PATH, /opt/nvidia/nsight-compute)"
        )
    version = ncu_version(ncu)
    with tempfile.TemporaryDirectory(prefix="dram-bytes-") as tmp:
        paths = {k: Path(tmp) / f"{k}.json" for k in ("plan", "outputs")}
        paths["log"] = Path(tmp) / "ncu.csv"
        paths["plan"].write_text(json.dumps(plan), encoding="utf-8")
        cmd = ncu_command(ncu, paths["plan"], paths["outputs"], paths["log"])
        shown = shlex.join(cmd)
        for key, path in paths.items():  # the record names no temporary path
            shown = shown.replace(str(path), f"<{key}>")
        n_calls = sum(len(b["contenders"]) for b in plan["benchmarks"])
        say(
            f"DRAM bytes: {len(plan['benchmarks'])} benchmark(s), {n_calls} "
            f"calls: {shown}"
        )
        t0 = time.time()
        try:
            proc = subprocess.run(
                cmd,
                cwd=repo_root,
                env=_subprocess_env({"TORCHINDUCTOR_COMPILE_THREADS": 1}),
                capture_output=True,
                text=True,
                timeout=timeout_s,
            )
        except subprocess.TimeoutExpired:
            raise RunnerError(
                f"the byte-model check (ncu) ran over {timeout_s} s"
            ) from None
        text = paths["log"].read_text(encoding="utf-8") if paths["log"].exists() else ""
        if keep_log is not None:
            keep_log(text)
        tail = (proc.stdout + proc.stderr + text)[-3000:]
        if proc.returncode != 0 or not paths["outputs"].exists():
            raise RunnerError(
                f"the byte-model check (ncu) exited {proc.returncode}:\n{tail}"
            )
        if "==ERROR==" in text:
            raise RunnerError(f"ncu reported an error:\n{tail}")
        outputs = json.loads(paths["outputs"].read_text(encoding="utf-8"))
    kernels = parse_ncu_csv(text)
    if not kernels:
        raise RunnerError(f"ncu profiled nothing:\n{tail}")
    record = build_record(
        plan, outputs, split_at_markers(kernels), version, shown, env.provenance
    )
    for line in table_lines(record):
        say(line)
    say(f"DRAM bytes: done in {time.time() - t0:.1f} s")
    off = [n for n, b in record["benchmarks"].items() if b["verdict"] == "off"]
    if off:
        raise RunnerError(
            f"the byte model of {off} is more than {100 * DB.TOLERANCE:.0f} % off "
            "the DRAM bytes Nsight Compute counted for Triton's call, with a "
            "working set larger than L2: fix the snippet's work() (or its "
            f"kernel). {DB.residue_rule(record['min_l2_multiple'])}; the "
            "reads and writes are in the table above"
        )
    return record


# -------------------------------------------------------------------- main ---
def _probe(only: list[str]) -> int:
    env = cuda_environment(REPO_ROOT, commit=git_commit(REPO_ROOT) or "probe")
    snippets = D.discover(REPO_ROOT / "snippets")
    logs: list[str] = []
    rc = 0
    try:
        measure_dram_bytes(snippets, env, REPO_ROOT, names=only, keep_log=logs.append)
    except RunnerError as exc:
        print(f"FAILED: {exc}")
        rc = 1
    for text in logs:
        head = text.splitlines()[:40]
        print(f"--- ncu's raw output ({len(text.splitlines())} lines), head:")
        print("\n".join(head))
    return rc


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m triton_course.runner.dram")
    parser.add_argument("--target", type=Path, help="(under ncu) the plan to profile")
    parser.add_argument(
        "--outputs", type=Path, help="(under ncu) where to say what ran"
    )
    parser.add_argument("--probe", action="store_true", help="a quick check on a GPU")
    parser.add_argument("--only", default=",".join(PROBE_ONLY), help="with --probe")
    args = parser.parse_args(argv)
    if args.target:
        if not args.outputs:
            parser.error("--target needs --outputs")
        return _target_main(args.target, args.outputs)
    if args.probe:
        return _probe([n for n in args.only.split(",") if n])
    parser.error("give --probe (or --target/--outputs, as the runner does under ncu)")
    return 2


if __name__ == "__main__":
    sys.exit(main())
