"""Draw docs/assets/figures/grouped-ordering.svg (the tiled-GEMM lesson's figure).

Two 6 x 6 grids of C tiles, each tile labelled with the program id that
computes it: row-major order on the left, grouped order (GROUP_M = 3) on the
right. The first nine programs (one "wave" on a GPU with nine SMs) are shaded,
and the rows of A and columns of B they read are marked beside each grid.
Colours use currentColor, so the figure follows the site's light/dark theme.
Two drawings: the panels side by side for the page's column, and one above
the other for a phone (grouped-ordering-narrow.svg).

    python scripts/make_grouped_ordering_svg.py
"""

from pathlib import Path

OUT = (
    Path(__file__).resolve().parent.parent
    / "docs"
    / "assets"
    / "figures"
    / "grouped-ordering.svg"
)
NARROW = OUT.with_name("grouped-ordering-narrow.svg")
TILES, GROUP_M, WAVE, CELL = 6, 3, 9, 30


def row_major(pid):
    return pid // TILES, pid % TILES


def grouped(pid):
    # The same arithmetic as the kernel's grouping section.
    per_group = GROUP_M * TILES
    first_m = (pid // per_group) * GROUP_M
    rows = min(TILES - first_m, GROUP_M)
    return first_m + (pid % per_group) % rows, (pid % per_group) // rows


def panel(x0, y0, order, title):
    owner = {order(pid): pid for pid in range(TILES * TILES)}
    wave = {order(pid) for pid in range(WAVE)}
    rows_read = sorted({m for m, _ in wave})
    cols_read = sorted({n for _, n in wave})
    gx, gy = x0 + 40, y0 + 70  # top-left corner of the C grid
    out = [
        f'<text x="{x0}" y="{y0 + 14}" stroke="none" font-weight="bold">{title}</text>'
    ]
    # B's column panels above the grid, A's row panels to its left.
    out.append(
        f'<text x="{gx + TILES * CELL / 2}" y="{gy - 34}" stroke="none" '
        'text-anchor="middle" font-size="11">columns of B</text>'
    )
    for n in range(TILES):
        op = 0.45 if n in cols_read else 0.06
        out.append(
            f'<rect x="{gx + n * CELL + 3}" y="{gy - 26}" width="{CELL - 6}" '
            f'height="18" fill="currentColor" fill-opacity="{op}" stroke-width="1"/>'
        )
    out.append(
        f'<text x="{gx - 34}" y="{gy + TILES * CELL / 2}" stroke="none" '
        f'text-anchor="middle" font-size="11" transform="rotate(-90 {gx - 34} '
        f'{gy + TILES * CELL / 2})">rows of A</text>'
    )
    for m in range(TILES):
        op = 0.45 if m in rows_read else 0.06
        out.append(
            f'<rect x="{gx - 26}" y="{gy + m * CELL + 3}" width="18" '
            f'height="{CELL - 6}" fill="currentColor" fill-opacity="{op}" '
            'stroke-width="1"/>'
        )
    for (m, n), pid in sorted(owner.items()):
        op = 0.30 if (m, n) in wave else 0.0
        x, y = gx + n * CELL, gy + m * CELL
        out.append(
            f'<rect x="{x}" y="{y}" width="{CELL}" height="{CELL}" '
            f'fill="currentColor" fill-opacity="{op}" stroke-width="1"/>'
        )
        weight = ' font-weight="bold"' if (m, n) in wave else ""
        out.append(
            f'<text x="{x + CELL / 2}" y="{y + CELL / 2 + 4}" stroke="none" '
            f'text-anchor="middle" font-size="11"{weight}>{pid}</text>'
        )
    out.append(
        f'<text x="{gx + TILES * CELL / 2}" y="{gy + TILES * CELL + 24}" '
        f'stroke="none" text-anchor="middle">programs 0–{WAVE - 1} load '
        f"{len(rows_read)} + {len(cols_read)} = "
        f"{len(rows_read) + len(cols_read)} panels</text>"
    )
    return out


def svg_document(body, width, height, suffix=""):
    """The figure's SVG: ``suffix`` keeps the ids of its title and description
    unique when both drawings are on one page."""
    t, d = "t" + suffix, "d" + suffix
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-labelledby="{t} {d}" '
        'font-family="sans-serif" font-size="12" fill="currentColor" '
        'stroke="currentColor">',
        f'<title id="{t}">Row-major versus grouped program order for a tiled '
        "matrix product</title>",
        f'<desc id="{d}">Two 6 by 6 grids of output tiles, each labelled with the '
        "program id that computes it. The first nine programs are shaded. In "
        "row-major order they cover one and a half tile rows and read 2 rows of "
        "A and all 6 columns of B. In grouped order, with groups of 3 tile rows, "
        "they cover a 3 by 3 square and read 3 rows of A and 3 columns of B.</desc>",
        *body,
        "</svg>",
    ]


def main():
    left = ("Row-major order (GROUP_M = 1)", row_major)
    right = (f"Grouped order (GROUP_M = {GROUP_M})", grouped)
    # For the page's column: the two orders side by side.
    wide = panel(10, 10, left[1], left[0]) + panel(340, 10, right[1], right[0])
    # For a phone: one above the other, drawn at about 1:1 in a 358 px
    # column, so the 11-unit labels stay 11 px (side by side they were 6 px).
    narrow = panel(10, 10, left[1], left[0]) + panel(10, 310, right[1], right[0])
    OUT.parent.mkdir(parents=True, exist_ok=True)
    for path, lines in (
        (OUT, svg_document(wide, 660, 330)),
        (NARROW, svg_document(narrow, 270, 605, suffix="n")),
    ):
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
