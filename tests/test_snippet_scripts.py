"""Every snippet runs as the program its docstring says it is (issue #33).

Each file in ``snippets/`` is run as ``python snippets/<name>.py`` from the
repository root, in a fresh process: under TRITON_INTERPRET=1 on a machine
without CUDA (CI), on the GPU otherwise (the GPU runner's test lane runs this
module). The files are listed from the folder, so a new snippet is run
without a change here. A script fails if it exits non-zero or prints a
traceback, or if the line it prints once its own check passed (naming the
device it ran on) is missing.

The tests are named ``test_runs_as_a_script``: tests/conftest.py counts them
as compile-heavy and starts one per pytest-xdist worker on the GPU runner.

Without a GPU each script runs in a fork of a process that imported torch
and triton once (tests/zygote.py: the same program, without an import that
costs seconds of CPU per script); on a GPU, in a process of its own.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
from conftest import DEVICE, REPO_ROOT, SNIPPETS

SCRIPTS = sorted(path.stem for path in SNIPPETS.glob("*.py"))


def _success_line(name: str) -> str | None:
    """The line ``snippets/<name>.py`` prints once its correctness check
    passed, on this machine's device (None: not named here yet)."""
    on = f"on {DEVICE}"
    if name == "matmul_tma" and DEVICE == "cuda":
        if torch.cuda.get_device_capability()[0] < 9:  # the script says why not
            return "TMA needs compute capability 9.0 (Hopper) or newer"
    if name == "matmul_fp8" and DEVICE == "cuda":
        if torch.cuda.get_device_capability() < (8, 9):  # the script says why not
            return "float8 tensor cores (and Triton's float8e4nv dot) need 8.9"
    return {
        "flash_attention": f"causal=True: output and gradients match float64 {on}",
        "fused_mlp_tail": f"64x1000: matches PyTorch {on}",
        "gpu_basics": f"strided_copy, persistent_copy and fma_chain match PyTorch {on}",
        "layernorm_linear": f"M=130 K=96 N=200: matches PyTorch {on}",
        "layernorm_linear_fold": f"M=130 K=64 N=200: matches PyTorch {on}",
        "matmul": f"130x90 @ 90x70: matches PyTorch {on}",
        "matmul_tma": f"130x96 @ 96x72: matches PyTorch {on}",
        "matmul_fp8": f"130x96 @ (72x96)^T float8: matches float32 {on}",
        "memory_access": f"(200, 129): copies and transposes match PyTorch {on}",
        "online_softmax": f"2 x 20000 : matches PyTorch {on}",
        "optimization_steps": f"(300, 33): all four steps match PyTorch {on}",
        "profiling": f"MLP step matches PyTorch {on}",
        "softmax": f"130 x 3000 : both kernels match PyTorch {on}",
        "softmax_autograd": "gradcheck passes (float64)",
        "vector_add": f"n= 98432: matches PyTorch {on}",
        "vector_add_frameworks": f"Triton: matches PyTorch {on}",
    }.get(name)


def _script_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    if DEVICE == "cpu":  # no CUDA GPU: the docstrings' CPU command
        env["TRITON_INTERPRET"] = "1"
    return env


@pytest.fixture(scope="module")
def runner():
    """run(name) -> (exit status, stdout, stderr) of ``python snippets/<name>.py``."""
    if DEVICE == "cpu":
        from zygote import Zygote

        with Zygote() as zygote:
            yield lambda name: zygote.run(
                f"snippets/{name}.py", cwd=REPO_ROOT, env=_script_env(), timeout=600
            )
        return

    def run(name):
        done = subprocess.run(
            [sys.executable, f"snippets/{name}.py"],
            cwd=REPO_ROOT,
            env=_script_env(),
            capture_output=True,
            text=True,
            timeout=600,
        )
        return done.returncode, done.stdout, done.stderr

    yield run


@pytest.mark.parametrize("name", SCRIPTS)
def test_runs_as_a_script(name, runner):
    code, stdout, stderr = runner(name)
    said = f"python snippets/{name}.py on {DEVICE} printed:\n"
    tail = said + stdout[-1500:] + "\n--- stderr ---\n" + stderr[-3000:]
    assert code == 0, f"exit status {code}\n{tail}"
    # an exception caught and printed is a failure too, whatever the status
    assert "Traceback (most recent call last)" not in stdout + stderr, tail
    expected = _success_line(name)
    if expected is not None:
        assert expected in stdout, f"no line {expected!r}\n{tail}"


def test_every_snippet_names_the_line_it_prints_on_success():
    # an empty folder listing would leave nothing to run and nothing failing
    assert len(SCRIPTS) >= 15 and "layernorm_linear_fold" in SCRIPTS
    # a new snippet runs without a change here; this asks for its line too
    unnamed = [name for name in SCRIPTS if _success_line(name) is None]
    assert unnamed == [], f"add the line each prints on success: {unnamed}"
