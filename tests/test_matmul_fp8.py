"""snippets/matmul_fp8.py: the FP8 GEMM, its quantisation and its refusals.

The interpreter runs float8_e4m3fn tiles through tl.dot (a 16 x 16 e4m3 dot
was exact against float32 on triton 3.6 and 3.9 when this file was written),
so the kernel's arithmetic, scales and edges are tested on the CPU at awkward
shapes, on triton 3.9 (3.6's interpreter stops at any tl.range over a
program id with NumPy 2.4, matmul_tma's as this one's; on the GPU lane 3.6
compiles instead, and the compile-only test below runs on both). K must be a
multiple of 16 and N of 8 (TMA's 16-byte rows); M is free. What only a GPU
shows (the sm_90 machine code's speed, torch._scaled_mm's CUDA path) is in
the GPU tests and the runner's benchmarks.
"""

import math

import pytest
import torch
from conftest import (
    DEVICE,
    HAS_GPU,
    REPO_ROOT,
    TOLERANCES,
    compile_in_subprocess,
    load_snippet,
)

from triton_course.runner import discovery as D

PAGE = REPO_ROOT / "docs" / "triton-series" / "fp8-gemm.md"  # #34: its own page

mf = load_snippet("matmul_fp8")
FP8 = torch.float8_e4m3fn

if HAS_GPU and torch.cuda.get_device_capability() < (8, 9):
    FP8_GPU = False  # the launcher must refuse (test_an_old_gpu_is_refused)
else:
    FP8_GPU = HAS_GPU

SMALL = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2}
SHAPES = [(1, 8, 16), (7, 16, 32), (65, 40, 48)]
needs_fp8 = pytest.mark.skipif(
    HAS_GPU and not FP8_GPU, reason="no float8 tensor cores on this GPU"
)


def quantized(m, n, k, rowwise, seed=0):
    torch.manual_seed(seed)
    x = torch.randn(m, k, device=DEVICE)
    w = torch.randn(n, k, device=DEVICE)
    quantize = mf.quantize_per_row if rowwise else mf.quantize_per_tensor
    (a, sa), (b, sb) = quantize(x), quantize(w)
    return a, b, sa, sb.reshape(1, -1) if rowwise else sb


def exact(a, b, sa, sb):
    """float64 product of the dequantised inputs: what the kernel approximates
    with float32 sums and one bfloat16 rounding."""
    return (a.double() * sa.double().reshape(-1, 1)) @ (
        b.double() * sb.double().reshape(-1, 1)
    ).T


class _PoisonedTorch:
    """torch, except that torch.empty returns NaNs: an unwritten output
    element of the launcher then fails the comparison."""

    def __getattr__(self, name):
        return getattr(torch, name)

    @staticmethod
    def empty(*args, **kwargs):
        out = torch.empty(*args, **kwargs)
        # the launcher's own scratch (int8, for device-side descriptors) too
        return out.fill_(float("nan")) if out.is_floating_point() else out


@pytest.fixture
def poisoned(monkeypatch):
    monkeypatch.setattr(mf, "torch", _PoisonedTorch())


# ------------------------------------------------------------ the kernel ---
@needs_fp8
@pytest.mark.parametrize("rowwise", [False, True], ids=["per-tensor", "per-row"])
@pytest.mark.parametrize("m, n, k", SHAPES, ids=str)
def test_matches_the_float64_product(m, n, k, rowwise, poisoned):
    a, b, sa, sb = quantized(m, n, k, rowwise)
    out = mf.matmul_fp8(a, b, sa, sb, config=None if HAS_GPU else SMALL)
    assert out.dtype == torch.bfloat16 and out.shape == (m, n)
    assert not torch.isnan(out).any(), "an element was never written"
    torch.testing.assert_close(
        out.double(), exact(a, b, sa, sb), **TOLERANCES[torch.bfloat16]
    )


@needs_fp8
@pytest.mark.parametrize(
    "options",
    [
        {"persistent": False},
        {"host_desc": False},
        {"fast_accum": False},
        # on a GPU the tuned tiles: triton 3.6 needs K >= 32 for an fp8 dot
        {
            "config": {
                **(mf.HOPPER_CONFIGS[True] if HAS_GPU else SMALL),
                "EPILOGUE_SPLIT": True,
            }
        },  # fmt: skip
    ],
    ids=["per-tile", "device-descriptors", "precise", "split-epilogue"],
)
def test_every_variant_computes_the_same(options, poisoned):
    # 5 x 3 tiles of 16 over 4 interpreter "SMs": programs loop over tiles
    a, b, sa, sb = quantized(70, 40, 48, rowwise=True)
    config = options.pop("config", None if HAS_GPU else SMALL)
    out = mf.matmul_fp8(a, b, sa, sb, config=config, **options)
    assert not torch.isnan(out).any()
    torch.testing.assert_close(
        out.double(), exact(a, b, sa, sb), **TOLERANCES[torch.bfloat16]
    )


@needs_fp8
@pytest.mark.parametrize("rowwise", [False, True], ids=["per-tensor", "per-row"])
def test_same_scales_as_torch_scaled_mm(rowwise):
    # torch._scaled_mm's convention (scale_a per row of a, scale_b per column
    # of the product) is the kernel's: both give the same bfloat16 C
    a, b, sa, sb = quantized(48, 32, 64, rowwise)
    config = None if HAS_GPU else SMALL
    ours = mf.matmul_fp8(a, b, sa, sb, config=config).double()
    theirs = mf.scaled_mm(a, b, sa, sb).double()
    torch.testing.assert_close(ours, theirs, **TOLERANCES[torch.bfloat16])
    assert ours.abs().max() > 1  # the scales were applied, not left at 1


def test_the_reference_dequantises_both_ways():
    a, b, sa, sb = quantized(5, 8, 16, rowwise=True)
    want = exact(a, b, sa, sb)
    ref = mf.matmul_fp8_ref(a.cpu(), b.cpu(), sa.cpu(), sb.cpu())
    assert ref.dtype == torch.bfloat16
    torch.testing.assert_close(ref.double(), want.cpu(), **TOLERANCES[torch.bfloat16])


def test_the_reference_says_its_dequantised_inputs_are_rounded():
    # fp8-gemm review #6: a float8 value is exact in float32, that value times
    # its scale is not, and the reference scales before the sum (the kernel
    # after it): its rounding differs from the kernel's, not only its order
    q = torch.tensor([1.875, 1.625, 1.375]).to(FP8)
    scale = torch.tensor(1 / 3)
    assert torch.equal(q.float().double(), q.double())  # the float8 values: exact
    scaled = (q.float() * scale).double()
    assert not torch.equal(scaled, q.double() * scale.double())  # rounded
    doc = " ".join(mf.matmul_fp8_ref.__doc__.split())
    assert "only the summation order differs" not in doc
    assert "each one times its scale is rounded" in doc
    assert "the scales come before the sum (the kernel applies them after it)" in doc


@needs_fp8
def test_empty_and_zero_k():
    one = torch.ones(1, device=DEVICE)
    a, b = (torch.zeros(*s, device=DEVICE).to(FP8) for s in ((0, 16), (8, 16)))
    assert mf.matmul_fp8(a, b, one, one).shape == (0, 8)
    a, b = (torch.zeros(*s, device=DEVICE).to(FP8) for s in ((4, 0), (8, 0)))
    out = mf.matmul_fp8(a, b, one, one)  # an empty sum: zeros, no launch
    assert out.shape == (4, 8) and (out == 0).all()


# ------------------------------------------------------------- quantising ---
def test_per_tensor_maps_the_largest_magnitude_onto_448():
    x = torch.tensor([[0.5, -3.0], [1.5, 2.0]])
    q, s = mf.quantize_per_tensor(x)
    assert q.dtype == FP8 and s.dtype == torch.float32 and s.shape == (1,)
    assert s.item() == pytest.approx(3.0 / 448)
    assert q.float().abs().max().item() == 448.0 == mf.FP8_MAX
    _assert_round_trip(x, q.float() * s, s)


def test_per_row_scales_each_row_and_guards_zero_rows():
    x = torch.tensor([[1.0, -2.0], [0.0, 0.0], [1e-3, 5e-4]])
    q, s = mf.quantize_per_row(x)
    assert s.shape == (3, 1) and s[1].item() == 1.0  # a zero row: any scale
    assert torch.isfinite(q.float()).all() and (q[1].float() == 0).all()
    assert s[0].item() == pytest.approx(2.0 / 448)
    assert q[2].float().abs().max().item() == 448.0  # small rows use the range
    _assert_round_trip(x, q.float() * s, s)


def test_an_all_zero_tensor_quantises_to_zeros():
    q, s = mf.quantize_per_tensor(torch.zeros(3, 4))
    assert s.item() == 1.0 and (q.float() == 0).all()


def _assert_round_trip(x, back, scale):
    # e4m3 keeps 3 mantissa bits: a normal value is off by at most 2^-4 of
    # itself; below 2^-6 (scaled) the spacing is 2^-9, so at most 2^-10.
    assert ((back - x).abs() <= 2**-4 * x.abs() + 2**-10 * scale).all()


@pytest.mark.parametrize(
    "x, error, message",
    [
        (torch.ones(2, 2, dtype=torch.int32), TypeError, "quantises float32"),
        (torch.tensor([[1.0, math.inf]]), ValueError, "inf or NaN"),
        (torch.tensor([[math.nan, 1.0]]), ValueError, "inf or NaN"),
        ([[1.0]], TypeError, "torch.Tensor"),
    ],
)
def test_quantising_refuses_what_no_scale_fits(x, error, message):
    for quantize in (mf.quantize_per_tensor, mf.quantize_per_row):
        with pytest.raises(error, match=message):
            quantize(x)
    with pytest.raises(ValueError, match="2-D"):
        mf.quantize_per_row(torch.ones(4))


# --------------------------------------------------------------- refusals ---
def _good():
    a, b, sa, sb = quantized(32, 16, 32, rowwise=False)
    return {"a": a, "b": b, "a_scale": sa, "b_scale": sb}


@pytest.mark.parametrize(
    "change, error, message",
    [
        ({"a": "bf16"}, TypeError, "float8_e4m3fn"),
        ({"b": "e5m2"}, TypeError, "float8_e4m3fn"),
        ({"a": "list"}, TypeError, "torch.Tensor"),
        ({"a": "1d"}, ValueError, "2-D"),
        ({"b": "transposed"}, ValueError, "row-major"),
        ({"b": "short_k"}, ValueError, "equal K"),
        ({"a_scale": "fp16"}, TypeError, "float32"),
        ({"a_scale": "rows"}, ValueError, r"a_scale \(32, 1\) and b_scale \(1, 16\)"),
        ({"b_scale": "column"}, ValueError, "per row"),
        ({"a_scale": "strided"}, ValueError, "contiguous"),
        ({"k": 24}, ValueError, "K=24 must be a multiple of 16"),
        ({"n": 12}, ValueError, "N=12 a multiple of 8"),
    ],
    ids=lambda v: str(v) if isinstance(v, dict) else "",
)
def test_bad_input_gets_a_clear_error(change, error, message):
    args = _good()
    (key, what), = change.items()  # fmt: skip
    if key in ("k", "n"):
        m, n, k = 32, 12 if key == "n" else 16, 24 if key == "k" else 32
        args = dict(zip(args, quantized(m, n, k, rowwise=False), strict=True))
    elif what == "bf16":
        args["a"] = args["a"].to(torch.bfloat16)
    elif what == "e5m2":
        args["b"] = args["b"].float().to(torch.float8_e5m2)
    elif what == "list":
        args["a"] = [[1.0]]
    elif what == "1d":
        args["a"] = args["a"][0]
    elif what == "transposed":  # a K x N matrix's transpose is not N x K row-major
        args["b"] = args["b"].T.contiguous().T
    elif what == "short_k":
        args["b"] = args["b"][:, :16].contiguous()
    elif what == "fp16":
        args["a_scale"] = args["a_scale"].half()
    elif what == "rows":
        args["a_scale"] = torch.ones(32, 1, device=DEVICE)  # b's is one element
    elif what == "column":
        args["a_scale"] = torch.ones(32, 1, device=DEVICE)
        args["b_scale"] = torch.ones(16, 1, device=DEVICE)  # (N, 1), not (1, N)
    elif what == "strided":
        args["a_scale"] = torch.ones(32, 2, device=DEVICE)[:, :1]
        args["b_scale"] = torch.ones(1, 16, device=DEVICE)
    with pytest.raises(error, match=message):
        mf.matmul_fp8(**args)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"GROUP_M": 0}, "GROUP_M must be an integer >= 1"),
        ({"GROUP_M": 1.5}, "GROUP_M must be an integer >= 1"),
        ({"BLOCK_N": 24}, "BLOCK_N must be a power of two"),
    ],
)
def test_a_config_the_kernel_cannot_compute_is_refused(change, message):
    # GROUP_M = 0 divided by zero in the grouped ordering (the review of
    # layernorm-linear.md, 2026-11-27, #10: the same launcher defect)
    with pytest.raises(ValueError, match=message):
        mf.matmul_fp8(**_good(), config={**mf.INTERPRETER_CONFIG, **change})


def test_cpu_tensors_without_the_interpreter_are_refused(monkeypatch):
    monkeypatch.setattr(mf, "_interpreting", lambda: False)
    a, b, sa, sb = (t.cpu() for t in quantized(16, 16, 16, rowwise=False))
    with pytest.raises(ValueError, match="TRITON_INTERPRET=1"):
        mf.matmul_fp8(a, b, sa, sb)


@pytest.mark.parametrize("capability", [(7, 5), (8, 0), (8, 6)])
def test_a_gpu_without_fp8_tensor_cores_is_refused(capability, monkeypatch):
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda d=None: capability)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda d=None: "NVIDIA A100")
    with pytest.raises(RuntimeError) as err:
        mf._require_fp8_tensor_cores(torch.device("cuda"))
    text = str(err.value)
    assert "NVIDIA A100 has compute capability" in text and "8.9 or newer" in text
    for ok in ((8, 9), (9, 0), (10, 0)):
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda d=None, c=ok: c)
        mf._require_fp8_tensor_cores(torch.device("cuda"))  # no error


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU or FP8_GPU, reason="needs a GPU below sm_89")
def test_an_old_gpu_is_refused():
    a, b, sa, sb = quantized(16, 16, 16, rowwise=False)
    with pytest.raises(RuntimeError, match="float8 tensor cores"):
        mf.matmul_fp8(a, b, sa, sb)


# ------------------------------------------- what Triton compiles for sm_90 ---
_COMPILE = r"""
import json, re, sys
from pathlib import Path
from triton_course import codegen, excerpts

mf = excerpts._load(Path("snippets/matmul_fp8.py"))
BIG = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 128, "GROUP_M": 8,
       "ROWWISE": True, "MAX_IMPRECISE": 0, "NUM_PROGRAMS": 132,
       "EPILOGUE_SPLIT": False, "FLATTEN": True, "DEVICE_DESC": False}
SMALL = BIG | {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64}
def sig(c):
    bm, bn, bk = c["BLOCK_M"], c["BLOCK_N"], c["BLOCK_K"]
    if c["DEVICE_DESC"]:
        ab, cc = ("*fp8e4nv", "*fp8e4nv"), "*bf16"
    else:
        ab = (f"tensordesc<fp8e4nv[{bm}, {bk}]>", f"tensordesc<fp8e4nv[{bn}, {bk}]>")
        c_cols = bn // 2 if c["EPILOGUE_SPLIT"] else bn  # the split store's halves
        cc = f"tensordesc<bf16[{bm}, {c_cols}]>"
    return ({"a": ab[0], "b": ab[1], "c": cc, "a_scale_ptr": "*fp32",
             "b_scale_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32"}
            | dict.fromkeys(c, "constexpr"))
TALL = BIG | {"BLOCK_M": 256, "BLOCK_N": 128, "MAX_IMPRECISE": 128}
# the launcher's fast config (HOPPER_CONFIGS[True]): four stages, split store
LAUNCH = {k: v for k, v in mf.HOPPER_CONFIGS[True].items() if k[0].isupper()}
runs = {"90": (90, BIG, 8), "90-precise": (90, BIG | {"MAX_IMPRECISE": 128}, 8),
        "90-precise-256x128": (90, TALL, 8),
        "90-fast-256x128": (90, TALL | {"MAX_IMPRECISE": 0}, 8),
        "90-device": (90, BIG | {"DEVICE_DESC": True}, 8),
        "90-launch": (90, BIG | LAUNCH, 8),
        "90-launch-unsplit": (90, BIG | LAUNCH | {"EPILOGUE_SPLIT": False}, 8),
        "89": (89, SMALL, 4), "80": (80, SMALL, 4)}
STAGES = {"90-launch": mf.HOPPER_CONFIGS[True]["num_stages"],
          "90-launch-unsplit": mf.HOPPER_CONFIGS[True]["num_stages"]}

def usage(cubin):  # registers and stack (spills) per thread, from cuobjdump
    import subprocess, tempfile
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        text = subprocess.run([excerpts.cuobjdump(), "--dump-resource-usage",
                               f.name], capture_output=True, text=True).stdout
    return {k: int(v) for k, v in re.findall(r"(REG|STACK):(\d+)", text)}

def advisories(ptx):  # ptxas's own notes (C75xx), from the ptxas Triton uses
    import subprocess, tempfile
    from triton.backends.nvidia.compiler import get_ptxas
    with tempfile.TemporaryDirectory() as d:
        Path(d, "k.ptx").write_text(ptx)
        log = subprocess.run([get_ptxas(90).path, "-v", "--gpu-name=sm_90a",
                              f"{d}/k.ptx", "-o", f"{d}/k.o"],
                             capture_output=True, text=True).stderr
    return sorted(set(re.findall(r"\((C75\d\d)\)", log)))
out = {}
for name, (arch, consts, warps) in runs.items():
    try:
        k = codegen.compile_kernel(mf.matmul_fp8_kernel, arch, sig(consts), consts,
                                   num_warps=warps, num_stages=STAGES.get(name, 3))
    except Exception as exc:
        out[name] = "refused: " + str(exc).strip().splitlines()[-1]
        continue
    ptx, ttgir = k.asm["ptx"], k.asm["ttgir"]
    out[name] = {
        "wgmma": sorted(set(re.findall(r"wgmma\.mma_async\S+", ptx))),
        "wgmma_count": len(re.findall(r"wgmma\.mma_async", ptx)),
        "mma_e4m3": len(re.findall(r"mma\.sync\S*e4m3", ptx)),
        "add_f32": len(re.findall(r"\badd\.(?:rn\.)?f32\b", ptx)),
        "tensormap_create": ttgir.count("ttng.tensormap_create"),
        "fences": ttgir.count("ttng.tensormap_fenceproxy_acquire"),
        "shared": k.metadata.shared,
        **(usage(k.asm["cubin"]) if arch == 90 else {})}
    if name in ("90", "90-precise-256x128", "90-fast-256x128"):
        out[name]["advisories"] = advisories(ptx)
json.dump(out, sys.stdout)
"""


@pytest.mark.compile_heavy
def test_what_triton_compiles_for_each_gpu():
    found = compile_in_subprocess(_COMPILE)
    fast, precise, device = found["90"], found["90-precise"], found["90-device"]
    # Hopper: asynchronous warpgroup MMA on e4m3 operands, float32 accumulator;
    # two warpgroups of 64 rows, four k32 steps per 128-wide K block
    wgmma = "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3"
    assert fast["wgmma"] == [wgmma] and fast["wgmma_count"] == 4
    assert fast["shared"] <= 232448  # Hopper's per-block maximum
    # the launcher's four stages fit only with the output stored in halves
    launch, unsplit = found["90-launch"], found["90-launch-unsplit"]
    assert mf.HOPPER_CONFIGS[True]["num_stages"] == 4
    assert launch["shared"] <= 232448 < unsplit["shared"]
    assert launch["wgmma"] == [wgmma] and launch["wgmma_count"] == 4
    assert launch["REG"] < 200 and launch["STACK"] == 0
    page = " ".join(PAGE.read_text(encoding="utf-8").split())
    assert "128 × 256 × 128 tiles in four pipeline stages" in page
    assert "stores the output in two halves of 128 × 128 (`EPILOGUE_SPLIT`)" in page
    # fast: the wgmma chain runs along all of K, no float32 add between blocks;
    # precise: 128 x 256 partial sums over 256 threads, one add.f32 each
    assert fast["add_f32"] == 0 and precise["add_f32"] == 128
    assert precise["wgmma"] == [wgmma]
    # the price of precise: a second accumulator, about twice the registers;
    # 128 x 256 runs out (a stack frame: spills), 256 x 128 just fits
    tall = found["90-precise-256x128"]
    assert fast["REG"] < 200 and precise["REG"] >= 240 and tall["REG"] >= 240
    assert fast["STACK"] == 0 and precise["STACK"] > 0 and tall["STACK"] == 0
    # fp8-gemm review #3: ptxas also says the precise kernel's wgmma are
    # serialized (C7514) and that it injects a wait (C7517); the fast kernel,
    # at either tile, gets neither
    assert {"C7514", "C7517"} <= set(tall["advisories"])
    assert fast["advisories"] == found["90-fast-256x128"]["advisories"] == []
    # host descriptors: nothing built in the kernel; device ones: three, fenced
    assert fast["tensormap_create"] == fast["fences"] == 0
    assert device["tensormap_create"] == device["fences"] == 3
    # Ada has e4m3 tensor cores through mma.sync (no wgmma, no TMA)
    assert found["89"]["mma_e4m3"] > 0 and found["89"]["wgmma"] == []
    # Ampere: Triton itself has no e4m3 type there, and says so
    assert "fp8e4nv not supported in this architecture" in found["80"]
    page = " ".join(PAGE.read_text(encoding="utf-8").split())
    tiles = {k: v for k, v in mf.HOPPER_CONFIGS[False].items() if "BLOCK" in k}
    assert tiles == {"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 128}
    for claim in (
        f"four [wgmma](../reference/glossary.md#mma) instructions, `{wgmma}`, per "
        "K block",
        'advisory C7514: "Potential Performance Loss: wgmma.mma_async '
        "instructions are serialized due to non wgmma instructions reading "
        'accumulator registers"',
        "ptxas injects a wait for it (advisory C7517). The same tiles with fast "
        "accumulation get neither advisory",
        "128 `add.f32` per thread",
        "no scratch memory and no fence",
        "holds fewer than 200 registers and a thread of the precise one at least 240",
        "at 128 × 256 the precise kernel spills (it needs a stack frame), at 256 × "
        "128 it just fits",
        '("fp8e4nv not supported in this architecture")',
    ):
        assert claim in page, claim


# ---------------------------------------------------- the runner's entries ---
def test_the_benchmarks_are_fp8_gemms_against_the_fp8_ceiling():
    for desc in mf.BENCHMARKS:
        D.check_description(desc, "snippets/matmul_fp8.py")
        assert desc["ceiling"] == "compute_fp8" and desc["metric"] == "compute"
        assert desc["dtypes"] == ["float8_e4m3fn"]
        assert {"M": 4096, "N": 4096, "K": 4096} in desc["sizes"]
        assert {"M": 8192, "N": 8192, "K": 8192} in desc["sizes"]
        assert all(
            "torch._scaled_mm" in p or "torch.matmul" in p for p in desc["peers"]
        )


@needs_fp8
@pytest.mark.parametrize("index", range(len(mf.BENCHMARKS)))
def test_every_contender_computes_the_same_product(index):
    desc = mf.BENCHMARKS[index]
    size = {"M": 32, "N": 32, "K": 32}
    inputs = desc["make_inputs"](size, FP8, DEVICE)
    assert desc["work"](size, FP8) == 2 * 32**3
    ours = desc["triton"](*inputs).double()
    want = exact(*inputs[:4])
    for fn in desc["peers"].values():
        got = fn(*inputs).double()
        # the bfloat16 peer multiplies the inputs before they were quantised
        a16, b16 = inputs[4].double(), inputs[5].double()
        ref = a16 @ b16.T if fn is mf._bf16_matmul else want
        torch.testing.assert_close(got, ref, **TOLERANCES[torch.bfloat16])
    torch.testing.assert_close(ours, want, **TOLERANCES[torch.bfloat16])


@needs_fp8
def test_the_accuracy_report_is_a_table_of_errors():
    report = mf._accuracy(n=32, device=DEVICE)
    rows = report["accuracy"]
    assert rows[0]["GEMM"].startswith("bfloat16")
    assert {r["scales"] for r in rows} == {"none", "per tensor", "per row"}
    assert len(rows) == 1 + 2 * 5
    for r in rows:
        assert 0 <= r["relative error"] < 0.2 and 0 <= r["max error / max |C|"] < 0.3


# ------------------------------------------------------------------ GPU ---
@pytest.mark.gpu
@pytest.mark.skipif(not FP8_GPU, reason="needs a GPU with float8 tensor cores")
@pytest.mark.parametrize("rowwise", [False, True], ids=["per-tensor", "per-row"])
def test_the_tuned_config_matches_scaled_mm_on_the_gpu(rowwise):
    a, b, sa, sb = quantized(1000, 1024, 2048, rowwise)  # M not a multiple of 128
    for fast in (True, False):
        ours = mf.matmul_fp8(a, b, sa, sb, fast_accum=fast).double()
        theirs = mf.scaled_mm(a, b, sa, sb, fast_accum=fast).double()
        # |C| is about sqrt(K) = 45: 0.5 is 1 % of it, for fast accumulation's
        # narrower sums and bfloat16's rounding (a wrong tile is far off)
        torch.testing.assert_close(ours, exact(a, b, sa, sb), atol=0.5, rtol=0.02)
        torch.testing.assert_close(ours, theirs, atol=0.5, rtol=0.02)


# ---------------------------------------------------------------- the page ---
def test_the_pages_format_table_is_torchs():
    page = " ".join(PAGE.read_text(encoding="utf-8").split())
    f8, bf = torch.finfo(FP8), torch.finfo(torch.bfloat16)
    assert (f8.max, f8.smallest_normal, f8.eps) == (448.0, 2**-6, 2**-3)
    assert (bf.smallest_normal, bf.eps) == (2**-126, 2**-7)
    assert f"{bf.max:.2e}" == "3.39e+38"
    for row in (
        "| largest value | 448 | 3.39 × 10³⁸ |",
        "| smallest normal value | 2⁻⁶ | 2⁻¹²⁶ |",
        "| spacing just above 1 | 2⁻³ | 2⁻⁷ |",
    ):
        assert row in page, row
    # "at twice their 16-bit rate on NVIDIA's datasheet"
    from triton_course import vendor_peaks as V

    h100 = "NVIDIA H100 80GB HBM3"
    assert V.peak(h100, "compute_fp8")["value"] == 2 * V.peak(h100, "compute")["value"]
    assert "at twice their 16-bit rate on NVIDIA's datasheet" in page


def test_the_page_shows_every_benchmark_and_the_accuracy():
    page = PAGE.read_text(encoding="utf-8")
    for desc in mf.BENCHMARKS:
        assert f"[[timings {desc['name']} " in page
    assert "[[report matmul_fp8_tensorwise accuracy]]" in page
    assert "report" in mf.BENCHMARKS[0] and mf.BENCHMARKS[0]["report"] is mf._accuracy


def test_the_takeaway_states_the_bounds_its_claims_check():
    # fp8-gemm review #1: "~1" of torch._scaled_mm was too close to call in a
    # second H100 run; the prose states the bound that the build checks
    page = " ".join(PAGE.read_text(encoding="utf-8").split())
    assert 'is="~1"' not in page
    for bound, peer in (("0.9", "cuBLAS FP8 (torch._scaled_mm)"),
                        ("1.5", "cuBLAS bf16 (torch.matmul)")):  # fmt: skip
        claim = (f'[[claim bench=matmul_fp8_tensorwise gpu=h100 value="ratio:{peer}" '
                 f'is=">{bound}"]]')  # fmt: skip
        assert claim in page, claim
    assert "kernel runs above 0.9 of `torch._scaled_mm`'s rate at every size" in page
    assert "and above 1.5 times the rate of cuBLAS's bfloat16 GEMM" in page


def test_the_page_says_which_tables_time_the_bfloat16_gemm():
    # fp8-gemm review #2: the precise table has no bfloat16 peer
    peers = {d["name"]: set(d["peers"]) for d in mf.BENCHMARKS}
    bf16 = "cuBLAS bf16 (torch.matmul)"
    assert bf16 in peers["matmul_fp8_tensorwise"] & peers["matmul_fp8_rowwise"]
    assert bf16 not in peers["matmul_fp8_precise"]
    page = " ".join(PAGE.read_text(encoding="utf-8").split())
    assert "and beside cuBLAS's bfloat16 GEMM on the same matrices" not in page
    assert (
        "the two fast-accumulation tables (per tensor and per row) also time "
        "cuBLAS's bfloat16 GEMM on the same matrices before quantisation, the "
        "precise one does not" in page
    )


def test_the_page_claims_no_unmeasured_cost_and_leans_on_no_mark():
    # fp8-gemm review #5: per-row against per-tensor scales is a comparison of
    # two tables no directive checks; the page states the arithmetic only.
    # Review #4: the † of stale data is the tables' business; the prose never
    # depends on it (a new whole run removes it)
    page = " ".join(PAGE.read_text(encoding="utf-8").split())
    assert "pays almost nothing" not in page
    assert "one multiply per element of C (what that costs in time has not" in page
    assert "earlier version" not in page and "†" not in page


# ---------------------------------------------- the Nsight Compute captures ---
def test_the_ncu_captures_name_both_gemms_and_refuse_another_choice():
    # Lesson 04's proven counters only, and the --ncu choices the captures pass
    steps = load_snippet("optimization_steps")
    for name, kernel in (("fp8_rowwise_triton_ncu", "matmul_fp8_kernel"),
                         ("fp8_rowwise_cublas_ncu", "nvjet")):  # fmt: skip
        spec = mf.CAPTURES[name]["ncu"]
        assert spec["kernel"] == kernel
        assert spec["args"][0] == "--ncu" and spec["args"][1] in mf.NCU_GEMMS
        assert set(spec["metrics"]) <= set(steps.NCU_METRICS), name
    with pytest.raises(ValueError, match="--ncu takes one of"):
        mf.profile_one_gemm("cudnn")


def test_the_page_reads_the_captures_with_the_kernels_own_warps():
    # "this kernel's 8 warps are 256 threads": the fast config, which the
    # per-row benchmark runs (fast accumulation)
    assert mf.HOPPER_CONFIGS[True]["num_warps"] == 8
    page = " ".join(PAGE.read_text(encoding="utf-8").split())
    assert "this kernel's 8 warps are 256 threads" in page
    for name in mf.CAPTURES:
        assert f"[[capture {name}]]" in page


@pytest.mark.gpu
@pytest.mark.parametrize("which", ["triton", "cublas"])
def test_the_ncu_launch_runs_the_profiled_kernel_exactly_once(which):
    import re

    from torch.profiler import ProfilerActivity, profile

    if torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("the captures are of the Hopper kernels")
    name = "fp8_rowwise_triton_ncu" if which == "triton" else "fp8_rowwise_cublas_ncu"
    kernel = mf.CAPTURES[name]["ncu"]["kernel"]
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        mf.profile_one_gemm(which)
    launches = {e.key: e.count for e in prof.key_averages() if re.search(kernel, e.key)}
    assert sum(launches.values()) == 1, launches


def _ncu_metrics(text: str) -> dict:
    import re

    found = re.findall(r"^ +([a-z][\w.]+) +(?:[\w/%]+ +)?([\d.,]+)$", text, re.M)
    return {name: float(value.replace(",", "")) for name, value in found}


def test_the_pages_reading_of_the_fp8_captures_holds_in_every_captured_run():
    # "both kernels are persistent; cuBLAS's programs are three warp groups to
    # this kernel's two; its SMs were busier (sm__throughput), and this
    # kernel's warps spent more cycles stalled at barriers per instruction"
    import json

    names = ("fp8_rowwise_triton_ncu", "fp8_rowwise_cublas_ncu")
    runs = {}
    for folder in ("timings", "reproducibility"):
        for path in sorted((REPO_ROOT / "data" / folder).glob("*.json")):
            captures = json.loads(path.read_text(encoding="utf-8")).get("captures", {})
            if set(names) <= set(captures):
                runs[str(path)] = captures
    if not runs:
        pytest.skip("no data file holds the FP8 ncu captures yet")
    for where, captures in runs.items():
        ours, cublas = (_ncu_metrics(captures[n]["text"]) for n in names)
        sms = captures[names[1]]["provenance"]["sm_count"]
        assert ours["launch__grid_size"] == cublas["launch__grid_size"] == sms, where
        assert (ours["launch__block_size"], cublas["launch__block_size"]) == (
            2 * 128,
            3 * 128,
        ), where
        busy = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
        assert cublas[busy] > ours[busy], where
        barrier = "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio"
        assert ours[barrier] > cublas[barrier], where
    page = " ".join(PAGE.read_text(encoding="utf-8").split())
    assert "cuBLAS's programs are three warp groups of 128 threads to this" in page
