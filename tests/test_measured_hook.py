"""hooks/measured.py with fixture data (written to tmp_path, never to data/)."""

import copy
import json
import re
import shutil
import subprocess
import sys

import pytest
import yaml
from conftest import REPO_ROOT

from triton_course import timings as T

SNIPPET = "snippets/vector_add.py"


ROUNDS = 5


def result(ms: float, work: float, jitter=(0.0,) * ROUNDS, wall=None) -> dict:
    """A format-2 result whose rounds are ``ms`` times (1 + jitter)."""
    rounds = [ms * (1 + j) for j in jitter]
    return {
        "rounds_ms": rounds,
        "median_ms": T.quantile(rounds, 0.5),
        "q25_ms": T.quantile(rounds, 0.25),
        "q75_ms": T.quantile(rounds, 0.75),
        "wall_ms": wall or ms,
        "launch_hidden": True,
        "rate": work / T.quantile(rounds, 0.5) / 1e6,
    }


def fixture_doc(
    slug="fixture-gpu-a", name="Fixture GPU A", snippet_hash=None, jitter=None
):
    """A well-formed data file for a made-up GPU; its numbers are test values."""
    rows = []
    for n, (tri, eager) in {4096: (0.010, 0.012), 1048576: (0.020, 0.025)}.items():
        work = 12 * n
        rows.append(
            {
                "size": {"n_elements": n},
                "dtype": "float32",
                "work": work,
                "results": {
                    "Triton": result(tri, work, jitter or (0.0,) * ROUNDS),
                    "PyTorch eager": result(eager, work),
                },
            }
        )
    return {
        "format_version": T.FORMAT_VERSION,
        "gpu": {"slug": slug, "name": name, "sm_count": 7},
        "benchmarks": {
            "vector_add": {
                "title": "Vector addition",
                "snippet": SNIPPET,
                "snippet_sha256": snippet_hash or T.sha256_of(REPO_ROOT / SNIPPET),
                "metric": "bandwidth",
                "unit": "GB/s",
                "params": ["n_elements"],
                "peers": ["Triton", "PyTorch eager"],
                "roofline": {"name": "copy bandwidth", "value": 1000.0, "unit": "GB/s"},
                "provenance": {k: f"test-{k}" for k in T.PROVENANCE_KEYS}
                | {"date": "2026-01-02T03:04:05Z"},
                "timing": {"rounds": ROUNDS, "method": "test"},
                "clocks": {
                    "start": {"sm_mhz": 1980, "temp_c": 40, "power_w": 100.0},
                    "end": {"sm_mhz": 1755, "temp_c": 61, "power_w": 690.0},
                },
                "rows": rows,
            }
        },
    }


def format_1_doc():
    """The same GPU in format 1 (one do_bench per row, p20/p80, no rounds),
    which the loader refuses."""
    doc = fixture_doc()
    doc["format_version"] = 1
    bench = doc["benchmarks"]["vector_add"]
    del bench["timing"], bench["clocks"]
    for row in bench["rows"]:
        for res in row["results"].values():
            for key in ("rounds_ms", "q25_ms", "q75_ms", "wall_ms", "launch_hidden"):
                del res[key]
            res["p20_ms"] = res["p80_ms"] = res["median_ms"]
    return doc


PAGE = """# Fixture page

[[timings vector_add]]

Rate: [[measured bench=vector_add gpu=gpu-a value=rate n_elements=largest dtype=float32]].
Roofline share: [[measured bench=vector_add gpu=gpu-a value=pct_roofline n_elements=4096]].
Speed-up: [[measured bench=vector_add gpu=gpu-a value="ratio:PyTorch eager" n_elements=4096]].
SMs: [[measured gpu=gpu-a value=gpu.sm_count]]. Other GPU: [[measured bench=vector_add gpu=h999 value=rate n_elements=4096]].

```text
[[timings inside_a_code_block_is_left_alone]]
```
"""


def build(
    tmp_path,
    files: dict,
    page=PAGE,
    data_dir="data/timings",
    extra="",
    command_line=False,
):
    """Build a throwaway site with the real hook; return (returncode, html,
    log). In this process (mkdocs_build), or with ``command_line`` as
    `python -m mkdocs build --strict` run from the site's folder: that shows
    the hook finds its imports from any folder (it puts the repository on
    sys.path) and the command exits as the in-process build reports."""
    (tmp_path / "docs").mkdir(exist_ok=True)
    (tmp_path / "docs" / "index.md").write_text(page)
    (tmp_path / "snippets").mkdir(exist_ok=True)
    shutil.copy(REPO_ROOT / SNIPPET, tmp_path / SNIPPET)
    data = tmp_path / "data" / "timings"
    data.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (data / name).write_text(
            content if isinstance(content, str) else json.dumps(content)
        )
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: t\n"
        f"repo_url: https://github.com/example/course\n"
        f"extra:\n  timings_dir: {data_dir}\n{extra}"
        f"hooks:\n  - {REPO_ROOT / 'hooks' / 'measured.py'}\n"
        "markdown_extensions: [admonition, tables, attr_list, md_in_html,\n"
        "  pymdownx.details, pymdownx.superfences,\n"
        "  {pymdownx.tabbed: {alternate_style: true}}]\n"
    )
    if command_line:
        done = subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", "site"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        code, log = done.returncode, done.stderr
    else:
        code, log = mkdocs_build(tmp_path / "mkdocs.yml", tmp_path, tmp_path / "site")
    html_path = tmp_path / "site" / "index.html"
    html = html_path.read_text() if html_path.exists() and code == 0 else ""
    return code, html, log


def mkdocs_build(config_file, cwd, site_dir, text=None):
    """`mkdocs build --strict -f config_file -d site_dir` run from cwd, in
    this process, as mkdocs' command line runs it: (exit status, what it
    logs, and the traceback of an error it does not handle). A process per
    build spent a second importing, several times the build, over some
    fifty builds. ``text``: the config, read as if from config_file."""
    import io
    import logging
    import os
    import traceback

    from mkdocs import exceptions
    from mkdocs.commands.build import build as run_build
    from mkdocs.config import load_config

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)-7s -  %(message)s"))
    logger = logging.getLogger("mkdocs")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)  # what the command line shows without -q/-v
    here = os.getcwd()
    os.chdir(cwd)
    try:
        cfg = load_config(
            str(config_file) if text is None else io.BytesIO(text.encode()),
            config_file_path=str(config_file),
            strict=True,
            site_dir=str(site_dir),
        )
        cfg.plugins.on_startup(command="build", dirty=False)
        try:
            run_build(cfg)
        finally:
            cfg.plugins.on_shutdown()
        code = 0
    except (exceptions.Abort, exceptions.ConfigurationError) as exc:
        stream.write(f"{exc}\n")  # what the command line prints, exit 1
        code = 1
    except Exception:  # the command line would die with this traceback
        stream.write(traceback.format_exc())
        code = 1
    finally:
        os.chdir(here)
        logger.removeHandler(handler)
        logger.setLevel(level)
    return code, stream.getvalue()


def test_table_and_inline_numbers_come_from_the_data(tmp_path):
    doc = fixture_doc()
    code, html, err = build(tmp_path, {"fixture-gpu-a.json": doc}, command_line=True)
    assert code == 0, err
    assert "Fixture GPU A (7 SMs), measured 2026-01-02" in html
    assert "÷ eager" in html and "% copy bandwidth" in html  # the compact table
    # 12 * 2**20 bytes / 0.020 ms = 629 GB/s; 4096 row: 4.9 GB/s = 0.49 % of 1000
    assert "Rate: 629 GB/s." in html
    assert "Roofline share: 0.49 % (0.48–0.51 %)." in html
    assert "Speed-up: 1.20× ±3 %." in html  # no spread in rounds: the ±3 % floor
    # the table: GPU time with its spread, the clocks, the method
    assert "Triton GPU ms" in html and "interleaved rounds" in html
    assert "SM clock 1980→1755 MHz, 40→61 °C, 100.0→690.0 W" in html
    assert "SMs: 7." in html
    assert "not yet measured on H999" in html
    assert "[[timings inside_a_code_block_is_left_alone]]" in html
    assert "earlier version of this kernel" not in html


def test_target_renders_met_missed_or_too_close_to_call(tmp_path):
    # 4096 row: Triton 0.010 ms, eager 0.012 ms -> 1.20x, interval ±3 % (the
    # floor: the fixture's rounds do not vary) = 1.164..1.236.
    ratio = "bench=vector_add gpu=gpu-a value='ratio:PyTorch eager' n_elements=4096"
    page = (
        f"A [[measured {ratio} target=1.16]]. "
        f"B [[measured {ratio} target=1.24]]. "
        f"C [[measured {ratio} target=1.2]]. "
        "D [[measured bench=vector_add gpu=gpu-a value=pct_roofline "
        "n_elements=1048576 target=60]].\n"
    )
    code, html, err = build(tmp_path, {"fixture-gpu-a.json": fixture_doc()}, page)
    assert code == 0, err
    assert "A 1.20× ±3 % (met)." in html
    assert "B 1.20× ±3 % (missed)." in html
    assert "C 1.20× ±3 % (too close to call)." in html
    # 12 * 2**20 bytes / 0.020 ms = 629 GB/s = 63 % of 1000, ±3 %: 61..65
    assert "D 63 % (61–65 %) (met)." in html


def test_a_wide_spread_makes_a_verdict_too_close_to_call(tmp_path):
    # Triton's rounds spread by ±20 %: the round-by-round ratio 1.20x has an
    # interquartile interval of about 1.09..1.33, so 1.16 is no longer "met".
    jitter = (-0.2, -0.1, 0.0, 0.1, 0.2)
    ratio = "bench=vector_add gpu=gpu-a value='ratio:PyTorch eager' n_elements=4096"
    page = f"A [[measured {ratio} target=1.16]].\n"
    doc = fixture_doc(jitter=jitter)
    code, html, err = build(tmp_path, {"fixture-gpu-a.json": doc}, page)
    assert code == 0, err
    assert "A 1.20× ±" in html and "(too close to call)." in html
    spread = T.paired_ratio(doc["benchmarks"]["vector_add"]["rows"][0], "PyTorch eager")
    assert spread.low < 1.16 < spread.high


def test_verdict_judges_every_selected_row(tmp_path):
    # Ratios to eager: 1.20 at 4096 elements, 1.25 at 1048576, each ±3 %;
    # shares of the roofline: 0.49 % and 63 % (±3 %).
    eager = "bench=vector_add gpu=gpu-a value='ratio:PyTorch eager'"
    share = "bench=vector_add gpu=gpu-a value=pct_roofline"
    page = (
        f"A [[verdict {eager} target=1.1]].\n\n"
        f"B [[verdict {eager} target=1.21]].\n\n"
        f"C [[verdict {share} target=50 dtype=float32]].\n\n"
        f"D [[verdict {eager} target=1.25 n_elements=1048576]].\n\n"
        f"E [[verdict {share} target=66 n_elements=1048576]].\n\n"
        f"F [[verdict {share} target=60 n_elements=>=65536]].\n\n"
        f"G [[verdict {eager} target=1.3]].\n"
    )
    code, html, err = build(tmp_path, {"fixture-gpu-a.json": fixture_doc()}, page)
    assert code == 0, err
    assert "A met at all 2 sizes (lowest 1.20× ±3 %)." in html
    assert (
        "B met at 1, too close to call at 1 of 2 sizes (lowest 1.20× ±3 %, at "
        "n_elements 2<sup>12</sup>)." in html
    )
    assert (
        "C met at 1, missed at 1 of 2 sizes (lowest 0.49 % (0.48–0.51 %), at n_elements "
        "2<sup>12</sup>)." in html
    )
    assert "D too close to call (1.25× ±3 %)." in html
    assert "E missed (63 % (61–65 %))." in html
    assert "F met (63 % (61–65 %))." in html  # the 4096 row is below the range
    assert "G missed at 2 of 2 sizes" in html


CLAIM = "bench=vector_add gpu=gpu-a value='ratio:PyTorch eager'"


def test_a_claim_the_data_supports_renders_its_numbers(tmp_path):
    page = (
        f"A [[claim {CLAIM} is='>1.1' n_elements=4096]]. "
        f"B [[claim {CLAIM} is='>=1.1']]. "
        f"C [[claim {CLAIM} is='~1.2' n_elements=4096]]. "
        f"D [[claim {CLAIM} is='<1.5']].\n"
    )
    code, html, err = build(tmp_path, {"fixture-gpu-a.json": fixture_doc()}, page)
    assert code == 0, err
    assert "A 1.20× ±3 %." in html
    assert "B 1.20× ±3 % to 1.25× ±3 % over 2 sizes." in html
    assert "C 1.20× ±3 %." in html
    assert "D 1.20× ±3 % to 1.25× ±3 % over 2 sizes." in html


@pytest.mark.parametrize(
    "claim, message",
    [
        ("is='<1'", "is contradicted by"),
        ("is='>1.3'", "is contradicted by"),
        ("is='>1.2' n_elements=4096", "too close to call"),
        ("is='~1.0'", "is contradicted by"),
        ("is='about 1'", "expected >X"),
        ("is='>1' n_elements=7", "selects no row"),
    ],
)
def test_a_claim_the_data_does_not_support_fails_the_build(tmp_path, claim, message):
    page = f"# P\n\nThe kernel wins: [[claim {CLAIM} {claim}]].\n"
    code, _, err = build(tmp_path, {"fixture-gpu-a.json": fixture_doc()}, page)
    assert code != 0
    assert message in err and "index.md" in err


def test_every_broken_claim_is_named_before_the_build_fails(tmp_path):
    page = (
        f"# P\n\nOne [[claim {CLAIM} is='<1' n_elements=4096]].\n\n"
        f"Two [[claim {CLAIM} is='>2' n_elements=1048576]].\n"
    )
    doc = fixture_doc()
    code, _, err = build(tmp_path, {"fixture-gpu-a.json": doc}, page, command_line=True)
    assert code != 0
    assert "2 claim(s)" in err
    assert "index.md:3" in err and "index.md:5" in err


def test_a_peer_newer_than_the_run_states_nothing_and_a_typo_still_fails(tmp_path):
    # data/reproducibility holds an older run: a peer a snippet added since
    # (here vector_add's "PyTorch eager", taken out of the run) is not there
    doc = fixture_doc()
    bench = doc["benchmarks"]["vector_add"]
    bench["peers"] = ["Triton"]
    for row in bench["rows"]:
        del row["results"]["PyTorch eager"]
    page = (
        f"A [[claim {CLAIM} is='>1.1']]. "
        "B [[verdict bench=vector_add gpu=gpu-a value='ratio:PyTorch eager' target=1.0]]. "
        "C [[measured bench=vector_add gpu=gpu-a value='ratio:PyTorch eager' n_elements=4096]].\n"
    )
    code, html, err = build(tmp_path, {"fixture-gpu-a.json": doc}, page)
    assert code == 0, err
    said = (
        "not measured in fixture-gpu-a.json\u2019s run: PyTorch eager is a newer peer"
    )
    assert html.count(said) == 3 or html.count(said.replace("\u2019", "'")) == 3, html
    typo = page.replace("PyTorch eager", "PyTorch eagre")
    code, _, err = build(tmp_path, {"fixture-gpu-a.json": doc}, typo)
    assert code != 0 and "no result for peer 'PyTorch eagre'" in err


def test_a_claim_on_an_unmeasured_gpu_states_nothing(tmp_path):
    page = "[[claim bench=vector_add gpu=h999 value=pct_roofline is='>50']]\n"
    code, html, err = build(tmp_path, {"fixture-gpu-a.json": fixture_doc()}, page)
    assert code == 0, err
    assert "not yet measured on H999" in html


def test_a_format_1_file_is_refused_with_what_to_do(tmp_path):
    code, _, err = build(tmp_path, {"fixture-gpu-a.json": format_1_doc()})
    assert code != 0
    assert "fixture-gpu-a.json" in err and "format_version 1" in err
    assert "python -m triton_course.runner run" in err


def test_rows_lacking_the_new_fields_are_refused_with_what_to_do(tmp_path):
    doc = fixture_doc()
    del doc["benchmarks"]["vector_add"]["rows"][0]["results"]["Triton"]["rounds_ms"]
    code, _, err = build(tmp_path, {"fixture-gpu-a.json": doc})
    assert code != 0 and "fixture-gpu-a.json" in err and "rounds_ms" in err
    doc = fixture_doc()
    del doc["benchmarks"]["vector_add"]["timing"]
    code, _, err = build(tmp_path, {"fixture-gpu-a.json": doc})
    assert code != 0 and "lacks ['timing']" in err and "runner run" in err


@pytest.mark.parametrize(
    "kind, directive, message",
    [
        ("measured", "value=rate n_elements=4096 target=1", "target= needs"),
        (
            "measured",
            "value=pct_roofline n_elements=4096 target=high",
            "target must be a number",
        ),
        ("verdict", "value=pct_roofline", "needs bench=, gpu=, value= and target="),
        ("verdict", "value=rate target=1", "target= needs"),
        ("verdict", "value=pct_roofline target=1 n_rows=3", "unknown selector"),
        ("verdict", "value=pct_roofline target=1 dtype=float16", "selects no row"),
        ("claim", "value=rate is='>1'", "claim value must be"),
        ("claim", "value=pct_roofline", "claim needs bench=, gpu=, value= and is="),
    ],
)
def test_bad_target_or_verdict_fails_the_build(tmp_path, kind, directive, message):
    page = f"[[{kind} bench=vector_add gpu=gpu-a {directive}]]\n"
    code, _, err = build(tmp_path, {"fixture-gpu-a.json": fixture_doc()}, page)
    assert code != 0 and message in err


def test_one_tab_per_gpu(tmp_path):
    files = {
        "fixture-gpu-a.json": fixture_doc(),
        "fixture-gpu-b.json": fixture_doc("fixture-gpu-b", "Fixture GPU B"),
    }
    page = "# P\n\n[[timings vector_add]]\n"
    code, html, err = build(tmp_path, files, page=page)
    assert code == 0, err
    assert html.count('class="tabbed-labels"') == 1
    assert "Fixture GPU A" in html and "Fixture GPU B" in html


def test_stale_table_is_marked(tmp_path):
    code, html, err = build(
        tmp_path, {"fixture-gpu-a.json": fixture_doc(snippet_hash="0" * 64)}
    )
    assert code == 0, err
    assert "Measured on an earlier version of this kernel" in html
    assert 'title="measured on an earlier version of this kernel"' in html


def test_no_data_says_so_and_shows_no_number(tmp_path):
    page = "# P\n\n[[timings vector_add]]\n"
    code, html, err = build(tmp_path, {}, page=page)
    assert code == 0, err
    assert "Not yet measured on a GPU" in html
    assert "GB/s" not in html


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "not valid JSON"),
        ({"format_version": 99}, "format_version"),
        ("BROKEN_ROWS", "'rows' must be a non-empty list"),
        ("BAD_SLUG", "does not match the file name"),
    ],
)
def test_malformed_data_fails_the_build_clearly(tmp_path, content, message):
    if content == "BROKEN_ROWS":
        content = fixture_doc()
        content["benchmarks"]["vector_add"]["rows"] = []
    elif content == "BAD_SLUG":
        content = fixture_doc(slug="another-name")
    code, _, err = build(tmp_path, {"fixture-gpu-a.json": content})
    assert code != 0
    assert "fixture-gpu-a.json" in err and message in err


def test_missing_data_directory_fails_the_build(tmp_path):
    code, _, err = build(tmp_path, {}, data_dir="data/no-such-dir")
    assert code != 0 and "timing-data directory not found" in err


def test_selector_matching_no_row_fails_the_build(tmp_path):
    page = "# P\n\n[[measured bench=vector_add gpu=gpu-a value=rate n_elements=3]]\n"
    code, _, err = build(tmp_path, {"fixture-gpu-a.json": fixture_doc()}, page=page)
    assert code != 0 and "index.md:3" in err and "selects 0 rows" in err


def test_write_atomic_validates_and_leaves_the_old_file_on_failure(tmp_path):
    path = tmp_path / "fixture-gpu-a.json"
    T.write_atomic(path, fixture_doc())
    before = path.read_bytes()
    broken = copy.deepcopy(fixture_doc())
    del broken["benchmarks"]["vector_add"]["provenance"]["driver"]
    with pytest.raises(T.TimingDataError, match="provenance lacks"):
        T.write_atomic(path, broken)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["fixture-gpu-a.json"]


def test_shipped_data_files_are_valid():
    # Whatever the runner has committed must pass the same validation
    for gpu in T.load_dir(REPO_ROOT / "data" / "timings"):
        assert gpu.benchmarks, f"{gpu.path.name} holds no benchmarks"


def test_benchmark_not_yet_measured_on_a_gpu_says_so(tmp_path):
    # vector_add is declared in the (copied) snippet but absent from this file.
    doc = fixture_doc()
    doc["benchmarks"]["other_bench"] = doc["benchmarks"].pop("vector_add")
    page = "# P\n\n[[measured bench=vector_add gpu=gpu-a value=rate n_elements=4096]]\n"
    code, html, err = build(tmp_path, {"fixture-gpu-a.json": doc}, page=page)
    assert code == 0, err
    assert "not yet measured on Fixture GPU A" in html


def test_undeclared_benchmark_name_fails_the_build(tmp_path):
    page = "# P\n\n[[measured bench=vector_ad gpu=gpu-a value=rate n_elements=4096]]\n"
    code, _, err = build(tmp_path, {"fixture-gpu-a.json": fixture_doc()}, page=page)
    assert code != 0 and "no snippet declares a benchmark named 'vector_ad'" in err


# ------------------------------------------- the real site, altered data ---
def _altered_copy(tmp_path, who: str, factor: float, only=None):
    """data/timings copied with every time of ``who`` ("Triton" or "peers")
    multiplied by factor (its rates divided by it), in every benchmark or
    in those named in ``only``."""
    out = tmp_path / f"data-{who}"
    out.mkdir()
    for path in (REPO_ROOT / "data" / "timings").glob("*.json"):
        doc = json.loads(path.read_text())
        for name, bench in doc["benchmarks"].items():
            if only and name not in only:
                continue
            for row in bench["rows"]:
                for peer, res in row["results"].items():
                    if (peer == "Triton") != (who == "Triton"):
                        continue
                    for key in ("median_ms", "p20_ms", "p80_ms", "q25_ms"):
                        if key in res:
                            res[key] *= factor
                    for key in ("q75_ms", "wall_ms"):
                        if key in res:
                            res[key] *= factor
                    if "rounds_ms" in res:
                        res["rounds_ms"] = [t * factor for t in res["rounds_ms"]]
                    res["rate"] /= factor
        (out / path.name).write_text(json.dumps(doc))
    return out


def _build_real_pages(tmp_path, data_dir, monkeypatch):
    """`mkdocs build --strict` of the real pages against ``data_dir``, with
    the real mkdocs.yml less its plugins and every hook but this one: they
    judge no claim, and the whole site takes tens of seconds to build (the
    real site's own build is the shared ``built_site``). Returns (exit
    status, log)."""
    config = yaml.safe_load((REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    config["plugins"] = []  # the search index and the notebooks' pages
    config["hooks"] = ["hooks/measured.py"]
    monkeypatch.setenv("COURSE_TIMINGS_DIR", str(data_dir))
    return mkdocs_build(
        REPO_ROOT / "mkdocs.yml",
        REPO_ROOT,  # pymdownx.snippets reads its base paths from here
        tmp_path / "site",
        text=yaml.safe_dump(config),
    )


@pytest.mark.parametrize(
    "who, only, expected_pages",
    [
        # Triton twice as slow: the "Triton is faster / reaches" claims break
        ("Triton", None, ["softmax.md", "03-custom-kernels/"]),
        # every peer twice as slow: the "Triton is slower" claims break
        ("peers", None, ["03-custom-kernels/"]),
        # one step of a kernel's history slower: "this step gained" breaks
        # (the tiled-GEMM page states its matmul results as verdicts, which
        # report met/missed; lesson 03's overview claims the ratio to cuBLAS)
        (
            "Triton",
            ["matmul", "rowsum_v2_tiled"],
            ["03-custom-kernels/", "04-worked-optimisation"],
        ),
    ],
)
def test_the_real_pages_fail_to_build_on_data_that_contradicts_them(
    tmp_path, monkeypatch, who, only, expected_pages
):
    altered = _altered_copy(tmp_path, who, 2.0, only)
    code, log = _build_real_pages(tmp_path, altered, monkeypatch)
    assert code != 0
    assert "claim(s) in the prose do not hold" in log
    for page in expected_pages:
        assert page in log, f"{page} not named:\n{log[-3000:]}"


def test_the_real_pages_build_against_the_real_data(built_site):
    # the shared strict build of the whole site (conftest.built_site), with
    # the real data: it fails the test if any claim did not hold
    site, _, log = built_site
    assert (site / "index.html").is_file(), log[-3000:]


def test_row_value_compares_two_rows_of_one_benchmark(tmp_path):
    # n = 2^20 moves 256× the bytes of n = 4096 in 2× the time: 128× the rate
    base = "bench=vector_add gpu=fixture-gpu-a value=row:n_elements=4096"
    page = (
        f"M [[measured {base} dtype=float32 n_elements=1048576]].\n\n"
        f"C [[claim {base} is='>100' n_elements=largest]].\n"
    )
    code, html, err = build(tmp_path, {"fixture-gpu-a.json": fixture_doc()}, page)
    assert code == 0, err
    assert "M 128.00× ±3 %." in html and "C 128.00× ±3 %." in html


@pytest.mark.parametrize(
    "value, message",
    [("row:n_elements=7", "no Triton row like"), ("row:stride=1", "expected row:")],
)
def test_row_value_naming_no_row_fails_the_build(tmp_path, value, message):
    page = (
        f"[[measured bench=vector_add gpu=fixture-gpu-a value={value} "
        "dtype=float32 n_elements=4096]]\n"
    )
    code, _, err = build(tmp_path, {"fixture-gpu-a.json": fixture_doc()}, page)
    assert code != 0 and message in err


# ------------------------------------------------- results at a glance (#14) ---
def test_timings_show_plot_then_compact_table_then_the_full_data(tmp_path):
    page = "# P\n\n[[timings vector_add target=1.1]]\n"
    code, html, err = build(tmp_path, {"fixture-gpu-a.json": fixture_doc()}, page)
    assert code == 0, err
    plot, compact = html.find('<div class="course-plot"'), html.find("course-timings")
    details = html.find("<details")
    assert 0 <= plot < compact < details, (plot, compact, details)
    # one plot by default: the page states a ratio target, so the ratio
    # panel (parity, the target, Triton's two sizes) is the one shown
    shown = _svgs(html[:details])
    assert len(shown) == 2  # the column's and the phone's drawing of it
    for svg in shown:
        assert 'class="panel ratio"' in svg and 'class="parity"' in svg
        assert 'class="target"' in svg and "target 1.1×" in svg
        assert svg.count('class="point"') == 2
    # the rate plot (two points for each of the two peers) is one click away
    hidden = _svgs(html[details:])
    assert len(hidden) == 2 and all('class="panel ratio"' not in s for s in hidden)
    triton = hidden[0][hidden[0].find('data-peer="Triton"') :]
    assert triton[: triton.find("</g>")].count('class="point"') == 2
    # compact: rate, ratio with a compact ±, % of the roofline; no GPU-ms column
    table = html[compact:details]
    assert "÷ eager" in table and "% copy bandwidth" in table
    assert "1.20× <small>±3%</small>" in table and "Triton GPU ms" not in table
    # the full table and the downloads sit in the collapsed block
    rest = html[details:]
    assert "Triton GPU ms" in rest and "interleaved rounds" in rest
    assert 'href="assets/data/fixture-gpu-a.json"' in rest
    assert 'href="assets/data/vector_add-fixture-gpu-a.csv"' in rest


def test_the_data_behind_each_table_is_published_as_json_and_csv(tmp_path):
    doc = fixture_doc()
    code, _, err = build(
        tmp_path, {"fixture-gpu-a.json": doc}, "[[timings vector_add]]\n"
    )
    assert code == 0, err
    out = tmp_path / "site" / "assets" / "data"
    assert json.loads((out / "fixture-gpu-a.json").read_text()) == doc
    lines = (out / "vector_add-fixture-gpu-a.csv").read_text().splitlines()
    assert lines[0] == (
        "n_elements,dtype,peer,median_ms,q25_ms,q75_ms,wall_ms,rate_GB_per_s"
    )
    assert len(lines) == 1 + 2 * 2  # two rows, two peers each
    assert lines[1].startswith('4096,float32,"Triton",0.01,')


def test_a_size_parameter_fixed_across_rows_is_said_once(tmp_path):
    doc = fixture_doc()
    bench = doc["benchmarks"]["vector_add"]
    bench["params"] = ["batch", "n_elements"]
    for row in bench["rows"]:
        row["size"] = {"batch": 4, **row["size"]}
    code, html, err = build(
        tmp_path, {"fixture-gpu-a.json": doc}, "[[timings vector_add]]\n"
    )
    assert code == 0, err
    table = html[html.find("course-timings") : html.find("<details")]
    assert "In every row: batch 4." in html and ">batch<" not in table


def test_a_target_against_a_named_peer_is_drawn_against_that_peer(tmp_path):
    page = '# P\n\n[[timings vector_add target=1.1 vs="PyTorch eager"]]\n'
    code, html, err = build(tmp_path, {"fixture-gpu-a.json": fixture_doc()}, page)
    assert code == 0, err
    svg = html[html.find('<div class="course-plot"') :]
    svg = svg[: svg.find("</svg>")]
    assert "Triton ÷ PyTorch eager — float32" in svg and "target 1.1×" in svg
    assert "against: PyTorch eager" in svg and "fastest other" not in svg


@pytest.mark.parametrize(
    "directive, message",
    [
        ("[[timings vector_add target=1.1 vs=cuBLAS]]", "vs='cuBLAS' is not a peer"),
        ("[[timings vector_add vs=eager]]", "takes target=X"),
        ("[[timings vector_add goal=1.1]]", "takes target=X"),
    ],
)
def test_a_timings_directive_with_bad_arguments_fails_the_build(
    tmp_path, directive, message
):
    code, _, err = build(
        tmp_path, {"fixture-gpu-a.json": fixture_doc()}, f"# P\n\n{directive}\n"
    )
    assert code != 0 and message in err, err[-1500:]


def _svgs(html: str) -> list[str]:
    """Every inlined plot SVG of a built page."""
    return re.findall(r"<svg.*?</svg>", html, re.S)


def test_targets_the_page_states_are_drawn_over_the_sizes_they_are_stated_for(
    tmp_path,
):
    share = "bench=vector_add gpu=fixture-gpu-a value=pct_roofline"
    eager = 'bench=vector_add gpu=fixture-gpu-a value="ratio:PyTorch eager"'
    page = (
        "# P\n\n[[timings vector_add]]\n\n"
        f"A [[verdict {share} target=60 n_elements=>=65536]].\n\n"
        f"B [[verdict {eager} target=1.1]].\n"
    )
    code, html, err = build(tmp_path, {"fixture-gpu-a.json": fixture_doc()}, page)
    assert code == 0, err
    # a ratio target is stated: the ratio plot is shown, the rate plot is in
    # the collapsed block; both carry the targets stated for them
    rate, ratio = (
        next(s for s in _svgs(html) if "course-plot-svg wide" in s and test(s))
        for test in (
            lambda s: 'class="panel ratio"' not in s,
            lambda s: 'class="panel ratio"' in s,
        )
    )
    assert html.find(ratio) < html.find("<details") < html.find(rate)
    # the roofline target sits on the rate panel, over the large size only
    # (one size: a short mark), the ratio target on a panel against eager
    roof = re.search(r'<line class="target" data-target="roofline:=60"[^>]*>', rate)
    x1, x2 = (
        float(re.search(rf'{a}="([\d.]+)"', roof.group()).group(1))
        for a in ("x1", "x2")
    )
    assert x2 - x1 == 28 and "target 60 % of the measured ceiling" in rate
    assert 'data-target="ratio:PyTorch eager=1.1"' in ratio
    assert "Triton ÷ PyTorch eager — float32" in ratio
    assert "the fastest other implementation" not in ratio


def test_a_target_over_every_size_spans_the_panel_and_hides_partial_copies(tmp_path):
    eager = 'bench=vector_add gpu=fixture-gpu-a value="ratio:PyTorch eager"'
    page = (
        '# P\n\n[[timings vector_add target=1.1 vs="PyTorch eager"]]\n\n'
        f"A [[measured {eager} target=1.1 dtype=float32 n_elements=4096]].\n"
    )
    code, html, err = build(tmp_path, {"fixture-gpu-a.json": fixture_doc()}, page)
    assert code == 0, err
    wide = next(s for s in _svgs(html) if "course-plot-svg wide" in s)
    lines = re.findall(r'<line class="target"[^>]*>', wide)
    assert len(lines) == 1 and 'x1="64.0"' in lines[0], lines


def test_every_plot_is_drawn_for_the_column_and_for_a_phone(tmp_path):
    code, html, err = build(
        tmp_path, {"fixture-gpu-a.json": fixture_doc()}, "[[timings vector_add]]\n"
    )
    assert code == 0, err
    # the shown plot and the one in the collapsed block, each drawn twice
    svgs = _svgs(html)
    assert len(svgs) == 4
    for wide, narrow in (svgs[:2], svgs[2:]):
        assert 'viewBox="0 0 640 ' in wide and 'viewBox="0 0 350 ' in narrow
    for svg in svgs:  # every drawing carries every point of its kind
        if 'class="panel ratio"' in svg:  # Triton's ratio at its two sizes
            assert svg.count('class="point"') == 2
            continue
        triton = svg[svg.find('data-peer="Triton"') :]
        assert triton[: triton.find("</g>")].count('class="point"') == 2
    assert sum('class="panel ratio"' in s for s in svgs) == 2


def test_a_ratio_in_prose_and_in_the_table_is_one_number(tmp_path):
    # Rounds where the median of the round-by-round ratios differs from the
    # ratio of the two medians: both the [[measured]] directive and the
    # compact table must show the former (what verdicts and claims judge).
    doc = fixture_doc()
    row = doc["benchmarks"]["vector_add"]["rows"][0]  # n_elements=4096
    row["results"]["Triton"] = result(0.010, row["work"], (0.0, 0.3, -0.1, 0.1, 0.2))
    row["results"]["PyTorch eager"] = result(
        0.012, row["work"], (0.3, 0.0, 0.2, -0.1, 0.1)
    )
    paired = T.paired_ratio(row, "PyTorch eager")
    of_medians = (
        row["results"]["Triton"]["rate"] / row["results"]["PyTorch eager"]["rate"]
    )
    assert f"{paired.median:.2f}" != f"{of_medians:.2f}"  # the case is telling
    code, html, err = build(tmp_path, {"fixture-gpu-a.json": doc})
    assert code == 0, err
    prose = re.search(r"Speed-up: ([0-9.]+)× ±([0-9]+) %\.", html)
    assert prose, html
    assert prose.group(1) == f"{paired.median:.2f}"
    cell = f"<td>{prose.group(1)}× <small>±{prose.group(2)}%</small></td>"
    assert cell in html
    assert f"<td>{of_medians:.2f}×" not in html


def test_roofline_is_the_probe_even_where_the_old_runner_raised_it(tmp_path):
    doc = fixture_doc()
    roof = doc["benchmarks"]["vector_add"]["roofline"]
    roof |= {"value": 1200.0, "probe_value": 950.0}
    roof["raised_by"] = {"benchmark": "vector_add", "contender": "PyTorch eager"}
    page = (
        "# Probe\n\nProbe: [[measured bench=vector_add gpu=gpu-a value=roofline_probe "
        "n_elements=4096]]. Ceiling: [[measured bench=vector_add gpu=gpu-a "
        "value=roofline n_elements=4096]].\n"
    )
    code, html, err = build(tmp_path, {"fixture-gpu-a.json": doc}, page=page)
    assert code == 0, err
    assert "Probe: 950 GB/s." in html and "Ceiling: 950 GB/s." in html
    assert "raised" not in html and "went faster" not in html
    # a ceiling never raised has no probe_value: the probe is the value
    del roof["probe_value"], roof["raised_by"]
    code, html, err = build(tmp_path, {"fixture-gpu-a.json": doc}, page=page)
    assert code == 0, err
    assert "Probe: 1 200 GB/s." in html


def test_lesson_02_names_the_longest_h100_sequence_the_data_hold():
    # review 02 finding 1: "the longest sequence" sentence names N and selects
    # that row; N must be the largest n_ctx of the H100 forward data.
    page = REPO_ROOT / "docs/gpu-architecture/02-flash-attention-backward.md"
    text = page.read_text()
    said = re.search(
        r"the longest sequence the benchmark runs, \\\(N = (\d+)\\\)", text
    )
    assert said, "sentence not found"
    doc = json.loads(
        (REPO_ROOT / "data/timings/nvidia-h100-80gb-hbm3.json").read_text()
    )
    rows = doc["benchmarks"]["flash_attention_fwd"]["rows"]
    assert int(said.group(1)) == max(r["size"]["n_ctx"] for r in rows)
    paragraph = text[said.start() : text.index("**Backward.**")]
    assert "n_ctx=largest" not in paragraph
    assert paragraph.count(f"n_ctx={said.group(1)} ") == 3


def test_the_fold_limit_comment_names_only_captured_cases():
    # review fusion finding 3: the launcher comment (shown on the page) may
    # name only |mean| / std cases that the accuracy capture runs.
    from conftest import load_snippet

    fold = load_snippet("layernorm_linear_fold")
    cases = {c[2] for c in fold.ACCURACY_CASES if c[1] == "offset"}
    src = (REPO_ROOT / "snippets/layernorm_linear_fold.py").read_text()
    comment = src[src.index("SUPPORTED_DTYPES") : src.index("FOLD_LIMIT = ")]
    named = {int(n) for n in re.findall(r"the case of (\d+)", comment)}
    assert named and named <= cases, (named, cases)


def test_vs_value_is_a_rate_ratio_when_the_two_benchmarks_do_different_work():
    # lesson 04: the hot call makes twenty passes (20× the work) in 1.5× the
    # cold call's time, so per pass it runs at 20 / 1.5 the cold rate; a ratio
    # of times would say 0.67× (the defect the review of lesson 04 found)
    import importlib.util
    import types

    spec = importlib.util.spec_from_file_location(
        "measured_hook_vs", REPO_ROOT / "hooks" / "measured.py"
    )
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)

    def bench(work, ms):
        result = {"median_ms": ms, "q25_ms": ms, "q75_ms": ms}
        row = {"size": {"n": 1}, "dtype": "float32", "work": work}
        return {"rows": [{**row, "results": {"Triton": result}}]}

    hot, cold = bench(20.0, 1.5), bench(1.0, 1.0)
    g = types.SimpleNamespace(benchmarks={"hot": hot, "cold": cold}, label="g")
    spread, text = hook._shown(hot["rows"][0], hot, "vs:cold", "Triton", g)
    assert spread.median == pytest.approx(20 / 1.5)
    assert text.startswith("13.33×")


# ---------------------------------------------- captures the data lacks ---
CAPTURE_SNIPPET = 'CAPTURES = {"probe_ncu": {"ncu": {"args": ["--ncu"]}}}\n'


def test_a_declared_capture_not_yet_recorded_says_so_inside_its_block(tmp_path):
    # a snippet declares a capture that the data (an older run) lacks: the
    # page says which GPU has not captured it and builds; inside an
    # admonition, what follows the directive stays in the block
    (tmp_path / "snippets").mkdir()
    (tmp_path / "snippets" / "probe.py").write_text(CAPTURE_SNIPPET)
    page = "# P\n\n!!! note\n\n    [[capture probe_ncu]]\n\n    After it.\n"
    code, html, err = build(tmp_path, {"fixture-gpu-a.json": fixture_doc()}, page)
    assert code == 0, err
    assert re.search(
        r'<div class="admonition note">\s*<p class="admonition-title">Note</p>\s*'
        r"<p><em>Not yet captured on Fixture GPU A: "
        r"the output of <code>probe_ncu</code> appears here.*?</em></p>\s*"
        r"<p>After it.</p>\s*</div>",
        html,
        re.S,
    ), html


def test_a_capture_no_snippet_declares_fails_the_build(tmp_path):
    (tmp_path / "snippets").mkdir()
    (tmp_path / "snippets" / "probe.py").write_text(CAPTURE_SNIPPET)
    page = "# P\n\n[[capture probe_nuc]]\n"
    code, _, err = build(tmp_path, {"fixture-gpu-a.json": fixture_doc()}, page)
    assert code != 0
    assert "index.md:3: [[capture probe_nuc]]: no data file holds a capture" in err
    assert "no snippet's CAPTURES declares one" in err
