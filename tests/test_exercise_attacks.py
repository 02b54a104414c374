"""Wrong attempts that the independent review of 2026-11-26 wrote (issue #36):
each passed its exercise's checker then; each must fail it now, with words
that tell the learner what is wrong. The attempts are whole files, as a
learner would write them, in tests/fixtures/exercise_attempts/.

The solutions still passing is tests/test_exercises.py::test_solution_passes.
"""

from pathlib import Path

import pytest

from triton_course.exercises import registry
from triton_course.exercises._check import check

ATTEMPTS = Path(__file__).parent / "fixtures" / "exercise_attempts"

# id (= file name: <exercise>-<attempt>.py) -> words the report must contain
REFUSED = {
    # rows longer than 2048 keep their end unwritten (NaN from the checker)
    "softmax_temperature-fixed_block": [
        "FAIL shape=(2, 5000) T=0.1 scale=30.0 float32",
        "are NaN where the reference is not (first at index (0, 2048))",
        "hint: only the rows longer than 4096 failed",
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
}


@pytest.mark.parametrize("attempt", sorted(REFUSED))
def test_wrong_attempt_is_refused(attempt, capsys):
    exercise = registry()[attempt.split("-")[0]]
    status = check(exercise, ATTEMPTS / f"{attempt}.py")
    report = capsys.readouterr().out
    assert status == 1, report
    assert "Next, on a GPU:" not in report
    for words in REFUSED[attempt]:
        assert words in report, f"{words!r} not in:\n{report}"


def test_every_attempt_file_is_checked():
    assert {p.stem for p in ATTEMPTS.glob("*.py")} == set(REFUSED)
