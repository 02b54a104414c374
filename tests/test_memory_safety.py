"""Two process-level hazards of running the course in one Python process.

1. Under the interpreter an out-of-bounds access corrupts memory silently;
   conftest installs tests/bounds_check.py so that it fails at the access.
2. Importing a snippet twice re-registers its torch.library op and leaves the
   first module's op dangling (a CI run segfaulted on it): every importer
   shares one module per file (triton_course.snippet_modules).
"""

import pytest
import torch
from conftest import HAS_GPU, SNIPPETS, load_snippet

from triton_course.exercises import _broken_adds
from triton_course.runner import discovery
from triton_course.snippet_modules import load_file

interpreter_only = pytest.mark.skipif(HAS_GPU, reason="checks the CPU interpreter")


@interpreter_only
@pytest.mark.parametrize("n", [1000, 1025])  # a ragged last block, then a full tail
def test_an_unmasked_store_past_the_end_fails_at_the_access(n):
    x = torch.ones(n)
    with pytest.raises(Exception, match="_add_store_unmasked_kernel: store of"):
        _broken_adds.store_unmasked(x, x)


@interpreter_only
def test_an_off_by_one_mask_fails_but_a_correct_kernel_passes():
    x = torch.ones(1000)
    with pytest.raises(Exception, match=r"store of 1 element\(s\) outside"):
        _broken_adds.off_by_one(x, x)
    va = load_snippet("vector_add")
    torch.testing.assert_close(va.vector_add(x, x), 2 * x)


@interpreter_only
def test_an_access_inside_a_views_storage_is_not_flagged():
    # The exercises' guard buffers rely on this: a view followed by NaNs.
    buffer = torch.zeros(2048)
    x = buffer[:1000]
    out = _broken_adds.store_unmasked(x, x, out=buffer[1000:2000])
    assert out.shape == (1000,)


def test_the_runner_and_the_tests_share_one_module_per_snippet():
    sm = load_snippet("softmax_autograd")
    found = {s.stem: s for s in discovery.discover(SNIPPETS)}
    discovery.discover(SNIPPETS)  # a second discovery imports nothing again
    assert discovery.load_snippet(SNIPPETS / "softmax_autograd.py") is sm
    assert found["softmax_autograd"].path.resolve() == (
        SNIPPETS / "softmax_autograd.py"
    )
    # the op the test module holds is still the one the dispatcher has
    assert torch.ops.triton_course.softmax.default is sm.softmax_op._opoverload


def test_an_edited_file_is_imported_afresh_and_a_missing_one_is_named(tmp_path):
    path = tmp_path / "tiny.py"
    path.write_text("VALUE = 1\n")
    first = load_file(path)
    assert load_file(path) is first and first.VALUE == 1
    path.write_text("VALUE = 22\n")  # a different size: seen even within one mtime tick
    assert load_file(path).VALUE == 22
    with pytest.raises(FileNotFoundError, match="absent.py"):
        load_file(tmp_path / "absent.py")
