"""snippets/vector_add.py: awkward sizes and dtypes, and every input error."""

import pytest
import torch
import triton
from conftest import DEVICE, REPO_ROOT, assert_close, gpu_memory, load_snippet, poison_

from triton_course.snippet_modules import load_file

va = load_snippet("vector_add")

SIZES = [0, 1, 7, 1000, 1024, 65_539]
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n", SIZES)
def test_matches_reference(n, dtype, seeded):
    x = torch.randn(n, device=DEVICE).to(dtype)
    y = torch.randn(n, device=DEVICE).to(dtype)
    out = poison_(torch.empty_like(x))
    result = va.vector_add(x, y, out=out)
    assert result is out
    assert not torch.isnan(out).any(), "an element was never written"
    assert_close(out, x.double() + y.double())


@pytest.mark.parametrize("block_size", [1, 16, 128, 4096])
def test_block_sizes_cover_every_element(block_size, seeded):
    n = 1000  # not a multiple of any block size above but 1
    x, y = torch.randn(n, device=DEVICE), torch.randn(n, device=DEVICE)
    out = poison_(torch.empty_like(x))
    va.vector_add(x, y, out=out, block_size=block_size)
    assert_close(out, x.double() + y.double())


def test_does_not_write_past_the_end(seeded):
    # `out` is a slice of a poisoned buffer: the guard elements after it must
    # stay NaN, so a store without its mask fails here.
    x, y = torch.randn(1000, device=DEVICE), torch.randn(1000, device=DEVICE)
    buffer = poison_(torch.empty(1024 + 64, device=DEVICE))
    va.vector_add(x, y, out=buffer[:1000])
    assert torch.isnan(buffer[1000:]).all()
    assert_close(buffer[:1000], x.double() + y.double())


def test_reference_is_the_plain_sum():
    x, y = torch.arange(5.0), torch.ones(5)
    assert torch.equal(va.vector_add_ref(x, y), torch.tensor([1.0, 2, 3, 4, 5]))


# ------------------------------------------------------------ bad input ---
def _pair(n=8, **kw):
    return torch.randn(n, device=DEVICE, **kw), torch.randn(n, device=DEVICE, **kw)


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda: ([1.0], [2.0]), TypeError, "torch.Tensor"),
        (lambda: (_pair()[0], _pair()[1].double()), TypeError, "dtypes differ"),
        (lambda: _pair(dtype=torch.float64), TypeError, "unsupported dtype"),
        (
            lambda: (torch.ones(8, dtype=torch.int32, device=DEVICE),) * 2,
            TypeError,
            "unsupported dtype",
        ),
        (lambda: (_pair(8)[0], _pair(9)[0]), ValueError, "shapes differ"),
        (lambda: (torch.randn(8, 8, device=DEVICE).t(),) * 2, ValueError, "contiguous"),
    ],
    ids=["not-tensors", "mixed-dtypes", "float64", "int32", "shapes", "strided"],
)
def test_bad_input_is_rejected(make, error, message):
    x, y = make()
    with pytest.raises(error, match=message):
        va.vector_add(x, y)


def test_bad_block_size_is_rejected():
    x, y = _pair()
    with pytest.raises(ValueError, match="power of two"):
        va.vector_add(x, y, block_size=1000)


def test_bad_out_is_rejected():
    x, y = _pair()
    with pytest.raises(ValueError, match="out must match"):
        va.vector_add(x, y, out=torch.empty(9, device=DEVICE))
    with pytest.raises(ValueError, match="out must be contiguous"):
        va.vector_add(x, y, out=torch.empty(16, device=DEVICE)[::2])


def test_cpu_tensors_without_interpreter_are_rejected(monkeypatch):
    # Outside the interpreter a CPU tensor handed to the GPU kernel would be
    # read as a device pointer: the launcher must refuse it with advice.
    monkeypatch.setattr(va, "_INTERPRETING", False)  # imported without it
    x, y = torch.randn(4), torch.randn(4)
    with pytest.raises(ValueError, match="TRITON_INTERPRET=1"):
        va.vector_add(x, y)


# the launcher and Triton read TRITON_INTERPRET alike: test_snippet_conventions


@pytest.mark.gpu  # needs a CUDA device beside the CPU
def test_mixed_devices_are_rejected():
    with pytest.raises(ValueError, match="is on"):
        va.vector_add(torch.randn(4, device="cuda"), torch.randn(4))


@pytest.mark.gpu  # issue #28: 2**31 + 4096 elements faulted with int32 offsets
def test_more_than_2_31_elements_are_added():
    n = 2**31 + 4096
    with gpu_memory(3 * n * 2):
        x = torch.ones(n, dtype=torch.float16, device="cuda")
        y = torch.ones(n, dtype=torch.float16, device="cuda")
        y[2**31 :] = 2.0  # the elements past int32's reach get a different sum
        out = poison_(torch.empty_like(x))
        va.vector_add(x, y, out=out)
        low, high = bool((out[: 2**31] == 2.0).all()), bool((out[2**31 :] == 3.0).all())
        del x, y, out
    assert low and high


# What each launcher check prevents (the page's list), shown with the bare
# kernel, which has no checks of its own.
def _bare_add(x, y, out):
    n = x.numel()
    va.vector_add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK_SIZE=256)
    return out


def test_a_transposed_view_gives_wrong_sums_without_an_error(seeded):
    x = torch.randn(64, 48, device=DEVICE).t()  # a view, not contiguous
    y = torch.randn(48, 64, device=DEVICE)
    out = _bare_add(x, y, torch.empty(48, 64, device=DEVICE))
    assert not torch.allclose(out, x + y)  # memory order, not the view's
    assert_close(out, x.t().reshape(48, 64) + y)


def test_mixed_dtypes_would_add_correctly(seeded):
    x = torch.randn(1000, device=DEVICE)
    y = torch.randn(1000, device=DEVICE).half()
    out = _bare_add(x, y, torch.empty_like(x))
    assert_close(out, x + y.float())
    with pytest.raises(TypeError, match="dtypes differ"):
        va.vector_add(x, y)  # the launcher refuses it all the same


@pytest.mark.gpu  # a CPU tensor given to a real GPU launch
def test_triton_itself_refuses_a_cpu_tensor_on_a_gpu():
    x, out = torch.randn(1000, device="cuda"), torch.empty(1000, device="cuda")
    with pytest.raises(ValueError, match="cannot be accessed"):
        _bare_add(x, torch.randn(1000), out)


@pytest.mark.gpu  # the page's n = 1000 arithmetic, on the caching allocator
def test_the_allocator_rounds_a_4000_byte_tensor_up_to_4096_bytes():
    torch.cuda.empty_cache()
    a = torch.empty(1000, device="cuda")
    b = torch.empty(1000, device="cuda")
    assert abs(b.data_ptr() - a.data_ptr()) % 512 == 0
    assert abs(b.data_ptr() - a.data_ptr()) >= 4096


def test_an_out_shifted_over_x_or_y_is_refused_and_out_x_is_allowed():
    buf = torch.arange(3000, dtype=torch.float32, device=DEVICE)
    x, shifted = buf[0:2048], buf[1:2049]
    other = torch.ones(2048, device=DEVICE)
    with pytest.raises(ValueError, match="out overlaps x without being x"):
        va.vector_add(x, other, out=shifted)
    with pytest.raises(ValueError, match="out overlaps y without being y"):
        va.vector_add(other, x, out=shifted)
    want = x + other
    assert torch.equal(va.vector_add(x, other, out=x), want)  # in place: safe


# ------------------------------------------- the page's first, short launch ---
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n", [1, 1000, 65_539])
def test_the_simple_launch_adds_every_element(n, dtype, seeded):
    x = torch.randn(n, device=DEVICE).to(dtype)
    y = torch.randn(n, device=DEVICE).to(dtype)
    out = va.vector_add_simple(x, y)
    assert out.dtype == dtype and out.shape == x.shape
    assert_close(out, x.double() + y.double())


# The page's first run, shown after the bare launch: vector-addition.md embeds
# this section, and its visible code, run in order, ends with it
# (tests/test_visible_code.py runs that program under the interpreter).
def test_the_first_run_the_page_shows(capsys):
    vector_add_simple, vector_add_ref = va.vector_add_simple, va.vector_add_ref
    # --8<-- [start:first_run]
    # A GPU if there is one, unless TRITON_INTERPRET=1 asked for the CPU
    on_gpu = torch.cuda.is_available() and not triton.knobs.runtime.interpret
    device = "cuda" if on_gpu else "cpu"
    for n in (1, 1000, 98_432):  # 98 432: 96 blocks of 1024, then 128 more
        x = torch.randn(n, device=device)
        y = torch.randn(n, device=device)
        torch.testing.assert_close(vector_add_simple(x, y), vector_add_ref(x, y))
        print(f"n={n:>6}: vector_add_simple(x, y) equals x + y on {device}")
    # --8<-- [end:first_run]
    assert capsys.readouterr().out.count("equals x + y") == 3


# What the other checks prevent (the page's list), again with the bare kernel.
def test_a_shorter_y_is_read_past_its_end_without_an_error():
    # y is the first half of a buffer whose second half is 1000: the kernel
    # takes n from x and adds what follows y in memory
    buf = torch.full((1000,), 1000.0, device=DEVICE)
    buf[:500] = 1.0
    x, y = torch.zeros(1000, device=DEVICE), buf[:500]
    out = _bare_add(x, y, torch.empty(1000, device=DEVICE))
    assert bool((out[:500] == 1.0).all()) and bool((out[500:] == 1000.0).all())
    with pytest.raises(ValueError, match="shapes differ"):
        va.vector_add(x, y)


def test_a_strided_out_is_written_in_memory_order():
    x, y = torch.arange(8.0, device=DEVICE), torch.zeros(8, device=DEVICE)
    memory = torch.zeros(16, device=DEVICE)
    view = memory[::2]
    _bare_add(x, y, view)
    assert torch.equal(memory[:8], x)  # elements the view does not hold
    assert not torch.equal(view, x)
    with pytest.raises(ValueError, match="out must be contiguous"):
        va.vector_add(x, y, out=view)


def test_float64_would_be_added_in_float32():
    x = torch.full((4,), 1.0 + 2.0**-40, dtype=torch.float64, device=DEVICE)
    y = torch.zeros(4, dtype=torch.float64, device=DEVICE)
    out = _bare_add(x, y, torch.empty_like(x))
    assert bool((out == 1.0).all())  # the 2**-40 is lost in float32
    with pytest.raises(TypeError, match="use one of"):
        va.vector_add(x, y)


def test_a_block_size_not_a_power_of_two_fails_in_the_compiler():
    x = torch.ones(10, device=DEVICE)
    with pytest.raises(Exception, match="power of 2"):
        va.vector_add_kernel[(1,)](x, x, torch.empty_like(x), 10, BLOCK_SIZE=1000)
    with pytest.raises(ValueError, match="power of two, got 1000"):
        va.vector_add(x, x, block_size=1000)


def test_bfloat16_sums_round_on_a_gpu_and_truncate_in_the_interpreter(seeded):
    # The page: the interpreter cuts float32 down to bfloat16, a GPU rounds
    # to nearest, so their bfloat16 results differ in the last bit
    x = torch.randn(10_000, device=DEVICE).bfloat16()
    y = torch.randn(10_000, device=DEVICE).bfloat16()
    total = x.float() + y.float()  # the float32 sum the kernel forms
    rounded = total.bfloat16()  # torch rounds to nearest
    truncated = (total.view(torch.int32) & -65536).view(torch.float32).bfloat16()
    out = va.vector_add(x, y)
    assert not torch.equal(rounded, truncated)
    assert torch.equal(out, truncated if DEVICE == "cpu" else rounded)


# ------------------------------------------ the solution the page links to ---
def _axpy_solution():
    return load_file(REPO_ROOT / "exercises" / "solutions" / "axpy.py")


def test_the_linked_axpy_solution_widens_its_offsets():
    # review ser1-20: the page warns that int32 offsets wrap past 2**31 - 1
    # elements; the solution it links must not do what it warns against
    source = (REPO_ROOT / "exercises" / "solutions" / "axpy.py").read_text("utf-8")
    assert "pid.to(tl.int64) * BLOCK_SIZE" in source
    x = torch.arange(1000.0, device=DEVICE)
    assert torch.equal(_axpy_solution().axpy(2.0, x, x), 3 * x)


@pytest.mark.gpu  # 2**31 + 4096 float16 elements, three times
def test_the_linked_axpy_solution_adds_past_2_31_elements():
    n = 2**31 + 4096
    with gpu_memory(3 * n * 2):
        x = torch.ones(n, dtype=torch.float16, device="cuda")
        y = torch.zeros(n, dtype=torch.float16, device="cuda")
        y[2**31 :] = 1.0
        out = _axpy_solution().axpy(2.0, x, y)
        low, high = bool((out[: 2**31] == 2.0).all()), bool((out[2**31 :] == 3.0).all())
        del x, y, out
    assert low and high


def test_the_launch_runs_on_the_inputs_device(monkeypatch):
    # review 2026-11-27 l03-03: Triton launches on the current GPU, not on x's
    seen = []
    real_on = va._on
    monkeypatch.setattr(va, "_on", lambda d: seen.append(d) or real_on(d))
    x = torch.arange(5.0, device=DEVICE)
    assert torch.equal(va.vector_add(x, x), 2 * x)
    assert seen == [x.device]


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_tensors_on_a_second_gpu_run_there():
    x = torch.randn(2**20, device="cuda:1")
    with torch.cuda.device(0):
        out = va.vector_add(x, x)
    torch.cuda.synchronize(1)
    assert torch.equal(out, 2 * x)
