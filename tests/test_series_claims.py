"""Statements of the Triton series, the reference page and the home page,
checked (issue #27): compiled for the target where they are about the
compiler, run under the interpreter where they are about behaviour, and read
from the page where only the wording can be checked. Each test fails if the
wrong statement comes back.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import DEVICE, REPO_ROOT, compile_in_subprocess, load_snippet

from triton_course.codegen import for_triton

# module fixtures computed once per run: see heavy_first in conftest.py
pytestmark = pytest.mark.shared_setup

DOCS = REPO_ROOT / "docs"
SERIES = DOCS / "triton-series"


def _page(path) -> str:
    """A page's text with line breaks folded, so phrases split over lines match."""
    return re.sub(r"\s+", " ", (DOCS / path).read_text(encoding="utf-8"))


def _compile(script: str) -> dict:
    """Run a compile script in a process without the interpreter."""
    return compile_in_subprocess(script)


# ------------------------------------------- matmul_tma.py's config comment ---
# The shared memory of a 128 x 256 x 64 tile at 3 and 4 stages, in each of the
# four variants the one config list serves (sm_90, float16, 8 warps).
_TMA_SHARED = r"""
import json, re, sys
from pathlib import Path
from triton_course import codegen, excerpts

tma = excerpts._load(Path("snippets/matmul_tma.py"))
names = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "B_KMAJOR",
         "INPUT_PRECISION", "EPILOGUE_SPLIT")
base = dict.fromkeys(("a_ptr", "b_ptr", "c_ptr"), "*fp16")
base |= dict.fromkeys(("M", "N", "K"), "i32") | dict.fromkeys(names, "constexpr")
tile = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8,
        "B_KMAJOR": False, "INPUT_PRECISION": "tf32"}
out = {}
for persistent in (True, False):
    kernel = tma.matmul_tma_persistent_kernel if persistent else tma.matmul_tma_kernel
    extra = ({"NUM_PROGRAMS": 132, "FLATTEN": True} if persistent else {})
    sig = base | dict.fromkeys(extra, "constexpr")
    for split in (True, False):
        for stages in (3, 4):
            k = codegen.compile_kernel(
                kernel, 90, sig, tile | extra | {"EPILOGUE_SPLIT": split},
                ["a_ptr", "b_ptr", "c_ptr"], num_warps=8, num_stages=stages)
            out[f"{persistent}-{split}-{stages}"] = k.metadata.shared
            if persistent and split and stages == 3:  # the launcher's default
                out["tma90"] = {
                    "tensormap_create": k.asm["ttgir"].count("ttng.tensormap_create"),
                    "bulk_tensor": k.asm["ptx"].count("cp.async.bulk.tensor"),
                }
# sm_80: the descriptors become ordinary loads; shared-memory instructions of
# the persistent kernel with a row-major and with a K-major B, at the largest
# and the smallest tile of its config list
smem = re.compile(r"\b(?:ldmatrix|ld\.shared|st\.shared)")
extra = {"NUM_PROGRAMS": 132, "FLATTEN": True, "EPILOGUE_SPLIT": True}
sig = base | dict.fromkeys(extra, "constexpr")
for bm, bn, bk, warps in ((128, 256, 64, 8), (64, 64, 32, 4)):
    for kmajor in (False, True):
        consts = tile | extra | {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk,
                                 "B_KMAJOR": kmajor}
        k = codegen.compile_kernel(
            tma.matmul_tma_persistent_kernel, 80, sig, consts,
            ["a_ptr", "b_ptr", "c_ptr"], num_warps=warps, num_stages=3)
        out[f"sm80-{bm}x{bn}x{bk}-{kmajor}"] = len(smem.findall(k.asm["ptx"]))
json.dump(out, sys.stdout)
"""
SM90_BLOCK_LIMIT = 232_448  # bytes one block may opt in to on sm_90 (CUDA guide)


@pytest.fixture(scope="module")
def tma_shared():
    return _compile(_TMA_SHARED)


def test_four_stages_of_the_big_tile_fit_only_with_the_split_epilogue(tma_shared):
    # matmul_tma.py keeps three stages because its one config list also
    # serves the persistent kernel with a whole-tile epilogue buffer
    assert tma_shared["True-True-4"] <= SM90_BLOCK_LIMIT  # persistent, split
    assert tma_shared["False-True-4"] <= SM90_BLOCK_LIMIT  # per tile, split
    assert tma_shared["True-False-4"] > SM90_BLOCK_LIMIT  # persistent, whole tile
    assert all(tma_shared[f"{p}-{s}-3"] <= SM90_BLOCK_LIMIT
               for p in (True, False) for s in (True, False))  # fmt: skip


def test_the_epilogue_buffer_is_set_against_the_block_limit(tma_shared):
    # tiled-gemm-hopper review #6: NVIDIA's 228 KB per SM named as NVIDIA's,
    # the per-block 227 KB beside it, and the compiled sizes of both epilogues
    assert SM90_BLOCK_LIMIT == 227 * 1024
    page = _page("triton-series/tiled-gemm-hopper.md")
    assert "in an SM with 228 KB." not in page
    assert (
        "An H100 SM has 228 KB of shared memory and one block may use 227 KB of "
        "it (NVIDIA's figures, Hopper tuning guide)" in page
    )
    whole, split = (
        f"{tma_shared[f'True-{s}-3']:,}".replace(",", " ") for s in ("False", "True")
    )
    assert tma_shared["True-True-3"] < tma_shared["True-False-3"]
    assert (
        f"the persistent kernel needs {whole} bytes with the whole-tile buffer "
        f"and {split} bytes with the split one" in page
    )


def test_descriptors_compile_to_tma_copies_not_only_in_the_interpreter(tma_shared):
    # tiled-gemm-hopper review #3: the installed Triton (3.9 here) compiles
    # tl.make_tensor_descriptor to TMA for sm_90 too, not only 3.6
    assert tma_shared["tma90"]["tensormap_create"] == 3
    assert tma_shared["tma90"]["bulk_tensor"] > 0
    page = _page("triton-series/tiled-gemm-hopper.md")
    assert "this works on triton 3.6 and in the 3.9 interpreter" not in page
    assert "triton 3.6 and 3.9 both compile it to TMA copies for sm_90" in page


def test_the_transpose_note_scopes_the_probe_and_counts_this_kernel(tma_shared):
    # tiled-gemm-hopper review #4: the test of "exactly as many" compiles a
    # probe dot; this page's kernel on sm_80 stages a K-major B with fewer
    # shared-memory instructions than a row-major one
    for t in ("128x256x64", "64x64x32"):
        assert 0 < tma_shared[f"sm80-{t}-True"] < tma_shared[f"sm80-{t}-False"], t
    page = _page("triton-series/tiled-gemm-hopper.md")
    assert "compiled for sm_80 or sm_90, the transposed dot has exactly" not in page
    assert "compiles a small probe dot with and without a transposed operand" in page
    assert (
        "compiled for sm_80, where the descriptors become ordinary loads, its "
        "K-major B takes fewer shared-memory instructions than a row-major one" in page
    )


def test_the_config_comment_states_what_the_compile_found(tma_shared):
    text = (REPO_ROOT / "snippets" / "matmul_tma.py").read_text(encoding="utf-8")
    assert "does not fit beside the epilogue" not in text  # the old, false reason
    comment = re.sub(r"\s+#?\s*", " ", text)
    assert f"{tma_shared['True-True-4']:,}".replace(",", " ") in comment
    assert f"{tma_shared['True-False-4']:,}".replace(",", " ") in comment


# -------------------------------------- persistent programs and the last wave ---
def _persistent_rounds(tiles: int, programs: int) -> list[int]:
    """Programs busy in each round of the persistent loop (tile = pid + i·P)."""
    per_program = [len(range(p, tiles, programs)) for p in range(programs)]
    return [sum(n > r for n in per_program) for r in range(max(per_program))]


def test_a_static_stride_persistent_loop_keeps_a_partial_last_round():
    # 8192³ with 128 × 256 tiles on 132 SMs: the launcher's grid and stride
    tiles = (8192 // 128) * (8192 // 256)
    rounds = _persistent_rounds(tiles, 132)
    assert tiles == 2048 and len(rounds) == 16 and rounds[-1] == 68
    for path in ("triton-series/tiled-gemm-hopper.md",):  # #34: its own page
        text = _page(path)
        assert "no launch wave is left half empty" not in text
        assert "68" in text and "132" in text  # the page does the arithmetic
    doc = (REPO_ROOT / "snippets" / "matmul_tma.py").read_text(encoding="utf-8")
    assert "no launch wave is left half empty" not in doc


# -------------------------------------------- lesson kernels read as kernels ---
@pytest.mark.parametrize(
    "snippet",
    ["vector_add.py", "matmul.py", "matmul_tma.py", "softmax.py", "online_softmax.py"],
)
def test_no_interpreter_workaround_inside_a_kernel(snippet):
    text = (REPO_ROOT / "snippets" / snippet).read_text(encoding="utf-8")
    kernels = re.findall(r"@triton\.jit\n(.*?)(?=\n(?:# --8<--|@|def |[A-Z_]+ =))",
                         text, flags=re.S)  # fmt: skip
    assert kernels, snippet
    for body in kernels:
        assert "UPCAST" not in body
        assert "interpreter" not in body.lower()


@pytest.mark.parametrize("snippet", ["matmul", "matmul_tma"])
def test_bfloat16_products_are_right_with_the_widening_in_the_launcher(snippet):
    # the kernel lost its UPCAST branch; under the interpreter the launcher
    # widens bfloat16 inputs instead, and the result must still be right
    module = load_snippet(snippet)
    launch = module.matmul if snippet == "matmul" else module.matmul_tma
    a = torch.randn(40, 48, dtype=torch.bfloat16, device=DEVICE)
    b = torch.randn(48, 24, dtype=torch.bfloat16, device=DEVICE)
    got = launch(a, b)
    want = (a.double() @ b.double()).to(torch.bfloat16)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), want.float(), rtol=2e-2, atol=2e-2)
    assert "UPCAST" not in _page("triton-series/tiled-gemm.md")


# ------------------------------------------------- tiled GEMM: tl.dot shapes ---
_DOT_SHAPES = r"""
import json, sys
from triton_course import codegen

out = {}
for dtype, k in [("fp16", 8), ("fp16", 16), ("fp32", 4), ("fp32", 8),
                 ("i8", 16), ("i8", 32)]:
    try:
        codegen.dot(90, m=16, n=16, k=k, dtype=dtype)
        out[f"{dtype}-{k}"] = "compiles"
    except Exception:  # noqa: BLE001 - a refusal is the fact
        out[f"{dtype}-{k}"] = "refused"
for m in (16, 32, 64):
    out[f"m{m}"] = codegen.dot_instruction(codegen.dot(90, m=m, n=64, k=16)["ptx"])
json.dump(out, sys.stdout)
"""


def test_the_minimum_k_of_a_dot_depends_on_the_operand_width():
    found = _compile(_DOT_SHAPES)
    assert (found["fp16-8"], found["fp16-16"]) == ("refused", "compiles")
    # fp32: K >= 8 from triton 3.9; the GPU image's 3.6 asks K >= 16
    fp32_k8 = for_triton({"3.6": "refused", "3.9": "compiles"})
    assert (found["fp32-4"], found["fp32-8"]) == ("refused", fp32_k8)
    assert (found["i8-16"], found["i8-32"]) == ("refused", "compiles")
    # on sm_90 wgmma needs 64 rows; a smaller tile gets mma.sync
    assert found["m16"].startswith("mma.sync") and found["m32"].startswith("mma.sync")
    assert found["m64"].startswith("wgmma")
    text = _page("triton-series/tiled-gemm.md")
    assert "reduction dimension must be at least 16" not in text
    text_flat = " ".join(text.split())
    assert (
        "32 for 8-bit ones, and for float32 8 with triton 3.9 but 16 with triton 3.6"
        in text_flat
    )
    assert "for tiles of 64 rows or more" in text
    # ser1-12 (2026-11-27): the checker compiles with the installed Triton
    # only, so the pages name the version difference the learner can meet
    index = _page("triton-series/index.md")
    assert "compiles your kernels for sm_90 on the CPU with the Triton you have" in (
        index
    )
    assert "triton 3.6 refuses a float32 `tl.dot` whose K is below 16" in index
    assert "keep `BLOCK_K` at 16 or more for float32" in text_flat


def test_fp32_accumulation_is_not_claimed_free_on_every_gpu():
    text = _page("triton-series/tiled-gemm.md")
    assert "add in float32 at full speed" not in text
    assert "GeForce RTX 30xx and 40xx" in text and "whitepapers" in text


def test_the_matmul_launcher_has_no_tf32_switch_and_the_page_says_so():
    import inspect

    params = inspect.signature(load_snippet("matmul").matmul).parameters
    assert not {"precision", "input_precision", "tf32"} & set(params)
    text = _page("triton-series/tiled-gemm.md")
    assert 'Pass `"tf32"` yourself' not in text
    assert "`matmul()` has no switch for it" in text


def test_grouping_is_judged_against_the_cublas_timed_beside_it():
    text = _page("triton-series/tiled-gemm.md")
    # a rate over another table's rate moves with the GPU's state between
    # tables (cuBLAS itself differs between the two): no such claim stands
    assert "value=vs:matmul_ungrouped" not in text
    assert "clearest at the largest size" not in text and ">1.2" not in text
    section = text[text.index("[[timings matmul_ungrouped]]") :]
    section = section[: section.index("</details>")]  # #34: its collapsed block
    assert "bench=matmul_ungrouped gpu=h100 value=ratio:cuBLAS" in section
    assert "bench=matmul gpu=h100 value=ratio:cuBLAS" in section


def test_no_step_gain_is_a_ratio_of_two_tables():
    text = _page("triton-series/tiled-gemm.md") + _page(
        "triton-series/tiled-gemm-hopper.md"
    )
    for bench in ("matmul_tma", "matmul_tma_persistent", "matmul_tma_persistent_split"):
        assert f"bench={bench} gpu=h100 value=vs:" not in text
        assert f"bench={bench} gpu=h200 value=vs:" not in text


# ------------------------------------------------------ prose versus method ---
@pytest.mark.parametrize(
    "path",
    ["triton-series/vector-addition.md", "triton-series/softmax.md",
     "triton-series/tiled-gemm-hopper.md", "reference/triton-at-a-glance.md"],
)  # fmt: skip
def test_pages_that_describe_the_timer_say_which_data_it_timed(path):
    text = _page(path)
    assert "launch path" in text
    # every published file is the runner's format 2 (#33 removed the H200's
    # single-round data): no page may describe data the site no longer has
    for data in (REPO_ROOT / "data" / "timings").glob("*.json"):
        assert json.loads(data.read_text("utf-8"))["format_version"] == 2
    assert "single-round" not in text and "H200" not in text


@pytest.mark.parametrize(
    "path", ["triton-series/tiled-gemm.md", "triton-series/fp8-gemm.md"]
)
def test_gemm_pages_describe_no_data_the_site_no_longer_has(path):
    # #34: the launch path is named where the small sizes are read (the
    # Hopper page, above); the other GEMM pages describe no removed data
    text = _page(path)
    assert "single-round" not in text and "H200" not in text


def test_old_readings_of_launch_bound_data_are_gone():
    assert "dominated by launch overhead" not in _page(
        "triton-series/vector-addition.md"
    )
    assert "far below cuBLAS, and erratic" not in _page("triton-series/tiled-gemm.md")
    ref = _page("reference/triton-at-a-glance.md")
    assert "each call including its allocation of the output" not in ref


# ----------------------------------------------------------------- softmax ---
@pytest.fixture(scope="module")
def padded_softmax():
    import triton
    import triton.language as tl

    @triton.jit
    def row_softmax(x_ptr, out_ptr, n, PAD: tl.constexpr, BLOCK: tl.constexpr):
        cols = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + cols, mask=cols < n, other=PAD).to(tl.float32)
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_ptr + cols, e / tl.sum(e, axis=0), mask=cols < n)

    def run(x, pad):
        out = torch.empty_like(x)
        row_softmax[(1,)](x, out, x.numel(), PAD=pad, BLOCK=8)
        return out

    return run


def test_other_zero_breaks_positive_rows_too(padded_softmax):
    x = torch.tensor([1.0, 2.0, 3.0], device=DEVICE)  # a row shorter than its block
    want = torch.softmax(x.double(), 0).float()
    torch.testing.assert_close(padded_softmax(x, float("-inf")), want)
    wrong = padded_softmax(x, 0.0)
    assert (wrong - want).abs().max() > 1e-2  # five padding lanes add e^(0-3) each
    text = _page("triton-series/softmax.md")
    assert "positive rows included" in text
    assert "would get a wrong maximum from the padding" not in text


def test_the_quarter_bound_is_stated_as_an_hbm_bound():
    text = _page("triton-series/softmax.md")
    assert "at best reach a quarter of the fused kernel's speed. It" not in text
    assert "crossed the bus to the GPU's main memory (HBM)" in text
    assert 'value="ratio:PyTorch unfused" is="<4"' in text  # checked by the build


def test_the_two_kernels_second_read_cannot_hit_l2():
    mod = load_snippet("online_softmax")
    data = json.loads(
        (REPO_ROOT / "data" / "timings" / "nvidia-h100-80gb-hbm3.json").read_text(
            "utf-8"
        )
    )
    l2 = data["gpu"]["l2_bytes"]
    for size in mod.BENCHMARK["sizes"]:
        for dtype in mod.BENCHMARK["dtypes"]:
            itemsize = torch.empty((), dtype=getattr(torch, dtype)).element_size()
            assert size["n_rows"] * size["n_cols"] * itemsize > 2 * l2
    # so the two kernels' second read comes from DRAM (the page says so), and
    # only the fused kernel, whose program rereads its row at once, can hit L2
    text = " ".join(_page("triton-series/online-softmax.md").split())
    assert "second read may come partly from the L2 cache" not in text
    assert "starts again from the first row, so the second read comes from DRAM" in text


# ----------------------------------------------------- series index: compiler ---
_SPECIALISE_AND_AMD = r"""
import json, re, sys
import triton
from triton._C.libtriton import native_specialize_impl
from triton.backends.compiler import BaseBackend, GPUTarget
from triton.compiler import ASTSource
from triton_course import codegen

out = {"kinds": {str(v): native_specialize_impl(BaseBackend, v, False, True, True)[0]
                 for v in (1, 2, 16)}}
sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32",
       "M": "constexpr", "N": "constexpr", "K": "constexpr"}
for name, target in (("hip", GPUTarget("hip", "gfx942", 64)),
                     ("cuda", GPUTarget("cuda", 90, 32))):
    src = ASTSource(fn=codegen._probes().dot_kernel, signature=sig,
                    constexprs={(3,): 64, (4,): 64, (5,): 32})
    k = triton.compile(src, target=target)
    out[name] = {"layouts": sorted(set(re.findall(r"#ttg\.(\w+)<", k.asm["ttgir"]))),
                 "stages": sorted(k.asm)}
json.dump(out, sys.stdout)
"""


@pytest.fixture(scope="module")
def specialise_and_amd():
    return _compile(_SPECIALISE_AND_AMD)


def test_an_integer_equal_to_one_is_specialised_as_a_constant(specialise_and_amd):
    kinds = specialise_and_amd["kinds"]
    assert kinds["1"] == "constexpr" and kinds["2"] != "constexpr"
    assert "an integer equal to 1 becomes a constant" in _page("triton-series/index.md")


def test_the_amd_back_end_builds_its_own_tritongpu_ir(specialise_and_amd):
    amd, nvidia = specialise_and_amd["hip"], specialise_and_amd["cuda"]
    assert "amd_mfma" in amd["layouts"] and "amd_mfma" not in nvidia["layouts"]
    assert "nvidia_mma" in nvidia["layouts"]
    assert "hsaco" in amd["stages"] and "ptx" not in amd["stages"]
    text = _page("triton-series/index.md")
    assert "the first three stages are shared" not in text
    assert "`#ttg.amd_mfma`" in text


def test_a_custom_op_around_a_launcher_compiles_under_the_interpreter():
    if DEVICE != "cpu":
        pytest.skip("this is a claim about the interpreter; the CPU suite checks it")
    script = r"""
import os, sys, json
os.environ["TRITON_INTERPRET"] = "1"
import torch
from triton_course.snippet_modules import load_file
va = load_file("snippets/vector_add.py")

@torch.library.custom_op("series_claims::add", mutates_args=())
def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return va.vector_add(x, y)

@add.register_fake
def _(x, y):
    return torch.empty_like(x)

x, y = torch.randn(1000), torch.randn(1000)
out = torch.compile(add, fullgraph=True)(x, y)
json.dump({"ok": bool(torch.equal(out, x + y))}, sys.stdout)
"""
    env = dict(os.environ, TRITON_INTERPRET="1")
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1])["ok"]
    text = _page("triton-series/index.md")
    assert "`torch.compile` of a custom op needs a GPU" not in text
    assert "`torch.library.custom_op` compiles" in text


# ------------------------------------------------------------ installation ---
def test_the_laptop_install_says_where_it_works_and_where_torch_comes_from():
    pins = (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    torch_pin = re.search(r'"torch==([\d.]+)"', pins).group(1)
    triton_pin = re.search(r'"triton==([\d.]+)"', pins).group(1)
    text = _page("triton-series/index.md")
    assert f"pip install torch=={torch_pin} --index-url " in text
    assert "https://download.pytorch.org/whl/cpu" in text
    assert f"`triton` {triton_pin}" in text
    assert "no macOS or Windows" in text


def test_no_page_says_every_pytorch_gpu_install_has_triton():
    for path in (
        "index.md",
        "triton-series/index.md",
        "reference/triton-at-a-glance.md",
    ):
        text = _page(path)
        assert "every PyTorch GPU installation" not in text
    ref = _page("reference/triton-at-a-glance.md")
    assert "The Windows CUDA wheels carry none" in ref


def test_the_reference_points_to_where_triton_op_and_autograd_are_shown():
    softmax = _page("triton-series/softmax.md")
    assert "triton_op" not in softmax and "autograd.Function" not in softmax
    ref = _page("reference/triton-at-a-glance.md")
    assert "the softmax tutorial show both" not in ref
    target = DOCS / "gpu-architecture/03-custom-kernels/pytorch-integration.md"
    shown = target.read_text(encoding="utf-8")
    assert "triton_op" in shown and "autograd.Function" in shown
    assert "03-custom-kernels/pytorch-integration.md" in ref


# --------------------------------------------------------------- home page ---
def test_the_home_page_lists_every_notebook_and_says_what_they_hold():
    text = _page("index.md")
    notebooks = sorted((DOCS / "notebooks").glob("*.ipynb"))
    assert notebooks
    for path in notebooks:
        assert f"(notebooks/{path.name})" in text, f"{path.name} not on the home page"
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        first = next(c for c in cells if c["cell_type"] == "code")
        source = "".join(first["source"])
        assert "running on:" in source  # "the first cell of each prints the GPU"
    # the old claim, made before any notebook had been run on a GPU
    assert "stored with the outputs of a run on a GPU" not in text


def test_the_home_page_does_not_claim_gpu_only_kernels_run_on_the_cpu():
    text = _page("index.md")
    assert "every kernel is tested on the CPU" not in text
    assert "CUDA C++, Numba and CuPy versions" in text and "need a GPU" in text
    assert "Triton has no macOS or Windows wheels" in text


def test_the_ptx_tab_names_only_compare_instructions_of_the_excerpt():
    # index review #1: the tab said setp.lt.s32; the offsets are int64
    page = _page("triton-series/index.md")
    tab = page.split('=== "5. PTX"', 1)[1].split("```", 1)[0]
    named = set(re.findall(r"setp\.\w+\.\w+", tab))
    excerpt = (DOCS / "assets" / "excerpts" / "vector_add.ptx.txt").read_text()
    assert named, "the PTX tab no longer names the mask compare"
    assert named <= set(re.findall(r"setp\.\w+\.\w+", excerpt)), named


def test_the_checker_prose_says_what_it_compares_and_what_it_cannot_see():
    # index review #2: the checker compares stored values with the result
    page = _page("triton-series/index.md")
    assert "must still hold the value that store left" in page
    # ser1-08 (2026-11-27): values alone cannot tell a copy from a kernel
    # that computes; the series' checkers look at what the kernels read
    assert "Values alone cannot tell a kernel that computes from one" in page
    assert "copied into the output by a kernel fails" in page
    from triton_course.exercises import registry

    for name in ("axpy", "matmul_bias_relu", "softmax_temperature"):
        source = (REPO_ROOT / "triton_course" / "exercises" / f"{name}.py").read_text(
            encoding="utf-8"
        )
        assert "foreign_loads(" in source, name
        assert registry()[name].inspect is not None, name


@pytest.mark.skipif(DEVICE != "cpu", reason="program order is the interpreter's")
def test_vector_add_refuses_a_partly_overlapping_out_and_the_page_says_so():
    # vector-addition review #4: a shifted out gave a wrong sum with no error;
    # the launcher now refuses it, and out=x exactly stays allowed (safe)
    mod = load_snippet("vector_add")
    buf = torch.arange(3000, dtype=torch.float32)
    x, out = buf[0:2048], buf[1:2049]
    with pytest.raises(ValueError, match="out overlaps x without being x"):
        mod.vector_add(x, x.clone(), out=out)
    with pytest.raises(ValueError, match="out overlaps y without being y"):
        mod.vector_add(x.clone(), x, out=out)
    x = torch.arange(2048, dtype=torch.float32)
    want = x + x
    assert torch.equal(mod.vector_add(x, x, out=x), want)
    page = _page("triton-series/vector-addition.md")
    assert "partly overlaps `x` or `y`** (the same memory" in page
    assert "is *not* refused" not in page
    # the list is of what the launcher stops (ser1-02 rewrote it)
    assert "Most of the checks stop an input" in page
    assert "a few elements): programs would read elements that another" in page
    assert "that says what to change" not in page  # review #5


@pytest.mark.skipif(DEVICE != "cpu", reason="the checker runs under the interpreter")
def test_the_vector_addition_exercises_say_what_the_checker_demands():
    # vector-addition review #2/#3: strided inputs, constexpr a, who picks sizes
    page = _page("triton-series/vector-addition.md")
    assert "For a non-contiguous `x` or `y`, compute the right answer or raise" in page
    assert "It fails an `a` that reaches the kernel as a `tl.constexpr`" in page
    assert "for the mask test your function picks the size and dtype" in page
    from triton_course.exercises import registry

    axpy = registry()["axpy"]
    assert "raise a ValueError" in axpy.task
    assert any(case.get("strided") for case in axpy.cases)
    assert axpy.inspect is not None
    # ser1-05, -07, -09 (2026-11-27): a length past any small fixed grid, a
    # length seen again with new data, and one length with two values of a
    plain = [c for c in axpy.cases if not c.get("strided")]
    assert max(c["n"] for c in plain) == 2**16 + 3
    pairs = [(c["n"], c["a"]) for c in plain]
    assert len(pairs) > len(set(pairs)), "no case repeats a length and a"
    by_n: dict = {}
    for n, a in pairs:
        by_n.setdefault(n, set()).add(a)
    assert any(len(values) > 1 for values in by_n.values())
    assert "lengths up to \\(2^{16} + 3\\)" in page
    assert "calls `axpy` twice on one length with new data" in page
    assert "one equal to `a`, or any whose value changes when only `a` does" in page
    assert "fails an `a` passed as a `tl.constexpr`" not in page
    # ser1-10: a sixth add whose kernel has no mask but whose out is safe
    from triton_course.exercises import catch_missing_mask

    variants = catch_missing_mask._variants()
    assert len(variants) == 6 and "six adds" in page
    assert sum(not writes for _, _, writes in variants) == 3
    assert "fails an answer read from the code or the names" in page


_ONLINE_COLS = r"""
import json, sys
from pathlib import Path
from triton_course import codegen, excerpts

mod = excerpts._load(Path("snippets/online_softmax.py"))
sig = {"x_ptr": "*fp16", "m_ptr": "*fp32", "d_ptr": "*fp32", "n_cols": "i64",
       "n_chunks": "i32", "x_row_stride": "i64", "CHUNK": "constexpr",
       "BLOCK_SIZE": "constexpr"}
k = codegen.compile_kernel(mod.online_softmax_stats_kernel, 90, sig,
                           {"CHUNK": 65536, "BLOCK_SIZE": 4096}, ["x_ptr"])
json.dump(k.asm["ttir"], sys.stdout)
"""


def test_the_online_softmax_page_states_the_int32_column_limit():
    # online-softmax review #1: even with n_cols an i64 the column index is
    # int32, so rows of 2**31 or more wrap; the page must say so while it is
    ttir = _compile(_ONLINE_COLS)
    int32_cols = re.search(r"%cols\S* = arith\.addi [^\n]*: tensor<\d+xi32>", ttir)
    page = _page("triton-series/online-softmax.md")
    assert "There is no upper limit on the row length" not in page
    if int32_cols:
        assert r"fewer than \(2^{31}\) elements (`MAX_COLS`); a longer one" in page
        assert "is refused" in page
        # and the launcher refuses such rows (a meta tensor: no 4 GiB needed)
        online = load_snippet("online_softmax")
        x = torch.empty(1, 2**31, dtype=torch.float16, device="meta")
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(online, "_interpreting", lambda: True)
            with pytest.raises(ValueError, match="int32"):
                online.online_softmax(x)
    else:  # widened: drop the limit from the page, and this branch
        pytest.fail("the column index is no longer int32: update the page")


@pytest.mark.skipif(DEVICE != "cpu", reason="checked under the interpreter")
def test_matmul_refuses_an_out_that_overlaps_and_the_page_says_so():
    # tiled-gemm #5: out=a and an expanded out gave a wrong product with no
    # error; matmul now refuses both, and the page says what and why
    matmul = load_snippet("matmul")
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    with pytest.raises(ValueError, match="out shares memory with a"):
        matmul.matmul(a, b, out=a)
    with pytest.raises(ValueError, match="out's elements overlap"):
        matmul.matmul(a, b, out=torch.empty(1, 64).expand(64, 64))
    x = a.clone()
    torch.matmul(x, b, out=x)  # the page: no safer in PyTorch on the CPU
    assert torch.equal(x, torch.zeros_like(x))  # torch 2.13 (CPU), as pinned
    page = " ".join(_page("triton-series/tiled-gemm.md").split())
    assert "shares memory with `a` or `b`**" in page
    assert "on the CPU, with torch 2.13, it returns zeros" in page
    assert "**whose own elements overlap**" in page
    assert "does not check either yet" not in page


@pytest.mark.skipif(DEVICE != "cpu", reason="checked under the interpreter")
def test_softmax_launchers_refuse_an_out_whose_rows_overlap_and_pages_say_so():
    # online-softmax #5, softmax #2: an expanded out was accepted and filled
    # wrongly; now refused, and the pages say what is refused and why
    online = load_snippet("online_softmax")
    softmax = load_snippet("softmax")
    x = torch.randn(3, 3000)
    for launch in (online.online_softmax, softmax.softmax, softmax.softmax_rows):
        with pytest.raises(ValueError, match="out's rows overlap"):
            launch(x, out=torch.empty(1, 3000).expand(3, 3000))
        buffer = torch.randn(4, 3000)
        with pytest.raises(ValueError, match="out shares memory with x"):
            launch(buffer[:3], out=buffer[1:])
    pages = {
        "online-softmax.md": "An `out` whose rows overlap (a row stride of 0",
        "softmax.md": "its rows must not overlap (`out.stride(0) >= n_cols`",
    }
    for name, words in pages.items():
        page = _page(f"triton-series/{name}")
        assert words in page, name
        assert "`out=x` is allowed" in page, name
        assert "rows must not share memory" not in page, name


_MASKED_LOAD = r"""
import json, sys
import triton
import triton.language as tl
from triton_course import codegen


@triton.jit
def masked_copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


k = codegen.compile_kernel(masked_copy, 90,
    {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
    {"BLOCK": 128}, ["x_ptr", "out_ptr"])
json.dump(k.asm["ptx"], sys.stdout)
"""


def test_a_load_without_other_is_zero_filled_on_3_9_and_the_page_says_so(tmp_path):
    # softmax review #3: "undefined, changes from run to run" was not what
    # triton does: the PTX zeroes the register before the predicated load. CI
    # compiles with 3.9, the GPU runner's lane with 3.6 (review ser2-14)
    script = tmp_path / "masked_load.py"
    script.write_text(_MASKED_LOAD)
    ptx = compile_in_subprocess(script)
    zeroed = re.search(
        r"mov\.u32 (%r\d+), 0x0;\s*\n\s*@%p\d+ ld\.global\.b32 \{ \1 \}", ptx
    )
    page = _page("triton-series/softmax.md")
    assert "changes from run to run" not in page
    if zeroed:
        assert "triton 3.6 and 3.9 in fact fill them with zeros" in page
    else:
        pytest.fail("masked-off lanes are no longer zeroed: update softmax.md")


def test_softmax_page_counts_and_launches_as_the_snippet_does():
    # softmax review #4 and #5
    source = (REPO_ROOT / "snippets" / "softmax.py").read_text()
    page = _page("triton-series/softmax.md")
    assert "three temporary tensors" not in page
    assert "two temporary tensors the size of" in page
    assert "softmax_rows_kernel[grid](" in source
    assert "launches exactly what `softmax` does" not in page
    assert "a different kernel, `softmax_rows_kernel`" in page


def test_tiled_gemm_page_keeps_unmeasured_and_flippable_claims_out():
    # tiled-gemm review #6, #7, #8 (#34: the small sizes on the Hopper page)
    page = _page("triton-series/tiled-gemm.md") + _page(
        "triton-series/tiled-gemm-hopper.md"
    )
    assert "why it raises the L2 hit rate" not in page
    assert "When B, with the A bands in flight, is larger than the L2 cache" in page
    assert "does not run at the same speed" not in page
    assert "need not run at the same speed" in page
    assert "The tile count does not explain it" in page
    assert "_config(64, 64, 64" in (REPO_ROOT / "snippets" / "matmul.py").read_text()
    assert (
        "_config(64, 64, 64" in (REPO_ROOT / "snippets" / "matmul_tma.py").read_text()
    )


def test_online_softmax_page_bytes_and_peer_percentages():
    # online-softmax review #2 and #4: no "more than 100 %" claim over data
    # whose ceiling is the peer itself; the statistics bytes as the snippet
    # moves them (8 per slice written, all of a row's slices read in pass 2)
    page = _page("triton-series/online-softmax.md")
    source = (REPO_ROOT / "snippets" / "online_softmax.py").read_text()
    assert "can show more than 100 %" not in page
    assert "16 bytes per slice" not in page
    assert "pass 1 writes 8 bytes per slice" in page
    assert "tl.load(m_ptr + row * n_chunks + slices" in source
    # #33: no contender's rate moves the ceiling any more; a peer whose
    # counted bytes exceed what it moves is flagged, and the page says so
    assert "roofline is that peer's rate" not in page
    assert "flags its rate as one whose bytes are miscounted" in page
    assert "../reference/how-numbers-are-made.md" in page


def test_exercise_pages_say_what_their_checkers_check():
    # online-softmax #3, softmax #1, tiled-gemm #1-#4: the "(checked)" texts
    assert "no single `tl.load` may cover a whole row" in _page(
        "triton-series/online-softmax.md"
    )
    assert "a launcher that assumes the row stride is `n_cols` fails" in _page(
        "triton-series/softmax.md"
    )
    gemm = _page("triton-series/tiled-gemm.md")
    assert "a `ValueError` for them fails" in gemm
    assert "A bias epilogue done in PyTorch after the kernel fails" in gemm


# ------------------------------------ review of 2026-11-26 (ser1, l03, mod) ---
def _setup_cell(monkeypatch, capsys, capability):
    """Run the notebooks' first cell as if on a GPU of this compute capability
    (None: no GPU); return its globals and what it printed."""
    import types

    import numpy

    text = (REPO_ROOT / "notebooks" / "_setup.py").read_text(encoding="utf-8")
    cell = text.split("# --8<-- [start:setup]", 1)[1].split("# --8<-- [end:setup]")[0]
    props = types.SimpleNamespace(
        name="Test GPU", major=capability and capability[0],
        minor=capability and capability[1], shared_memory_per_block_optin=99 * 1024,
    )  # fmt: skip
    monkeypatch.setattr(torch.cuda, "is_available", lambda: capability is not None)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: props)
    # the cell may switch the interpreter on and quieten NumPy: undo both
    monkeypatch.setenv("TRITON_INTERPRET", os.environ.get("TRITON_INTERPRET", "0"))
    saved = numpy.geterr()
    try:
        scope: dict = {}
        exec(cell, scope)
    finally:
        numpy.seterr(**saved)
    return scope, capsys.readouterr().out


@pytest.mark.parametrize(
    "capability, device, says",
    [
        ((9, 0), "cuda", None),
        ((8, 0), "cuda", None),
        ((7, 5), "cuda", "compiles its kernels for 7.5 in CI"),
        ((7, 0), "cuda", "does not compile its kernels for it"),
        ((6, 1), "cpu", "below the 7.0 that PyTorch asks of a GPU"),
        (None, "cpu", "no CUDA GPU here"),
    ],
)
def test_the_setup_cell_uses_every_gpu_pytorch_gives_triton(
    capability, device, says, monkeypatch, capsys
):
    # ser1-04, l03-09, mod-14: 7.5 was the course's cut-off, not Triton's;
    # triton compiles for sm_70 (and sm_60), torch's has_triton() asks >= 7.0
    scope, out = _setup_cell(monkeypatch, capsys, capability)
    assert scope["DEVICE"] == device
    assert "needs compute capability 7.5" not in out
    if says:
        assert says in out
    below_support = capability is not None and (7, 0) <= capability < (8, 0)
    assert ("tl.dot runs here without tensor cores" in out) == below_support
    from torch.utils import _triton

    with open(_triton.__file__, encoding="utf-8") as f:
        assert ".major >= 7" in f.read()  # the floor the cell names


def test_the_setup_cell_says_which_launcher_sizes_tiles_to_shared_memory():
    # l03-10: only lesson 02's attention launcher reads the GPU's shared memory
    text = (REPO_ROOT / "notebooks" / "_setup.py").read_text(encoding="utf-8")
    assert "The launchers size their tiles" not in text
    assert "attention launcher sizes its" in text
    readers = [
        p.name
        for p in (REPO_ROOT / "snippets").glob("*.py")
        if "shared_memory_per_block" in p.read_text(encoding="utf-8")
    ]
    assert readers == ["flash_attention.py"], readers


_SIXTEEN_BIT_ADD = r"""
import json, re, sys
from triton_course import codegen
from triton_course.snippet_modules import load_file

va = load_file("snippets/vector_add.py")
out = {}
for dtype, arch in (("fp16", 75), ("fp16", 80), ("fp16", 90), ("bf16", 90)):
    sig = {"x_ptr": f"*{dtype}", "y_ptr": f"*{dtype}", "out_ptr": f"*{dtype}",
           "n_elements": "i32", "BLOCK_SIZE": "constexpr"}
    k = codegen.compile_kernel(va.vector_add_kernel, arch, sig, {"BLOCK_SIZE": 1024},
                               ["x_ptr", "y_ptr", "out_ptr", "n_elements"])
    found = re.findall(r"\b(add\.[a-z0-9]+)", k.asm["ptx"])
    out[f"{dtype} {arch}"] = sorted(set(found))
json.dump(out, sys.stdout)
"""


def test_one_16_bit_add_is_emitted_as_a_16_bit_add():
    # ser1-22: the float32 detour of one addition gives the 16-bit sum, and
    # LLVM narrows it; the page must not say the add happens in float32
    adds = _compile(_SIXTEEN_BIT_ADD)
    for key in ("fp16 75", "fp16 80", "fp16 90"):
        assert "add.f16x2" in adds[key] and "add.f32" not in adds[key], adds
    assert "add.bf16x2" in adds["bf16 90"] and "add.f32" not in adds["bf16 90"]
    page = _page("triton-series/vector-addition.md")
    assert "the PTX for float16 has `add.f16x2`, not `add.f32`" in page
    assert "the conversion is free" not in page
    kernel = (REPO_ROOT / "snippets" / "vector_add.py").read_text(encoding="utf-8")
    assert "the wider add costs nothing" not in kernel


def test_the_vector_addition_checks_are_described_as_the_launcher_does_them():
    # ser1-02, ser1-10: several checks stop silent wrong answers, and the
    # messages the page quotes as advice are the launcher's own
    page = _page("triton-series/vector-addition.md")
    assert "only one of them guards against a silent wrong answer" not in page
    assert "only state what differs" not in page
    assert "Most of the checks stop an input that the kernel would turn" in page
    source = (REPO_ROOT / "snippets" / "vector_add.py").read_text(encoding="utf-8")
    for advice in ("call .contiguous()", "set \"\n            \"TRITON_INTERPRET=1",
                   "use one of", "pass a new tensor"):  # fmt: skip
        assert advice in source, advice
    for said in ("call `.contiguous()`", "set `TRITON_INTERPRET=1`",
                 "use one of the supported dtypes", "pass a new `out`"):  # fmt: skip
        assert said in page, said


def test_the_cpu_tensor_message_is_quoted_as_the_installed_triton_words_it():
    # ser1-17 (2026-11-27): triton 3.6 names the argument's position, 3.9 not
    import triton

    nvidia = Path(triton.__file__).parent / "backends" / "nvidia"
    source = "".join(
        p.read_text(encoding="utf-8", errors="replace")
        for p in (nvidia / "driver.c", nvidia / "driver.py")
        if p.exists()
    )
    source = re.sub(r'"\s*"', "", source)  # C string literals split over lines
    words = {"3.6": "Pointer argument (at %d) cannot be accessed from Triton",
             "3.9": "Pointer argument cannot be accessed from Triton"}  # fmt: skip
    version = ".".join(triton.__version__.split(".")[:2])
    if version in words:
        assert words[version] in source
    page = _page("triton-series/vector-addition.md")
    assert (
        '"Pointer argument (at 0) cannot be accessed from Triton (cpu tensor?)"' in page
    )
    assert 'the same without "(at 0)" in 3.9' in page


def test_pages_say_that_specialisation_also_compiles_new_versions():
    # ser1-16 (2026-11-27): a launch compiles again when an integer or pointer
    # argument specialises differently, not only for new types and constants
    from triton._C.libtriton import native_specialize_impl
    from triton.backends.compiler import BaseBackend

    def kind(value):
        return native_specialize_impl(BaseBackend, value, False, True, True)

    assert kind(1024) != kind(1000) and kind(1)[0] == "constexpr"
    x = torch.empty(64)
    assert kind(x) != kind(x[1:])  # a pointer's divisibility by 16 too
    index = _page("triton-series/index.md")
    assert "whether an integer or a pointer is divisible by 16" in index
    page = _page("triton-series/vector-addition.md")
    assert "`n_elements = 1000` after 1024 compiles a second version" in page
    assert "later launches reuse the compiled version" not in page


def test_the_kernels_extra_keeps_numpy_below_2_4_for_triton_3_6():
    # ser1-11 (2026-11-27): triton 3.6's interpreter int()s a one-element
    # array, which NumPy 2.4 refuses (every kernel with a computed loop bound)
    import tomllib

    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text("utf-8"))
    kernels = project["project"]["optional-dependencies"]["kernels"]
    assert "numpy<2.4" in kernels, kernels
    assert "NumPy below 2.4" in _page("triton-series/index.md")


def test_the_interpreters_bfloat16_truncation_is_on_the_pages():
    # ser1-14 (tests/test_interpreter_gaps.py shows the truncation itself)
    assert "cuts off the low bits where a GPU rounds to nearest" in _page(
        "triton-series/index.md"
    )
    assert "by cutting off the low bits, where a GPU rounds to nearest" in _page(
        "triton-series/vector-addition.md"
    )
    assert "the interpreter truncates where a GPU rounds" in _page("index.md")
    recipe = (REPO_ROOT / "notebooks" / "vector_addition.md").read_text("utf-8")
    assert "slower, but the same results" not in recipe


_MLIR_DUMP = r"""
import json, os, re, subprocess, sys
script = '''
from triton_course import codegen
from triton_course.snippet_modules import load_file
va = load_file("snippets/vector_add.py")
sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32",
       "n_elements": "i32", "BLOCK_SIZE": "constexpr"}
codegen.compile_kernel(va.vector_add_kernel, 90, sig, {"BLOCK_SIZE": 1024})
'''
env = dict(os.environ, MLIR_ENABLE_DUMP="1", TRITON_ALWAYS_COMPILE="1")
done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                      text=True, timeout=300)
heads = re.findall(r"// -----// (.*?)IR Dump (Before|After) (\S+)",
                   done.stdout + done.stderr)
json.dump([[w, h, p] for w, h, p in heads], sys.stdout)
"""


def test_mlir_enable_dump_prints_the_ir_before_each_pass():
    # ser1-15: "after every compiler pass" was wrong
    heads = _compile(_MLIR_DUMP)
    before = [p for where, h, p in heads if h == "Before" and not where]
    after = [p for where, h, p in heads if h == "After" and not where]
    assert len(before) > 20 and not after, heads[:5]
    page = _page("triton-series/index.md")
    assert "prints the IR after every compiler pass" not in page
    assert "`MLIR_ENABLE_DUMP=1` prints the IR before each MLIR pass" in page
    # ser1-18 (2026-11-27): a stage's result is printed as the next stage's
    # input (the TritonGPU stage opens with the Triton IR it received); only
    # the very last pass's result is not
    assert any("convert-triton-to-tritongpu" in p or "TritonToTritonGPU" in p
               for p in before), before[:40]  # fmt: skip
    assert "so the result of a pipeline's last pass is never printed" not in page
    assert "only the result of the very last pass" in page


def test_the_attention_grid_folds_batch_and_heads_into_one_axis():
    # ser1-17: no kernel of the course uses a third grid axis
    sources = {
        p.name: p.read_text(encoding="utf-8")
        for p in (REPO_ROOT / "snippets").glob("*.py")
    }
    assert not any(
        re.search(r"program_id\((axis=)?2\)", s) for s in sources.values()
    ), "a kernel uses a third axis: update the series index"
    grids = re.findall(r"grid = \((.*)\)", sources["flash_attention.py"])
    assert grids and all(g.endswith("batch * heads") for g in grids), grids
    page = _page("triton-series/index.md")
    assert "attention kernels use a third for the batch and heads" not in page
    assert "every (batch, head) pair folded into the second" in page
    # ser1-19 (2026-11-27): the dK/dV kernel's first axis is keys, and the
    # delta kernel has a one-axis grid
    fa = sources["flash_attention.py"]
    dkdv = fa.split("def _attention_bwd_dkdv_kernel(")[1].split("@triton.jit")[0]
    assert "pid_n = tl.program_id(axis=0)" in dkdv and "keys per program" in dkdv
    assert re.search(r"_attention_bwd_delta_kernel\[\(triton\.cdiv\([^)]*\),\)\]", fa)
    assert "(blocks of keys in the backward pass's dK/dV kernel)" in page
    assert "the backward's small kernel over rows uses one" in page


def test_the_home_page_names_what_needs_compute_capability_8_9():
    # ser1-18: fp8 e4m3 is refused below sm_89 (data/support.json)
    support = json.loads((REPO_ROOT / "data" / "support.json").read_text("utf-8"))
    refused = {r["arch"] for r in support["refusals"] if r["dtype"] == "float8_e4m3fn"}
    assert {"sm_80", "sm_86"} <= refused and "sm_89" not in refused
    assert (
        "fp8 e4m3 parts and the tiled-GEMM page's FP8 GEMM need compute capability 8.9"
        in _page("index.md")
    )


_TF32_DOT = r"""
import json, re, sys
from triton_course import codegen

ptx = {a: codegen.dot(a, dtype="fp32")["ptx"] for a in (80, 90)}
json.dump({str(a): len(re.findall(r"cvt\.\w+\.tf32", p)) for a, p in ptx.items()},
          sys.stdout)
"""


def test_a_tf32_dot_passes_float32_bits_to_the_tensor_cores():
    # ser1-03: no conversion to TF32 in the PTX: the tensor cores take the
    # float32 registers and drop the low 13 bits (a GPU shows it: next test)
    assert _compile(_TF32_DOT) == {"80": 0, "90": 0}
    page = _page("triton-series/index.md")
    assert "rounded as a GPU's tensor cores would round it" not in page
    assert "operands reduced to TF32's 10 mantissa bits" in page


@pytest.mark.gpu  # what the tensor cores do with the low bits only a GPU shows
def test_a_tf32_dot_truncates_its_operands_on_the_gpu():
    from triton_course import codegen

    torch.manual_seed(0)
    a = torch.randn(64, 64, device="cuda")
    eye = torch.eye(64, device="cuda")
    c = torch.empty(64, 64, device="cuda")
    codegen._probes().dot_kernel[(1,)](a, eye, c, M=64, N=64, K=64)
    bits = a.view(torch.int32)
    truncated = (bits & -8192).view(torch.float32)  # low 13 bits dropped
    rounded = ((bits + 4096) & -8192).view(torch.float32)
    assert torch.equal(c, truncated)
    assert not torch.equal(c, rounded)


def test_the_series_states_prerequisites_and_a_time_per_tutorial():
    # #34 item 6: each tutorial's time is its reading time at the stated
    # pace, roughly: between 100 and 250 words a minute of the page's prose
    text = (SERIES / "index.md").read_text(encoding="utf-8")
    part = text.split("## Before you start", 1)[1].split("\n## ", 1)[0]
    assert "You do not need CUDA C++" in part and "`.contiguous()`" in part
    assert "about 150 words a minute" in " ".join(part.split())
    row = r"^\| (\d) \| (.+?) \| .*? \| about (\d+) minutes \|$"
    rows = re.findall(row, part, re.M)
    assert [r[0] for r in rows] == ["0", "1", "2", "3", "4", "5", "6"], rows
    for _, cell, minutes in rows:
        link = re.search(r"\]\(([\w-]+\.md)\)", cell)
        page = SERIES / (link.group(1) if link else "index.md")
        prose = re.sub(r"\[\[[^\]]*\]\]|--8<--[^\n]*", " ", page.read_text("utf-8"))
        words = len(prose.split())
        assert words / 250 <= int(minutes) <= words / 100, (page.name, words, minutes)


def test_the_tiled_gemm_notebook_points_to_the_table_that_has_its_kernels():
    # ser1-05: lesson 01's support table is gpu_basics' only; matmul_tma's
    # is on the tiled-GEMM page
    recipe = (REPO_ROOT / "notebooks" / "tiled_gemm.md").read_text("utf-8")
    assert "lesson 01's table shows" not in " ".join(recipe.split())
    tables = {
        p.name: re.findall(r"\[\[support ([^\]]+)\]\]", p.read_text("utf-8"))
        for p in DOCS.rglob("*.md")
    }
    assert "matmul_tma" in " ".join(tables["tiled-gemm.md"])
    # lesson 01's table moved with its section (#34, split-l01's handoff)
    assert tables["01-coalescing-occupancy.md"] == ["gpu_basics"]


# ------------------------------ independent review of 2026-11-27 (ser1) ---
def test_the_gemm_page_says_which_of_its_blocks_make_the_program():
    # ser1-02: the benchmark block (collapsed) names a kernel no block shows,
    # and matmul.py's main block ends the script's run before the TMA part
    raw = (SERIES / "tiled-gemm.md").read_text(encoding="utf-8")
    lines = raw.splitlines()
    at = next(i for i, line in enumerate(lines) if '"matmul.py:benchmark"' in line)
    opener = next(
        line for line in reversed(lines[:at]) if line and not line.startswith(" ")
    )
    assert opener.startswith("??? "), opener  # collapsed, so not in the program
    main = (REPO_ROOT / "snippets" / "matmul.py").read_text(encoding="utf-8")
    main = main.split("# --8<-- [start:main]")[1].split("# --8<-- [end:main]")[0]
    assert 'if __name__ == "__main__":' in main
    # #34: each GEMM page's visible code is a program of its own; what it
    # leaves out (the launchers, the scripts' main) is in collapsed boxes
    for path in ("tiled-gemm.md", "tiled-gemm-hopper.md", "fp8-gemm.md"):
        page = _page(f"triton-series/{path}")
        assert "The Python blocks shown open on this page" in page, path
        assert "are in collapsed boxes" in page, path


def test_the_gemm_page_names_the_ridge_as_the_courses_measurement():
    # ser1-13: the ridge rendered is the runner's two probes, not the H100's
    page = _page("triton-series/tiled-gemm.md")
    assert "as the course measures it ([[ridge gpu=h100 above=85]]" in page
    assert "matmul probe over its copy probe" in page


def test_tf32_truncation_is_compared_with_float32s_own_rounding():
    # ser1-15: float32 rounds to nearest, at most half its spacing 2**-23
    import numpy as np

    eps = float(np.finfo(np.float32).eps)
    assert eps == 2.0**-23
    x = np.float32(1.0) + np.float32(eps / 2) * np.float32(0.999)
    assert x == np.float32(1.0)  # below half a spacing: rounded away
    page = _page("triton-series/tiled-gemm.md")
    assert "2^{-10} / 2^{-24} = 2^{14} \\approx 16\\,000" in page
    assert "2^{13} \\approx 8000" not in page


def test_a_row_major_wave_spans_whole_row_bands_of_c():
    # ser1-14: tiles_n = 4096 / 256 = 16, so a wave covers several row bands
    mod = load_snippet("matmul")
    first = mod.CONFIGS[0].kwargs
    assert (first["BLOCK_M"], first["BLOCK_N"]) == (128, 256)
    page = _page("triton-series/tiled-gemm.md")
    assert f"a row band of a 4096³ product is {4096 // first['BLOCK_N']} tiles" in page
    assert "sends the first wave of programs along one row band of C" not in page
    assert "covers a near-square block of C" not in page
    assert "only once A and B no longer fit in L2" not in page


def test_grouping_is_not_concluded_from_one_run():
    # ser1-04: what grouping bought at 8192³ differed between two H100 runs
    page = _page("triton-series/tiled-gemm.md") + _page(
        "triton-series/tiled-gemm-hopper.md"
    )
    assert "this data does not show grouping helping at that size" not in page
    assert "the page draws no conclusion about grouping from one run" in page
    # tiled-gemm-hopper review #2: the steps' rows come from five tables, and
    # a row moved by more than its ± between two H100 runs; no reading rule
    # turns a few per cent between rows (or columns) into a step's effect
    assert "has no measured effect at that size in this run" not in page
    assert "it shows grouping helping, in this run" not in page
    assert "What each step bought" not in page and "What grouping bought" not in page
    assert "is not a measured effect of a step" in page
    assert "is not a measured effect of grouping" in page
    assert page.count("a row can move by more than its ±") == 1
    assert page.count("a ratio can move by more than its ±") == 1


def test_the_gemm_exercise_reaches_past_fixed_grids_and_says_what_it_checks():
    # ser1-06, -09 (2026-11-27): C past 128 both ways, a shape seen twice,
    # and a fused kernel that stores only C and reads only its inputs
    from triton_course.exercises import registry

    mbr = registry()["matmul_bias_relu"]
    assert max(c["M"] for c in mbr.cases) > 128 and max(c["N"] for c in mbr.cases) > 128
    shapes = [(c["M"], c["N"], c["K"]) for c in mbr.cases if len(c) == 3]
    assert len(shapes) > len(set(shapes)), "no plain shape comes twice"
    assert mbr.inspect is not None
    page = _page("triton-series/tiled-gemm.md")
    assert "C of 130 × 136, so a grid or a tile of fixed size" in page
    assert "a product stored to a scratch tensor for a second kernel fails" in page
    assert "keep `BLOCK_K` at 16 or more for float32" in page


def test_the_page_says_what_tl_ranges_docstring_says_of_warp_specialize():
    # tiled-gemm.md's "What is left out" (2026-11-27): it was called a
    # one-word change for the Hopper loop; the installed Triton's docstring
    # (3.9 here, 3.6 in the GPU runner's lane) limits it to Blackwell
    import triton.language as tl

    doc = " ".join(tl.range.__doc__.split())
    assert "warp specialization is only supported on Blackwell GPUs" in doc
    assert "only works on simple matmul loops" in doc
    page = _page("triton-series/tiled-gemm-hopper.md")  # #34: its own page
    assert "one-word change" not in page
    assert "only supported on Blackwell GPUs and only works on simple matmul" in page


def test_the_small_sizes_do_not_cite_launch_hidden_as_evidence():
    # tiled-gemm-hopper review #5: launch_hidden is false for most of the
    # rows compared there; a false one does not show a GPU-only gap
    page = _page("triton-series/tiled-gemm-hopper.md")
    assert "says where it did), so a gap is mostly work done on the GPU" not in page
    assert (
        "(`launch_hidden` false in the data file) the GPU time may hold part of "
        "the launch: a gap here is not shown to be work done on the GPU alone" in page
    )


_WARP_SPECIALIZE = r"""
import importlib.util, json, re, sys, tempfile
from pathlib import Path
from triton_course import codegen

# the exercise: warp_specialize=True added to the persistent kernel's tl.range
text = Path("snippets/matmul_tma.py").read_text(encoding="utf-8")
old = "flatten=FLATTEN)"
assert text.count(old) == 1
path = Path(tempfile.mkdtemp()) / "matmul_tma_ws.py"
path.write_text(text.replace(old, "flatten=FLATTEN, warp_specialize=True)"))
spec = importlib.util.spec_from_file_location("matmul_tma_ws", path)
ws = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ws)
names = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "B_KMAJOR", "INPUT_PRECISION",
         "EPILOGUE_SPLIT", "NUM_PROGRAMS", "FLATTEN")
sig = dict.fromkeys(("a_ptr", "b_ptr", "c_ptr"), "*fp16")
sig |= dict.fromkeys(("M", "N", "K"), "i32") | dict.fromkeys(names, "constexpr")
out = {}
for flatten in (True, False):
    consts = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8,
              "B_KMAJOR": False, "INPUT_PRECISION": "tf32", "EPILOGUE_SPLIT": True,
              "NUM_PROGRAMS": 132, "FLATTEN": flatten}
    try:
        k = codegen.compile_kernel(ws.matmul_tma_persistent_kernel, 90, sig, consts,
                                   ["a_ptr", "b_ptr", "c_ptr"], num_warps=4,
                                   num_stages=3)
        out[str(flatten)] = "compiled"
    except Exception as exc:
        out[str(flatten)] = "failed: " + str(exc).strip().splitlines()[0][:200]
json.dump(out, sys.stdout)
"""


@pytest.mark.compile_heavy
def test_the_warp_specialize_exercise_keeps_the_kernels_flatten():
    # tiled-gemm-hopper review #1: for sm_90 warp_specialize=True compiles
    # with flatten on as well as off (3.6 and 3.9; the one failure found was
    # flatten=False for sm_100 on 3.6), so the exercise asks for no flatten
    found = _compile(_WARP_SPECIALIZE)
    assert found == {"True": "compiled", "False": "compiled"}, found
    page = _page("triton-series/tiled-gemm-hopper.md")
    assert "the two do not combine on every Triton version" not in page
    assert "(with `flatten=False`" not in page


# Issue #34 item 6: the Hopper and FP8 pages link the glossary at the first
# use of each term they lean on, once (tiled-gemm-hopper and fp8-gemm
# reviews, #7 each)
_GLOSSARY_TERMS = {
    "tiled-gemm-hopper.md": ["tma", "program", "shared-memory", "tensor-descriptor",
                             "sm", "tensor-core", "grid", "autotuning", "warp"],
    "fp8-gemm.md": ["tensor-core", "tma", "shared-memory", "tensor-descriptor",
                    "program", "mma"],
}  # fmt: skip


@pytest.mark.parametrize("page", sorted(_GLOSSARY_TERMS))
def test_the_hopper_pages_link_each_glossary_term_once(page):
    source = (DOCS / "reference" / "glossary.md").read_text(encoding="utf-8")
    anchors = set(re.findall(r"\{ #([\w-]+) \}", source))
    text = (SERIES / page).read_text(encoding="utf-8")
    linked = re.findall(r"\]\(\.\./reference/glossary\.md#([\w-]+)\)", text)
    assert set(linked) <= anchors, set(linked) - anchors
    missing = [term for term in _GLOSSARY_TERMS[page] if term not in linked]
    assert not missing, f"{page} does not link {missing} to the glossary"
    twice = sorted({term for term in linked if linked.count(term) > 1})
    assert not twice, f"{page} links {twice} more than once: at first use only"
