"""Wrong attempts that the independent reviews of 2026-11-26 (issue #36) and
2026-11-27 wrote: each passed its exercise's checker then; each must fail it
now, with words that tell the learner what is wrong. The attempts are whole
files, as a learner would write them, in tests/fixtures/exercise_attempts/.

The solutions still passing is tests/test_exercises.py::test_solution_passes.
"""

from pathlib import Path

import pytest

from triton_course.exercises import registry
from triton_course.exercises._check import check

ATTEMPTS = Path(__file__).parent / "fixtures" / "exercise_attempts"


# small checker tensors: one PyTorch thread (conftest.one_torch_thread)
pytestmark = pytest.mark.usefixtures("one_torch_thread")


# id (= file name: <exercise>-<attempt>.py) -> words the report must contain
REFUSED = {
    # rows longer than 2048 keep their end unwritten (NaN from the checker)
    "softmax_temperature-fixed_block": [
        "FAIL shape=(2, 20000) T=1.0 float32",
        "are NaN where the reference is not (first at index (0, 2048))",
        "hint: only the rows of 20000 columns failed",
    ],
    # review 2026-11-27 (ser2-04): a block fixed at 8192 passed the old
    # 5000-column rows
    "softmax_temperature-block_8192": [
        "FAIL shape=(2, 20000) T=1.0 float32",
        "are NaN where the reference is not (first at index (0, 8192))",
        "hint: only the rows of 20000 columns failed",
    ],
    # ser2-05: no max shift: the overflow case fails alone, with its hint
    "softmax_temperature-no_max_shift": [
        "FAIL shape=(3, 300) T=0.1 scale=30.0 float32",
        "ok   shape=(2, 20000) T=1.0 float32",
        "hint: only the rows with large x / T failed",
    ],
    # ser2-06: the softmax in PyTorch, copied by a kernel; x / T in PyTorch
    "softmax_temperature-torch_copy": [
        "FAIL shape=(3, 7) T=0.5 float32\n       - your kernels read 21 "
        "elements of memory that is neither x nor written by them",
        "hint: pass x itself to the kernel",
    ],
    "softmax_temperature-scaled_in_pytorch": [
        "FAIL shape=(1, 1) T=1.0 float32\n       - 1 of 1 elements of x were "
        "never loaded by your kernels",
        "FAIL shape=(3, 7) T=0.5 float32\n       - your kernels read 21 "
        "elements of memory that is neither x",
    ],
    # ser2-09: results kept by shape: the second call gets a stale tensor
    "softmax_temperature-cached_by_shape": [
        "ok   shape=(5, 1000) T=2.0 float32",
        "FAIL shape=(5, 1000) T=2.0 again=True float32",
        "hint: only the second call with a shape already seen failed",
    ],
    # 33 rows, 5 columns: rows 5..32 never computed
    "softmax_temperature-grid_by_cols": [
        "FAIL shape=(33, 5) T=1.0 float32",
        "140 of 165 elements are NaN where the reference is not "
        "(first at index (5, 0))",
        "a grid of (n_rows,)",
    ],
    # the row's maximum (200) in its last element: exp overflows
    "online_logsumexp-no_rescale": [
        "FAIL shape=(2, 40000) late_max=True float32",
        "(got inf, expected 200)",
        "multiply the running sum by exp(m_old - m_new)",
    ],
    # review 2026-11-27 (ser2-07): torch.logsumexp copied by a kernel; a
    # second pass over a PyTorch clone of x
    "online_logsumexp-torch_copy": [
        "FAIL shape=(1, 1) float32\n       - 1 of 1 elements of x were never "
        "loaded by your kernels",
        "hint: launch your kernel on x itself",
    ],
    "online_logsumexp-second_pass_on_clone": [
        "FAIL shape=(3, 7) float32\n       - your kernels read 21 elements of "
        "memory that is neither x nor written by them",
        "hint: pass x itself to the kernel and read each row of it once",
    ],
    # ser2-08: a tile of next_power_of_2(n_cols) // 2 grows with the row
    "online_logsumexp-growing_tile": [
        "FAIL shape=(2, 40000) late_max=True float32\n       - a tl.load of "
        "32768 lanes for the rows of 40000, larger than any tile of the "
        "shorter rows (8192 lanes at most)",
    ],
    # ser2-09: results kept by shape
    "online_logsumexp-cached_by_shape": [
        "ok   shape=(4, 5000) float32",
        "FAIL shape=(4, 5000) again=True float32",
        "hint: only the second call with a shape already seen failed",
    ],
    # seen twice: the dot's float16 accumulator, and the values of the case
    # whose bias cancels 2048 (the rest lost at float16's step there)
    "matmul_bias_relu-fp16_accumulator": [
        "FAIL M=8 N=16 K=128 cancel=True float16\n       - ",
        "of 128 elements differ: max abs error",
        "tl.dot accumulated in float16 (its acc argument, or its out_dtype, "
        "was float16)",
        "ok   M=100 N=70 K=130 float32",  # float32 inputs: a float32 sum
    ],
    # answers from add.__closure__ after one launch that shows nothing
    "catch_missing_mask-closure_introspection": [
        "FAIL a vector_add whose tl.store has no mask",
        "in none of your 1 call(s) of add did it write past the end of the out "
        "you gave it",
        "ok   the course's vector_add (correct)",
    ],
    # review 2026-11-27 (ser1): a fixed grid of 5 programs of 1024, and one
    # program of 8192: the tail of the largest case is never written
    "axpy-grid_hardcoded": [
        "FAIL n=65539 a=0.75 float32",
        "are NaN where the reference is not (first at index 5120)",
        "hint: only the largest n failed",
    ],
    "axpy-one_program": [
        "FAIL n=65539 a=0.75 float32",
        "are NaN where the reference is not (first at index 8192)",
    ],
    # a as two constexprs, its exact ratio: recompiled for every a
    "axpy-constexpr_ratio": [
        "FAIL n=1000 a=-1.75 float32",
        "axpy_kernel's tl.constexpr arguments (A_NUM) changed when only a changed",
    ],
    # a result kept by (shape, dtype, a), returned again for new data
    "axpy-cache": [
        "ok   n=1000 a=3.25 float32",
        "FAIL n=1000 a=3.25 float32\n       - no Triton kernel defined in your "
        "file was launched",
    ],
    # the answer computed in PyTorch, copied into out by a Triton kernel
    "axpy-torch_then_copy": [
        "FAIL n=1 a=2.0 float32",
        "your kernels read 1 element(s) of memory that is neither x nor y",
    ],
    # a fixed 4 x 4 grid of 32 x 32 tiles, and one 128 x 128 tile
    "matmul_bias_relu-grid_hardcoded": [
        "FAIL M=130 N=136 K=16 float32",
        "are NaN where the reference is not (first at index (0, 128))",
        "hint: only the largest C failed",
    ],
    "matmul_bias_relu-one_program": [
        "FAIL M=130 N=136 K=16 float16",
        "are NaN where the reference is not (first at index (0, 128))",
    ],
    # a result kept by the inputs' shapes, returned again for new data
    "matmul_bias_relu-cache": [
        "FAIL M=9 N=10 K=11 strided=(1,) float32\n       - no Triton kernel "
        "defined in your file was launched",
    ],
    # not fused: a float32 scratch product, then a second kernel (it crashed
    # the checker once: two element sizes stored in one call)
    "matmul_bias_relu-unfused": [
        "FAIL M=1 N=1 K=1 float32\n       - your kernels stored 1 element(s) "
        "outside the result",
        "26 of 28 cases failed.",
    ],
    # calls add on a ragged n, but answers from the names in add.__closure__
    "catch_missing_mask-closure_names": [
        "ok   a vector_add whose tl.store has no mask",
        "FAIL the unmasked kernel run on a scratch of whole blocks",
        "returned True, but this one stays inside out",
    ],
    # lesson 01's transpose (issue #36): right values everywhere, but a
    # store per lane into its own 32-byte sector
    "transpose-strided_store": [
        "ok   shape=(21, 40) padded=True float16",
        "FAIL shape=(64, 96) float32\n       - a tl.store of transpose_kernel "
        "asked for 384 bytes (96 elements) but touched 96 32-byte sectors",
        "only 12 % of what the memory moves is used",
        "hint: give each program a (BLOCK_M, BLOCK_N) tile",
    ],
    # the same with the loads walking down a column of x
    "transpose-strided_load": [
        "FAIL shape=(64, 96) float16\n       - a tl.load of transpose_kernel "
        "asked for 128 bytes (64 elements) but touched 64 32-byte sectors",
    ],
    "transpose-missing_mask": [
        "FAIL shape=(1, 1) float32",
        "a store of 1023 element(s) past the end of the output made by "
        "torch.empty on line 34",
    ],
    # out's row length 64 where it is n_rows
    "transpose-hard_coded_rows": [
        "FAIL shape=(3, 7) float32",
        "a store of 18 element(s) past the end of the output",
    ],
    "transpose-grid_wrong_dim": [
        "FAIL shape=(40, 3) float32\n       - 24 of 120 elements are NaN where "
        "the reference is not (first at index (0, 32))",
    ],
    "transpose-float32_output": [
        "FAIL shape=(1, 1) float16\n       - result has dtype torch.float32, "
        "expected torch.float16",
    ],
    "transpose-copy_then_view": [
        "FAIL shape=(3, 7) float32\n       - the result has strides (1, 7): "
        "return a contiguous (7, 3) tensor",
    ],
    "transpose-no_triton": [
        "no Triton kernel defined in your file was launched",
    ],
    "transpose-pytorch_copy": [
        "element (0, 0) of x was never loaded by your kernel",
        "hint: pass x itself to the kernel",
    ],
    # review 2026-11-27 of 01-coalescing-occupancy, finding 1: lanes a row of
    # x apart, while each load as a whole covers whole sectors
    "transpose-flat_lane_order": [
        "ok   shape=(21, 40) padded=True float16",
        "FAIL shape=(64, 96) float32\n       - a tl.load of k, taken 32 lanes "
        "(a warp) at a time, asks for 128 bytes",
        "touches 32 32-byte sectors (1024 bytes): only 12 %",
    ],
    # finding 2: x copied by a kernel, transposed by PyTorch, copied again
    "transpose-torch_transpose_between_copies": [
        "FAIL shape=(1, 1) float32\n       - element (0, 0) of x was never "
        "loaded by your kernel (by the launch that writes the result)",
        "the kernel that writes the result read 6144 element(s) of memory that "
        "is not x",
        "hint: pass x itself to the kernel",
    ],
    # lesson 03's silu_mul (issue #36): a backward right for a dense dy only
    "silu_mul-bwd_noncontiguous_dy": [
        "ok   shape=(40, 33) bfloat16",
        "FAIL shape=(6, 35) dy=expanded float32\n       - the backward: "
        "_silu_mul_bwd_kernel (line 37): a load of 209 element(s) past the end "
        "of dy",
        "FAIL shape=(21, 10) dy=strided float32\n       - the backward (da): ",
        "FAIL shape=(9, 13) dy=transposed float16\n       - the backward (da): ",
        "hint: only the cases where autograd's dy is not a dense tensor failed",
    ],
    # a backward right only when the size is a multiple of its block
    "silu_mul-bwd_floor_grid": [
        "FAIL shape=(1,) float32\n       - the backward (da): 1 of 1 elements "
        "are NaN where the reference is not",
    ],
    "silu_mul-missing_mask": [
        "FAIL shape=(1,) float32\n       - the forward: _silu_mul_fwd_kernel "
        "(line 19): a load of 1023 element(s) past the end of a",
    ],
    "silu_mul-hard_coded_size": [
        "ok   shape=(2, 3, 5) float32",
        "FAIL shape=(40, 33) float32\n       - the forward (y): 296 of 1320 "
        "elements are NaN",
    ],
    "silu_mul-grid_wrong_dim": [
        "FAIL shape=(40, 33) float32\n       - the forward (y): 296 of 1320 "
        "elements are NaN",
    ],
    # float16 products: within the tolerance on ordinary values, inf where
    # dy * b passes 65504
    "silu_mul-fp16_compute": [
        "ok   shape=(40, 33) float16",
        "FAIL shape=(50,) large=True float16\n       - the backward (da): ",
    ],
    "silu_mul-float64_in_float32": [
        "ok   shape=(50,) large=True float16",
        "FAIL shape=(3, 5) float64\n       - the forward (y): ",
        "elements differ: max abs error",
        "hint: float64 must stay float64",
    ],
    "silu_mul-float32_grads": [
        "ok   shape=(1,) float32",
        "FAIL shape=(1,) float16\n       - the backward (da): 1 of 1 elements of "
        "the returned tensor were never written by a tl.store of your kernel",
        "hint: return the tensors your kernels stored into, in the inputs' dtype",
    ],
    "silu_mul-no_triton": [
        "FAIL shape=(1,) float32\n       - the forward (y): no Triton kernel "
        "defined in your file was launched",
    ],
    "silu_mul-no_autograd": [
        "y has no grad_fn: autograd cannot differentiate it",
    ],
    # review 2026-11-27 l03-17: the result of an earlier call, kept per
    # (shape, dtype), handed back when the shape comes again with new values
    "silu_mul-cache_between_calls": [
        "ok   shape=(40, 33) float32",
        "FAIL shape=(40, 33) call=again float32\n       - the forward (y): ",
    ],
    "silu_mul-torch_backward": [
        "FAIL shape=(1,) float32\n       - the backward (da): no Triton kernel "
        "defined in your file was launched",
    ],
    # lesson 02's sliding-window attention (issue #36)
    "sliding_window_attention-missing_mask": [
        "FAIL shape=(2, 2, 9, 16) window=4 strided=(0,) float32\n       - "
        "swa_fwd_kernel (line 72): a store of 112 element(s) past the end of "
        "the output made by torch.empty",
    ],
    # one program of 64 queries per head: queries 64..69 never computed
    "sliding_window_attention-hard_coded_size": [
        "ok   shape=(1, 3, 37, 32) window=100 float16",
        "FAIL shape=(1, 1, 70, 64) window=20 float32\n       - 384 of 4480 "
        "elements are NaN where the reference is not (first at index "
        "(0, 0, 64, 0))",
    ],
    "sliding_window_attention-grid_wrong_dim": [
        "FAIL shape=(2, 2, 9, 16) window=4 strided=(0,) float32\n       - 288 "
        "of 576 elements are NaN where the reference is not (first at index "
        "(1, 0, 0, 0))",
    ],
    "sliding_window_attention-float32_output": [
        "ok   shape=(2, 2, 9, 16) window=4 strided=(0,) float32",
        "result has dtype torch.float32, expected torch.float16",
    ],
    "sliding_window_attention-no_rescale": [
        "ok   shape=(1, 1, 1, 16) window=1 float32",
        "ok   shape=(1, 2, 7, 16) window=3 float16",  # one tile: no rescale
        "FAIL shape=(2, 1, 40, 16) window=5 float32\n       - ",
    ],
    "sliding_window_attention-causal_only": [
        "FAIL shape=(2, 2, 9, 16) window=4 strided=(0,) float32\n       - "
        "320 of 576 elements differ",
    ],
    "sliding_window_attention-window_off_by_one": [
        "FAIL shape=(2, 2, 9, 16) window=4 strided=(0,) float32\n       - ",
        "elements differ: max abs error",
    ],
    "sliding_window_attention-no_max": [
        "ok   shape=(1, 1, 70, 64) window=20 float32",
        "FAIL shape=(1, 1, 45, 16) window=30 scale=8.0 float32\n       - ",
        "hint: scores reach about 200 here",
    ],
    "sliding_window_attention-no_triton": [
        "no Triton kernel defined in your file was launched",
    ],
    # lesson 04's column sums (review 2026-11-27 mod-03): a program per column
    # loading one value per row, each from its own 32-byte sector
    "colsum-column_scalar_loads": [
        "FAIL shape=(3, 7) float32\n       - the tl.loads of colsum_kernel read "
        "21 values of x in 21 reads of 32-byte sectors, one per value",
        "hint: v2 of the page loads a (BLOCK_M, BLOCK_N) tile",
    ],
    # mod-04: the row loop hard-coded to 1024 rows
    "colsum-hard_coded_rows": [
        "ok   shape=(3, 7) new_values=True bfloat16",
        "FAIL shape=(2053, 5) float32\n       - 5 of 5 elements differ",
    ],
    # mod-05: results kept by shape and dtype, returned for a new x
    "colsum-cache_by_shape": [
        "FAIL shape=(3, 7) new_values=True float32",
        "7 of 7 elements differ",
    ],
    # lesson 04's rmsnorm (issue #36): fast kernels that are wrong, or not
    # kernels at all
    "rmsnorm-store_without_mask": [
        "FAIL shape=(3, 7) float32\n       - rmsnorm_kernel (line 19): a store "
        "of 1 element(s) past the end of the output made by torch.empty",
    ],
    "rmsnorm-torch_only": [
        "FAIL shape=(1, 1) float32\n       - no Triton kernel defined in your "
        "file was launched",
    ],
    "rmsnorm-torch_rms_then_kernel": [
        "FAIL shape=(1, 1) float32\n       - your kernels read 1 element(s) of "
        "memory that is neither x nor w nor written by them",
    ],
    # right on ordinary values; in float16 the squares of 300 overflow (in
    # bfloat16 the interpreter's arithmetic fails it earlier)
    "rmsnorm-fp16_squares": [
        "ok   shape=(40, 5) float16",
        "ok   shape=(3, 50) scale=300.0 float32",
        "FAIL shape=(3, 50) scale=300.0 float16\n       - ",
    ],
    # 1 / (rms + eps): only the case where eps matters fails, with its hint
    "rmsnorm-eps_outside_root": [
        "ok   shape=(40, 5) bfloat16",
        "FAIL shape=(3, 60) eps=1.0 scale=0.1 float32\n       - ",
        "elements differ: max abs error",
        "hint: eps goes inside the square root",
    ],
    # wide loads, but a program per element: each row read n_cols + 1 times
    "rmsnorm-program_per_element": [
        "FAIL shape=(3, 7) float32\n       - element (0, 0) of x was loaded 8 "
        "times: the starter reads each element 2 times",
    ],
    # review 2026-11-27 (04-worked-optimisation): a row walked a column at a
    # time, each load spanning 32 rows, w loaded as a 32-lane broadcast
    "rmsnorm-rows_walk_broadcast_w": [
        "FAIL shape=(3, 7) float32\n       - correct but slow: a tl.load of "
        "rmsnorm_kernel read a block of 1 lane(s) (4-byte elements) from a row "
        "of 7, its lanes spread over 3 rows",
    ],
    # one block of 4096 columns, no loop over the row
    "rmsnorm-single_block_4096": [
        "ok   shape=(7, 45) padded=True float32",
        "FAIL shape=(1, 8200) float32\n       - 4104 of 8200 elements are NaN "
        "where the reference is not (first at index (0, 4096))",
    ],
    # review 2026-11-27 (02-mixed-precision no. 9): q, k, v copied with
    # .contiguous() in the launcher
    "sliding_window_attention-contiguous_copy": [
        "FAIL shape=(2, 2, 9, 16) window=4 strided=(0,) float32\n       - your "
        "kernels read 576 element(s) of memory that is neither q, k, v nor "
        "written by them",
    ],
    # (no. 11): a first loop for the maximum, a second for the sums
    "sliding_window_attention-two_passes": [
        "FAIL shape=(2, 2, 9, 16) window=4 strided=(0,) float32\n       - your "
        "kernels loaded 1152 elements of k but only 576 of v: a second pass "
        "over the keys",
    ],
    # (no. 12): the running sum rounded to float16 after each tile
    "sliding_window_attention-float16_running_sum": [
        "ok   shape=(1, 1, 45, 16) window=30 scale=8.0 float16",
        "FAIL shape=(1, 1, 512, 16) window=512 dominant=True float16\n       - ",
        "hint: one key scores far above the rest",
    ],
    # a program per column behind a 32-wide tile masked to its own column
    "colsum-masked_to_one_column": [
        "FAIL shape=(5, 300) float32\n       - the tl.loads of colsum_kernel read "
        "1500 values of x in 1500 reads of 32-byte sectors, one per value",
    ],
}


# Attempts whose words all come by their first failing case: checked up to
# it only (the interpreter's attention cases are slow; CI's time is short).
UP_TO_FIRST_FAILURE = {
    "sliding_window_attention-missing_mask",
    "sliding_window_attention-hard_coded_size",
    "sliding_window_attention-grid_wrong_dim",
    "sliding_window_attention-float32_output",
    "sliding_window_attention-no_rescale",
    "sliding_window_attention-causal_only",
    "sliding_window_attention-window_off_by_one",
    "sliding_window_attention-no_triton",
    "colsum-column_scalar_loads",  # a program per column: slow to interpret
    "colsum-hard_coded_rows",
    "colsum-cache_by_shape",
    "rmsnorm-store_without_mask",
    "rmsnorm-torch_only",
    "rmsnorm-torch_rms_then_kernel",
    "rmsnorm-program_per_element",
    "rmsnorm-eps_outside_root",
    "rmsnorm-rows_walk_broadcast_w",
    "rmsnorm-single_block_4096",
    "colsum-masked_to_one_column",
    "sliding_window_attention-contiguous_copy",
    "sliding_window_attention-two_passes",
    # the same rule: no "only:" hint among the words (it needs every failure)
    "axpy-cache",
    "axpy-constexpr_ratio",
    "axpy-one_program",
    "axpy-torch_then_copy",
    "catch_missing_mask-closure_names",
    "matmul_bias_relu-cache",
    "online_logsumexp-growing_tile",
    "online_logsumexp-no_rescale",
    "online_logsumexp-second_pass_on_clone",
    "online_logsumexp-torch_copy",
    "silu_mul-bwd_floor_grid",
    "silu_mul-cache_between_calls",
    "silu_mul-float32_grads",
    "silu_mul-grid_wrong_dim",
    "silu_mul-missing_mask",
    "silu_mul-no_autograd",
    "silu_mul-no_triton",
    "silu_mul-torch_backward",
    "transpose-copy_then_view",
    "transpose-flat_lane_order",
    "transpose-float32_output",
    "transpose-grid_wrong_dim",
    "transpose-hard_coded_rows",
    "transpose-missing_mask",
    "transpose-no_triton",
    "transpose-pytorch_copy",
    "transpose-strided_store",
}


@pytest.mark.parametrize("attempt", sorted(REFUSED))
def test_wrong_attempt_is_refused(attempt, capsys):
    exercise = registry()[attempt.split("-")[0]]
    first = attempt in UP_TO_FIRST_FAILURE
    status = check(exercise, ATTEMPTS / f"{attempt}.py", first_failure=first)
    report = capsys.readouterr().out
    assert status == 1, report
    assert "Next, on a GPU:" not in report
    for words in REFUSED[attempt]:
        assert words in report, f"{words!r} not in:\n{report}"


def test_every_attempt_file_is_checked():
    assert {p.stem for p in ATTEMPTS.glob("*.py")} == set(REFUSED)


# Lesson 04's rmsnorm gives a correct but slow kernel to make fast: the starter
# itself must fail as slow (one scalar per tl.load), with the page's pointer,
# while its values are right (checked on small cases, without the inspection)
def test_the_rmsnorm_starter_fails_as_correct_but_slow(capsys):
    starter = ATTEMPTS.parents[2] / "exercises" / "starters" / "rmsnorm.py"
    assert check(registry()["rmsnorm"], starter, first_failure=True) == 1
    report = capsys.readouterr().out
    assert "ok   shape=(1, 1) bfloat16" in report  # a row of 1: nothing to walk
    assert (
        "FAIL shape=(3, 7) float32\n       - correct but slow: a tl.load of "
        "rmsnorm_kernel read a block of 1 lane(s) (4-byte elements) from a row "
        "of 7" in report
    ), report
    assert "usual causes of a slow kernel, no. 4" in report
    assert "hint: give the kernel a BLOCK: tl.constexpr" in report


def test_the_rmsnorm_starter_computes_the_task(tmp_path):
    import dataclasses

    from triton_course.exercises._check import Poisoner, Watch, load_attempt, run_cases

    starter = ATTEMPTS.parents[2] / "exercises" / "starters" / "rmsnorm.py"
    # small cases of every kind the task names (strides, eps, overflow, empty)
    cases = [
        {"shape": (2, 9), "strided": (0,)},
        {"shape": (3, 5), "strided": (1,)},
        {"shape": (2, 6), "padded": True},
        {"shape": (2, 30), "eps": 1.0, "scale": 0.1},
        {"shape": (3, 8), "zero_row": True},
        {"shape": (2, 40), "scale": 300.0},
        {"shape": (0, 5)},
        {"shape": (4, 0)},
    ]
    exercise = dataclasses.replace(
        registry()["rmsnorm"], cases=cases, inspect=None, dtypes=("float32", "float16")
    )
    watch = Watch()
    fn = load_attempt(starter).rmsnorm
    results = list(run_cases(exercise, fn, Poisoner(starter, watch=watch), watch))
    assert len(results) == 2 * len(cases)
    assert all(not problems for _, problems in results), results
