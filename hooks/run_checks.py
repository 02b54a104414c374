"""MkDocs hook: what the GPU runner checked about its own numbers.

Placeholder registered by the lead; a helper fills it in (#33):
``[[dram_bytes]]`` and ``[[run_compare]]``.
"""

from __future__ import annotations


def on_page_markdown(markdown: str, **_) -> str:
    return markdown
