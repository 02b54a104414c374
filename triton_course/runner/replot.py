"""Redraw the committed plots from the committed data, on any machine.

    python -m triton_course.runner replot [--data-dir data/timings]
                                          [--plots-dir docs/assets/plots]

Each ``docs/assets/plots/<bench>-<gpu-slug>.svg`` is what a GPU run writes
(``cli.py``: ``plots.render_svg(bench, gpu)`` for every benchmark that
``plots.wants_plot``); this draws the same files with the same function
from ``data/timings/*.json``, so a change to the drawing shows without a GPU.
It only draws: the data files are read, never written.
"""

from __future__ import annotations

from pathlib import Path

from triton_course import timings as T
from triton_course.runner import plots as P

REPO_ROOT = Path(__file__).resolve().parents[2]


def plot_files(gpu: dict, benchmarks: dict) -> dict[str, str]:
    """File name -> SVG of every plot a run that measured these writes."""
    return {
        f"{name}-{gpu['slug']}.svg": P.render_svg(bench, gpu)
        for name, bench in benchmarks.items()
        if P.wants_plot(bench)
    }


def replot(data_dir: Path, plots_dir: Path) -> list[Path]:
    """Write every plot of every data file; returns the paths written."""
    written = []
    for path in sorted(Path(data_dir).glob("*.json")):
        g = T.load_file(path)
        for name, svg in plot_files(g.gpu, g.benchmarks).items():
            out = Path(plots_dir) / name
            if not out.is_file() or out.read_text(encoding="utf-8") != svg:
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_text(svg, encoding="utf-8")
                written.append(out)
    return written


def add_parser(sub) -> None:
    r = sub.add_parser(
        "replot", help="redraw docs/assets/plots from the committed data (no GPU)"
    )
    r.add_argument("--data-dir", type=Path, default=REPO_ROOT / "data" / "timings")
    r.add_argument(
        "--plots-dir", type=Path, default=REPO_ROOT / "docs" / "assets" / "plots"
    )


def main(args) -> int:
    for path in replot(args.data_dir, args.plots_dir):
        print(f"wrote {path}")
    return 0
