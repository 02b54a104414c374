"""The exercise checker: each reference solution passes, each broken attempt
fails with the message that names its mistake.

Solutions and attempts run in this process (the interpreter is already on, see
conftest); one test goes through the command line, subprocess and timeout.
"""

import contextlib
import dataclasses
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from triton_course.exercises import SOLUTIONS_DIR, registry
from triton_course.exercises._check import check

EXERCISES = registry()


# small checker tensors: one PyTorch thread (conftest.one_torch_thread)
pytestmark = pytest.mark.usefixtures("one_torch_thread")


# name -> (text in the solution, replacement, words the report must contain)
BROKEN = {
    "axpy": (
        "(a * x + y).to(out_ptr.dtype.element_ty), mask=mask)",
        "(a * x + y).to(out_ptr.dtype.element_ty))",
        "past the end of the output made by torch.empty_like",
    ),
    "colsum": (
        "tl.store(out_ptr + cols, total.to(out_ptr.dtype.element_ty), mask=col_mask)",
        "tl.store(out_ptr + cols, total.to(out_ptr.dtype.element_ty))",
        "past the end of the output made by torch.empty",
    ),
    "catch_missing_mask": (
        "n, guard = 1001, 2048",
        "n, guard = 2048, 2048",
        "returned False, but this one writes past the end",
    ),
    "softmax_temperature": (
        'other=-float("inf")',
        "other=0.0",
        "elements differ: max abs error",
    ),
    "online_logsumexp": (
        "s = s * tl.exp(m - shift) + tl.exp(x - shift)",
        "s = s + tl.exp(x - shift)",
        "elements differ: max abs error",
    ),
    "matmul_bias_relu": (
        "acc = tl.maximum(acc + bias[None, :], 0.0)",
        "acc = acc + bias[None, :]",
        "elements differ: max abs error",
    ),
    "rmsnorm": (
        "tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=mask)",
        "tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty))",
        "past the end of the output made by torch.empty",
    ),
    "transpose": (
        "tl.store(out_ptr + dst, tile, mask=mask)",
        "tl.store(out_ptr + dst, tile)",
        "past the end of the output made by torch.empty",
    ),
    "sliding_window_attention": (
        'tl.where(seen, s, -float("inf"))',
        "s",
        "elements differ: max abs error",
    ),
    "silu_mul": (
        "silu_mul_bwd(a, b, dy.contiguous())",
        "silu_mul_bwd(a, b, dy)",
        "the backward: _silu_mul_bwd_kernel (line 37): a load of 209 element(s) "
        "past the end of dy",
    ),
}


def test_every_exercise_has_a_solution_and_a_broken_attempt():
    assert set(EXERCISES) == set(BROKEN)
    for name in EXERCISES:
        assert (SOLUTIONS_DIR / f"{name}.py").is_file(), name


_SOLUTION_REPORTS: dict[str, tuple[int, str]] = {}


def _solution_report(name: str) -> tuple[int, str]:
    """The status and report of the check of a reference solution: checked
    once per run, for every test that reads it (the solution is the same)."""
    if name not in _SOLUTION_REPORTS:
        with contextlib.redirect_stdout(io.StringIO()) as report:
            status = check(EXERCISES[name], SOLUTIONS_DIR / f"{name}.py")
        _SOLUTION_REPORTS[name] = (status, report.getvalue())
    return _SOLUTION_REPORTS[name]


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_solution_passes(name):
    status, report = _solution_report(name)
    assert status == 0, report
    assert "cases passed" in report and "Next, on a GPU:" in report


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_attempt_fails_with_the_right_message(name, tmp_path, capsys):
    old, new, expected = BROKEN[name]
    source = (SOLUTIONS_DIR / f"{name}.py").read_text()
    assert old in source, f"the mutation for {name} no longer applies"
    attempt = tmp_path / f"{name}_attempt.py"
    attempt.write_text(source.replace(old, new))
    # the expected words are the first failure's: the later cases add none
    status = check(EXERCISES[name], attempt, first_failure=True)
    report = capsys.readouterr().out
    assert status == 1, report
    assert expected in report, report
    assert "FAIL" in report and "Next, on a GPU:" not in report


def _attempt(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "attempt.py"
    path.write_text(text)
    return path


def test_unwritten_elements_are_named(tmp_path, capsys):
    source = (SOLUTIONS_DIR / "axpy.py").read_text()
    attempt = _attempt(
        tmp_path, source.replace("offsets < n_elements", "offsets < n_elements - 1")
    )
    assert check(EXERCISES["axpy"], attempt) == 1
    report = capsys.readouterr().out
    assert (
        "1 of 7 elements are NaN where the reference is not (first at index 6)"
        in report
    )


def test_missing_function_and_syntax_error(tmp_path, capsys):
    assert (
        check(EXERCISES["axpy"], _attempt(tmp_path, "def scale(a, x):\n    pass\n"))
        == 1
    )
    assert "does not define axpy(a, x, y)" in capsys.readouterr().out
    assert check(EXERCISES["axpy"], _attempt(tmp_path, "def axpy(a, x, y)\n")) == 1
    report = capsys.readouterr().out
    assert "could not be imported: SyntaxError" in report and "line 1" in report


def test_exception_shows_the_attempts_traceback_once(tmp_path, capsys):
    text = "def axpy(a, x, y):\n    raise ValueError('no kernel yet')\n"
    assert check(EXERCISES["axpy"], _attempt(tmp_path, text)) == 1
    report = capsys.readouterr().out
    assert "raised ValueError: no kernel yet" in report
    assert report.count("Traceback (most recent call last)") == 1
    assert 'attempt.py", line 2, in axpy' in report
    assert "_check.py" not in report  # the checker's own frames are hidden


def test_modified_input_and_wrong_dtype(tmp_path, capsys):
    text = (
        "def axpy(a, x, y):\n    y.mul_(1.0 + 1e-3)\n    return (a * x + y).double()\n"
    )
    assert check(EXERCISES["axpy"], _attempt(tmp_path, text)) == 1
    report = capsys.readouterr().out
    assert "input 3 was modified" in report
    assert "result has dtype torch.float64, expected torch.float32" in report


def test_bfloat16_only_failures_get_the_interpreter_hint(tmp_path, capsys):
    source = (SOLUTIONS_DIR / "axpy.py").read_text()
    attempt = _attempt(tmp_path, source.replace(".to(tl.float32)", ""))
    assert check(EXERCISES["axpy"], attempt) == 1
    report = capsys.readouterr().out
    assert (
        "FAIL n=7 a=-0.5 bfloat16" in report and "FAIL n=7 a=-0.5 float32" not in report
    )
    assert "hint: Triton's interpreter (3.6 and 3.9)" in report


def _cli(*args, timeout=300):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    return subprocess.run(
        [sys.executable, "-m", "triton_course.exercises", *args],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def test_command_line(tmp_path):
    listing = _cli("list")
    assert listing.returncode == 0
    for name in EXERCISES:
        assert name in listing.stdout
    ok = _cli(
        "check", "catch_missing_mask", str(SOLUTIONS_DIR / "catch_missing_mask.py")
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    # six adds: the sixth runs the unmasked kernel into a scratch (ser1-10)
    assert "All 6 cases passed" in ok.stdout
    assert _cli("check", "no_such_exercise", str(tmp_path)).returncode == 2
    slow = _attempt(tmp_path, "import time\ndef axpy(a, x, y):\n    time.sleep(60)\n")
    stuck = _cli("check", "axpy", str(slow), "--timeout", "8")
    assert stuck.returncode == 1 and "was stopped" in stuck.stdout


# Wrong attempts that an earlier checker passed (issue #28). Each must fail,
# with the words that tell the learner what to do.


def _mutated(tmp_path: Path, name: str, *edits: tuple[str, str]) -> Path:
    source = (SOLUTIONS_DIR / f"{name}.py").read_text()
    for old, new in edits:
        assert old in source, f"the mutation {old!r} of {name} no longer applies"
        source = source.replace(old, new)
    return _attempt(tmp_path, source)


def _fails(
    name: str, attempt: Path, capsys, first_failure: bool = False, cases=None
) -> str:
    """The report of a failing check. ``first_failure`` where every asserted
    line comes by the first failing case and none is an "only:" hint (which
    needs every failure) or a line that must be absent; ``cases`` (each one
    of the exercise's) where every asserted line is about them."""
    exercise = EXERCISES[name]
    if cases is not None:
        assert all(case in exercise.cases for case in cases), cases
        exercise = dataclasses.replace(exercise, cases=cases)
    status = check(exercise, attempt, first_failure)
    report = capsys.readouterr().out
    assert status == 1, report
    assert "Next, on a GPU:" not in report
    return report


IEEE_DOT = 'acc = tl.dot(a, b, acc, input_precision="ieee")'
K_130 = {"M": 100, "N": 70, "K": 130}  # matmul_bias_relu's longest dot


@pytest.mark.parametrize(
    "dot",
    [
        "acc = tl.dot(a, b, acc)",  # the default: TF32 on sm_80+
        'acc = tl.dot(a, b, acc, input_precision="tf32")',
        "acc = tl.dot(a, b, acc, allow_tf32=True)",
    ],
)
def test_a_tf32_matmul_fails_on_the_cpu_too(dot, tmp_path, capsys):
    attempt = _mutated(tmp_path, "matmul_bias_relu", (IEEE_DOT, dot))
    report = _fails("matmul_bias_relu", attempt, capsys, cases=[K_130])
    assert "FAIL M=100 N=70 K=130 float32" in report
    assert "tl.dot multiplied float32 operands in TF32" in report
    assert 'input_precision="ieee"' in report
    # the rounding is real: K=130 misses the float32 tolerance by a wide margin
    assert "elements differ: max abs error" in report
    assert "ok   M=100 N=70 K=130 float16" in report  # float16 is unaffected


def test_the_matmul_solution_asks_for_full_float32():
    assert IEEE_DOT in (SOLUTIONS_DIR / "matmul_bias_relu.py").read_text()


SCALAR_MAX_LSE = """
import torch
import triton
import triton.language as tl


@triton.jit
def lse_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    m = tl.max(tl.full((BLOCK,), -float("inf"), tl.float32), axis=0)
    s = tl.sum(tl.zeros((BLOCK,), tl.float32), axis=0)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols,
                    other=-float("inf")).to(tl.float32)
        new_m = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - new_m) + tl.sum(tl.exp(x - new_m), axis=0)
        m = new_m
    tl.store(out_ptr + row, (m + tl.log(s)).to(out_ptr.dtype.element_ty))


def logsumexp_rows(x):
    if not x.is_contiguous():
        raise ValueError("contiguous x only")
    out = torch.empty(x.shape[0], dtype=x.dtype)
    if x.numel():
        lse_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=1024)
    else:
        out.fill_(-float("inf"))
    return out
"""


def test_logsumexp_without_the_minus_inf_guard_fails(tmp_path, capsys):
    # One running maximum per row: NaN only once a whole block is -inf.
    report = _fails(
        "online_logsumexp", _attempt(tmp_path, SCALAR_MAX_LSE), capsys, True
    )
    assert "ok   shape=(3, 1001) neg_inf=True float32" in report
    assert "FAIL shape=(3, 9000) inf_rows=True float32" in report
    assert "elements are NaN where the reference is not (first at index 0)" in report
    assert "hint: a block whose entries are all -inf" in report


def test_logsumexp_with_a_finite_sentinel_fails(tmp_path, capsys):
    attempt = _mutated(
        tmp_path,
        "online_logsumexp",
        (
            'm = tl.full((BLOCK_SIZE,), -float("inf")',
            "m = tl.full((BLOCK_SIZE,), -1e30",
        ),
        ('shift = tl.where(new_m == -float("inf"), 0.0, new_m)', "shift = new_m"),
    )
    report = _fails("online_logsumexp", attempt, capsys, True)
    assert "FAIL shape=(2, 300) scale=1e+33 shift=-1e+35 float32" in report
    assert "ok   shape=(3, 9000) inf_rows=True float32" in report
    assert "(got -inf, expected -9.6" in report  # about -1e35


PURE_TORCH_AXPY = "def axpy(a, x, y):\n    return a * x + y\n"
COURSE_KERNEL_AXPY = (
    "from snippets.vector_add import vector_add\n\n"
    "def axpy(a, x, y):\n    return vector_add(a * x, y)\n"
)


@pytest.mark.parametrize(
    "text, words",
    [
        (PURE_TORCH_AXPY, "no Triton kernel defined in your file was launched:"),
        (COURSE_KERNEL_AXPY, "(only vector_add_kernel ran, not defined there)"),
    ],
    ids=["pure-pytorch", "course-kernel"],
)
def test_axpy_without_a_kernel_of_its_own_fails(text, words, tmp_path, capsys):
    report = _fails("axpy", _attempt(tmp_path, text), capsys)
    assert "ok   n=0 a=2.0 float32" in report  # no data, no launch needed
    assert "FAIL n=1000 a=3.25 float32" in report and words in report


def test_a_result_copied_after_the_kernel_fails(tmp_path, capsys):
    attempt = _mutated(
        tmp_path, "axpy", ("    return out\n", "    return out.clone()\n")
    )
    report = _fails("axpy", attempt, capsys)
    assert (
        "7 of 7 elements of the returned tensor were never written by a "
        "tl.store of your kernel (first at index 0)" in report
    )


def test_an_unmasked_store_into_a_zeros_output_is_stopped(tmp_path, capsys):
    attempt = _mutated(
        tmp_path,
        "axpy",
        ("torch.empty_like(x)", "torch.zeros_like(x)"),
        ("(a * x + y).to(out_ptr.dtype.element_ty), mask=mask)",
         "(a * x + y).to(out_ptr.dtype.element_ty))"),
    )  # fmt: skip
    report = _fails("axpy", attempt, capsys)
    assert (
        "FAIL n=7 a=-0.5 float32\n       - axpy_kernel (line 17): a store of "
        "1017 element(s) outside every tensor passed to the kernel, the first "
        "right after the end of out_ptr's memory: a tl.store without its mask"
    ) in report
    assert "stopped before it happened" in report
    assert "Traceback" not in report


def test_unwritten_elements_of_a_zeros_output_are_named(tmp_path, capsys):
    attempt = _mutated(
        tmp_path,
        "matmul_bias_relu",
        ("torch.empty((M, N)", "torch.zeros((M, N)"),
        ("mask = (rm[:, None] < M) & (rn[None, :] < N)",
         "mask = (rm[:, None] < 32) & (rn[None, :] < N)"),
    )  # fmt: skip
    report = _fails("matmul_bias_relu", attempt, capsys, cases=[K_130])
    assert (
        "FAIL M=100 N=70 K=130 float32\n       - 4760 of 7000 elements of the "
        "returned tensor were never written by a tl.store of your kernel "
        "(first at index (32, 0))"
    ) in report


@pytest.mark.parametrize(
    "name, edit, failing",
    [
        (
            "softmax_temperature",
            ("if x.ndim != 2 or not x.is_contiguous():", "if x.ndim != 2:"),
            "FAIL shape=(3, 77) T=1.5 strided=True float32",
        ),
        (
            "matmul_bias_relu",
            ("bias_ptr + rn * stride_bias", "bias_ptr + rn"),
            "FAIL M=33 N=17 K=40 strided=True float32",
        ),
        (
            "online_logsumexp",
            ("cols * col_stride", "cols"),
            "FAIL shape=(3, 1100) strided=True float32",
        ),
    ],
    ids=["softmax", "matmul-bias", "logsumexp"],
)
def test_an_attempt_that_ignores_strides_fails(name, edit, failing, tmp_path, capsys):
    report = _fails(name, _mutated(tmp_path, name, edit), capsys)
    assert failing in report
    assert "hint: only the cases with non-contiguous inputs failed" in report


def test_refusing_non_contiguous_inputs_is_allowed():
    status, report = _solution_report("axpy")
    assert status == 0, report
    assert "ok   n=1001 a=-2.0 strided=True float32 (refused: ValueError: x and y" in (
        report
    )


def test_softmax_must_handle_empty_rows(tmp_path, capsys):
    attempt = _mutated(
        tmp_path, "softmax_temperature", ("    if x.numel():\n", "    if True:\n")
    )
    report = _fails("softmax_temperature", attempt, capsys, True)
    assert "FAIL shape=(4, 0) T=1.0 float32" in report


@pytest.mark.parametrize(
    "body, words",
    [
        # the earlier checker named each variant: the name gave the answer away
        ('return add.__name__ != "vector_add"', "add's kernel never ran"),
        # 1000 = 8 * 125: the 8-element-block variant writes nothing past it
        (
            "n = 1000\n    buffer = torch.full((n + 2048,), float('nan'))\n"
            "    add(torch.ones(n), torch.ones(n), out=buffer[:n])\n"
            "    return not torch.isnan(buffer[n:]).all().item()",
            "returned False, but this one writes past the end",
        ),
        # an out with nothing after it: the stray write would hit the heap
        (
            "try:\n        add(torch.ones(1001), torch.ones(1001), "
            "out=torch.zeros(1001))\n    except Exception:\n        return True\n"
            "    return False",
            "add wrote outside every tensor you gave it",
        ),
    ],
    ids=["by-name", "n-1000", "no-guard"],
)
def test_wrong_missing_mask_detectors_fail(body, words, tmp_path, capsys):
    text = f"import torch\n\n\ndef writes_past_the_end(add):\n    {body}\n"
    report = _fails("catch_missing_mask", _attempt(tmp_path, text), capsys)
    assert words in report, report


def test_the_command_line_stops_a_stray_store_into_a_zeros_output(tmp_path):
    # In its own process, without the tests' bounds checker: the checker's own.
    attempt = _mutated(
        tmp_path,
        "axpy",
        ("torch.empty_like(x)", "torch.zeros_like(x)"),
        ("(a * x + y).to(out_ptr.dtype.element_ty), mask=mask)",
         "(a * x + y).to(out_ptr.dtype.element_ty))"),
    )  # fmt: skip
    done = _cli("check", "axpy", str(attempt))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "outside every tensor passed to the kernel" in done.stdout
    assert "a tl.store without its mask" in done.stdout


@pytest.mark.parametrize(
    "name, text, words",
    [
        (
            "matmul_bias_relu",
            "import torch\n\n\ndef matmul_bias_relu(a, b, bias):\n"
            "    return torch.relu(a @ b + bias)\n",
            "no Triton kernel defined in your file was launched",
        ),
        (
            "softmax_temperature",
            "def softmax_temperature(x, temperature):\n    return x\n",
            "elements differ",
        ),
        (
            "online_logsumexp",
            "def logsumexp_rows(x):\n    return x\n",
            "result has shape",
        ),
    ],
    ids=["matmul-in-pytorch", "softmax-returns-input", "lse-returns-input"],
)
def test_trivial_attempts_fail(name, text, words, tmp_path, capsys):
    assert words in _fails(name, _attempt(tmp_path, text), capsys)


# Wrong attempts found by the page reviews (reviews/triton-series/*.md). Each
# passed the checker before; each must fail it, with the words that say why.

IEEE_STEP = IEEE_DOT
MATMUL_EPILOGUE = "acc = tl.maximum(acc + bias[None, :], 0.0)  # the fused epilogue"

REVIEW_ATTEMPTS = {
    # vector-addition #2a: a as a tl.constexpr, one compile per value of a
    "axpy-constexpr": (
        "axpy",
        [
            ("out_ptr, a, n_elements, BLOCK_SIZE",
             "out_ptr, n_elements, A: tl.constexpr, BLOCK_SIZE"),
            ("(a * x + y)", "(A * x + y)"),
            ("(x, y, out, a, n, BLOCK_SIZE=block)",
             "(x, y, out, n, A=a, BLOCK_SIZE=block)"),
        ],
        "a reached axpy_kernel as the tl.constexpr A",
    ),
    # index #2, vector-addition #2b: the kernel stores zeros, PyTorch the answer
    "axpy-torch-copy": (
        "axpy",
        [
            ("(a * x + y).to(", "(0.0 * x).to("),
            ("    return out\n",
             "    out.copy_(a * x.double() + y.double())\n    return out\n"),
        ],
        "differ from what your kernel stored there",
    ),
    # vector-addition #2b: the kernel adds, PyTorch adds the rest in place
    "axpy-half-done": (
        "axpy",
        [
            ("(a * x + y).to(", "(x + y).to("),
            ("    return out\n", "    out.add_((a - 1) * x)\n    return out\n"),
        ],
        "they were changed in PyTorch after the kernel ran",
    ),
    # tiled-gemm #1: the epilogue in PyTorch, after a plain product
    "matmul-torch-epilogue": (
        "matmul_bias_relu",
        [
            (MATMUL_EPILOGUE, "pass"),
            ("    )  # fmt: skip\n    return c\n",
             "    )  # fmt: skip\n    c.add_(bias).relu_()\n    return c\n"),
        ],
        "differ from what your kernel stored there",
    ),
    # tiled-gemm #2: a float16 accumulator
    "matmul-f16-accumulator": (
        "matmul_bias_relu",
        [
            ("acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)",
             "acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=c_ptr.dtype.element_ty)"),
            (IEEE_STEP, 'acc = (acc + tl.dot(a, b, input_precision="ieee"))'
             ".to(c_ptr.dtype.element_ty)"),
        ],
        "FAIL M=8 N=16 K=128 cancel=True float16",
    ),
    # tiled-gemm #2: the bias added after rounding to float16
    "matmul-bias-after-cast": (
        "matmul_bias_relu",
        [
            (MATMUL_EPILOGUE, "pass"),
            ("tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=mask)",
             "tl.store(c, tl.maximum(acc.to(c_ptr.dtype.element_ty) + "
             "bias[None, :].to(c_ptr.dtype.element_ty), 0.0), mask=mask)"),
        ],
        "FAIL M=8 N=16 K=128 cancel=True float16",
    ),
    # tiled-gemm #3: the bias loaded without its mask
    "matmul-bias-no-mask": (
        "matmul_bias_relu",
        [("bias_ptr + rn * stride_bias, mask=rn < N, other=0.0",
          "bias_ptr + rn * stride_bias")],
        "a load of 31 element(s) past the end of input 3",
    ),
    # tiled-gemm #4: refuse inner strides, assume row strides K and N
    "matmul-assume-row-stride": (
        "matmul_bias_relu",
        [
            ("    M, K = a.shape\n",
             "    if a.stride(1) != 1 or b.stride(1) != 1:\n"
             '        raise ValueError("need unit inner strides")\n'
             "    M, K = a.shape\n"),
            ("a.stride(0), a.stride(1), b.stride(0), b.stride(1), bias.stride(0),",
             "a.shape[1], 1, b.shape[1], 1, 1,"),
        ],
        "FAIL M=20 N=24 K=30 padded=True float32",
    ),
    # softmax #1: refuse only stride(1) != 1, assume the row stride is n_cols
    "softmax-assume-row-stride": (
        "softmax_temperature",
        [
            ("if x.ndim != 2 or not x.is_contiguous():",
             "if x.ndim != 2 or (x.shape[1] > 1 and x.stride(1) != 1):"),
            ("x, out, cols, x.stride(0), 1.0", "x, out, cols, cols, 1.0"),
        ],
        "FAIL shape=(4, 300) T=0.7 padded=True float32",
    ),
    # online-softmax #3: the maximum first, then the sum, a second read
    "logsumexp-two-pass": (
        "online_logsumexp",
        [
            ("    for start in range(0, n_cols, BLOCK_SIZE):\n",
             "    for start in range(0, n_cols, BLOCK_SIZE):\n"
             "        cols = start + tl.arange(0, BLOCK_SIZE)\n"
             "        tl.load(x_ptr + row * row_stride + cols * col_stride,\n"
             "                mask=cols < n_cols)  # a first pass: read, discard\n"
             "    for start in range(0, n_cols, BLOCK_SIZE):\n"),
        ],
        "of x was loaded 2 times",
    ),
    # online-softmax #3: the whole row in one block
    "logsumexp-one-block": (
        "online_logsumexp",
        [("BLOCK_SIZE=block_size", "BLOCK_SIZE=triton.next_power_of_2(max(cols, 1))")],
        "one tl.load read 40000 elements, a whole row of 40000",
    ),
}  # fmt: skip


# whose words come after the first failing case: checked in full
REVIEW_FULL_REPORT = {"matmul-assume-row-stride"}


@pytest.mark.parametrize("key", sorted(REVIEW_ATTEMPTS))
def test_wrong_attempts_from_the_reviews_fail(key, tmp_path, capsys):
    name, edits, words = REVIEW_ATTEMPTS[key]
    first = key not in REVIEW_FULL_REPORT
    report = _fails(name, _mutated(tmp_path, name, *edits), capsys, first)
    assert words in report, report


def test_matmul_refusing_strides_fails(tmp_path, capsys):
    # the task says "any strides": a ValueError is no way out there
    attempt = _mutated(
        tmp_path,
        "matmul_bias_relu",
        ("    M, K = a.shape\n",
         "    if not (a.is_contiguous() and b.is_contiguous()):\n"
         '        raise ValueError("contiguous only")\n    M, K = a.shape\n'),
    )  # fmt: skip
    report = _fails("matmul_bias_relu", attempt, capsys, True)
    assert "but the exercise asks for any strides" in report


# vector-addition #1: a detector that never fills its guard with NaN passed,
# because the checker used to hand the detector NaN-filled torch.empty memory.
NOINIT_DETECTOR = """
import torch


def writes_past_the_end(add):
    n = 1001
    buf = torch.empty(n + 2048)  # never filled with NaN
    add(torch.randn(n), torch.randn(n), out=buf[:n])
    return bool((~torch.isnan(buf[n:])).any())
"""


def test_a_detector_that_never_fills_its_guard_fails(tmp_path, capsys):
    report = _fails("catch_missing_mask", _attempt(tmp_path, NOINIT_DETECTOR), capsys)
    assert "FAIL the course's vector_add (correct)" in report
    assert "returned True, but this one stays inside out" in report


def test_values_stored_by_the_kernel_are_compared_bit_for_bit():
    # the watch reads back what each store left in memory; a later PyTorch
    # change to one element is named, an untouched output is not
    import torch
    import triton
    import triton.language as tl

    from triton_course.exercises._watch import Watch

    @triton.jit
    def fill(out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, offs.to(tl.float32) * 0.5, mask=offs < n)

    watch = Watch()
    out = torch.empty(10)
    with watch.active():
        fill[(1,)](out, 10, BLOCK=16)
    launches = watch.launches
    assert not Watch.changed_since_stored(out, launches).any()
    out[3] += 1.0
    assert Watch.changed_since_stored(out, launches).nonzero().flatten().tolist() == [3]


# Mutation testing (issue #36): every mutant of a reference solution (the
# kinds of wrong code a learner writes, triton_course/exercises/_mutate.py)
# must fail its checker, unless it is right on every input the task allows:
# those are listed here with the reason, and not run. Score: killed / run.
EQUIVALENT = {
    "axpy": {
        "line 15: tl.load(y_ptr + offsets, mask=mask).to(tl.float32) -> "
        "tl.load(y_ptr + offsets, mask=mask)": "y's first operation is with the "
        "float32 a * x, which promotes it to float32: the same sum",
        "line 27: if n -> if True": "with n = 0 the grid is (0,), and a grid "
        "without programs launches nothing (the interpreter runs no program; "
        "the CUDA launcher skips gridX * gridY * gridZ == 0)",
    },
    "catch_missing_mask": {
        "line 9: 1001 -> 1002": "1002 is a multiple of neither 8 nor 1024 "
        "either: the last block of every variant stays ragged",
        "line 9: 2048 -> 2047": "any guard of at least 24 elements holds every "
        "stray write of the variants (at most 1024 - 1001)",
        "line 9: 2048 -> 2049": "a larger guard holds every stray write as well",
    },
    "colsum": {
        "line 33: x.to(tl.float32) -> x": "x's first operation is with the "
        "float32 accumulator, which promotes it to float32",
    },
    "matmul_bias_relu": {
        "line 32: no other=": "a masked-off bias lane reaches only columns "
        "n >= N, which the masked store never writes",
        "line 33: bias.to(tl.float32) -> bias": "the bias is added to the "
        "float32 accumulator, which promotes it to float32: the same sum",
        "line 48: if M == 0 or N == 0: return": "M or N = 0 makes a grid "
        "dimension 0, and a grid without programs launches nothing",
    },
    "online_logsumexp": {
        "line 25: x.to(tl.float32) -> x": "x's first operation is with the "
        "float32 running maximum, which promotes it to float32",
        "line 43: if rows -> if True": "rows = 0 makes the grid (0,), which "
        "launches nothing",
    },
    "rmsnorm": {
        "line 32: x.to(tl.float32) -> x": "x's first operation is with the "
        "float32 inv, which promotes it to float32",
        "line 32: w.to(tl.float32) -> w": "w's first operation is with the "
        "float32 x * inv, which promotes it to float32",
    },
    "softmax_temperature": {},
    "transpose": {},
    "silu_mul": {},
    "sliding_window_attention": {
        "line 31: no other=": "a masked-off q row is a query past seq_len: "
        "its scores, sums and output row are never stored",
        "line 45: no other=": "a masked-off key column j >= seq_len is never "
        "seen (j <= i < seq_len for every stored query i): tl.where puts "
        "-inf there whatever was loaded",
    },
}


# A mutant whose cases have run this many CPU seconds has its kernels
# compiled then, not only after its last case (check's compile_after): about
# what a compile costs, so a mutant that only the compiler refuses (an
# accumulator in the input dtype) skips the slowest cases, and one that a
# case kills early never pays for a compile.
COMPILE_AFTER_S = 1.0


@pytest.mark.parametrize("name", sorted(EQUIVALENT))
def test_every_mutant_of_the_solution_fails(name, tmp_path, capsys):
    from triton_course.exercises._mutate import mutants

    found = mutants((SOLUTIONS_DIR / f"{name}.py").read_text())
    equivalent = EQUIVALENT[name]
    assert set(equivalent) <= {m.where for m in found}, "stale EQUIVALENT entries"
    survivors, kinds = [], {}
    for number, mutant in enumerate(found):
        if mutant.where in equivalent:
            continue
        kinds[mutant.kind] = kinds.get(mutant.kind, 0) + 1
        path = tmp_path / f"mutant_{number}.py"
        path.write_text(mutant.source)
        if check(EXERCISES[name], path, True, COMPILE_AFTER_S) == 0:
            survivors.append(f"{mutant.kind}: {mutant.where}")
        capsys.readouterr()
    run = sum(kinds.values())
    with capsys.disabled():
        print(f"\n{name}: {run - len(survivors)} of {run} mutants killed "
              f"({len(equivalent)} equivalent not run); by kind: {kinds}")  # fmt: skip
    assert not survivors, "mutants the checker passes:\n" + "\n".join(survivors)


# A column sum whose programs each walk down one column: right values, but
# every lane of a load reads its own 32-byte sector (not coalesced).
COLUMN_WALK = """
import torch
import triton
import triton.language as tl


@triton.jit
def colsum_kernel(x_ptr, out_ptr, n_rows, stride_row, BLOCK_M: tl.constexpr):
    col = tl.program_id(0)
    acc = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for start in range(0, n_rows, BLOCK_M):
        r = start + tl.arange(0, BLOCK_M)
        x = tl.load(x_ptr + r * stride_row + col, mask=r < n_rows, other=0.0)
        acc += x.to(tl.float32)
    tl.store(out_ptr + col, tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty))


def colsum(x):
    if not x.is_contiguous():
        raise ValueError("contiguous x only")
    n_rows, n_cols = x.shape
    out = torch.empty(n_cols, dtype=x.dtype)
    if n_cols:
        colsum_kernel[(n_cols,)](x, out, n_rows, x.stride(0), BLOCK_M=64)
    return out
"""


def test_a_column_walk_fails_as_uncoalesced(tmp_path, capsys):
    # first_failure: a program per column is slow under the interpreter
    status = check(EXERCISES["colsum"], _attempt(tmp_path, COLUMN_WALK), True)
    report = capsys.readouterr().out
    assert status == 1, report
    assert "ok   shape=(40, 3) float32" in report  # 12-byte rows share sectors
    assert (
        "FAIL shape=(5, 300) float32\n       - a tl.load of colsum_kernel read 5 "
        "elements from 5 different 32-byte sectors, one each"
    ) in report
    assert "hint: v2 of the page loads a (BLOCK_M, BLOCK_N) tile" in report


# Review 2026-11-27 (04-worked-optimisation no. 1): a coalesced column sum
# with BLOCK_N = 32, whose last program on the 50 x 33 strided case holds one
# column: its running lanes are one per sector only because the mask cut off
# their neighbours. Right, and coalesced: the checker must accept it.
TILED_BN32 = """
import torch
import triton
import triton.language as tl


@triton.jit
def colsum_kernel(x_ptr, out_ptr, n_rows, n_cols, stride_row, stride_col,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = (tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    col_mask = cols < n_cols
    rows = tl.arange(0, BLOCK_M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for start in range(0, n_rows, BLOCK_M):
        r = start + rows
        mask = (r[:, None] < n_rows) & col_mask[None, :]
        offs = r.to(tl.int64)[:, None] * stride_row + cols[None, :] * stride_col
        acc += tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    total = tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty)
    tl.store(out_ptr + cols, total, mask=col_mask)


def colsum(x):
    n_rows, n_cols = x.shape
    out = torch.empty(n_cols, dtype=x.dtype, device=x.device)
    grid = (triton.cdiv(n_cols, 32),)
    colsum_kernel[grid](x, out, n_rows, n_cols, x.stride(0), x.stride(1),
                        BLOCK_M=16, BLOCK_N=32)
    return out
"""


def test_a_tiled_colsum_whose_last_block_is_one_column_passes(tmp_path, capsys):
    import dataclasses

    cases = [{"shape": (50, 33), "strided": True}, {"shape": (5, 300)}]
    exercise = dataclasses.replace(EXERCISES["colsum"], cases=cases)
    status = check(exercise, _attempt(tmp_path, TILED_BN32))
    report = capsys.readouterr().out
    assert status == 0, report
    assert "ok   shape=(50, 33) strided=True float32" in report


# Review 2026-11-27 (04-worked-optimisation no. 7): 32 rows per program, the
# columns walked one per trip: each load has 32 lanes, one element of each of
# 32 rows (and w as a 32-lane broadcast of one element), still v0's walk.
ROWS_WALK = """
import torch
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, n_rows, n_cols, stride_row, stride_col,
                   stride_w, eps, BLOCK_M: tl.constexpr):
    rows = (tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    rm = rows < n_rows
    acc = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for col in range(0, n_cols):
        x = tl.load(x_ptr + rows * stride_row + col * stride_col, mask=rm,
                    other=0.0).to(tl.float32)
        acc += x * x
    inv = 1.0 / tl.sqrt(acc / n_cols + eps)
    for col in range(0, n_cols):
        x = tl.load(x_ptr + rows * stride_row + col * stride_col, mask=rm,
                    other=0.0).to(tl.float32)
        w = tl.load(w_ptr + col * stride_w + 0 * rows).to(tl.float32)
        y = (x * inv * w).to(y_ptr.dtype.element_ty)
        tl.store(y_ptr + rows * n_cols + col, y, mask=rm)


def rmsnorm(x, w, eps):
    n_rows, n_cols = x.shape
    y = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    if n_rows:
        rmsnorm_kernel[(triton.cdiv(n_rows, 32),)](
            x, w, y, n_rows, n_cols, x.stride(0), x.stride(1), w.stride(0), eps,
            BLOCK_M=32)
    return y
"""


def test_an_rmsnorm_walking_32_rows_a_column_at_a_time_is_slow(tmp_path, capsys):
    status = check(EXERCISES["rmsnorm"], _attempt(tmp_path, ROWS_WALK), True)
    report = capsys.readouterr().out
    assert status == 1, report
    assert (
        "FAIL shape=(3, 7) float32\n       - correct but slow: a tl.load of "
        "rmsnorm_kernel read a block of 1 lane(s) (4-byte elements) from a row "
        "of 7, its lanes spread over 3 rows"
    ) in report


def test_an_rmsnorm_of_one_block_without_a_loop_fails(tmp_path, capsys):
    # review no. 8: one block of 4096 columns, no loop over the row, passed
    # rows of at most 2053 columns; a row longer than any block of up to 8192
    # columns must be among the cases
    longest = max(case["shape"][1] for case in EXERCISES["rmsnorm"].cases)
    assert longest > 8192 and longest % 1024
    attempt = _mutated(
        tmp_path,
        "rmsnorm",
        ("for start in range(0, n_cols, BLOCK)", "for start in range(0, 1)"),
        ("BLOCK=1024", "BLOCK=4096"),
    )
    report = _fails("rmsnorm", attempt, capsys, True)
    assert "ok   shape=(7, 45) padded=True float32" in report
    assert f"FAIL shape=(1, {longest}) float32" in report


def test_a_kernel_the_compiler_refuses_fails(tmp_path, capsys):
    # a float16 accumulator becomes float32 in the loop: the interpreter runs
    # it with right values, Triton's compiler refuses the changing type
    attempt = _mutated(
        tmp_path,
        "colsum",
        ("tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)",
         "tl.zeros((BLOCK_M, BLOCK_N), dtype=x_ptr.dtype.element_ty)"),
    )  # fmt: skip
    report = _fails("colsum", attempt, capsys)
    assert "ok   shape=(1000, 9) float16" in report
    assert "FAIL compiling colsum_kernel for sm_90 (fp16, fp32 pointers)" in report
    assert "Loop-carried variable acc has initial type" in report
    assert "(line 27)" in report  # the loop's line in the attempt
    assert "FAIL compiling colsum_kernel for sm_90 (fp32 pointers)" not in report


def test_the_softmax_target_compares_on_the_same_input():
    # review 2026-11-26 ser2-05: the table's N = 4096 row has 16 384 rows;
    # a 4096 x 4096 call need not reach its share of the bandwidth
    target = EXERCISES["softmax_temperature"].target
    assert "softmax_rows on the same 4096 x 4096" in target
    assert "Not the table's N = 4096 row: it has 16 384 rows" in target


def test_the_checker_truncates_tf32_operands_as_the_tensor_cores_do():
    # ser1-03: the GPU's tensor cores drop the low 13 mantissa bits (no
    # conversion in the PTX); rounding to nearest would give 1 + 2**-10 here
    import numpy as np

    from triton_course.exercises import _watch

    x = np.array([1 + 0.75 * 2**-10, -(1 + 0.75 * 2**-10), np.inf], np.float32)
    assert _watch._to_tf32(x).tolist() == [1.0, -1.0, np.inf]


# silu_mul's launchers take memory as one flat run; .contiguous() is what
# makes it one. Dropped (a kind the AST mutator does not make), the strided
# inputs fail.
@pytest.mark.parametrize(
    "edit",
    [
        ("a, b = a.contiguous(), b.contiguous()", "b = b.contiguous()"),
        ("a, b = a.contiguous(), b.contiguous()", "a = a.contiguous()"),
    ],
    ids=["a", "b"],
)
def test_silu_mul_without_contiguous_inputs_fails(edit, tmp_path, capsys):
    attempt = _mutated(tmp_path, "silu_mul", edit)
    assert check(EXERCISES["silu_mul"], attempt, first_failure=True) == 1
    report = capsys.readouterr().out
    assert "FAIL shape=(20, 9) strided=True float32\n       - the forward (y): " in (
        report
    )
    assert "ok   shape=(2, 3, 5) bfloat16" in report


def test_a_transpose_of_narrow_tiles_fails_as_half_coalesced(tmp_path, capsys):
    # tiles 4 rows high: out's rows get 4 adjacent float32 (16 bytes) from
    # each tile, half of every 32-byte sector a store touches
    attempt = _mutated(
        tmp_path,
        "transpose",
        ("grid = (triton.cdiv(n_rows, 32)", "grid = (triton.cdiv(n_rows, 4)"),
        ("BLOCK_M=32", "BLOCK_M=4"),
    )
    assert check(EXERCISES["transpose"], attempt, first_failure=True) == 1
    report = capsys.readouterr().out
    assert "ok   shape=(21, 40) padded=True float16" in report
    assert (
        "FAIL shape=(64, 96) float32\n       - a tl.store of transpose_kernel "
        "asked for 512 bytes (128 elements) but touched 32 32-byte sectors "
        "(1024 bytes): only 50 % of what the memory moves is used"
    ) in report


@pytest.mark.parametrize("name", ["transpose", "silu_mul", "sliding_window_attention"])
def test_the_starter_fails_until_it_is_filled_in(name, capsys):
    starter = SOLUTIONS_DIR.parent / "starters" / f"{name}.py"
    assert check(EXERCISES[name], starter, first_failure=True) == 1
    report = capsys.readouterr().out
    assert "raised NotImplementedError" in report
    assert f"exercises/solutions/{name}.py" in starter.read_text()


def test_every_exercise_page_gives_the_command_and_the_solution():
    for name, exercise in EXERCISES.items():
        page = (REPO_ROOT / "docs" / exercise.page).read_text("utf-8")
        assert f"python -m triton_course.exercises check {name} " in page, name
        assert f"exercises/solutions/{name}.py" in page, name
        starter = SOLUTIONS_DIR.parent / "starters" / f"{name}.py"
        if starter.is_file():  # a starter, where there is one, is linked too
            assert f"exercises/starters/{name}.py" in page, name


# The online softmax's rescaling and its max shift, which the AST mutator
# does not take apart here (alpha is a name of its own): each dropped fails.
@pytest.mark.parametrize(
    "edit",
    [
        ("total = total * alpha + tl.sum", "total = total + tl.sum"),
        ("acc = acc * alpha[:, None]", "acc = acc"),
        ("p = tl.exp(s - shift[:, None])", "p = tl.exp(s)"),
    ],
    ids=["sum", "acc", "shift"],
)
def test_attention_without_its_rescaling_fails(edit, tmp_path, capsys):
    attempt = _mutated(tmp_path, "sliding_window_attention", edit)
    status = check(EXERCISES["sliding_window_attention"], attempt, True)
    report = capsys.readouterr().out
    assert status == 1, report
    assert "FAIL shape=" in report


def test_the_silu_mul_solution_indexes_in_int64():
    # review 2026-11-27 l03-18: pid * BLOCK_SIZE in int32 wraps past 2**31 - 1
    # elements (4 GiB of bfloat16 fits on an H100); both kernels use int64
    source = (REPO_ROOT / "exercises" / "solutions" / "silu_mul.py").read_text()
    assert source.count("tl.program_id(") == 2
    assert source.count("tl.program_id(0).to(tl.int64) * BLOCK_SIZE") == 2


def test_an_interpreter_that_cannot_run_loops_stops_the_check_with_the_fix(
    monkeypatch, capsys
):
    # triton 3.6's interpreter with NumPy 2.4 fails on every computed loop
    # bound (seen on the GPU image: 33 of 36 rmsnorm cases "failed"); the
    # check must say so once, not blame the attempt case by case.
    from triton_course.exercises import __main__ as cli
    from triton_course.exercises import _preflight

    assert _preflight.interpreter_problem() is None  # this interpreter works

    class Broken:
        def __getitem__(self, grid):
            def launch(*args, **kwargs):
                raise TypeError("only 0-dimensional arrays can be converted")

            return launch

    monkeypatch.setattr(_preflight, "_computed_bound_kernel", Broken())
    problem = _preflight.interpreter_problem()
    assert "numpy<2.4" in problem and "not your kernel's" in problem
    ran = []
    monkeypatch.setattr(
        "triton_course.exercises._check.check", lambda *a: ran.append(a) or 0
    )
    solution = REPO_ROOT / "exercises" / "solutions" / "axpy.py"
    assert cli.main(["_run", "axpy", str(solution)]) == 2
    assert "CANNOT CHECK" in capsys.readouterr().out and ran == []
