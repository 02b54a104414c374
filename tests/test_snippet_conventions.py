"""Conventions every snippet's launchers share."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import triton
from conftest import REPO_ROOT, SNIPPETS, load_snippet

WITH_INTERPRETER_CHECK = sorted(
    p.stem for p in SNIPPETS.glob("*.py") if "def _interpreting(" in p.read_text()
)

# Review 2026-11-27 l03-10: Triton decides when @triton.jit decorates a kernel
# (at import) from triton.knobs, which also takes "y"; a launcher that parsed
# TRITON_INTERPRET itself disagreed with it. Every launcher reads the knob.
THE_CHECK = """\
# Triton picks the interpreter when @triton.jit decorates a kernel, at import,
# from triton.knobs (TRITON_INTERPRET = 1, true, on, yes or y, any case). Read
# the knob once, at import too, so launchers and kernels agree; a plain bool
# also traces under torch.compile, which cannot call the knob (C++).
_INTERPRETING = triton.knobs.runtime.interpret


def _interpreting() -> bool:
    return _INTERPRETING
"""


def _kernels(module):
    # the module's own kernels as @triton.jit left them (autotuners unwrapped)
    from triton.runtime.interpreter import InterpretedFunction

    found = []
    for value in vars(module).values():
        while isinstance(value, (triton.runtime.Autotuner, triton.runtime.Heuristics)):
            value = value.fn
        if isinstance(value, (triton.runtime.JITFunction, InterpretedFunction)):
            if value.fn.__module__ == module.__name__:
                found.append(value)
    return found


@pytest.mark.parametrize("name", WITH_INTERPRETER_CHECK)
def test_launchers_read_the_knob_triton_reads(name):
    source = (SNIPPETS / f"{name}.py").read_text()
    assert THE_CHECK in source, f"{name}: _interpreting() is not the shared check"
    assert 'environ.get("TRITON_INTERPRET"' not in source, name


@pytest.mark.parametrize("name", WITH_INTERPRETER_CHECK)
def test_launchers_and_kernels_agree(name):
    module = load_snippet(name)
    assert module._interpreting() is triton.knobs.runtime.interpret
    kernels = _kernels(module)
    assert kernels, f"{name}: no kernel found"
    for kernel in kernels:  # JITFunction compiles; InterpretedFunction does not
        compiled = isinstance(kernel, triton.runtime.JITFunction)
        assert compiled is not module._interpreting(), (name, kernel)


def test_every_snippet_with_launchers_is_covered():
    assert len(WITH_INTERPRETER_CHECK) >= 10


def test_a_spelling_only_triton_knew_now_reaches_the_launchers():
    # "y" (any case) turns Triton's interpreter on; the old parsing missed it
    # and refused CPU tensors that Triton would have run (2026-11-27 l03-10)
    script = (
        "import torch, triton\n"
        "from triton_course.snippet_modules import load_file\n"
        "fm = load_file('snippets/fused_mlp_tail.py')\n"
        "va = load_file('snippets/vector_add.py')\n"
        "assert triton.knobs.runtime.interpret and fm._interpreting()\n"
        "y = torch.ones(2, 3)\n"
        "print(fm.bias_gelu_dropout(y, torch.zeros(3)).shape,\n"
        "      va.vector_add(y[0], y[0]).tolist())\n"
    )
    env = dict(os.environ, TRITON_INTERPRET="Y")
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "torch.Size([2, 3]) [2.0, 2.0, 2.0]" in done.stdout


@pytest.mark.parametrize("name", WITH_INTERPRETER_CHECK)
def test_the_interpreter_check_traces_under_torch_compile(name):
    # a launcher called inside torch.compile(fullgraph=True) runs this check:
    # reading triton.knobs there is a graph break (a C++ call dynamo skips),
    # which is how the first GPU run of issue #25 failed
    import torch

    module = load_snippet(name)
    torch._dynamo.reset()  # one lambda, many modules: no recompile limit
    compiled = torch.compile(
        lambda t: t + int(module._interpreting()), fullgraph=True, backend="eager"
    )
    want = float(module._interpreting())
    assert compiled(torch.zeros(2)).tolist() == [want, want]


def test_no_comment_pins_an_interpreter_gap_on_one_version():
    # Review 2026-11-27 ser1-20: the bfloat16 tl.dot gap is the interpreter's
    # on triton 3.6 and 3.9 alike; a comment naming only 3.9 misleads
    import re

    for path in sorted(SNIPPETS.glob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            assert not re.search(r"triton 3\.9's interpreter", line), (
                f"{path.name}:{number}: {line.strip()}"
            )
