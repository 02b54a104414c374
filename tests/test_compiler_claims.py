"""What Triton emits, compiled for real targets on the CPU (no GPU needed).

Each test backs a statement a page makes (issue #19), and the page links
here. ``triton_course/codegen.py`` compiles the small kernels of
``triton_course/codegen_probes.py`` in a process without the interpreter;
these tests assert what it found. A Triton upgrade that changes the
behaviour fails here instead of leaving a page false. Run with triton 3.9
(CI) and with the GPU image's 3.6 (the runner's test lane); a fact on which
they differ is asserted per version (``codegen.for_triton``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import triton
from conftest import REPO_ROOT, compile_in_subprocess, once_per_run

from triton_course.codegen import CHECKED_TRITONS, for_triton

# module fixtures computed once per run: see heavy_first in conftest.py
pytestmark = pytest.mark.shared_setup


def _codegen(*args: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run(
        [sys.executable, "-m", "triton_course.codegen", *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def facts():
    # one compile (a CPU-minute on a loaded machine) for all pytest-xdist
    # workers: the GPU runner spreads this module's tests over all of them
    return once_per_run("triton_course.codegen", _codegen)


# ------------------------------------------------- tl.dot per architecture ---
def test_dot_on_sm75_uses_no_tensor_core_instruction_only_fma(facts):
    # a 64×64×32 float16 tl.dot: 64·64·32 = 131 072 multiply-adds over 128
    # threads, one fma.rn.f32 each in the PTX's unrolled form
    assert facts["dot_fp16"]["75"].startswith("FMA on the CUDA cores")
    assert facts["dot_sm75_fma"] >= 1024


@pytest.mark.parametrize("arch", ["80", "86", "89"])
def test_dot_on_ampere_and_ada_is_mma_sync(facts, arch):
    assert facts["dot_fp16"][arch] == "mma.sync (tensor cores)"


def test_dot_on_sm90_is_wgmma(facts):
    assert facts["dot_fp16"]["90"].startswith("wgmma")


def test_dot_accepts_one_row_but_needs_k_of_16(facts):
    assert facts["dot_1x16x16_sm80"] == "mma.sync (tensor cores)"
    assert "M >= 1, N >= 1 and K >= 16" in facts["dot_k8_error"]


def test_a_transposed_dot_operand_is_a_shared_memory_view_on_sm90(facts):
    assert facts["dot_trans_sm90_memdesc_trans"] is True


@pytest.mark.parametrize("arch", ["80", "90"])
def test_a_transposed_dot_operand_costs_no_extra_shared_memory_traffic(facts, arch):
    # the transpose is folded into how the tile is staged in shared memory
    counts = facts["dot_trans_shared_memory_instructions"][arch]
    assert counts["dot_trans_kernel"] == counts["dot_kernel"] > 0


def test_acc_times_alpha_plus_dot_compiles_to_the_same_ttgir_as_the_fold(facts):
    assert facts["acc_fold_same_ttgir"] is True


@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp32", "fp8e5"])
def test_every_dot_type_but_fp8_e4m3_compiles_to_fma_on_sm75(facts, dtype):
    assert facts["dot_by_dtype"][dtype]["75"].startswith("FMA")


@pytest.mark.parametrize("arch", ["80", "86", "89"])
def test_bf16_and_tf32_dots_are_mma_sync_from_sm80(facts, arch):
    assert facts["dot_by_dtype"]["bf16"][arch] == "mma.sync on bf16 operands"
    assert facts["dot_by_dtype"]["fp32"][arch] == "mma.sync on tf32 operands"


@pytest.mark.parametrize("arch", ["80", "90"])
def test_an_ieee_fp32_dot_runs_on_the_cuda_cores(facts, arch):
    # lessons 01 and 02: input_precision="ieee" leaves the tensor cores
    assert facts["dot_fp32_ieee"][arch].startswith("FMA on the CUDA cores")


@pytest.mark.parametrize("arch", ["75", "80", "86"])
def test_fp8_e4m3_is_refused_before_sm89(facts, arch):
    assert facts["dot_by_dtype"]["fp8e4nv"][arch].startswith("refused")
    assert "fp8e4nv not supported" in facts["dot_by_dtype"]["fp8e4nv"][arch]


def test_fp8_runs_on_fp8_tensor_cores_from_sm89_and_e5m2_is_widened_before(facts):
    fp8 = facts["dot_by_dtype"]
    assert fp8["fp8e4nv"]["89"] == "mma.sync on e4m3 operands"
    assert fp8["fp8e4nv"]["90"] == "wgmma on e4m3 operands"
    assert fp8["fp8e5"]["80"] == "mma.sync on f16 operands"


def test_fp8_on_sm90_is_never_promoted_to_fp32_unless_asked(facts):
    # lesson 01: by default wgmma keeps the whole K sum in its own
    # accumulator; max_num_imprecise_acc=32 adds it into fp32 every 32 terms
    fp8 = facts["fp8_sm90"]
    assert fp8["default"]["max_num_imprecise_acc"] >= 2**30
    assert fp8["default"]["fp32_adds"] == 0
    assert fp8["promote_every_32"]["max_num_imprecise_acc"] == 32
    assert fp8["promote_every_32"]["fp32_adds"] > 0


# ---------------------------------------------------------- descriptors ---
@pytest.mark.parametrize("arch", ["75", "80", "86", "89"])
def test_tensor_descriptors_compile_before_hopper_as_plain_loads(facts, arch):
    assert facts["descriptor_tma"][arch] is False
    assert facts["descriptor_ld_global"][arch] is True


def test_tensor_descriptors_become_tma_on_sm90(facts):
    assert facts["descriptor_tma"]["90"] is True


# ------------------------------------------------------------- tl.exp ---
def test_exp_runs_on_the_special_function_unit(facts):
    assert facts["exp_ptx_ex2_approx"] is True
    assert facts["exp_sass_mufu_ex2"] in (True, None)  # None: no cuobjdump


# --------------------------------------------------------- pipelining ---
@pytest.mark.parametrize("arch", ["80", "90"])
def test_num_stages_changes_nothing_in_a_plain_range_loop(facts, arch):
    assert facts["plain_loop_same_ptx_for_stages_1_2_4"][arch] is True


def test_rowsum_v3_leaves_num_stages_out_because_it_changes_nothing(facts):
    # lesson 04: v2's plain range loop, compiled as one of v3's configs
    assert facts["rowsum_v2_same_ptx_for_stages_1_2_3"] is True


def test_tl_range_with_num_stages_does_pipeline_a_plain_loop(facts):
    copies = facts["tl_range_cp_async_by_stages"]
    assert copies["1"] == 0 and copies["2"] > 0 and copies["3"] > copies["2"]


def test_the_gemm_excerpt_is_compiled_as_a_real_launch_and_is_pipelined(facts):
    gemm = facts["gemm_excerpt"]
    assert gemm["unit_strides_constexpr_1"] is True
    assert gemm["cp_async"] > 0 and gemm["wgmma_wait_1"] is True


# ------------------------------------------------------------- layouts ---
def test_wide_loads_follow_whichever_axis_is_contiguous(facts):
    loads = facts["tile_v4_loads"]
    assert loads["axis 1 contiguous"] is True
    assert loads["axis 0 contiguous"] is True  # a column-major tile, still wide
    assert loads["no unit stride"] is False  # a stride it cannot prove is 1


def test_copy_2d_of_a_transposed_view_reads_wide_along_axis_0(facts):
    # lesson 03's rule and its Exercise 8: a transposed view keeps wide loads
    # (the stride 1 is specialised) and the tile is turned once on chip
    plain = facts["copy_2d"]["x"]
    assert plain["wide_loads"] > 0 and plain["scalar_loads"] == 0
    assert plain["convert_layout"] == 0
    seen = facts["copy_2d"]["x.t()"]
    assert seen["wide_loads"] > 0 and seen["scalar_loads"] == 0
    assert seen["convert_layout"] == 1


def test_the_tiled_transpose_turns_its_tile_once_through_shared_memory(facts):
    turned = facts["transpose_tiled"]
    assert turned["convert_layout"] == 1 and turned["shared_memory"] is True
    assert turned["wide_loads"] > 0 and turned["scalar_loads"] == 0


def test_softmax_loses_its_wide_loads_when_n_cols_is_not_a_multiple_of_16(facts):
    # the series softmax page's PTX excerpt, per thread at BLOCK_SIZE 4096
    wide, narrow = (
        facts["softmax_fp16_loads"]["4096"],
        facts["softmax_fp16_loads"]["3000"],
    )
    assert wide == {"ld.v4.b32": 2, "ld.b16": 0, "st.v4.b32": 2, "st.b16": 0}
    assert narrow == {"ld.v4.b32": 0, "ld.b16": 16, "st.v4.b32": 0, "st.b16": 16}


def test_copy_2d_of_a_view_with_no_unit_stride_loads_one_element_per_lane(facts):
    hidden = facts["copy_2d"]["x[:, ::2].t()"]
    assert hidden["wide_loads"] == 0 and hidden["scalar_loads"] > 0


# ----------------------------------------------------- the per-GPU table ---
def test_the_committed_per_gpu_table_matches_a_fresh_compile():
    # The table names the triton it was written with (CI's); another version
    # (the GPU image's) passes if it compiles every cell the same way.
    committed = json.loads((REPO_ROOT / "data" / "codegen.json").read_text())
    fresh = _codegen("table")
    written_with = committed.pop("triton")
    this = fresh.pop("triton")
    assert committed == fresh, (
        f"triton {this} compiles lesson 01's table differently from the "
        f"committed one (triton {written_with}): run python -m "
        "triton_course.codegen table > data/codegen.json, and name both "
        "versions on the page if they differ"
    )


def test_a_version_dependent_fact_names_a_value_for_each_checked_triton():
    k = {"3.6": 16, "3.9": 8}
    assert [for_triton(k, v) for v in ("3.6.0", "3.9.1")] == [16, 8]
    assert for_triton(k) == k[".".join(triton.__version__.split(".")[:2])]
    with pytest.raises(LookupError, match="3.7.0: this fact was checked with"):
        for_triton(k, "3.7.0")  # an unchecked version fails, never guesses
    with pytest.raises(ValueError, match="a value for each of"):
        for_triton({"3.9": 8})
    assert CHECKED_TRITONS == ("3.6", "3.9")


def test_the_codegen_command_refuses_the_interpreter():
    done = subprocess.run(
        [sys.executable, "-m", "triton_course.codegen"],
        cwd=REPO_ROOT,
        env=dict(os.environ, TRITON_INTERPRET="1"),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "unset TRITON_INTERPRET" in done.stderr


# ------------------------------------------- lesson 03: LayerNorm + Linear ---
def test_the_folded_kernel_feeds_tma_tiles_straight_to_the_tensor_cores(facts):
    # its fast loop is the TMA GEMM's: both wgmma operands in shared memory
    found = facts["layernorm_linear_sm90"]
    assert found["fold"]["tma_loads"] and found["tma_gemm"]["tma_loads"]
    assert found["fold"]["a_from_shared"] == found["tma_gemm"]["a_from_shared"] == 1


def test_the_prologue_kernel_feeds_its_dot_from_registers(facts):
    # normalising x in registers takes the A operand off the shared-memory path
    found = facts["layernorm_linear_sm90"]["prologue"]
    assert found["a_from_shared"] == 0 and found["a_from_registers"] >= 1
    assert not found["tma_loads"]


def test_the_folded_kernels_exact_path_costs_no_shared_memory(facts):
    # the exact loop (A from registers) lives beside the fast one, and the
    # kernel needs exactly the shared memory of the plain TMA GEMM
    found = facts["layernorm_linear_sm90"]
    assert found["fold"]["a_from_registers"] >= 1
    assert found["fold"]["shared_bytes"] == found["tma_gemm"]["shared_bytes"]


# ------------------------------------------- issue #28: 64-bit addressing ---
# Each kernel compiled for sm_90 as the launch that used to fault on an H100
# would compile it: a vector add of 2**31 + 4096 float16 elements (n_elements
# no longer fits int32, so it arrives as i64), a copy_2d / transpose of a
# 65536 x 32832 float16 matrix. (The GEMM keeps int32 offsets, for speed; its
# launcher refuses such sizes: tests/test_matmul.py.) The check reads the Triton
# IR: an index that grows with the program id must be widened to i64 before
# it is multiplied by BLOCK_SIZE or by a stride.
_WIDTH_SCRIPT = r"""
import json, sys
from pathlib import Path
from triton_course import codegen, excerpts

snippets = Path("snippets")
va = excerpts._load(snippets / "vector_add.py")
ma = excerpts._load(snippets / "memory_access.py")
ptrs = lambda *names: dict.fromkeys(names, "*fp16")
ints = lambda *names: dict.fromkeys(names, "i32")
const = lambda *names: dict.fromkeys(names, "constexpr")
unit = {"stride_xc": 1, "stride_oc": 1}
tile = {"BLOCK_R": 32, "BLOCK_C": 128}
launches = {
    "vector_add_kernel": (
        va.vector_add_kernel,
        ptrs("x_ptr", "y_ptr", "out_ptr") | {"n_elements": "i64"}
        | const("BLOCK_SIZE"),
        {"BLOCK_SIZE": 1024},
    ),
    "copy_tiles_kernel": (
        ma.copy_tiles_kernel,
        ptrs("x_ptr", "out_ptr") | ints("n_rows", "n_cols", "stride_xr")
        | const("stride_xc") | ints("stride_or") | const("stride_oc", *tile),
        unit | tile,
    ),
    "copy_columns_kernel": (
        ma.copy_columns_kernel,
        ptrs("x_ptr", "out_ptr") | ints("n_rows", "stride_xr")
        | const("stride_xc") | ints("stride_or") | const("stride_oc", "BLOCK_R"),
        unit | {"BLOCK_R": 256},
    ),
    "transpose_naive_kernel": (
        ma.transpose_naive_kernel,
        ptrs("x_ptr", "out_ptr") | ints("n_cols", "stride_xr", "stride_or")
        | const("BLOCK_C"),
        {"BLOCK_C": 1024},
    ),
    "transpose_tiled_kernel": (
        ma.transpose_tiled_kernel,
        ptrs("x_ptr", "out_ptr")
        | ints("n_rows", "n_cols", "stride_xr", "stride_or") | const(*tile),
        {"BLOCK_R": 64, "BLOCK_C": 64},
    ),
}
ttir = {}
for name, (kernel, sig, constexprs) in launches.items():
    pointers = [k for k in sig if k.endswith("_ptr")]
    ttir[name] = codegen.compile_for(kernel, 90, sig, constexprs, pointers)["ttir"]
json.dump(ttir, sys.stdout)
"""


@pytest.fixture(scope="module")
def big_launch_ttir():
    return compile_in_subprocess(_WIDTH_SCRIPT, timeout=300)


def _body(ttir: str) -> list[str]:
    """The kernel's operations, one a line, without debug locations."""
    lines = [ln.split(" loc(")[0].strip() for ln in ttir.splitlines()]
    return [ln for ln in lines if ln and not ln.startswith(("#", "module", "}"))][1:]


def _narrow_multiplies(ttir: str) -> list[str]:
    # an i32 product (scalar or tensor) is where an address could wrap round
    return [ln for ln in _body(ttir) if "arith.muli" in ln and re.search(r"i32>?$", ln)]


@pytest.mark.parametrize(
    "kernel",
    [
        "vector_add_kernel",
        "copy_tiles_kernel",
        "copy_columns_kernel",
        "transpose_naive_kernel",
        "transpose_tiled_kernel",
    ],
)
def test_element_kernels_compute_every_offset_in_int64(big_launch_ttir, kernel):
    # offsets widened once (program id or index range), then only i64 products,
    # and every pointer step feeding a tl.load / tl.store is an i64 offset
    ttir = big_launch_ttir[kernel]
    assert re.search(r"arith\.extsi %\w+ : i32 to i64", ttir)
    assert _narrow_multiplies(ttir) == []
    steps = [ln for ln in _body(ttir) if "tt.addptr" in ln]
    assert steps
    for step in steps:
        assert re.search(r"(\bi64|xi64>)$", step), step
