"""Write the test that catches a missing mask (vector addition page, exercise 1).

The attempt defines ``writes_past_the_end(add) -> bool``: given a vector-add
function ``add(x, y, out=None)``, it must say whether ``add`` writes past the
end of ``out``. The checker hands it the course's correct ``vector_add`` and two
broken ones (a store without its mask, and a mask that lets one element too
many through); the detector must tell them apart.
"""

from . import REPO_ROOT, Exercise


def _variants():
    import importlib.util

    from . import _broken_adds

    spec = importlib.util.spec_from_file_location(
        "_course_vector_add", REPO_ROOT / "snippets" / "vector_add.py"
    )
    course = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(course)
    return [
        ("the course's vector_add (correct)", course.vector_add, False),
        ("a vector_add whose tl.store has no mask", _broken_adds.store_unmasked, True),
        ("a vector_add whose mask is offsets <= n", _broken_adds.off_by_one, True),
    ]


def check_detector(fn, poisoner):
    from ._check import _one_line, traceback_tail

    for label, add, writes in _variants():
        try:
            with poisoner.active():
                answer = fn(add)
        except Exception as error:
            poisoner.buffers.clear()
            yield label, [f"raised {_one_line(error)}\n" + traceback_tail(error)]
            continue
        poisoner.buffers.clear()  # the detector's own buffers are its business
        if not isinstance(answer, bool):
            yield label, [f"returned {answer!r}; return True or False"]
        elif answer != writes:
            verdict = "writes past the end" if writes else "stays inside out"
            yield label, [f"returned {answer}, but this one {verdict}"]
        else:
            yield label, []


EXERCISE = Exercise(
    name="catch_missing_mask",
    title="Catch a missing mask",
    page="triton-series/vector-addition.md",
    function="writes_past_the_end",
    signature="writes_past_the_end(add) -> bool",
    task="given add(x, y, out=None), return True if it writes past the end of "
    "out: pass out as a slice of a larger NaN-filled buffer and look at the rest.",
    target="run your detector on a GPU too (CUDA tensors): the same guard-region "
    "test works there, where a stray write would otherwise land silently in "
    "memory that belongs to another tensor.",
    custom=check_detector,
    hints={
        "writes past the end": "choose n so that the last block is ragged (n not "
        "a multiple of the block size, e.g. 1000) and check every guard element, "
        "including the first one after out.",
    },
)
