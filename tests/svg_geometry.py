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


_SHAPE_RE = re.compile(
    r"<g\b([^>]*)>|</g>|<(circle|rect|polygon|path|line)\b([^>]*?)/?>", re.S
)


def _path_segments(d: str) -> list[tuple]:
    """Segments of a path made of absolute M, L, H and V commands."""
    segs, x, y = [], 0.0, 0.0
    for cmd, args in re.findall(r"([MLHV])([^MLHV]*)", d):
        nums = [float(v) for v in re.findall(r"-?[\d.]+", args)]
        if cmd == "M":
            x, y = nums[0], nums[1]
            continue
        nx, ny = (
            (nums[0], nums[1]) if cmd == "L"
            else (nums[0], y) if cmd == "H"
            else (x, nums[0])
        )  # fmt: skip
        segs.append((x, y, nx, ny))
        x, y = nx, ny
    return segs


def data_shapes(svg: str) -> list[tuple]:
    """The data a label must not cover, in viewBox units: ("box", box) for
    each marker (class "point") and ("seg", x1, y1, x2, y2) for each segment
    of a peer's line (class "series-line") or of a spread whisker (class
    "spread")."""
    out, stack = [], [(0.0, 0.0)]
    for m in _SHAPE_RE.finditer(svg):
        if m.group(0).startswith("<g"):
            dx, dy, _ = _transform(_attr(m.group(1), "transform"))
            ox, oy = stack[-1]
            stack.append((ox + dx, oy + dy))
            continue
        if m.group(0) == "</g>":
            stack.pop()
            continue
        tag, attrs = m.group(2), m.group(3)
        cls = _attr(attrs, "class", "")
        ox, oy = stack[-1]
        if cls == "point":
            if tag == "circle":
                cx, cy = float(_attr(attrs, "cx")), float(_attr(attrs, "cy"))
                r = float(_attr(attrs, "r"))
                box = (cx - r, cy - r, cx + r, cy + r)
            elif tag == "rect":
                x, y = float(_attr(attrs, "x")), float(_attr(attrs, "y"))
                box = (x, y, x + float(_attr(attrs, "width")),
                       y + float(_attr(attrs, "height")))  # fmt: skip
            elif tag == "polygon":
                corners = re.findall(r"-?[\d.]+", _attr(attrs, "points"))
                pts = [float(v) for v in corners]
                xs, ys = pts[0::2], pts[1::2]
                box = (min(xs), min(ys), max(xs), max(ys))
            else:
                continue
            out.append(("box", (box[0] + ox, box[1] + oy, box[2] + ox, box[3] + oy)))
        elif cls in ("series-line", "spread") and tag == "path":
            for x1, y1, x2, y2 in _path_segments(_attr(attrs, "d")):
                out.append(("seg", (x1 + ox, y1 + oy, x2 + ox, y2 + oy)))
    return out


def _seg_in_box(box: tuple, seg: tuple) -> bool:
    """Whether a segment passes through a box, sampled every half unit."""
    x1, y1, x2, y2 = seg
    n = max(2, int(math.hypot(x2 - x1, y2 - y1) * 2))
    return any(
        box[0] < x1 + (x2 - x1) * i / n < box[2]
        and box[1] < y1 + (y2 - y1) * i / n < box[3]
        for i in range(n + 1)
    )


def labels_on_data(svg: str, cls: str = "line-label") -> list[str]:
    """The line labels (texts of class ``cls``) whose box covers a marker or
    crosses a peer's line or a whisker."""
    shapes = data_shapes(svg)
    found = []
    for t in text_boxes(svg):
        if f'class="{cls}"' not in t["attrs"]:
            continue
        b = t["box"]
        for kind, s in shapes:
            hit = (
                b[0] < s[2] and s[0] < b[2] and b[1] < s[3] and s[1] < b[3]
                if kind == "box"
                else _seg_in_box(b, s)
            )
            if hit:
                found.append(f"{t['text']!r} on {kind} {tuple(round(v) for v in s)}")
                break
    return found
