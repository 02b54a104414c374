"""What Triton emits for each GPU generation, found by compiling (no GPU).

``python -m triton_course.codegen facts`` compiles the small kernels of
``codegen_probes.py`` for sm_75 … sm_90 and prints, as JSON, the properties
the course's pages state (tl.dot's instruction per architecture, what a
tensor descriptor becomes, tl.exp's unit, what num_stages changes, …).
``tests/test_compiler_claims.py`` asserts each of them, and lesson 01's
per-GPU table is rendered from ``data/codegen.json``, which
``python -m triton_course.codegen table`` writes and the same test checks
against a fresh compile: nothing in it is typed.

Must run without TRITON_INTERPRET (the interpreter replaces every kernel).
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
import warnings
from pathlib import Path

from triton_course import excerpts

PROBES = Path(__file__).with_name("codegen_probes.py")
SNIPPETS = Path(__file__).resolve().parents[1] / "snippets"
ARCHS = {75: "T4 (Turing)", 80: "A100 (Ampere)", 86: "RTX 30xx, A10 (Ampere)",
         89: "RTX 40xx, L4 (Ada)", 90: "H100, H200 (Hopper)"}  # fmt: skip
# tl.dot operand types in the per-GPU table (fp32 inputs: tf32 by default)
TABLE_DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32 (tf32)",
                "fp8e4nv": "fp8 e4m3", "fp8e5": "fp8 e5m2"}  # fmt: skip
MMA = re.compile(r"\bmma\.sync\b")
WGMMA = re.compile(r"\bwgmma\.mma_async\b")


def _probes():
    return excerpts._load(PROBES)


def compile_for(kernel, arch, signature, constexprs=None, aligned=(), **options):
    """asm of one kernel for sm_<arch>: {'ttgir', 'ptx', 'cubin', ...}."""
    return compile_kernel(kernel, arch, signature, constexprs, aligned, **options).asm


def compile_kernel(kernel, arch, signature, constexprs=None, aligned=(), **options):
    """The compiled kernel (``.asm``, ``.metadata.shared``, ...) for sm_<arch>."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    names = list(signature)
    constexprs = constexprs or {}
    source = ASTSource(
        fn=kernel,
        signature=signature,
        constexprs={(names.index(k),): v for k, v in constexprs.items()},
        attrs={(names.index(k),): [["tt.divisibility", 16]] for k in aligned},
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return triton.compile(
            source, target=GPUTarget("cuda", arch, 32), options=options or None
        )


@functools.cache  # facts() asks for some targets several times
def dot(arch, m=64, n=64, k=32, dtype="fp16", kernel="dot_kernel"):
    sig = {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": "*fp32",
           "M": "constexpr", "N": "constexpr", "K": "constexpr"}  # fmt: skip
    return compile_for(
        getattr(_probes(), kernel), arch, sig, {"M": m, "N": n, "K": k},
        aligned=("a_ptr", "b_ptr", "c_ptr"),
    )  # fmt: skip


def dot_instruction(ptx: str) -> str:
    if WGMMA.search(ptx):
        return "wgmma (Hopper tensor cores, asynchronous)"
    if MMA.search(ptx):
        return "mma.sync (tensor cores)"
    n = len(re.findall(r"\bfma\.rn\.f32\b", ptx))
    return f"FMA on the CUDA cores ({n} fma.rn.f32, no tensor-core instruction)"


def descriptor(arch):
    sig = {"x_ptr": "*fp16", "y_ptr": "*fp16", "n_rows": "i32", "n_cols": "i32",
           "BM": "constexpr", "BN": "constexpr"}  # fmt: skip
    return compile_for(
        _probes().descriptor_copy_kernel, arch, sig, {"BM": 64, "BN": 64},
        aligned=("x_ptr", "y_ptr", "n_rows", "n_cols"),
    )["ptx"]  # fmt: skip


def tile_ptx(row_unit: bool, col_unit: bool):
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "stride_row": "i32",
           "stride_col": "i32", "BM": "constexpr", "BN": "constexpr"}  # fmt: skip
    const = {"BM": 64, "BN": 64}
    aligned = ["x_ptr", "y_ptr"]
    for name, unit in (("stride_row", row_unit), ("stride_col", col_unit)):
        if unit:  # a launch specialises an integer argument equal to 1
            sig[name] = "constexpr"
            const[name] = 1
        else:
            aligned.append(name)
    return compile_for(_probes().column_tile_kernel, 80, sig, const, aligned)["ptx"]


def _acc_body(folded: bool) -> list[str]:
    sig = {"p_ptr": "*fp16", "v_ptr": "*fp16", "o_ptr": "*fp32", "alpha": "fp32",
           "M": "constexpr", "N": "constexpr", "K": "constexpr",
           "FOLDED": "constexpr"}  # fmt: skip
    ttgir = compile_for(
        _probes().acc_add_kernel, 90, sig,
        {"M": 64, "N": 64, "K": 32, "FOLDED": folded},
        aligned=("p_ptr", "v_ptr", "o_ptr"),
    )["ttgir"]  # fmt: skip
    lines = [re.sub(r"\s*loc\(.*?\)\s*$", "", ln) for ln in ttgir.splitlines()]
    return [ln for ln in lines if ln.strip() and not ln.startswith("#loc")]


def _plain_loop(arch, stages):
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n_cols": "i32",
           "BLOCK": "constexpr"}  # fmt: skip
    return compile_for(
        _probes().plain_loop_kernel, arch, sig, {"BLOCK": 1024},
        aligned=("x_ptr", "n_cols"), num_stages=stages,
    )["ptx"]  # fmt: skip


def _ranged_loop(arch, stages):
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n_cols": "i32",
           "BLOCK": "constexpr", "STAGES": "constexpr"}  # fmt: skip
    return compile_for(
        _probes().ranged_loop_kernel, arch, sig, {"BLOCK": 1024, "STAGES": stages},
        aligned=("x_ptr", "n_cols"),
    )["ptx"]  # fmt: skip


def _rowsum_v2(stages):
    """Lesson 04's row-sum kernel as one of v3's configs launches it on sm_90."""
    kernel = excerpts._load(SNIPPETS / "optimization_steps.py").rowsum_tile_kernel
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n_rows": "i32",
           "n_cols": "i32", "stride_row": "i32",
           "BLOCK_M": "constexpr", "BLOCK_N": "constexpr"}  # fmt: skip
    return compile_for(
        kernel, 90, sig, {"BLOCK_M": 8, "BLOCK_N": 512},
        aligned=("x_ptr", "out_ptr", "n_cols", "stride_row"),
        num_warps=4, num_stages=stages,
    )["ptx"]  # fmt: skip


def _fp8_dot(promote_every):
    sig = {"a_ptr": "*fp8e4nv", "b_ptr": "*fp8e4nv", "c_ptr": "*fp32",
           "M": "constexpr", "N": "constexpr", "K": "constexpr",
           "PROMOTE_EVERY": "constexpr"}  # fmt: skip
    asm = compile_for(
        _probes().fp8_dot_kernel, 90, sig,
        {"M": 64, "N": 64, "K": 128, "PROMOTE_EVERY": promote_every},
        aligned=("a_ptr", "b_ptr", "c_ptr"),
    )  # fmt: skip
    acc = re.search(r"maxNumImpreciseAcc = (\d+)", asm["ttgir"])
    return {
        "max_num_imprecise_acc": int(acc.group(1)) if acc else None,
        "fp32_adds": len(re.findall(r"\badd\.(?:rn\.)?f32\b", asm["ptx"])),
    }


def dot_by_dtype(arch: int, dtype: str) -> str:
    """What a 64x64x32 tl.dot of two `dtype` tiles becomes, or the compiler's no."""
    try:
        ptx = dot(arch, dtype=dtype)["ptx"]
    except Exception as exc:  # noqa: BLE001 - the refusal is the fact
        return "refused: " + str(exc).strip().splitlines()[-1][:160]
    found = re.search(r"(?:wgmma\.mma_async|mma\.sync)\S*", ptx)
    if not found:
        return dot_instruction(ptx)
    # the operand type the tensor cores see, e.g. ...f32.bf16.bf16 -> bf16
    operand = re.search(r"\.f32\.(\w+)\.\w+", found.group(0)).group(1)
    return f"{dot_instruction(ptx).split(' (')[0]} on {operand} operands"


# copy_2d's launch arguments for three views of a 16384 x 8192 float32 matrix
COPY_2D_VIEWS = {
    "x": dict(n_rows=16384, n_cols=8192, stride_xr=8192, stride_xc=1,
              stride_or=8192, stride_oc=1),
    "x.t()": dict(n_rows=8192, n_cols=16384, stride_xr=1, stride_xc=8192,
                  stride_or=16384, stride_oc=1),
    "x[:, ::2].t()": dict(n_rows=4096, n_cols=16384, stride_xr=2, stride_xc=8192,
                          stride_or=16384, stride_oc=1),
}  # fmt: skip


def memory_access_loads(
    args: dict, kernel="copy_tiles_kernel", block=(32, 128)
) -> dict:
    """A kernel of lesson 03's memory_access.py, specialised as a launch with
    `args` is: an integer equal to 1 becomes the constant 1, one divisible by
    16 is marked so (what Triton's launcher does), compiled for sm_90."""
    kernel = getattr(excerpts._load(SNIPPETS / "memory_access.py"), kernel)
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32"}
    const = {"BLOCK_R": block[0], "BLOCK_C": block[1]}
    aligned = ["x_ptr", "out_ptr"]
    for name, value in args.items():
        sig[name] = "constexpr" if value == 1 else "i32"
        if value == 1:
            const[name] = 1
        elif value % 16 == 0:
            aligned.append(name)
    sig.update(BLOCK_R="constexpr", BLOCK_C="constexpr")
    asm = compile_for(kernel, 90, sig, const, aligned)
    loads = re.findall(r"\bld\.global\S*", asm["ptx"])
    wide = [ld for ld in loads if re.search(r"\.v[248]\b", ld)]
    return {
        "shared_memory": bool(re.search(r"\b(?:st|ld)\.shared", asm["ptx"])),
        "convert_layout": len(re.findall(r"ttg\.convert_layout", asm["ttgir"])),
        "wide_loads": len(wide),
        "scalar_loads": len(loads) - len(wide),
    }


def softmax_loads(n_cols: int) -> dict:
    """The series softmax kernel, float16, as launched on a row of n_cols
    (BLOCK_SIZE 4096, 8 warps, row strides = n_cols), compiled for sm_90:
    its global loads and stores per thread, by width."""
    kernel = excerpts._load(SNIPPETS / "softmax.py").softmax_kernel
    sig = {"x_ptr": "*fp16", "out_ptr": "*fp16", "n_cols": "i32",
           "x_row_stride": "i32", "out_row_stride": "i32",
           "BLOCK_SIZE": "constexpr"}  # fmt: skip
    ints = ("n_cols", "x_row_stride", "out_row_stride")
    aligned = ["x_ptr", "out_ptr"] + ([*ints] if n_cols % 16 == 0 else [])
    ptx = compile_for(
        kernel, 90, sig, {"BLOCK_SIZE": 4096}, aligned, num_warps=8
    )["ptx"]  # fmt: skip
    found = {}
    for op in ("ld", "st"):
        for width in ("v4.b32", "b16"):
            pattern = rf"\b{op}\.global(?:\.\w+)*?\.{re.escape(width)}\b"
            found[f"{op}.{width}"] = len(re.findall(pattern, ptx))
    return found


def _k8_error() -> str:
    try:
        dot(80, m=16, n=16, k=8)
    except Exception as exc:  # noqa: BLE001 - the message is the fact
        return str(exc)
    return ""


# warp_group_dot's A operand: shared memory (memdesc), or registers (tensor)
_WGMMA_A = re.compile(r"ttng\.warp_group_dot [^{]*\{[^}]*\} : (!ttg\.memdesc|tensor)<")
_LN_TILE = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}


def _dots_on_sm90(compiled) -> dict:
    found = _WGMMA_A.findall(compiled.asm["ttgir"])
    return {
        "a_from_shared": found.count("!ttg.memdesc"),
        "a_from_registers": found.count("tensor"),
        "tma_loads": "cp.async.bulk.tensor" in compiled.asm["ptx"],
        "shared_bytes": compiled.metadata.shared,
    }


def layernorm_linear_kernels() -> dict:
    """Lesson 03's three GEMMs on sm_90 at one tile shape (128 x 256 x 64,
    8 warps, 3 stages): where tl.dot's A operand comes from, TMA, shared memory."""
    fold = excerpts._load(SNIPPETS / "layernorm_linear_fold.py")
    prologue = excerpts._load(SNIPPETS / "layernorm_linear.py")
    tma = excerpts._load(SNIPPETS / "matmul_tma.py")
    opts = {"num_warps": 8, "num_stages": 3}
    ptrs = lambda *names, t="*fp16": dict.fromkeys(names, t)  # noqa: E731
    const = lambda *names: dict.fromkeys(names, "constexpr")  # noqa: E731
    sig = (
        ptrs("x_ptr", "w_ptr")
        | ptrs("colsum_ptr", "bias_ptr", "mean_ptr", "rstd_ptr", t="*fp32")
        | ptrs("out_ptr")
        | dict.fromkeys(("M", "N", "K"), "i32")
        | {"fold_limit": "fp32"}
    )
    sig |= const(*_LN_TILE, "NUM_PROGRAMS")
    pointers = lambda sig: [n for n in sig if n.endswith("_ptr")]  # noqa: E731
    folded = compile_kernel(
        fold.layernorm_linear_fold_kernel, 90, sig,
        _LN_TILE | {"NUM_PROGRAMS": 132}, pointers(sig), **opts,
    )  # fmt: skip
    sig = (
        ptrs("x_ptr", "w_ptr", "bias_ptr", "gamma_ptr", "beta_ptr")
        | ptrs("mean_ptr", "rstd_ptr", t="*fp32")
        | ptrs("out_ptr")
        | dict.fromkeys(("M", "N", "K", "stride_xm", "stride_wn", "stride_om"), "i32")
        | const("HAS_BIAS", "PRECISION", "NORMALIZE", *_LN_TILE)
    )
    flags = {
        "HAS_BIAS": True,
        "PRECISION": "tf32",
        "NORMALIZE": True,
    }
    before = compile_kernel(
        prologue.layernorm_linear_kernel, 90, sig, flags | _LN_TILE,
        pointers(sig), **opts,
    )  # fmt: skip
    sig = ptrs("a_ptr", "b_ptr", "c_ptr") | dict.fromkeys(("M", "N", "K"), "i32")
    sig |= const(*_LN_TILE, "B_KMAJOR", "INPUT_PRECISION",
                 "EPILOGUE_SPLIT", "NUM_PROGRAMS", "FLATTEN")  # fmt: skip
    gemm = compile_kernel(
        tma.matmul_tma_persistent_kernel, 90, sig,
        _LN_TILE | {"B_KMAJOR": True, "INPUT_PRECISION": "tf32",
                    "EPILOGUE_SPLIT": False, "NUM_PROGRAMS": 132, "FLATTEN": False},
        pointers(sig), **opts,
    )  # fmt: skip
    return {
        "fold": _dots_on_sm90(folded),
        "prologue": _dots_on_sm90(before),
        "tma_gemm": _dots_on_sm90(gemm),
    }


def facts() -> dict:
    """Every property the pages state, from fresh compiles."""
    import triton

    out: dict = {"triton": triton.__version__}
    dot_ptx = {a: dot(a)["ptx"] for a in ARCHS}  # each target compiled once
    out["dot_fp16"] = {str(a): dot_instruction(ptx) for a, ptx in dot_ptx.items()}
    out["dot_sm75_fma"] = len(re.findall(r"\bfma\.rn\.f32\b", dot_ptx[75]))
    out["dot_1x16x16_sm80"] = dot_instruction(dot(80, m=1, n=16, k=16)["ptx"])
    out["dot_k8_error"] = _k8_error()
    out["dot_trans_sm90_memdesc_trans"] = (
        "memdesc_trans" in (dot(90, kernel="dot_trans_kernel")["ttgir"])
    )
    shared_op = re.compile(r"\b(?:ldmatrix|ld\.shared|st\.shared)")
    out["dot_trans_shared_memory_instructions"] = {
        str(a): {
            k: len(shared_op.findall(dot(a, kernel=k)["ptx"]))
            for k in ("dot_kernel", "dot_trans_kernel")
        }
        for a in (80, 90)
    }
    out["acc_fold_same_ttgir"] = _acc_body(True) == _acc_body(False)
    desc = {str(a): descriptor(a) for a in ARCHS}
    out["descriptor_tma"] = {a: "cp.async.bulk.tensor" in p for a, p in desc.items()}
    out["descriptor_ld_global"] = {a: "ld.global" in p for a, p in desc.items()}
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "BLOCK": "constexpr"}
    exp = compile_for(_probes().exp_kernel, 90, sig, {"BLOCK": 1024})
    out["exp_ptx_ex2_approx"] = "ex2.approx" in exp["ptx"]
    out["exp_sass_mufu_ex2"] = (
        "MUFU.EX2" in excerpts.disassemble(exp["cubin"])
        if excerpts.cuobjdump()
        else None
    )
    out["plain_loop_same_ptx_for_stages_1_2_4"] = {
        str(a): _plain_loop(a, 1) == _plain_loop(a, 2) == _plain_loop(a, 4)
        for a in (80, 90)
    }
    out["rowsum_v2_same_ptx_for_stages_1_2_3"] = (
        _rowsum_v2(1) == _rowsum_v2(2) == _rowsum_v2(3)
    )
    out["tl_range_cp_async_by_stages"] = {
        str(st): len(re.findall(r"\bcp\.async\.", _ranged_loop(80, st)))
        for st in (1, 2, 3)
    }
    out["fp8_sm90"] = {"default": _fp8_dot(0), "promote_every_32": _fp8_dot(32)}
    out["dot_fp32_ieee"] = {
        str(a): dot_instruction(dot(a, dtype="fp32", kernel="ieee_dot_kernel")["ptx"])
        for a in (80, 90)
    }
    out["dot_by_dtype"] = {
        dt: {str(a): dot_by_dtype(a, dt) for a in ARCHS} for dt in TABLE_DTYPES
    }
    out["softmax_fp16_loads"] = {str(n): softmax_loads(n) for n in (4096, 3000)}
    out["copy_2d"] = {view: memory_access_loads(a) for view, a in COPY_2D_VIEWS.items()}
    out["transpose_tiled"] = memory_access_loads(
        dict(n_rows=16384, n_cols=8192, stride_xr=8192, stride_or=16384),
        kernel="transpose_tiled_kernel", block=(64, 64),
    )  # fmt: skip
    out["tile_v4_loads"] = {
        "axis 1 contiguous": "ld.global.v4" in tile_ptx(False, True),
        "axis 0 contiguous": "ld.global.v4" in tile_ptx(True, False),
        "no unit stride": "ld.global.v" in tile_ptx(False, False),
    }
    out["layernorm_linear_sm90"] = layernorm_linear_kernels()
    spec = excerpts._matmul_spec()
    ptx = excerpts.compile_stages(spec)["ptx"]
    out["gemm_excerpt"] = {
        "unit_strides_constexpr_1": all(
            spec.constexprs.get(n) == 1 for n in ("stride_ak", "stride_bn", "stride_cn")
        ),
        "cp_async": len(re.findall(r"\bcp\.async\.", ptx)),
        "wgmma_wait_1": bool(re.search(r"wgmma\.wait_group\.sync\.aligned\s+1\b", ptx)),
    }
    return out


# The course compiles with two tritons: CI's (3.9, the CPU venv) and the GPU
# image's (3.6, the runner's test lane). A test of a fact on which they
# differ states both values and asserts the one of the triton running.
CHECKED_TRITONS = ("3.6", "3.9")


def for_triton(values: dict, version: str | None = None):
    """``values[major.minor]`` of the running triton (or of ``version``).
    A triton that no one compiled the fact with is an error, not a guess."""
    if version is None:
        import triton

        version = triton.__version__
    key = ".".join(version.split(".")[:2])
    if set(values) != set(CHECKED_TRITONS):
        raise ValueError(f"give a value for each of {CHECKED_TRITONS}: {values}")
    if key not in values:
        raise LookupError(
            f"triton {version}: this fact was checked with {CHECKED_TRITONS} "
            "only; compile it with this version and add its value"
        )
    return values[key]


def short_dot(found: str) -> str:
    """A table cell for dot_by_dtype's answer: 'wgmma, bf16', 'FMA', 'refused'."""
    if found.startswith("refused"):
        return "refused"
    if found.startswith("FMA"):
        return "FMA"
    instruction, operand = found.split(" on ")
    return f"{instruction}, {operand.split()[0]}"


def table(f: dict) -> dict:
    """Lesson 01's per-GPU table, from the facts."""
    rows = []
    for arch, name in ARCHS.items():
        a = str(arch)
        row = {"arch": f"sm_{arch}", "gpus": name}
        row["dot"] = {dt: short_dot(f["dot_by_dtype"][dt][a]) for dt in TABLE_DTYPES}
        row["descriptor"] = "TMA" if f["descriptor_tma"][a] else "ld.global"
        rows.append(row)
    return {
        "triton": f["triton"],
        "written_by": "python -m triton_course.codegen table",
        "dtypes": TABLE_DTYPES,
        "rows": rows,
        "exp": "ex2.approx (MUFU.EX2: the special-function unit)"
        if f["exp_ptx_ex2_approx"] else "other",
        "fp8_sm90_max_num_imprecise_acc_default":
            f["fp8_sm90"]["default"]["max_num_imprecise_acc"],
    }  # fmt: skip


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if os.environ.get("TRITON_INTERPRET") == "1":
        print(
            "codegen: unset TRITON_INTERPRET: kernels must be compiled", file=sys.stderr
        )
        return 2
    f = facts()
    if argv[:1] == ["table"]:
        print(json.dumps(table(f), indent=1))
    else:
        print(json.dumps(f, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
