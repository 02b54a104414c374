"""``python -m triton_course.runner.publish ARTIFACT...``: the per-GPU gate.

Each GPU job of the GPU workflow uploads one artifact directory::

    data/timings/<slug>.json         the run's data file
    docs/assets/plots/*-<slug>.svg   its plots
    docs/notebooks/*.ipynb           the notebooks it executed
    compare.txt                      ``runner compare`` against the committed file

This command merges them into the working tree, one GPU at a time. A GPU's
data is published only if it is valid format 2 (``timings.load_file``), is
not stale or missing anything for the snippets in the tree
(``cli.stale_report``, what ``runner stale`` runs) and, with ``--commit``,
was measured at that commit. A GPU that fails is left out and named: its
data file and plots are removed from the tree, so the site shows no tab for
it, and so is the data of any GPU that uploaded nothing. Only one set of
notebooks can be published: it comes from ``--notebooks-from SLUG``, or else
from the first GPU that passed, in slug order.

Exit 1, with the tree untouched, when no GPU passes or an artifact is not as
described above (a missing directory, two artifacts for one GPU, a file named
for another GPU, an unexpected file, notebooks that are not this commit's).
Every file is staged and renamed into place (``cli.Stage``) only once every
decision is made. Needs neither torch nor triton: it runs on a machine
without a GPU.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from triton_course import timings as T
from triton_course.runner import cli

DATA = Path("data") / "timings"
PLOTS = Path("docs") / "assets" / "plots"
NOTEBOOKS = Path("docs") / "notebooks"
COMPARE = "compare.txt"  # shown by the workflow, never copied into the tree


class PublishError(Exception):
    """An artifact or an argument is not as the gate expects; nothing changes."""


@dataclass
class Artifact:
    """What one GPU job uploaded."""

    directory: Path
    slug: str
    data: Path
    plots: dict[str, Path] = field(default_factory=dict)  # file name -> path
    notebooks: dict[str, Path] = field(default_factory=dict)


def plot_slug(name: str) -> str:
    """The GPU slug of ``<bench>-<slug>.svg``: benchmark names are snake_case
    (discovery refuses a '-'), so the slug is all after the first '-'."""
    stem = name.removesuffix(".svg")
    if "-" not in stem:
        return ""
    return stem.split("-", 1)[1]


def read_artifact(directory: Path) -> Artifact:
    """Sort an artifact's files; raise PublishError if it is not one GPU's."""
    directory = Path(directory)
    if not directory.is_dir():
        raise PublishError(f"{directory}: no such artifact directory")
    data, plots, notebooks, unexpected = [], {}, {}, []
    for path in sorted(p for p in directory.rglob("*") if not p.is_dir()):
        rel = path.relative_to(directory)
        if path.is_symlink():
            unexpected.append(f"{rel} (a link)")
        elif rel.parent == DATA and path.suffix == ".json":
            data.append(path)
        elif rel.parent == PLOTS and path.suffix == ".svg":
            plots[path.name] = path
        elif rel.parent == NOTEBOOKS and path.suffix == ".ipynb":
            notebooks[path.name] = path
        elif str(rel) != COMPARE:
            unexpected.append(str(rel))
    if unexpected:
        raise PublishError(
            f"{directory}: unexpected file(s) {unexpected}; an artifact holds only "
            f"{DATA}/<slug>.json, {PLOTS}/*-<slug>.svg, {NOTEBOOKS}/*.ipynb "
            f"and {COMPARE}"
        )
    if len(data) != 1:
        found = [p.name for p in data]
        raise PublishError(
            f"{directory}: expected one data file in {DATA}/, found {found or 'none'}"
        )
    (path,) = data
    slug = path.stem
    try:
        inner = json.loads(path.read_text(encoding="utf-8"))["gpu"]["slug"]
    except (ValueError, KeyError, TypeError):
        inner = None  # malformed: the gate names why and leaves this GPU out
    if inner is not None and inner != slug:
        raise PublishError(
            f"{path}: the file is named for {slug!r} but its gpu.slug is {inner!r}"
        )
    foreign = sorted(n for n in plots if plot_slug(n) != slug)
    if foreign:
        raise PublishError(
            f"{directory}: plot(s) {foreign} are not named <bench>-{slug}.svg, "
            f"the GPU of this artifact's data file"
        )
    return Artifact(directory, slug, path, plots, notebooks)


def gate(artifact: Artifact, root: Path, commit: str | None) -> str | None:
    """Why this GPU's data may not be published, or None if it may."""
    try:
        doc = T.load_file(artifact.data)  # format 2 only
    except T.TimingDataError as exc:
        return f"not valid format-2 data: {exc}"
    if commit:
        records = list(doc.benchmarks.items()) + [
            (f"capture {n}", c) for n, c in (doc.captures or {}).items()
        ]
        other = sorted(
            {
                str(r["provenance"].get("commit"))
                for _, r in records
                if str(r["provenance"].get("commit")).lower() != commit.lower()
            }
        )
        if other:
            return (
                f"measured at commit {', '.join(other)}, not at {commit}, the "
                "commit being published"
            )
    # Judged alone, in a directory of its own, by what `runner stale` runs.
    with tempfile.TemporaryDirectory(prefix="publish-gate-") as tmp:
        alone = Path(tmp) / artifact.data.name
        alone.write_bytes(artifact.data.read_bytes())
        lines, problems = cli.stale_report(Path(tmp), root / "snippets", root)
    if problems:
        flagged = [
            line.split("): ", 1)[-1]
            for line in lines
            if "note:" not in line and "up to date" not in line
        ]
        return "stale or incomplete for the snippets at this commit: " + "; ".join(
            flagged
        )
    return None


def _cells(path: Path) -> list[tuple[str, str]]:
    """A notebook's cells as (type, source): what the recipe builds, not outputs."""
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
        cells = nb["cells"]
        return [
            (
                c["cell_type"],
                "".join(c["source"]) if isinstance(c["source"], list) else c["source"],
            )
            for c in cells
        ]
    except (ValueError, KeyError, TypeError) as exc:
        raise PublishError(f"{path}: not a readable notebook ({exc})") from None


def check_notebooks(artifact: Artifact, root: Path) -> None:
    """The artifact's notebooks are exactly this commit's, executed."""
    tree = {p.name: p for p in sorted((root / NOTEBOOKS).glob("*.ipynb"))}
    if set(artifact.notebooks) != set(tree):
        raise PublishError(
            f"{artifact.directory}: its notebooks {sorted(artifact.notebooks)} are "
            f"not the tree's {sorted(tree)}"
        )
    for name, path in artifact.notebooks.items():
        if _cells(path) != _cells(tree[name]):
            raise PublishError(
                f"{path}: its cells differ from {tree[name]}: it was executed from "
                "another commit's notebook"
            )


@dataclass
class Plan:
    published: list[str]
    left_out: dict[str, str]  # slug -> why
    notebooks_from: str
    stage: cli.Stage
    remove: list[Path]


def plan(
    artifact_dirs: list[Path],
    root: Path,
    commit: str | None = None,
    notebooks_from: str | None = None,
) -> Plan:
    """Every decision, made before anything is written."""
    if not artifact_dirs:
        raise PublishError("no GPU results to publish: no artifact directory given")
    artifacts: dict[str, Artifact] = {}
    for directory in artifact_dirs:
        art = read_artifact(directory)
        if art.slug in artifacts:
            raise PublishError(
                f"two artifacts for the GPU {art.slug!r}: "
                f"{artifacts[art.slug].directory} and {art.directory}"
            )
        artifacts[art.slug] = art
    left_out: dict[str, str] = {}
    published = []
    for slug in sorted(artifacts):  # the fixed order: by slug
        why = gate(artifacts[slug], root, commit)
        if why:
            left_out[slug] = why
        else:
            published.append(slug)
    # A GPU whose job uploaded nothing is not published on old data.
    for path in sorted((root / DATA).glob("*.json")):
        if path.stem not in artifacts:
            left_out[path.stem] = "no run of this commit uploaded its results"
    if not published:
        raise PublishError("no GPU passed the gate", left_out)
    if notebooks_from is None:
        notebooks_from = published[0]
    elif notebooks_from not in published:
        why = left_out.get(notebooks_from, "no artifact holds its results")
        raise PublishError(
            f"--notebooks-from {notebooks_from}: not a GPU being published ({why})",
            left_out,
        )
    check_notebooks(artifacts[notebooks_from], root)

    stage, remove = cli.Stage(), []
    for slug in published:
        art = artifacts[slug]
        stage.add(root / DATA / art.data.name, art.data.read_bytes())
        for name, path in art.plots.items():
            stage.add(root / PLOTS / name, path.read_bytes())
    for name, path in artifacts[notebooks_from].notebooks.items():
        stage.add(root / NOTEBOOKS / name, path.read_bytes())
    # Old files of every GPU not published, and plots a new run did not make;
    # an SVG of no GPU known here is not the gate's to remove.
    known = set(artifacts) | set(left_out)
    for path in sorted((root / DATA).glob("*.json")):
        if path.stem not in published:
            remove.append(path)
    for path in sorted((root / PLOTS).glob("*.svg")):
        slug = plot_slug(path.name)
        kept = artifacts[slug].plots if slug in published else {}
        if slug in known and path.name not in kept:
            remove.append(path)
    return Plan(published, left_out, notebooks_from, stage, remove)


def publish(
    artifact_dirs: list[Path],
    root: Path,
    commit: str | None = None,
    notebooks_from: str | None = None,
) -> Plan:
    """Merge the artifacts that pass into ``root``; raise PublishError, with
    ``root`` untouched, if none does or an artifact is malformed."""
    done = plan(artifact_dirs, root, commit, notebooks_from)
    done.stage.commit()
    for path in done.remove:
        path.unlink()
    return done


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m triton_course.runner.publish",
        description="Merge the GPU jobs' results into the tree, one GPU at a "
        "time: only current format-2 data of this commit is published.",
    )
    p.add_argument(
        "artifacts",
        nargs="*",
        type=Path,
        help="one directory per GPU job (data/timings/<slug>.json, plots, "
        "notebooks, compare.txt)",
    )
    p.add_argument("--root", type=Path, default=cli.REPO_ROOT, help="the tree")
    p.add_argument("--commit", help="refuse data measured at any other commit")
    p.add_argument(
        "--notebooks-from",
        metavar="SLUG",
        help="the GPU whose executed notebooks are published (default: the "
        "first GPU that passes, by slug)",
    )
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        done = publish(args.artifacts, args.root, args.commit, args.notebooks_from)
    except PublishError as exc:
        message, *rest = exc.args
        for slug, why in (rest[0] if rest else {}).items():
            print(f"publish: left out {slug}: {why}", file=sys.stderr)
        print(f"publish: FAILED, nothing was changed: {message}", file=sys.stderr)
        return 1
    for slug in done.published:
        print(f"publish: published {slug}")
    for slug, why in done.left_out.items():
        print(f"publish: left out {slug}: {why}")
    print(f"publish: notebooks executed on {done.notebooks_from}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
