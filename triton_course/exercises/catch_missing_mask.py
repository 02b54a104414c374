"""Write the test that catches a missing mask (vector addition page, exercise 1).

The attempt defines ``writes_past_the_end(add) -> bool``: given a vector-add
function ``add(x, y, out=None)``, it must say whether ``add`` writes past the
end of ``out``. The checker hands it correct and broken vector adds: the
course's ``vector_add`` with 1024- and 8-element blocks, a store without its
mask (1024- and 8-element blocks: the second writes nothing past the end when
n is a multiple of 8, such as 1000), and a mask that lets one element too many
through. All are presented alike (a function named ``add``), and the detector
must actually run each one: its answer has to come from what ``add`` wrote.
The checker watches every call: a True is accepted only when some call of
``add`` did write past the end of the ``out`` it was given. And one variant
runs the unmasked kernel into a padded scratch buffer of its own and copies
the first n elements to ``out``: its code and its closure say "unmasked", but
it never writes past the end of ``out``, so a detector that answers from the
code or the closure instead of the memory fails there.
"""

from . import REPO_ROOT, Exercise


def _disguised(impl, watch, seen: list[int]):
    """``impl`` behind a function that looks the same for every variant. After
    each call, ``seen`` gets how many elements its kernels stored outside the
    tensor they were to fill (``out``, or the tensor returned)."""

    def add(x, y, out=None):
        first = len(watch.launches)
        result = impl(x, y, out=out)
        target = out if out is not None else result
        seen.append(_stored_outside(target, watch.launches[first:]))
        return result

    return add


def _stored_outside(target, launches) -> int:
    import numpy as np

    from ._watch import Watch, isin, unique

    chunks = [a for launch in launches for a in launch.stored]
    if not chunks:
        return 0
    stored = unique(np.concatenate(chunks))
    if target is None or not hasattr(target, "data_ptr"):
        return int(stored.size)
    return int((~isin(stored, Watch.addresses(target).ravel())).sum())


def _variants():
    import importlib.util

    from . import _broken_adds

    spec = importlib.util.spec_from_file_location(
        "_course_vector_add", REPO_ROOT / "snippets" / "vector_add.py"
    )
    course = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(course)

    def course_block8(x, y, out=None):
        return course.vector_add(x, y, out, block_size=8)

    store_unmasked = _broken_adds.store_unmasked

    def store_unmasked_into_padded_scratch(x, y, out=None):
        # The unmasked kernel, given inputs and an output padded to whole
        # 1024-element blocks: its stray stores land in the scratch, and only
        # the first n elements reach out. Right, though its code is not.
        import torch

        n = x.numel()
        padded = -(-n // 1024) * 1024
        xs, ys = torch.zeros(padded, dtype=x.dtype), torch.zeros(padded, dtype=y.dtype)
        xs[:n], ys[:n] = x, y
        scratch = store_unmasked(xs, ys, out=torch.empty_like(xs))
        if out is None:
            return scratch[:n].clone()
        out.copy_(scratch[:n])
        return out

    return [
        ("a vector_add whose tl.store has no mask", _broken_adds.store_unmasked, True),
        ("the course's vector_add (correct)", course.vector_add, False),
        ("a vector_add whose mask is offsets <= n", _broken_adds.off_by_one, True),
        (
            "a vector_add with 8-element blocks whose tl.store has no mask",
            _broken_adds.store_unmasked_block8,
            True,
        ),
        (
            "the course's vector_add with 8-element blocks (correct)",
            course_block8,
            False,
        ),
        (
            "the unmasked kernel run on a scratch of whole blocks, then copied "
            "to out (correct: nothing lands past the end of out)",
            store_unmasked_into_padded_scratch,
            False,
        ),
    ]


def check_detector(fn, poisoner, watch):
    from ._check import Poisoner, _one_line, garbage_, traceback_tail

    # The detector's own torch.empty gets finite garbage, not NaN (as fresh
    # GPU memory may hold): a guard buffer it never filled must not pass.
    poisoner = Poisoner(poisoner.attempt_file, fill=garbage_)
    for label, impl, writes in _variants():
        watch.clear()
        seen: list[int] = []  # per call of add: elements stored outside out
        try:
            with poisoner.active(), watch.active():
                answer = fn(_disguised(impl, watch, seen))
        except Exception as error:
            poisoner.buffers.clear()
            if watch.out_of_bounds:
                yield label, [_outside(watch)]
            else:
                yield label, [f"raised {_one_line(error)}\n" + traceback_tail(error)]
            continue
        poisoner.buffers.clear()  # the detector's own buffers are its business
        if watch.out_of_bounds:  # even if the detector caught the exception
            yield label, [_outside(watch)]
        elif not watch.launches:
            yield (
                label,
                [
                    "add's kernel never ran: call add(x, y, out=...) on tensors "
                    "with elements and decide from what it wrote, not from the "
                    "function itself"
                ],
            )
        elif not isinstance(answer, bool):
            yield label, [f"returned {answer!r}; return True or False"]
        elif answer != writes:
            verdict = "writes past the end" if writes else "stays inside out"
            yield label, [f"returned {answer}, but this one {verdict}"]
        elif answer and not any(seen):
            yield (
                label,
                [
                    f"returned True, and this one does write past the end, but "
                    f"in none of your {len(seen)} call(s) of add did it write "
                    "past the end of the out you gave it: the answer must come "
                    "from what add wrote, not from anything else about add. "
                    "Call it with an n that leaves the last block ragged."
                ],
            )
        else:
            yield label, []


def _outside(watch) -> str:
    return (
        "add wrote outside every tensor you gave it, into memory your test does "
        "not own (the checker stopped the write; on a GPU it would land in "
        "another tensor, unseen): give it an out that is a slice of a larger "
        "NaN-filled buffer, so that a stray write lands where you can look. "
        "The kernel's report: " + watch.out_of_bounds[0]
    )


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
        "stays inside out": "answer from what add left in memory past the end "
        "of out, not from its code or its name: a function may hold an unmasked "
        "kernel and still keep its stray stores away from out.",
        "writes past the end": "choose n so that the last block is ragged for "
        "any block size (an odd n such as 1001: 1000 is a multiple of 8) and "
        "check every guard element, including the first one after out.",
    },
)
