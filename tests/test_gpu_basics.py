"""snippets/gpu_basics.py: strided copy, persistent copy, FMA chain, occupancy."""

import pytest
import torch
from conftest import DEVICE, HAS_GPU, assert_close, load_snippet, poison_

gb = load_snippet("gpu_basics")

DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def _randn(n, dtype=torch.float32):
    return torch.randn(n, device=DEVICE).to(dtype)


# ------------------------------------------------------------ strided copy ---
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(
    "n, stride", [(0, 3), (1, 1), (7, 2), (1000, 1), (1000, 7), (2049, 32), (5, 9)]
)
def test_strided_copy_matches_slicing(n, stride, dtype, seeded):
    x = _randn(n, dtype)
    expected = x[::stride]
    out = poison_(torch.empty(expected.numel(), dtype=dtype, device=DEVICE))
    result = gb.strided_copy(x, stride, out=out, block_size=256)
    assert result is out
    assert torch.equal(out, expected)  # a copy: bit for bit
    assert torch.equal(gb.strided_copy_ref(x, stride), expected)


def test_strided_copy_does_not_write_past_the_end(seeded):
    x = _randn(1000)
    buffer = poison_(torch.empty(143 + 64, device=DEVICE))
    gb.strided_copy(x, 7, out=buffer[:143], block_size=128)
    assert torch.isnan(buffer[143:]).all()
    assert torch.equal(buffer[:143], x[::7])


# --------------------------------------------------------- persistent copy ---
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(
    "n, programs, warps",
    [(0, 1, 1), (1, 4, 1), (1000, 3, 2), (4099, 2, 4), (777, 64, 1)],
)
def test_persistent_copy_copies_everything(n, programs, warps, dtype, seeded):
    x = _randn(n, dtype)
    out = poison_(torch.empty_like(x))
    assert gb.persistent_copy(x, programs, num_warps=warps, out=out) is out
    assert torch.equal(out, x)


def test_persistent_copy_does_not_write_past_the_end(seeded):
    x = _randn(1000)
    buffer = poison_(torch.empty(1000 + 600, device=DEVICE))
    gb.persistent_copy(x, 3, num_warps=1, out=buffer[:1000])
    assert torch.isnan(buffer[1000:]).all()
    assert torch.equal(buffer[:1000], x)


# --------------------------------------------------------------- FMA chain ---
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n, iters", [(0, 4), (1, 0), (7, 1), (1000, 16), (333, 64)])
def test_fma_chain_matches_float64(n, iters, dtype, seeded):
    x = _randn(n, dtype)
    out = poison_(torch.empty_like(x))
    assert gb.fma_chain(x, iters, out=out, block_size=128) is out
    y = x.double()
    for _ in range(iters):
        y = y * 0.999 + 0.001
    # float32 rounding adds up over the chain: allow about one ulp per step.
    chain_tol = {"atol": max(1e-5, iters * 1.2e-7)} if dtype == torch.float32 else {}
    assert_close(out, y, **chain_tol)
    assert_close(gb.fma_chain_ref(x, iters), y, **chain_tol)


def test_fma_chain_edge_values():
    x = torch.tensor(
        [0.0, -0.0, 1e30, -1e30, float("inf"), float("nan")], device=DEVICE
    )
    out = gb.fma_chain(x, 3, a=2.0, b=0.0)
    expected = x * 8
    torch.testing.assert_close(out, expected, equal_nan=True)


# ---------------------------------------------------------------- occupancy ---
@pytest.mark.parametrize(
    "regs, warps, shared, resident",
    [
        (32, 4, 0, 64),  # 32 regs: registers allow 64 warps, the warp limit binds
        (64, 4, 0, 32),  # 64 regs x 32 threads x 32 warps = 65536: half the warps
        (255, 8, 0, 8),  # 255 regs round up to 256: one 8-warp block fits
        (32, 1, 0, 32),  # one-warp blocks: the 32-block limit binds
        (32, 4, 100_000, 8),  # two 100 kB blocks fill the 228 kB of shared memory
        (40, 4, 0, 48),  # 40 regs -> 1280 per warp: 51 warps, i.e. 12 blocks of 4
        # CUDA's 1 KB per block (review 2026-11-27 mod-11): 2 x (113 + 1) KB
        # fill the 228 KB, 2 x (114 + 1) KB do not
        (32, 4, 113 * 1024, 8),
        (32, 4, 114 * 1024, 4),
    ],
)
def test_resident_warps_follow_the_occupancy_rules(regs, warps, shared, resident):
    got = gb.resident_warps_per_sm(regs, warps, shared, gb.SM90_LIMITS)
    assert got == resident


def test_the_reserved_shared_memory_is_the_vendors():
    # 1 KB per block from sm_80 (228 KB per SM, 227 KB per block on sm_90);
    # none on sm_75 (64 KB for both)
    reserved = {cc: v["reserved_shared"] for cc, v in gb.VENDOR_SM_LIMITS.items()}
    assert reserved == {(7, 5): 0, (8, 0): 1024, (8, 6): 1024, (8, 9): 1024,
                        (9, 0): 1024}  # fmt: skip


def test_occupancy_report_is_json_ready():
    import json

    report = gb.occupancy_report()
    json.dumps(report)
    if HAS_GPU:
        assert report["SM limits used"]["max_warps"] > 0
    else:  # no GPU: no limits are made up, and nothing was compiled
        assert report["SM limits used"] is None
    assert isinstance(report["compiled kernels"], list)  # empty in the interpreter


def _props(major, minor, threads, shared, regs=65536):
    from types import SimpleNamespace

    return SimpleNamespace(
        major=major,
        minor=minor,
        max_threads_per_multi_processor=threads,
        shared_memory_per_multiprocessor=shared,
        regs_per_multiprocessor=regs,
    )


def test_occupancy_limits_are_the_gpus_own_not_hoppers():
    # issue 27: the report kept Hopper's 32 blocks and 228 KB on every GPU.
    # An L4 (sm_89) reports 1536 threads and 100 KB per SM; the block limit,
    # which torch does not report, is the vendor's 24 for 8.9.
    l4 = gb.sm_limits(_props(8, 9, 1536, 100 * 1024))
    assert (l4["max_warps"], l4["max_blocks"], l4["shared"]) == (48, 24, 102400)
    t4 = gb.sm_limits(_props(7, 5, 1024, 64 * 1024))
    assert (t4["max_warps"], t4["max_blocks"]) == (32, 16)
    # the device's own figure wins over the table's
    odd = gb.sm_limits(_props(9, 0, 2048, 200 * 1024, regs=32768))
    assert (odd["shared"], odd["regs"]) == (200 * 1024, 32768)
    # a 32-register, 4-warp kernel: 48 warps on the L4, not Hopper's 64
    assert gb.resident_warps_per_sm(32, 4, 0, l4) == 48
    assert gb.sm_limits(_props(12, 0, 1536, 100 * 1024)) is None  # not guessed


# ---------------------------------------------------------------- benchmark ---
def test_benchmark_descriptions_are_complete():
    names = set()
    for bench in gb.BENCHMARKS:
        assert bench["name"] not in names
        names.add(bench["name"])
        assert bench["metric"] in ("bandwidth", "compute")
        assert next(iter(bench["peers"])) == "PyTorch eager"
        for size in bench["sizes"]:
            assert sorted(size) == sorted(bench["params"])
            for dtype in bench["dtypes"]:
                assert bench["work"](size, getattr(torch, dtype)) > 0


def test_fma_report_gives_the_roofline_counts_of_every_row():
    # hooks/roofline.py places a row by the FLOPs and bytes its report() gives
    import json

    bench = next(b for b in gb.BENCHMARKS if b["name"] == "gpu_fma_intensity")
    entries = json.loads(json.dumps(bench["report"]()))["roofline"]
    assert len(entries) == len(bench["sizes"]) * len(bench["dtypes"])
    for entry, size in zip(entries, bench["sizes"], strict=True):
        assert {k: entry[k] for k in bench["params"]} == size
        work = bench["work"](size, getattr(torch, entry["dtype"]))
        assert entry["flops"] == work
        assert entry["bytes"] == 2 * size["n_elements"] * 4  # read + write, float32


@pytest.mark.parametrize("index", range(3))
def test_benchmark_callables_agree_on_a_small_size(index):
    bench = gb.BENCHMARKS[index]
    size = dict(bench["sizes"][0], n_elements=300)
    inputs = bench["make_inputs"](size, torch.float32, DEVICE)
    expected = next(iter(bench["peers"].values()))(*inputs)
    assert_close(bench["triton"](*inputs), expected.double(), atol=1e-4)


# ---------------------------------------------------------------- bad input ---
@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: gb.strided_copy([1.0], 1), TypeError, "torch.Tensor"),
        (lambda: gb.strided_copy(_randn(8).double(), 1), TypeError, "unsupported"),
        (
            lambda: gb.strided_copy(torch.ones(8, dtype=torch.int32, device=DEVICE), 1),
            TypeError,
            "unsupported",
        ),
        (lambda: gb.strided_copy(_randn(8).view(2, 4), 1), ValueError, "1-D"),
        (lambda: gb.strided_copy(_randn(16)[::2], 1), ValueError, "contiguous"),
        (lambda: gb.strided_copy(_randn(8), 0), ValueError, "positive int"),
        (lambda: gb.strided_copy(_randn(8), 1.5), ValueError, "positive int"),
        (
            lambda: gb.strided_copy(_randn(8), 1, block_size=100),
            ValueError,
            "power of two",
        ),
        (lambda: gb.strided_copy(_randn(8), 2, out=_randn(8)), ValueError, "out must"),
        (
            lambda: gb.strided_copy(_randn(8), 1, out=_randn(16)[::2]),
            ValueError,
            "contiguous",
        ),
        (lambda: gb.persistent_copy(_randn(8), 0), ValueError, "num_programs"),
        (
            lambda: gb.persistent_copy(_randn(8), 2, num_warps=3),
            ValueError,
            "num_warps",
        ),
        (
            lambda: gb.persistent_copy(_randn(8), 2, out=_randn(8).half()),
            ValueError,
            "out must",
        ),
        (lambda: gb.fma_chain(_randn(8), -1), ValueError, "non-negative"),
        (lambda: gb.fma_chain(_randn(8), 2.0), ValueError, "non-negative"),
        (lambda: gb.fma_chain(_randn(8), 2, block_size=3), ValueError, "power of two"),
    ],
)
def test_bad_input_is_rejected(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_an_out_that_overlaps_x_is_refused(seeded):
    # review 2026-11-27 mod-13: a shifted out was accepted, and the copy was
    # wrong at block edges (on a GPU, a race between programs)
    big = _randn(3000)
    x, shifted = big[:-1], big[1:]
    for call in (
        lambda: gb.strided_copy(x, 1, out=shifted),
        lambda: gb.persistent_copy(x, 2, out=shifted),
        lambda: gb.fma_chain(x, 2, out=shifted),
        lambda: gb.strided_copy(big, 2, out=big[:1500]),  # out = x's start
    ):
        with pytest.raises(ValueError, match="must not overlap x"):
            call()


def test_out_may_be_x_itself_or_beside_it(seeded):
    # element i read and written by one lane: in place is safe
    x = _randn(1000)
    want = x.clone()
    assert gb.persistent_copy(x, 3, out=x) is x
    assert torch.equal(x, want)
    assert gb.strided_copy(x, 1, out=x) is x
    assert torch.equal(x, want)
    assert gb.fma_chain(x, 1, a=2.0, b=0.0, out=x) is x
    assert torch.equal(x, want * 2)
    buffer = _randn(2000)  # x and out side by side in one buffer
    gb.persistent_copy(buffer[:1000], 2, out=buffer[1000:])
    assert torch.equal(buffer[1000:], buffer[:1000])


def test_cpu_tensors_need_the_interpreter(monkeypatch):
    monkeypatch.setattr(gb, "_INTERPRETING", False)  # as if imported without it
    for call in (
        lambda: gb.strided_copy(torch.ones(4), 1),
        lambda: gb.persistent_copy(torch.ones(4), 1),
        lambda: gb.fma_chain(torch.ones(4), 1),
    ):
        with pytest.raises(ValueError, match="TRITON_INTERPRET=1"):
            call()


# ------------------------------------------------------------ lesson 01 ---
LESSON_01 = ("01-gpu-architecture.md", "01-roofline.md", "01-coalescing-occupancy.md")


def _page01() -> str:
    """Lesson 01's three pages as one line of text: phrases may wrap."""
    from conftest import REPO_ROOT

    pages = REPO_ROOT / "docs" / "gpu-architecture"
    text = " ".join((pages / name).read_text(encoding="utf-8") for name in LESSON_01)
    return " ".join(text.split())


def test_lesson_01_names_the_fp8_gemm_and_its_probe():
    # review 2026-11-27 mod-09, mod-10: the course has an FP8 GEMM, held to a
    # third probe; lesson 02's forward kernel runs Q K^T in fp8
    page = _page01()
    assert "no kernel of the course uses them for a GEMM" not in page
    assert "the course has no fp8 GEMM" not in page
    assert "an 8192³ e4m3 `torch._scaled_mm` (cuBLAS)" in page
    row = page.split("| `tl.dot` with fp8 |", 1)[1].split("| Tensor descriptors", 1)[0]
    assert "lesson 02's forward kernel" in row and "FP8 GEMM" in row


def test_lesson_01_says_what_the_launchers_refuse_and_reserve():
    # review 2026-11-27 mod-11, mod-13: CUDA's 1 KB per program, and an out
    # that overlaps x
    page = _page01()
    assert "the 1 KB per program that CUDA keeps for itself" in page
    assert "refuses an `out` that overlaps `x`" in page
    assert "lesson 04's [`time_cuda`](04-gpu-profiling.md#2-timing-properly)" in page


def test_lesson_01_buttons_open_a_notebook_holding_the_pages_code():
    # review 2026-11-27, 01-coalescing-occupancy finding 3: the button opened a
    # notebook without the page's `occupancy` section
    import json

    pytest.importorskip("bs4")  # test_chapter_03's parser; the GPU image lacks it
    from conftest import REPO_ROOT
    from test_chapter_03 import _BUTTON, _holds, shown_sections

    from triton_course.notebooks import snippet_section

    for page in LESSON_01:
        text = (REPO_ROOT / "docs" / "gpu-architecture" / page).read_text()
        for button in _BUTTON.findall(text):
            notebook = (REPO_ROOT / "docs" / "gpu-architecture" / button).resolve()
            cells = [
                "".join(c["source"])
                for c in json.loads(notebook.read_text())["cells"]
                if c["cell_type"] == "code"
            ]
            shown = shown_sections(text)
            assert shown, f"{page} shows no code: is the parser broken?"
            lacking = [
                f"{name}:{section}"
                for name, section in shown
                if not _holds(cells, snippet_section(name, section))
            ]
            assert not lacking, f"{page}: {notebook.name} lacks {lacking}"
    recipe = (REPO_ROOT / "notebooks" / "gpu_architecture.md").read_text()
    assert "Three of the lesson's kernels" in recipe
    assert "resident_warps_per_sm(regs, warps, shared, hopper)" in recipe


def test_lesson_01_roofline_says_what_the_gpu_runs_and_where_time_turns():
    # review 2026-11-27, 01-roofline findings 1-3: ptxas unrolls the PTX loop
    # again; a ridge per kind of unit; the time stays put up to iters = 64,
    # said through checked claims
    page = _page01()
    assert "costs a compare and a branch per trip" not in page
    assert "The PTX loop is not what the GPU runs: `ptxas`" in page
    assert "34 trips per compare and branch" in page
    assert "\\(P\\) is the peak of the units the kernel's arithmetic runs on" in page
    assert "left of the matmul ridge but right of theirs" in page
    assert "stays put up to `iters = 16`" not in page
    assert "stays put up to `iters = 64`" in page
    assert "so the time more than doubles" in page
    for claim in (
        'value=row:iters=1 is=">48" dtype=float32 n_elements=largest iters=64]]',
        'value=row:iters=64 is="<2" dtype=float32 n_elements=largest iters=256]]',
    ):
        assert claim in page, claim


def test_lesson_01_says_which_limits_come_from_nvidias_table():
    # review 2026-11-27, 01-coalescing-occupancy finding 5: the reserve per
    # block comes from the vendor's table too, not from the device properties
    page = _page01()
    assert (
        "the blocks per SM and the shared memory CUDA reserves per block, which "
        "it does not give, from NVIDIA's table in `sm_limits`" in page
    )
    props = type("P", (), {"major": 9, "minor": 0})()
    for name in (
        "multi_processor_count",
        "max_threads_per_multi_processor",
        "shared_memory_per_multiprocessor",
        "regs_per_multiprocessor",
    ):
        setattr(props, name, 1)
    limits = gb.sm_limits(props)
    assert limits["reserved_shared"] == gb.VENDOR_SM_LIMITS[(9, 0)]["reserved_shared"]


def test_lesson_01_transpose_note_says_what_the_checker_refuses():
    # review 2026-11-27, 01-coalescing-occupancy findings 1-2
    page = _page01()
    assert "taken as a whole or 32 lanes (a warp) at a time" in page
    assert "a kernel that writes the result from anything but `x` itself" in page
