"""snippets/softmax.py: both kernels on awkward shapes, dtypes, edge values, strides,
and every input error."""

import builtins
import dis
import re
import runpy
import textwrap
import types

import pytest
import torch
from conftest import (
    DEVICE,
    REPO_ROOT,
    assert_close,
    compile_in_subprocess,
    load_snippet,
    poison_,
)

sm = load_snippet("softmax")

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
LAUNCHERS = [sm.softmax, sm.softmax_rows]
LAUNCHER_IDS = ["row_per_program", "rows_per_program"]
INF = float("inf")


def expected(x: torch.Tensor) -> torch.Tensor:
    """torch.softmax in float64: the reference every result is compared with."""
    return torch.softmax(x.double(), dim=-1)


def run(launcher, x, **kw):
    """Launch into a poisoned output and check every element was written."""
    out = poison_(torch.empty(x.shape, dtype=x.dtype, device=x.device))
    result = launcher(x, out=out, **kw)
    assert result is out
    return out


# ------------------------------------------------------------- results ---
@pytest.mark.parametrize("launcher", LAUNCHERS, ids=LAUNCHER_IDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(
    "shape", [(1, 1), (1, 7), (7, 1000), (3, 3000), (33, 128), (130, 17)], ids=str
)
def test_matches_reference(launcher, shape, dtype, seeded):
    x = (3 * torch.randn(shape, device=DEVICE)).to(dtype)
    out = run(launcher, x)
    assert not torch.isnan(out).any(), "an element was never written"
    assert_close(out, expected(x))


@pytest.mark.parametrize("launcher", LAUNCHERS, ids=LAUNCHER_IDS)
def test_rows_sum_to_one(launcher, seeded):
    x = 10 * torch.randn(19, 777, device=DEVICE)
    out = run(launcher, x)
    torch.testing.assert_close(out.sum(dim=1), torch.ones(19, device=DEVICE))


@pytest.mark.parametrize("block_rows", [1, 2, 8, 64])
def test_every_block_of_rows_covers_every_row(block_rows, seeded):
    x = torch.randn(37, 100, device=DEVICE)  # 37: not a multiple of any above but 1
    out = run(sm.softmax_rows, x, block_rows=block_rows)
    assert_close(out, expected(x))


@pytest.mark.parametrize("launcher", LAUNCHERS, ids=LAUNCHER_IDS)
@pytest.mark.parametrize("shape", [(0, 5), (3, 0), (0, 0)], ids=str)
def test_empty_input(launcher, shape):
    x = torch.empty(shape, device=DEVICE)
    out = launcher(x)
    assert out.shape == x.shape
    assert torch.equal(out, torch.softmax(x, dim=-1))


def test_reference_and_unfused_version_agree_with_torch(seeded):
    x = torch.randn(5, 33, device=DEVICE)
    torch.testing.assert_close(sm.softmax_ref(x), torch.softmax(x, dim=-1))
    torch.testing.assert_close(sm.softmax_unfused(x), torch.softmax(x, dim=-1))
    half = x.half()
    assert sm.softmax_ref(half).dtype == torch.float16


# --------------------------------------------------------- edge values ---
@pytest.mark.parametrize("launcher", LAUNCHERS, ids=LAUNCHER_IDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_all_minus_inf_row_is_nan_like_torch(launcher, dtype, seeded):
    # torch.softmax of a row of -inf is a row of NaN (0 / 0); a row holding
    # one +inf is NaN too (inf - inf). The other rows must be unaffected.
    x = torch.randn(4, 50, device=DEVICE)
    x[1] = -INF
    x[2, 7] = INF
    x[3, :49] = -INF  # a single finite value: probability 1 there
    x = x.to(dtype)
    torch_result = torch.softmax(x.float(), dim=-1)
    assert torch.isnan(torch_result[1]).all() and torch.isnan(torch_result[2]).all()
    out = run(launcher, x)
    assert torch.isnan(out[1]).all() and torch.isnan(out[2]).all()
    assert_close(out, expected(x))  # NaN where torch has NaN, equal elsewhere
    assert out[3, 49] == 1 and (out[3, :49] == 0).all()


@pytest.mark.parametrize("launcher", LAUNCHERS, ids=LAUNCHER_IDS)
@pytest.mark.parametrize(
    "dtype, big",
    [(torch.float16, 1e4), (torch.bfloat16, 1e30), (torch.float32, 3e38)],
    ids=["float16", "bfloat16", "float32"],
)
def test_huge_magnitudes_do_not_overflow(launcher, dtype, big, seeded):
    # Without the max subtraction exp(1e4) is inf in any float format.
    x = (2 * torch.rand(6, 300, device=DEVICE) - 1) * big  # within the format's range
    x[0] = -big
    x[0, :3] = torch.tensor([-big, big, 0.0], device=DEVICE)
    x[1] = big  # a constant row: uniform
    x = x.to(dtype)
    out = run(launcher, x)
    assert not torch.isnan(out).any()
    assert_close(out, expected(x))
    assert out[0, 1] == 1
    assert_close(
        out[1], torch.full((300,), 1 / 300, dtype=torch.float64, device=DEVICE)
    )


# ------------------------------------------------------------ strides ---
@pytest.mark.parametrize("launcher", LAUNCHERS, ids=LAUNCHER_IDS)
def test_strided_rows_are_read_and_written_in_place(launcher, seeded):
    # x: every other row of a wider buffer (row stride 2 * 160, columns 0..99).
    base = torch.randn(40, 160, device=DEVICE)
    x = base[::2, :100]
    assert x.stride() == (320, 1)
    # out: a slice of a poisoned buffer; its padding columns must stay NaN.
    buffer = poison_(torch.empty(20, 128, device=DEVICE))
    out = buffer[:, :100]
    launcher(x, out=out)
    assert_close(out, expected(x))
    assert torch.isnan(buffer[:, 100:]).all(), "wrote past the end of a row"


@pytest.mark.parametrize("launcher", LAUNCHERS, ids=LAUNCHER_IDS)
def test_does_not_write_past_the_end(launcher, seeded):
    x = torch.randn(7, 1000, device=DEVICE)
    buffer = poison_(torch.empty(7 * 1000 + 4096, device=DEVICE))
    out = buffer[: 7 * 1000].view(7, 1000)
    launcher(x, out=out)
    assert torch.isnan(buffer[7 * 1000 :]).all()
    assert_close(out, expected(x))


@pytest.mark.parametrize("launcher", LAUNCHERS, ids=LAUNCHER_IDS)
def test_broadcast_rows_are_fine(launcher, seeded):
    x = torch.randn(1, 50, device=DEVICE).expand(6, 50)  # row stride 0
    out = launcher(x)
    assert out.is_contiguous()
    assert_close(out, expected(x))


# ----------------------------------------------------------- bad input ---
@pytest.mark.parametrize("launcher", LAUNCHERS, ids=LAUNCHER_IDS)
@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda: [[1.0, 2.0]], TypeError, "torch.Tensor"),
        (
            lambda: torch.randn(4, 8, device=DEVICE).double(),
            TypeError,
            "unsupported dtype",
        ),
        (
            lambda: torch.ones(4, 8, dtype=torch.int32, device=DEVICE),
            TypeError,
            "unsupported dtype",
        ),
        (lambda: torch.randn(8, device=DEVICE), ValueError, "2-D"),
        (lambda: torch.randn(2, 4, 8, device=DEVICE), ValueError, "2-D"),
        (lambda: torch.randn(8, 8, device=DEVICE)[:, ::2], ValueError, "stride 1"),
        (lambda: torch.randn(8, 8, device=DEVICE).t(), ValueError, "stride 1"),
        (
            lambda: torch.randn(1, sm.MAX_COLS + 1, device=DEVICE),
            ValueError,
            "online softmax",
        ),
    ],
    ids=["list", "float64", "int32", "1-D", "3-D", "col-stride", "transposed", "long"],
)
def test_bad_input_is_rejected(launcher, make, error, message):
    # Made on DEVICE directly: .to("cuda") would copy a strided view into a
    # contiguous tensor, and the stride checks would have nothing to reject.
    x = make()
    with pytest.raises(error, match=message):
        launcher(x)


@pytest.mark.parametrize("launcher", LAUNCHERS, ids=LAUNCHER_IDS)
def test_bad_out_is_rejected(launcher):
    x = torch.randn(4, 8, device=DEVICE)
    for wrong in (
        torch.empty(4, 9, device=DEVICE),
        torch.empty(4, 8, device=DEVICE, dtype=torch.float16),
    ):
        with pytest.raises(ValueError, match="out must match"):
            launcher(x, out=wrong)
    with pytest.raises(ValueError, match="out must have a contiguous last"):
        launcher(x, out=torch.empty(4, 16, device=DEVICE)[:, ::2])


@pytest.mark.parametrize("launcher", LAUNCHERS, ids=LAUNCHER_IDS)
def test_out_whose_rows_overlap_is_refused(launcher, seeded):
    # softmax review #2: an expanded out was filled with one row's softmax
    x = torch.randn(8, 100, device=DEVICE)
    with pytest.raises(ValueError, match="out's rows overlap"):
        launcher(x, out=torch.empty(1, 100, device=DEVICE).expand(8, 100))
    buffer = torch.empty(8 * 50 + 50, device=DEVICE)
    with pytest.raises(ValueError, match="out's rows overlap"):  # row stride 50
        launcher(x, out=buffer.as_strided((8, 100), (50, 1)))


@pytest.mark.parametrize("launcher", LAUNCHERS, ids=LAUNCHER_IDS)
def test_out_sharing_memory_with_x_is_refused(launcher, seeded):
    buffer = torch.randn(9, 100, device=DEVICE)
    x, out = buffer[:8], buffer[1:]  # out is x shifted down by one row
    with pytest.raises(ValueError, match="out shares memory with x"):
        launcher(x, out=out)


@pytest.mark.parametrize("launcher", LAUNCHERS, ids=LAUNCHER_IDS)
def test_out_beside_x_in_one_buffer_is_allowed(launcher, seeded):
    # review 2026-11-26 (ser2-11): two column blocks of one buffer interleave
    # in memory but share no element; a first-to-last span test refused them
    buffer = poison_(torch.empty(8, 200, device=DEVICE))
    x, out = buffer[:, :100], buffer[:, 100:]
    x.copy_(torch.randn(8, 100, device=DEVICE))
    want = expected(x)
    assert launcher(x, out=out) is out
    assert_close(out, want)
    # one shared element is still one too many: out starts on x's last one
    flat = torch.randn(2 * 800 - 1, device=DEVICE)
    with pytest.raises(ValueError, match="out shares memory with x"):
        launcher(flat[:800].view(8, 100), out=flat[799:].view(8, 100))
    for a, b, shared in (  # the helper against element-by-element sets
        (buffer[:, :100], buffer[:, 100:], False),
        (buffer[:, :100], buffer[:, 99:199], True),
        (buffer[::2, :100], buffer[1::2, :100], False),
        (buffer[:4], buffer[3:7], True),
        (buffer[:1, :5].expand(4, 5), buffer[1:5, :5], False),
    ):
        assert sm._overlaps(a, b) is shared
        assert _shared_elements(a, b) is shared


def _shared_elements(a, b) -> bool:
    def offsets(t):
        rows = torch.arange(t.shape[0])[:, None] * t.stride(0)
        cols = torch.arange(t.shape[1])[None, :] * t.stride(1)
        return set((t.storage_offset() + rows + cols).flatten().tolist())

    return bool(offsets(a) & offsets(b))


@pytest.mark.parametrize("launcher", LAUNCHERS, ids=LAUNCHER_IDS)
def test_out_is_x_works_in_place(launcher, seeded):
    base = torch.randn(20, 160, device=DEVICE)
    x = base[::2, :100]  # strided rows, written over in place
    want = expected(x)
    assert launcher(x, out=x) is x
    assert_close(x, want)


@pytest.mark.parametrize("block_rows", [0, 3, -2])
def test_bad_block_rows_is_rejected(block_rows):
    with pytest.raises(ValueError, match="power of two"):
        sm.softmax_rows(torch.randn(4, 8, device=DEVICE), block_rows=block_rows)


@pytest.mark.parametrize("launcher", LAUNCHERS, ids=LAUNCHER_IDS)
def test_cpu_tensors_without_interpreter_are_rejected(launcher, monkeypatch):
    monkeypatch.setattr(sm, "_INTERPRETING", False)  # imported without it
    with pytest.raises(ValueError, match="TRITON_INTERPRET=1"):
        launcher(torch.randn(4, 8))


# Review 2026-11-27 (ser2-12): Triton launches on the current device, so a
# tensor on another GPU is refused with the launcher's own words.
class _OnAnotherGpu(torch.Tensor):
    """A CPU tensor that says it lives on cuda:1 (no GPU needed)."""

    @property
    def device(self):
        return torch.device("cuda", 1)


@pytest.mark.parametrize("launcher", LAUNCHERS, ids=LAUNCHER_IDS)
def test_a_tensor_off_the_current_gpu_is_refused(launcher, monkeypatch):
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    x = torch.randn(4, 8).as_subclass(_OnAnotherGpu)
    with pytest.raises(ValueError, match=r"on cuda:1, the current device is cuda:0"):
        launcher(x)


# ------------------------------------------------ the page's bare launches ---
# softmax.md shows these sections after each kernel: the launch and what a
# reader must know, without the launchers' input checks (shown collapsed).
# Its visible code, run in order, runs them (tests/test_visible_code.py).
def test_the_bare_launches_the_page_shows(capsys):
    import triton

    softmax_kernel, softmax_rows_kernel = sm.softmax_kernel, sm.softmax_rows_kernel
    # --8<-- [start:launch_row]
    # A GPU if there is one, unless TRITON_INTERPRET=1 asked for the CPU
    on_gpu = torch.cuda.is_available() and not triton.knobs.runtime.interpret
    device = "cuda" if on_gpu else "cpu"
    x = 4 * torch.randn(130, 3000, device=device)
    n_rows, n_cols = x.shape
    out = torch.empty_like(x)
    block = triton.next_power_of_2(n_cols)  # the whole row: 4096 lanes
    softmax_kernel[(n_rows,)](  # one program per row
        x, out, n_cols, x.stride(0), out.stride(0), BLOCK_SIZE=block
    )
    torch.testing.assert_close(out, torch.softmax(x, dim=-1))
    print(f"one row per program: {n_rows} x {n_cols} matches torch.softmax")
    # --8<-- [end:launch_row]
    # --8<-- [start:launch_rows]
    x = 4 * torch.randn(1003, 200, device=device)
    n_rows, n_cols = x.shape
    out = torch.empty_like(x)
    block = triton.next_power_of_2(n_cols)  # 256 lanes per row
    rows = 2048 // block  # 8 rows per program: 2048 elements
    grid = (triton.cdiv(n_rows, rows),)  # the last program has 3 rows
    softmax_rows_kernel[grid](
        x, out, n_rows, n_cols, x.stride(0), out.stride(0),
        BLOCK_ROWS=rows, BLOCK_SIZE=block, num_warps=2,
    )  # fmt: skip
    torch.testing.assert_close(out, torch.softmax(x, dim=-1))
    print(f"{rows} rows per program: {n_rows} x {n_cols} matches torch.softmax")
    # --8<-- [end:launch_rows]
    assert capsys.readouterr().out.count("matches torch.softmax") == 2


# ----------------------------------------------------- launch choices ---
def test_num_warps_scale_with_the_block():
    assert sm._num_warps(256) == 1
    # review 2026-11-27 (ser2-15): one warp at N = 256, so no warps to sync
    page = " ".join((REPO_ROOT / "docs/triton-series/softmax.md").read_text().split())
    assert "synchronising warps" not in page
    assert "a block of 256 one warp" in page
    assert [sm._num_warps(2**k) for k in range(9, 16)] == [1, 2, 4, 8, 16, 16, 16]


def test_a_block_of_short_rows_is_2048_elements_on_two_warps():
    # #37: the 2-D kernel's short-row launch; one row per program from 2048
    # columns up, with softmax's own warps there
    launch = sm._launch_configs(rows_per_program=True)
    one_row = sm._launch_configs(rows_per_program=False)
    for n_cols, rows, warps in [("256", 8, 2), ("512", 4, 2), ("1024", 2, 2)]:
        got = launch[n_cols]
        assert (got["BLOCK_ROWS"], got["num_warps"]) == (rows, warps), n_cols
        assert got["BLOCK_ROWS"] * got["BLOCK_SIZE"] == sm.ROWS_TILE == 2048
    for n_cols in ("2048", "3000", "4096", "8192", "16384"):
        assert launch[n_cols] == one_row[n_cols], n_cols
    # an explicit block of many rows still gets 32 values per thread
    assert sm._rows_warps(64, 256) == 16 and sm._rows_warps(1, 256) == 1
    page = " ".join((REPO_ROOT / "docs/triton-series/softmax.md").read_text().split())
    assert "`ROWS_TILE = 2048` elements" in page
    assert "8 rows of 256 on 2 warps" in page


# ----------------------------------------------------------- benchmark ---
def test_benchmark_descriptions_are_complete(seeded):
    names = [b["name"] for b in sm.BENCHMARKS]
    assert names == ["softmax_row", "softmax_rows"]
    for bench in sm.BENCHMARKS:
        assert bench["metric"] == "bandwidth"
        assert next(iter(bench["peers"])) == "PyTorch eager"
        assert bench["compile"] in bench["peers"]
        size = bench["sizes"][0]
        elements = size["n_rows"] * size["n_cols"]
        assert bench["work"](size, torch.float16) == 2 * 2 * elements  # read + write
        launch = bench["report"]()["launch"]
        assert set(launch) == {str(s["n_cols"]) for s in bench["sizes"]}
        # Every callable agrees on a small input built by make_inputs.
        (x,) = bench["make_inputs"]({"n_rows": 5, "n_cols": 300}, torch.float32, DEVICE)
        reference = expected(x)
        assert_close(bench["triton"](x), reference)
        for peer in bench["peers"].values():
            assert_close(peer(x), reference)
    n_cols = [s["n_cols"] for s in sm.BENCHMARKS[0]["sizes"]]
    assert min(n_cols) == 256 and max(n_cols) == 16_384 and 3000 in n_cols


# ------------------------------------------------------- page statements ---
_ROW_STRIDE_COMPILE = r"""
import json, re, sys
from pathlib import Path
from triton_course import codegen, excerpts

kernel = excerpts._load(Path("snippets/softmax.py")).softmax_kernel
sig = {"x_ptr": "*fp16", "out_ptr": "*fp16", "n_cols": "i32",
       "x_row_stride": "i32", "out_row_stride": "i32", "BLOCK_SIZE": "constexpr"}
# n_cols and x's row stride divisible by 16, out's row stride not
ptx = codegen.compile_kernel(kernel, 90, sig, {"BLOCK_SIZE": 4096},
    ["x_ptr", "out_ptr", "n_cols", "x_row_stride"], num_warps=8).asm["ptx"]
print(json.dumps({op: len(re.findall(rf"\b{op}\b", ptx)) for op in (
    "ld.global.v4.b32", "ld.global.b16", "st.global.v4.b32", "st.global.b16")}))
"""


def test_wide_loads_and_stores_need_the_row_strides_too():
    # review 2026-11-26 (ser2-08): n_cols divisible by 16 is not enough; each
    # row's start must be known aligned, i.e. its row stride divisible by 16
    per_thread = compile_in_subprocess(_ROW_STRIDE_COMPILE, timeout=300)
    assert per_thread["ld.global.v4.b32"] == 2 and per_thread["ld.global.b16"] == 0
    assert per_thread["st.global.v4.b32"] == 0 and per_thread["st.global.b16"] == 16
    page = " ".join((REPO_ROOT / "docs/triton-series/softmax.md").read_text().split())
    assert "With `n_cols` divisible by 16 the compiler knows" not in page
    assert "the loads need `x_row_stride` divisible by 16 as well" in page
    assert "the stores `out_row_stride`" in page


def _shown_sections(page: str) -> list[tuple[str, str]]:
    """The (file, section) pairs a page embeds outside collapsed (???) blocks,
    in page order: sections of its snippet, and the bare launches it shows
    from a test file."""
    shown, collapsed_at = [], None
    for line in page.splitlines():
        indent, text = len(line) - len(line.lstrip()), line.strip()
        if collapsed_at is not None:
            if text and indent <= collapsed_at:
                collapsed_at = None
            else:
                continue
        if text.startswith("??? "):
            collapsed_at = indent
            continue
        m = re.fullmatch(r'--8<-- "([\w.-]+\.py):(\w+)"', text)
        if m:
            shown.append((m.group(1), m.group(2)))
    return shown


def _globals_used(code: types.CodeType) -> set[str]:
    names = {
        ins.argval
        for ins in dis.get_instructions(code)
        if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME")
    }
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _globals_used(const)
    return names


@pytest.mark.parametrize(
    "page, snippet, run",
    [
        # the softmax pages run their kernels through the bare launches they
        # show (a section of their test file); the launchers with their input
        # checks are shown collapsed
        ("triton-series/softmax.md", "softmax", "launch_rows"),
        ("triton-series/online-softmax.md", "online_softmax", "launch_fused"),
        ("reference/triton-at-a-glance.md", "vector_add_frameworks", "add_triton"),
    ],
)
def test_the_pages_visible_code_runs_when_copied_in_order(page, snippet, run, tmp_path):
    # issue #34: imports shown, nothing a visible block calls hidden in a
    # collapsed block or left out; ser2-10: add_numba's helper was not shown
    text = (REPO_ROOT / "docs" / page).read_text(encoding="utf-8")
    sections = _shown_sections(text)
    assert sections and sections[0] == (f"{snippet}.py", "imports"), sections
    blocks = []
    for file, name in sections:
        path = REPO_ROOT / "snippets" / file
        if not path.is_file():
            path = REPO_ROOT / "tests" / file
        source = path.read_text(encoding="utf-8")
        m = re.search(
            rf"# --8<-- \[start:{name}\]\n(.*?)# --8<-- \[end:{name}\]", source, re.S
        )
        assert m, f"{page} shows {file}:{name}, which does not exist"
        blocks.append(textwrap.dedent(m.group(1)))
    program = tmp_path / f"{snippet}_as_shown.py"  # triton.jit reads a file
    program.write_text("\n\n".join(blocks), encoding="utf-8")
    namespace = runpy.run_path(str(program), run_name="copied")
    code = compile(program.read_text(encoding="utf-8"), str(program), "exec")
    missing = {
        name
        for name in _globals_used(code)
        if name not in namespace and not hasattr(builtins, name)
    }
    assert not missing, f"{page}: the shown code uses {missing}, which it never shows"
    if snippet == "vector_add_frameworks":
        x = torch.randn(1000, device=DEVICE)
        assert_close(namespace[run](x, x), 2 * x.double())
    else:  # the bare launch ran, and checked itself against torch.softmax
        assert ("test_" + f"{snippet}.py", run) in sections, sections


def test_the_temperature_checker_has_the_cases_the_page_names():
    # ser2-04: the page names the rows a fixed block or a grid by columns
    # would get wrong; the checker must hold such rows
    from triton_course.exercises.softmax_temperature import EXERCISE

    shapes = [case["shape"] for case in EXERCISE.cases]
    page = " ".join((REPO_ROOT / "docs/triton-series/softmax.md").read_text().split())
    # review 2026-11-27 (ser2-04, ser2-05, ser2-09): the long rows are longer
    # than the fixed block the page names, the overflow has a case of its
    # own, and one shape comes twice with new values
    assert "a block fixed at 16 384 or less leaves their ends unwritten" in page
    assert "rows of 20 000 columns" in page
    assert any(cols == 20000 for _, cols in shapes)
    overflow = [c for c in EXERCISE.cases if c.get("scale", 1.0) / c["T"] > 100]
    assert overflow and all(c["shape"][1] <= 4096 for c in overflow)
    assert any(c.get("again") for c in EXERCISE.cases)
    again = [c["shape"] for c in EXERCISE.cases if c.get("again")]
    assert all(shapes.count(shape) == 2 for shape in again)
    assert "one shape called twice with new values" in page
    assert "more rows than columns" in page
    assert any(rows > cols > 0 for rows, cols in shapes)
    # ser2-05: the GPU target compares on the same input, not with the table
    assert "aim for `softmax_rows`' rate there" in page
    assert "the same share of the copy bandwidth as `softmax_rows` at" not in page
    assert "exercises/solutions/softmax_temperature.py" in page


@pytest.mark.parametrize(
    "page, snippet, stated",
    [
        (
            "triton-series/softmax.md",
            "softmax.py",
            {"softmax": "64 rows of 4096", "softmax_rows": "64 rows of 256"},
        ),
        (
            "triton-series/online-softmax.md",
            "online_softmax.py",
            {"online_softmax": "16 rows of 65 536"},
        ),
    ],
)
def test_the_support_table_text_names_what_ci_compiles(page, snippet, stated):
    # ser2-03: CI compiles one launch per launcher, at one input, in float16
    # (triton_course/support.py's plan), not every config a launcher can pick
    from triton_course.support import PLANS

    seen = {}

    class Recorder:  # stands in for the snippet module: records each call
        def __getattr__(self, name):
            return lambda x, *a, **kw: seen.setdefault(name, (x.shape, x.dtype))

    for _dtype, call, *_ in PLANS[snippet](Recorder()):
        call()
    text = " ".join((REPO_ROOT / "docs" / page).read_text().split())
    assert "in float16" in text and "at every config" not in text
    assert set(seen) == set(stated)
    for name, (shape, dtype) in seen.items():
        assert dtype == torch.float16
        rows, cols = shape
        wide = f"{cols:,}".replace(",", " ") if cols >= 10_000 else str(cols)
        assert stated[name] == f"{rows} rows of {wide}"
        assert stated[name] in text, name


def test_the_copy_is_named_as_the_probe_not_the_fastest_transfer():
    # ser2-01: the copy is a probe of the memory, not "the fastest the GPU
    # moves bytes at all" (a kernel can match it, and #33 flags one above it)
    page = " ".join((REPO_ROOT / "docs/triton-series/softmax.md").read_text().split())
    assert "the fastest the GPU moves bytes" not in page
    assert "a large device-to-device copy measured in the same run" in page
    # ser2-13: the runner tries to hide the launch, and says where it did not
    assert "The runner's GPU time leaves out Python's launch path" not in page
    assert "`launch_hidden` in the data file" in page


# Review 2026-11-27 (ser2-10, ser2-11): a row index times a row stride, or a
# program id times rows per program, wraps in int32 past 2**31; each kernel
# widens tl.program_id to int64 before it multiplies anything with it.
PROGRAM_ID_COMPILE = r"""
import json, re, sys
from pathlib import Path
from triton_course import codegen, excerpts

kernels = json.loads(sys.argv[1])
found = {}
for path, name, sig, constexprs in kernels:
    kernel = getattr(excerpts._load(Path(path)), name)
    ttir = codegen.compile_kernel(kernel, 90, sig, constexprs).asm["ttir"]
    pid = re.search(r"(%\w+) = tt.get_program_id", ttir).group(1)
    uses = [line.split(" loc(")[0].strip() for line in ttir.splitlines()
            if re.search(re.escape(pid) + r"\b", line) and "get_program_id" not in line]
    found[name] = uses
print(json.dumps(found))
"""


def program_id_uses(*kernels) -> dict:
    """The TTIR lines (sm_90) that use each kernel's tl.program_id value."""
    import json

    return compile_in_subprocess(PROGRAM_ID_COMPILE, json.dumps(kernels), timeout=300)


def test_program_ids_are_widened_to_int64_before_any_product():
    rows_sig = {"x_ptr": "*fp16", "out_ptr": "*fp16", "n_rows": "i64",
                "n_cols": "i32", "x_row_stride": "i32", "out_row_stride": "i32",
                "BLOCK_ROWS": "constexpr", "BLOCK_SIZE": "constexpr"}  # fmt: skip
    temperature_sig = {"x_ptr": "*fp16", "out_ptr": "*fp16", "n_cols": "i32",
                       "row_stride": "i32", "inv_temperature": "fp32",
                       "BLOCK_SIZE": "constexpr"}  # fmt: skip
    logsumexp_sig = {"x_ptr": "*fp16", "out_ptr": "*fp16", "n_cols": "i32",
                     "row_stride": "i32", "col_stride": "i32",
                     "BLOCK_SIZE": "constexpr"}  # fmt: skip
    uses = program_id_uses(
        ["snippets/softmax.py", "softmax_rows_kernel", rows_sig,
         {"BLOCK_ROWS": 4096, "BLOCK_SIZE": 1}],
        ["exercises/solutions/softmax_temperature.py", "softmax_temperature_kernel",
         temperature_sig, {"BLOCK_SIZE": 1024}],
        ["exercises/solutions/online_logsumexp.py", "logsumexp_kernel",
         logsumexp_sig, {"BLOCK_SIZE": 1024}],
    )  # fmt: skip
    assert len(uses) == 3
    for name, lines in uses.items():
        assert lines, name
        assert all("arith.extsi" in line and "i64" in line for line in lines), (
            name,
            lines,
        )


# Review 2026-11-27 (ser2-13, ser2-14): what the page says of x.to(tl.float32)
# and of a masked load without other=, compiled for sm_90.
LANE_FACTS_COMPILE = r"""
import json
import triton
import triton.language as tl
from triton_course import codegen


@triton.jit
def exp_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.exp(tl.load(x_ptr + offs)))


@triton.jit
def no_other_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n))


facts = {"triton": triton.__version__}
for dtype in ("fp16", "bf16"):
    try:
        codegen.compile_kernel(exp_kernel, 90, {"x_ptr": f"*{dtype}",
            "y_ptr": f"*{dtype}", "BLOCK": "constexpr"}, {"BLOCK": 128})
        facts[dtype] = "compiled"
    except Exception as error:
        facts[dtype] = str(error)
ptx = codegen.compile_kernel(no_other_kernel, 90, {"x_ptr": "*fp32",
    "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 128},
    num_warps=4).asm["ptx"]
facts["ptx"] = [line.strip() for line in ptx.splitlines()
                if "ld.global" in line or "mov.u32" in line]
print(json.dumps(facts))
"""


def test_exp_refuses_half_precision_and_unmasked_lanes_load_zero(tmp_path):
    script = tmp_path / "lane_facts.py"
    script.write_text(LANE_FACTS_COMPILE)
    facts = compile_in_subprocess(script, timeout=300)
    for dtype in ("fp16", "bf16"):
        assert f"Expected dtype ['fp32', 'fp64'] but got {dtype}" in facts[dtype]
    # the register is zeroed, then the load is predicated on the mask
    ld = next(i for i, line in enumerate(facts["ptx"]) if "ld.global" in line)
    register = re.search(r"\{ (%r\d+) \}", facts["ptx"][ld]).group(1)
    assert facts["ptx"][ld].startswith("@")
    assert f"mov.u32 {register}, 0x0;" in facts["ptx"][:ld]
    page = " ".join((REPO_ROOT / "docs/triton-series/softmax.md").read_text().split())
    assert "triton 3.6 and 3.9 in fact fill them with zeros" in page
    assert "loses about three significant digits" not in page


def test_the_page_says_which_reference_each_check_uses():
    # review 2026-11-27 (ser2-01): the exercise's checker compares with
    # float64 torch.softmax, not with the page's softmax_ref
    import inspect

    from triton_course.exercises import softmax_temperature

    assert "x.double()" in inspect.getsource(softmax_temperature.reference)
    page = " ".join((REPO_ROOT / "docs/triton-series/softmax.md").read_text().split())
    assert "The tests, and the checker of the exercise below, compare with" in page
    assert "the exercises and the notebook use computes" not in page
