"""Reference solution of "catch_missing_mask": a guard-region test."""

import torch


def writes_past_the_end(add) -> bool:
    n, guard = 1000, 2048  # 1000 is not a multiple of any power-of-two block
    x, y = torch.randn(n), torch.randn(n)
    buffer = torch.full((n + guard,), float("nan"))
    add(x, y, out=buffer[:n])
    return not torch.isnan(buffer[n:]).all().item()
