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
