"""Where a plot's texts land: an SVG text's box from its position, anchor,
font size and transforms (translate, rotate; nested <g transform>), so that
tests can check every text is inside the viewBox and no two overlap.

Widths are estimated at 0.55 em a character (system-ui digits and capitals
are about that; a browser test measures the real boxes with getBBox)."""

from __future__ import annotations

import math
import re
from html import unescape

_TAG_RE = re.compile(r"<(/?)(g|text)\b([^>]*)>(?:(.*?)</text>)?", re.S)


def _attr(attrs: str, name: str, default=None):
    m = re.search(rf'\b{name}="([^"]*)"', attrs)
    return m.group(1) if m else default


def _transform(text: str | None):
    """(dx, dy, degrees) of translate(...) rotate(...)."""
    dx = dy = deg = 0.0
    if text:
        if m := re.search(r"translate\(([-\d.]+)[ ,]+([-\d.]+)\)", text):
            dx, dy = float(m.group(1)), float(m.group(2))
        if m := re.search(r"rotate\(([-\d.]+)\)", text):
            deg = float(m.group(1))
    return dx, dy, deg


def text_boxes(svg: str) -> list[dict]:
    """Each <text> with its estimated box (x1, y1, x2, y2) in viewBox units."""
    out, stack = [], [(0.0, 0.0)]
    for m in re.finditer(r"<g\b([^>]*)>|</g>|<text\b([^>]*)>(.*?)</text>", svg, re.S):
        tag = m.group(0)
        if tag.startswith("<g"):
            dx, dy, _ = _transform(_attr(m.group(1), "transform"))
            ox, oy = stack[-1]
            stack.append((ox + dx, oy + dy))
            continue
        if tag == "</g>":
            stack.pop()
            continue
        attrs, inner = m.group(2), m.group(3)
        content = unescape(re.sub(r"<[^>]+>", "", inner))
        size = float(_attr(attrs, "font-size", "12"))
        width = 0.55 * size * len(content)
        anchor = _attr(attrs, "text-anchor", "start")
        x0 = {"start": 0.0, "middle": -width / 2, "end": -width}[anchor]
        corners = [(x0, -0.75 * size), (x0 + width, -0.75 * size),
                   (x0, 0.25 * size), (x0 + width, 0.25 * size)]  # fmt: skip
        tx, ty, deg = _transform(_attr(attrs, "transform"))
        x = float(_attr(attrs, "x", "0")) + tx
        y = float(_attr(attrs, "y", "0")) + ty
        c, s = math.cos(math.radians(deg)), math.sin(math.radians(deg))
        pts = [(x + c * a - s * b, y + s * a + c * b) for a, b in corners]
        ox, oy = stack[-1]
        xs, ys = [p[0] + ox for p in pts], [p[1] + oy for p in pts]
        out.append({"text": content, "box": (min(xs), min(ys), max(xs), max(ys)),
                    "rotated": bool(deg), "attrs": attrs})  # fmt: skip
    return out


def viewbox(svg: str) -> tuple[float, float]:
    m = re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg)
    return float(m.group(1)), float(m.group(2))


def outside(svg: str) -> list[str]:
    """The texts whose box leaves the viewBox."""
    w, h = viewbox(svg)
    return [
        f"{t['text']!r} at {tuple(round(v) for v in t['box'])} in 0 0 {w:.0f} {h:.0f}"
        for t in text_boxes(svg)
        if t["box"][0] < -0.5 or t["box"][1] < -0.5
        or t["box"][2] > w + 0.5 or t["box"][3] > h + 0.5
    ]  # fmt: skip


def overlaps(svg: str) -> list[str]:
    """Pairs of horizontal texts whose boxes overlap."""
    flat = [t for t in text_boxes(svg) if not t["rotated"]]
    found = []
    for i, a in enumerate(flat):
        for b in flat[i + 1 :]:
            (a1, a2, a3, a4), (b1, b2, b3, b4) = a["box"], b["box"]
            if a1 < b3 - 1 and b1 < a3 - 1 and a2 < b4 - 1 and b2 < a4 - 1:
                found.append(f"{a['text']!r} on {b['text']!r}")
    return found
