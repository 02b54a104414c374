"""Conventions every snippet's launchers share."""

from __future__ import annotations

import pytest
from conftest import SNIPPETS, load_snippet

WITH_INTERPRETER_CHECK = sorted(
    p.stem for p in SNIPPETS.glob("*.py") if "def _interpreting(" in p.read_text()
)


@pytest.mark.parametrize("name", WITH_INTERPRETER_CHECK)
def test_launchers_read_triton_interpret_as_triton_does(name, monkeypatch):
    # Triton interprets for 1, true, on and yes: a launcher that reads only
    # "1" would refuse CPU tensors while Triton runs its kernels on the CPU
    module = load_snippet(name)
    for value in ("1", "true", "on", "yes", "TRUE"):
        monkeypatch.setenv("TRITON_INTERPRET", value)
        assert module._interpreting() is True, value
    for value in ("0", "false", "off"):
        monkeypatch.setenv("TRITON_INTERPRET", value)
        assert module._interpreting() is False, value


def test_every_snippet_with_launchers_is_covered():
    assert len(WITH_INTERPRETER_CHECK) >= 10


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
    assert compiled(torch.zeros(2)).tolist() == [1.0, 1.0]  # conftest: interpreting
