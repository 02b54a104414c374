"""Reference solution of "catch_missing_mask": a guard-region test."""

import torch


def writes_past_the_end(add) -> bool:
    # n odd: not a multiple of any block size but 1, so the last block is ragged
    # (1000 would not do: 1000 = 8 * 125 fills 8-element blocks exactly).
    n, guard = 1001, 2048
    x, y = torch.randn(n), torch.randn(n)
    buffer = torch.full((n + guard,), float("nan"))
    add(x, y, out=buffer[:n])
    return not torch.isnan(buffer[n:]).all().item()
