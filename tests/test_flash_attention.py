"""snippets/flash_attention.py: forward, backward, formats, against float64 and SDPA."""

import json
import math

import pytest
import torch
from conftest import DEVICE, HAS_GPU, TOLERANCES, assert_close, load_snippet, poison_

fa = load_snippet("flash_attention")

# triton 3.9's interpreter returns garbage from tl.dot on bfloat16 tiles (checked:
# even a plain 16x16 product), so the bfloat16 cases need a real GPU; the GPU
# runner runs them (conftest deselects `gpu` tests on CPU and says so).
DTYPES = [torch.float16, pytest.param(torch.bfloat16, marks=pytest.mark.gpu)]
SMALL = {"BLOCK_M": 16, "BLOCK_N": 16}  # many tiles even for short sequences
SMALL_BWD = {"BLOCK_HELD": 32, "BLOCK_STEP": 16}
# Gradients sum over the sequence, so they carry a little more rounding than
# the output: the bound is four times the dtype's own tolerance.
GRAD_TOL = {
    dtype: {k: 4 * v for k, v in tol.items()} for dtype, tol in TOLERANCES.items()
}


def qkv(batch, heads, n, d, dtype, scale=1.0):
    shape = (batch, heads, n, d)
    return tuple(
        (torch.randn(shape, device=DEVICE) * scale).to(dtype) for _ in range(3)
    )


def _check_forward(q, k, v, causal, config=SMALL):
    out = poison_(torch.empty_like(q))
    lse = poison_(torch.empty(q.shape[:-1], device=q.device))
    result, result_lse = fa.attention_forward(
        q, k, v, causal, out=out, lse=lse, config=config
    )
    assert result is out and result_lse is lse
    assert not torch.isnan(out).any(), "an output element was never written"
    assert_close(out, fa.attention_ref(q, k, v, causal))
    # The log-sum-exp of each row of scaled (and masked) scores, in float64.
    scores = (q.double() @ k.double().transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if causal:
        n = q.shape[-2]
        future = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
    torch.testing.assert_close(
        lse.double(), torch.logsumexp(scores, -1), atol=1e-3, rtol=1e-3
    )
    return out


def _check_gradients(q, k, v, causal, config=SMALL, bwd_config=SMALL_BWD, dout=None):
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
    out = fa.flash_attention(*leaves, causal, config=config, bwd_config=bwd_config)
    dout = torch.randn_like(out) if dout is None else dout
    grads = torch.autograd.grad(out, leaves, dout)
    ref_leaves = [t.detach().double().requires_grad_(True) for t in (q, k, v)]
    expected = fa.attention_ref(*ref_leaves, causal)
    expected_grads = torch.autograd.grad(expected, ref_leaves, dout.double())
    assert_close(out.detach(), expected.detach())
    for name, got, want in zip("qkv", grads, expected_grads, strict=True):
        assert got.dtype == q.dtype and got.shape == q.shape, name
        assert not torch.isnan(got).any(), f"d{name} has unwritten elements"
        assert_close(got, want, **GRAD_TOL[q.dtype])


# ----------------------------------------------------------------- forward ---
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("n", [1, 7, 16, 33, 100])
def test_forward_matches_float64_reference(n, causal, dtype, seeded):
    _check_forward(*qkv(1, 2, n, 64, dtype), causal)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_forward_head_dim_128_and_batch(causal, dtype, seeded):
    _check_forward(*qkv(2, 3, 45, 128, dtype), causal)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize(
    "config",
    [{"BLOCK_M": 32, "BLOCK_N": 16}, {"BLOCK_M": 64, "BLOCK_N": 64}, None],
    ids=["tall", "square", "default"],
)
def test_forward_tile_shapes_agree(config, causal, seeded):
    # Query and key blocks of different sizes move the diagonal and tail tiles.
    _check_forward(*qkv(1, 1, 70, 32, torch.float16), causal, config=config)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_forward_agrees_with_sdpa(causal, dtype, seeded):
    q, k, v = qkv(1, 2, 50, 64, dtype)
    out, _ = fa.attention_forward(q, k, v, causal, config=SMALL)
    sdpa = fa.attention_sdpa(q.float(), k.float(), v.float(), causal).to(dtype)
    # Both are within the dtype's rounding of the exact result, so within twice
    # that of each other.
    tol = {key: 2 * val for key, val in TOLERANCES[dtype].items()}
    torch.testing.assert_close(out.float(), sdpa.float(), **tol)


def test_large_scores_do_not_overflow(seeded):
    # Scores of a few hundred would overflow exp() without the running maximum.
    q, k, v = qkv(1, 1, 40, 64, torch.float16, scale=6.0)
    _check_forward(q, k, v, causal=False)


def test_causal_first_row_is_the_first_value(seeded):
    q, k, v = qkv(1, 1, 20, 16, torch.float16)
    out, lse = fa.attention_forward(q, k, v, causal=True, config=SMALL)
    assert torch.equal(out[0, 0, 0], v[0, 0, 0])  # row 0 sees only key 0
    score = (q[0, 0, 0].double() @ k[0, 0, 0].double()) / 4.0
    assert lse[0, 0, 0].item() == pytest.approx(score.item(), abs=1e-3)


def test_forward_does_not_write_past_the_end(seeded):
    q, k, v = qkv(1, 1, 21, 16, torch.float16)
    buffer = poison_(torch.empty(21 * 16 + 64, dtype=torch.float16, device=DEVICE))
    out = buffer[: 21 * 16].view(1, 1, 21, 16)
    lse_buffer = poison_(torch.empty(21 + 16, device=DEVICE))
    fa.attention_forward(
        q, k, v, out=out, lse=lse_buffer[:21].view(1, 1, 21), config=SMALL
    )
    assert torch.isnan(buffer[21 * 16 :]).all()
    assert torch.isnan(lse_buffer[21:]).all()
    assert_close(out, fa.attention_ref(q, k, v))


def test_empty_sequence_is_a_no_op():
    q, k, v = qkv(1, 2, 0, 64, torch.float16)
    out, lse = fa.attention_forward(q, k, v)
    assert out.shape == (1, 2, 0, 64) and lse.shape == (1, 2, 0)
    dq, dk, dv = fa.attention_backward(q, k, v, out, lse, out)
    assert dq.shape == dk.shape == dv.shape == (1, 2, 0, 64)


def test_scale_is_one_over_sqrt_d():
    # All-equal keys: every key gets the same weight, whatever the scale.
    q = torch.randn(1, 1, 5, 16, device=DEVICE).half()
    k = torch.ones(1, 1, 5, 16, device=DEVICE).half()
    v = torch.arange(5.0, device=DEVICE).repeat(16, 1).t().contiguous()[None, None]
    out, _ = fa.attention_forward(q, k, v.half(), config=SMALL)
    assert torch.allclose(out.float(), torch.full_like(out.float(), 2.0))
    # One query against two keys whose scaled scores are 0 and 1.
    q = torch.zeros(1, 1, 2, 16, device=DEVICE).half()
    q[..., 0] = 1.0
    k = torch.zeros_like(q)
    k[0, 0, 1, 0] = 4.0
    v = torch.zeros_like(q)
    v[0, 0, 1, :] = 1.0
    out, _ = fa.attention_forward(q, k, v, config=SMALL)
    expected = math.exp(1.0) / (1 + math.exp(1.0))
    assert out[0, 0, 0, 0].item() == pytest.approx(expected, abs=1e-3)


# ---------------------------------------------------------------- backward ---
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("n", [1, 17, 64, 100])
def test_gradients_match_float64_autograd(n, causal, dtype, seeded):
    _check_gradients(*qkv(1, 2, n, 64, dtype), causal)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_gradients_head_dim_128(causal, dtype, seeded):
    _check_gradients(*qkv(2, 1, 50, 128, dtype), causal)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize(
    "bwd_config",
    [{"BLOCK_HELD": 16, "BLOCK_STEP": 16}, {"BLOCK_HELD": 64, "BLOCK_STEP": 16}, None],
    ids=["square", "tall", "default"],
)
def test_backward_tile_shapes_agree(bwd_config, causal, seeded):
    _check_gradients(*qkv(1, 1, 70, 32, torch.float16), causal, bwd_config=bwd_config)


def test_broadcast_upstream_gradient(seeded):
    # out.sum().backward() hands the backward pass an expanded, stride-0 dO.
    q, k, v = (t.requires_grad_(True) for t in qkv(1, 1, 24, 16, torch.float16))
    fa.flash_attention(
        q, k, v, True, config=SMALL, bwd_config=SMALL_BWD
    ).sum().backward()
    refs = [t.detach().double().requires_grad_(True) for t in (q, k, v)]
    fa.attention_ref(*refs, True).sum().backward()
    for leaf, ref in zip((q, k, v), refs, strict=True):
        assert_close(leaf.grad, ref.grad, **GRAD_TOL[torch.float16])


def test_backward_agrees_with_sdpa(seeded):
    q, k, v = qkv(1, 2, 40, 64, torch.float16)
    dout = torch.randn_like(q)
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
    ours = torch.autograd.grad(
        fa.flash_attention(*leaves, True, config=SMALL, bwd_config=SMALL_BWD),
        leaves,
        dout,
    )
    floats = [t.float().requires_grad_(True) for t in (q, k, v)]
    theirs = torch.autograd.grad(fa.attention_sdpa(*floats, True), floats, dout.float())
    for a, b in zip(ours, theirs, strict=True):
        torch.testing.assert_close(a.float(), b, atol=1.6e-2, rtol=1.6e-2)


# Review 2026-11-27 mod-06: the backward kernels added an int32 product
# (offs * HEAD_DIM) to the int64 head offset, which wraps once one head holds
# 2**31 elements (n_ctx >= 2**24 at d = 128). Compiled for sm_80 (no GPU):
# no product over a tile may be i32 (scalars such as pid * BLOCK stay below
# n_ctx + BLOCK).
_BWD_SCRIPT = r"""
import json, re, sys
from pathlib import Path
from triton_course import codegen, excerpts

fa = excerpts._load(Path("snippets") / "flash_attention.py")
half = lambda *names: dict.fromkeys(names, "*fp16")
stats = {"lse_ptr": "*fp32", "delta_ptr": "*fp32"}
tiles = {"HEAD_DIM": 64, "CAUSAL": True, "BLOCK_M": 32, "BLOCK_N": 64}
rest = {"n_ctx": "i32", "qk_scale": "fp32", "sm_scale": "fp32"}
rest |= dict.fromkeys(tiles, "constexpr")
qkvdo = half("q_ptr", "k_ptr", "v_ptr", "do_ptr")
kernels = {
    "_attention_bwd_dkdv_kernel": (qkvdo | stats | half("dk_ptr", "dv_ptr") | rest,
                                   tiles),
    "_attention_bwd_dq_kernel": (qkvdo | stats | half("dq_ptr") | rest,
                                 dict(tiles, BLOCK_M=64, BLOCK_N=32)),
    "_attention_bwd_delta_kernel": (
        half("out_ptr", "dout_ptr") | {"delta_ptr": "*fp32", "n_rows": "i32",
                                       "HEAD_DIM": "constexpr", "BLOCK_M": "constexpr"},
        {"HEAD_DIM": 64, "BLOCK_M": 32}),
}
out = {}
for name, (sig, const) in kernels.items():
    pointers = [k for k in sig if k.endswith("_ptr")]
    ttir = codegen.compile_for(getattr(fa, name), 80, sig, const, pointers)["ttir"]
    lines = [ln.split(" loc(")[0].strip() for ln in ttir.splitlines()]
    out[name] = [ln for ln in lines if "arith.muli" in ln and "tensor<" in ln]
json.dump(out, sys.stdout)
"""


def test_backward_kernels_offset_a_head_in_int64():
    from conftest import compile_in_subprocess

    products = compile_in_subprocess(_BWD_SCRIPT, timeout=600)
    assert set(products) == {
        "_attention_bwd_dkdv_kernel",
        "_attention_bwd_dq_kernel",
        "_attention_bwd_delta_kernel",
    }
    for name, found in products.items():
        assert found, name  # the offsets are products over a tile
        narrow = [ln for ln in found if not ln.endswith("xi64>")]
        assert not narrow, (name, narrow)


LESSON_02 = [  # the lesson's three pages, in the nav's order
    "02-flash-attention-mixed-precision.md",
    "02-flash-attention-backward.md",
    "02-mixed-precision.md",
]


def test_the_pages_blocks_copied_in_order_define_before_use(tmp_path):
    # review 2026-11-27 mod-01: the collapsed benchmark block came before the
    # memory block that defines _forward_only; copied in order, it stopped.
    # The lesson is three pages now: read in order, their blocks (collapsed
    # ones and excerpts of the file included: a reader copies them too) are
    # the whole file, each section once, imports first.
    import importlib.util
    import re

    from conftest import REPO_ROOT

    docs = REPO_ROOT / "docs" / "gpu-architecture"
    source = (REPO_ROOT / "snippets" / "flash_attention.py").read_text()
    parts, names = [], []
    for page in LESSON_02:
        blocks = re.findall(
            r"^ *```python[^\n]*\n(.*?)^ *```",
            (docs / page).read_text(),
            flags=re.M | re.S,
        )
        for block in blocks:
            for name in re.findall(r'--8<-- "flash_attention\.py:(\w+)"', block):
                start, end = f"# --8<-- [start:{name}]\n", f"# --8<-- [end:{name}]"
                parts.append(source.split(start, 1)[1].split(end, 1)[0])
                names.append(name)
    sections = re.findall(r"# --8<-- \[start:(\w+)\]", source)
    assert set(names) == set(sections), set(sections) ^ set(names)
    assert names[0] == "imports"
    others = [n for n in names if n != "imports"]  # each page shows the imports
    assert len(others) == len(set(others)), others
    path = tmp_path / "page_02_program.py"
    path.write_text("\n".join(parts))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # module level only: main() is not called
    assert module.BENCHMARKS[0]["triton"] is module._forward_only
    assert callable(module.main)


# Issue 34 item 6: each page of the lesson links the glossary at the first use
# of the terms it leans on, once, at an anchor the glossary has.
LESSON_02_TERMS = {
    "02-flash-attention-mixed-precision.md": [
        "hbm", "ridge-point", "roofline", "program", "arithmetic-intensity",
        "grid", "sm", "l2", "tensor-core", "constexpr", "mask",
        "tensor-descriptor", "stride", "tma", "shared-memory", "num-warps",
        "interpreter",
    ],
    "02-flash-attention-backward.md": [
        "program", "grid", "stride", "interpreter", "tensor-core", "mma",
        "warp", "tma",
    ],
    # review 2026-11-27 (02-mixed-precision no. 8): mask, descriptor, program
    # and interpreter were used there without a link
    "02-mixed-precision.md": [
        "tensor-core", "ptx", "shared-memory", "tma", "stride", "mask",
        "tensor-descriptor", "program", "interpreter",
    ],
}  # fmt: skip


def test_lesson_02_links_each_term_to_the_glossary_once():
    import re

    from conftest import REPO_ROOT

    assert list(LESSON_02_TERMS) == LESSON_02
    glossary = (REPO_ROOT / "docs" / "reference" / "glossary.md").read_text()
    anchors = set(re.findall(r"\{ #([\w-]+) \}", glossary))
    for page, terms in LESSON_02_TERMS.items():
        text = (REPO_ROOT / "docs" / "gpu-architecture" / page).read_text()
        linked = re.findall(r"\]\(\.\./reference/glossary\.md#([\w-]+)\)", text)
        assert set(linked) <= anchors, (page, set(linked) - anchors)
        missing = [t for t in terms if t not in linked]
        assert not missing, f"{page} does not link {missing} to the glossary"
        twice = sorted({t for t in linked if linked.count(t) > 1})
        assert not twice, f"{page} links {twice} more than once: at first use only"


def test_delta_is_rowsum_of_dout_times_out(seeded):
    out, dout = (torch.randn(3, 70, 32, device=DEVICE).half() for _ in range(2))
    delta = poison_(torch.empty(3 * 70 + 8, device=DEVICE))
    fa._attention_bwd_delta_kernel[(4,)](
        out, dout, delta, 3 * 70, HEAD_DIM=32, BLOCK_M=64
    )
    expected = (out.double() * dout.double()).sum(-1).flatten()
    torch.testing.assert_close(delta[:210].double(), expected, atol=1e-3, rtol=1e-3)
    assert torch.isnan(delta[210:]).all()


# ------------------------------------------------- formats and mixed precision ---
def test_fp32_is_exact_and_fp8_returns_fp16(seeded):
    q, k, v = qkv(1, 2, 33, 64, torch.float32)
    out, _ = fa.attention_forward(q, k, v, True, config=SMALL)
    assert_close(out, fa.attention_ref(q, k, v, True), atol=1e-5, rtol=1e-4)
    for dtype in fa.FP8_DTYPES:
        rounded = [t.to(dtype) for t in (q, k, v)]
        out, _ = fa.attention_forward(*rounded, True, config=SMALL)
        assert out.dtype == torch.float16
        # Against float64 attention of the same fp8 values: only the fp16
        # rounding of P and of the output remains.
        assert_close(out, fa.attention_ref(*rounded, True), atol=4e-3, rtol=4e-3)


def test_format_table_matches_finfo():
    rows = {row["format"]: row for row in fa.format_table()}
    assert list(rows) == ["fp32", "tf32", "fp16", "bf16", "fp8 e4m3", "fp8 e5m2"]
    for name, (dtype, _) in fa.ACCURACY_FORMATS.items():
        if name == "tf32":
            continue
        assert rows[name]["eps"] == torch.finfo(dtype).eps, name
        assert rows[name]["max"] == torch.finfo(dtype).max, name
    assert rows["fp16"]["max"] == 65504 and rows["fp8 e4m3"]["max"] == 448
    assert rows["tf32"]["eps"] == rows["fp16"]["eps"]  # 10 mantissa bits each
    assert rows["tf32"]["max"] == rows["fp32"]["max"]  # fp32's 8-bit exponent


def test_accuracy_table_orders_the_formats():
    rows = fa.accuracy_table(DEVICE, shape=(1, 2, 64, 32), config=SMALL)
    errors = {row["format"]: row["max abs error"] for row in rows}
    assert list(errors) == list(fa.ACCURACY_FORMATS)
    # Fewer mantissa bits, larger error: 23 > 10 > 7 > 3 > 2. (The CPU run
    # leaves bf16 out: the interpreter's bf16 tl.dot is wrong, see DTYPES.)
    order = ["fp32", "fp16", "bf16", "fp8 e4m3", "fp8 e5m2"]
    if not HAS_GPU:
        order.remove("bf16")
        rows = [row for row in rows if row["format"] != "bf16"]
    assert [errors[f] for f in order] == sorted(errors[f] for f in order)
    assert errors["fp32"] < 1e-5 < errors["fp16"]
    for row in rows:  # the kernel adds little to what rounding the inputs costs
        assert row["max abs error"] <= 2 * row["max error, inputs only"] + 2e-3
    json.dumps(rows)  # the runner stores it as JSON


@pytest.mark.parametrize(
    "grad, scale, survives",
    [
        (1e-8, 1.0, False),  # below fp16's smallest subnormal: flushed to zero
        (1e-8, 2.0**16, True),  # scaled into range, unscaled in fp32
        (1e-3, 1.0, True),
        (1.0, 2.0**17, False),  # 131072 overflows fp16 (max 65504)
        # review 2026-11-27 (02-mixed-precision no. 3): the page's own 2**16
        # (GradScaler's first scale) already overflows a gradient of 1:
        # 65536 is past 65520, where fp16 rounds to inf
        (1.0, 2.0**16, False),
    ],
)
def test_loss_scaling(grad, scale, survives):
    assert fa.fp16_gradient_survives(grad, scale) is survives


def test_the_loss_scaling_paragraph_says_2_16_overflows_a_gradient_of_1():
    text = _page_text("02-mixed-precision.md")
    assert "a gradient of 1 scaled by \\(2^{17}\\) overflows" not in text
    assert "a gradient of 1 scaled by the same \\(2^{16}\\) already overflows" in text
    assert fa.fp16_gradient_survives(1.0, 2.0**16) is False


def _page_text(page: str) -> str:
    """A lesson 02 page with its line breaks and indents folded to spaces."""
    import re

    from conftest import REPO_ROOT

    text = (REPO_ROOT / "docs" / "gpu-architecture" / page).read_text()
    return re.sub(r"\s+", " ", text)


def _sections() -> dict[str, str]:
    import re

    from conftest import REPO_ROOT

    source = (REPO_ROOT / "snippets" / "flash_attention.py").read_text()
    return {
        name: source.split(f"# --8<-- [start:{name}]\n", 1)[1].split(
            f"# --8<-- [end:{name}]", 1
        )[0]
        for name in re.findall(r"# --8<-- \[start:(\w+)\]", source)
    }


def _shown(page: str) -> list[str]:
    import re

    return re.findall(r'--8<-- "flash_attention\.py:(\w+)"', _page_text(page))


def test_the_backward_page_counts_its_three_kernels():
    # review 2026-11-27 (02-flash-attention-backward no. 1): D's kernel, then
    # dK/dV, then dQ: three launches, none atomic
    import inspect
    import re

    launches = re.findall(r"(_attention_bwd_\w+_kernel)\[", inspect.getsource(
        fa.attention_backward
    ))  # fmt: skip
    assert launches == [
        "_attention_bwd_delta_kernel",
        "_attention_bwd_dkdv_kernel",
        "_attention_bwd_dq_kernel",
    ]
    text = _page_text("02-flash-attention-backward.md")
    assert "two kernels without atomics" not in text
    assert "three kernels without atomics" in text
    assert "atomic" not in _sections()["backward_kernels"]


def test_the_dkdv_sentence_names_the_masked_tail():
    # review 2026-11-27 (02-flash-attention-backward no. 2): after the
    # diagonal the later query blocks go without a mask only up to the last
    # whole block; a last block past n_ctx keeps its row mask
    code = _sections()["backward_kernels"]
    assert "full_end = (n_ctx // BLOCK_M) * BLOCK_M" in code
    assert "tl.maximum(first_full, full_end), n_ctx," in code
    text = _page_text("02-flash-attention-backward.md")
    assert "then every later block, unmasked" not in text
    assert (
        "then every later query block without a mask, except a last block that "
        "runs past \\(N\\), which keeps its row mask"
    ) in text


def test_each_page_names_what_its_blocks_borrow_from_other_blocks():
    # review 2026-11-27 (02-flash-attention-backward no. 3, 02-mixed-precision
    # no. 5): a name a page's blocks use that a block of another page defines
    # is named on the page (in backticks), so a reader knows where it is
    import ast

    sections = _sections()
    owner = {}
    for name, code in sections.items():
        for node in ast.parse(code).body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                owner[node.name] = name
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    for x in ast.walk(target):
                        if isinstance(x, ast.Name):
                            owner[x.id] = name
    for page in LESSON_02:
        shown, text = _shown(page), _page_text(page)
        used = {
            x.id
            for name in shown
            for x in ast.walk(ast.parse(sections[name]))
            if isinstance(x, ast.Name)
        }
        borrowed = sorted(u for u in used if u in owner and owner[u] not in shown)
        unnamed = [u for u in borrowed if f"`{u}`" not in text]
        assert not unnamed, f"{page} uses {unnamed} from other pages' blocks"


def test_the_notebook_holds_every_block_of_the_lessons_pages():
    # review 2026-11-27 (02-flash-attention-backward no. 4, 02-mixed-precision
    # no. 4): the notebook button opens flash_attention.ipynb, whose recipe
    # now embeds every block the three pages show, so no page says a block
    # is not in it (every page's button: tests/test_notebooks.py)
    import re

    from conftest import REPO_ROOT

    recipe = (REPO_ROOT / "notebooks" / "flash_attention.md").read_text()
    in_notebook = set(re.findall(r'--8<-- "flash_attention\.py:(\w+)"', recipe))
    for page in LESSON_02:
        text = _page_text(page)
        assert "[[notebook ../notebooks/flash_attention.ipynb]]" in text, page
        assert not set(_shown(page)) - in_notebook, page
        assert "not in the notebook" not in text, page


def test_the_formats_paragraph_bounds_rounding_and_truncation():
    # review 2026-11-27 (02-mixed-precision no. 6): eps / 2 bounds rounding to
    # nearest in the normal range; tf32's truncation errs by up to eps
    text = _page_text("02-mixed-precision.md")
    assert "rounding error of one conversion is at most `eps / 2`" not in text
    assert "rounded to nearest is off by at most `eps / 2`" in text
    assert "truncation, as tf32's below, by up to `eps`" in text
    one = torch.tensor(1 + 2.0**-10 - 2.0**-23, dtype=torch.float32)
    cut = (one.view(torch.int32) & ~((1 << 13) - 1)).view(torch.float32)
    assert cut.item() == 1.0  # off by almost 2**-10, tf32's eps: more than eps/2


def test_exercise_1_compares_with_the_naive_peers_rate():
    # review 2026-11-27 (02-mixed-precision no. 7): part 2's table gives the
    # eager peer's rate (TFLOP/s), not its time
    text = _page_text("02-mixed-precision.md")
    assert "naive peer's time" not in text
    assert "which gives its rate: its time is the \\(4 b h N^2 d\\) FLOPs" in text
    assert "PyTorch eager" in fa.BENCHMARKS[0]["peers"]


def _truncated_tf32(x: torch.Tensor) -> torch.Tensor:
    """x (float64) as a tf32 tensor core reads it: float32 with its low 13
    mantissa bits cleared (truncation toward zero)."""
    bits = x.float().contiguous().view(torch.int32) & ~((1 << 13) - 1)
    return bits.view(torch.float32).double()


def test_tf32_error_comes_from_truncated_scores():
    # review 2026-11-27 (02-mixed-precision no. 2): in float64, truncating Q
    # and K (every score shrinks toward zero) gives most of the tf32 error of
    # the accuracy study's inputs; truncating V or the weights P gives little
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn((1, 4, 1024, 64), generator=gen).double() for _ in "qkv")

    def attention(tq, tp, tv):
        s = tq(q) @ tq(k).transpose(-1, -2) / 8.0
        p = torch.exp(s - s.amax(-1, keepdim=True))
        return (tp(p) @ tv(v)) / p.sum(-1, keepdim=True)

    same, cut = (lambda x: x), _truncated_tf32
    exact = attention(same, same, same)

    def error(*how):
        return (attention(*how) - exact).abs().max().item()

    everything, scores = error(cut, cut, cut), error(cut, same, same)
    assert scores > 0.8 * everything
    assert scores > 4 * max(error(same, same, cut), error(same, cut, same))
    s = q @ k.transpose(-1, -2)
    slope = (cut(q) @ cut(k).transpose(-1, -2) * s).sum() / (s * s).sum()
    assert 0 < 1 - slope < 2.0**-10  # "smaller in size, by a fraction of 2^-10"
    text = _page_text("02-mixed-precision.md")
    assert "across a sum over 1024 keys they add up" not in text
    assert "finds most of the tf32 error there, in the scores" in text


def _accuracy_runs() -> dict:
    """Each run's accuracy table: data/timings, data/reproducibility and
    COURSE_TIMINGS_DIR (a newer run), where they hold one."""
    import os
    from pathlib import Path

    from conftest import REPO_ROOT

    dirs = [REPO_ROOT / "data" / "timings", REPO_ROOT / "data" / "reproducibility"]
    if os.environ.get("COURSE_TIMINGS_DIR"):
        dirs.append(Path(os.environ["COURSE_TIMINGS_DIR"]))
    runs = {}
    for folder in dirs:
        for path in sorted(folder.glob("*.json")):
            bench = json.loads(path.read_text())["benchmarks"].get(
                "flash_attention_fwd", {}
            )
            table = bench.get("notes", {}).get("report", {}).get("accuracy")
            if table:
                runs[str(path)] = {row["format"]: row for row in table}
    return runs


def test_the_accuracy_bullets_hold_in_every_run():
    # review 2026-11-27 (02-mixed-precision no. 10): the bullets under the
    # accuracy table compare its measured numbers in words; each run's table
    # is checked against them
    runs = _accuracy_runs()
    assert runs, "no run holds the accuracy table"
    for where, t in runs.items():
        err = {name: row["max abs error"] for name, row in t.items()}
        alone = {name: row["max error, inputs only"] for name, row in t.items()}
        # fp32 "agrees with float64 to fp32's own rounding"
        assert err["fp32"] < 1e-5, where
        # fp16, bf16: "about the error of rounding the inputs alone"
        for name in ("fp16", "bf16"):
            assert 0.5 * alone[name] < err[name] < 1.5 * alone[name], where
        # bf16 "several times fp16's, of the order 2^3 = 8"
        assert 4 < err["bf16"] / err["fp16"] < 16, where
        # tf32 "less accurate than fp16", its "inputs only" zero
        assert err["tf32"] > err["fp16"] and alone["tf32"] == 0, where
        # fp8 "an order of magnitude worse than bf16", "almost all of it is
        # the rounding of the inputs", e5m2 "about twice as inaccurate as e4m3"
        assert err["fp8 e4m3"] > 5 * err["bf16"], where
        for name in ("fp8 e4m3", "fp8 e5m2"):
            assert 0.8 * alone[name] < err[name] < 1.2 * alone[name], where
        assert 1.5 < err["fp8 e5m2"] / err["fp8 e4m3"] < 3, where
    text = _page_text("02-mixed-precision.md")
    assert "bf16's errors are several times fp16's" in text
    assert "an order of magnitude worse than bf16" in text
    assert "about twice as inaccurate as e4m3" in text


# -------------------------------------------------------------- benchmarks ---
def test_flop_counts():
    size = {"batch": 2, "heads": 3, "n_ctx": 128, "head_dim": 64, "causal": 0}
    assert fa._bench_flops(size, torch.float16) == 4 * 2 * 3 * 128**2 * 64
    causal = dict(size, causal=1)
    assert fa._bench_flops(causal, torch.float16) == 2 * 2 * 3 * 128**2 * 64
    assert fa._bench_bwd_flops(size, torch.float16) == 10 * 2 * 3 * 128**2 * 64


def test_benchmark_descriptions():
    fwd, bwd = fa.BENCHMARKS
    assert (fwd["name"], bwd["name"]) == ("flash_attention_fwd", "flash_attention_bwd")
    for bench in (fwd, bwd):
        assert list(bench["peers"]) == ["PyTorch eager", "SDPA", "SDPA (FLASH backend)"]
        # 16384 left out on purpose: the GPU run must stay short (lesson 02
        # explains that size with arithmetic, not a measurement)
        assert {s["n_ctx"] for s in bench["sizes"]} == {1024, 2048, 4096, 8192}
        for size in bench["sizes"]:
            assert sorted(size) == sorted(bench["params"])
            assert size["batch"] == 4 and size["heads"] * size["head_dim"] == 2048
    q, k, v, causal = fwd["make_inputs"](
        {"batch": 1, "heads": 1, "n_ctx": 24, "head_dim": 16, "causal": 1},
        torch.float16,
        DEVICE,
    )
    assert causal is True and q.shape == (1, 1, 24, 16)


def test_backward_benchmark_times_only_the_backward_pass(seeded):
    size = {"batch": 1, "heads": 1, "n_ctx": 20, "head_dim": 16, "causal": 1}
    (state,) = fa._bench_bwd_inputs(size, torch.float16, DEVICE)
    calls = []

    def counted_eager(q, k, v, causal):
        calls.append("eager")
        return fa.attention_eager(q, k, v, causal)

    run = fa._backward_of(counted_eager)
    first, second = run(state), run(state)
    assert calls == ["eager"], "the forward pass must run once, not per timing"
    for a, b in zip(first, second, strict=True):
        assert torch.equal(a, b)
    # Switching implementation replaces the kept graph.
    ours = fa._backward_of(
        lambda q, k, v, c: fa.flash_attention(q, k, v, c, SMALL, SMALL_BWD)
    )(state)
    assert state["graph_of"] is not counted_eager
    for a, b in zip(ours, first, strict=True):
        assert_close(a, b.double(), **GRAD_TOL[torch.float16])


def test_report_places_every_row_on_the_roofline(monkeypatch):
    # The GPU parts of the report are tested on the GPU below; here only the
    # roofline entries, which lesson 01's plot reads.
    monkeypatch.setattr(fa, "_sdpa_kernels", lambda: [])
    monkeypatch.setattr(fa, "memory_table", lambda: [])
    monkeypatch.setattr(fa, "accuracy_table", lambda device: [])
    report = json.loads(json.dumps(fa.BENCHMARKS[0]["report"]()))
    assert report["formats"] == json.loads(json.dumps(fa.format_table()))
    entries = report["roofline"]
    bench = fa.BENCHMARKS[0]
    assert len(entries) == len(bench["sizes"])
    for entry in entries:
        size = {k: entry[k] for k in bench["params"]}
        assert size in bench["sizes"]
        assert entry["flops"] == bench["work"](size, torch.float16)
        b, h, n, d = size["batch"], size["heads"], size["n_ctx"], size["head_dim"]
        assert entry["bytes"] == 4 * b * h * n * d * 2  # Q, K, V, O in 16 bits


@pytest.mark.gpu
def test_memory_table_shows_the_n_squared_scores():
    rows = fa.memory_table(n_ctxs=(1024, 2048))
    for row in rows:
        flash = row["flash (Triton) (MiB)"]
        assert row["naive (MiB)"] >= row["one fp16 score matrix (MiB)"] > 10 * flash
    # Naive memory grows 4x when the sequence doubles; flash memory 2x.
    assert rows[1]["naive (MiB)"] > 3.5 * rows[0]["naive (MiB)"]
    assert rows[1]["flash (Triton) (MiB)"] < 2.5 * rows[0]["flash (Triton) (MiB)"]


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_the_flash_backend_peer_computes_attention(causal, seeded):
    # on the CPU too: PyTorch has a CPU flash kernel, so the peer runs here
    q, k, v = qkv(1, 2, 40, 16, torch.float16)
    out = fa.attention_sdpa_flash(q, k, v, causal)
    ref = fa.attention_ref(q, k, v, causal)
    assert_close(out.double(), ref, **TOLERANCES[torch.float16])


@pytest.mark.gpu
def test_the_flash_backend_peer_runs_flash_kernels_not_cudnn():
    # the column's name says which kernels ran: read them from the profiler
    # (SDPA's own choice is in the report test_sdpa_kernels_are_named makes)
    from torch.profiler import ProfilerActivity, profile

    q, k, v = qkv(1, 16, 4096, 128, torch.float16)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fa.attention_sdpa_flash(q, k, v, True)
        torch.cuda.synchronize()
    names = " ".join(e.key.lower() for e in prof.key_averages())
    assert "flash" in names and "cudnn" not in names, names[:500]


@pytest.mark.gpu
def test_sdpa_kernels_are_named():
    rows = fa._sdpa_kernels()
    assert len(rows) == 4 and all(row["SDPA kernels"] for row in rows)


@pytest.mark.gpu
@pytest.mark.compile_heavy
def test_default_configs_on_the_gpu(seeded):
    # The tiles the benchmark uses, on a length that is not a tile multiple.
    for d in (64, 128):
        for causal in (False, True):
            q, k, v = qkv(1, 2, 300, d, torch.float16)
            _check_forward(q, k, v, causal, config=None)
            _check_gradients(q, k, v, causal, config=None, bwd_config=None)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float8_e4m3fn], ids=str)
@pytest.mark.parametrize("head_dim", [64, 128])
def test_default_forward_tiles_for_fp32_and_fp8(head_dim, dtype, seeded):
    # Whether the default tiles fit in shared memory only a GPU can tell:
    # fp32 rows of 128 take smaller tiles than the 16-bit formats.
    q, k, v = (t.to(dtype) for t in qkv(1, 2, 300, head_dim, torch.float32))
    out, _ = fa.attention_forward(q, k, v, causal=True)
    # fp32: exact products; fp8: only the fp16 rounding of P and O remains.
    atol, rtol = (1e-5, 1e-4) if dtype == torch.float32 else (4e-3, 4e-3)
    assert_close(out, fa.attention_ref(q, k, v, True), atol=atol, rtol=rtol)


def test_default_forward_tiles_follow_head_dim_and_dtype():
    fp16_64 = fa.default_config("forward", 64, torch.float16)
    fp16_128 = fa.default_config("forward", 128, torch.bfloat16)
    fp32_128 = fa.default_config("forward", 128, torch.float32)
    assert fp16_64["BLOCK_N"] < fp16_128["BLOCK_N"]  # 128 x 128 score tiles at d = 128
    assert (
        fp32_128["BLOCK_M"] * fp32_128["BLOCK_N"]
        < fp16_64["BLOCK_M"] * fp16_64["BLOCK_N"]
    )
    for cfg in (fp16_64, fp16_128, fp32_128):
        assert cfg["BLOCK_M"] % cfg["BLOCK_N"] == 0


# ------------------------------------------------- other GPUs (#16 item 4) ---
# Shared memory one block may use on each generation, KB (support.SHARED_LIMIT)
OTHER_GPUS = {
    "T4 (sm_75)": ((7, 5), 64),
    "A100 (sm_80)": ((8, 0), 163),
    "RTX 4090 (sm_89)": ((8, 9), 99),
}


def _as_gpu(monkeypatch, name):
    capability, shared_kb = OTHER_GPUS[name]
    gpu = {"name": name, "capability": capability, "shared_kb": shared_kb}
    monkeypatch.setattr(fa, "device_limits", lambda device: gpu)


@pytest.mark.parametrize("name", list(OTHER_GPUS))
def test_the_launchers_size_their_tiles_to_the_gpu_and_stay_correct(
    name, monkeypatch, seeded
):
    # Asked as each GPU, the launchers take the tiles default_config gives for
    # its shared memory (the support table checks they fit there) and the
    # results stay right. On a GPU this runs the smaller tiles for real.
    _as_gpu(monkeypatch, name)
    launched = []

    class Spy:  # kernel[grid](...), noting the launch options
        def __getitem__(self, grid, kernel=fa._attention_fwd_kernel):
            launch = kernel[grid]
            return lambda *a, **kw: launched.append(kw) or launch(*a, **kw)

    monkeypatch.setattr(fa, "_attention_fwd_kernel", Spy())
    q, k, v = qkv(1, 2, 200, 128, torch.float16)
    out, _ = fa.attention_forward(q, k, v, causal=True)
    assert_close(out, fa.attention_ref(q, k, v, True))
    want = fa.default_config("forward", 128, torch.float16, OTHER_GPUS[name][1])
    assert launched and launched[0]["BLOCK_N"] == want["BLOCK_N"]
    assert launched[0]["num_stages"] == want["num_stages"]
    _check_gradients(q, k, v, True, config=None, bwd_config=None)


def test_tiles_shrink_with_shared_memory():
    big, mid, small = (
        fa.default_config("forward", 128, torch.float16, kb) for kb in (227, 99, 64)
    )
    area = lambda c: c["BLOCK_M"] * c["BLOCK_N"] * c["num_stages"]  # noqa: E731
    assert area(big) > area(mid) > area(small)
    assert fa.default_config("forward", 128, torch.float16, 163) == big
    bwd_small = fa.default_config("backward", 128, torch.float16, 64)
    assert bwd_small["BLOCK_HELD"] < fa.default_config("backward", 128)["BLOCK_HELD"]


@pytest.mark.parametrize("name", ["T4 (sm_75)", "A100 (sm_80)"])
def test_fp8_e4m3_is_refused_before_sm89_with_a_sentence(name, monkeypatch):
    _as_gpu(monkeypatch, name)
    q = torch.randn(1, 1, 32, 64, device=DEVICE).to(torch.float8_e4m3fn)
    with pytest.raises(TypeError, match=r"needs compute capability 8\.9.*float8_e5m2"):
        fa.attention_forward(q, q, q)
    assert name.split(" ")[0] in _message(lambda: fa.attention_forward(q, q, q))


def _message(call) -> str:
    try:
        call()
    except TypeError as error:
        return str(error)
    raise AssertionError("no error")


@pytest.mark.gpu
def test_the_device_reports_its_own_limits():
    gpu = fa.device_limits(torch.device("cuda"))
    assert gpu["capability"] == torch.cuda.get_device_capability()
    assert gpu["shared_kb"] >= 64 and gpu["name"] == torch.cuda.get_device_name()


# -------------------------------------------------------------- bad input ---
def _good():
    return qkv(1, 1, 8, 16, torch.float16)


@pytest.mark.parametrize(
    "make, kwargs, error, message",
    [
        (lambda: ([1.0],) + _good()[1:], {}, TypeError, "torch.Tensor"),
        (lambda: qkv(1, 1, 8, 16, torch.float64), {}, TypeError, "unsupported dtype"),
        (
            lambda: (_good()[0], _good()[1].bfloat16(), _good()[2]),
            {},
            TypeError,
            "dtypes differ",
        ),
        (
            lambda: (_good()[0], qkv(1, 1, 9, 16, torch.float16)[0], _good()[2]),
            {},
            ValueError,
            "share one shape",
        ),
        (lambda: tuple(t[0] for t in _good()), {}, ValueError, "share one shape"),
        (lambda: qkv(1, 1, 8, 48, torch.float16), {}, ValueError, "head_dim"),
        (
            lambda: tuple(t.transpose(2, 3) for t in qkv(1, 1, 16, 16, torch.float16)),
            {},
            ValueError,
            "contiguous",
        ),
        (_good, {"config": {"BLOCK_M": 8}}, ValueError, "BLOCK_M"),
        (_good, {"config": {"BLOCK_M": 16, "BLOCK_N": 32}}, ValueError, "divide"),
        (_good, {"out": torch.empty(1, 1, 8, 16)}, ValueError, "out must"),
        (_good, {"lse": torch.empty(1, 1, 8, dtype=torch.float16)}, ValueError, "lse"),
    ],
    ids=[
        "list", "float64", "mixed", "shapes", "3-d", "head-dim", "strided",
        "block", "divide", "out", "lse",
    ],
)  # fmt: skip
def test_forward_rejects_bad_input(make, kwargs, error, message):
    q, k, v = make()
    with pytest.raises(error, match=message):
        fa.attention_forward(q, k, v, **kwargs)


def test_forward_rejects_misaligned_tensors():
    # The TMA reads from 16-byte aligned addresses only; a view two bytes into
    # a buffer is contiguous but not aligned.
    q, k, v = _good()
    buffer = torch.empty(q.numel() + 1, dtype=q.dtype, device=DEVICE)
    shifted = buffer[1:].view(q.shape)
    shifted.copy_(q)
    with pytest.raises(ValueError, match="16-byte aligned"):
        fa.attention_forward(shifted, k, v)
    out = torch.empty(q.numel() + 1, dtype=q.dtype, device=DEVICE)[1:].view(q.shape)
    with pytest.raises(ValueError, match="16-byte aligned"):
        fa.attention_forward(q, k, v, out=out)


def test_backward_rejects_bad_input():
    q, k, v = _good()
    out, lse = fa.attention_forward(q, k, v, config=SMALL)
    with pytest.raises(TypeError, match="unsupported dtype"):
        fa.attention_backward(*(t.float() for t in (q, k, v, out)), lse, out.float())
    with pytest.raises(ValueError, match="lse must"):
        fa.attention_backward(q, k, v, out, lse[..., :4], out)
    with pytest.raises(ValueError, match="BLOCK_STEP must divide"):
        fa.attention_backward(
            q, k, v, out, lse, out, config={"BLOCK_HELD": 16, "BLOCK_STEP": 32}
        )
    with pytest.raises(ValueError, match="direction"):
        fa.default_config("sideways")


def _lse_like(q, how):
    b, h, n = q.shape[:-1]
    if how == "strided":  # the right shape over (b, n, h) memory
        return torch.empty(b, n, h, device=q.device).transpose(1, 2)
    if how == "device":
        return torch.empty(b, h, n, device="meta")
    if how == "shape":
        return torch.empty(b, h, n + 1, device=q.device)
    if how == "dtype":
        return torch.empty(b, h, n, dtype=torch.float64, device=q.device)
    return [0.0] * (b * h * n)  # "list"


LSE_ERRORS = {
    "strided": (ValueError, "lse must be contiguous"),
    "device": (ValueError, "lse must be torch.float32 of shape .* on "),
    "shape": (ValueError, r"lse must be .*\(2, 2, 16\)"),
    "dtype": (ValueError, "got torch.float64"),
    "list": (TypeError, "lse must be a torch.Tensor"),
}


@pytest.mark.parametrize("how", list(LSE_ERRORS))
def test_a_bad_lse_buffer_is_refused(how, seeded):
    # issue #28: a strided lse was accepted and filled as if dense
    q, k, v = qkv(2, 2, 16, 16, torch.float16)
    error, message = LSE_ERRORS[how]
    with pytest.raises(error, match=message):
        fa.attention_forward(q, k, v, lse=_lse_like(q, how), config=SMALL)
    out, lse = fa.attention_forward(q, k, v, config=SMALL)
    with pytest.raises(error, match=message):
        fa.attention_backward(q, k, v, out, _lse_like(q, how), out, config=SMALL_BWD)


@pytest.mark.parametrize("name", ["k", "v", "q"])
def test_out_or_lse_sharing_memory_with_an_input_is_refused(name, seeded):
    # out over k or v: later programs would read keys or values that earlier
    # ones had overwritten with output rows
    q, k, v = qkv(1, 1, 48, 16, torch.float32)
    inputs = {"q": q, "k": k, "v": v}
    with pytest.raises(ValueError, match=f"out must not share memory with {name}"):
        fa.attention_forward(q, k, v, out=inputs[name], config=SMALL)
    lse = inputs[name].view(-1)[: q.shape[2]].view(1, 1, -1)
    with pytest.raises(ValueError, match=f"lse must not share memory with {name}"):
        fa.attention_forward(q, k, v, lse=lse, config=SMALL)


def test_lse_sharing_memory_with_out_is_refused():
    q, k, v = qkv(1, 1, 16, 16, torch.float32)
    out = torch.empty_like(q)
    lse = out.view(-1)[:16].view(1, 1, 16)
    with pytest.raises(ValueError, match="lse must not share memory with out"):
        fa.attention_forward(q, k, v, out=out, lse=lse, config=SMALL)


def test_empty_inputs_still_check_their_buffers():
    q, k, v = (torch.empty(1, 2, 0, 16, dtype=torch.float16, device=DEVICE),) * 3
    out, lse = fa.attention_forward(q, k, v)
    assert out.shape == q.shape and lse.shape == (1, 2, 0)
    assert all(
        g.shape == q.shape for g in fa.attention_backward(q, k, v, out, lse, out)
    )
    with pytest.raises(TypeError, match="lse must be a torch.Tensor"):
        fa.attention_backward(q, k, v, out, None, out)


def test_interpret_is_read_as_triton_reads_it():
    # issue #28, l03-10: the launchers read Triton's own knob (1, true, on,
    # yes or y, any case), at import, when the kernels were decorated too
    import triton

    assert fa._interpreting() is triton.knobs.runtime.interpret
    jitted = isinstance(fa._attention_fwd_kernel, triton.runtime.JITFunction)
    assert jitted is not fa._interpreting()


@pytest.mark.skipif(
    HAS_GPU, reason="the GPU run's kernels are compiled, not interpreted"
)
def test_cpu_tensors_run_under_the_interpreter(seeded):
    _check_forward(*qkv(1, 1, 16, 16, torch.float16), causal=False)


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_tensors_on_a_second_gpu_run_there(seeded):
    # Triton launches on the current GPU; the launchers make it q's
    q, k, v = (t.to("cuda:1") for t in qkv(1, 2, 100, 64, torch.float16))
    with torch.cuda.device(0):
        _check_forward(q, k, v, causal=True)
        _check_gradients(q, k, v, causal=True)


def test_cpu_tensors_need_the_interpreter(monkeypatch):
    monkeypatch.setattr(fa, "_INTERPRETING", False)  # as if imported without it
    q, k, v = (torch.ones(1, 1, 4, 16, dtype=torch.float16) for _ in range(3))
    with pytest.raises(ValueError, match="TRITON_INTERPRET=1"):
        fa.attention_forward(q, k, v)


@pytest.mark.skipif(HAS_GPU, reason="checks the CPU message")
def test_main_runs_under_the_interpreter(capsys):
    fa.main()
    assert capsys.readouterr().out.count("output and gradients match float64") == 2


# ------------------------------------------------ Nsight Compute captures ---
def test_the_ncu_captures_profile_each_forward_kernel_once():
    # part 2's "why cuDNN is faster here": one launch of each kernel, named
    # by a regex that ncu matches against the kernel's name
    import re

    from triton_course.runner import discovery

    _, captures = discovery.static_names(fa.__file__)
    assert {"attention_fwd_triton_ncu", "attention_fwd_cudnn_ncu"} <= set(captures)
    discovery.check_captures(fa.CAPTURES, "flash_attention.py")
    ours = fa.CAPTURES["attention_fwd_triton_ncu"]["ncu"]
    cudnn = fa.CAPTURES["attention_fwd_cudnn_ncu"]["ncu"]
    assert ours["args"] == ["--ncu", "triton"] and cudnn["args"] == ["--ncu", "sdpa"]
    assert re.search(ours["kernel"], fa._attention_fwd_kernel.fn.__name__)
    for name in ("_attention_bwd_dq_kernel", "_attention_bwd_dkdv_kernel"):
        assert not re.search(ours["kernel"], name)
    # SDPA's kernels on the H100 with torch 2.11 (the report's table): the
    # regex takes the forward one only
    sm90 = "cudnn_generated_fort_native_sdpa_sm90_flash_{}_wgmma_f16_knob_"
    assert re.search(cudnn["kernel"], sm90.format("fprop") + "7_64x128x128_4x1x1")
    assert not re.search(cudnn["kernel"], sm90.format("bprop") + "26_64x64x128")
    assert fa.NCU_SIZE == {"batch": 4, "heads": 16, "n_ctx": 8192, "head_dim": 128,
                           "causal": 0}  # fmt: skip
    assert fa.NCU_SIZE in fa.BENCHMARK_SIZES  # a row the tables time


def test_the_ncu_metrics_lesson_04_proved_are_kept_apart_from_the_new_ones():
    # NCU_METRICS: names the course's H100 runs have collected (lesson 04's
    # list); NCU_METRICS_UNVERIFIED: the others, which a run may have to drop
    rowsum = load_snippet("optimization_steps")
    assert set(fa.NCU_METRICS) <= set(rowsum.NCU_METRICS)
    assert not set(fa.NCU_METRICS_UNVERIFIED) & set(rowsum.NCU_METRICS)
    ncu_specs = [c for c in fa.CAPTURES.values() if isinstance(c, dict)]
    assert len(ncu_specs) == 2  # the forward's two; the backward's is a table
    for spec in ncu_specs:
        metrics = spec["ncu"]["metrics"]
        assert metrics == fa.NCU_METRICS + fa.NCU_METRICS_UNVERIFIED
        assert len(set(metrics)) == len(metrics)


def test_the_ncu_command_line_refuses_an_unknown_kernel(monkeypatch):
    import runpy
    import sys

    monkeypatch.setattr(sys, "argv", ["flash_attention.py", "--ncu", "flash3"])
    with pytest.raises(ValueError, match=r"--ncu takes one of \['sdpa', 'triton'\]"):
        runpy.run_path(fa.__file__, run_name="__main__")


@pytest.mark.gpu
@pytest.mark.parametrize("which", ["triton", "sdpa"])
def test_the_ncu_launch_runs_the_profiled_kernel_exactly_once(which):
    import re

    from torch.profiler import ProfilerActivity, profile

    name = (
        "attention_fwd_triton_ncu" if which == "triton" else "attention_fwd_cudnn_ncu"
    )
    kernel = fa.CAPTURES[name]["ncu"]["kernel"]
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fa.profile_one_forward(which)
    launches = {e.key: e.count for e in prof.key_averages() if re.search(kernel, e.key)}
    assert sum(launches.values()) == 1, launches


def _ncu_metrics(text: str) -> dict:
    import re

    found = re.findall(r"^ +([a-z][\w.]+) +(?:[\w/%]+ +)?([\d.,]+)$", text, re.M)
    return {name: float(value.replace(",", "")) for name, value in found}


def _attention_ncu_runs() -> dict:
    """Each run's two attention captures (data/timings, data/reproducibility
    and COURSE_TIMINGS_DIR), where a run holds them."""
    import os
    from pathlib import Path

    from conftest import REPO_ROOT

    dirs = [REPO_ROOT / "data" / "timings", REPO_ROOT / "data" / "reproducibility"]
    if os.environ.get("COURSE_TIMINGS_DIR"):
        dirs.append(Path(os.environ["COURSE_TIMINGS_DIR"]))
    runs = {}
    for folder in dirs:
        for path in sorted(folder.glob("*.json")):
            captures = json.loads(path.read_text()).get("captures", {})
            if {"attention_fwd_triton_ncu", "attention_fwd_cudnn_ncu"} <= set(captures):
                runs[str(path)] = captures
    return runs


def test_the_pages_reading_of_the_ncu_captures_holds_in_every_captured_run():
    # part 2 reads the two captures in words, never numbers: the course's
    # kernel runs many programs per SM, each of two warp groups; cuDNN's is
    # persistent (one program per SM) with three warp groups; each fits one
    # program per SM. Checked in every run that holds the captures.
    runs = _attention_ncu_runs()
    if not runs:
        pytest.skip("no data file holds the attention ncu captures yet")
    size = fa.NCU_SIZE
    block_m = fa.default_config("forward", size["head_dim"], torch.float16)["BLOCK_M"]
    programs = size["n_ctx"] // block_m * size["batch"] * size["heads"]
    for where, captures in runs.items():
        ours = _ncu_metrics(captures["attention_fwd_triton_ncu"]["text"])
        cudnn = _ncu_metrics(captures["attention_fwd_cudnn_ncu"]["text"])
        sms = captures["attention_fwd_cudnn_ncu"]["provenance"]["sm_count"]
        assert ours["launch__grid_size"] == programs > 2 * sms, where
        assert cudnn["launch__grid_size"] == sms, where
        assert ours["launch__block_size"] == 2 * 128, where
        assert cudnn["launch__block_size"] == 3 * 128, where
        for metrics in (ours, cudnn):  # one program's warps of an SM's 64
            warps = metrics["launch__block_size"] / 32
            theoretical = metrics["sm__maximum_warps_per_active_cycle_pct"]
            assert theoretical == pytest.approx(100 * warps / 64, abs=0.01), where


def test_the_pages_reading_of_the_ncu_counters_holds_in_every_captured_run():
    # part 2: "cuDNN's kernel kept the tensor cores busy for a larger share of
    # its cycles, executed more instructions per cycle, and its warps spent
    # fewer cycles stalled at barriers per instruction issued"
    from conftest import REPO_ROOT

    runs = _attention_ncu_runs()
    if not runs:
        pytest.skip("no data file holds the attention ncu captures yet")
    for where, captures in runs.items():
        ours = _ncu_metrics(captures["attention_fwd_triton_ncu"]["text"])
        cudnn = _ncu_metrics(captures["attention_fwd_cudnn_ncu"]["text"])
        for name in (
            "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
            "sm__inst_executed.avg.per_cycle_active",
        ):
            assert cudnn[name] > ours[name], (where, name)
        barrier = "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio"
        assert cudnn[barrier] < ours[barrier], where
    page = " ".join(
        (REPO_ROOT / "docs/gpu-architecture/02-flash-attention-backward.md")
        .read_text(encoding="utf-8")
        .split()
    )
    assert "the tensor cores busy a larger share of its cycles, executed more" in page
    assert "instructions per cycle, and stalled less at barriers per" in page


def test_the_backward_kernel_table_is_a_runner_capture():
    assert fa.CAPTURES["attention_bwd_kernels"] is fa.backward_kernel_times


@pytest.mark.gpu
def test_the_backward_kernel_table_names_each_kernel_with_its_share():
    size = {"batch": 1, "heads": 2, "n_ctx": 1024, "head_dim": 128, "causal": 0}
    text = fa.backward_kernel_times(size, repeats=2)
    rows = [[c.strip() for c in line.split("|")] for line in text.splitlines()[1:]]
    ours = {r[1]: r for r in rows if r[0] == "Triton"}
    for kernel in ("_attention_bwd_dkdv_kernel", "_attention_bwd_dq_kernel"):
        assert any(name.startswith(kernel) for name in ours), text
    for label in ("Triton", "SDPA"):
        shares = [float(r[4].rstrip(" %")) for r in rows
                  if r[0] == label and r[1] != "all kernels"]  # fmt: skip
        assert shares and abs(sum(shares) - 100) <= len(shares), text


def test_the_pages_reading_of_the_backward_kernel_table_holds_in_every_run():
    # part 2's backward block: ours spends the largest share in dK/dV and most
    # of the rest in dQ; SDPA runs one cuDNN bprop kernel beside a small
    # pre-pass and convert_dq_to_16bits, and its total is the shorter
    import os
    from pathlib import Path

    from conftest import REPO_ROOT

    dirs = [REPO_ROOT / "data" / "timings", REPO_ROOT / "data" / "reproducibility"]
    if os.environ.get("COURSE_TIMINGS_DIR"):
        dirs.append(Path(os.environ["COURSE_TIMINGS_DIR"]))
    tables = {
        str(path): captures["attention_bwd_kernels"]["text"]
        for folder in dirs
        for path in sorted(folder.glob("*.json"))
        if "attention_bwd_kernels"
        in (captures := json.loads(path.read_text()).get("captures", {}))
    }
    if not tables:
        pytest.skip("no data file holds the backward kernel table yet")
    for where, text in tables.items():
        rows = [[c.strip() for c in line.split("|")] for line in text.splitlines()[1:]]
        total = {r[0]: float(r[3]) for r in rows if r[1] == "all kernels"}
        ours = {r[1]: float(r[4].rstrip(" %")) for r in rows if r[0] == "Triton"}
        sdpa = {r[1]: float(r[4].rstrip(" %")) for r in rows if r[0] == "SDPA"}
        dkdv, dq = ours["_attention_bwd_dkdv_kernel"], ours["_attention_bwd_dq_kernel"]
        assert dkdv > dq > 100 - dkdv - dq, (where, ours)
        bprop = [name for name in sdpa if "bprop" in name]
        assert len(bprop) == 1 and sdpa[bprop[0]] >= 90, (where, sdpa)
        assert any("convert_dq_to_16bits" in name for name in sdpa), (where, sdpa)
        assert total["SDPA"] < total["Triton"], (where, total)
    page = " ".join(
        (REPO_ROOT / "docs/gpu-architecture/02-flash-attention-backward.md")
        .read_text(encoding="utf-8")
        .split()
    )
    assert "the dK/dV kernel takes the largest share and the dQ kernel" in page
