"""The timing-data format: one JSON file per GPU, written only by the GPU runner.

Pure Python (json, hashlib): the MkDocs hooks import this module, and the docs
build must not need torch, triton or a GPU.

File ``data/timings/<gpu-slug>.json``::

    {
      "format_version": 1,
      "gpu": {"slug": "nvidia-h100-80gb-hbm3", "name": "NVIDIA H100 80GB HBM3",
              "sm_count": 132, "l2_bytes": 52428800, "memory_bytes": ...,
              "compute_capability": "9.0", "clock_mhz": 1980},
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
                       "how": "..."},      # measured in the same run
          "provenance": {"gpu": ..., "sm_count": ..., "driver": ..., "cuda": ...,
                         "torch": ..., "triton": ..., "python": ...,
                         "commit": ..., "date": "2026-11-21T12:00:00Z"},
          "rows": [
            {"size": {"n_elements": 4096}, "dtype": "float32", "work": 49152,
             "results": {"Triton": {"median_ms": 0.004, "p20_ms": 0.004,
                                    "p80_ms": 0.005, "rate": 12.3}, ...}}
          ],
          "notes": {...}                   # optional, e.g. autotuned configs
        }
      },
      "captures": {                        # optional: text only a GPU can make
        "<name>": {"snippet": "snippets/vector_add.py", "snippet_sha256": "...",
                   "kind": "text",         # or "ncu", "python"
                   "text": "...",          # shown verbatim as a code block
                   "provenance": {...}}    # the same keys as above
      }
    }

``provenance`` may also hold ``"device": "cuda"``; when present it must say
exactly that (the GPU runner always writes it), so data from a CPU or
interpreter run can never pass validation.

``work`` is bytes moved (bandwidth) or floating-point operations (compute);
``rate`` = work / median time, in the unit. Every number in it was measured
on the GPU named in the file; nothing is typed by hand.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

FORMAT_VERSION = 1
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
_RESULT_KEYS = ("median_ms", "p20_ms", "p80_ms", "rate")
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
    if doc.get("format_version") != FORMAT_VERSION:
        _fail(
            path,
            f"format_version is {doc.get('format_version')!r}, "
            f"expected {FORMAT_VERSION}",
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
        missing = [k for k in _BENCH_KEYS if k not in bench]
        if missing:
            _fail(path, f"{where} lacks {missing}")
        if bench["metric"] not in UNITS or bench["unit"] != UNITS[bench["metric"]]:
            _fail(path, f"{where}: metric/unit must be one of {UNITS}")
        _validate_provenance(path, where, bench["provenance"])
        roof = bench["roofline"]
        if not isinstance(roof, dict) or not _is_number(roof.get("value")):
            _fail(path, f"{where}: roofline needs a numeric 'value'")
        if not isinstance(bench["rows"], list) or not bench["rows"]:
            _fail(path, f"{where}: 'rows' must be a non-empty list")
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
    return GpuTimings(
        path=Path(path), gpu=gpu, benchmarks=benchmarks, captures=captures
    )


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
            _fail(path, f"{where}, peer {peer!r}: needs numbers {list(_RESULT_KEYS)}")


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
    configured = config.get("extra", {}).get("timings_dir", "data/timings")
    return load_dir((Path(config["config_file_path"]).parent / configured).resolve())


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
