"""snippets/matmul_tma.py: TMA descriptors and the persistent loop, on CPU and GPU.

Tensor descriptors need rows of a multiple of 16 bytes, so K and N here are
multiples of 8 (fp16/bf16) or 4 (fp32); M, the row count, is free. On a GPU
these tests need compute capability 9.0 (Hopper) or newer.
"""

import re

import pytest
import torch
from conftest import (
    DEVICE,
    REPO_ROOT,
    TOLERANCES,
    assert_close,
    compile_in_subprocess,
    load_snippet,
    poison_,
)

mt = load_snippet("matmul_tma")

if DEVICE == "cuda" and torch.cuda.get_device_capability()[0] < 9:
    pytest.skip("TMA needs an sm_90+ GPU", allow_module_level=True)

SMALL = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2}
SHAPES = [(1, 8, 8), (7, 16, 24), (65, 40, 24), (130, 72, 56)]
DTYPES = [torch.float16, torch.bfloat16, torch.float32]


def rand(*shape, dtype=torch.float32):
    return torch.randn(*shape, device=DEVICE).to(dtype)


def expected(a, b):
    return a.double() @ b.double()


def tolerance(dtype, k):
    # As in test_matmul.py: float32 accumulation, "ieee" for float32 inputs,
    # so the only extra error over TOLERANCES is float32 summation along K.
    if dtype == torch.float32:
        return {"atol": 1e-5 * max(1, k) ** 0.5, "rtol": 1e-5}
    return dict(TOLERANCES[dtype])


@pytest.mark.parametrize("persistent", [False, True], ids=["per-tile", "persistent"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("m, n, k", SHAPES, ids=str)
def test_matches_reference(m, n, k, dtype, persistent, seeded):
    a, b = rand(m, k, dtype=dtype), rand(k, n, dtype=dtype)
    out = poison_(torch.empty(m, n, device=DEVICE, dtype=dtype))
    result = mt.matmul_tma(a, b, out=out, persistent=persistent, config=SMALL)
    assert result is out
    assert not torch.isnan(out).any(), "an element was never written"
    assert_close(out, expected(a, b), **tolerance(dtype, k))


@pytest.mark.parametrize("persistent", [False, True], ids=["per-tile", "persistent"])
def test_transposed_b_uses_the_k_major_path(persistent, seeded):
    # b is the transpose of a row-major N x K matrix (a Linear layer's weight).
    a, w = rand(50, 40, dtype=torch.float16), rand(24, 40, dtype=torch.float16)
    out = mt.matmul_tma(a, w.t(), persistent=persistent, config=SMALL)
    assert_close(out, expected(a, w.t()))


@pytest.mark.parametrize("persistent", [False, True], ids=["per-tile", "persistent"])
def test_whole_tile_epilogue(persistent, seeded):
    # split_epilogue=False stores each tile in one piece (the earlier step).
    a, b = rand(70, 40, dtype=torch.float16), rand(40, 56, dtype=torch.float16)
    out = poison_(torch.empty(70, 56, device=DEVICE, dtype=torch.float16))
    mt.matmul_tma(
        a, b, out=out, persistent=persistent, split_epilogue=False, config=SMALL
    )
    assert_close(out, expected(a, b))


def test_persistent_programs_cover_every_tile(seeded):
    # 9 x 5 = 45 tiles of 16 shared by 4 programs (the interpreter's "SMs"):
    # each program loops over 11 or 12 tiles; any skipped tile stays NaN.
    a, b = rand(130, 64, dtype=torch.float16), rand(64, 72, dtype=torch.float16)
    out = poison_(torch.empty(130, 72, device=DEVICE, dtype=torch.float16))
    mt.matmul_tma(a, b, out=out, persistent=True, config=SMALL)
    assert not torch.isnan(out).any()
    assert_close(out, expected(a, b))


def test_hardware_clips_stores_at_the_edges(seeded):
    # out is the first rows of a poisoned buffer (rows must stay whole for
    # TMA): the tile store past row m must be clipped, not written.
    m, n, k = 37, 24, 16
    a, b = rand(m, k), rand(k, n)
    buffer = poison_(torch.empty(m + 16, n, device=DEVICE))
    mt.matmul_tma(a, b, out=buffer[:m], config=SMALL)
    assert torch.isnan(buffer[m:]).all()
    assert_close(buffer[:m], expected(a, b), **tolerance(torch.float32, k))


def test_empty_and_zero_k():
    assert mt.matmul_tma(rand(0, 8), rand(8, 8), config=SMALL).shape == (0, 8)


def test_reference_is_torch_matmul():
    a, b = torch.eye(3), torch.arange(9.0).reshape(3, 3)
    assert torch.equal(mt.matmul_ref(a, b), b)


# ------------------------------------------------------------ bad input ---
@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda: ([[1.0]], [[2.0]]), TypeError, "torch.Tensor"),
        (lambda: (rand(8), rand(8, 8)), ValueError, "2-D"),
        (lambda: (rand(8, 16), rand(8, 8)), ValueError, "inner dimensions"),
        (lambda: (rand(8, 8), rand(8, 8).half()), TypeError, "dtypes"),
        (lambda: (rand(8, 8).double(), rand(8, 8).double()), TypeError, "unsupported"),
        (lambda: (rand(16, 8).t(), rand(16, 8)), ValueError, "a must be row-major"),
        (
            lambda: (rand(8, 16), rand(16, 32)[:, ::2]),
            ValueError,
            "b must be row-major",
        ),
        (lambda: (rand(8, 13).half(), rand(13, 8).half()), ValueError, "16 bytes"),
        (lambda: (rand(8, 16).half(), rand(16, 12).half()), ValueError, "16 bytes"),
        (lambda: (rand(8, 17)[:, 1:], rand(16, 8)), ValueError, "row-major|aligned"),
    ],
    ids=[
        "not-tensors",
        "1-D",
        "inner-dims",
        "mixed-dtypes",
        "float64",
        "a-transposed",
        "b-strided",
        "K-unaligned",
        "N-unaligned",
        "misaligned",
    ],
)
def test_bad_input_is_rejected(make, error, message):
    a, b = make()
    with pytest.raises(error, match=message):
        mt.matmul_tma(a, b, config=SMALL)


# A config the kernel cannot compute with is refused before anything runs:
# GROUP_M = 0 divided by zero in the grouped ordering (the interpreter
# returned the unwritten output, NaN; a GPU computes an undefined quotient).
BAD_CONFIGS = [
    ({"GROUP_M": 0}, "GROUP_M must be an integer >= 1"),
    ({"GROUP_M": -2}, "GROUP_M must be an integer >= 1"),
    ({"GROUP_M": 1.5}, "GROUP_M must be an integer >= 1"),
    ({"BLOCK_M": 24}, "BLOCK_M must be a power of two"),
    ({"BLOCK_N": 0}, "BLOCK_N must be a power of two"),
    ({"BLOCK_K": 48}, "BLOCK_K must be a power of two"),
]


@pytest.mark.parametrize("persistent", [True, False])
@pytest.mark.parametrize("change, message", BAD_CONFIGS)
def test_a_config_the_kernel_cannot_compute_is_refused(change, message, persistent):
    a, b = rand(40, 64, dtype=torch.float16), rand(64, 48, dtype=torch.float16)
    out = poison_(torch.empty(40, 48, dtype=torch.float16, device=DEVICE))
    with pytest.raises(ValueError, match=message):
        mt.matmul_tma(a, b, out=out, persistent=persistent, config={**SMALL, **change})
    assert torch.isnan(out).all()  # refused before any launch


def test_misaligned_pointer_is_rejected():
    buf = rand(8 * 16 + 1, dtype=torch.float16)
    a = buf[1:].view(8, 16)  # row-major, but starts 2 bytes into the buffer
    with pytest.raises(ValueError, match="aligned"):
        mt.matmul_tma(a, rand(16, 8, dtype=torch.float16), config=SMALL)


def test_bad_out_is_rejected():
    a, b = rand(8, 8), rand(8, 8)
    with pytest.raises(ValueError, match="out must be"):
        mt.matmul_tma(a, b, out=rand(8, 16), config=SMALL)
    with pytest.raises(ValueError, match="out must be row-major"):
        mt.matmul_tma(a, b, out=rand(8, 8).t(), config=SMALL)


def test_an_out_that_shares_memory_with_an_input_is_refused():
    # tiled-gemm review #5, TMA launcher too: out=a read tiles of a that other
    # programs had already overwritten. (A row-major out, which this launcher
    # demands, cannot overlap itself.)
    a, b = rand(16, 16), rand(16, 16)
    buffer = rand(48, 16)
    for name, x, y, out in (
        ("a", a, b, a),
        ("b", a, b, b),
        ("a", buffer[:16], b, buffer[8:24]),
        ("b", a, buffer[32:], buffer[24:40]),
    ):
        before = out.clone()
        with pytest.raises(ValueError, match=f"out shares memory with {name}"):
            mt.matmul_tma(x, y, out=out, config=SMALL)
        assert torch.equal(out, before)
    with pytest.raises(ValueError, match="row-major"):  # its layout, first
        mt.matmul_tma(a, b, out=torch.empty(1, 16, device=DEVICE).expand(16, 16))


def test_an_out_beside_the_inputs_in_one_buffer_is_accepted(seeded):
    buffer = rand(48, 16)
    a, b, out = buffer[:16], buffer[16:32], buffer[32:]
    want = a.double() @ b.double()
    mt.matmul_tma(a, b, out=out, config=SMALL)
    assert_close(out, want, atol=1e-4, rtol=1e-4)


def test_cpu_tensors_without_interpreter_are_rejected(monkeypatch):
    monkeypatch.setattr(mt, "_INTERPRETING", False)  # imported without it
    with pytest.raises(ValueError, match="TRITON_INTERPRET=1"):
        mt.matmul_tma(torch.randn(8, 8), torch.randn(8, 8))


# ------------------------------------------------------------- autotune ---
def test_autotune_configs_are_valid():
    assert 1 <= len(mt.CONFIGS) <= 8
    for cfg in mt.CONFIGS:
        assert set(cfg.kwargs) == {"BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M"}
    assert "B_KMAJOR" in mt.matmul_tma_persistent_kernel_autotuned.keys


@pytest.mark.parametrize("index", range(len(mt.CONFIGS)))
@pytest.mark.parametrize("persistent", [False, True], ids=["per-tile", "persistent"])
def test_each_autotune_config_computes_the_product(index, persistent, seeded):
    if DEVICE == "cpu" and (index > 1 or not persistent):
        pytest.skip("interpreter: two big-tile configs are enough to check wiring")
    cfg = mt.CONFIGS[index]
    meta = dict(cfg.kwargs, num_warps=cfg.num_warps, num_stages=cfg.num_stages)
    m, n, k = (40, 24, 72) if DEVICE == "cpu" else (300, 328, 200)
    a, b = rand(m, k, dtype=torch.float16), rand(k, n, dtype=torch.float16)
    out = mt.matmul_tma(a, b, persistent=persistent, config=meta)
    assert_close(out, expected(a, b))


@pytest.mark.gpu
@pytest.mark.parametrize("persistent", [False, True], ids=["per-tile", "persistent"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_autotuned_kernels_on_gpu(dtype, persistent, seeded):
    a, b = rand(1000, 776, dtype=dtype), rand(776, 552, dtype=dtype)
    out = poison_(torch.empty(1000, 552, device="cuda", dtype=dtype))
    mt.matmul_tma(a, b, out=out, persistent=persistent)
    assert_close(out, expected(a, b))
    out = mt.matmul_tma(a, b.t().contiguous().t(), persistent=persistent)
    assert_close(out, expected(a, b))


def test_benchmark_description():
    names = [bench["name"] for bench in mt.BENCHMARKS]
    assert len(set(names)) == len(names)
    for bench in mt.BENCHMARKS:
        size = bench["sizes"][-1]
        assert (
            bench["work"](size, torch.float16) == 2 * size["M"] * size["N"] * size["K"]
        )
        for size in bench["sizes"]:  # every benchmark shape must suit TMA
            assert size["K"] % 8 == 0 and size["N"] % 8 == 0


# ------------------------------------------------------ the page's claims ---
# (independent review of 2026-11-26, ser1: docs/triton-series/tiled-gemm.md)
def _page_text() -> str:
    # #34: the Hopper kernels have their own page, after the tiled GEMM's
    path = REPO_ROOT / "docs" / "triton-series" / "tiled-gemm-hopper.md"
    return " ".join(path.read_text(encoding="utf-8").split())


class _Recorder:
    """Stands in for a kernel: records the grid of each launch."""

    def __init__(self):
        self.grids = []

    def __getitem__(self, grid):
        self.grids.append(grid)
        return lambda *args, **kwargs: None


@pytest.mark.parametrize(
    "m, sms, programs", [(32, 132, 2), (160, 132, 10), (160, 4, 4)]
)  # 16-row tiles over N = 16: m / 16 tiles
def test_a_persistent_launch_starts_min_tiles_sms(m, sms, programs, monkeypatch):
    # ser1-13: not "exactly as many programs as there are SMs": with fewer
    # tiles than SMs (512^3 with 64 x 64 tiles: 64) each program gets one
    recorder = _Recorder()
    monkeypatch.setattr(mt, "matmul_tma_persistent_kernel", recorder)
    monkeypatch.setattr(mt, "_num_sms", lambda device: sms)
    mt.matmul_tma(rand(m, 16), rand(16, 16), persistent=True, config=SMALL)
    assert recorder.grids == [(programs,)]
    page = _page_text()
    assert "launches exactly as many programs as there are SMs" not in page
    assert "the launcher's grid is `min(tiles, NUM_PROGRAMS)`" in page


_DESCRIPTORS = r"""
import json, sys
from pathlib import Path
from triton_course import codegen, excerpts

tma = excerpts._load(Path("snippets/matmul_tma.py"))
names = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "B_KMAJOR",
         "INPUT_PRECISION", "EPILOGUE_SPLIT")
tile = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8,
        "B_KMAJOR": False, "INPUT_PRECISION": "tf32", "EPILOGUE_SPLIT": True}
base = dict.fromkeys(("a_ptr", "b_ptr", "c_ptr"), "*fp16")
base |= dict.fromkeys(("M", "N", "K"), "i32") | dict.fromkeys(names, "constexpr")
out = {}
for persistent in (True, False):
    kernel = tma.matmul_tma_persistent_kernel if persistent else tma.matmul_tma_kernel
    extra = {"NUM_PROGRAMS": 132, "FLATTEN": True} if persistent else {}
    ttgir = codegen.compile_for(
        kernel, 90, base | dict.fromkeys(extra, "constexpr"), tile | extra,
        ["a_ptr", "b_ptr", "c_ptr"], num_warps=4, num_stages=4)["ttgir"]
    out[str(persistent)] = [ttgir.count(f"ttng.{op}") for op in (
        "tensormap_create", "tensormap_fenceproxy_acquire")]
json.dump(out, sys.stdout)
"""


def test_each_tma_program_builds_three_descriptors_each_fenced():
    # ser1-08: at 512^3 nothing persists; what the TMA kernels add before
    # their first load is three device-side descriptors, each with a fence
    found = compile_in_subprocess(_DESCRIPTORS)
    assert found == {"True": [3, 3], "False": [3, 3]}
    assert all(c.num_stages in (3, 4) for c in mt.CONFIGS)  # "three or four"
    page = _page_text()
    assert "three `ttng.tensormap_create` and three" in page
    assert "`ttng.tensormap_fenceproxy_acquire`" in page
    assert "What only the persistent kernel adds is set-up" not in page
    assert "Nor does persistence" in page


def test_the_notebook_points_at_the_support_table_it_means():
    # ser1-05: the TMA kernels' table is on the tiled-GEMM page, not lesson 01
    recipe = (REPO_ROOT / "notebooks" / "tiled_gemm.md").read_text(encoding="utf-8")
    recipe = " ".join(recipe.split())
    assert "lesson 01's table" not in recipe
    assert '"Which GPUs run these kernels" on the tiled-GEMM page' in recipe
    page = (REPO_ROOT / "docs" / "triton-series" / "tiled-gemm.md").read_text()
    heading = page.index("## Which GPUs run these kernels")
    assert "[[support matmul matmul_tma matmul_fp8]]" in page[heading:]
    for other in (REPO_ROOT / "docs").rglob("*.md"):
        if other.name != "tiled-gemm.md":  # the one support table naming it
            tables = re.findall(r"\[\[support ([^\]]+)\]\]", other.read_text("utf-8"))
            assert "matmul_tma" not in " ".join(tables), other
