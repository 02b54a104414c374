"""The vendor's spec-sheet peaks, per GPU: the second line beside each roofline.

Pure Python: the MkDocs hooks import this without torch. The runner measures
each roofline on the GPU in the run (a probe); this table holds what the
vendor's datasheet prints for the same resource, so that a page can show both
and a rate above either can be flagged (see ``timings.above_ceiling``).

Keyed by the GPU name torch reports (``torch.cuda.get_device_properties(0)
.name``, the data file's ``gpu.name``); per roofline key (``discovery
.CEILINGS``): ``bandwidth`` (DRAM, GB/s), ``compute`` (dense bf16/fp16 tensor
cores, TFLOP/s), ``compute_fp8`` (dense FP8 tensor cores, TFLOP/s: the FP8
GEMMs' ceiling) and ``l2`` (no vendor figure: None). The runner refuses a GPU
that has no entry: adding one (an A100, say) is one more item below, each
value copied from the named document.
"""

from __future__ import annotations

KEYS = ("bandwidth", "compute", "compute_fp8", "l2")
UNITS = {
    "bandwidth": "GB/s",
    "compute": "TFLOP/s",
    "compute_fp8": "TFLOP/s",
    "l2": "GB/s",
}

_H100_SHEET = "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM"
_H200_SHEET = "NVIDIA H200 Tensor Core GPU datasheet, H200 SXM"

PEAKS: dict[str, dict[str, dict | None]] = {
    "NVIDIA H100 80GB HBM3": {  # the SXM5 board (the PCIe one has HBM2e)
        "bandwidth": {
            "value": 3350.0,
            "source": f"{_H100_SHEET}: GPU memory bandwidth 3.35 TB/s",
        },
        "compute": {
            "value": 989.5,
            "source": (
                f"{_H100_SHEET}: BFLOAT16 and FP16 Tensor Core 1,979 teraFLOPS "
                "with sparsity; dense, the datasheet says, is half"
            ),
        },
        "compute_fp8": {
            "value": 1979.0,
            "source": (
                f"{_H100_SHEET}: FP8 Tensor Core 3,958 teraFLOPS with sparsity; "
                "dense, the datasheet says, is half"
            ),
        },
        "l2": None,
    },
    "NVIDIA H200": {
        "bandwidth": {
            "value": 4800.0,
            "source": f"{_H200_SHEET}: GPU memory bandwidth 4.8 TB/s",
        },
        "compute": {
            "value": 989.5,
            "source": (
                f"{_H200_SHEET}: BFLOAT16 and FP16 Tensor Core 1,979 TFLOPS "
                "with sparsity; dense, the datasheet says, is half"
            ),
        },
        "compute_fp8": {
            "value": 1979.0,
            "source": (
                f"{_H200_SHEET}: FP8 Tensor Core 3,958 TFLOPS with sparsity; "
                "dense, the datasheet says, is half"
            ),
        },
        "l2": None,
    },
}


class NoVendorPeak(LookupError):
    """A GPU the table has no entry for."""


def peaks_for(gpu_name: str) -> dict[str, dict | None]:
    """Every roofline key's peak for this GPU; NoVendorPeak if it has none."""
    if gpu_name not in PEAKS:
        raise NoVendorPeak(
            f"no vendor spec-sheet peaks for GPU {gpu_name!r}: add an entry for "
            "it to triton_course/vendor_peaks.py (PEAKS, keyed by the name torch "
            "reports), copying the datasheet's DRAM bandwidth and dense bf16 "
            f"tensor-core rate and naming the document; known: {sorted(PEAKS)}"
        )
    return PEAKS[gpu_name]


def peak(gpu_name: str, key: str) -> dict | None:
    """{"value", "unit", "source"} of one roofline key, or None where the vendor
    gives no figure (L2) or the GPU has no entry (data from before the runner
    required one)."""
    entry = PEAKS.get(gpu_name, {}).get(key)
    return None if entry is None else {**entry, "unit": UNITS[key]}
