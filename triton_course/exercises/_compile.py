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

A checking process keeps one such process (``--serve``, where ``os.fork``
exists): it imports Triton once and answers each request from a forked
child, as fresh as a new process, in the request's environment, but without
its seconds of start-up (the tests and mutation testing compile hundreds of
times). Anything unusual there (a crash, an exception) falls back to a new
process, whose answer is the one given.
"""

from __future__ import annotations

import atexit
import importlib.util
import inspect
import json
import os
import re
import subprocess
import sys
import warnings

ARCH = 90  # sm_90: the H100


# (the --serve process, what a process reads as it starts: its directory, the
# PYTHON* and LD_* variables)
_server: tuple[subprocess.Popen, tuple] | None = None
_server_died = False  # it exited on its own (no compiler here?): not again


def refusals(file: str, launches: list[dict], timeout: float = 300):
    """Compile in a fresh process; each refusal is {"kernel", "types", "error"}.
    A str instead: the compiling process itself failed (no compiler here)."""
    from . import REPO_ROOT

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")])
    )
    request = json.dumps({"file": file, "launches": launches})
    if hasattr(os, "fork") and not _server_died:
        found = _served(request, env, timeout)
        if found is not None:
            return found
    done = subprocess.run(
        [sys.executable, "-m", "triton_course.exercises._compile"],
        input=request,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
        return tail[0]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _served(request: str, env: dict, timeout: float) -> list | None:
    """The refusals from the --serve process; None when it could not answer.
    Each request carries the environment its child takes on; the process is
    restarted when what Python reads at start-up changed (sys.path comes from
    the directory and PYTHONPATH)."""
    global _server, _server_died
    import select

    start_up = (
        os.getcwd(),
        {k: v for k, v in env.items() if k.startswith(("PYTHON", "LD_"))},
    )
    if _server is not None and _server[1] != start_up:
        _stop_server()
    if _server is None:
        process = subprocess.Popen(
            [sys.executable, "-m", "triton_course.exercises._compile", "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            text=True,
        )
        _server = (process, start_up)
    process = _server[0]
    try:
        process.stdin.write(json.dumps({"env": env, "request": request}) + "\n")
        process.stdin.flush()
        ready, _, _ = select.select([process.stdout], [], [], timeout)
        if not ready:
            _stop_server()
            raise subprocess.TimeoutExpired(process.args, timeout)
        line = process.stdout.readline()
    except OSError:
        line = ""
    if not line:  # it exited: its imports failed (no compiler here?), or a crash
        _server_died = True
        _stop_server()
        return None
    answer = json.loads(line)
    if not answer["ok"]:
        return None  # the new process gives the answer, error message and all
    return answer["found"]


def _stop_server() -> None:
    global _server
    if _server is None:
        return
    process, _server = _server[0], None
    process.kill()
    process.wait()
    for stream in (process.stdin, process.stdout):
        try:
            stream.close()
        except OSError:
            pass


atexit.register(_stop_server)


def serve() -> int:
    """Answer one request per line of stdin, each in a forked child (a fresh
    state for the attempt's module), with one line: {"ok", "found"}."""
    import torch  # noqa: F401 - what every attempt imports: once, here
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend
    from triton.runtime.cache import triton_key

    # what the first compile of every process computes (hashes of Triton's
    # files, ptxas's version), cached: once, here, not in every child
    triton_key()
    make_backend(GPUTarget("cuda", ARCH, 32)).hash()
    for line in sys.stdin:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: what main() does, its output to the pipe
            os.close(read)
            quiet = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(quiet, fd)
            code = 1
            try:
                asked = json.loads(line)
                os.environ.clear()
                os.environ.update(asked["env"])
                found = _answer(json.loads(asked["request"]))
                data = json.dumps(found, default=str).encode()
                while data:
                    data = data[os.write(write, data) :]
                code = 0
            finally:
                os._exit(code)
        os.close(write)
        chunks = []
        while chunk := os.read(read, 1 << 16):
            chunks.append(chunk)
        os.close(read)
        _, status = os.waitpid(pid, 0)
        ok = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        found = json.loads(b"".join(chunks)) if ok else None
        print(json.dumps({"ok": ok, "found": found}), flush=True)
    return 0


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
    if sys.argv[1:] == ["--serve"]:
        return serve()
    print(json.dumps(_answer(json.loads(sys.stdin.read())), default=str))
    return 0


def _answer(request: dict) -> list[dict]:
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
    return found


if __name__ == "__main__":
    sys.exit(main())
