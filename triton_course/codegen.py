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

import json
import os
import re
import sys
import warnings
from pathlib import Path

from triton_course import excerpts

PROBES = Path(__file__).with_name("codegen_probes.py")
ARCHS = {75: "T4 (Turing)", 80: "A100 (Ampere)", 86: "RTX 30xx, A10 (Ampere)",
         89: "RTX 40xx, L4 (Ada)", 90: "H100, H200 (Hopper)"}  # fmt: skip
MMA = re.compile(r"\bmma\.sync\b")
WGMMA = re.compile(r"\bwgmma\.mma_async\b")


def _probes():
    return excerpts._load(PROBES)


def compile_for(kernel, arch, signature, constexprs=None, aligned=(), **options):
    """asm of one kernel for sm_<arch>: {'ttgir', 'ptx', 'cubin', ...}."""
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
        ).asm


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


def _k8_error() -> str:
    try:
        dot(80, m=16, n=16, k=8)
    except Exception as exc:  # noqa: BLE001 - the message is the fact
        return str(exc)
    return ""


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
    out["tile_v4_loads"] = {
        "axis 1 contiguous": "ld.global.v4" in tile_ptx(False, True),
        "axis 0 contiguous": "ld.global.v4" in tile_ptx(True, False),
        "no unit stride": "ld.global.v" in tile_ptx(False, False),
    }
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


def table(f: dict) -> dict:
    """Lesson 01's per-GPU table, from the facts."""
    rows = []
    for arch, name in ARCHS.items():
        a = str(arch)
        rows.append({
            "arch": f"sm_{arch}",
            "gpus": name,
            "dot_fp16": f["dot_fp16"][a],
            "descriptor": "TMA (cp.async.bulk.tensor)" if f["descriptor_tma"][a]
            else "ordinary loads (ld.global), no TMA",
        })  # fmt: skip
    return {
        "triton": f["triton"],
        "written_by": "python -m triton_course.codegen table",
        "rows": rows,
        "exp": "ex2.approx (MUFU.EX2: the special-function unit)"
        if f["exp_ptx_ex2_approx"] else "other",
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
