"""The GPU-architecture module's statements, checked by compiling (issue #27).

Each test backs a sentence of the module's index, lesson 01, 02 or 04 (or a
comment of their snippets) that an independent review found false or
imprecise. The compiler facts are found in one process without the
interpreter (``_FACTS_SCRIPT``, with ``triton_course.codegen``'s helpers, as
``tests/test_compiler_claims.py`` does); where only the page's wording can
be checked, a test reads the page, so the wrong sentence cannot come back
unnoticed. Run with triton 3.9 (CI) and with the GPU image's 3.6 (the
runner's test lane): where the two compile differently, a test states both
values and asserts the running one's (``codegen.for_triton``).
"""

from __future__ import annotations

import inspect
import json
import math
import re

import pytest
import torch
import triton
from conftest import REPO_ROOT, compile_in_subprocess, load_snippet

from triton_course.codegen import for_triton

# module fixtures computed once per run: see heavy_first in conftest.py
pytestmark = pytest.mark.shared_setup

DOCS = REPO_ROOT / "docs" / "gpu-architecture"
INDEX = DOCS / "index.md"
L01 = DOCS / "01-gpu-architecture.md"
# Lesson 01 is three pages: its wording tests read them as one text
L01_PAGES = (L01, DOCS / "01-roofline.md", DOCS / "01-coalescing-occupancy.md")
L02 = DOCS / "02-flash-attention-mixed-precision.md"
L02_BWD = DOCS / "02-flash-attention-backward.md"
L02_MP = DOCS / "02-mixed-precision.md"
L04 = DOCS / "04-gpu-profiling.md"
# lesson 04 is three pages (#34); their wording is checked as one text
L04_PARTS = [L04, DOCS / "04-nsight-compute.md", DOCS / "04-worked-optimisation.md"]

_FACTS_SCRIPT = r"""
import difflib, importlib.util, json, os, re, subprocess, sys, tempfile
sys.path[:0] = [os.getcwd(), os.path.join(os.getcwd(), "snippets")]
import triton
from triton_course import codegen as C
import flash_attention as fa, gpu_basics as gb, optimization_steps as rs

facts = {}

def dot(arch, dtype, m=64, k=32, num_warps=4):
    sig = {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}",
           "c_ptr": "*i32" if dtype == "i8" else "*fp32",
           "M": "constexpr", "N": "constexpr", "K": "constexpr"}
    try:
        ptx = C.compile_for(C._probes().dot_kernel, arch, sig,
                            {"M": m, "N": 64, "K": k},
                            aligned=("a_ptr", "b_ptr", "c_ptr"),
                            num_warps=num_warps)["ptx"]
    except BaseException as exc:  # a refusal, or the compiler failing
        return "error: " + type(exc).__name__
    if C.WGMMA.search(ptx):
        return "wgmma"
    return "mma.sync" if C.MMA.search(ptx) else "fma"

for dtype in ("fp8e5", "fp16", "fp32"):
    facts[f"min_k {dtype}"] = min(
        (k for k in (8, 16, 32) if not dot(80, dtype, k=k).startswith("error")),
        default=None)
facts["sm90 by M"] = {m: dot(90, "fp16", m=m) for m in (16, 32, 64, 128)}
facts["sm90 M=64 by warps"] = {w: dot(90, "fp16", num_warps=w) for w in (2, 4, 8)}
facts["int8"] = {a: dot(a, "i8") for a in (75, 80, 90)}
facts["fp8e4"] = {a: dot(a, "fp8e4nv") for a in (75, 80, 89, 90)}
facts["fp8e5"] = {a: dot(a, "fp8e5") for a in (75, 80, 89, 90)}
facts["bf16"] = {a: dot(a, "bf16") for a in (75, 80, 90)}
facts["fp16 dot"] = {a: dot(a, "fp16") for a in (75, 80)}

# fma_chain: is the ITERS loop unrolled into straight-line code?
sig = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n_elements": "i32", "a": "fp32",
       "b": "fp32", "ITERS": "constexpr", "BLOCK_SIZE": "constexpr"}
facts["fma loop"] = {}
for arch in (80, 90):
    for iters in (16, 32, 64, 128, 256, 1024):
        ptx = C.compile_for(gb.fma_chain_kernel, arch, sig,
                            {"ITERS": iters, "BLOCK_SIZE": 1024},
                            aligned=("x_ptr", "out_ptr", "n_elements"))["ptx"]
        facts["fma loop"][f"{arch}/{iters}"] = bool(re.search(r"\bbra\b", ptx))

# gpu_basics' element kernels, launched on more than 2**31 elements (n as
# i64): every product and pointer step in int64, or an offset wraps round
def body(ttir):
    return [l.split(" loc(")[0].strip() for l in ttir.splitlines()]

wide = {}
f32 = {"x_ptr": "*fp32", "out_ptr": "*fp32"}
for name, kernel, sig, const in (
    ("strided_copy_kernel", gb.strided_copy_kernel,
     dict(f32, n_out="i64", stride="i32", BLOCK_SIZE="constexpr"),
     {"BLOCK_SIZE": 1024}),
    ("persistent_copy_kernel", gb.persistent_copy_kernel,
     dict(f32, n_elements="i64", BLOCK_SIZE="constexpr"), {"BLOCK_SIZE": 512}),
    ("fma_chain_kernel", gb.fma_chain_kernel,
     dict(f32, n_elements="i64", a="fp32", b="fp32", ITERS="constexpr",
          BLOCK_SIZE="constexpr"), {"ITERS": 4, "BLOCK_SIZE": 1024}),
):
    ttir = C.compile_for(kernel, 90, sig, const, aligned=("x_ptr", "out_ptr"))["ttir"]
    ops = body(ttir)
    wide[name] = {
        "i32 products": [l for l in ops
                         if "arith.muli" in l and re.search(r"i32>?$", l)],
        "pointer steps": [l.split(",")[-1].strip() for l in ops if "tt.addptr" in l],
    }
facts["wide offsets"] = wide

# rowsum v0 and v1: loads per loop trip, in PTX and (v0) in SASS
nvdisasm = os.path.join(os.path.dirname(triton.__file__),
                        "backends", "nvidia", "bin", "nvdisasm")
sig0 = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n_cols": "i32", "stride_row": "i32"}
asm = C.compile_for(rs.rowsum_v0_kernel, 90, sig0, {},
                    aligned=("x_ptr", "out_ptr", "n_cols", "stride_row"))
facts["v0 ptx loads"] = len(re.findall(r"\bld\.global", asm["ptx"]))
with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
    f.write(asm["cubin"])
sass = subprocess.run([nvdisasm, "-c", f.name], capture_output=True,
                      text=True, check=True).stdout
os.unlink(f.name)
blocks = re.split(r"^\.L_x_\d+:", sass, flags=re.M)
facts["v0 sass most loads in one block"] = max(
    len(re.findall(r"\bLDG\b", b)) for b in blocks)
sig1 = dict(sig0, BLOCK_N="constexpr")
ptx = C.compile_for(rs.rowsum_v1_kernel, 90, sig1, {"BLOCK_N": 1024},
                    aligned=("x_ptr", "out_ptr", "n_cols", "stride_row"))["ptx"]
facts["v1 loads"] = re.findall(r"ld\.global[.\w]*", ptx)

# flash attention forward: warp_specialize, shared memory, scratch
def module_with(source, name):
    path = os.path.join(tempfile.mkdtemp(), name + ".py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m

src = open(fa.__file__).read()
loop = "    for start_n in range(key_lo, key_hi, BLOCK_N):\n        # The TMA"
assert src.count(loop) == 1, "the forward loop moved: update this check"
ws = module_with(src.replace(loop, loop.replace(
    "range(key_lo, key_hi, BLOCK_N)",
    "tl.range(key_lo, key_hi, BLOCK_N, warp_specialize=True)")), "fa_ws")
fsig = {n: "*fp16" for n in ("q_ptr", "k_ptr", "v_ptr", "out_ptr")}
fsig.update(lse_ptr="*fp32", n_ctx="i32", qk_scale="fp32",
            **{n: "constexpr" for n in ("HEAD_DIM", "CAUSAL", "BLOCK_M",
                                         "BLOCK_N", "DOT_PRECISION", "PV_FP16")})
aligned = ("q_ptr", "k_ptr", "v_ptr", "out_ptr", "lse_ptr", "n_ctx")

def forward(module, arch, causal=False, bm=128, bn=128, warps=8, stages=3):
    const = {"HEAD_DIM": 128, "CAUSAL": causal, "BLOCK_M": bm, "BLOCK_N": bn,
             "DOT_PRECISION": "ieee", "PV_FP16": False}
    return C.compile_kernel(module._attention_fwd_kernel, arch, fsig, const,
                            aligned, num_warps=warps, num_stages=stages)

def code(kernel):  # the PTX without its debug sections (they name the file)
    ptx = kernel.asm["ptx"].split(".section\t.debug")[0]
    return [l for l in ptx.splitlines()
            if not re.match(r"\s*(\.loc|\.file|//)", l)]

facts["warp_specialize same ptx on sm90"] = {
    str(c): code(forward(fa, 90, c)) == code(forward(ws, 90, c))
    for c in (False, True)}
facts["fwd 128x128x3 shared"] = {a: forward(fa, a).metadata.shared for a in (80, 90)}
facts["fwd 128x64x2 shared"] = {
    a: forward(fa, a, bn=64, stages=2).metadata.shared for a in (86, 89)}
# a larger tile than the launcher's sm_89 choice, also within its 99 KB
facts["fwd 128x128x2 shared sm89"] = forward(fa, 89, stages=2).metadata.shared
facts["fwd scratch per program"] = {
    a: forward(fa, a).metadata.global_scratch_size for a in (80, 90)}
print(json.dumps(facts))
"""


@pytest.fixture(scope="module")
def facts():
    return compile_in_subprocess(_FACTS_SCRIPT)


def _timing_files() -> list:
    """The GPUs' data files the site shows (the H200's was removed in #33)."""
    found = sorted((REPO_ROOT / "data" / "timings").glob("*.json"))
    assert found, "no timing data"
    return found


def _text(path) -> str:
    return " ".join(path.read_text().split())  # one line: phrases may wrap


def _l04_text() -> str:
    return " ".join(_text(p) for p in L04_PARTS)


def _l01() -> str:
    return " ".join(_text(page) for page in L01_PAGES)


# ------------------------------------------------ dtypes per architecture ---
def test_bf16_compiles_everywhere_and_only_fp8_e4m3_needs_sm89(facts):
    assert facts["bf16"] == {"75": "fma", "80": "mma.sync", "90": "wgmma"}
    assert facts["fp8e5"]["75"] == "fma"  # widened, compiled
    assert all(facts["fp8e4"][a].startswith("error") for a in ("75", "80"))
    assert facts["fp8e4"]["89"] == "mma.sync" and facts["fp8e4"]["90"] == "wgmma"


def test_the_pages_do_not_say_bf16_needs_ampere():
    for page in (INDEX, L02, L02_MP):
        text = _text(page)
        assert "bf16 needs Ampere" not in text, page.name
        assert not re.search(r"`tl\.dot` in bf16 or tf32 \| Ampere", text)
        assert "fp8 needs Ada or Hopper" not in text, page.name


def test_tensor_descriptors_are_not_said_to_miss_on_t4_or_ampere():
    text = _text(INDEX)
    assert "not tensor descriptors" not in text
    assert "everything but tensor descriptors" not in text
    # and the Ampere line says what Ampere does refuse
    assert "e4m3" in text


def test_int8_dot_fails_to_compile_on_a_t4(facts):
    assert facts["int8"]["75"].startswith("error")
    assert facts["int8"]["80"] == "mma.sync"
    row = next(
        line for line in L01.read_text().splitlines() if line.startswith("| int8")
    )
    assert "fails to compile for sm_75" in row  # not "tensor cores from Turing"


# ------------------------------------------------------- tl.dot's shapes ---
def test_minimum_k_depends_on_the_operand_width(facts):
    assert facts["min_k fp8e5"] == 32
    assert facts["min_k fp16"] == 16
    # fp32 (tf32): triton 3.9 added a K-of-8 shape; 3.6 asks 16 of every
    # non-8-bit type ("K >= 16" is its compile error)
    assert facts["min_k fp32"] == for_triton({"3.6": 16, "3.9": 8})
    # the page names both versions' minimum for fp32
    flat = " ".join(L01.read_text().split())
    assert "(as tf32) 8 with triton 3.9 but 16 with triton 3.6" in flat


def test_wgmma_needs_64_rows_on_sm90(facts):
    assert facts["sm90 by M"] == {
        "16": "mma.sync",
        "32": "mma.sync",
        "64": "wgmma",
        "128": "wgmma",
    }
    text = _l01()
    assert "K \\ge 16\\) (M and N may be as small as 1)" not in text
    assert "multiple of 64" in text
    # review 2026-11-26 mod-05: and a whole warpgroup, num_warps 4 or more
    assert facts["sm90 M=64 by warps"] == {"2": "mma.sync", "4": "wgmma", "8": "wgmma"}
    assert "and the program has at least one whole warpgroup" in text
    assert "`num_warps` of 4 or more" in text


# ------------------------------------------------------------ interpreter ---
def test_the_element_kernels_of_lesson_01_compute_offsets_in_int64(facts):
    # review 2026-11-26 mod-08: from 2**31 elements (8 GiB of float32) an
    # int32 pid * BLOCK_SIZE wraps round; every product and pointer step of
    # the three kernels is int64 (a launch with n as i64, compiled for sm_90)
    wide = facts["wide offsets"]
    assert set(wide) == {
        "strided_copy_kernel",
        "persistent_copy_kernel",
        "fma_chain_kernel",
    }
    for name, found in wide.items():
        assert found["i32 products"] == [], name
        assert found["pointer steps"], name
        for step in found["pointer steps"]:
            assert re.search(r"(\bi64|xi64>)$", step), (name, step)


def test_the_pages_do_not_promise_every_test_under_the_interpreter():
    assert "every snippet and every test, under the interpreter" not in _text(INDEX)
    assert "| every test of the course |" not in L01.read_text()


# -------------------------------------------------------------- fma_chain ---
def test_fma_chain_keeps_a_loop_at_large_iters(facts):
    loop = facts["fma loop"]
    # review 01 finding 3: the page names the first looped count per target;
    # below it the chain is straight-line code, from it on a loop
    first = {}
    for arch in ("80", "90"):
        counts = sorted(int(k.split("/")[1]) for k in loop if k.startswith(arch))
        loops = [n for n in counts if loop[f"{arch}/{n}"]]
        assert loops == counts[counts.index(loops[0]) :], (arch, loop)
        first[arch] = loops[0]
    assert first["90"] == 128  # both versions
    assert first["80"] == for_triton({"3.6": 128, "3.9": 32})
    text = _l01()
    assert "from `ITERS = 128` on sm_90 the PTX keeps a loop" in text
    assert "32 with triton 3.9 but from 128 with triton 3.6" in text
    assert "its own straight-line kernel" not in _l01()


# ------------------------------------------------------------ row sums v0 ---
def test_v0_issues_four_loads_per_unrolled_trip(facts):
    assert facts["v0 ptx loads"] == 1  # one per trip as written ...
    assert facts["v0 sass most loads in one block"] == 4  # ... ptxas unrolls 4
    text = _l04_text()
    assert "only one load in flight" not in text
    assert "one per lane" not in text


def test_v1_loads_two_16_byte_vectors_per_thread_and_trip(facts):
    assert facts["v1 loads"] == ["ld.global.v4.b32", "ld.global.v4.b32"]


# ------------------------------------------------------- flash attention ---
def test_warp_specialize_changes_nothing_in_the_forward_kernel_on_sm90(facts):
    assert facts["warp_specialize same ptx on sm90"] == {"False": True, "True": True}
    text = _text(L02_BWD)
    assert "exercise 5 asks you to measure it" not in text
    assert "exercise 5 asks you to time the first" not in text


def test_flash_tile_comment_gives_the_compiled_shared_memory(facts):
    shared = facts["fwd 128x128x3 shared"]
    assert shared == {"80": 160 * 1024, "90": 230400}
    assert facts["fwd 128x64x2 shared"] == {"86": 64 * 1024, "89": 64 * 1024}
    src = (REPO_ROOT / "snippets" / "flash_attention.py").read_text()
    src = " ".join(src.replace("#", " ").split())  # comments as one line
    assert "160 KB for sm_80" in src and "230 400 B for sm_90" in src
    # review 2026-11-26 mod-09: the step-down tiles fit, but are not the
    # largest that would (128 x 128, 2 stages, also fits sm_89's 99 KB)
    assert facts["fwd 128x64x2 shared"]["89"] < facts["fwd 128x128x2 shared sm89"]
    assert facts["fwd 128x128x2 shared sm89"] <= 99 * 1024
    assert "largest tiles" not in src
    assert "neither timed nor the largest that would fit" in src
    text = _text(L02)
    assert "steps down to the largest tiles" not in text
    assert "neither timed nor the largest that would fit" in text


def test_descriptor_scratch_is_512_bytes_per_program_on_sm90(facts):
    assert facts["fwd scratch per program"] == {"80": 0, "90": 512}
    # lesson 02's memory paragraph counts it: 128 query blocks x 128 heads
    # x 512 B = 8 MiB at N = 16384
    assert 16384 // 128 * 4 * 32 * 512 == 8 * 2**20
    assert "512 B" in _text(L02)


def test_the_fold_is_not_said_to_save_a_tile():
    assert "would need a second" not in _text(L02)


def test_lesson_02_types_no_reading_of_the_target_rows():
    text = _text(L02_BWD)
    assert "shorter sequences are where the target is hardest" not in text
    assert "hardest rows are the short causal ones" not in text


def test_no_directive_selects_the_dropped_16384_rows():
    for page in (*L01_PAGES, L02, L02_BWD, L02_MP):
        assert not re.search(
            r"bench=flash_attention_\w+[^\]]*n_ctx=16384", page.read_text()
        )


def test_exercise_1_uses_the_benchmarks_heads():
    ex = L02_MP.read_text().split("## Exercises")[1]
    first = ex.split("2. ")[0]
    assert "16 heads" in first and "32 heads" not in first


# --------------------------------------------------------------- lesson 04 ---
def test_lesson_04_describes_the_runners_timer():
    text = _l04_text()
    assert "times every table with `do_bench(..., quantiles" not in text
    assert "interleaved rounds" in text


def test_lesson_04_says_when_the_events_count_the_launch():
    # review 04 finding 2: events are stamped when the GPU reaches them, so
    # with nothing queued ahead of start the launch falls between them
    doc = " ".join(
        load_snippet("profiling").time_cuda.__doc__.split()
    )  # the docstring is the page's text (profiling.py:timer)
    assert "launch work is not counted" not in doc
    assert "so that launch work is counted" in doc
    assert "with flush_l2=False nothing does" in doc
    # finding 3: exercise 3 hides the launch before comparing hot and cold
    ex3 = _l04_text().split("## Exercises")[1].split("3. ")[1].split("4. ")[0]
    assert "torch.cuda._sleep(cycles)" in ex3
    assert "`do_bench`" not in ex3
    assert "autotuner's dispatch fall between the events" in ex3


def test_lesson_04_shows_no_runner_configuration_as_lesson_code():
    src = (REPO_ROOT / "snippets" / "optimization_steps.py").read_text()
    shown = src.split("# --8<-- [start:ncu]")[1].split("# --8<-- [end:ncu]")[0]
    assert "NCU_METRICS = [" in shown  # what to collect is lesson material
    assert "CAPTURES" not in shown  # how the runner stores it is not


def test_lesson_01_names_which_ceilings_it_measures():
    # issue 27: "the fastest a kernel can move data and do arithmetic" was
    # wrong twice: fp8 tensor cores peak above the bf16 probe, and data that
    # stays in L2 moves faster than the DRAM copy
    text = _l01()
    assert "the fastest a kernel can" not in text
    assert (
        "dense bfloat16 tensor-core rate (fp8 tensor cores have a higher peak" in text
    )
    assert "(DRAM's bandwidth: data that stays in the L2 moves faster" in text


# ------------------------------------------- review records: page wording ---
def test_lesson_01_says_fp16_loss_scaling_fights_underflow():
    # review 01 finding 1: loss scaling is for small gradients, not overflow
    text = _l01()
    assert "fp16 overflows past 65 504, which is why" not in text
    # review 2026-11-26 mod-06: only values at or below 2^-25, half the
    # smallest subnormal, round to zero (checked on torch below)
    assert "below \\(2^{-24}\\) they round to zero" not in text
    assert "at or below \\(2^{-25}\\), half of fp16's smallest" in text
    # review 01 finding 5: digits of precision, from the significand widths
    bf16 = (1 - math.log2(torch.finfo(torch.bfloat16).eps)) * math.log10(2)
    fp16 = (1 - math.log2(torch.finfo(torch.float16).eps)) * math.log10(2)
    assert f"about {bf16:.1f} decimal digits, against about {fp16:.1f} for fp16" in text


def test_fp16_rounds_values_below_its_smallest_subnormal():
    # review 02 finding 6: below 2^-24 values round (to 2^-24 or to 0), not flush
    tiny = 2.0**-24
    assert torch.tensor(tiny * 0.6).half().item() == tiny
    assert torch.tensor(tiny * 0.51).half().item() == tiny
    assert torch.tensor(tiny * 0.5).half().item() == 0.0
    text = _text(L02_MP)
    assert "flushed to zero" not in text and "flush to zero" not in text
    assert "anything at or below half of it rounds to zero" in text


def test_lesson_01_names_l2_sizes_sectors_programs_and_fp16_dot():
    text = _l01()
    # review 01 finding 6: the two GPUs' L2 sizes, as the data record them
    for path in _timing_files():  # the GPUs with data: H100 50 MiB, H200 60
        mib = {"nvidia-h100-80gb-hbm3": 50, "nvidia-h200": 60}[path.stem]
        assert json.loads(path.read_text())["gpu"]["l2_bytes"] == mib * 2**20
    assert "50 MB L2 moves faster" not in text
    # review 01 finding 9: 32-byte sectors are the caches' unit, not DRAM's
    assert "HBM and the caches move data in fixed pieces: 32-byte" not in text
    plain = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", text)  # links as their text
    assert "The caches (L1 and L2) move data in fixed pieces: 32-byte" in plain
    # review 01 finding 4: programs per SM are 1, 1, 1, 2, 4, 8, 16
    assert "launches one, two, four, … programs per SM" not in text
    assert "as 2, 4, 8 and 16 programs per SM of 4 warps each" in text
    # review 01 finding 8: fp16 tl.dot on sm_75 is FMA (see dot() above)
    assert "Triton's fp16 `tl.dot` from sm_80" in text


def test_fp16_dot_uses_no_tensor_cores_on_a_t4(facts):
    assert facts["fp16 dot"] == {"75": "fma", "80": "mma.sync"}


def test_lesson_02_counts_lse_bytes_and_resident_heads(facts):
    text = _text(L02)
    # review 02 finding 4: 4 B of lse per row against d * 2 B of fp16 output
    assert 4 / (64 * 2) == 1 / 32
    assert "1/32 of its bytes when the output is fp16 or bf16" in text
    # review 02 finding 5: one 128x128x3 program per SM (>half of 228 KiB)
    assert 2 * facts["fwd 128x128x3 shared"]["90"] > 228 * 1024
    assert "query blocks of one or two heads" not in text
    assert "64 + 64 + 4 query blocks of three heads" in text


def test_lesson_04_wording_matches_triton_and_the_launcher():
    text = _l04_text()
    # review 04 finding 1: v3's configs set no num_stages
    src = (REPO_ROOT / "snippets" / "optimization_steps.py").read_text()
    configs = src.split("TUNING_CONFIGS = [")[1].split("]\n")[0]
    assert "num_stages" not in configs
    assert "tile, warps and stages autotuned" not in text
    assert "| v3 | tile and warps autotuned |" in text
    # review 04 finding 7: BLOCK_N is the row rounded up to a power of two
    assert triton.next_power_of_2(257) == 512
    assert "no wider than the row" not in text
    assert "the row length rounded up to a power of two (up to 1024)" in text
    # review 04 finding 8: the dump is before each pass
    assert "prints the IR after every compiler pass" not in text
    assert "`MLIR_ENABLE_DUMP=1` prints the IR before every MLIR pass" in text
    # review 04 finding 9: 132 SMs is the SXM part
    assert "SMs (132 on an H100)" not in text
    # review 04 finding 10: binary sizes, as MiB
    assert 16384 * 4096 * 4 == 256 * 2**20
    for old in ("(24 MB in all", "(384 MB)", "256 MB each", "(16 MB)"):
        assert old not in text
    # review 04 finding 12: the runner records whether the launch was hidden
    assert "launch cost is not in the measurement" not in text
    assert "`launch_hidden`" in text
    # review 04 finding 13: do_bench's fourth parameter is grad_to_none
    params = list(inspect.signature(triton.testing.do_bench).parameters)
    assert params[:4] == ["fn", "warmup", "rep", "grad_to_none"]
    assert "do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None," in text


# ------------------------------- the independent review of 2026-11-26 ---
def test_lesson_01_says_which_table_is_a_share_of_which_probe():
    # mod-03: no build check of "above 100 %" is claimed; lesson 04's hot
    # table is a share of the L2 probe, not of the two DRAM/matmul probes
    text = _l01()
    assert "the build fails if a published row is above 100 %" not in text
    assert "Every timing table but lesson 04's hot-cache one (a share of an L2" in text
    src = (REPO_ROOT / "snippets" / "profiling.py").read_text()
    hot = src.split('"name": "l2_hot_add"')[1].split("}")[0]
    assert '"ceiling": "l2"' in hot


def test_lesson_01_splits_the_fma_gap_into_units_and_format():
    # mod-07: fma_chain's gap to the bf16 probe is FP32 units against tensor
    # cores *and* fp32 against bf16 operands; the datasheet's dense rates
    from triton_course.vendor_peaks import PEAKS

    text = _l01()
    assert "the gap is what tensor cores buy" not in text
    bf16 = PEAKS["NVIDIA H100 80GB HBM3"]["compute"]["value"]
    assert f"494.5 on fp32 data (as tf32) and {bf16} on bf16" in text
    assert "the FP32 units 67 TFLOP/s" in text
    assert round(494.5 / 67) == 7 and bf16 / 494.5 == pytest.approx(2, rel=0.01)
    assert "tensor cores buy about 7×, and bf16's narrower operands double" in text


def test_lesson_04_does_not_call_the_cold_time_what_a_model_sees():
    # mod-10: an input the previous kernel just wrote may still be in L2
    text = _l04_text()
    doc = " ".join(load_snippet("profiling").time_cuda.__doc__.split())
    assert "as in a model" not in doc
    assert "may still be in L2, and the kernel then runs faster" in doc
    assert "inside a model, delivers the cold one" not in text
    assert "the cold time is the conservative number to quote" in text


def test_lesson_04_names_both_causes_of_the_hot_cold_gap():
    # mod-11: a cold call pays one kernel's fixed cost per pass, the hot
    # call's twenty passes share it; the 2^16 row shows it, checked as a
    # claim. vs: is a ratio of rates per unit of work (hot over cold, the hot
    # call's work twenty passes): > 2 says a hot pass runs at more than twice
    # the cold pass's rate where the bytes are too few for the cache to matter
    text = _l04_text()
    assert "How much a hot cache flatters a benchmark" not in text
    assert "which the twenty hot passes share" in text
    assert (
        '[[claim bench=l2_hot_add gpu=h100 value=vs:l2_cold_add is=">2" '
        "dtype=float32 n_elements=65536]]" in text
    )
    src = (REPO_ROOT / "snippets" / "profiling.py").read_text()
    assert "HOT_REPEATS = 20" in src and 'n_elements": 2**k} for k in (16,' in src


def test_the_module_index_places_the_e4m3_dot_in_lesson_02():
    # mod-13: lesson 02's forward kernel takes e4m3 and its accuracy table
    # runs it; the row no longer says "an exercise"
    fa = load_snippet("flash_attention")
    assert fa.ACCURACY_FORMATS["fp8 e4m3"][0] is torch.float8_e4m3fn
    assert torch.float8_e4m3fn in fa.FP8_DTYPES
    lines = INDEX.read_text().splitlines()
    row = next(line for line in lines if "`tl.dot` in fp8 e4m3" in line)
    assert "an exercise of lesson 02" not in row
    assert "lesson 02's forward kernel and accuracy table" in row


def test_review_findings_on_ridge_rows_warps_ranges_and_l2_ceiling():
    l01, l02, l04 = _l01(), _text(L02_BWD), _l04_text()
    # review 01 finding 7: fma_chain's side of the ridge is up to the data
    assert "Both points here sit right of the ridge" not in l01
    assert "`fma_chain` sits near the ridge" in l01
    # review 02 finding 2: the page says which data still hold 16 384 rows
    for path in _timing_files():
        gpu = {"nvidia-h100-80gb-hbm3": "H100", "nvidia-h200": "H200"}[path.stem]
        doc = json.loads(path.read_text())
        rows = doc["benchmarks"]["flash_attention_fwd"]["rows"]
        longest = max(r["size"]["n_ctx"] for r in rows)
        said = f"the {gpu} tab, from an earlier version, goes to \\(16\\,384\\)" in l02
        assert said == (longest == 16384), (gpu, longest)
    # review 04 finding 5: every warp runs v0's scalar loop
    assert "each warp runs the whole loop and issues the same load" in l04
    assert "Four loads of 4 bytes in flight per program" not in l04
    # review 04 finding 11: record_function ranges appear twice
    assert "adds up to more than 100 %" in l04
    # review 04 finding 4: no share of a ceiling raised to the kernel itself
    assert "bench=l2_hot_add gpu=h100 value=pct_roofline" not in l04
    # the hot table's ceiling is the L2 probe, never raised: a kernel above
    # it is flagged, not the line moved
    assert "a hot kernel that beats the probe is flagged" in l04
    assert "ceiling is raised" not in l04


# ------------------------------------- the pages' visible code (#34 item 3) ---
_EMBED = re.compile(r'^( *)--8<-- "(\w+\.py):(\w+)"$')


def _visible_sections(page) -> list[tuple[str, str]]:
    """(snippet, section) of every Python block a reader sees without opening
    a collapsed block (``??? ...``), in page order."""
    found, opener, fence = [], "", ""
    for line in page.read_text(encoding="utf-8").splitlines():
        if line and not line[0].isspace():
            opener = line
        stripped = line.strip()
        if stripped.startswith("```"):
            fence = "" if fence else stripped[3:]
            continue
        m = _EMBED.match(line)
        if m and fence == "python":
            hidden = bool(m.group(1)) and opener.startswith("???")
            if not hidden:
                found.append((m.group(2), m.group(3)))
    return found


def _section(snippet: str, name: str) -> str:
    text = (REPO_ROOT / "snippets" / snippet).read_text(encoding="utf-8")
    start, end = f"# --8<-- [start:{name}]\n", f"# --8<-- [end:{name}]"
    assert start in text, (snippet, name)
    return text.split(start, 1)[1].split(end, 1)[0]


def _global_loads(code) -> set[str]:
    """Every global name a code object (and the code nested in it) reads."""
    import dis

    names = {i.argval for i in dis.get_instructions(code) if i.opname == "LOAD_GLOBAL"}
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            names |= _global_loads(const)
    return names


# Lessons 01 and 02 are checked by tests/test_visible_code.py: each main() calls
# the kernels of several pages, so it is not the last block a page runs
@pytest.mark.parametrize("page", [L04], ids=lambda p: p.stem)
def test_the_visible_code_of_the_page_is_a_whole_program(page, tmp_path):
    # Copied top to bottom, the page's visible blocks must define everything
    # they call: the imports first, no helper only in a collapsed block.
    import builtins
    import importlib.util

    sections = _visible_sections(page)
    assert sections[0][1] == "imports", f"{page.name}: the imports come first"
    assert sections[-1][1] == "main", f"{page.name}: main() is the last block"
    source = "\n".join(_section(s, n) for s, n in sections)
    path = tmp_path / f"page_{page.stem.replace('-', '_')}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # definitions only: __name__ is not main
    assert hasattr(module, "main"), f"{page.name} shows no main() to run"
    missing = set()
    for value in list(vars(module).values()):
        fn = value
        while hasattr(fn, "fn"):  # @triton.jit and triton.autotune wrap fn
            fn = fn.fn
        codes = [getattr(fn, "__code__", None)]
        if isinstance(value, type):  # autograd.Function's static methods
            codes += [getattr(v, "__code__", None) for v in vars(value).values()]
            codes += [
                getattr(getattr(v, "__func__", None), "__code__", None)
                for v in vars(value).values()
            ]
        for code in filter(None, codes):
            missing |= {
                n
                for n in _global_loads(code)
                if n not in vars(module) and not hasattr(builtins, n)
            }
    assert not missing, f"{page.name}: visible code never defines {sorted(missing)}"


def test_the_module_says_a_t4_compiles_its_kernels_not_that_it_ran_them():
    # the course compiles for sm_75 in CI and has never run on a T4 (the home
    # page says so): "a Colab T4 runs them" was a claim nothing checked
    for page in (INDEX, L01):
        text = _text(page)
        assert "a Colab T4, sm_75, runs them" not in text
        assert "runs these kernels too" not in text
        assert "but has not run them there" in text, page.name
