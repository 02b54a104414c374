"""Compile an attempt's kernels for a GPU, on the CPU, as a GPU run would.

The interpreter runs Python, so it accepts kernels that Triton's compiler
refuses: a loop-carried variable whose type changes in the loop (a float16
running maximum that becomes float32), an accumulator whose dtype is not the
dot's out_dtype on triton 3.6, a Python feature the compiler lacks. After the
values pass, the checker compiles every kernel the attempt launched, once per
combination of argument types it was launched with, for sm_90 (the H100 the
course measures on), in a process without ``TRITON_INTERPRET``:

    python -m triton_course.exercises._compile < request.json

The request is ``{"file": ..., "launches": [{"kernel", "types",
"constexprs"}]}``; the answer, on stdout, a JSON list of the refusals.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import re
import subprocess
import sys
import warnings

ARCH = 90  # sm_90: the H100


def refusals(file: str, launches: list[dict], timeout: float = 300):
    """Compile in a fresh process; each refusal is {"kernel", "types", "error"}.
    A str instead: the compiling process itself failed (no compiler here)."""
    from . import REPO_ROOT

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")])
    )
    done = subprocess.run(
        [sys.executable, "-m", "triton_course.exercises._compile"],
        input=json.dumps({"file": file, "launches": launches}),
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
        return tail[0]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _kernel(module, name: str):
    """The JITFunction behind ``name`` (through autotune/heuristics wrappers)."""
    from triton.runtime.jit import JITFunction

    kernel = getattr(module, name, None)
    while kernel is not None and not isinstance(kernel, JITFunction):
        kernel = getattr(kernel, "fn", None)
    return kernel


def _signature(kernel, types: dict, constexprs: dict):
    """Every parameter's type, or "constexpr" with its value (defaults too)."""
    signature, values = {}, {}
    declared = {p.name for p in kernel.params if p.is_constexpr}
    for param in inspect.signature(kernel.fn).parameters.values():
        name = param.name
        if name in constexprs or name in declared:
            signature[name] = "constexpr"
            values[name] = constexprs.get(name, param.default)
        elif types.get(name):
            signature[name] = types[name]
        else:  # an argument the launch left to its default, or of unknown type
            signature[name] = "constexpr"
            values[name] = None if param.default is inspect._empty else param.default
    return signature, values


def _compile_one(kernel, types: dict, constexprs: dict) -> str | None:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    signature, values = _signature(kernel, types, constexprs)
    names = list(signature)
    source = ASTSource(
        fn=kernel,
        signature=signature,
        constexprs={(names.index(k),): v for k, v in values.items()},
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            triton.compile(source, target=GPUTarget("cuda", ARCH, 32))
    except Exception as error:  # the compiler's refusal, shown to the learner
        text = str(error).strip().splitlines()
        cause = error.__cause__ or error
        last = str(cause).strip().splitlines()
        reason = last[-1] if last else ""
        if type(cause).__name__ != "CompilationError":
            reason = f"{type(cause).__name__}: {reason}"
        # "at 5:4:" counts the kernel's def line as line 1
        where = re.match(r"at (\d+):\d+", text[0]) if text else None
        if where:
            lines, start = inspect.getsourcelines(kernel.fn)
            first = next(
                (k for k, t in enumerate(lines) if t.lstrip().startswith("def ")), 0
            )
            reason += f" (line {start + first + int(where.group(1)) - 1})"
        return reason
    return None


def main() -> int:
    request = json.loads(sys.stdin.read())
    spec = importlib.util.spec_from_file_location("attempt", request["file"])
    module = importlib.util.module_from_spec(spec)
    sys.modules["attempt"] = module
    spec.loader.exec_module(module)
    found = []
    for launch in request["launches"]:
        kernel = _kernel(module, launch["kernel"])
        if kernel is None:
            continue  # not a module-level kernel: nothing to compile it from
        error = _compile_one(kernel, launch["types"], launch["constexprs"])
        if error:
            found.append({**launch, "error": error})
    print(json.dumps(found, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
