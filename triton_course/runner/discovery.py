"""Find and check what the GPU runner measures: nothing is listed by hand.

Every ``snippets/*.py`` may hold

- ``BENCHMARK = {...}`` or ``BENCHMARKS = [{...}, ...]``: benchmark
  descriptions (keys in ``REQUIRED_KEYS``/``OPTIONAL_KEYS`` below);
- ``CAPTURES = {"name": spec}``: text artefacts only a GPU can make, where a
  spec is a callable returning a string, or a dict (or a callable returning
  one) ``{"ncu": {...}}`` / ``{"python": {...}}`` that the runner runs in a
  subprocess (see ``triton_course/runner/README.md``);
- ``UNTIMED_CAPTURES = ("name", ...)``: those of its captures whose text
  depends on no timing and no counter (generated code, register counts):
  they may run while the tests use the GPU. Every other capture runs alone.

Every ``docs/notebooks/*.ipynb`` is executed.

Two ways in: ``benchmark_names`` reads names with ``ast`` and needs neither
torch nor triton (the staleness check runs in the docs environment);
``load_snippet`` imports the file and ``check_description`` validates each
description with an error that names the snippet and the key.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from triton_course.snippet_modules import load_file

REQUIRED_KEYS = (
    "name",
    "title",
    "params",
    "sizes",
    "dtypes",
    "metric",
    "work",
    "make_inputs",
    "triton",
    "peers",
)
OPTIONAL_KEYS = (
    "compile",
    "report",
    "report_untimed",
    "plot",
    "ceiling",
    "dram_check_scale",
)
# "report_untimed": True when the report measures no time and reads nothing
# the timed phase leaves behind (an autotuner's choice): the runner then makes
# it in a process of its own while the tests run, not in the timed phase.
# "dram_check_scale": the parameter the byte-model check doubles to reach a
# working set of many L2s (triton_course/dram_bytes.py); the first by default.
METRICS = ("bandwidth", "compute")
# The ceiling a benchmark's rate is a share of: DRAM copy bandwidth or the
# tensor-core rate (its metric's, the default), the L2 cache's bandwidth
# for a benchmark whose data stays in L2 between passes ("ceiling": "l2"),
# or the FP8 tensor-core rate for an FP8 GEMM ("ceiling": "compute_fp8"),
# which runs above the bf16 one.
CEILINGS = {"bandwidth": ("bandwidth", "l2"), "compute": ("compute", "compute_fp8")}


def ceiling_of(desc: dict) -> str:
    """The key of the roofline a description is measured against."""
    return desc.get("ceiling", desc["metric"])


DTYPE_NAMES = ("float32", "float16", "bfloat16", "float64", "float8_e4m3fn", "int8")
_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")
RESERVED_PEERS = ("Triton", "torch.compile")


class DescriptionError(ValueError):
    """A snippet's BENCHMARK(S) or CAPTURES does not follow the runner's format."""


@dataclass
class Snippet:
    path: Path
    module: object
    benchmarks: list = field(default_factory=list)
    captures: dict = field(default_factory=dict)
    untimed: frozenset = frozenset()  # captures that may share the GPU

    @property
    def stem(self) -> str:
        return self.path.stem


def snippet_files(snippets_dir: Path) -> list[Path]:
    return sorted(
        p for p in Path(snippets_dir).glob("*.py") if not p.name.startswith("_")
    )


def notebook_files(notebooks_dir: Path) -> list[Path]:
    return sorted(Path(notebooks_dir).glob("*.ipynb"))


# ------------------------------------------------------------- static view ---
def _literal_names(node) -> list[str] | None:
    """``name`` strings of a dict literal or a list of dict literals, else None."""
    items = node.elts if isinstance(node, (ast.List, ast.Tuple)) else [node]
    names = []
    for item in items:
        if not isinstance(item, ast.Dict):
            return None
        for key, value in zip(item.keys, item.values, strict=True):
            if isinstance(key, ast.Constant) and key.value == "name":
                if not isinstance(value, ast.Constant) or not isinstance(
                    value.value, str
                ):
                    return None
                names.append(value.value)
                break
        else:
            return None
    return names


def static_names(path: Path) -> tuple[list[str], list[str]]:
    """(benchmark names, capture names) of a snippet, read without importing it.

    Raises DescriptionError where a name is not a plain string literal: the
    staleness check must not guess.
    """
    tree = ast.parse(Path(path).read_text(encoding="utf-8"), filename=str(path))
    benches: list[str] = []
    captures: list[str] = []
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if not isinstance(target, ast.Name):
                continue
            if target.id in ("BENCHMARK", "BENCHMARKS"):
                names = _literal_names(node.value)
                if names is None:
                    raise DescriptionError(
                        f"{path}: {target.id} must be a dict literal (or a list of "
                        "them) whose 'name' is a string literal"
                    )
                benches += names
            elif target.id == "CAPTURES":
                if not isinstance(node.value, ast.Dict) or not all(
                    isinstance(k, ast.Constant) and isinstance(k.value, str)
                    for k in node.value.keys
                ):
                    raise DescriptionError(
                        f"{path}: CAPTURES must be a dict literal with string keys"
                    )
                captures += [k.value for k in node.value.keys]
    return benches, captures


# ---------------------------------------------------------------- loading ---
def load_snippet(path: Path):
    """Import a snippet file as a module (snippets are not a package), once
    per process: see ``triton_course.snippet_modules``."""
    return load_file(path)


def check_description(desc: object, where: str) -> dict:
    """Validate one benchmark description; return it or raise DescriptionError."""

    def fail(message):
        raise DescriptionError(f"{where}: {message}")

    if not isinstance(desc, dict):
        fail(f"a benchmark description must be a dict, got {type(desc).__name__}")
    missing = [k for k in REQUIRED_KEYS if k not in desc]
    if missing:
        fail(f"missing keys {missing}")
    unknown = [k for k in desc if k not in REQUIRED_KEYS + OPTIONAL_KEYS]
    if unknown:
        fail(f"unknown keys {unknown} (allowed: {list(REQUIRED_KEYS + OPTIONAL_KEYS)})")
    name = desc["name"]
    if not isinstance(name, str) or not _NAME_RE.match(name):
        fail(f"'name' must be snake_case, got {name!r}")
    where = f"{where} [{name}]"
    if not isinstance(desc["title"], str) or not desc["title"].strip():
        fail("'title' must be a non-empty string")
    params = desc["params"]
    if (
        not isinstance(params, list)
        or not params
        or not all(isinstance(p, str) and p for p in params)
        or len(set(params)) != len(params)
    ):
        fail(f"'params' must be a non-empty list of distinct names, got {params!r}")
    sizes = desc["sizes"]
    if not isinstance(sizes, list) or not sizes:
        fail("'sizes' must be a non-empty list of dicts")
    for i, size in enumerate(sizes):
        if not isinstance(size, dict) or sorted(size) != sorted(params):
            fail(f"sizes[{i}] = {size!r} must have exactly the keys {params}")
        bad = [
            k for k, v in size.items() if isinstance(v, bool) or not isinstance(v, int)
        ]
        if bad:
            fail(f"sizes[{i}]: {bad} must be integers")
    dtypes = desc["dtypes"]
    if not isinstance(dtypes, list) or not dtypes:
        fail("'dtypes' must be a non-empty list of strings")
    for dt in dtypes:
        if dt not in DTYPE_NAMES:
            fail(f"dtype {dt!r} is not one of {list(DTYPE_NAMES)}")
    if desc["metric"] not in METRICS:
        fail(f"'metric' must be one of {list(METRICS)}, got {desc['metric']!r}")
    if desc.get("ceiling", desc["metric"]) not in CEILINGS[desc["metric"]]:
        fail(
            f"'ceiling' of a {desc['metric']} benchmark must be one of "
            f"{list(CEILINGS[desc['metric']])}, got {desc['ceiling']!r}"
        )
    for key in ("work", "make_inputs", "triton"):
        if not callable(desc[key]):
            fail(f"{key!r} must be callable")
    peers = desc["peers"]
    if not isinstance(peers, dict) or not peers:
        fail("'peers' must be a non-empty dict: name -> callable")
    for peer, fn in peers.items():
        if not isinstance(peer, str) or peer in RESERVED_PEERS:
            fail(f"peer name {peer!r} is reserved or not a string")
        if not callable(fn):
            fail(f"peer {peer!r} must be callable")
    if "PyTorch eager" in peers and next(iter(peers)) != "PyTorch eager":
        fail("'PyTorch eager' must be the first peer")
    if "compile" in desc and desc["compile"] not in peers:
        fail(f"'compile' names {desc['compile']!r}, which is not a peer")
    if "report" in desc and not callable(desc["report"]):
        fail("'report' must be callable")
    if "report_untimed" in desc and (
        not isinstance(desc["report_untimed"], bool) or "report" not in desc
    ):
        fail("'report_untimed' must be True or False, beside a 'report'")
    if "plot" in desc and not isinstance(desc["plot"], bool):
        fail("'plot' must be True or False")
    if "dram_check_scale" in desc and desc["dram_check_scale"] not in params:
        fail(
            f"'dram_check_scale' names {desc['dram_check_scale']!r}, which is not "
            f"one of 'params' {params}"
        )
    return desc


def check_captures(captures: object, where: str) -> dict:
    if not isinstance(captures, dict):
        raise DescriptionError(f"{where}: CAPTURES must be a dict: name -> spec")
    for name, spec in captures.items():
        if not isinstance(name, str) or not _NAME_RE.match(name):
            raise DescriptionError(f"{where}: capture name {name!r} must be snake_case")
        if not (callable(spec) or _is_command_spec(spec)):
            raise DescriptionError(
                f"{where}: capture {name!r} must be a callable or a dict "
                "{'ncu': {...}} / {'python': {...}}"
            )
    return captures


def check_untimed(untimed: object, captures: dict, where: str) -> frozenset:
    """UNTIMED_CAPTURES: names of this snippet's captures, none of them ncu."""
    if not isinstance(untimed, (list, tuple, set, frozenset)) or not all(
        isinstance(n, str) for n in untimed
    ):
        raise DescriptionError(f"{where}: UNTIMED_CAPTURES must be a tuple of names")
    for name in untimed:
        if name not in captures:
            raise DescriptionError(
                f"{where}: UNTIMED_CAPTURES names {name!r}, which is not in CAPTURES"
            )
        if isinstance(captures[name], dict) and "ncu" in captures[name]:
            raise DescriptionError(
                f"{where}: capture {name!r} reads hardware counters: it must run "
                "alone on the GPU and cannot be in UNTIMED_CAPTURES"
            )
    return frozenset(untimed)


def _is_command_spec(spec) -> bool:
    return (
        isinstance(spec, dict)
        and len(spec) == 1
        and next(iter(spec)) in ("ncu", "python")
        and isinstance(next(iter(spec.values())), dict)
    )


def discover(snippets_dir: Path, only: str | None = None) -> list[Snippet]:
    """Import every snippet that describes benchmarks or captures; check them all.

    ``only`` keeps the benchmarks and captures with that name, or everything
    of the snippet with that file stem. Unknown ``only`` is an error.
    """
    found: list[Snippet] = []
    seen_bench: dict[str, Path] = {}
    seen_capture: dict[str, Path] = {}
    for path in snippet_files(snippets_dir):
        benches, captures = static_names(path)
        if not benches and not captures:
            continue
        module = load_snippet(path)
        where = str(path)
        descs = []
        if hasattr(module, "BENCHMARK") and hasattr(module, "BENCHMARKS"):
            raise DescriptionError(f"{where}: define BENCHMARK or BENCHMARKS, not both")
        if hasattr(module, "BENCHMARK"):
            descs = [module.BENCHMARK]
        elif hasattr(module, "BENCHMARKS"):
            if (
                not isinstance(module.BENCHMARKS, (list, tuple))
                or not module.BENCHMARKS
            ):
                raise DescriptionError(f"{where}: BENCHMARKS must be a non-empty list")
            descs = list(module.BENCHMARKS)
        descs = [check_description(d, where) for d in descs]
        caps = check_captures(getattr(module, "CAPTURES", {}), where)
        untimed = check_untimed(getattr(module, "UNTIMED_CAPTURES", ()), caps, where)
        for d in descs:
            if d["name"] in seen_bench:
                raise DescriptionError(
                    f"benchmark name {d['name']!r} is used by both "
                    f"{seen_bench[d['name']]} and {path}"
                )
            seen_bench[d["name"]] = path
        for c in caps:
            if c in seen_capture:
                raise DescriptionError(
                    f"capture name {c!r} is used by both {seen_capture[c]} and {path}"
                )
            seen_capture[c] = path
        found.append(
            Snippet(
                path=path,
                module=module,
                benchmarks=descs,
                captures=caps,
                untimed=untimed,
            )
        )
    if only is None:
        return found
    picked = []
    for s in found:
        if s.stem == only:
            picked.append(s)
            continue
        b = [d for d in s.benchmarks if d["name"] == only]
        c = {k: v for k, v in s.captures.items() if k == only}
        if b or c:
            picked.append(
                Snippet(
                    path=s.path,
                    module=s.module,
                    benchmarks=b,
                    captures=c,
                    untimed=s.untimed & set(c),
                )
            )
    if not picked:
        raise DescriptionError(
            f"--only {only!r}: no benchmark, capture or snippet of that name "
            f"(benchmarks: {sorted(seen_bench)}; captures: {sorted(seen_capture)})"
        )
    return picked
