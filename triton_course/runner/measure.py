"""Timing on the GPU: the environment, the rooflines, one benchmark, one capture.

Everything that touches the GPU goes through an ``Environment``: the real one
(``cuda_environment``) refuses to exist without CUDA; the CPU tests build a
fake one with a fake timer, so they never depend on the interpreter's speed
(and the runner refuses to write a fake run into the repository).

How a row is timed (the method is designed after NVIDIA's NVBench):

- **Interleaved rounds.** Triton, each peer and the compiled peer are timed
  one after another, ``ROUNDS`` times, the order rotating each round, so a
  clock that drifts during the row moves every contender alike. Each round
  gives one time per contender; a row stores them all, with the median and
  quartiles over rounds, and a ratio is taken round by round.
- **GPU time, launch path hidden.** In each round a call is timed several
  times by CUDA events, each sample behind an L2 flush (every call starts
  cold, as ``do_bench`` does) and a GPU sleep long enough for the CPU to
  enqueue the whole call before the GPU reaches it: the events see the GPU's
  work, not Python's launch cost. Whether the sleep did cover the enqueue is
  stored (``launch_hidden``). The sleep and the number of samples are sized
  once per contender and row, in its first round, from the enqueue time and
  one sample. Separately, ``wall_ms`` is a call's time when
  called back to back from Python: the launch path included.
- **Autotuning confirmed.** Every ``triton.autotune`` of the snippets is
  tuned with that same timer, twice per row (three times if the two differ,
  the majority kept); the chosen config and whether the tunings agreed are
  stored with the row.
- **Ceilings that are limits.** Each roofline is a probe measured in the
  run (a 2 GiB copy, an 8192³ bf16 matmul, an L2-resident copy, an 8192³ FP8
  ``torch._scaled_mm`` for the FP8 GEMMs), stored with
  the vendor's spec-sheet peak beside it (``vendor_peaks.py``); no rate moves
  either. A rate above the vendor peak, or more than
  ``timings.ABOVE_PROBE_TOLERANCE`` above the probe, is flagged on its result
  (``above_ceiling``, with why) and logged; the run goes on.
- **Steady clocks.** Before the first timing the GPU runs a large matmul
  until its SM clock stops moving; NVML's SM clock, temperature and power are
  stored at the start and end of every benchmark, so throttling shows.
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
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from triton_course import timings as T
from triton_course import vendor_peaks as V

ROUNDS = 7  # interleaved rounds per row: a median and quartiles that mean something
ROUND_BUDGET_MS = 12.0  # GPU time per contender per round (samples of GPU time)
WALL_BUDGET_MS = 4.0  # back-to-back calls per contender per round (wall time)
MIN_SAMPLES, MAX_SAMPLES = 3, 25
FLUSH_BYTES = 256 * 2**20  # > 2× the L2 of any current GPU: every sample starts cold
MIN_SLEEP_US = 40.0  # the GPU sleeps at least this long before each sample
SETTLE_MAX_S, SETTLE_MIN_S = 20.0, 4.0  # the clock-settling load's time limits
SETTLE_TOLERANCE = 0.02  # settled: the last SETTLE_WINDOW SM-clock samples agree
SETTLE_WINDOW = 4
TUNINGS_MAX = 3  # an autotuner is asked at most this often per row
COPY_BYTES = 2 * 2**30  # the copy roofline: a 2 GiB device-to-device copy
MATMUL_N = 8192  # the compute roofline: 8192³ bf16 torch.matmul, random data
FP8_MATMUL_N = 8192  # the FP8 roofline: 8192³ e4m3 torch._scaled_mm (cuBLAS)
FP8_MIN_CAPABILITY = (8, 9)  # float8 tensor cores: Ada (sm_89), Hopper and newer
L2_COPY_BYTES = 8 * 2**20  # the L2 roofline: an 8 MiB copy (16 MiB touched) ...
L2_COPY_REPEATS = 20  # ... repeated in one call, so all but the first pass hit L2
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
    # timer(fn, work) -> one round of one contender:
    #   {"gpu_ms": float, "wall_ms": float, "launch_hidden": bool}
    timer: Callable
    rooflines: Callable  # rooflines(metrics) -> {"bandwidth": {...}, ...}
    compile: Callable = None  # compile(fn) -> compiled fn; None: peer skipped
    sync: Callable = lambda: None
    cleanup: Callable = lambda: None
    fake: bool = False  # True only in tests: never written into the repository
    notes: dict = field(default_factory=dict)
    gpu_state: Callable = lambda: {}  # NVML: sm_mhz, temp_c, power_w, ...
    settle: Callable = lambda: {}  # bring the GPU to its sustained clocks
    autotuners: Callable = lambda: []  # [(name, Autotuner)] of the snippets
    rounds: int = ROUNDS
    # roofline key -> the vendor's spec-sheet peak ({value, unit, source} or
    # None); None: looked up by GPU name, and a GPU without one is refused
    vendor_peaks: dict | None = None

    def __post_init__(self):
        if self.vendor_peaks is None:
            self.vendor_peaks = vendor_peaks_for(self.gpu["name"])


def vendor_peaks_for(gpu_name: str) -> dict:
    """The GPU's spec-sheet peaks per roofline key; a run refuses to start on
    a GPU that vendor_peaks.py does not know (its pages could not show the
    vendor's line, nor flag a rate above it)."""
    try:
        V.peaks_for(gpu_name)
    except V.NoVendorPeak as exc:
        raise RunnerError(str(exc)) from None
    return {key: V.peak(gpu_name, key) for key in V.KEYS}


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
    import torch
    import triton

    if triton.knobs.runtime.interpret:  # 1, true, on or yes, as Triton reads it
        raise RunnerError(
            f"TRITON_INTERPRET={os.environ.get('TRITON_INTERPRET')} is set: "
            "interpreter timings must never reach a published table. Unset it "
            "and run on a CUDA GPU."
        )

    if not torch.cuda.is_available():
        raise RunnerError(
            "no CUDA GPU is visible: the runner measures only on a real GPU "
            "(the CPU tests run it with a fake timer, writing to a temporary dir)"
        )
    props = torch.cuda.get_device_properties(0)
    vendor = vendor_peaks_for(props.name)  # before anything runs: no entry, no run
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
        # which physical GPU: two runs on one card or on two can be told apart
        "gpu_uuid": str(getattr(props, "uuid", "") or _nvidia_smi("uuid") or "unknown"),
        "gpu_serial": _nvidia_smi("serial") or "unknown",
    }

    timer = CudaTimer(gpu.get("clock_mhz") or 2000)
    nvml = NvmlReader(props)
    configure_torch()
    robust_autotuning(timer)
    return Environment(
        device="cuda",
        gpu=gpu,
        provenance=provenance,
        timer=timer.round,
        rooflines=lambda metrics: measure_rooflines(metrics, gpu["name"], timer),
        compile=compile_peer,
        sync=torch.cuda.synchronize,
        cleanup=cleanup_cuda,
        gpu_state=nvml.state,
        settle=lambda: settle_clocks(nvml),
        autotuners=lambda: snippet_autotuners(repo_root / "snippets"),
        vendor_peaks=vendor,
    )


def wall_calls(gpu_ms: float, host_ms: float) -> int:
    """Back-to-back calls for a round's ``wall_ms``: about WALL_BUDGET_MS of
    them, at least 3 while a call is short enough for its launch to matter
    (up to a third of the budget), down to 1 for calls of a few ms and more,
    whose launch is lost in the kernel (this keeps the long flash-attention
    rows from spending rounds on calls that say nothing new)."""
    per_call = max(gpu_ms, host_ms, 1e-3)
    floor = 3 if per_call <= WALL_BUDGET_MS / 3 else 1
    return int(min(200, max(floor, WALL_BUDGET_MS / per_call)))


class CudaTimer:
    """One round of one contender: GPU time with the launch path hidden, and
    the wall time of back-to-back calls (see the module docstring)."""

    def __init__(self, clock_mhz: float):
        import torch

        self.torch = torch
        self.cycles_per_us = float(clock_mhz)  # the sleep counts SM cycles
        self._plans = weakref.WeakKeyDictionary()  # fn -> _plan(fn)
        self.flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")

    def _host_ms(self, fn) -> float:
        """What one call costs the CPU (its enqueue), the GPU left to finish."""
        torch = self.torch
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        return (t1 - t0) * 1e3

    def _events(self, n):
        ev = self.torch.cuda.Event
        return [ev(enable_timing=True) for _ in range(n)]

    def gpu_samples(self, fn, n: int, sleep_us: float) -> tuple[list[float], bool]:
        """n GPU times of fn, each behind an L2 flush and a sleep; and whether
        every enqueue finished inside its sleep (launch cost hidden)."""
        torch = self.torch
        starts, ends = self._events(n), self._events(n)
        hidden = True
        cycles = int(sleep_us * self.cycles_per_us)
        torch.cuda.synchronize()
        for i in range(n):
            self.flush.zero_()
            t0 = time.perf_counter()
            torch.cuda._sleep(cycles)
            starts[i].record()
            fn()
            ends[i].record()
            hidden &= (time.perf_counter() - t0) * 1e6 < sleep_us
        torch.cuda.synchronize()
        return [s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)], hidden

    def wall_ms(self, fn, n: int) -> float:
        """Per-call time of n back-to-back calls: max(launch path, GPU work)."""
        start, end = self._events(2)
        self.torch.cuda.synchronize()
        start.record()
        for _ in range(n):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / n

    def _plan(self, fn) -> tuple[float, float, int]:
        """(host ms, sleep µs, samples) of one call: sized in its first round
        and kept for the row's other rounds, which then spend their time on
        samples (a row's calls are the same ``fn`` in every round)."""
        plan = self._plans.get(fn)
        if plan is None:
            host = min(self._host_ms(fn) for _ in range(2))
            sleep_us = max(MIN_SLEEP_US, 2.0 * host * 1e3 + 20.0)
            probe, _ = self.gpu_samples(fn, 1, sleep_us)
            per_sample = probe[0] + sleep_us / 1e3 + 0.1  # + the flush, roughly
            n = int(min(MAX_SAMPLES, max(MIN_SAMPLES, ROUND_BUDGET_MS / per_sample)))
            plan = self._plans[fn] = (host, sleep_us, n)
        return plan

    def round(self, fn, work=None, wall: bool = True) -> dict:
        host, sleep_us, n = self._plan(fn)
        samples, hidden = self.gpu_samples(fn, n, sleep_us)
        gpu = sorted(samples)[len(samples) // 2]
        wall_ms = self.wall_ms(fn, wall_calls(gpu, host)) if wall else None
        return {"gpu_ms": gpu, "wall_ms": wall_ms, "launch_hidden": hidden}

    def bench(self, fn, quantiles=None, **_):
        """The autotuner's timer: one round's median GPU time; a list when
        quantiles are asked for, as ``do_bench`` returns."""
        ms = self.round(fn, wall=False)["gpu_ms"]  # a choice needs no wall time
        return [ms] * len(quantiles) if quantiles else ms


def robust_autotuning(timer: CudaTimer) -> None:
    """Every ``triton.autotune`` in this process times its configs with the
    runner's timer (GPU time, launch hidden) instead of ``do_bench``."""
    from triton.runtime.autotuner import Autotuner

    Autotuner.do_bench = property(lambda self: timer.bench)


def snippet_autotuners(snippets_dir: Path) -> list:
    """(kernel name, Autotuner) of every module loaded from ``snippets_dir``."""
    from triton.runtime.autotuner import Autotuner

    root = Path(snippets_dir).resolve()
    found, seen = [], set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not path or Path(path).resolve().parent != root:
            continue
        for name, value in vars(module).items():
            if isinstance(value, Autotuner) and id(value) not in seen:
                seen.add(id(value))
                found.append((name, value))
    return found


class NvmlReader:
    """SM clock, temperature and power of the GPU torch uses, from NVML;
    ``{"nvml": "unavailable: ..."}`` where NVML cannot be read."""

    def __init__(self, props):
        self.handle, self.why = None, ""
        try:
            import pynvml

            pynvml.nvmlInit()
            bus = getattr(props, "pci_bus_id", None)
            if bus is not None:
                domain = getattr(props, "pci_domain_id", 0)
                device = getattr(props, "pci_device_id", 0)
                pci = f"{domain:08x}:{bus:02x}:{device:02x}.0"
                self.handle = pynvml.nvmlDeviceGetHandleByPciBusId(pci)
            else:
                self.handle = pynvml.nvmlDeviceGetHandleByIndex(0)
            self.nvml = pynvml
        except Exception as exc:  # noqa: BLE001 - the data says why it is absent
            self.why = f"unavailable: {type(exc).__name__}: {exc}"

    def state(self) -> dict:
        if self.handle is None:
            return {"nvml": self.why}
        n, h = self.nvml, self.handle
        try:
            return {
                "sm_mhz": n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM),
                "mem_mhz": n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_MEM),
                "temp_c": n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU),
                "power_w": round(n.nvmlDeviceGetPowerUsage(h) / 1000.0, 1),
                "throttle_reasons": int(n.nvmlDeviceGetCurrentClocksThrottleReasons(h)),
            }
        except Exception as exc:  # noqa: BLE001
            return {"nvml": f"read failed: {type(exc).__name__}: {exc}"}


def settle_clocks(nvml: NvmlReader) -> dict:
    """Run a large bf16 matmul until SETTLE_WINDOW SM-clock samples agree
    within SETTLE_TOLERANCE (at least SETTLE_MIN_S, at most SETTLE_MAX_S
    seconds), so timing does not start from an idle GPU. The clock afterwards
    still follows each load's power draw."""
    import torch

    a = torch.randn(MATMUL_N, MATMUL_N, dtype=torch.bfloat16, device="cuda")
    b = torch.randn_like(a)
    clocks: list[int] = []
    t0 = time.time()
    settled = False
    while time.time() - t0 < SETTLE_MAX_S:
        for _ in range(100):  # about 0.15 s of work on an H100
            torch.matmul(a, b)
        torch.cuda.synchronize()
        state = nvml.state()
        if "sm_mhz" not in state:
            if time.time() - t0 >= SETTLE_MIN_S:
                break  # no NVML: a fixed warm-up is all we can do
            continue
        clocks.append(state["sm_mhz"])
        window = clocks[-SETTLE_WINDOW:]
        if (
            time.time() - t0 >= SETTLE_MIN_S
            and len(window) == SETTLE_WINDOW
            and max(window) - min(window) <= SETTLE_TOLERANCE * max(window)
        ):
            settled = True
            break
    del a, b
    torch.cuda.empty_cache()
    out = {"seconds": round(time.time() - t0, 1), "sm_mhz": clocks, "settled": settled}
    out["end"] = nvml.state()
    log(
        f"clocks: {'settled' if settled else 'NOT settled'} after {out['seconds']} s "
        f"(SM clock samples {clocks[-SETTLE_WINDOW:]})"
    )
    return out


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


def _roofline_ms(fn, timer: CudaTimer) -> tuple[float, list[float]]:
    """A roofline's time: the fastest of ROUNDS rounds of the runner's timer
    (each round the median of its samples). A ceiling is what the GPU
    attains, and at the power limit a matmul's rounds split into a fast and
    a slow group (H100: about 775 and 675 TFLOP/s): a median could land in
    either, so shares of it moved between runs and good kernels stood above
    a slow-group median. The fastest round is the fast group's."""
    fn()
    times = [timer.round(fn, wall=False)["gpu_ms"] for _ in range(ROUNDS)]
    return min(times), times


def measure_rooflines(metrics: set, gpu_name: str, timer: CudaTimer) -> dict:
    """Copy bandwidth and tensor-core rate of this GPU, measured now: each
    roofline is its probe's value, and no contender's rate moves it."""
    import torch

    out = {}
    if "bandwidth" in metrics:
        n = COPY_BYTES // 4
        src = torch.empty(n, dtype=torch.float32, device="cuda").uniform_()
        dst = torch.empty_like(src)
        ms, times = _roofline_ms(lambda: dst.copy_(src), timer)
        moved = 2 * COPY_BYTES  # read once, written once
        out["bandwidth"] = {
            "name": "copy bandwidth",
            "value": moved / ms / 1e6,
            "unit": "GB/s",
            "rounds_ms": times,
            "how": (
                f"the fastest of {ROUNDS} rounds (each the median of its samples) "
                f"of the runner's timer over a "
                f"{COPY_BYTES // 2**30} GiB "
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
        ms, times = _roofline_ms(lambda: torch.matmul(a, b), timer)
        out["compute"] = {
            "name": "bf16 matmul rate",
            "value": 2 * n**3 / ms / 1e9,
            "unit": "TFLOP/s",
            "rounds_ms": times,
            "how": (
                f"the fastest of {ROUNDS} rounds (each the median of its samples) "
                f"of the runner's timer over "
                f"torch.matmul of two random {n}×{n} "
                f"bfloat16 matrices (2·{n}³ FLOPs), on {gpu_name} in this run"
            ),
        }
        del a, b
        torch.cuda.empty_cache()
        log(f"roofline: bf16 matmul {out['compute']['value']:.0f} TFLOP/s")
    if "compute_fp8" in metrics:
        out["compute_fp8"] = _fp8_roofline(gpu_name, timer)
        torch.cuda.empty_cache()  # the probe's matrices are gone with its frame
        log(f"roofline: FP8 matmul {out['compute_fp8']['value']:.0f} TFLOP/s")
    if "l2" in metrics:
        n = L2_COPY_BYTES // 4
        src = torch.empty(n, dtype=torch.float32, device="cuda").uniform_()
        dst = torch.empty_like(src)

        def hot_copies():
            for _ in range(L2_COPY_REPEATS):
                dst.copy_(src)

        ms, times = _roofline_ms(hot_copies, timer)
        out["l2"] = {
            "name": "L2 copy bandwidth",
            "value": 2 * L2_COPY_BYTES * L2_COPY_REPEATS / ms / 1e6,
            "unit": "GB/s",
            "rounds_ms": times,
            "how": (
                f"the fastest of {ROUNDS} rounds (each the median of its samples) "
                f"of the runner's timer over "
                f"{L2_COPY_REPEATS} back-to-back copies of the same "
                f"{L2_COPY_BYTES // 2**20} MiB (dst.copy_(src)) in one call, so "
                f"that all passes but the first find the data in L2, counting "
                f"bytes read plus bytes written, on {gpu_name} in this run"
            ),
        }
        del src, dst
        torch.cuda.empty_cache()
        log(f"roofline: L2 copy bandwidth {out['l2']['value']:.0f} GB/s")
    for key, roof in out.items():
        roof["ceiling"] = key  # which roofline: the metric's, "l2", "compute_fp8"
    return out


def fp8_refusal(capability: tuple, gpu_name: str) -> str | None:
    """Why this GPU cannot run the FP8 ceiling's probe (or an FP8 GEMM), or
    None when it can: float8 tensor cores start at compute capability 8.9."""
    if tuple(capability) >= FP8_MIN_CAPABILITY:
        return None
    major, minor = capability
    return (
        f"{gpu_name} has compute capability {major}.{minor}: the FP8 benchmarks "
        "(ceiling 'compute_fp8') need float8 tensor cores, compute capability "
        "8.9 (Ada) or newer; leave them out with --only, or run on such a GPU"
    )


def _fp8_roofline(gpu_name: str, timer) -> dict:
    """The FP8 tensor-core rate: torch._scaled_mm (cuBLAS) on two random
    8192×8192 e4m3 matrices, per-tensor scales, bf16 out, fast accumulation
    (cuBLAS's fastest FP8 setting). Refused below compute capability 8.9."""
    import torch

    why = fp8_refusal(torch.cuda.get_device_capability(), gpu_name)
    if why:
        raise RunnerError(why)
    n, fp8 = FP8_MATMUL_N, torch.float8_e4m3fn
    a = torch.randn(n, n, device="cuda").to(fp8)
    b = torch.randn(n, n, device="cuda").to(fp8)
    one = torch.ones((), device="cuda")

    def scaled_mm():  # b.T: cuBLAS wants the second operand column-major
        return torch._scaled_mm(
            a, b.T, one, one, out_dtype=torch.bfloat16, use_fast_accum=True
        )

    ms, times = _roofline_ms(scaled_mm, timer)
    return {
        "name": "FP8 matmul rate",
        "value": 2 * n**3 / ms / 1e9,
        "unit": "TFLOP/s",
        "rounds_ms": times,
        "how": (
            f"the fastest of {ROUNDS} rounds (each the median of its samples) "
            f"of the runner's timer over torch._scaled_mm (cuBLAS) of two "
            f"random {n}×{n} float8_e4m3fn matrices with per-tensor scales, "
            f"bfloat16 output and fast accumulation (2·{n}³ FLOPs), on "
            f"{gpu_name} in this run"
        ),
    }


def flag_rates(record: dict, gpu: dict, name: str) -> int:
    """Mark every result of a benchmark record whose rate stands above the
    vendor's peak or more than ABOVE_PROBE_TOLERANCE above the probe
    (``above_ceiling``, see timings.above_ceiling), and log each; the run
    goes on. Returns how many were flagged."""
    roof, flagged = record["roofline"], 0
    for row in record["rows"]:
        for peer, res in row["results"].items():
            flag = T.above_ceiling(res["rate"], record, row, gpu)
            if flag is None:
                continue
            res["above_ceiling"] = flag
            flagged += 1
            over = "above the vendor peak, " if flag["vendor"] else ""
            log(
                f"{name} {row['size']} {row['dtype']}: {peer} at "
                f"{res['rate']:.4g} {record['unit']} is {over}"
                f"{100 * flag['probe_ratio']:.0f} % of the {roof['name']} probe "
                f"(why: {flag['why']})"
            )
    return flagged


# -------------------------------------------------------------- benchmarks ---
def rate(work: float, median_ms: float, metric: str) -> float:
    """GB/s = bytes / ms / 1e6; TFLOP/s = FLOPs / ms / 1e9."""
    return work / median_ms / (1e6 if metric == "bandwidth" else 1e9)


def _jsonable(value, where: str):
    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError) as exc:
        raise RunnerError(f"{where}: not JSON-serialisable ({exc})") from None


def summarise(rounds: list[dict], work: float, metric: str) -> dict:
    """One contender's rounds -> the stored result (median and quartiles)."""
    gpu = [r["gpu_ms"] for r in rounds]
    median = T.quantile(gpu, 0.5)
    return {
        "rounds_ms": gpu,
        "median_ms": median,
        "q25_ms": T.quantile(gpu, 0.25),
        "q75_ms": T.quantile(gpu, 0.75),
        "wall_ms": T.quantile([r["wall_ms"] for r in rounds], 0.5),
        "launch_hidden": all(r["launch_hidden"] for r in rounds),
        "rate": rate(work, median, metric),
    }


def rotation(names: list[str], round_index: int) -> list[str]:
    """The order of round ``round_index``: each contender goes first in turn."""
    k = round_index % len(names)
    return names[k:] + names[:k]


def tune_confirmed(call, tuners: list, env: Environment) -> dict:
    """Tune every autotuner that ``call`` uses, again and again (at most
    TUNINGS_MAX times) until a config has been chosen twice; keep that one.

    Returns {kernel: {"config", "tunings", "agreed"}}; {} when ``call`` uses
    no autotuner. Each tuning starts from an empty cache, so it really times
    every config again.
    """
    tunings: dict[str, list] = {}
    keys: dict[str, list] = {}
    for _ in range(TUNINGS_MAX):
        for _, tuner in tuners:
            tuner.cache.clear()
            tuner.best_config = None
        call()
        env.sync()
        for name, tuner in tuners:
            if tuner.best_config is not None:
                tunings.setdefault(name, []).append(dict(tuner.cache))
                keys[name] = list(tuner.cache)
        if all(_majority(t) is not None for t in tunings.values()):
            break
    out = {}
    for name, tuner in tuners:
        if name not in tunings:
            continue
        chosen = _majority(tunings[name]) or tunings[name][-1]
        tuner.cache.clear()
        tuner.cache.update(chosen)  # every timed call uses the kept choice
        out[name] = {
            "config": "; ".join(str(c) for c in chosen.values()),
            "tunings": ["; ".join(str(c) for c in t.values()) for t in tunings[name]],
            "agreed": len({_text(t) for t in tunings[name]}) == 1,
        }
    return out


def _text(cache: dict) -> str:
    return repr(sorted((repr(k), str(v)) for k, v in cache.items()))


def _majority(caches: list[dict]) -> dict | None:
    """The choice made at least twice, or None."""
    seen: dict[str, int] = {}
    for cache in caches:
        seen[_text(cache)] = seen.get(_text(cache), 0) + 1
        if seen[_text(cache)] >= 2:
            return cache
    return None


def _report(desc: dict) -> dict:
    name = desc["name"]
    try:
        return _jsonable(desc["report"](), f"{name}: report()")
    except RunnerError:
        raise
    except Exception as exc:
        raise RunnerError(f"{name}: report() failed: {exc!r}") from exc


def untimed_report(snippet: Path, name: str):
    """The report of benchmark ``name`` of ``snippet``, made outside the timed
    phase (its description says ``"report_untimed": True``)."""
    from triton_course.runner import discovery as D

    try:
        module = D.load_snippet(Path(snippet))
    except Exception as exc:
        raise RunnerError(f"report {name!r}: cannot load {snippet}: {exc!r}") from None
    descs = getattr(module, "BENCHMARKS", None) or [getattr(module, "BENCHMARK", {})]
    desc = next((d for d in descs if d.get("name") == name), None)
    if desc is None or not desc.get("report_untimed"):
        raise RunnerError(f"{snippet} has no benchmark {name!r} with an untimed report")
    return _report(desc)


def measure_benchmark(
    desc: dict,
    snippet_rel: str,
    snippet_sha: str,
    env: Environment,
    roofline: dict,
    untimed_report=None,
) -> dict:
    """Time every row of one description; a Triton failure raises RunnerError.
    ``untimed_report``: the report already made beside the tests, for a
    description whose report is untimed (it is never made here then)."""
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
    clocks = {"start": env.gpu_state()}
    tuners = env.autotuners()
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
            fns = {"Triton": partial(desc["triton"], *inputs)}
            for peer, fn in desc["peers"].items():
                fns[peer] = partial(fn, *inputs)
            if compiled is not None and "torch.compile" not in absent:
                fns["torch.compile"] = partial(compiled, *inputs)
            try:
                autotune = tune_confirmed(fns["Triton"], tuners, env)
            except Exception as exc:
                raise RunnerError(f"{where}: Triton failed: {exc!r}") from exc
            rounds = _interleaved_rounds(fns, work, env, where, absent)
            results = {p: summarise(r, work, metric) for p, r in rounds.items()}
            row = {"size": dict(size), "dtype": dtype_name, "work": work}
            row["results"] = results
            if autotune:
                row["autotune"] = autotune
                for kernel, tuned in autotune.items():
                    if not tuned["agreed"]:
                        log(f"{where}: {kernel}: tunings disagreed, kept the majority")
            rows.append(row)
            tri = results["Triton"]
            spread = (tri["q75_ms"] - tri["q25_ms"]) / 2 / tri["median_ms"]
            log(
                f"{where}: Triton {tri['median_ms']:.4g} ms ±{100 * spread:.1f} %, "
                f"{tri['rate']:.4g} {T.UNITS[metric]}"
            )
            del inputs, fns
        env.cleanup()
    clocks["end"] = env.gpu_state()
    notes = {}
    if absent:
        notes["absent"] = absent
    if desc.get("report_untimed"):
        if untimed_report is None:
            raise RunnerError(f"{name}: its untimed report was not made")
        notes["report"] = untimed_report
    elif "report" in desc:
        notes["report"] = _report(desc)
    # the probe as measured, never moved; the vendor's figure beside it
    key = roofline.get("ceiling") or desc.get("ceiling", metric)
    roofline = {**roofline, "vendor_peak": env.vendor_peaks.get(key)}
    record = {
        "title": desc["title"],
        "snippet": snippet_rel,
        "snippet_sha256": snippet_sha,
        "metric": metric,
        "unit": T.UNITS[metric],
        "params": list(desc["params"]),
        "peers": peers,
        "roofline": roofline,
        "provenance": dict(env.provenance),
        "timing": {"rounds": env.rounds, "method": TIMING_METHOD},
        "clocks": clocks,
        "rows": rows,
        "notes": notes,
        **({"plot": False} if desc.get("plot") is False else {}),
    }
    flag_rates(record, env.gpu, name)
    return record


TIMING_METHOD = (
    "interleaved rounds in rotating order; per round, the median GPU time of "
    "several calls, each behind an L2 flush and a GPU sleep that hides the "
    "launch path (CUDA events); wall_ms: back-to-back calls, launch included"
)


def _interleaved_rounds(fns: dict, work, env, where: str, absent: dict) -> dict:
    """{contender: [one timer result per round]}; a peer that fails in any
    round is recorded absent and left out of the row; Triton failing raises."""
    live = dict(fns)
    for peer, fn in list(live.items()):  # warm-up: compiles, fills caches
        try:
            fn()
            env.sync()
        except Exception as exc:  # noqa: BLE001 - recorded absent, not fatal
            if peer == "Triton":
                raise RunnerError(f"{where}: Triton failed: {exc!r}") from exc
            _drop(live, peer, exc, where, absent)
    rounds: dict[str, list] = {p: [] for p in live}
    for r in range(env.rounds):
        for peer in rotation(list(live), r):
            try:
                res = env.timer(live[peer], work)
                if not (res["gpu_ms"] > 0 and res["wall_ms"] > 0):
                    raise RuntimeError(f"timer returned non-positive times {res!r}")
            except Exception as exc:  # noqa: BLE001
                if peer == "Triton":
                    raise RunnerError(f"{where}: Triton failed: {exc!r}") from exc
                _drop(live, peer, exc, where, absent)
                continue
            rounds[peer].append(res)
    return {p: rounds[p] for p in live}


def _drop(live: dict, peer: str, exc: Exception, where: str, absent: dict) -> None:
    reason = f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:300]}"
    absent.setdefault(peer, reason)
    live.pop(peer, None)
    log(f"{where}: peer {peer!r} failed, recorded absent: {reason}")


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
