"""Checked exercises: run a learner's attempt against the course's reference.

    python -m triton_course.exercises list
    python -m triton_course.exercises check axpy my_axpy.py [--timeout 120]

``check`` runs the attempt in a fresh Python process under Triton's
interpreter (``TRITON_INTERPRET=1``, CPU tensors), over awkward shapes (empty,
ragged, non-contiguous) and every dtype the exercise names, and says what is
wrong: which case, the largest error and where, elements that were never
written, writes past the end of an output, inputs that were modified, or the
exception with the end of its traceback. It exits 0 when every case passes,
and then prints the exercise's performance target for a real GPU.

What the checker sees of the attempt's kernels (``_watch.py``):

- every launch, and every element each store wrote, with the value it left
  in memory. When the inputs hold data, the result must come from a
  ``@triton.jit`` kernel defined in the attempt file: every element of the
  returned tensor must have been written by one of its stores, and must still
  hold the value the last of them stored. A pure-PyTorch answer, one converted
  or copied after the kernel, or one changed in place afterwards
  (``out.add_(...)``, ``c.relu_()``), fails, however the output was allocated.
  What the checker cannot see: PyTorch work on the *inputs* before the launch
  (``x / T`` passed to the kernel) gives right values and passes;
- every load, store and atomic is checked against the memory of the tensors
  passed to the launch, and one outside it is stopped before it happens and
  reported with its kernel line (an unmasked store into a ``torch.zeros``
  output, say);
- ``tl.dot`` on float32 operands at TF32 precision (Triton's default on
  sm_80+ GPUs) truncates them to TF32 as a tensor core does, and is reported:
  the interpreter alone would multiply in float32 and hide the loss; a
  ``tl.dot`` whose accumulator is narrower than float32 is reported too;
- a masked ``tl.load`` without ``other=`` gives NaN in its masked-off lanes
  (tl.load documents them as undefined; the interpreter alone gives 0).

When every case passes, the kernels the attempt launched are compiled for
sm_90 on the CPU (``_compile.py``), once per combination of argument types:
code the interpreter runs but Triton's compiler refuses (a loop-carried
variable whose dtype changes in the loop, say) fails there.

Besides, ``torch.empty``/``torch.empty_like`` *called from the attempt file*
return a view at the start of a larger buffer filled with NaN: a kernel's load
or store in that tail (a store without its mask) is stopped as it happens and
named with the allocation's line, and the tail is checked after every case.
Inputs are views into NaN-filled buffers too (NaN after them, and between the
elements of a non-contiguous one): an unmasked load or store past the end of
an input (inside that NaN guard) is stopped and reported, and a write around
an input is seen.

Adding an exercise: create ``triton_course/exercises/<name>.py`` defining
``EXERCISE = Exercise(...)`` (see ``axpy.py`` for element-wise work,
``matmul_bias_relu.py`` for 2-D shapes, ``catch_missing_mask.py`` for a
custom check), add a reference solution ``exercises/solutions/<name>.py`` and
a broken attempt to ``tests/test_exercises.py``. The registry finds the module
by itself. ``tests/test_exercises.py`` then runs every mutant of the solution
(``_mutate.py``) against the checker: each must fail, except those right on
every input the task allows, listed there with the reason.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from collections.abc import Callable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
SOLUTIONS_DIR = REPO_ROOT / "exercises" / "solutions"
# NaN elements after every poisoned allocation and every input: at least this
# many, and at least as many as the tensor holds, so that a store without its
# mask lands in the guard rather than in memory that belongs to something else.
GUARD = 16384

# Bound the error against a float64 reference by a small multiple of the
# dtype's own rounding (same principle as tests/conftest.py).
DEFAULT_TOLERANCES = {
    "float32": {"atol": 1e-5, "rtol": 1e-5},
    "float16": {"atol": 2e-3, "rtol": 2e-3},
    "bfloat16": {"atol": 1.6e-2, "rtol": 1.6e-2},
}


@dataclasses.dataclass
class Exercise:
    """One checked exercise. Fields marked (cases) apply to the usual kind:
    call the attempt's function on generated inputs, compare to a reference.
    """

    name: str  # the command-line name; also the module's name
    title: str
    page: str  # the lesson that sets the exercise (docs/ path)
    function: str  # what the attempt must define
    signature: str  # how it is called, shown to the learner
    task: str  # one or two sentences: what to write
    target: str  # the performance goal on a real GPU, in words
    cases: list[dict] = dataclasses.field(default_factory=list)  # (cases)
    dtypes: tuple[str, ...] = ("float32", "float16", "bfloat16")  # (cases)
    # (cases) make_inputs(case, dtype, generator) -> tuple of positional args
    make_inputs: Callable | None = None
    # (cases) reference(*args) -> expected result (computed in float64)
    reference: Callable | None = None
    tolerances: dict = dataclasses.field(default_factory=lambda: DEFAULT_TOLERANCES)
    # (cases) the dtype the result must have, from the inputs' dtype
    result_dtype: Callable[[str], str] = staticmethod(lambda dtype: dtype)
    # Instead of cases: custom(fn, poisoner, watch) -> iterable of
    # (label, list of problems), see catch_missing_mask.py
    custom: Callable | None = None
    # Advice printed after failures: {"words": advice} when some problem text
    # contains the words; {"only:words": advice} when every failed case's
    # label contains them (e.g. "only:bfloat16").
    hints: dict = dataclasses.field(default_factory=dict)
    # (cases) whether a ValueError/TypeError for non-contiguous inputs (cases
    # marked "strided" or "padded") passes; False when the task says any strides
    refusal_ok: bool = True
    # (cases) inspect(case, args, result, launches) -> list of problems, run
    # after the values matched: what the values cannot show (how a row was
    # read, which arguments were constexpr); launches are the attempt's own
    inspect: Callable | None = None


def registry() -> dict[str, Exercise]:
    """Every ``EXERCISE`` in this package's modules, by name."""
    found = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        exercise = getattr(module, "EXERCISE", None)
        if exercise is not None:
            found[exercise.name] = exercise
    return dict(sorted(found.items()))
