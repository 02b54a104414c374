"""The timing-data format: one JSON file per GPU, written only by the GPU runner.

Pure Python (json, hashlib): the MkDocs hooks import this module, and the docs
build must not need torch, triton or a GPU.

File ``data/timings/<gpu-slug>.json``::

    {
      "format_version": 2,
      "gpu": {"slug": "nvidia-h100-80gb-hbm3", "name": "NVIDIA H100 80GB HBM3",
              "sm_count": 132, "l2_bytes": 52428800, "memory_bytes": ...,
              "compute_capability": "9.0", "clock_mhz": 1980},
      "settle": {...},                     # optional: how the clocks were settled
      "benchmarks": {
        "<name>": {                        # one record set per benchmark
          "title": "Vector addition, out = x + y",
          "snippet": "snippets/vector_add.py",
          "snippet_sha256": "...",         # hash of the source that was measured
          "metric": "bandwidth",           # or "compute"
          "unit": "GB/s",                  # or "TFLOP/s"
          "params": ["n_elements"],        # names of the size parameters
          "peers": ["Triton", "PyTorch eager", "torch.compile"],
          "roofline": {"name": "copy bandwidth", "value": 3010.5, "unit": "GB/s",
                       "how": "...",      # the probe, measured in the same run
                       "ceiling": "bandwidth",   # or "compute", "l2"
                       "vendor_peak": {"value": 3350.0, "unit": "GB/s",
                                       "source": "NVIDIA H100 ... datasheet"}},
                                          # None where the vendor gives none
          "provenance": {"gpu": ..., "sm_count": ..., "driver": ..., "cuda": ...,
                         "torch": ..., "triton": ..., "python": ...,
                         "commit": ..., "date": "2026-11-21T12:00:00Z"},
          "timing": {"rounds": 7, "method": "..."},   # how every row was timed
          "clocks": {"start": {...}, "end": {...}},  # NVML: sm_mhz, temp_c, power_w
          "rows": [
            {"size": {"n_elements": 4096}, "dtype": "float32", "work": 49152,
             "results": {"Triton": {
                 "rounds_ms": [0.0041, 0.0040, ...],  # GPU time, one per round
                 "median_ms": 0.0041, "q25_ms": 0.0040, "q75_ms": 0.0042,
                 "wall_ms": 0.0120,     # a call's time launched back to back
                 "launch_hidden": true, # the GPU time excludes the launch path
                 "rate": 12.3,
                 "above_ceiling": {     # only where the rate is above a line
                     "vendor": false,   # above the vendor's spec-sheet peak
                     "probe_ratio": 1.11,  # rate / the roofline's probe
                     "why": "work model"}}, ...},  # see ABOVE_CEILING_WHY
             "autotune": {"<kernel>": {"config": "BLOCK: 1024, ...",
                                       "tunings": ["...", "..."],
                                       "agreed": true}}}   # optional
          ],
          "notes": {...}                   # optional, e.g. a report()
        }
      },
      "captures": {                        # optional: text only a GPU can make
        "<name>": {"snippet": "snippets/vector_add.py", "snippet_sha256": "...",
                   "kind": "text",         # or "ncu", "python"
                   "text": "...",          # shown verbatim as a code block
                   "provenance": {...}}    # the same keys as above
      }
    }

Every row is timed in several interleaved rounds (Triton, each peer and the
compiled peer, in an order that rotates from round to round). ``rounds_ms``
holds one GPU time per round, in the same round order for every peer of a
row, so a ratio can be taken round by round; ``median_ms`` and the quartiles
are over those rounds. ``rate`` = work / median_ms, in the unit.

``provenance`` may also hold ``"device": "cuda"``; when present it must say
exactly that (the GPU runner always writes it), so data from a CPU or
interpreter run can never pass validation.

A roofline is the probe the runner measured on this GPU in this run, never
moved by any contender's rate; files written before that rule may carry
``probe_value`` (the probe) beside a raised ``value`` and ``raised_by``:
``probe_of`` reads the probe from both. ``vendor_peak`` (absent in files from
before it was recorded: ``vendor_peaks.peak`` by GPU name stands in) is the
datasheet's figure for the same resource. A contender's rate above the vendor
peak, or more than ``ABOVE_PROBE_TOLERANCE`` above the probe, carries
``above_ceiling`` (``above_ceiling()`` decides it, for the runner and for the
pages alike).

An optional top-level ``dram_bytes`` is checked by ``triton_course.dram_bytes``.

Format 1 (one ``do_bench`` per row, no rounds) is refused with an error that
names the file and says to re-run the runner.

``work`` is bytes moved (bandwidth) or floating-point operations (compute).
Every number in it was measured on the GPU named in the file; nothing is
typed by hand.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

FORMAT_VERSION = 2
MIN_ROUNDS = 3  # fewer rounds cannot give a spread
UNITS = {"bandwidth": "GB/s", "compute": "TFLOP/s"}

_GPU_KEYS = ("slug", "name", "sm_count")
_BENCH_KEYS = (
    "title",
    "snippet",
    "snippet_sha256",
    "metric",
    "unit",
    "params",
    "peers",
    "roofline",
    "provenance",
    "rows",
)
PROVENANCE_KEYS = (
    "gpu",
    "sm_count",
    "driver",
    "cuda",
    "torch",
    "triton",
    "python",
    "commit",
    "date",
)
_RESULT_KEYS = ("median_ms", "q25_ms", "q75_ms", "wall_ms", "rate")
_BENCH_KEYS_V2 = ("timing", "clocks")
RERUN_HINT = (
    "re-run the GPU runner on this GPU (python -m triton_course.runner run) "
    "to write the current format"
)
_CAPTURE_KEYS = ("snippet", "snippet_sha256", "kind", "text", "provenance")


class TimingDataError(ValueError):
    """A timing-data file is missing, unreadable or does not follow the format."""


@dataclass(frozen=True)
class GpuTimings:
    """The parsed content of one GPU's data file."""

    path: Path
    gpu: dict
    benchmarks: dict
    captures: dict = None  # optional: name -> capture record
    dram_bytes: dict = None  # optional: the byte-model check (dram_bytes.py)

    @property
    def label(self) -> str:
        return self.gpu["name"]


def sha256_of(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _fail(path: Path, message: str):
    raise TimingDataError(f"{path}: {message}")


def validate(doc: object, path: Path) -> GpuTimings:
    """Check one parsed file against the format; raise TimingDataError if off."""
    if not isinstance(doc, dict):
        _fail(path, "top level must be a JSON object")
    version = doc.get("format_version")
    if version == 1:
        _fail(
            path,
            "format_version 1: single-round timings from before interleaved "
            "rounds, with no run-to-run spread, which nothing reads any more: "
            f"{RERUN_HINT}",
        )
    if version != FORMAT_VERSION:
        _fail(
            path,
            f"format_version is {version!r}, expected {FORMAT_VERSION}: {RERUN_HINT}",
        )
    gpu = doc.get("gpu")
    if not isinstance(gpu, dict) or any(k not in gpu for k in _GPU_KEYS):
        _fail(path, f"'gpu' must be an object with keys {list(_GPU_KEYS)}")
    if f"{gpu['slug']}.json" != Path(path).name:
        _fail(path, f"gpu.slug {gpu['slug']!r} does not match the file name")
    benchmarks = doc.get("benchmarks")
    if not isinstance(benchmarks, dict):
        _fail(path, "'benchmarks' must be an object")
    for name, bench in benchmarks.items():
        where = f"benchmark {name!r}"
        if not isinstance(bench, dict):
            _fail(path, f"{where} must be an object")
        missing = [k for k in _BENCH_KEYS + _BENCH_KEYS_V2 if k not in bench]
        if missing:
            _fail(path, f"{where} lacks {missing}: {RERUN_HINT}")
        if bench["metric"] not in UNITS or bench["unit"] != UNITS[bench["metric"]]:
            _fail(path, f"{where}: metric/unit must be one of {UNITS}")
        _validate_provenance(path, where, bench["provenance"])
        _validate_roofline(path, where, bench["roofline"])
        if not isinstance(bench["rows"], list) or not bench["rows"]:
            _fail(path, f"{where}: 'rows' must be a non-empty list")
        _validate_timing(path, where, bench)
        for i, row in enumerate(bench["rows"]):
            _validate_row(path, f"{where} row {i}", row, bench)
    captures = doc.get("captures", {})
    if not isinstance(captures, dict):
        _fail(path, "'captures' must be an object")
    for name, capture in captures.items():
        where = f"capture {name!r}"
        if not isinstance(capture, dict):
            _fail(path, f"{where} must be an object")
        missing = [k for k in _CAPTURE_KEYS if k not in capture]
        if missing:
            _fail(path, f"{where} lacks {missing}")
        if not isinstance(capture["text"], str):
            _fail(path, f"{where}: 'text' must be a string")
        _validate_provenance(path, where, capture["provenance"])
    if "dram_bytes" in doc:
        # its own module (issue #33): imported here, where it is needed
        from triton_course import dram_bytes

        try:
            dram_bytes.validate(doc["dram_bytes"], str(path))
        except ValueError as exc:  # its message names the file already
            raise TimingDataError(str(exc)) from None
    return GpuTimings(
        path=Path(path),
        gpu=gpu,
        benchmarks=benchmarks,
        captures=captures,
        dram_bytes=doc.get("dram_bytes"),
    )


def _validate_roofline(path, where, roof):
    if not isinstance(roof, dict) or not _is_number(roof.get("value")):
        _fail(path, f"{where}: roofline needs a numeric 'value'")
    if roof["value"] <= 0:
        _fail(path, f"{where}: roofline value must be positive")
    if "probe_value" in roof and not (
        _is_number(roof["probe_value"]) and roof["probe_value"] > 0
    ):
        _fail(path, f"{where}: roofline probe_value must be a positive number")
    if "vendor_peak" not in roof or roof["vendor_peak"] is None:
        return  # older data (the hooks look the GPU up), or no vendor figure
    peak = roof["vendor_peak"]
    if (
        not isinstance(peak, dict)
        or not _is_number(peak.get("value"))
        or peak["value"] <= 0
        or not isinstance(peak.get("source"), str)
        or not peak["source"].strip()
    ):
        _fail(
            path,
            f"{where}: roofline vendor_peak must be null or an object with a "
            "positive 'value' and the document it comes from in 'source'",
        )
    if peak.get("unit", roof.get("unit")) != roof.get("unit"):
        _fail(path, f"{where}: vendor_peak unit {peak['unit']!r} is not the roofline's")


def _validate_above(path, where, flag):
    if (
        not isinstance(flag, dict)
        or not isinstance(flag.get("vendor"), bool)
        or not _is_number(flag.get("probe_ratio"))
        or flag["probe_ratio"] <= 0
        or flag.get("why") not in ABOVE_CEILING_WHY
    ):
        _fail(
            path,
            f"{where}: above_ceiling must be {{vendor: bool, probe_ratio: "
            f"number, why: one of {sorted(ABOVE_CEILING_WHY)}}}",
        )


def _validate_timing(path, where, bench):
    timing, clocks = bench["timing"], bench["clocks"]
    if not isinstance(timing, dict) or not isinstance(timing.get("rounds"), int):
        _fail(path, f"{where}: 'timing' must be an object with an integer 'rounds'")
    if timing["rounds"] < MIN_ROUNDS:
        _fail(path, f"{where}: {timing['rounds']} round(s); at least {MIN_ROUNDS}")
    if not isinstance(clocks, dict) or not {"start", "end"} <= set(clocks):
        _fail(path, f"{where}: 'clocks' must have 'start' and 'end'")


def _validate_provenance(path, where, prov):
    if not isinstance(prov, dict):
        _fail(path, f"{where}: provenance must be an object")
    prov_missing = [k for k in PROVENANCE_KEYS if k not in prov]
    if prov_missing:
        _fail(path, f"{where}: provenance lacks {prov_missing}")
    if prov.get("device", "cuda") != "cuda":
        _fail(
            path,
            f"{where}: provenance.device is {prov['device']!r}; only numbers "
            "measured on a CUDA GPU may be published",
        )


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _validate_row(path, where, row, bench):
    if not isinstance(row, dict):
        _fail(path, f"{where} must be an object")
    size = row.get("size")
    if not isinstance(size, dict) or sorted(size) != sorted(bench["params"]):
        _fail(path, f"{where}: size must have exactly the keys {bench['params']}")
    if not isinstance(row.get("dtype"), str) or not _is_number(row.get("work")):
        _fail(path, f"{where}: needs 'dtype' (string) and 'work' (number)")
    results = row.get("results")
    if not isinstance(results, dict) or not results:
        _fail(path, f"{where}: 'results' must be a non-empty object")
    for peer, result in results.items():
        if peer not in bench["peers"]:
            _fail(path, f"{where}: result for unknown peer {peer!r}")
        if not isinstance(result, dict) or not all(
            _is_number(result.get(k)) for k in _RESULT_KEYS
        ):
            _fail(
                path,
                f"{where}, peer {peer!r}: needs numbers {list(_RESULT_KEYS)}: "
                f"{RERUN_HINT}",
            )
        rounds = result.get("rounds_ms")
        if (
            not isinstance(rounds, list)
            or len(rounds) != bench["timing"]["rounds"]
            or not all(_is_number(v) and v > 0 for v in rounds)
        ):
            _fail(
                path,
                f"{where}, peer {peer!r}: 'rounds_ms' must hold "
                f"{bench['timing']['rounds']} positive times, one per round",
            )
        if not result["q25_ms"] <= result["median_ms"] <= result["q75_ms"]:
            _fail(path, f"{where}, peer {peer!r}: needs q25 <= median <= q75")
        if "above_ceiling" in result:
            _validate_above(path, f"{where}, peer {peer!r}", result["above_ceiling"])
    if "autotune" in row:
        tuned = row["autotune"]
        if not isinstance(tuned, dict) or not all(
            isinstance(v, dict)
            and isinstance(v.get("config"), str)
            and isinstance(v.get("agreed"), bool)
            for v in tuned.values()
        ):
            _fail(path, f"{where}: 'autotune' maps kernel -> {{config, agreed}}")


def load_file(path: Path) -> GpuTimings:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TimingDataError(f"{path}: file not found") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TimingDataError(f"{path}: not valid JSON ({exc})") from None
    return validate(doc, path)


def load_dir(directory: Path) -> list[GpuTimings]:
    """Every GPU's data, sorted by GPU name. A missing directory is an error."""
    directory = Path(directory)
    if not directory.is_dir():
        raise TimingDataError(f"{directory}: timing-data directory not found")
    return sorted(
        (load_file(p) for p in sorted(directory.glob("*.json"))),
        key=lambda t: t.label,
    )


def load_for_site(config) -> list[GpuTimings]:
    """Every GPU's data for a MkDocs build: ``extra.timings_dir`` in
    mkdocs.yml (default ``data/timings``), relative to the config file.
    Shared by the hooks, so they all read the same files the same way."""
    extra = config.get("extra", {})
    # COURSE_TIMINGS_DIR builds the site against other data (a new run's, or
    # the tests' altered copies) without touching data/timings.
    configured = os.environ.get("COURSE_TIMINGS_DIR") or extra.get(
        "timings_dir", "data/timings"
    )
    return load_dir((Path(config["config_file_path"]).parent / configured).resolve())


# --------------------------------------------------------------- ceilings ---
# Shared by the runner (which records the flags) and the pages (which show
# them, and work them out for data written before the runner recorded them).
ABOVE_PROBE_TOLERANCE = 0.05  # a rate this far above the probe is flagged
# Why a rate can stand above a ceiling:
#   "cache": a bandwidth row whose bytes fit in the GPU's L2, so DRAM did not
#       serve them all;
#   "work model": the row's byte (or FLOP) count includes traffic (or work)
#       the contender does not do, e.g. a second pass that L2 serves;
#   "probe": nothing in the row's counts explains it: the probe is not this
#       GPU's peak (a row measured against the L2 ceiling, already in L2; a
#       FLOP rate above the matmul probe but not above the vendor's peak).
ABOVE_CEILING_WHY = ("cache", "work model", "probe")


def probe_of(roof: dict) -> float:
    """The roofline as measured by its probe in the run. Data written before
    rooflines stopped being raised keep the probe in ``probe_value``."""
    return roof.get("probe_value", roof["value"])


def vendor_peak_of(roof: dict, gpu_name: str) -> dict | None:
    """The roofline's vendor spec-sheet peak: as recorded, or (data from
    before the runner recorded it) looked up by GPU name; None where there is
    no vendor figure."""
    if "vendor_peak" in roof:
        return roof["vendor_peak"]
    from triton_course import vendor_peaks

    key = roof.get("ceiling") or (
        "bandwidth" if roof.get("unit") == "GB/s" else "compute"
    )
    return vendor_peaks.peak(gpu_name, key)


def above_ceiling(rate: float, bench: dict, row: dict, gpu: dict) -> dict | None:
    """The flag of one contender's rate in one row, or None when it stands
    below both lines: above the vendor peak, or more than
    ABOVE_PROBE_TOLERANCE above the probe. See ABOVE_CEILING_WHY."""
    roof = bench["roofline"]
    probe = probe_of(roof)
    peak = vendor_peak_of(roof, gpu.get("name", ""))
    vendor = peak is not None and rate > peak["value"]
    if not vendor and rate <= probe * (1 + ABOVE_PROBE_TOLERANCE):
        return None
    ceiling = roof.get("ceiling", bench["metric"])
    if bench["metric"] == "bandwidth" and ceiling != "l2":
        l2 = gpu.get("l2_bytes")
        why = "cache" if l2 and row["work"] <= l2 else "work model"
    elif bench["metric"] == "compute" and vendor:
        why = "work model"  # no kernel does more FLOPs than the tensor cores' peak
    else:
        why = "probe"
    return {"vendor": vendor, "probe_ratio": rate / probe, "why": why}


# ------------------------------------------------------------- statistics ---
# Shared by the pages (verdicts, claims) and ``runner compare``: one definition
# of a ratio's centre and spread.
MIN_REL_HALF_WIDTH = 0.03  # floor of a ratio's interval: the machine-to-machine
# spread that the rounds of one run cannot see (issue #13: cuBLAS alone moved
# by up to 15 % between two H100s; inside one run the rounds agree far closer)


def quantile(values: list[float], q: float) -> float:
    """Linear-interpolated quantile (numpy's default), pure Python."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("quantile of nothing")
    pos = (len(ordered) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


@dataclass(frozen=True)
class Spread:
    """A measured quantity: its median over rounds and an interval around it."""

    median: float
    low: float
    high: float

    @property
    def rel_half_width(self) -> float:
        return (self.high - self.low) / 2 / self.median if self.median else 0.0


def paired_ratio(row: dict, peer: str, base: str = "Triton") -> Spread | None:
    """``base``'s rate over ``peer``'s, round by round (each round timed both
    back to back), as a median with its interquartile interval, widened to at
    least ±MIN_REL_HALF_WIDTH. None if either result is absent."""
    results = row["results"]
    if base not in results or peer not in results:
        return None
    a, b = results[base], results[peer]
    ratios = [pb / pa for pa, pb in zip(a["rounds_ms"], b["rounds_ms"], strict=True)]
    return widened(
        quantile(ratios, 0.5), quantile(ratios, 0.25), quantile(ratios, 0.75)
    )


def spread_of(result: dict, scale: float = 1.0) -> Spread:
    """One result's time (or, with scale=work, its rate) over rounds."""
    return Spread(
        scale * result["median_ms"], scale * result["q25_ms"], scale * result["q75_ms"]
    )


def widened(median: float, low: float, high: float) -> Spread:
    """An interval of at least ±MIN_REL_HALF_WIDTH around the median."""
    floor = MIN_REL_HALF_WIDTH * median
    return Spread(median, min(low, median - floor), max(high, median + floor))


VERDICTS = ("met", "missed", "too close to call")


def verdict(spread: Spread, target: float) -> str:
    """Three-way: 'met', 'missed', or 'too close to call' when the interval
    holds the target."""
    if spread.low >= target:
        return "met"
    if spread.high < target:
        return "missed"
    return "too close to call"


def write_atomic(path: Path, doc: dict) -> None:
    """Validate, then replace ``path`` in one rename: readers never see half a file."""
    path = Path(path)
    validate(doc, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; keep files readable
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(doc, handle, indent=1, sort_keys=False)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def is_stale(bench: dict, repo_root: Path) -> bool:
    """True when the snippet that was measured has changed since (or is gone)."""
    snippet = Path(repo_root) / bench["snippet"]
    return not snippet.is_file() or sha256_of(snippet) != bench["snippet_sha256"]
