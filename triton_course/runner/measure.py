"""Timing on the GPU: the environment, the rooflines, one benchmark, one capture.

Everything that touches the GPU goes through an ``Environment``: the real one
(``cuda_environment``) refuses to exist without CUDA; the CPU tests build a
fake one with a fake timer, so they never depend on the interpreter's speed
(and the runner refuses to write a fake run into the repository).
"""

from __future__ import annotations

import glob
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from triton_course import timings as T

QUANTILES = [0.5, 0.2, 0.8]  # median first, then the spread
WARMUP_MS, REP_MS = 25, 100  # do_bench's defaults: a run stays inside 8 minutes
BIG_WORK = 2**31  # rows moving more bytes (or FLOPs) than this get fewer reps
COPY_BYTES = 2 * 2**30  # the copy roofline: a 2 GiB device-to-device copy
MATMUL_N = 8192  # the compute roofline: 8192³ bf16 torch.matmul, random data
CAPTURE_TIMEOUT_S = 180


class RunnerError(RuntimeError):
    """A failure that must stop the run before anything is written."""


_LOG_LOCK = threading.Lock()  # the concurrent phase logs from several threads


def log(message: str, lane: str | None = None) -> None:
    """One progress line; ``lane`` names the concurrent step it comes from."""
    prefix = f"[runner {time.strftime('%H:%M:%S')}]"
    if lane:
        prefix += f" [{lane}]"
    with _LOG_LOCK:
        print(f"{prefix} {message}", flush=True)


@dataclass
class Environment:
    """What the runner needs from the machine; the tests inject a fake one."""

    device: str  # where make_inputs puts tensors ("cuda"; "cpu" only when fake)
    gpu: dict  # the data file's "gpu" object (slug, name, sm_count, ...)
    provenance: dict  # shared provenance fields (snippet hash added per record)
    timer: Callable  # timer(fn, work) -> (median_ms, p20_ms, p80_ms)
    rooflines: Callable  # rooflines(metrics) -> {"bandwidth": {...}, ...}
    compile: Callable = None  # compile(fn) -> compiled fn; None: peer skipped
    sync: Callable = lambda: None
    cleanup: Callable = lambda: None
    fake: bool = False  # True only in tests: never written into the repository
    notes: dict = field(default_factory=dict)


# ------------------------------------------------------------ real machine ---
def slugify(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _nvidia_smi(query: str) -> str | None:
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        out = subprocess.run(
            [exe, f"--query-gpu={query}", "--format=csv,noheader,nounits", "-i", "0"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return out.splitlines()[0].strip() if out else None


def git_commit(repo_root: Path) -> str | None:
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=repo_root,
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def cuda_environment(repo_root: Path, commit: str | None = None) -> Environment:
    """The real GPU. Raises RunnerError on a machine without CUDA."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        raise RunnerError(
            "TRITON_INTERPRET=1 is set: interpreter timings must never reach a "
            "published table. Unset it and run on a CUDA GPU."
        )
    import torch
    import triton

    if not torch.cuda.is_available():
        raise RunnerError(
            "no CUDA GPU is visible: the runner measures only on a real GPU "
            "(the CPU tests run it with a fake timer, writing to a temporary dir)"
        )
    props = torch.cuda.get_device_properties(0)
    clock = _nvidia_smi("clocks.max.sm")
    gpu = {
        "slug": slugify(props.name),
        "name": props.name,
        "sm_count": props.multi_processor_count,
        "l2_bytes": getattr(props, "L2_cache_size", None),
        "memory_bytes": props.total_memory,
        "compute_capability": f"{props.major}.{props.minor}",
    }
    if clock and clock.replace(".", "").isdigit():
        gpu["clock_mhz"] = int(float(clock))
    commit = commit or git_commit(repo_root)
    if not commit:
        raise RunnerError(
            "cannot read the commit (git rev-parse HEAD); pass --commit SHA"
        )
    provenance = {
        "gpu": props.name,
        "sm_count": props.multi_processor_count,
        "driver": _nvidia_smi("driver_version") or "unknown (nvidia-smi not found)",
        "cuda": torch.version.cuda,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": platform.python_version(),
        "commit": commit,
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "device": "cuda",
    }

    def timer(fn, work):
        rep = REP_MS // 2 if work > BIG_WORK else REP_MS
        res = triton.testing.do_bench(
            fn, warmup=WARMUP_MS, rep=rep, quantiles=QUANTILES
        )
        return tuple(float(v) for v in res)

    configure_torch()
    return Environment(
        device="cuda",
        gpu=gpu,
        provenance=provenance,
        timer=timer,
        rooflines=lambda metrics: measure_rooflines(metrics, gpu["name"]),
        compile=compile_peer,
        sync=torch.cuda.synchronize,
        cleanup=cleanup_cuda,
    )


def configure_torch() -> None:
    """torch.compile settings shared by the timed run and the warm-up process
    (the same settings, so the warm-up's compiled graphs are cache hits)."""
    import torch

    for knob in ("recompile_limit", "cache_size_limit"):  # one compile per size
        if hasattr(torch._dynamo.config, knob):
            setattr(
                torch._dynamo.config, knob, max(64, getattr(torch._dynamo.config, knob))
            )
            break
    # Inductor would otherwise store the config its runtime autotuning picks
    # for a generated kernel on disk and reuse it in later processes: a choice
    # made while the tests or the warm-up shared the GPU. Off, every process
    # (the timed one included) autotunes for itself.
    try:
        from torch._inductor import config as inductor_config
    except ImportError:
        return
    if hasattr(inductor_config, "autotune_local_cache"):
        inductor_config.autotune_local_cache = False


def compile_peer(fn):
    import torch

    return torch.compile(fn, dynamic=False)


def cleanup_cuda() -> None:
    import torch

    torch._dynamo.reset()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()


def measure_rooflines(metrics: set, gpu_name: str) -> dict:
    """Copy bandwidth and tensor-core rate of this GPU, measured now."""
    import torch
    import triton

    out = {}
    if "bandwidth" in metrics:
        n = COPY_BYTES // 4
        src = torch.empty(n, dtype=torch.float32, device="cuda").uniform_()
        dst = torch.empty_like(src)
        ms = triton.testing.do_bench(lambda: dst.copy_(src), quantiles=QUANTILES)[0]
        moved = 2 * COPY_BYTES  # read once, written once
        out["bandwidth"] = {
            "name": "copy bandwidth",
            "value": moved / ms / 1e6,
            "unit": "GB/s",
            "how": (
                f"median of do_bench over a {COPY_BYTES // 2**30} GiB "
                "device-to-device copy (dst.copy_(src)), counting bytes read "
                f"plus bytes written, on {gpu_name} in this run"
            ),
        }
        del src, dst
        torch.cuda.empty_cache()
        log(f"roofline: copy bandwidth {out['bandwidth']['value']:.0f} GB/s")
    if "compute" in metrics:
        n = MATMUL_N
        a = torch.randn(n, n, dtype=torch.bfloat16, device="cuda")
        b = torch.randn(n, n, dtype=torch.bfloat16, device="cuda")
        ms = triton.testing.do_bench(lambda: torch.matmul(a, b), quantiles=QUANTILES)[0]
        out["compute"] = {
            "name": "bf16 matmul rate",
            "value": 2 * n**3 / ms / 1e9,
            "unit": "TFLOP/s",
            "how": (
                f"median of do_bench over torch.matmul of two random {n}×{n} "
                f"bfloat16 matrices (2·{n}³ FLOPs), on {gpu_name} in this run"
            ),
        }
        del a, b
        torch.cuda.empty_cache()
        log(f"roofline: bf16 matmul {out['compute']['value']:.0f} TFLOP/s")
    return out


# -------------------------------------------------------------- benchmarks ---
def rate(work: float, median_ms: float, metric: str) -> float:
    """GB/s = bytes / ms / 1e6; TFLOP/s = FLOPs / ms / 1e9."""
    return work / median_ms / (1e6 if metric == "bandwidth" else 1e9)


def _jsonable(value, where: str):
    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError) as exc:
        raise RunnerError(f"{where}: not JSON-serialisable ({exc})") from None


def _time_one(fn, work, env) -> dict:
    fn()  # warm-up: compiles, autotunes, fills caches
    env.sync()
    median, p20, p80 = env.timer(fn, work)
    if not (median > 0):
        raise RuntimeError(f"timer returned a non-positive median {median!r}")
    return {"median_ms": median, "p20_ms": p20, "p80_ms": p80}


def measure_benchmark(
    desc: dict, snippet_rel: str, snippet_sha: str, env: Environment, roofline: dict
) -> dict:
    """Time every row of one description; a Triton failure raises RunnerError."""
    import torch

    name, metric = desc["name"], desc["metric"]
    peers = ["Triton", *desc["peers"]]
    compile_of = desc.get("compile")
    compiled = None
    absent: dict[str, str] = {}
    if compile_of and env.compile is not None:
        peers.append("torch.compile")
        try:
            compiled = env.compile(desc["peers"][compile_of])
        except Exception as exc:  # noqa: BLE001 - a peer may fail; say why
            absent["torch.compile"] = f"{type(exc).__name__}: {exc}"
            log(f"{name}: torch.compile of {compile_of!r} failed: {exc!r}")
    rows = []
    for dtype_name in desc["dtypes"]:
        dtype = getattr(torch, dtype_name)
        for size in desc["sizes"]:
            where = f"{name} {size} {dtype_name}"
            try:
                inputs = desc["make_inputs"](size, dtype, env.device)
                work = desc["work"](size, dtype)
            except Exception as exc:
                raise RunnerError(f"{where}: make_inputs/work failed: {exc!r}") from exc
            if not isinstance(inputs, tuple):
                raise RunnerError(f"{where}: make_inputs must return a tuple of args")
            results = {}
            try:
                results["Triton"] = _time_one(
                    partial(desc["triton"], *inputs), work, env
                )
            except Exception as exc:
                raise RunnerError(f"{where}: Triton failed: {exc!r}") from exc
            callables = [(p, desc["peers"][p]) for p in desc["peers"]]
            if compiled is not None and "torch.compile" not in absent:
                callables.append(("torch.compile", compiled))
            for peer, fn in callables:
                try:
                    results[peer] = _time_one(partial(fn, *inputs), work, env)
                except Exception as exc:  # noqa: BLE001 - recorded absent, not fatal
                    reason = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
                    absent.setdefault(peer, reason)
                    log(f"{where}: peer {peer!r} failed, recorded absent: {reason}")
            for res in results.values():
                res["rate"] = rate(work, res["median_ms"], metric)
            rows.append(
                {
                    "size": dict(size),
                    "dtype": dtype_name,
                    "work": work,
                    "results": results,
                }
            )
            tri = results["Triton"]
            log(
                f"{where}: Triton {tri['median_ms']:.4g} ms, "
                f"{tri['rate']:.4g} {T.UNITS[metric]}"
            )
            del inputs
        env.cleanup()
    notes = {"timer": f"do_bench median, quantiles {QUANTILES}, warmup {WARMUP_MS} ms"}
    if absent:
        notes["absent"] = absent
    if "report" in desc:
        try:
            notes["report"] = _jsonable(desc["report"](), f"{name}: report()")
        except RunnerError:
            raise
        except Exception as exc:
            raise RunnerError(f"{name}: report() failed: {exc!r}") from exc
    return {
        "title": desc["title"],
        "snippet": snippet_rel,
        "snippet_sha256": snippet_sha,
        "metric": metric,
        "unit": T.UNITS[metric],
        "params": list(desc["params"]),
        "peers": peers,
        "roofline": roofline,
        "provenance": dict(env.provenance),
        "rows": rows,
        "notes": notes,
        **({"plot": False} if desc.get("plot") is False else {}),
    }


# ----------------------------------------------------------------- warm-up ---
def untimed_autotuning() -> None:
    """Make every ``triton.autotune`` in this process compile and launch each
    config once instead of timing it: the warm-up wants the compiled kernels
    (Triton's on-disk cache), not a choice made while the tests share the GPU.
    Only the warm-up process calls this; its choices die with it."""
    from triton.runtime.autotuner import Autotuner

    def launch_once(kernel_call, quantiles=None, **_):
        kernel_call()
        return [1.0, 1.0, 1.0] if quantiles else 1.0

    Autotuner.do_bench = property(lambda self: launch_once)


def warm_benchmark(desc: dict, env: Environment, say=print) -> int:
    """Call Triton, each peer and the compiled peer once per row, untimed.

    Fills the on-disk compile caches (Triton's, Inductor's FX graph cache) so
    that the timed run loads what it would otherwise compile. Best effort:
    a failure here is only reported (the timed run checks everything again).
    Returns the number of calls that failed. The runner stops the warm-up by
    ending its process, so this needs no way to be interrupted.
    """
    import torch

    failed = 0
    compiled = None
    if desc.get("compile") and env.compile is not None:
        try:
            compiled = env.compile(desc["peers"][desc["compile"]])
        except Exception:  # noqa: BLE001 - best effort
            failed += 1
    fns = [("Triton", desc["triton"]), *desc["peers"].items()]
    if compiled is not None:
        fns.append(("torch.compile", compiled))
    for dtype_name in desc["dtypes"]:
        for size in desc["sizes"]:
            dtype = getattr(torch, dtype_name)
            try:
                inputs = desc["make_inputs"](size, dtype, env.device)
            except Exception as exc:  # noqa: BLE001 - best effort
                say(f"{desc['name']} {size} {dtype_name}: make_inputs: {exc!r}")
                failed += 1
                continue
            for _, fn in fns:
                try:
                    fn(*inputs)
                    env.sync()
                except Exception:  # noqa: BLE001 - peers may fail; the run says why
                    failed += 1
            del inputs
        env.cleanup()
    return failed


# ---------------------------------------------------------------- captures ---
def find_ncu() -> str | None:
    exe = shutil.which("ncu")
    if exe:
        return exe
    found = sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"))
    return found[-1] if found else None


def capture_ncu(
    args=(), metrics=(), kernel: str | None = None, launch_count: int = 1, script=None
) -> dict:
    """A capture spec: run the snippet (or ``script``) under Nsight Compute.

    Snippets must not import this package, so they write the same dict by
    hand: ``{"ncu": {"args": [...], "metrics": [...], "kernel": "regex"}}``.
    """
    spec = {"args": list(args), "metrics": list(metrics), "launch_count": launch_count}
    if kernel:
        spec["kernel"] = kernel
    if script:
        spec["script"] = str(script)
    return {"ncu": spec}


def _subprocess_env(extra: dict | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONUNBUFFERED"] = "1"
    env.update({str(k): str(v) for k, v in (extra or {}).items()})
    return env


def _run_command(cmd: list, cwd: Path, env: dict, where: str) -> str:
    log(f"{where}: running {' '.join(cmd)}")
    try:
        proc = subprocess.run(
            cmd,
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=CAPTURE_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise RunnerError(f"{where}: timed out after {CAPTURE_TIMEOUT_S} s") from None
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr)[-2000:]
        raise RunnerError(f"{where}: exited {proc.returncode}:\n{tail}")
    return proc.stdout + proc.stderr


def _trim(text: str, max_lines: int, match: str | None) -> str:
    lines = text.splitlines()
    if match:
        pattern = re.compile(match)
        lines = [line for line in lines if pattern.search(line)]
    if len(lines) > max_lines:
        lines = lines[:max_lines] + [f"... ({len(lines) - max_lines} more lines cut)"]
    return "\n".join(line.rstrip() for line in lines).strip("\n") + "\n"


def run_capture(
    name: str, spec, snippet_path: Path, repo_root: Path
) -> tuple[str, str]:
    """(kind, text) of one capture. Any failure raises RunnerError."""
    where = f"capture {name!r}"
    if callable(spec):
        try:
            spec = spec()
        except Exception as exc:
            raise RunnerError(f"{where}: raised {exc!r}") from exc
    if isinstance(spec, str):
        return "text", spec if spec.endswith("\n") else spec + "\n"
    if not (
        isinstance(spec, dict)
        and len(spec) == 1
        and next(iter(spec)) in ("ncu", "python")
    ):
        raise RunnerError(f"{where}: must give a string or {{'ncu'|'python': {{...}}}}")
    kind, opts = next(iter(spec.items()))
    script = Path(opts.get("script", snippet_path))
    if not script.is_absolute():
        script = repo_root / script
    args = [str(a) for a in opts.get("args", [])]
    env = _subprocess_env(opts.get("env"))
    if kind == "python":
        out = _run_command([sys.executable, str(script), *args], repo_root, env, where)
    else:
        ncu = find_ncu()
        if not ncu:
            raise RunnerError(
                f"{where}: ncu not found (PATH, /opt/nvidia/nsight-compute)"
            )
        cmd = [
            ncu,
            "--clock-control",
            "none",
            "--launch-count",
            str(opts.get("launch_count", 1)),
        ]
        if opts.get("metrics"):
            cmd += ["--metrics", ",".join(opts["metrics"])]
        if opts.get("kernel"):
            cmd += ["--kernel-name", f"regex:{opts['kernel']}"]
        out = _run_command(
            [*cmd, sys.executable, str(script), *args], repo_root, env, where
        )
        if "==PROF== No kernels were profiled" in out or "==ERROR==" in out:
            raise RunnerError(f"{where}: ncu profiled nothing:\n{out[-2000:]}")
    return kind, _trim(out, int(opts.get("max_lines", 200)), opts.get("match"))
