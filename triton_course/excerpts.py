"""Excerpts of every compiler stage of a course kernel, made without a GPU.

``triton.compile`` runs the whole NVIDIA pipeline on the CPU when it is given
an explicit target: Python AST -> Triton IR (ttir) -> TritonGPU IR (ttgir) ->
LLVM IR (llir) -> PTX -> cubin. The cubin is disassembled to SASS with the
``cuobjdump`` that ships inside triton's NVIDIA backend. Each stage is trimmed
to the kernel body (debug locations, metadata and long runs of look-alike
lines removed) and written to ``docs/assets/excerpts/<name>.<stage>.txt``,
which the intro page embeds with ``--8<-- "<name>.<stage>.txt"``.

    python -m triton_course.excerpts build   # (re)write the excerpt files
    python -m triton_course.excerpts check   # fail if they differ from a rebuild

The committed excerpts come from the triton version named in their first line;
another version gives different (still valid) text, so ``check`` compares only
when the versions match.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from triton_course.snippet_modules import load_file

REPO_ROOT = Path(__file__).resolve().parent.parent
SNIPPETS_DIR = REPO_ROOT / "snippets"
EXCERPTS_DIR = REPO_ROOT / "docs" / "assets" / "excerpts"
STAGES = ("ast", "ttir", "ttgir", "llir", "ptx", "sass")
TARGET = ("cuda", 90, 32)  # backend, compute capability (H100 = sm_90), warp size
KEEP_IN_A_RUN = 2  # a run of look-alike lines keeps this many, then "... N more"


@dataclass
class KernelSpec:
    """One kernel to compile: where it lives and how it is specialised."""

    name: str  # excerpt file stem: docs/assets/excerpts/<name>.<stage>.txt
    snippet: str  # file in snippets/
    kernel: str  # the @triton.jit function in it
    signature: dict  # argument -> triton type ("*fp32", "i32", "constexpr")
    constexprs: dict  # constexpr argument -> value
    aligned: tuple = ()  # arguments the launcher would mark divisible by 16
    describe: str = ""  # second header line: what specialisation this is
    stages: tuple = STAGES
    grep: str = ""  # if set, the PTX/SASS excerpt keeps only lines matching it
    ast_statements: int = 4  # the AST excerpt shows these first statements + the last
    options: dict = field(default_factory=dict)  # num_warps, num_stages...


VECTOR_ADD = KernelSpec(
    name="vector_add",
    snippet="vector_add.py",
    kernel="vector_add_kernel",
    signature={
        "x_ptr": "*fp32",
        "y_ptr": "*fp32",
        "out_ptr": "*fp32",
        "n_elements": "i32",
        "BLOCK_SIZE": "constexpr",
    },
    constexprs={"BLOCK_SIZE": 1024},
    # What a launch with torch tensors and n = 2**20 gives: torch's allocations
    # are 16-byte aligned, and n is a multiple of 16.
    aligned=("x_ptr", "y_ptr", "out_ptr", "n_elements"),
    describe="vector_add_kernel, float32, BLOCK_SIZE=1024, num_warps=4, "
    "pointers and n_elements divisible by 16",
)

# The same kernel when n_elements is NOT a multiple of 16 (e.g. n = 1000):
# the compiler can no longer prove that four neighbouring lanes share a mask
# value, so the loads are no longer vectorised. Only the PTX is kept.
VECTOR_ADD_RAGGED = KernelSpec(
    name="vector_add_ragged",
    snippet="vector_add.py",
    kernel="vector_add_kernel",
    signature=VECTOR_ADD.signature,
    constexprs=VECTOR_ADD.constexprs,
    aligned=("x_ptr", "y_ptr", "out_ptr"),
    describe="vector_add_kernel, float32, BLOCK_SIZE=1024, "
    "n_elements NOT divisible by 16",
    stages=("ptx",),
    grep=r"(ld|st)\.global",
)


def _matmul_spec() -> KernelSpec | None:
    """The tiled-GEMM lesson's kernel, if its snippet exists (tl.dot -> wgmma)."""
    path = SNIPPETS_DIR / "matmul.py"
    if not path.is_file():
        return None
    module = _load(path)
    kernel_name = next(
        (n for n in ("matmul_kernel", "_matmul_kernel") if hasattr(module, n)), None
    )
    if kernel_name is None:
        return None
    kernel = getattr(module, kernel_name)
    fn = getattr(kernel, "fn", kernel)
    signature, constexprs, aligned = {}, {}, []
    # Argument types by name convention: *_ptr are fp16 pointers, stride_* and
    # sizes are i32, UPPER_CASE are constexpr tile sizes.
    tiles = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64,
             "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_SIZE_M": 8,
             "GROUP_M": 8, "INPUT_PRECISION": "tf32", "UPCAST": False}  # fmt: skip
    constexpr_names = {p.name for p in kernel.params if p.is_constexpr}
    for p in inspect.signature(fn).parameters.values():
        if p.name.endswith("_ptr"):
            signature[p.name] = "*fp16"
            aligned.append(p.name)
        elif p.name in constexpr_names:
            signature[p.name] = "constexpr"
            if p.name in tiles:
                constexprs[p.name] = tiles[p.name]
            elif p.default is not inspect.Parameter.empty:
                constexprs[p.name] = p.default
            else:
                return None  # an unknown constexpr: leave the excerpt out
        elif p.name in ("stride_ak", "stride_bn", "stride_cn"):
            # A launch with contiguous tensors passes 1 here, and Triton
            # specialises an integer argument equal to 1 as a constant: the
            # excerpt must be that kernel (only then does it pipeline).
            signature[p.name] = "constexpr"
            constexprs[p.name] = 1
        else:
            # sizes and row strides of 4096-sized matrices are multiples of 16
            signature[p.name] = "i32"
            aligned.append(p.name)
    return KernelSpec(
        name="matmul",
        snippet="matmul.py",
        kernel=kernel_name,
        signature=signature,
        constexprs=constexprs,
        aligned=tuple(aligned),
        describe=f"{kernel_name}, float16 inputs, tiles "
        + ", ".join(f"{k}={v}" for k, v in constexprs.items() if k in tiles)
        + ", num_warps=8, num_stages=3; unit strides specialised to 1, sizes "
        "and other strides divisible by 16, as a launch on contiguous "
        "4096-sized matrices compiles it",
        stages=("ptx", "sass"),
        grep=r"wgmma|HGMMA|mma",
        options={"num_warps": 8, "num_stages": 3},
    )


# ------------------------------------------------------------ compiling ---
_load = load_file  # one module per snippet file per process, shared with the tests


def triton_version() -> str:
    import triton

    return triton.__version__


def header(spec: KernelSpec) -> str:
    backend, arch, _ = TARGET
    lines = [f"// triton {triton_version()}, target {backend} sm_{arch}"]
    if spec.describe:
        lines.append(f"// {spec.describe}")
    return "\n".join(lines)


def compile_stages(spec: KernelSpec) -> dict[str, str]:
    """Raw text of every stage: {'ttir': ..., 'ptx': ..., 'sass': ...}."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    kernel = getattr(_load(SNIPPETS_DIR / spec.snippet), spec.kernel)
    names = list(spec.signature)
    constexprs = {(names.index(k),): v for k, v in spec.constexprs.items()}
    divisible = [["tt.divisibility", 16]]
    attrs = {(names.index(k),): divisible for k in spec.aligned}
    source = ASTSource(
        fn=kernel, signature=spec.signature, constexprs=constexprs, attrs=attrs
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # triton 3.9's FP-fusion default notice
        compiled = triton.compile(
            source, target=GPUTarget(*TARGET), options=spec.options or None
        )
    stages = {k: compiled.asm[k] for k in ("ttir", "ttgir", "llir", "ptx")}
    stages["sass"] = disassemble(compiled.asm["cubin"])
    return stages


def cuobjdump() -> str:
    import triton

    bundled = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    if bundled.is_file():
        return str(bundled)
    found = shutil.which("cuobjdump")
    if found is None:
        raise RuntimeError("cuobjdump not found (neither in triton nor on PATH)")
    return found


def disassemble(cubin: bytes) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        done = subprocess.run(
            [cuobjdump(), "-sass", str(path)],
            capture_output=True,
            text=True,
            check=True,
        )
    return done.stdout


# ------------------------------------------------------------- trimming ---
def _strip_locs(line: str) -> str:
    """Remove MLIR ` loc(...)` annotations (they nest parentheses)."""
    out, i = [], 0
    while True:
        j = line.find(" loc(", i)
        if j < 0:
            out.append(line[i:])
            return "".join(out)
        out.append(line[i:j])
        depth, k = 0, j + 4
        while k < len(line):
            depth += {"(": 1, ")": -1}.get(line[k], 0)
            k += 1
            if depth == 0:
                break
        i = k


def _opcode(stage: str, line: str) -> str:
    """What a line does, to recognise runs of look-alike lines."""
    text = line.strip()
    if stage == "sass":
        text = re.sub(r"^/\*[0-9a-f]+\*/\s*", "", text)
        text = re.sub(r"^@!?U?P\w+\s+", "", text)
        return text.split(" ")[0]
    if stage == "llir":
        text = re.sub(r"^%\w+ = ", "", text)
        if "asm sideeffect" in text:
            return "asm:" + re.sub(r"\W\$?\d.*", "", text.split('"')[1])
    if stage == "ptx":
        text = re.sub(r"^@%p\d+\s+", "", text)
        return text.split()[0] if text else ""
    return text.split(" ")[0]


def collapse_runs(stage: str, lines: list[str], keep: int = KEEP_IN_A_RUN) -> list[str]:
    """Keep the first ``keep`` lines of each run of same-opcode lines."""
    comment = {"llir": ";", "sass": "//", "ptx": "//"}.get(stage, "//")
    out, i = [], 0
    while i < len(lines):
        j = i
        op = _opcode(stage, lines[i])
        while j < len(lines) and _opcode(stage, lines[j]) == op:
            j += 1
        run = lines[i:j]
        if len(run) > keep + 1:
            indent = re.match(r"\s*", run[0]).group(0)
            out += run[:keep] + [
                f"{indent}{comment} ... {len(run) - keep} more like this"
            ]
        else:
            out += run
        i = j
    return out


def _function_body(text: str, start: str) -> list[str]:
    """Lines from the first one containing ``start`` to its closing brace."""
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if start in line)
    depth = 0
    for last in range(first, len(lines)):
        depth += lines[last].count("{") - lines[last].count("}")
        if depth == 0 and "}" in lines[last]:
            return lines[first : last + 1]
    return lines[first:]


def trim_mlir(text: str, kernel: str) -> list[str]:
    """ttir / ttgir: layouts, module attributes and the function, no locations."""
    keep = [
        line
        for line in text.splitlines()
        if line.startswith("#") and "loc(" not in line
    ]
    module = next((line for line in text.splitlines() if line.startswith("module")), "")
    if module.strip() != "module {":
        keep.append(_strip_locs(module))
    keep += [_strip_locs(line) for line in _function_body(text, f"@{kernel}(")]
    return keep


def trim_llir(text: str, kernel: str) -> list[str]:
    body = _function_body(text, f"@{kernel}(")
    body = [re.sub(r",? !dbg !\d+", "", line) for line in body]
    body = [re.sub(r" #\d+(?= |$)", "", line) for line in body]
    return collapse_runs("llir", body)


def trim_ptx(text: str, kernel: str, grep: str = "") -> list[str]:
    body = _function_body(text, f".entry {kernel}(")
    drop = ("//", ".loc", "$L__", ".file")
    body = [line for line in body if line.strip() and not line.strip().startswith(drop)]
    body = [re.sub(r"(\S)\t+", r"\1 ", line).replace("\t", "    ") for line in body]
    # a 64-register accumulator list reads better as its first and last names
    body = [
        re.sub(r"\{(%r\d+),(?:%r\d+,)+(%r\d+)\}", r"{\1, ..., \2}", ln) for ln in body
    ]
    if grep:
        body = [line for line in body if re.search(grep, line)]
        return collapse_runs("ptx", body, keep=4)
    return collapse_runs("ptx", body)


def trim_sass(text: str, grep: str = "") -> list[str]:
    lines = []
    for line in text.splitlines():
        match = re.match(r"\s*/\*([0-9a-f]{4})\*/\s+(.*?)\s*;?\s*/\*.*\*/\s*$", line)
        if not match:
            continue
        instruction = re.sub(r"\s+", " ", match.group(2)).rstrip(" ;")
        if instruction.startswith(("NOP", "BRA")):
            continue  # the padding after the last EXIT
        lines.append(f"/*{match.group(1)}*/ {instruction} ;")
    if grep:
        lines = [line for line in lines if re.search(grep, line)]
    return collapse_runs("sass", lines)


# ----------------------------------------------------------------- AST ----
def _compact(node, indent: int = 0) -> str:
    """ast.dump without ctx=Load()/empty fields, one nested node per line."""
    pad = "  " * indent
    if isinstance(node, list):
        if not node:
            return "[]"
        items = [_compact(n, indent + 1) for n in node]
        if all("\n" not in s for s in items) and sum(map(len, items)) < 60:
            return "[" + ", ".join(items) + "]"
        return "[\n" + ",\n".join("  " * (indent + 1) + s for s in items) + "]"
    if not isinstance(node, ast.AST):
        return repr(node)
    fields = []
    for name, value in ast.iter_fields(node):
        if name in ("ctx", "type_comment", "kind", "type_params") or value in (
            None,
            [],
        ):
            continue
        fields.append((name, value))
    flat = (
        f"{type(node).__name__}("
        + ", ".join(f"{n}={_compact(v, 0)}" for n, v in fields)
        + ")"
    )
    if "\n" not in flat and len(pad) + len(flat) <= 80:
        return flat
    inner = ",\n".join(f"{pad}  {n}={_compact(v, indent + 1)}" for n, v in fields)
    return f"{type(node).__name__}(\n{inner})"


def _is_docstring(stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)


def ast_excerpt(spec: KernelSpec) -> list[str]:
    """The kernel's Python AST: its arguments, then its first statements."""
    source = (SNIPPETS_DIR / spec.snippet).read_text(encoding="utf-8")
    tree = ast.parse(source)
    fn = next(
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef) and n.name == spec.kernel
    )
    src_lines = source.splitlines()
    decorator = ast.unparse(fn.decorator_list[0])
    out = [f"FunctionDef(name={fn.name!r}, decorator_list=[{decorator}],", "  args=["]
    out += [f"    {_compact(a, 2)}," for a in fn.args.args]
    out += ["  ],", "  body=["]
    statements = [s for s in fn.body if not _is_docstring(s)]
    shown = statements[: spec.ast_statements]
    skipped = len(statements) - len(shown) - 1
    for stmt in shown + statements[-1:]:
        if stmt is statements[-1] and skipped > 0:
            out.append(f"    # ... {skipped} more statement{'s' * (skipped > 1)} ...")
        out.append("    # " + src_lines[stmt.lineno - 1].strip().split("  #")[0])
        out += ["    " + line for line in _compact(stmt, 0).splitlines()]
    out.append("  ])")
    return out


# ---------------------------------------------------------------- build ---
def excerpts(spec: KernelSpec) -> dict[str, str]:
    """{stage: excerpt text with its header}, for every stage of ``spec``."""
    raw = compile_stages(spec) if set(spec.stages) - {"ast"} else {}
    bodies = {
        "ast": lambda: ast_excerpt(spec),
        "ttir": lambda: trim_mlir(raw["ttir"], spec.kernel),
        "ttgir": lambda: trim_mlir(raw["ttgir"], spec.kernel),
        "llir": lambda: trim_llir(raw["llir"], spec.kernel),
        "ptx": lambda: trim_ptx(raw["ptx"], spec.kernel, spec.grep),
        "sass": lambda: trim_sass(raw["sass"], spec.grep),
    }
    result = {}
    for stage in spec.stages:
        body = textwrap.dedent("\n".join(line.rstrip() for line in bodies[stage]()))
        result[stage] = header(spec) + "\n" + body.strip("\n") + "\n"
    return result


def specs() -> list[KernelSpec]:
    found = [VECTOR_ADD, VECTOR_ADD_RAGGED]
    # The GEMM excerpt is built once someone has committed it (build --matmul):
    # until then snippets/matmul.py may still be changing under its author.
    if (EXCERPTS_DIR / "matmul.ptx.txt").exists():
        matmul = _matmul_spec()
        if matmul is not None:
            found.append(matmul)
    return found


def build(
    out_dir: Path = EXCERPTS_DIR, only: list[KernelSpec] | None = None
) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for spec in only or specs():
        for stage, text in excerpts(spec).items():
            path = out_dir / f"{spec.name}.{stage}.txt"
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written


def committed_version(path: Path) -> str | None:
    first = path.read_text(encoding="utf-8").splitlines()[0] if path.exists() else ""
    match = re.match(r"// triton (\S+),", first)
    return match.group(1) if match else None


def check() -> list[str]:
    """Differences between the committed excerpts and a fresh build."""
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        for path in build(Path(tmp)):
            committed = EXCERPTS_DIR / path.name
            version = committed_version(committed)
            if version is None:
                problems.append(f"{committed} is missing or has no header")
            elif version != triton_version():
                problems.append(
                    f"{committed.name}: made with triton {version}, this is "
                    f"{triton_version()}; compare in the pinned test environment"
                )
            elif committed.read_text(encoding="utf-8") != path.read_text(
                encoding="utf-8"
            ):
                problems.append(f"{committed.name} differs from a rebuild")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["build", "check"])
    parser.add_argument("--out", type=Path, default=EXCERPTS_DIR, help="build here")
    parser.add_argument("--matmul", action="store_true", help="add snippets/matmul.py")
    args = parser.parse_args(argv)
    if os.environ.get("TRITON_INTERPRET") == "1":
        # @triton.jit would hand back interpreter functions, which do not compile
        parser.error(
            "unset TRITON_INTERPRET: this runs the compiler, not the interpreter"
        )
    if args.command == "build":
        only = specs()
        if args.matmul and not any(s.name == "matmul" for s in only):
            only += [s for s in [_matmul_spec()] if s is not None]
        for path in build(args.out, only):
            print(f"wrote {path}")
        return 0
    problems = check()
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print("rebuild with: python -m triton_course.excerpts build", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
