"""The committed data as the site publishes it (issues #25, #33): every data
file present is format 2 from a real run with the card recorded, every
ceiling a ceiling, nothing stale, no plot without its GPU's data, and every
directive on every page evaluated against it. A GPU appears on the site only
through its data file, so these checks judge whichever files are there."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import REPO_ROOT

from triton_course import timings as T
from triton_course.runner.publish import plot_slug

DATA = sorted((REPO_ROOT / "data" / "timings").glob("*.json"))
PLOTS = sorted((REPO_ROOT / "docs" / "assets" / "plots").glob("*.svg"))


def test_the_site_publishes_at_least_one_gpu():
    assert DATA, "data/timings/ holds no GPU's data: the site would show none"


@pytest.mark.parametrize("path", DATA, ids=[p.stem for p in DATA])
def test_the_data_is_format_2_with_the_card_recorded(path):
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert raw["format_version"] == T.FORMAT_VERSION  # no legacy file is published
    doc = T.load_file(path)  # the validator: refuses anything else
    records = list(doc.benchmarks.items()) + list((doc.captures or {}).items())
    for name, record in records:
        prov = record["provenance"]
        assert prov["device"] == "cuda", name
        assert prov.get("gpu_uuid", "unknown") != "unknown", name
        assert prov["gpu"] == doc.gpu["name"], name


def test_the_site_no_longer_allows_legacy_data():
    assert "legacy_timings" not in (REPO_ROOT / "mkdocs.yml").read_text()


def test_every_plot_belongs_to_a_published_gpu_and_benchmark():
    benchmarks = {p.stem: set(json.loads(p.read_text())["benchmarks"]) for p in DATA}
    orphans = [
        p.name
        for p in PLOTS
        if p.name.removesuffix(f"-{plot_slug(p.name)}.svg")
        not in benchmarks.get(plot_slug(p.name), ())
    ]
    assert not orphans, f"plots with no data behind them: {orphans}"


@pytest.mark.parametrize("path", DATA, ids=[p.stem for p in DATA])
def test_every_rate_above_a_ceiling_is_flagged_and_says_why(path):
    # A roofline is the probe measured in the run; a rate above the vendor's
    # spec-sheet peak, or more than ABOVE_PROBE_TOLERANCE above the probe, is
    # a finding about the work model, the cache or the probe: the data must
    # carry it (the pages mark it with a note saying why), never hide it.
    doc = T.load_file(path)
    unflagged, wrong = [], []
    for name, bench in doc.benchmarks.items():
        assert bench["roofline"].get("vendor_peak") is not None or (
            bench["roofline"].get("ceiling") == "l2"
        ), f"{name}: no vendor peak stored beside the probe"
        for row in bench["rows"]:
            for peer, res in row["results"].items():
                flag = T.above_ceiling(res["rate"], bench, row, doc.gpu)
                where = (name, row["size"], row["dtype"], peer, res["rate"])
                if flag and "above_ceiling" not in res:
                    unflagged.append(where)
                elif res.get("above_ceiling") and not flag:
                    wrong.append(where)
    assert not unflagged, f"rates above a ceiling without a flag: {unflagged}"
    assert not wrong, f"flags on rates under every ceiling: {wrong}"


def test_nothing_published_is_stale_or_missing():
    done = subprocess.run(
        [sys.executable, "-m", "triton_course.runner", "stale"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_directive_on_every_page_was_evaluated(built_site):
    # with data for every GPU published, a directive that renders "not
    # measured" names a benchmark no run measured; one that selects nothing
    # fails the build
    site_dir = built_site[0]
    unevaluated = {
        str(page.relative_to(site_dir)): page.read_text(encoding="utf-8").count(
            "measured on "
        )
        for page in site_dir.rglob("*.html")
        if "not yet measured on" in page.read_text(encoding="utf-8")
        or "not measured on" in page.read_text(encoding="utf-8")
    }
    assert not unevaluated, unevaluated
