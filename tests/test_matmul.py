"""snippets/matmul.py: awkward shapes, dtypes, strided inputs, every input error.

Under the interpreter tl.dot runs in NumPy, so tiles stay small (16 or 32) and
so do the matrices: the whole module takes well under a minute on a CPU.
"""

import ast
import os
import re
import subprocess
import sys

import pytest
import torch
from conftest import (
    DEVICE,
    REPO_ROOT,
    SNIPPETS,
    TOLERANCES,
    assert_close,
    compile_in_subprocess,
    load_snippet,
    poison_,
)

mm = load_snippet("matmul")

SMALL = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2}
MIXED = {"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 32, "GROUP_M": 3}
SHAPES = [(1, 1, 1), (7, 13, 5), (65, 33, 17), (130, 70, 90), (16, 16, 16)]
DTYPES = [torch.float16, torch.bfloat16, torch.float32]


def product_tolerance(dtype, k):
    """Tolerance for a K-long dot product rounded once to ``dtype``.

    The kernel accumulates in float32, so its error is the final rounding to
    the output dtype (TOLERANCES) plus float32 summation error, which grows
    with K; inputs are rounded identically on both sides. float32 inputs keep
    full precision because the launcher asks tl.dot for "ieee" (not tf32).
    """
    tol = dict(TOLERANCES[dtype])
    if dtype == torch.float32:
        tol = {"atol": 1e-5 * max(1, k) ** 0.5, "rtol": 1e-5}
    return tol


def rand(*shape, dtype=torch.float32):
    return torch.randn(*shape, device=DEVICE).to(dtype)


def expected(a, b):
    return a.double() @ b.double()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("m, n, k", SHAPES, ids=lambda s: str(s))
def test_matches_reference(m, n, k, dtype, seeded):
    a, b = rand(m, k, dtype=dtype), rand(k, n, dtype=dtype)
    out = poison_(torch.empty(m, n, device=DEVICE, dtype=dtype))
    result = mm.matmul(a, b, out=out, config=SMALL)
    assert result is out
    assert not torch.isnan(out).any(), "an element was never written"
    assert_close(out, expected(a, b), **product_tolerance(dtype, k))


@pytest.mark.parametrize("config", [SMALL, MIXED, mm.INTERPRETER_CONFIG], ids=str)
def test_block_shapes_and_groups(config, seeded):
    # 9 x 5 tiles of 16: GROUP_M = 2 and 3 leave a short last group.
    a, b = rand(130, 90, dtype=torch.float16), rand(90, 70, dtype=torch.float16)
    out = mm.matmul(
        a,
        b,
        out=poison_(torch.empty(130, 70, device=DEVICE, dtype=torch.float16)),
        config=config,
    )
    assert_close(out, expected(a, b))


def test_default_config_runs_without_autotuning(seeded):
    # On a GPU config=None autotunes; under the interpreter it falls back to
    # INTERPRETER_CONFIG, so the plain call must work on a laptop too.
    a, b = rand(40, 24, dtype=torch.float16), rand(24, 50, dtype=torch.float16)
    assert_close(mm.matmul(a, b), expected(a, b))


@pytest.mark.parametrize(
    "layout", ["a_transposed", "b_transposed", "both_transposed", "sliced"]
)
def test_strided_inputs_are_read_in_place(layout, seeded):
    m, n, k = 33, 20, 47
    dt = torch.float16
    if layout == "a_transposed":
        a, b = rand(k, m, dtype=dt).t(), rand(k, n, dtype=dt)
    elif layout == "b_transposed":
        a, b = rand(m, k, dtype=dt), rand(n, k, dtype=dt).t()
    elif layout == "both_transposed":
        a, b = rand(k, m, dtype=dt).t(), rand(n, k, dtype=dt).t()
    else:  # every other row and column of bigger matrices
        a, b = rand(2 * m, 2 * k, dtype=dt)[::2, ::2], rand(k, 3 * n, dtype=dt)[:, ::3]
    assert not (a.is_contiguous() and b.is_contiguous())
    out = mm.matmul(a, b, config=SMALL)
    assert_close(out, expected(a, b))


def test_writes_into_a_strided_out(seeded):
    a, b = rand(20, 10, dtype=torch.float16), rand(10, 30, dtype=torch.float16)
    buffer = poison_(torch.empty(30, 20, device=DEVICE, dtype=torch.float16))
    mm.matmul(a, b, out=buffer.t(), config=SMALL)  # column-major C
    assert_close(buffer.t(), expected(a, b))


def test_does_not_write_past_the_edges(seeded):
    # C is the top-left corner of a poisoned buffer: a store without its mask
    # would spill into the guard columns to the right and the rows below.
    m, n, k = 37, 21, 19
    a, b = rand(m, k), rand(k, n)
    buffer = poison_(torch.empty(m + 16, n + 16, device=DEVICE))
    mm.matmul(a, b, out=buffer[:m, :n], config=SMALL)
    assert torch.isnan(buffer[m:, :]).all() and torch.isnan(buffer[:, n:]).all()
    assert_close(buffer[:m, :n], expected(a, b), **product_tolerance(torch.float32, k))


def test_masked_k_tail_reads_zeros(seeded):
    # K = 17 with BLOCK_K = 16: the second step sees one real column. A and B
    # are views into buffers whose extra columns/rows hold NaN, so reading
    # past K without the mask (or without other=0.0) would poison C.
    m, n, k = 24, 24, 17
    a_buf = torch.full((m, 32), float("nan"), device=DEVICE)
    b_buf = torch.full((32, n), float("nan"), device=DEVICE)
    a_buf[:, :k] = torch.randn(m, k, device=DEVICE)
    b_buf[:k] = torch.randn(k, n, device=DEVICE)
    out = mm.matmul(a_buf[:, :k], b_buf[:k], config=SMALL)
    assert_close(out, expected(a_buf[:, :k], b_buf[:k]), atol=1e-5 * 5, rtol=1e-5)


def test_empty_and_zero_k(seeded):
    assert mm.matmul(rand(0, 5), rand(5, 3), config=SMALL).shape == (0, 3)
    assert mm.matmul(rand(4, 5), rand(5, 0), config=SMALL).shape == (4, 0)
    out = poison_(torch.empty(6, 7, device=DEVICE))
    mm.matmul(rand(6, 0), rand(0, 7), out=out, config=SMALL)  # empty sum = 0
    assert torch.equal(out, torch.zeros(6, 7, device=DEVICE))


def test_large_magnitudes_accumulate_in_float32(seeded):
    # Sums that overflow float16 midway but not at the end: 64 products of
    # 200 * 200 would reach 2.56e6 in float16 partial sums (max 65504) if
    # the accumulator were half precision; half of them cancel.
    k = 64
    a = torch.full((16, k), 200.0, device=DEVICE, dtype=torch.float16)
    b = torch.full((k, 16), 200.0, device=DEVICE, dtype=torch.float16)
    b[k // 2 :] = -200.0
    b[-1] = -199.0  # result: 200 * 1 = 200 per element
    out = mm.matmul(a, b, config=SMALL)
    assert torch.isfinite(out).all()
    assert_close(out, expected(a, b))


def test_reference_is_torch_matmul():
    a, b = torch.eye(3), torch.arange(9.0).reshape(3, 3)
    assert torch.equal(mm.matmul_ref(a, b), b)


# ------------------------------------------------------------ bad input ---
@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda: ([[1.0]], [[2.0]]), TypeError, "torch.Tensor"),
        (lambda: (rand(4), rand(4, 2)), ValueError, "2-D"),
        (lambda: (rand(2, 3, 4), rand(4, 2)), ValueError, "2-D"),
        (lambda: (rand(4, 3), rand(4, 2)), ValueError, "inner dimensions"),
        (lambda: (rand(4, 3), rand(3, 2, dtype=torch.float16)), TypeError, "dtypes"),
        (lambda: (rand(4, 3).double(), rand(3, 2).double()), TypeError, "unsupported"),
        (
            lambda: (rand(4, 3).to(torch.int8), rand(3, 2).to(torch.int8)),
            TypeError,
            "unsupported",
        ),
    ],
    ids=["not-tensors", "1-D", "3-D", "inner-dims", "mixed-dtypes", "float64", "int8"],
)
def test_bad_input_is_rejected(make, error, message):
    a, b = make()
    with pytest.raises(error, match=message):
        mm.matmul(a, b, config=SMALL)


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


@pytest.mark.parametrize("change, message", BAD_CONFIGS)
def test_a_config_the_kernel_cannot_compute_is_refused(change, message):
    a, b = rand(40, 64, dtype=torch.float16), rand(64, 48, dtype=torch.float16)
    out = poison_(torch.empty(40, 48, dtype=torch.float16, device=DEVICE))
    with pytest.raises(ValueError, match=message):
        mm.matmul(a, b, out=out, config={**SMALL, **change})
    assert torch.isnan(out).all()  # refused before any launch


def test_bad_out_is_rejected():
    a, b = rand(4, 3), rand(3, 2)
    for out in (rand(2, 4), rand(4, 2, dtype=torch.float16), rand(8)):
        with pytest.raises(ValueError, match="out must be"):
            mm.matmul(a, b, out=out, config=SMALL)


def _aliasing_outs():
    # (name, a, b, out): an out that shares memory with a or b, 16x16 @ 16x16
    a, b = rand(16, 16), rand(16, 16)
    buffer = rand(40, 16)
    return [
        ("a", a, b, a),
        ("b", a, b, b),
        ("a", a, b, a.t()),  # the same elements in another order
        ("a", buffer[:16], b, buffer[8:24]),  # half of a's rows
        ("b", a, buffer[24:], buffer[20:36]),  # a few of b's rows
    ]


@pytest.mark.parametrize("case", range(5), ids=["a", "b", "a.t", "part-a", "part-b"])
def test_an_out_that_shares_memory_with_an_input_is_refused(case):
    # tiled-gemm review #5: out=a gave a wrong product with no error, since
    # programs read tiles of a that others had already overwritten
    name, a, b, out = _aliasing_outs()[case]
    before = out.clone()
    with pytest.raises(ValueError, match=f"out shares memory with {name}"):
        mm.matmul(a, b, out=out, config=SMALL)
    assert torch.equal(out, before)  # refused before anything was written


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.empty(1, 16, device=DEVICE).expand(16, 16),  # row stride 0
        lambda: torch.empty(16, 1, device=DEVICE).expand(16, 16),  # column stride 0
        lambda: torch.empty(64, device=DEVICE).as_strided((16, 16), (2, 1)),
        lambda: torch.empty(64, device=DEVICE).as_strided((16, 16), (1, 3)),
    ],
    ids=["expanded-rows", "expanded-cols", "rows-overlap", "cols-overlap"],
)
def test_an_out_whose_elements_overlap_is_refused(make):
    # tiled-gemm review #5: two tiles stored into the same element and the
    # last store won, again with no error
    with pytest.raises(ValueError, match="out's elements overlap"):
        mm.matmul(rand(16, 16), rand(16, 16), out=make(), config=SMALL)


def test_the_self_overlap_check_never_passes_an_overlapping_layout():
    # every small 2-D layout, strides 0..6: accepted means distinct offsets
    # (brute force); refused-but-distinct is the documented cautious case
    refused_distinct = 0
    for shape in ((1, 1), (1, 4), (4, 1), (2, 3), (3, 3), (4, 2)):
        for s0 in range(7):
            for s1 in range(7):
                t = torch.empty(64).as_strided(shape, (s0, s1))
                offsets = {
                    i * s0 + j * s1 for i in range(shape[0]) for j in range(shape[1])
                }
                distinct = len(offsets) == t.numel()
                if not mm._overlaps_itself(t):
                    assert distinct, (shape, (s0, s1))
                refused_distinct += distinct and mm._overlaps_itself(t)
    assert not mm._overlaps_itself(torch.empty(5, 7))
    assert not mm._overlaps_itself(torch.empty(7, 5).t())
    assert not mm._overlaps_itself(torch.empty(9, 9)[::2, 1:8])
    assert refused_distinct > 0  # e.g. (2, 3) with strides (3, 2): interleaved


def test_an_out_beside_the_inputs_in_one_buffer_is_accepted(seeded):
    # the check looks at bytes, not at which allocation a tensor came from
    buffer = rand(48, 16)
    a, b, out = buffer[:16], buffer[16:32], buffer[32:]
    want = expected(a, b)
    mm.matmul(a, b, out=out, config=SMALL)
    assert_close(out, want, **product_tolerance(torch.float32, 16))


def test_cpu_tensors_without_interpreter_are_rejected(monkeypatch):
    monkeypatch.setattr(mm, "_INTERPRETING", False)  # imported without it
    with pytest.raises(ValueError, match="TRITON_INTERPRET=1"):
        mm.matmul(torch.randn(4, 3), torch.randn(3, 2))


# issue #28: the kernel's offsets are int32, so the launcher refuses a matrix
# whose last element lies 2**31 or more elements past its first. Meta tensors
# report such shapes without allocating anything; nothing is launched.
@pytest.mark.parametrize(
    "shapes",
    [
        ((65536, 32832), (32832, 16)),  # a: 2**31 + 2**22 elements
        ((16, 65536), (65536, 32832)),  # b
        ((65536, 16), (16, 32832)),  # out
        ((1, 2**31 + 1), (2**31 + 1, 1)),  # one row of a, one column of b
    ],
    ids=["a", "b", "out", "k"],
)
def test_matrices_past_int32_offsets_are_refused(shapes, monkeypatch):
    monkeypatch.setattr(mm, "_interpreting", lambda: True)  # meta, not CUDA
    a, b = (torch.empty(s, dtype=torch.float16, device="meta") for s in shapes)
    with pytest.raises(ValueError, match=r"more than 2\*\*31 - 1 elements"):
        mm.matmul(a, b, config=SMALL)


def test_a_transposed_view_is_measured_by_its_strides(monkeypatch):
    monkeypatch.setattr(mm, "_interpreting", lambda: True)
    at_limit = torch.empty(32768, 65536, device="meta").t()  # 2**31 elements
    assert mm._last_offset(at_limit) == mm.MAX_OFFSET  # still within reach
    a = torch.empty(32769, 65536, dtype=torch.float16, device="meta").t()
    b = torch.empty(32769, 16, dtype=torch.float16, device="meta")
    with pytest.raises(ValueError, match="a spans more"):
        mm.matmul(a, b, config=SMALL)


@pytest.mark.gpu  # needs a CUDA device beside the CPU
def test_mixed_devices_are_rejected():
    with pytest.raises(ValueError, match="is on"):
        mm.matmul(torch.randn(4, 3, device="cuda"), torch.randn(3, 2))


# ------------------------------------------------------------- autotune ---
def test_autotune_configs_are_valid():
    # Every candidate must name the kernel's block parameters and keep the
    # tiles tl.dot can use (>= 16 per side, powers of two).
    assert 1 <= len(mm.CONFIGS) <= 8
    for cfg in mm.CONFIGS:
        assert set(cfg.kwargs) == {"BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M"}
        for name in ("BLOCK_M", "BLOCK_N", "BLOCK_K"):
            v = cfg.kwargs[name]
            assert v >= 16 and v & (v - 1) == 0
    assert mm.matmul_kernel_autotuned.keys == ["M", "N", "K"]
    ungrouped = mm.matmul_kernel_ungrouped.configs
    assert all(c.kwargs["GROUP_M"] == 1 for c in ungrouped)


@pytest.mark.parametrize("index", range(len(mm.CONFIGS)))
def test_each_autotune_config_computes_the_product(index, seeded):
    # The autotuner cannot run here ("0 active drivers"), so launch the raw
    # kernel with each of its configs in turn, on a shape none divides.
    cfg = mm.CONFIGS[index]
    meta = dict(cfg.kwargs, num_warps=cfg.num_warps, num_stages=cfg.num_stages)
    if DEVICE == "cpu":  # big tiles are slow in NumPy: keep the problem small
        a, b = rand(70, 65, dtype=torch.float16), rand(65, 33, dtype=torch.float16)
    else:
        a, b = rand(300, 200, dtype=torch.float16), rand(200, 333, dtype=torch.float16)
    out = mm.matmul(a, b, config=meta)
    assert_close(out, expected(a, b))


@pytest.mark.gpu
@pytest.mark.compile_heavy
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_autotuned_kernel_on_gpu(dtype, seeded):
    a, b = rand(1000, 777, dtype=dtype), rand(777, 555, dtype=dtype)
    out = poison_(torch.empty(1000, 555, device="cuda", dtype=dtype))
    mm.matmul(a, b, out=out)
    assert_close(out, expected(a, b), **product_tolerance(dtype, 777))
    assert mm.matmul_kernel_autotuned.best_config is not None
    mm.matmul(a, b, kernel=mm.matmul_kernel_ungrouped)


@pytest.mark.gpu
@pytest.mark.compile_heavy
def test_float32_is_not_tf32_on_gpu(seeded):
    # tf32 keeps 10 mantissa bits: with it, this K = 1024 product would miss
    # the float32 tolerance by orders of magnitude.
    a, b = rand(128, 1024), rand(1024, 128)
    assert_close(
        mm.matmul(a, b), expected(a, b), **product_tolerance(torch.float32, 1024)
    )


def test_benchmark_description():
    names = [bench["name"] for bench in mm.BENCHMARKS]
    assert len(set(names)) == len(names)
    for bench in mm.BENCHMARKS:
        size = bench["sizes"][0]
        assert set(size) == set(bench["params"]) == {"M", "N", "K"}
        assert (
            bench["work"](size, torch.float16) == 2 * size["M"] * size["N"] * size["K"]
        )
        a, b = bench["make_inputs"]({"M": 3, "N": 5, "K": 4}, torch.float16, DEVICE)
        assert a.shape == (3, 4) and b.shape == (4, 5)
        assert "cuBLAS" in bench["peers"]


# ------------------------------------------------------ the page's claims ---
# (independent review of 2026-11-26, ser1: docs/triton-series/tiled-gemm.md)
PAGE = REPO_ROOT / "docs" / "triton-series" / "tiled-gemm.md"
# #34: the tiled GEMM's Hopper and FP8 versions have pages of their own, each
# page's visible code a program of its own: {page: names it must define}
GEMM_PAGES = {
    PAGE: {"matmul_kernel", "matmul_kernel_autotuned"},
    PAGE.with_name("tiled-gemm-hopper.md"): {
        "_tile_coords",
        "matmul_tma_kernel",
        "matmul_tma_persistent_kernel",
    },
    PAGE.with_name("fp8-gemm.md"): {
        "_tile_coords",
        "matmul_fp8_kernel",
        "quantize_per_tensor",
        "quantize_per_row",
    },
}
_EMBED = re.compile(r'^\s*--8<--\s+"([\w.]+\.py):([\w-]+)"\s*$')


def _page_text() -> str:
    return " ".join(PAGE.read_text(encoding="utf-8").split())


def _python_blocks(markdown: str) -> list[tuple[bool, str, list[str]]]:
    """Each ```python block of a page: (inside a collapsed ??? block, its
    title, its lines)."""
    blocks, collapsed_at, fence, title, lines = [], None, None, "", []
    for line in markdown.splitlines():
        indent = len(line) - len(line.lstrip())
        if fence is not None:
            if line.strip() == "```":
                blocks.append((collapsed_at is not None, title, lines))
                fence, lines = None, []
            else:
                lines.append(line)
            continue
        if collapsed_at is not None and line.strip() and indent <= collapsed_at:
            collapsed_at = None  # the collapsed block ended
        start = re.fullmatch(r'```python(?: title="([^"]*)")?', line.strip())
        if line.lstrip().startswith("??? "):
            collapsed_at = indent
        elif start:
            fence, title = indent, start.group(1) or ""
    return blocks


def _lines(code: str) -> list[str]:
    return [line.strip() for line in code.splitlines() if line.strip()]


def _inside(part: str, whole: str) -> bool:
    want, have = _lines(part), _lines(whole)
    return any(
        have[i : i + len(want)] == want for i in range(len(have) - len(want) + 1)
    )


def page_program(markdown: str) -> str:
    """The page's visible code in order, as one program. A block titled
    "excerpt" repeats a piece of another block (the kernel's K loop) to
    explain it: it is read, not run twice."""
    from triton_course.notebooks import snippet_section

    program, excerpts = [], []
    for collapsed, title, lines in _python_blocks(markdown):
        if collapsed:
            continue
        code = []
        for line in lines:
            m = _EMBED.match(line)
            code.append(snippet_section(*m.groups()) if m else line)
        (excerpts if title.startswith("excerpt") else program).append("\n".join(code))
    for excerpt in excerpts:  # an excerpt must be a piece of a block that runs
        assert any(_inside(excerpt, block) for block in program), excerpt[:200]
    return "\n\n".join(program)


def _top_level_names(tree) -> set[str]:
    names = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


@pytest.mark.parametrize("page", list(GEMM_PAGES), ids=lambda p: p.stem)
def test_the_pages_visible_code_is_a_whole_program(page):
    # #34: copied in order, the visible blocks run; nothing they call lives
    # only in a collapsed block or off the page (ser1-21: _tile_coords)
    program = page_program(page.read_text(encoding="utf-8"))
    tree = ast.parse(program)
    defined = _top_level_names(tree)
    snippet_names = set()
    for name in ("matmul.py", "matmul_tma.py", "matmul_fp8.py"):
        snippet_names |= _top_level_names(ast.parse((SNIPPETS / name).read_text()))
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert used & snippet_names <= defined, sorted((used & snippet_names) - defined)
    assert GEMM_PAGES[page] <= defined, sorted(GEMM_PAGES[page] - defined)


def test_the_page_program_finds_a_name_that_only_a_collapsed_block_defines():
    page = (
        '```python\n--8<-- "matmul.py:imports"\n```\n\n'
        '??? info "hidden"\n\n    ```python\n    def helper():\n'
        "        return 1\n    ```\n\n```python\nprint(helper())\n```\n"
    )
    program = page_program(page)
    assert "def helper" not in program and "print(helper())" in program


@pytest.mark.skipif(DEVICE != "cpu", reason="the page's program, interpreted")
@pytest.mark.parametrize("page", list(GEMM_PAGES), ids=lambda p: p.stem)
def test_the_pages_visible_code_runs_in_order(page, tmp_path):
    script = tmp_path / f"{page.stem}_page.py"  # triton.jit reads source files
    script.write_text(page_program(page.read_text(encoding="utf-8")))
    env = dict(os.environ, TRITON_INTERPRET="1")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_no_unmeasured_cost_and_no_torch_matmul_promise_in_the_snippet():
    # ser1-19: "int64 ones cost 3 to 20 % on an H100" was measured nowhere;
    # ser1-12: "unlike torch.matmul there is no hidden copy" contradicted the
    # page (torch.matmul(out=a) is wrong on the CPU)
    source = (SNIPPETS / "matmul.py").read_text(encoding="utf-8")
    assert "int64 ones cost" not in source and "hidden copy" not in source
    assert "computes its offsets (rows * stride_am, ...) in int32" in source


@pytest.mark.skipif(DEVICE != "cpu", reason="what torch 2.13 does on the CPU")
def test_torch_matmul_into_one_of_its_inputs_is_wrong_on_the_cpu(seeded):
    # ser1-12: zeros in float32, wrong values in float16 and bfloat16
    for dtype in DTYPES:
        a, b = rand(64, 64, dtype=dtype), rand(64, 64, dtype=dtype)
        want = expected(a, b)
        x = a.clone()
        torch.matmul(x, b, out=x)
        if dtype == torch.float32:
            assert torch.equal(x, torch.zeros_like(x))
        else:
            assert not torch.allclose(x.double(), want, rtol=0.1, atol=1.0), dtype
    page = _page_text()
    assert "gets this right on a CUDA GPU" in page
    assert "returns zeros in float32 and wrong values in float16 and bfloat16" in page


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_torch_matmul_into_one_of_its_inputs_is_right_on_a_gpu(dtype, seeded):
    # the page: "torch.matmul(a, b, out=a) gets this right on a CUDA GPU"
    a, b = rand(256, 256, dtype=dtype), rand(256, 256, dtype=dtype)
    want = torch.matmul(a.clone(), b)
    torch.matmul(a, b, out=a)
    assert_close(a, want.double(), **product_tolerance(dtype, 256))


@pytest.mark.skipif(DEVICE != "cpu", reason="the interpreter's conversion")
def test_the_interpreter_truncates_a_bfloat16_result(seeded):
    # ser1-14 (this page's and notebook's instance): float32 -> bfloat16 in
    # the interpreter cuts the low bits; a GPU rounds to nearest
    a, b = rand(64, 64, dtype=torch.bfloat16), rand(64, 64, dtype=torch.bfloat16)
    got = mm.matmul(a, b, config=SMALL)
    full = mm.matmul(a.float(), b.float(), config=SMALL)
    cut = (full.view(torch.int32) & -(2**16)).view(torch.float32).bfloat16()
    assert torch.equal(got, cut)
    differ = (got != full.bfloat16()).float().mean().item()
    assert 0.3 < differ < 0.7  # "about half of the elements"
    nearest = full.bfloat16().float().abs()
    assert (got.float().abs() <= nearest).all()  # "closer to zero"
    assert "about half of the elements of a bfloat16 product end one step" in (
        _page_text()
    )
    recipe = (REPO_ROOT / "notebooks" / "tiled_gemm.md").read_text(encoding="utf-8")
    assert "slower, but the same results" not in recipe
    assert "by cutting off the low bits" in " ".join(recipe.split())


# What the page says the compiler emits (sm_90 and sm_80, no GPU needed).
_CODEGEN = r"""
import json, re, sys
from pathlib import Path
from triton_course import codegen, excerpts

mm = excerpts._load(Path("snippets/matmul.py"))
names = ["a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk",
         "stride_cm"]
const = {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, "BLOCK_N": 64,
         "BLOCK_K": 32, "GROUP_M": 8}


def compile_(arch, dtype, block_m, warps, precision="tf32"):
    sig = dict.fromkeys(names, "i32") | dict.fromkeys(
        ("a_ptr", "b_ptr", "c_ptr"), f"*{dtype}")
    sig |= dict.fromkeys([*const, "BLOCK_M", "INPUT_PRECISION"], "constexpr")
    order = ["a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_ak",
             "stride_bk", "stride_bn", "stride_cm", "stride_cn", "BLOCK_M",
             "BLOCK_N", "BLOCK_K", "GROUP_M", "INPUT_PRECISION"]
    sig = {k: sig[k] for k in order}
    return codegen.compile_for(
        mm.matmul_kernel, arch, sig,
        const | {"BLOCK_M": block_m, "INPUT_PRECISION": precision},
        ["a_ptr", "b_ptr", "c_ptr", "stride_am", "stride_bk", "stride_cm"],
        num_warps=warps)["ptx"]


out = {}
for warps in (2, 4):
    out[f"fp16-w{warps}"] = codegen.dot_instruction(compile_(90, "fp16", 64, warps))
for arch in (80, 90):
    ptx = compile_(arch, "fp32", 64, 4)
    out[f"tf32-{arch}"] = {
        "cvt_to_tf32": bool(re.search(r"cvt\.\w+\.tf32", ptx)),
        "tf32_dot": bool(re.search(r"(mma\.sync|wgmma)\S*\.tf32\.tf32", ptx)),
    }
ptx = compile_(90, "bf16", 64, 4)
out["bf16-store"] = sorted(set(re.findall(r"cvt\.rn\S*bf16\S*", ptx)))
json.dump(out, sys.stdout)
"""


def test_what_the_page_says_tl_dot_compiles_to():
    found = compile_in_subprocess(_CODEGEN)
    # ser1-16: wgmma needs a whole warp group, not only 64 rows
    assert found["fp16-w2"].startswith("mma.sync"), found
    assert found["fp16-w4"].startswith("wgmma"), found
    assert all(c.num_warps >= 4 for c in mm.CONFIGS)  # "every config"
    # ser1-11: tf32 operands reach the tensor cores unrounded (truncated)
    for arch in (80, 90):
        assert found[f"tf32-{arch}"] == {"cvt_to_tf32": False, "tf32_dot": True}
    # the store of a bfloat16 C rounds to nearest on the GPU
    assert found["bf16-store"], found
    page = _page_text()
    assert "computed by a whole warp group, `num_warps` of at least 4" in page
    assert "the PTX has no `cvt.rna.tf32.f32`" in page
    assert "each operand is truncated" in page and "rounded to 10" not in page


@pytest.mark.gpu
@pytest.mark.parametrize("warps", [2, 4], ids=["mma.sync", "wgmma-on-sm90"])
def test_tf32_truncates_the_operands_on_a_gpu(warps, seeded):
    # ser1-11: the page says tf32 truncates; A @ I shows each operand as the
    # tensor cores read it (one product, added to zeros: no other rounding)
    if torch.cuda.get_device_capability() < (8, 0):
        pytest.skip("no tf32 tensor cores before sm_80")
    a, eye = rand(64, 64), torch.eye(64, device="cuda")
    out = torch.empty_like(a)
    mm.matmul_kernel[(1,)](
        a, eye, out, 64, 64, 64, *a.stride(), *eye.stride(), *out.stride(),
        BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=1, INPUT_PRECISION="tf32",
        num_warps=warps,
    )  # fmt: skip
    cut = (a.view(torch.int32) & -(2**13)).view(torch.float32)
    assert torch.equal(out, cut)
    assert not torch.equal(out, a)


def test_the_launch_runs_on_the_inputs_device(monkeypatch):
    # review 2026-11-27 l03-03: Triton launches on the current GPU, not on a's
    seen = []
    real_on = mm._on
    monkeypatch.setattr(mm, "_on", lambda d: seen.append(d) or real_on(d))
    a, b = torch.eye(3, device=DEVICE), torch.arange(6.0, device=DEVICE).view(3, 2)
    assert torch.equal(mm.matmul(a, b, config=SMALL), b)
    assert seen == [a.device]


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_tensors_on_a_second_gpu_run_there():
    a = torch.randn(256, 128, device="cuda:1")
    b = torch.randn(128, 64, device="cuda:1")
    with torch.cuda.device(0):
        out = mm.matmul(a, b)
    torch.cuda.synchronize(1)
    assert_close(out, a.double() @ b.double(), **product_tolerance(torch.float32, 128))
