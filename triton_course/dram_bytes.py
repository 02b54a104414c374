"""The byte-model check: each memory-bound benchmark's model against DRAM counters.

A bandwidth benchmark's rate is its ``work`` (the bytes its model says one
call moves) over the time. If the model counts bytes the kernel does not
move (data that stays in L2 between passes, a read the compiler merged), the
rate and every "% of bandwidth" built on it are wrong. So the GPU runner
profiles one call of each contender of each bandwidth benchmark under Nsight
Compute (``dram__bytes_read.sum``, ``dram__bytes_write.sum``; driver in
``triton_course/runner/dram.py``), and stores model and counters side by side
under the data file's optional top-level key ``"dram_bytes"``.

The size profiled: the benchmark's largest working set, its scaled parameter
(the first of ``params``, or the one the description names under
``"dram_check_scale"``) doubled until the model's bytes are at least
``MIN_L2_MULTIPLE`` times the L2. Why: a kernel's last writes are still dirty
lines in L2 when it ends; they reach DRAM after it, where its counters do not
see them. That residue is up to one L2: at 2.6 L2s (134 MB on an H100) it
failed three correct models; at ``MIN_L2_MULTIPLE`` times the L2 it is at
most ``1 / MIN_L2_MULTIPLE`` of the model, half the tolerance. The
doubling stops below a model of ``MAX_MEMORY_SHARE`` of the GPU's memory
(``capped``)::

    "dram_bytes": {
      "ncu_version": "2025.3.1.0",
      "command": "ncu --profile-from-start off ... --target <plan.json> ...",
      "tolerance": 0.1,                 # Triton's model may be this far off
      "l2_bytes": 52428800,             # the GPU's L2, from the data file's gpu
      "min_l2_multiple": 20,            # the profiled working set's floor, in L2s
      "max_model_bytes": 21254373376,   # the memory cap on the scaled model
      "provenance": {...},              # the run's (commit, date, card, ...)
      "benchmarks": {
        "<name>": {
          "snippet": "snippets/gpu_basics.py", "snippet_sha256": "...",
          "benchmarked_size": {"n_elements": 16777216, "stride": 1},
          "scaled_param": "n_elements",
          "scale_factor": 8,            # 1: profiled at the benchmarked size
          "capped": false,              # true: the memory cap stopped the doubling
          "size": {"n_elements": 134217728, "stride": 1},   # the size profiled
          "dtype": "float32",
          "working_set_bytes": 1073741824,   # the model's bytes at that size
          "verdict": "within",          # Triton's: within / off / fits_l2
          "contenders": {
            "Triton": {"model_bytes": ..., "dram_read_bytes": ...,
                       "dram_write_bytes": ..., "kernels": ["strided_copy_kernel"]},
            "PyTorch eager": {..., "kernels": []}},   # none: a copy-engine copy
          "absent": {"<peer>": "why it could not be profiled"}   # optional
        }
      },
      "skipped": {"<name>": "why it was not profiled"}   # e.g. L2-resident
    }

Only Triton is judged: more than ``TOLERANCE`` off where the working set
exceeds L2 fails the run. The peers are shown beside it, not judged: the
model is the course's algorithm, which a peer's kernels need not follow
(Inductor's online softmax keeps part of a row in L2 between its passes).
Where the working set fits in L2 the counters see the cache, not the model,
and nothing is judged. A contender that launched no kernel (a
``cudaMemcpy``, run by the copy engine) has nothing Nsight Compute can
profile: it is shown as such (``NO_KERNEL``), never as a ratio.

Pure Python: ``triton_course/timings.py`` and the page hooks import it.
"""

from __future__ import annotations

TOLERANCE = 0.10  # the model may differ from DRAM's counters by this share
METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum")
# Lines still dirty in L2 when a kernel ends are written back after it, unseen
# by its counters: up to one L2 of writes. At a working set of 20 L2s that is
# at most 5 % of the model, half the tolerance (at 2.6 L2s: 3 false fails).
MIN_L2_MULTIPLE = 20
MAX_MEMORY_SHARE = 0.25  # the scaled model's bytes stay within this share
SCALE_KEY = "dram_check_scale"  # a description's parameter to scale, if not the first
NO_KERNEL = (
    "no kernel launched (a copy-engine transfer, which Nsight Compute does not profile)"
)
# Triton's verdict, and how a page says it
VERDICTS = {
    "within": f"within {100 * TOLERANCE:.0f} %",
    "off": f"model off by more than {100 * TOLERANCE:.0f} %",
    "fits_l2": "not judged: the working set fits in L2",
}
_CONTENDER_KEYS = ("model_bytes", "dram_read_bytes", "dram_write_bytes", "kernels")
# What the plan fixes for a benchmark; the record adds the verdict and what
# each contender moved.
PLAN_KEYS = (
    "snippet",
    "snippet_sha256",
    "benchmarked_size",
    "scaled_param",
    "scale_factor",
    "capped",
    "size",
    "dtype",
    "working_set_bytes",
)
_BENCH_KEYS = PLAN_KEYS + ("verdict", "contenders")
_TOP_KEYS = (
    "ncu_version",
    "command",
    "tolerance",
    "l2_bytes",
    "min_l2_multiple",
    "max_model_bytes",
    "provenance",
    "benchmarks",
    "skipped",
)


def measured_bytes(contender: dict) -> float:
    """DRAM bytes read plus written: what the model's count is compared with."""
    return contender["dram_read_bytes"] + contender["dram_write_bytes"]


def model_over_measured(contender: dict) -> float | None:
    """The model's bytes over the measured ones (None when nothing was measured)."""
    measured = measured_bytes(contender)
    return contender["model_bytes"] / measured if measured > 0 else None


def judge(
    model: float,
    measured: float,
    working_set: float,
    l2_bytes: float,
    tolerance: float = TOLERANCE,
) -> str:
    """Triton's verdict: ``fits_l2`` where the working set does not exceed L2
    (the counters then see the cache), else ``within`` or ``off``: the model
    more than ``tolerance`` of the measured bytes away from them."""
    if working_set <= l2_bytes:
        return "fits_l2"
    if measured <= 0 or abs(model - measured) > tolerance * measured:
        return "off"
    return "within"


def pick_size(works: list[float], l2_bytes: float) -> tuple[int, bool]:
    """(index of the size to profile, whether its working set exceeds L2).

    The largest working set: where it exceeds L2, outputs still dirty in L2
    when the kernel ends (never counted as DRAM writes) are the smallest
    share of it. Ties go to the size listed first.
    """
    if not works:
        raise ValueError("a benchmark without sizes")
    best = max(range(len(works)), key=lambda i: (works[i], -i))
    return best, works[best] > l2_bytes


def scale_size(
    size: dict, param: str, work, l2_bytes: float, memory_bytes: float
) -> tuple[dict, int, bool]:
    """(the size to profile, the factor ``param`` was multiplied by, capped).

    ``param`` of ``size`` doubles until ``work(size)`` is at least
    ``MIN_L2_MULTIPLE`` L2s (dirty L2 lines at kernel end then stay a small
    share of the model), unless the next doubling would take the model past
    ``MAX_MEMORY_SHARE`` of ``memory_bytes``: then the last size that fits is
    kept and ``capped`` is True. A size already that large is kept as is.
    """
    value = size.get(param)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"cannot scale {param!r}: the size {size} has no such count")
    target, cap = MIN_L2_MULTIPLE * l2_bytes, MAX_MEMORY_SHARE * memory_bytes
    current, factor, nbytes = dict(size), 1, work(size)
    while nbytes < target:
        bigger = {**current, param: current[param] * 2}
        more = work(bigger)
        if more <= nbytes:
            raise ValueError(
                f"doubling {param!r} does not grow the working set ({nbytes} "
                f"bytes at {current}): name the parameter to scale with "
                f"{SCALE_KEY!r}"
            )
        if more > cap:
            return current, factor, True
        current, factor, nbytes = bigger, factor * 2, more
    return current, factor, False


def residue_rule(multiple: float = MIN_L2_MULTIPLE) -> str:
    """Why the size profiled may be larger than any benchmarked: one sentence."""
    return (
        f"Each benchmark is profiled where its model's bytes are at least "
        f"{multiple:g} times the L2, its size parameter doubled from the largest "
        "size benchmarked where needed: lines a kernel wrote that are still "
        "dirty in L2 when it ends reach DRAM after it, unseen by its counters, "
        f"and at {multiple:g} L2s they are at most {100 / multiple:.0f} % of the "
        "model"
    )


def capped_note(bench: dict, l2_bytes: float) -> str:
    """What a benchmark stopped by the memory cap may lose to that residue."""
    share = 100 * l2_bytes / bench["working_set_bytes"]
    return (
        f"capped by the GPU's memory at {bench['working_set_bytes'] / 1e6:.1f} MB: "
        f"unflushed writes may reach {share:.0f} % of its model"
    )


def merge(old: dict | None, new: dict) -> dict:
    """A partial run's record (``--only``) merged into the stored one: the
    new run's header and benchmarks, the old benchmarks it did not profile."""
    if not old:
        return new
    merged = dict(new)
    merged["benchmarks"] = {
        **{k: v for k, v in old["benchmarks"].items() if k not in new["skipped"]},
        **new["benchmarks"],
    }
    merged["skipped"] = {
        **{k: v for k, v in old["skipped"].items() if k not in new["benchmarks"]},
        **new["skipped"],
    }
    return merged


# --------------------------------------------------------------- validate ---
def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def validate(obj: object, where: str) -> None:
    """Check a data file's ``"dram_bytes"`` value; raise ValueError if off."""

    def fail(message: str):
        raise ValueError(f"{where}: dram_bytes: {message}")

    if not isinstance(obj, dict):
        fail("must be an object")
    missing = [k for k in _TOP_KEYS if k not in obj]
    if missing:
        fail(f"lacks {missing}")
    for key in ("ncu_version", "command"):
        if not isinstance(obj[key], str) or not obj[key]:
            fail(f"{key!r} must be a non-empty string")
    if not _is_number(obj["tolerance"]) or not 0 < obj["tolerance"] < 1:
        fail(f"'tolerance' must be a share between 0 and 1, got {obj['tolerance']!r}")
    for key in ("l2_bytes", "min_l2_multiple", "max_model_bytes"):
        if not _is_number(obj[key]) or obj[key] <= 0:
            fail(f"{key!r} must be a positive number, got {obj[key]!r}")
    if not isinstance(obj["provenance"], dict) or "commit" not in obj["provenance"]:
        fail("'provenance' must be an object with the run's 'commit'")
    skipped = obj["skipped"]
    if not isinstance(skipped, dict) or not all(
        isinstance(v, str) and v for v in skipped.values()
    ):
        fail("'skipped' must map a benchmark name to why it was skipped")
    benches = obj["benchmarks"]
    if not isinstance(benches, dict):
        fail("'benchmarks' must be an object")
    both = sorted(set(benches) & set(skipped))
    if both:
        fail(f"{both} are both profiled and skipped")
    for name, bench in benches.items():
        _validate_bench(bench, f"benchmark {name!r}", obj, fail)


def _validate_bench(bench, where: str, obj: dict, fail) -> None:
    if not isinstance(bench, dict):
        fail(f"{where} must be an object")
    missing = [k for k in _BENCH_KEYS if k not in bench]
    if missing:
        fail(f"{where} lacks {missing}")
    for key in ("snippet", "snippet_sha256", "dtype"):
        if not isinstance(bench[key], str) or not bench[key]:
            fail(f"{where}: {key!r} must be a non-empty string")
    for key in ("size", "benchmarked_size"):
        size = bench[key]
        if (
            not isinstance(size, dict)
            or not size
            or not all(
                isinstance(v, int) and not isinstance(v, bool) for v in size.values()
            )
        ):
            fail(f"{where}: {key!r} must map parameter names to integers")
    work = bench["working_set_bytes"]
    if not _is_number(work) or work <= 0:
        fail(f"{where}: 'working_set_bytes' must be a positive number")
    _validate_scaling(bench, where, obj, fail)
    contenders = bench["contenders"]
    if not isinstance(contenders, dict) or "Triton" not in contenders:
        fail(f"{where}: 'contenders' must be an object holding 'Triton'")
    for who, c in contenders.items():
        at = f"{where}, {who!r}"
        if not isinstance(c, dict):
            fail(f"{at} must be an object")
        missing = [k for k in _CONTENDER_KEYS if k not in c]
        if missing:
            fail(f"{at} lacks {missing}")
        for key in _CONTENDER_KEYS[:3]:
            if not _is_number(c[key]) or c[key] < 0:
                fail(f"{at}: {key!r} must be a number of bytes, got {c[key]!r}")
        if not isinstance(c["kernels"], list) or not all(
            isinstance(k, str) for k in c["kernels"]
        ):
            fail(f"{at}: 'kernels' must be a list of kernel names")
    absent = bench.get("absent", {})
    if not isinstance(absent, dict) or set(absent) & set(contenders):
        fail(f"{where}: 'absent' must map contenders not profiled to why")
    if bench["verdict"] not in VERDICTS:
        fail(f"{where}: 'verdict' must be one of {list(VERDICTS)}")
    tri = contenders["Triton"]
    expected = judge(
        tri["model_bytes"], measured_bytes(tri), work, obj["l2_bytes"], obj["tolerance"]
    )
    if bench["verdict"] != expected:
        fail(
            f"{where}: verdict {bench['verdict']!r} does not follow from its "
            f"numbers ({expected!r})"
        )


def _validate_scaling(bench: dict, where: str, obj: dict, fail) -> None:
    """The size profiled is the benchmarked one with one parameter doubled
    ``log2(scale_factor)`` times, as far as the L2 rule asks or the cap allows."""
    param, factor = bench["scaled_param"], bench["scale_factor"]
    base, size = bench["benchmarked_size"], bench["size"]
    if not isinstance(param, str) or param not in base or sorted(base) != sorted(size):
        fail(f"{where}: 'scaled_param' must name a parameter of both sizes")
    if (
        isinstance(factor, bool)
        or not isinstance(factor, int)
        or factor < 1
        or factor & (factor - 1)
    ):
        fail(f"{where}: 'scale_factor' must be a power of two, got {factor!r}")
    if not isinstance(bench["capped"], bool):
        fail(f"{where}: 'capped' must be true or false")
    expected = {**base, param: base[param] * factor}
    if size != expected:
        fail(f"{where}: 'size' {size} is not 'benchmarked_size' scaled ({expected})")
    floor = obj["min_l2_multiple"] * obj["l2_bytes"]
    work = bench["working_set_bytes"]
    if bench["capped"] and work >= floor:
        fail(f"{where}: capped, but its working set already reaches {floor} bytes")
    if not bench["capped"] and work < floor:
        fail(
            f"{where}: a working set of {work} bytes, below "
            f"{obj['min_l2_multiple']:g} L2s, that is neither scaled up nor capped"
        )
    if factor > 1 and work > obj["max_model_bytes"]:
        fail(f"{where}: scaled past 'max_model_bytes'")
