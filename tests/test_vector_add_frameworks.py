"""snippets/vector_add_frameworks.py: the Triton version under the interpreter,
every other framework on a GPU. The line counts the reference page shows are
tested in tests/test_loc_hook.py (hooks/loc.py needs mkdocs, which the GPU
image lacks)."""

import pytest
import torch
from conftest import DEVICE, SNIPPETS, assert_close, load_snippet, poison_

fw = load_snippet("vector_add_frameworks")

GPU_PEERS = ["CUDA C++", "Numba CUDA", "CuPy ElementwiseKernel", "CuPy cp.add"]


@pytest.fixture
def poisoned_outputs(monkeypatch):
    """Every implementation allocates with torch.empty_like: make that NaN."""
    real = torch.empty_like
    monkeypatch.setattr(torch, "empty_like", lambda t, **kw: poison_(real(t, **kw)))


@pytest.mark.parametrize("n", [1, 7, 1000, 1024, 65_539])
def test_triton_version_matches_reference(n, seeded, poisoned_outputs):
    x, y = torch.randn(n, device=DEVICE), torch.randn(n, device=DEVICE)
    out = fw.add_triton(x, y)
    assert not torch.isnan(out).any(), "an element was never written"
    assert_close(out, x.double() + y.double())


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda: ([1.0], [2.0]), TypeError, "torch.Tensor"),
        (lambda: (torch.ones(4, device=DEVICE).half(),) * 2, TypeError, "float32"),
        (
            lambda: (torch.ones(4, device=DEVICE), torch.ones(5, device=DEVICE)),
            ValueError,
            "shapes",
        ),
        (lambda: (torch.ones(4, 4, device=DEVICE).t(),) * 2, ValueError, "contiguous"),
        (lambda: (torch.ones(0, device=DEVICE),) * 2, ValueError, "empty"),
    ],
    ids=["lists", "float16", "shapes", "strided", "empty"],
)
@pytest.mark.parametrize("name", list(fw.IMPLEMENTATIONS))
def test_bad_input_is_rejected_before_any_framework_import(name, make, error, message):
    # The checks come first, so they hold even where cupy / numba are missing.
    with pytest.raises(error, match=message):
        fw.IMPLEMENTATIONS[name](*make())


def test_cpu_tensors_without_interpreter_are_rejected(monkeypatch):
    monkeypatch.setattr(fw, "_INTERPRETING", False)  # imported without it
    with pytest.raises(ValueError, match="CUDA GPU"):
        fw.add_triton(torch.ones(4), torch.ones(4))


# Review 2026-11-27 (ser2-12): Triton launches on the current device, so
# tensors on another GPU are refused before any version runs.
class _OnAnotherGpu(torch.Tensor):
    """A CPU tensor that says it lives on cuda:1 (no GPU needed)."""

    @property
    def device(self):
        return torch.device("cuda", 1)


def test_tensors_off_the_current_gpu_are_refused(monkeypatch):
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    x, y = (torch.randn(8).as_subclass(_OnAnotherGpu) for _ in range(2))
    with pytest.raises(ValueError, match=r"on cuda:1, the current device is cuda:0"):
        fw.check_inputs(x, y)


def test_frameworks_are_imported_lazily():
    # The module itself must import without cupy or numba (CPU CI has neither).
    source = (SNIPPETS / "vector_add_frameworks.py").read_text()
    top_level = [
        line for line in source.splitlines() if line.startswith(("import", "from"))
    ]
    assert not any("cupy" in line or "numba" in line for line in top_level)


def test_benchmark_peers_are_the_implementations():
    from triton_course.runner import discovery

    desc = discovery.check_description(fw.BENCHMARK, "vector_add_frameworks.py")
    assert desc["triton"] is fw.add_triton
    assert list(desc["peers"]) == ["PyTorch eager", *GPU_PEERS]
    assert all(desc["peers"][p] is fw.IMPLEMENTATIONS[p] for p in GPU_PEERS)


# ------------------------------------------------------------ GPU only ---
@pytest.mark.gpu
@pytest.mark.parametrize("name", ["Triton", *GPU_PEERS])
@pytest.mark.parametrize("n", [1, 1000, 65_539, 2**20 + 3])
def test_every_framework_matches_on_gpu(name, n, poisoned_outputs):
    torch.manual_seed(0)
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = fw.IMPLEMENTATIONS[name](x, y)
    torch.cuda.synchronize()
    assert not torch.isnan(out).any()
    assert_close(out, x.double() + y.double())


@pytest.mark.gpu
def test_frameworks_share_memory_without_copies():
    import cupy as cp
    import numpy as np

    if not hasattr(np, "row_stack"):  # as in add_numba: NumPy 2.5 removed it
        np.row_stack = np.vstack
    from numba import cuda

    x = torch.arange(8, dtype=torch.float32, device="cuda")
    assert cp.from_dlpack(x).data.ptr == x.data_ptr()
    assert cuda.as_cuda_array(x).device_ctypes_pointer.value == x.data_ptr()


def test_the_pages_sections_in_page_order_run(tmp_path):
    # Review 2026-11-27 (ser2-18): the sections triton-at-a-glance embeds,
    # collapsed ones included, copied in page order, define what they use
    # (the benchmark's peers name add_ref).
    import re

    from conftest import REPO_ROOT

    page = (REPO_ROOT / "docs/reference/triton-at-a-glance.md").read_text()
    names = re.findall(r'--8<-- "vector_add_frameworks\.py:(\w+)"', page)
    source = (SNIPPETS / "vector_add_frameworks.py").read_text()

    def section(name):
        start = source.index(f"# --8<-- [start:{name}]\n")
        return source[start : source.index(f"# --8<-- [end:{name}]")]

    assert "reference" in names and names.index("reference") < names.index("benchmark")
    # a file, not a string: on a GPU @triton.jit reads its kernel's source
    program = tmp_path / "page_program.py"
    program.write_text("\n".join(map(section, names)), encoding="utf-8")
    import runpy

    namespace = runpy.run_path(str(program), run_name="page_program")
    assert namespace["BENCHMARK"]["peers"]["PyTorch eager"] is namespace["add_ref"]
