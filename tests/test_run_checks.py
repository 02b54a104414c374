"""hooks/run_checks.py: [[dram_bytes]] and [[run_compare]] on fixture data.

Every site here is built in tmp_path from made-up data files (their numbers
are test values); nothing under data/ is read or written.
"""

import copy
import json
import re
import shutil
import subprocess
import sys

from conftest import REPO_ROOT
from test_measured_hook import SNIPPET, fixture_doc, result

from triton_course import dram_bytes as DB
from triton_course import timings as T
from triton_course.runner import compare as C

SLUG, NAME = "fixture-gpu-a", "Fixture GPU A"
MODEL = 3 * 2**28 * 4  # vector_add's work() at 2**28 float32


def dram_record(snippet_hash=None) -> dict:
    """A byte-model check as the runner stores it (test values)."""
    record = {
        "ncu_version": "2025.1.1.0",
        "command": "ncu --profile-from-start off --cache-control all ...",
        "tolerance": DB.TOLERANCE,
        "l2_bytes": 50 * 2**20,
        "min_l2_multiple": DB.MIN_L2_MULTIPLE,
        "max_model_bytes": 20 * 2**30,
        "provenance": {"commit": "c0ffee1234567", "date": "2026-01-02T03:04:05Z"},
        "benchmarks": {
            "vector_add": {
                "snippet": SNIPPET,
                "snippet_sha256": snippet_hash or T.sha256_of(REPO_ROOT / SNIPPET),
                "benchmarked_size": {"n_elements": 2**28},
                "scaled_param": "n_elements",
                "scale_factor": 1,
                "capped": False,
                "size": {"n_elements": 2**28},
                "dtype": "float32",
                "working_set_bytes": MODEL,
                "verdict": "within",
                "contenders": {
                    "Triton": {
                        "model_bytes": MODEL,
                        "dram_read_bytes": 2_147_614_720,
                        "dram_write_bytes": 1_051_066_368,
                        "kernels": ["add_kernel"],
                    },
                    "torch.compile": {
                        "model_bytes": MODEL,
                        "dram_read_bytes": 1_600_000_000,
                        "dram_write_bytes": 1_000_000_000,
                        "kernels": ["triton_poi_fused_add_0", "a|b"],
                    },
                    "PyTorch copy": {  # a cudaMemcpy: no kernel to profile
                        "model_bytes": MODEL,
                        "dram_read_bytes": 0,
                        "dram_write_bytes": 0,
                        "kernels": [],
                    },
                },
                "absent": {"CuPy": "ImportError: no cupy"},
            }
        },
        "skipped": {"l2_hot_add": "L2-resident by design"},
    }
    DB.validate(record, "fixture")
    return record


def build(tmp_path, files: dict, page: str, second: dict | None = None):
    """A throwaway site with the real hook; (returncode, html, stderr)."""
    (tmp_path / "docs").mkdir(exist_ok=True)
    (tmp_path / "docs" / "index.md").write_text(page)
    (tmp_path / "snippets").mkdir(exist_ok=True)
    shutil.copy(REPO_ROOT / SNIPPET, tmp_path / SNIPPET)
    for folder, docs in (("timings", files), ("reproducibility", second or {})):
        data = tmp_path / "data" / folder
        data.mkdir(parents=True, exist_ok=True)
        for name, content in docs.items():
            (data / name).write_text(
                content if isinstance(content, str) else json.dumps(content)
            )
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: t\n"
        "extra:\n  timings_dir: data/timings\n"
        f"hooks:\n  - {REPO_ROOT / 'hooks' / 'run_checks.py'}\n"
        "markdown_extensions: [admonition, tables, attr_list, md_in_html,\n"
        "  pymdownx.details, pymdownx.superfences,\n"
        "  {pymdownx.tabbed: {alternate_style: true}}]\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", "site"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    path = tmp_path / "site" / "index.html"
    html = path.read_text() if path.exists() and done.returncode == 0 else ""
    return done.returncode, html, done.stderr


def text_of(html: str) -> str:
    """The page's text, tags removed and whitespace collapsed."""
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def with_dram(doc: dict, record: dict) -> dict:
    doc = copy.deepcopy(doc)
    doc["dram_bytes"] = record
    return doc


# ------------------------------------------------------------ dram_bytes ---
def test_the_model_stands_beside_the_dram_bytes_counted(tmp_path):
    doc = with_dram(fixture_doc(), dram_record())
    code, html, err = build(tmp_path, {f"{SLUG}.json": doc}, "[[dram_bytes]]\n")
    assert code == 0, err
    text = text_of(html)
    # model 3221.2 MB; counted 2147.6 + 1051.1 MB; 3221225472 / 3198681088
    assert (
        "vector_add n_elements 2 28 float32 3 221.2 2 147.6 + 1 051.1 1.01 "
        "within 10 %" in text
    )
    assert "Model ÷ measured" in text and "DRAM MB read + written" in text
    assert "Nsight Compute 2025.1.1.0, commit c0ffee1234" in text
    assert "L2 52.4 MB" in text
    assert "l2_hot_add is not profiled: L2-resident by design" in text
    # the peers: shown in a fold, a kernel name with | kept in one cell
    assert "The peers' DRAM bytes (shown, not judged)" in text
    assert "torch.compile 2 1 600.0 + 1 000.0 1.24" in text
    assert "CuPy ImportError: no cupy" in text
    assert "ncu --profile-from-start off --cache-control all" in text
    assert "changed since" not in text and "Not yet measured" not in text
    # the size rule, and why (writes still dirty in L2 at the kernel's end)
    assert (
        f"profiled where its model's bytes are at least {DB.MIN_L2_MULTIPLE} "
        "times the L2" in text
    )
    assert "still dirty in L2 when it ends reach DRAM after it" in text
    assert "x2" not in text and "capped" not in text  # profiled as benchmarked


def test_a_peer_that_launched_no_kernel_is_named_a_copy_engine_transfer(tmp_path):
    doc = with_dram(fixture_doc(), dram_record())
    code, html, err = build(tmp_path, {f"{SLUG}.json": doc}, "[[dram_bytes]]\n")
    assert code == 0, err
    text = text_of(html)
    assert (
        "PyTorch copy 0 no kernel launched (a copy-engine transfer, which Nsight "
        "Compute does not profile) —" in text
    )
    assert "nothing counted" not in text


def test_a_scaled_size_shows_the_size_benchmarked_and_a_capped_one_says_so(
    tmp_path,
):
    record = dram_record()
    bench = record["benchmarks"]["vector_add"]
    bench.update(benchmarked_size={"n_elements": 2**26}, scale_factor=4)
    DB.validate(record, "fixture")
    doc = with_dram(fixture_doc(), record)
    code, html, err = build(tmp_path, {f"{SLUG}.json": doc}, "[[dram_bytes]]\n")
    assert code == 0, err
    assert (
        "vector_add n_elements 2 28 (n_elements ×4 of the largest benchmarked, "
        "n_elements 2 26 ) float32 3 221.2" in text_of(html)
    )
    record["min_l2_multiple"] = 1000  # 3.2 GB is then short of the floor
    bench["capped"] = True
    DB.validate(record, "fixture")
    doc = with_dram(fixture_doc(), record)
    code, html, err = build(tmp_path, {f"{SLUG}.json": doc}, "[[dram_bytes]]\n")
    assert code == 0, err
    text = text_of(html)
    assert "(capped by the GPU's memory)" in text
    assert (
        "vector_add : capped by the GPU's memory at 3221.2 MB: unflushed writes "
        "may reach 2 % of its model." in text
    )


def test_a_gpu_without_the_check_says_so_beside_one_with_it(tmp_path):
    files = {
        f"{SLUG}.json": with_dram(fixture_doc(), dram_record()),
        "fixture-gpu-b.json": fixture_doc(slug="fixture-gpu-b", name="Fixture GPU B"),
    }
    code, html, err = build(tmp_path, files, "[[dram_bytes]]\n")
    assert code == 0, err
    text = text_of(html)
    assert text.count("Fixture GPU A") >= 2 and "Fixture GPU B" in text
    assert "Not yet measured on a GPU." in text
    assert "within 10 %" in text


def test_without_any_data_nothing_is_shown_but_a_sentence(tmp_path):
    page = "[[dram_bytes]]\n\n[[run_compare]]\n"
    code, html, err = build(tmp_path, {}, page)
    assert code == 0, err
    text = text_of(html)
    assert "Not yet measured on a GPU: the byte-model check appears here" in text
    assert "Not yet measured on a GPU: no run to compare." in text


def test_a_check_of_an_earlier_kernel_is_marked(tmp_path):
    doc = with_dram(fixture_doc(), dram_record(snippet_hash="0" * 64))
    code, html, err = build(tmp_path, {f"{SLUG}.json": doc}, "[[dram_bytes]]\n")
    assert code == 0, err
    assert "vector_add (kernel changed since)" in text_of(html)


def test_a_check_whose_verdict_its_numbers_contradict_fails_the_build(tmp_path):
    record = dram_record()
    record["benchmarks"]["vector_add"]["verdict"] = "off"  # typed, not judged
    doc = with_dram(fixture_doc(), record)
    code, _, err = build(tmp_path, {f"{SLUG}.json": doc}, "[[dram_bytes]]\n")
    assert code != 0
    assert "dram_bytes" in err and "does not follow from its numbers" in err


def test_directives_in_code_blocks_are_left_alone(tmp_path):
    doc = with_dram(fixture_doc(), dram_record())
    page = "```text\n[[dram_bytes]]\n[[run_compare]]\n```\n"
    code, html, err = build(tmp_path, {f"{SLUG}.json": doc}, page)
    assert code == 0, err
    assert "[[dram_bytes]]" in html and "[[run_compare]]" in html


# ----------------------------------------------------------- run_compare ---
def run_doc(triton_ms: tuple, eager_ms: tuple, card: str, commit: str) -> dict:
    """fixture_doc with the rows' times replaced and one card and commit."""
    doc = fixture_doc()
    bench = doc["benchmarks"]["vector_add"]
    for row, tri, eager in zip(bench["rows"], triton_ms, eager_ms, strict=True):
        row["results"] = {
            "Triton": result(tri, row["work"]),
            "PyTorch eager": result(eager, row["work"]),
        }
    bench["provenance"].update(gpu_uuid=card, commit=commit)
    return doc


def two_runs():
    # row 1: 10 µs, ratio 1.20 in both runs (same); row 2: at least 50 µs,
    # ratio 1.25 published, 0.125 / 0.12 = 1.04 in the second run (slower)
    published = run_doc((0.010, 0.100), (0.012, 0.125), "GPU-aaaa", "1111111")
    second = run_doc((0.010, 0.120), (0.012, 0.125), "GPU-bbbb", "2222222")
    return published, second


def test_the_two_runs_are_compared_with_runner_compare_s_own_numbers(tmp_path):
    published, second = two_runs()
    code, html, err = build(
        tmp_path,
        {f"{SLUG}.json": published},
        "[[run_compare]]\n",
        second={f"{SLUG}.json": second},
    )
    assert code == 0, err
    text = text_of(html)
    assert "Card GPU-aaaa GPU-bbbb" in text
    assert "Commit 1111111 2222222" in text
    assert (
        "2 Triton/peer ratios are in both runs: 1 same, 0 faster, 1 slower, "
        "0 undecided (the second run against the published one)" in text
    )
    assert (
        "Within ±5 % of each other: 0 of 1 (0.0 %) of the ratios whose Triton "
        "time is at least 50 µs, 1 of 1 (100.0 %) of the shorter ones." in text
    )
    assert (
        "runner compare data/timings/fixture-gpu-a.json "
        "data/reproducibility/fixture-gpu-a.json" in text
    )
    # the command line says the same of the same files
    old = T.validate(published, tmp_path / "data" / "timings" / f"{SLUG}.json")
    new = T.validate(second, tmp_path / "data" / "reproducibility" / f"{SLUG}.json")
    report = "\n".join(C.report(old, new))
    assert "2 Triton/peer ratios: 1 same, 1 slower" in report
    assert "Triton ≥ 50 µs: 0/1 (0.0 %); Triton < 50 µs: 1/1 (100.0 %)" in report


def test_without_a_second_run_a_sentence_says_none_is_committed(tmp_path):
    published, _ = two_runs()
    code, html, err = build(tmp_path, {f"{SLUG}.json": published}, "[[run_compare]]\n")
    assert code == 0, err
    assert (
        "No second run of the Fixture GPU A is committed "
        "( data/reproducibility/fixture-gpu-a.json ): the two-machine "
        "comparison appears here once one is." in text_of(html)
    )
    assert "ratios are in both runs" not in text_of(html)


def test_a_malformed_second_run_fails_the_build(tmp_path):
    published, second = two_runs()
    del second["benchmarks"]["vector_add"]["rows"]
    code, _, err = build(
        tmp_path,
        {f"{SLUG}.json": published},
        "[[run_compare]]\n",
        second={f"{SLUG}.json": second},
    )
    assert code != 0
    assert "second run:" in err and "fixture-gpu-a.json" in err
