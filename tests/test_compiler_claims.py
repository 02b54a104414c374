"""What Triton emits, compiled for real targets on the CPU (no GPU needed).

Each test backs a statement a page makes (issue #19), and the page links
here. ``triton_course/codegen.py`` compiles the small kernels of
``triton_course/codegen_probes.py`` in a process without the interpreter;
these tests assert what it found. A Triton upgrade that changes the
behaviour fails here instead of leaving a page false. Checked with triton
3.9 (CI); the GPU image's 3.6 runs the same module (``runner run``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import REPO_ROOT


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
    return _codegen()


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


def test_acc_times_alpha_plus_dot_compiles_to_the_same_ttgir_as_the_fold(facts):
    assert facts["acc_fold_same_ttgir"] is True


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


# ----------------------------------------------------- the per-GPU table ---
def test_the_committed_per_gpu_table_matches_a_fresh_compile():
    committed = json.loads((REPO_ROOT / "data" / "codegen.json").read_text())
    fresh = _codegen("table")
    if committed["triton"] != fresh["triton"]:
        pytest.fail(
            f"data/codegen.json was written with triton {committed['triton']}, "
            f"this is {fresh['triton']}: run python -m triton_course.codegen table "
            "> data/codegen.json"
        )
    assert committed == fresh


def test_the_codegen_command_refuses_the_interpreter():
    done = subprocess.run(
        [sys.executable, "-m", "triton_course.codegen"],
        cwd=REPO_ROOT,
        env=dict(os.environ, TRITON_INTERPRET="1"),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "unset TRITON_INTERPRET" in done.stderr
