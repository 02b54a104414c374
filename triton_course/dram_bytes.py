"""The byte-model check: each memory-bound benchmark's model against DRAM counters.

A bandwidth benchmark's rate is its ``work`` (the bytes its model says one
call moves) over the time. If the model counts bytes the kernel does not
move (data that stays in L2 between passes, a read the compiler merged), the
rate and every "% of bandwidth" built on it are wrong. So the GPU runner
profiles one call of each contender of each bandwidth benchmark, at one size
whose working set exceeds the L2 cache, under Nsight Compute
(``dram__bytes_read.sum``, ``dram__bytes_write.sum``; driver in
``triton_course/runner/dram.py``), and stores model and counters side by side
under the data file's optional top-level key ``"dram_bytes"``::

    "dram_bytes": {
      "ncu_version": "2025.1.1.0",
      "command": "ncu --profile-from-start off ... --target <plan.json> ...",
      "tolerance": 0.1,                 # Triton's model may be this far off
      "l2_bytes": 52428800,             # the GPU's L2, from the data file's gpu
      "provenance": {...},              # the run's (commit, date, card, ...)
      "benchmarks": {
        "<name>": {
          "snippet": "snippets/vector_add.py", "snippet_sha256": "...",
          "size": {"n_elements": 268435456}, "dtype": "float32",
          "working_set_bytes": 3221225472,   # the model's bytes at that size
          "verdict": "within",          # Triton's: within / off / fits_l2
          "contenders": {
            "Triton": {"model_bytes": ..., "dram_read_bytes": ...,
                       "dram_write_bytes": ..., "kernels": ["add_kernel"]},
            "PyTorch eager": {...}, "torch.compile": {...}},
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
and nothing is judged.

Pure Python: ``triton_course/timings.py`` and the page hooks import it.
"""

from __future__ import annotations

TOLERANCE = 0.10  # the model may differ from DRAM's counters by this share
METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum")
# Triton's verdict, and how a page says it
VERDICTS = {
    "within": f"within {100 * TOLERANCE:.0f} %",
    "off": f"model off by more than {100 * TOLERANCE:.0f} %",
    "fits_l2": "not judged: the working set fits in L2",
}
_CONTENDER_KEYS = ("model_bytes", "dram_read_bytes", "dram_write_bytes", "kernels")
_BENCH_KEYS = (
    "snippet",
    "snippet_sha256",
    "size",
    "dtype",
    "working_set_bytes",
    "verdict",
    "contenders",
)
_TOP_KEYS = (
    "ncu_version",
    "command",
    "tolerance",
    "l2_bytes",
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
    if not _is_number(obj["l2_bytes"]) or obj["l2_bytes"] <= 0:
        fail(f"'l2_bytes' must be a positive number, got {obj['l2_bytes']!r}")
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
    size = bench["size"]
    if (
        not isinstance(size, dict)
        or not size
        or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in size.values()
        )
    ):
        fail(f"{where}: 'size' must map parameter names to integers")
    work = bench["working_set_bytes"]
    if not _is_number(work) or work <= 0:
        fail(f"{where}: 'working_set_bytes' must be a positive number")
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
