"""hooks/measured.py with fixture data (written to tmp_path, never to data/)."""

import copy
import json
import shutil
import subprocess
import sys

import pytest
from conftest import REPO_ROOT

from triton_course import timings as T

SNIPPET = "snippets/vector_add.py"


def fixture_doc(slug="fixture-gpu-a", name="Fixture GPU A", snippet_hash=None):
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
                    "Triton": {
                        "median_ms": tri,
                        "p20_ms": tri,
                        "p80_ms": tri,
                        "rate": work / tri / 1e6,
                    },
                    "PyTorch eager": {
                        "median_ms": eager,
                        "p20_ms": eager,
                        "p80_ms": eager,
                        "rate": work / eager / 1e6,
                    },
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
                "rows": rows,
            }
        },
    }


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


def build(tmp_path, files: dict, page=PAGE, data_dir="data/timings"):
    """Build a throwaway site with the real hook; return (returncode, html, stderr)."""
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
        f"extra:\n  timings_dir: {data_dir}\n"
        f"hooks:\n  - {REPO_ROOT / 'hooks' / 'measured.py'}\n"
        "markdown_extensions: [admonition, tables, attr_list, md_in_html,\n"
        "  pymdownx.superfences, {pymdownx.tabbed: {alternate_style: true}}]\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", "site"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    html_path = tmp_path / "site" / "index.html"
    html = html_path.read_text() if html_path.exists() and done.returncode == 0 else ""
    return done.returncode, html, done.stderr


def test_table_and_inline_numbers_come_from_the_data(tmp_path):
    code, html, err = build(tmp_path, {"fixture-gpu-a.json": fixture_doc()})
    assert code == 0, err
    assert "Fixture GPU A (7 SMs), measured 2026-01-02" in html
    assert "Triton ÷ PyTorch eager" in html and "Triton % of copy bandwidth" in html
    # 12 * 2**20 bytes / 0.020 ms = 629 GB/s; 4096 row: 4.9 GB/s = 0.49 % of 1000
    assert "Rate: 629 GB/s." in html
    assert "Roofline share: 0 %." in html
    assert "Speed-up: 1.20×." in html
    assert "SMs: 7." in html
    assert "not yet measured on H999" in html
    assert "[[timings inside_a_code_block_is_left_alone]]" in html
    assert "earlier version of this kernel" not in html


def test_target_renders_met_or_missed_from_the_data(tmp_path):
    # 4096 row: Triton 0.010 ms, eager 0.012 ms -> 1.20x; 1048576 row -> 1.25x.
    page = (
        "A [[measured bench=vector_add gpu=gpu-a value='ratio:PyTorch eager' "
        "n_elements=4096 target=1.2]]. "
        "B [[measured bench=vector_add gpu=gpu-a value='ratio:PyTorch eager' "
        "n_elements=4096 target=1.21]]. "
        "C [[measured bench=vector_add gpu=gpu-a value=pct_roofline "
        "n_elements=1048576 target=60]].\n"
    )
    code, html, err = build(tmp_path, {"fixture-gpu-a.json": fixture_doc()}, page)
    assert code == 0, err
    assert "A 1.20× (met)." in html  # equal to the target counts as met
    assert "B 1.20× (missed)." in html
    # 12 * 2**20 bytes / 0.020 ms = 629 GB/s = 63 % of 1000
    assert "C 63 % (met)." in html


def test_verdict_judges_every_selected_row(tmp_path):
    # Ratios to eager: 1.20 at 4096 elements, 1.25 at 1048576; shares of the
    # roofline: 0 % and 63 %.
    eager = "bench=vector_add gpu=gpu-a value='ratio:PyTorch eager'"
    share = "bench=vector_add gpu=gpu-a value=pct_roofline"
    page = (
        f"A [[verdict {eager} target=1.2]].\n\n"
        f"B [[verdict {eager} target=1.21]].\n\n"
        f"C [[verdict {share} target=50 dtype=float32]].\n\n"
        f"D [[verdict {eager} target=1.25 n_elements=1048576]].\n\n"
        f"E [[verdict {share} target=64 n_elements=1048576]].\n\n"
        f"F [[verdict {share} target=60 n_elements=>=65536]].\n"
    )
    code, html, err = build(tmp_path, {"fixture-gpu-a.json": fixture_doc()}, page)
    assert code == 0, err
    assert "A met at all 2 sizes (lowest 1.20×)." in html
    assert (
        "B missed at 1 of 2 sizes (lowest 1.20×, at n_elements 2<sup>12</sup>)." in html
    )
    assert (
        "C missed at 1 of 2 sizes (lowest 0 %, at n_elements 2<sup>12</sup>)." in html
    )
    assert "D met (1.25×)." in html
    assert "E missed (63 %)." in html
    assert "F met (63 %)." in html  # the 4096 row is below the range


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
    # Whatever the runner has committed must pass the same validation.
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
