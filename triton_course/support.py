"""Which of the course's kernels run on which GPU, found by compiling (no GPU).

Two steps, in two processes:

1. ``record`` (under TRITON_INTERPRET=1): every launcher of every snippet is
   called on small CPU tensors with each config its autotuner or its own
   choice can pick (``PLANS``), and each kernel launch it makes is written
   down (argument types, constexprs, warps, stages) instead of being run.
2. ``compile``: each recorded launch is compiled for sm_75, sm_80, sm_86, sm_89
   and sm_90 (``triton.compile`` with a ``GPUTarget``, as lesson 01's table
   is) and its shared memory compared with that architecture's per-block limit.

    python -m triton_course.support table         # update data/support.json
    python -m triton_course.support table --full  # recompile all of it
    python -m triton_course.support check         # quick: is it current? (below)
    python -m triton_course.support check --full  # recompile every row and compare

``table`` compiles every launch for every target (about 8 CPU-minutes, or
only the launches of the snippets changed since the stored table) and
records what it compiled from (``inputs``: triton's version, this code, and
each snippet's syntax tree without comments or docstrings). The quick check,
which CI runs (``tests/test_support.py``), records the launches again, fails
if any launch, refusal or input differs from the stored table, and
recompiles a sample (per snippet, the launch and target nearest a
shared-memory limit; ties take the targets in turn, so every target is
compiled) which must match the stored rows. Each lesson
renders its snippets' rows with ``[[support SNIPPET]]`` (hooks/codegen.py).
Nothing in the table is typed.

Launchers written for the interpreter set two flags only there (UPCAST,
UPCAST_DOT: widen bf16 before tl.dot); they are recorded as a GPU launch sets
them (False).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SNIPPETS = REPO_ROOT / "snippets"
DATA = REPO_ROOT / "data" / "support.json"

# Shared memory one block may use (opt-in maximum), bytes: CUDA C++
# Programming Guide, "Technical Specifications per Compute Capability".
SHARED_LIMIT = {75: 64 * 1024, 80: 163 * 1024, 86: 99 * 1024, 89: 99 * 1024,
                90: 227 * 1024}  # fmt: skip
ARCH_GPUS = {75: "T4", 80: "A100", 86: "RTX 30xx, A10", 89: "RTX 40xx, L4",
             90: "H100, H200"}  # fmt: skip
GPU_ONLY_FLAGS = ("UPCAST", "UPCAST_DOT")  # interpreter-only widening: False on a GPU


# ------------------------------------------------------------------ plans ---
def _t(*shape, dtype="float16"):
    import torch

    return torch.randn(*shape, dtype=getattr(torch, dtype))


def _meta(config) -> dict:
    """A triton.Config as the dict the course's launchers take."""
    return {**config.kwargs, "num_warps": config.num_warps,
            "num_stages": config.num_stages}  # fmt: skip


def _plan_vector_add(m):
    yield "", lambda: m.vector_add(_t(4096, dtype="float32"), _t(4096, dtype="float32"))


def _plan_vector_add_frameworks(m):
    x = _t(4096, dtype="float32")
    yield "", lambda: m.add_triton(x, x)


def _plan_gpu_basics(m):
    x = _t(8192, dtype="float32")
    yield "", lambda: m.strided_copy(x, 2)
    yield "", lambda: m.persistent_copy(x, num_programs=4)
    yield "", lambda: m.fma_chain(x, 8)


def _plan_memory_access(m):
    x = _t(256, 256, dtype="float32")
    for order in ("rows", "columns"):
        yield "", lambda order=order: m.copy_2d(x, order=order)
    for method in ("naive", "tiled"):
        yield "", lambda method=method: m.transpose(x, method=method)


def _plan_softmax(m):
    x = _t(64, 4096)
    yield "", lambda: m.softmax(x)
    yield "", lambda: m.softmax_rows(_t(64, 256))


def _plan_online_softmax(m):
    x = _t(16, 65536)
    for fused in (True, False):  # one kernel per row, or two over slices
        yield "", lambda fused=fused: m.online_softmax(x, fused=fused)


def _plan_softmax_autograd(m):
    x = _t(64, 1024)
    for config in m._CONFIGS:
        params = {**config.kwargs, "num_warps": config.num_warps}
        yield "", lambda p=params: m.softmax_fwd(x, config=p)
        yield "", lambda p=params: m.softmax_bwd(x, x, config=p)


def _plan_optimization_steps(m):
    x = _t(64, 4096, dtype="float32")
    yield "", lambda: m.rowsum_v0(x)
    yield "", lambda: m.rowsum_v1(x)
    yield "", lambda: m.rowsum_v2(x)
    for config in m.TUNING_CONFIGS:
        yield "", lambda c=config: m.rowsum_v3(x, config=_meta(c))


def _plan_fused_mlp_tail(m):
    y, bias = _t(64, 4096), _t(4096)
    yield "", lambda: m.bias_gelu_dropout(y, bias, p=0.1, seed=1)
    yield "", lambda: m.dropout_keep_mask((64, 4096), 0.1, 1, "cpu")


def _plan_profiling(m):
    x = _t(8192, dtype="float32")
    yield "", lambda: m.add(x, x)
    yield "", lambda: m.bias_gelu(_t(64, 1024), _t(1024))


def _plan_matmul(m):
    for dtype in ("float16", "float32"):
        a, b = _t(256, 256, dtype=dtype), _t(256, 256, dtype=dtype)
        for config in m.CONFIGS:
            yield dtype, lambda a=a, b=b, c=config: m.matmul(a, b, config=_meta(c))


def _plan_matmul_tma(m):
    a, b = _t(256, 256), _t(256, 256)
    for persistent in (True, False):
        for config in m.CONFIGS:
            yield (
                "float16",
                lambda c=config, p=persistent: m.matmul_tma(
                    a, b, persistent=p, config=_meta(c)
                ),
            )


def _plan_layernorm_linear(m):
    x, w, bias, g, beta = _t(256, 256), _t(256, 256), _t(256), _t(256), _t(256)
    for config in m.AUTOTUNE_CONFIGS:
        yield (
            "float16",
            lambda c=config: m.layernorm_linear(x, w, bias, g, beta, config=_meta(c)),
        )


def _plan_layernorm_linear_fold(m):
    x, w, bias, g, beta = _t(256, 256), _t(256, 256), _t(256), _t(256), _t(256)
    folded = m.fold_layernorm(w, bias, g, beta)
    for config in m.CONFIGS:
        yield (
            "float16",
            lambda c=config: m.layernorm_linear_folded(x, folded, config=_meta(c)),
        )


def _plan_matmul_fp8(m):
    """The launcher asked as each architecture: its own check of the GPU's
    compute capability refuses below sm_89 (no fp8 tensor cores; the refusal
    is recorded as a ValueError, as record() keeps them); from sm_89 it
    launches its tuned configs, host descriptors, both scale modes and both
    accumulations (256 x 256 x 256 in float8_e4m3fn)."""
    import torch

    a = _t(256, 256).to(torch.float8_e4m3fn)
    b = _t(256, 256).to(torch.float8_e4m3fn)
    one = torch.ones(1)
    scales = {"per tensor": (one, one),
              "per row": (torch.ones(256, 1), torch.ones(1, 256))}  # fmt: skip
    for arch in SHARED_LIMIT:

        def as_gpu(call, arch=arch):
            def run():
                cuda = torch.cuda
                saved = cuda.get_device_capability, cuda.get_device_name
                cuda.get_device_capability = lambda device=None: divmod(arch, 10)
                cuda.get_device_name = lambda device=None: f"an sm_{arch} GPU"
                try:  # what a launch on that GPU checks first
                    m._require_fp8_tensor_cores(torch.device("cuda"))
                except RuntimeError as refused:
                    raise ValueError(str(refused)) from None
                finally:
                    cuda.get_device_capability, cuda.get_device_name = saved
                call()

            return run

        for sa, sb in scales.values():
            for fast in (True, False):
                call = lambda sa=sa, sb=sb, f=fast: m.matmul_fp8(  # noqa: E731
                    a, b, sa, sb, fast_accum=f, config=m.HOPPER_CONFIGS[f]
                )
                yield "float8_e4m3fn", as_gpu(call), f"sm_{arch}"


def _plan_flash_attention(m):
    """The launchers size their tiles to the GPU (device_limits): asked as
    each architecture in turn, they launch what they would launch there, or
    refuse."""
    import torch

    for arch, limit in SHARED_LIMIT.items():
        gpu = {"name": f"an sm_{arch} GPU", "capability": divmod(arch, 10),
               "shared_kb": limit // 1024}  # fmt: skip

        def as_gpu(call, gpu=gpu):
            def run():
                saved, m.device_limits = m.device_limits, lambda device: gpu
                try:
                    call()
                finally:
                    m.device_limits = saved

            return run

        for dtype in ("float16", "float32", "float8_e4m3fn", "float8_e5m2"):
            for head_dim in (64, 128):
                q = _t(1, 2, 256, head_dim).to(getattr(torch, dtype))  # randn: no fp8
                call = lambda q=q: m.attention_forward(q, q, q, causal=True)  # noqa: E731
                yield dtype, as_gpu(call), f"sm_{arch}"
        for head_dim in (64, 128):
            q = _t(1, 2, 256, head_dim)
            lse = _t(1, 2, 256, dtype="float32")
            call = lambda q=q, lse=lse: m.attention_backward(  # noqa: E731
                q, q, q, q, lse, q, causal=True
            )
            yield "float16", as_gpu(call), f"sm_{arch}"


PLANS = {
    "vector_add.py": _plan_vector_add,
    "vector_add_frameworks.py": _plan_vector_add_frameworks,
    "gpu_basics.py": _plan_gpu_basics,
    "memory_access.py": _plan_memory_access,
    "softmax.py": _plan_softmax,
    "online_softmax.py": _plan_online_softmax,
    "softmax_autograd.py": _plan_softmax_autograd,
    "optimization_steps.py": _plan_optimization_steps,
    "fused_mlp_tail.py": _plan_fused_mlp_tail,
    "profiling.py": _plan_profiling,
    "matmul.py": _plan_matmul,
    "matmul_tma.py": _plan_matmul_tma,
    "matmul_fp8.py": _plan_matmul_fp8,
    "layernorm_linear.py": _plan_layernorm_linear,
    "layernorm_linear_fold.py": _plan_layernorm_linear_fold,
    "flash_attention.py": _plan_flash_attention,
}


# --------------------------------------------------------------- record ---
def _describe(value):
    """(signature type, constexpr value or None, 16-aligned) of one argument,
    as a launch specialises it."""
    from triton._C.libtriton import native_specialize_impl
    from triton.backends.compiler import BaseBackend

    kind, key = native_specialize_impl(BaseBackend, value, False, True, True)
    if kind == "constexpr":
        return "constexpr", key, False
    return kind, None, key == "D"


def record() -> dict:
    """Every launch the plans make, in order, without running a kernel, and
    what the launchers refuse. A plan yields (dtype, call) for a launcher
    that launches the same on every GPU, or (dtype, call, arch) for one asked
    as that GPU: its launches carry ``archs``, and an error it raises there
    is a refusal."""
    import inspect

    from triton.runtime import interpreter

    from triton_course.snippet_modules import load_file

    launches: list[dict] = []
    current: dict = {}

    def fake_run(self, *args, grid, warmup, **kwargs):
        if warmup:
            return None
        signature_of_fn = inspect.signature(self.fn)
        params = signature_of_fn.parameters
        options = {k: kwargs.pop(k) for k in ("num_warps", "num_stages") if k in kwargs}
        bound = signature_of_fn.bind(*args, **kwargs)
        bound.apply_defaults()
        signature, constexprs, aligned = {}, {}, []
        for name, value in bound.arguments.items():
            if params[
                name
            ].annotation is not inspect.Parameter.empty and "constexpr" in str(
                params[name].annotation
            ):
                value = False if name in GPU_ONLY_FLAGS else value
                signature[name], constexprs[name] = "constexpr", value
                continue
            kind, const, is_aligned = _describe(value)
            signature[name] = kind
            if kind == "constexpr":
                constexprs[name] = const
            elif is_aligned:
                aligned.append(name)
        launches.append({
            "snippet": current["snippet"], "kernel": self.fn.__name__,
            "dtype": current["dtype"], "archs": current["archs"],
            "signature": signature,
            "constexprs": constexprs, "aligned": aligned,
            "options": {"num_warps": options.get("num_warps", 4),
                        "num_stages": options.get("num_stages", 3)},
        })  # fmt: skip
        return None

    interpreter.InterpretedFunction.run = fake_run
    refusals: list[dict] = []
    for snippet, plan in PLANS.items():
        module = load_file(SNIPPETS / snippet)
        for dtype, call, *arch in plan(module):
            archs = arch or None
            current.update(snippet=snippet, dtype=dtype, archs=archs)
            if archs is None:
                call()
                continue
            try:
                call()
            except (TypeError, ValueError) as error:  # the launcher refuses
                refusals.append({"snippet": snippet, "dtype": dtype,
                                 "arch": archs[0], "message": str(error)})  # fmt: skip
    # One entry per distinct launch, with every GPU it is launched on
    unique: dict[str, dict] = {}
    for launch in launches:
        key = json.dumps({**launch, "archs": None}, sort_keys=True, default=str)
        if key not in unique:
            unique[key] = launch
        elif launch["archs"] is not None and unique[key]["archs"] is not None:
            unique[key]["archs"] = unique[key]["archs"] + launch["archs"]
    return {"launches": list(unique.values()), "refusals": refusals}


# -------------------------------------------------------------- compile ---
def config_label(launch: dict) -> str:
    """Tile sizes, warps and stages: what tells two configs apart."""
    const = launch["constexprs"]
    tiles = [
        f"{k}={v}" for k, v in const.items() if k.startswith("BLOCK") or k == "ROWS"
    ]
    opts = launch["options"]
    return ", ".join(
        [*tiles, f"{opts['num_warps']} warps", f"{opts['num_stages']} stages"]
    )


def group_label(launch: dict) -> str:
    """Launches a page shows as one row: same kernel, dtype and head size (the
    autotuner, or the launcher's own choice, picks among their configs)."""
    parts = [launch["dtype"]] if launch["dtype"] else []
    if "HEAD_DIM" in launch["constexprs"]:
        parts.append(f"head_dim {launch['constexprs']['HEAD_DIM']}")
    return ", ".join(parts)


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return (text[-1] if text else type(error).__name__)[:160]


def _no_ptx(src, metadata) -> str:
    metadata["name"] = "not_compiled_further"  # make_ptx reads it from the PTX
    return ""


def _stop_at_llvm_ir(cache_dir: str | None = None) -> None:
    """Compile only as far as LLVM IR, unoptimised. Everything the table
    reports is fixed by then: shared memory is allocated in the MLIR passes
    before it, and tl.dot's instruction (wgmma, mma.sync) and TMA copies are
    inline PTX in it (an FMA dot has none). LLVM's O3, llc and ptxas would
    add most of the time.

    The stub binaries must never be launched, nor found by a full compile of
    the same kernel (the cache key does not know the stages were cut): this
    process compiles into a cache directory of its own, ``cache_dir`` or a
    temporary one removed at exit.
    """
    import atexit
    import shutil
    import tempfile

    import triton
    from triton._C.libtriton import llvm
    from triton.backends.nvidia.compiler import CUDABackend

    if getattr(CUDABackend, "_course_stops_at_llir", False):
        return
    if cache_dir is None:
        cache_dir = tempfile.mkdtemp(prefix="support-cache-")
        atexit.register(shutil.rmtree, cache_dir, True)
    triton.knobs.cache.dir = cache_dir
    add_stages = CUDABackend.add_stages

    def up_to_llir(self, stages, options, *rest, **kwargs):
        add_stages(self, stages, options, *rest, **kwargs)
        stages["ptx"] = _no_ptx
        stages["cubin"] = lambda src, metadata: b""

    CUDABackend.add_stages, CUDABackend._course_stops_at_llir = up_to_llir, True
    llvm.optimize_module = lambda *args, **kwargs: None


def compile_one(job: tuple[dict, int], full: bool = False) -> dict:
    """One launch for one architecture: what happens there. ``full`` compiles
    to a cubin instead (tests check the short path gives the same answer)."""
    from triton.backends.nvidia.compiler import CUDABackend

    from triton_course import codegen
    from triton_course.snippet_modules import load_file

    if not full:
        _stop_at_llvm_ir()
    elif getattr(CUDABackend, "_course_stops_at_llir", False):
        raise RuntimeError("a full compile needs a process that made no short one")

    launch, arch = job
    kernel = getattr(load_file(SNIPPETS / launch["snippet"]), launch["kernel"])
    try:
        compiled = codegen.compile_kernel(
            kernel, arch, launch["signature"], launch["constexprs"],
            launch["aligned"], **launch["options"],
        )  # fmt: skip
    except Exception as error:  # noqa: BLE001 - the message is the finding
        return {"status": "does not compile", "detail": _first_line(error)}
    llir, shared = compiled.asm["llir"], compiled.metadata.shared
    result = {"shared": shared}
    if "tt.dot" in compiled.asm["ttir"]:
        if codegen.WGMMA.search(llir):
            result["dot"] = "wgmma"
        elif codegen.MMA.search(llir):
            result["dot"] = "mma"
        else:
            result["dot"] = "FMA"
    if "cp.async.bulk.tensor" in llir:
        result["tma"] = True
    result["status"] = (
        "exceeds shared memory" if shared > SHARED_LIMIT[arch] else "runs"
    )
    return result


def compile_all(
    recorded: dict,
    workers: int | None = None,
    cache_root: Path | None = None,
    only_arch: dict[str, int] | None = None,
) -> dict:
    """Every recorded launch compiled for every target; with ``only_arch``
    ({launch key: arch}), each launch for its one target (the quick check)."""
    import tempfile

    import triton

    launches = recorded["launches"]
    # what the launches were recorded from; a file edited before the compile
    # ends would give rows of two versions under one digest
    inputs = recorded.get("inputs") or inputs_digest()
    targets = [
        [only_arch[_launch_key(launch)]] if only_arch else list(SHARED_LIMIT)
        for launch in launches
    ]
    jobs = [(launch, arch) for launch, archs in zip(launches, targets) for arch in archs]
    workers = workers or min(4, os.cpu_count() or 1)
    with tempfile.TemporaryDirectory(prefix="support-cache-", dir=cache_root) as cache:
        with ProcessPoolExecutor(
            workers, initializer=_stop_at_llvm_ir, initargs=(cache,)
        ) as pool:
            results = list(pool.map(compile_one, jobs, chunksize=1))
    if inputs_digest() != inputs:
        raise RuntimeError(
            "a snippet or the compiling code changed while the table was being "
            "compiled: run the command again"
        )
    rows, done = [], iter(results)
    for launch, archs in zip(launches, targets):
        per_arch = [next(done) for _ in archs]
        archs = [f"sm_{a}" for a in archs]
        rows.append({
            "snippet": launch["snippet"], "kernel": launch["kernel"],
            "group": group_label(launch), "config": config_label(launch),
            "launched_on": launch["archs"],  # None: every GPU
            "archs": dict(zip(archs, per_arch, strict=True)),
        })  # fmt: skip
    return {
        "triton": triton.__version__,
        "written_by": "python -m triton_course.support table",
        "inputs": inputs,
        "shared_limit": {f"sm_{a}": b for a, b in SHARED_LIMIT.items()},
        "gpus": {f"sm_{a}": g for a, g in ARCH_GPUS.items()},
        "rows": rows,
        "refusals": recorded["refusals"],
    }


# ------------------------------------------------------- current or not ---
# The code whose change can change a row (besides the snippets themselves)
COMPILING_CODE = ("triton_course/support.py", "triton_course/codegen.py",
                  "triton_course/snippet_modules.py")  # fmt: skip


def _syntax_digest(path: Path) -> str:
    """A hash of a Python file's syntax tree without docstrings: a comment or
    a docstring edited leaves it alone, any change to code does not. In this
    file the plans are left out: a plan changes its own snippet's launches,
    which the check compares one by one."""
    import ast
    import hashlib

    tree = ast.parse(path.read_text(encoding="utf-8"))
    if path.resolve() == Path(__file__).resolve():

        def is_plan(node) -> bool:
            if isinstance(node, ast.FunctionDef):
                return node.name.startswith("_plan_")
            targets = getattr(node, "targets", [])
            return any(getattr(t, "id", "") == "PLANS" for t in targets)

        tree.body = [node for node in tree.body if not is_plan(node)]
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()[:16]


def inputs_digest() -> dict:
    """What a table is compiled from; a stored table is current while its
    ``inputs`` equal these."""
    import triton

    return {
        "triton": triton.__version__,
        "code": {name: _syntax_digest(REPO_ROOT / name) for name in COMPILING_CODE},
        "snippets": {name: _syntax_digest(SNIPPETS / name) for name in PLANS},
    }


def row_key(row: dict) -> str:
    """What tells two rows of the table apart."""
    return json.dumps(
        [row["snippet"], row["kernel"], row["group"], row["config"],
         row["launched_on"]]
    )  # fmt: skip


def _launch_key(launch: dict) -> str:
    labels = {"group": group_label(launch), "config": config_label(launch)}
    return row_key({**launch, **labels, "launched_on": launch["archs"]})


def sample(stored: dict) -> dict[str, int]:
    """What the quick check recompiles: per snippet one launch on one target,
    the pair nearest its shared-memory limit ({row key: arch}). Where pairs
    tie (a kernel with no shared memory is at 0 everywhere), the snippets
    take the targets in turn, so that every target is compiled in each check."""
    limits = {f"sm_{a}": b for a, b in SHARED_LIMIT.items()}
    archs = list(limits)
    snippets = sorted({r["snippet"] for r in stored["rows"]})
    best: dict[str, tuple] = {}
    for row in stored["rows"]:
        turn = snippets.index(row["snippet"])
        for arch, found in row["archs"].items():
            if "shared" not in found:  # not compiled there: nothing to repeat
                continue
            fill = found["shared"] / limits[arch]
            # larger fill first; then the target whose turn it is
            rank = (fill, -((archs.index(arch) - turn) % len(archs)))
            if rank > best.get(row["snippet"], ((-1, 0),))[0]:
                best[row["snippet"]] = (rank, row_key(row), int(arch[3:]))
    return {key: arch for _, key, arch in best.values()}


def sample_keys(stored: dict) -> list[str]:
    """The rows the quick check recompiles (one per snippet, see sample)."""
    return sorted(sample(stored), key=lambda k: json.loads(k)[0])


def quick_table(stored: dict, workers: int | None = None,
                cache_root: Path | None = None) -> dict:  # fmt: skip
    """The launches recorded now, and the sampled ones compiled now, each for
    its one target."""
    recorded = _record_in_interpreter()
    wanted = sample(stored)
    sampled = [x for x in recorded["launches"] if _launch_key(x) in wanted]
    only = {_launch_key(x): wanted[_launch_key(x)] for x in sampled}
    table = compile_all({**recorded, "launches": sampled}, workers, cache_root, only)
    table["launch_keys"] = [_launch_key(x) for x in recorded["launches"]]
    table["sampled"] = True
    return table


# ------------------------------------------------------------------ main ---
def _record_in_interpreter() -> dict:
    # the caller's PYTHONPATH kept after the repository: a triton installed
    # beside the venv's (e.g. the GPU image's 3.6) records as it compiles
    inputs = inputs_digest()  # before recording: what the launches come from
    path = [p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p]
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=os.pathsep.join(path))
    done = subprocess.run(
        [sys.executable, "-m", "triton_course.support", "record"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode:
        raise RuntimeError(f"recording the launches failed:\n{done.stderr[-3000:]}")
    return {**json.loads(done.stdout), "inputs": inputs}


def fresh_table(workers: int | None = None, cache_root: Path | None = None) -> dict:
    return compile_all(_record_in_interpreter(), workers, cache_root)


def updated_table(stored: dict, workers: int | None = None) -> dict:
    """The table for the repository as it is, compiling only what may differ
    from ``stored``: the launches of snippets whose code changed (or all, if
    triton or the compiling code did). A launch of an unchanged snippet had
    the same inputs when ``stored`` was compiled, so its row is kept."""
    recorded = _record_in_interpreter()
    now, was = recorded["inputs"], stored.get("inputs") or {}
    same_base = stored.get("triton") == now["triton"] and was.get("code") == now["code"]
    unchanged = {
        name
        for name, digest in now["snippets"].items()
        if same_base and (was.get("snippets") or {}).get(name) == digest
    }
    kept = {row_key(r): r for r in stored.get("rows", []) if r["snippet"] in unchanged}
    todo = [x for x in recorded["launches"] if _launch_key(x) not in kept]
    table = compile_all({**recorded, "launches": todo}, workers)
    compiled = {row_key(r): r for r in table["rows"]}
    # every launch in the order recorded, from the stored table or compiled now
    table["rows"] = [
        kept.get(_launch_key(x)) or compiled[_launch_key(x)]
        for x in recorded["launches"]
    ]
    return table


def differences(stored: dict, fresh: dict) -> list[str]:
    """What a fresh compile says that the stored table does not, line by line."""
    if stored.get("triton") != fresh["triton"]:
        return [f"written with triton {stored.get('triton')}, compiled with "
                f"{fresh['triton']}"]  # fmt: skip
    old = {row_key(r): r["archs"] for r in stored.get("rows", [])}
    new = {row_key(r): r["archs"] for r in fresh["rows"]}
    launched = fresh["launch_keys"] if fresh.get("sampled") else list(new)
    out = [f"new launch {k}" for k in launched if k not in old]
    out += [f"launch gone {k}" for k in old if k not in launched]
    # a sampled row holds its one target: compared with that target's entry
    out += [
        f"{k}: {was} -> {new[k]}"
        for k in new
        if k in old and (was := {a: old[k].get(a) for a in new[k]}) != new[k]
    ]
    if stored.get("refusals") != fresh["refusals"]:
        out.append(f"refusals: {stored.get('refusals')} -> {fresh['refusals']}")
    if fresh.get("sampled"):
        was, now = stored.get("inputs") or {}, fresh["inputs"]
        for part in ("code", "snippets"):
            for name, digest in now[part].items():
                if (was.get(part) or {}).get(name) != digest:
                    out.append(f"{name} changed since the table was compiled")
        if len(new) < len({r["snippet"] for r in stored.get("rows", [])}):
            out.append("the sample misses a snippet: a launch it names is gone")
        return out
    if not out and {**stored, "inputs": None} != {**fresh, "inputs": None}:
        out.append("the table's notes differ")
    return out


def write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(f".{path.name}.tmp")  # never half a file
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)


def _stored() -> dict:
    return json.loads(DATA.read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["record", "table", "check", "fresh"])
    parser.add_argument("out", nargs="?", help="fresh: where to write the table")
    parser.add_argument(
        "--workers", type=int, help="compile processes (default: cores, at most 4)"
    )
    parser.add_argument(
        "--full", action="store_true",
        help="table: recompile every row; check/fresh: every row, not a sample",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.command == "record":
        if os.environ.get("TRITON_INTERPRET") != "1":
            print("support record: run under TRITON_INTERPRET=1", file=sys.stderr)
            return 2
        print(json.dumps(record(), default=str))
        return 0
    if os.environ.get("TRITON_INTERPRET") == "1":
        print(
            "support: unset TRITON_INTERPRET: kernels must be compiled", file=sys.stderr
        )
        return 2
    if args.command == "fresh" and not args.out:
        parser.error("fresh needs the path to write the table to")
    # fresh: the cache beside the table, so whoever removes one removes both
    cache_root = Path(args.out).parent if args.command == "fresh" else None
    if args.command == "table" and not args.full:
        table = updated_table(_stored() if DATA.exists() else {}, args.workers)
    elif args.command == "table" or args.full:
        table = fresh_table(args.workers, cache_root)
    else:  # the quick check: launches and inputs compared, a sample compiled
        table = quick_table(_stored(), args.workers, cache_root)
    if args.command in ("table", "fresh"):
        path = DATA if args.command == "table" else Path(args.out)
        write_json(path, table)
        print(
            f"wrote {path}: {len(table['rows'])} launches x {len(SHARED_LIMIT)} targets"
        )
        return 0
    problems = differences(_stored(), table)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print("run `python -m triton_course.support table`", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
