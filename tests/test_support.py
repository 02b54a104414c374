"""The GPU-support table (data/support.json): every kernel of the course,
at every config its launcher or autotuner can launch with, compiled for
sm_75 ... sm_90 and its shared memory checked against each target's limit.

The compile starts in the background when this file is selected (conftest's
pytest_collection_finish); the first test waits for it.
"""

import json
import os
import re
import subprocess
import sys

import pytest
from conftest import HAS_GPU, REPO_ROOT, support_compile

from triton_course import support

pytestmark = [
    pytest.mark.skipif(
        HAS_GPU, reason="the table is written with CI's triton; CI checks it"
    ),
    # under pytest-xdist: one worker compiles the table, and runs every test
    pytest.mark.xdist_group("support"),
]
STORED = json.loads(support.DATA.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def fresh(request):
    proc, out = support_compile(request.config)
    log, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, f"compiling the support table failed:\n{log[-3000:]}"
    return json.loads(out.read_text(encoding="utf-8"))


def test_the_committed_table_is_what_a_fresh_compile_gives(fresh):
    # the quick check: every launch recorded again, every input unchanged, and
    # per snippet one launch recompiled on one target, the pair nearest its
    # shared-memory limit (support.sample); `support table` compiles them all
    problems = support.differences(STORED, fresh)
    assert not problems, (
        "data/support.json is stale; run `python -m triton_course.support table`:\n"
        + "\n".join(problems[:20])
    )
    assert fresh["sampled"] and {r["snippet"] for r in fresh["rows"]} == set(
        support.PLANS
    )
    assert len(fresh["launch_keys"]) == len(STORED["rows"])
    assert {support.row_key(r): int(next(iter(r["archs"]))[3:]) for r in fresh["rows"]} == (
        support.sample(STORED)
    )


def test_the_quick_check_refuses_a_changed_input_launch_or_row():
    # built from the stored table itself, no compile: what a quick check of
    # an unchanged repository would produce, then one thing changed at a time
    picked = support.sample(STORED)
    sampled = [
        {**r, "archs": {f"sm_{picked[k]}": r["archs"][f"sm_{picked[k]}"]}}
        for r in STORED["rows"]
        if (k := support.row_key(r)) in picked
    ]
    current = {
        "sampled": True,
        "triton": STORED["triton"],
        "inputs": STORED["inputs"],
        "launch_keys": [support.row_key(r) for r in STORED["rows"]],
        "rows": sampled,
        "refusals": STORED["refusals"],
    }
    assert support.differences(STORED, current) == []

    edited = json.loads(json.dumps(current))
    edited["inputs"]["snippets"]["softmax.py"] = "0" * 16
    assert support.differences(STORED, edited) == [
        "softmax.py changed since the table was compiled"
    ]
    edited = json.loads(json.dumps(current))
    edited["inputs"]["code"]["triton_course/codegen.py"] = "0" * 16
    assert "changed since" in support.differences(STORED, edited)[0]

    edited = json.loads(json.dumps(current))
    edited["launch_keys"].append('["x.py", "k", "", "BLOCK=1", null]')
    assert support.differences(STORED, edited)[0].startswith("new launch")

    edited = json.loads(json.dumps(current))
    (found,) = edited["rows"][0]["archs"].values()
    found["shared"] += 1024
    assert any("->" in p for p in support.differences(STORED, edited))


def test_the_sample_is_per_snippet_the_launch_and_target_nearest_a_limit():
    picked = support.sample(STORED)
    rows = {support.row_key(r): r for r in STORED["rows"]}
    assert sorted(rows[k]["snippet"] for k in picked) == sorted(support.PLANS)
    limit = STORED["shared_limit"]

    def fill(row, arch):
        return row["archs"][arch].get("shared", -limit[arch]) / limit[arch]

    for key, arch in picked.items():
        row = rows[key]
        same_snippet = [r for r in STORED["rows"] if r["snippet"] == row["snippet"]]
        most = max(fill(r, a) for r in same_snippet for a in r["archs"])
        assert fill(row, f"sm_{arch}") == most, (key, arch)
    # ties go round the targets: every target is compiled by each check
    assert set(picked.values()) == set(support.SHARED_LIMIT)


def test_the_inputs_digest_ignores_comments_and_docstrings_not_code(tmp_path):
    one, two, three = (tmp_path / f"{n}.py" for n in ("one", "two", "three"))
    one.write_text(
        '"""A kernel."""\nBLOCK = 128  # tile\n\n\ndef f():\n    return BLOCK\n'
    )
    two.write_text(
        '"""Another text."""\nBLOCK = 128\n\n\n'
        'def f():\n    """Why."""\n    return BLOCK\n'
    )
    three.write_text(
        '"""A kernel."""\nBLOCK = 256  # tile\n\n\ndef f():\n    return BLOCK\n'
    )
    digest = support._syntax_digest
    assert digest(one) == digest(two) != digest(three)
    assert set(STORED["inputs"]["snippets"]) == set(support.PLANS)


def test_every_kernel_of_every_snippet_is_in_the_table():
    # every @triton.jit kernel that a launcher launches (helpers are inlined)
    launched = {(r["snippet"], r["kernel"]) for r in STORED["rows"]}
    for path in sorted((REPO_ROOT / "snippets").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        kernels = [
            line.split("(")[0].removeprefix("def ").strip()
            for line in text.split("@triton.jit\n")[1:]
        ]
        for kernel in kernels:
            if kernel.endswith("_kernel"):
                assert (path.name, kernel) in launched, (
                    f"{path.name}:{kernel} not checked"
                )
    assert set(support.PLANS) == {
        p.name
        for p in (REPO_ROOT / "snippets").glob("*.py")
        if "@triton.jit" in p.read_text(encoding="utf-8")
    }


def test_every_autotuner_config_is_in_the_table():
    from conftest import load_snippet

    for snippet, configs in (
        ("matmul", "CONFIGS"),
        ("matmul_tma", "CONFIGS"),
        ("layernorm_linear", "AUTOTUNE_CONFIGS"),
        ("layernorm_linear_fold", "CONFIGS"),
    ):
        wanted = {
            (c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.kwargs["BLOCK_K"], c.num_warps,
             c.num_stages)
            for c in getattr(load_snippet(snippet), configs)
        }  # fmt: skip
        found = {r["config"] for r in STORED["rows"] if r["snippet"] == f"{snippet}.py"}
        for bm, bn, bk, warps, stages in wanted:
            label = f"BLOCK_M={bm}, BLOCK_N={bn}, BLOCK_K={bk}"
            assert any(
                f.startswith(label) and f"{warps} warps, {stages} stages" in f
                for f in found
            ), f"{snippet}: {label} ({warps} warps, {stages} stages) missing"


def test_the_table_says_what_lessons_rely_on():
    # Spot checks against facts the compiler also shows elsewhere: tl.dot is
    # FMA on sm_75, mma.sync on sm_80, wgmma with TMA on sm_90 for the TMA GEMM;
    # fp8 e4m3 does not compile before sm_89.
    rows = [r for r in STORED["rows"] if r["kernel"] == "matmul_tma_kernel"]
    assert {r["archs"]["sm_75"].get("dot") for r in rows} == {"FMA"}
    assert {r["archs"]["sm_80"].get("dot") for r in rows} == {"mma"}
    assert all(r["archs"]["sm_90"].get("tma") for r in rows)
    fp8 = [r for r in STORED["rows"] if r["group"].startswith("float8_e4m3fn")]
    assert fp8 and all(
        r["archs"][a]["status"] == "does not compile"
        for r in fp8
        for a in ("sm_75", "sm_80", "sm_86")
    )


def test_shared_memory_over_the_limit_is_reported_and_under_it_is_not():
    for row in STORED["rows"]:
        for arch, result in row["archs"].items():
            if result["status"] == "does not compile":
                continue
            over = result["shared"] > STORED["shared_limit"][arch]
            assert (result["status"] == "exceeds shared memory") == over


@pytest.fixture(scope="module")
def tma_gemm_launch():
    return next(
        r
        for r in json.loads(
            subprocess.run(
                [sys.executable, "-m", "triton_course.support", "record"],
                cwd=REPO_ROOT,
                env=dict(os.environ, TRITON_INTERPRET="1"),
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )["launches"]
        if r["kernel"] == "matmul_tma_persistent_kernel"
    )


@pytest.mark.parametrize("arch", [80, 90])
def test_stopping_at_llvm_ir_gives_what_a_full_compile_gives(
    arch, tma_gemm_launch, tmp_path
):
    # The table compiles only to LLVM IR (fast); a full compile to a cubin,
    # in its own process, must report the same shared memory, dot and TMA.
    launch = tma_gemm_launch
    code = (
        "import json, sys; from triton_course import support; "
        "job = json.loads(sys.stdin.read()); "
        "result = support.compile_one((job['launch'], job['arch']), job['full']); "
        "print(json.dumps(result))"
    )
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(REPO_ROOT)
    # an empty cache: the full compile must not find an earlier stub binary
    env["TRITON_CACHE_DIR"] = str(tmp_path)
    results = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", code],
                input=json.dumps({"launch": launch, "arch": arch, "full": full}),
                cwd=REPO_ROOT,
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        for full in (False, True)
    ]
    assert results[0] == results[1]
    assert results[0]["status"] == "runs" and results[0]["shared"] > 0


def test_every_snippet_with_kernels_has_its_table_on_a_page():
    import re

    shown = set()
    for page in (REPO_ROOT / "docs").rglob("*.md"):
        for m in re.finditer(
            r"^\[\[support\s+([\w.\s-]+)\]\]", page.read_text("utf-8"), re.M
        ):
            shown |= {f"{s}.py" for s in m.group(1).split()}
    assert shown == set(support.PLANS)


def _cells(md: str, kernel: str, group: str) -> list[str]:
    """The cells (text, one per GPU) of one row of the rendered HTML matrix."""
    head = f"<code>{kernel}</code><br><small>{group}</small></th>"
    row = next(tr for tr in re.findall(r"<tr>.*?</tr>", md) if head in tr)
    return [re.sub(r"<[^>]+>", "", td) for td in re.findall(r"<td[^>]*>.*?</td>", row)]


def test_the_page_table_counts_configs_and_names_the_limit(tmp_path):
    sys.path.insert(0, str(REPO_ROOT))
    from hooks import codegen as hook

    md = hook.render_support(["matmul.py"], REPO_ROOT)
    cells = _cells(md, "matmul_kernel", "float32")
    fits = [
        sum(r["archs"][a]["status"] == "runs" for r in STORED["rows"]
            if r["kernel"] == "matmul_kernel" and r["group"] == "float32")
        for a in STORED["shared_limit"]
    ]  # fmt: skip
    for cell, n in zip(cells, fits, strict=True):
        assert cell.startswith(f"{n}/7 ") or (n == 7 and cell.startswith("✓")), cell
    for arch, limit in STORED["shared_limit"].items():  # each column names its limit
        assert f"{arch}<br><small>" in md and f"{limit // 1024} KB</small>" in md
    with pytest.raises(ValueError, match="no launches recorded"):
        hook.render_support(["no_such_snippet.py"], REPO_ROOT)
    broken = tmp_path / "data"
    broken.mkdir()
    (broken / "support.json").write_text("{")
    with pytest.raises(ValueError, match="support table"):
        hook.render_support(["matmul.py"], tmp_path)


def _group_rows():
    groups: dict[tuple, list] = {}
    for row in STORED["rows"]:
        groups.setdefault((row["snippet"], row["kernel"], row["group"]), []).append(row)
    return groups


def test_on_every_gpu_each_launcher_launches_what_fits_or_refuses():
    # #16 item 4. A launcher that sizes its tiles to the GPU (launched_on set)
    # must pick a config that fits wherever it launches; an autotuner needs
    # one config that fits; where a launcher launches nothing it must have
    # refused with a sentence naming the GPU.
    refused = {(r["snippet"], r["dtype"], r["arch"]) for r in STORED["refusals"]}
    sized = 0
    for (snippet, kernel, group), rows in _group_rows().items():
        for arch in STORED["shared_limit"]:
            here = [
                r for r in rows if r["launched_on"] is None or arch in r["launched_on"]
            ]
            status = [r["archs"][arch]["status"] for r in here]
            where = f"{kernel}, {group} on {arch}"
            if not here:
                assert (snippet, group.split(",")[0], arch) in refused, where
            elif here[0]["launched_on"] is not None:
                sized += 1
                assert set(status) == {"runs"}, f"{where}: {status}"
            else:
                assert "runs" in status, f"{where}: no config fits"
    assert sized >= 5 * 8  # flash attention: every dtype and head size, 5 GPUs
    for r in STORED["refusals"]:
        assert "compute capability" in r["message"] and r["arch"] in r["message"]


def test_flash_attention_takes_smaller_tiles_where_shared_memory_is_smaller():
    rows = [
        r
        for r in STORED["rows"]
        if r["kernel"] == "_attention_fwd_kernel"
        and r["group"] == "float16, head_dim 128"
    ]
    chosen = {
        arch: next(r["config"] for r in rows if arch in r["launched_on"])
        for arch in STORED["shared_limit"]
    }
    assert chosen["sm_90"] == chosen["sm_80"] != chosen["sm_86"] == chosen["sm_89"]
    assert chosen["sm_75"] not in (chosen["sm_86"], chosen["sm_90"])
    # fp8 e4m3: refused before sm_89, where it would not compile
    fp8 = {r["arch"] for r in STORED["refusals"] if r["dtype"] == "float8_e4m3fn"}
    assert fp8 == {"sm_75", "sm_80", "sm_86"}


def test_the_page_says_which_tiles_a_sizing_launcher_picks_on_each_gpu():
    sys.path.insert(0, str(REPO_ROOT))
    from hooks import codegen as hook

    md = hook.render_support(["flash_attention.py"], REPO_ROOT)
    cells = _cells(md, "_attention_fwd_kernel", "float16, head_dim 128")
    cells = dict(zip(STORED["shared_limit"], cells, strict=True))
    # each cell ends in a note mark; the notes under the table name the tiles
    notes = dict(re.findall(r"([¹²³⁴⁵⁶⁷⁸⁹]+) ([^;*]+)", md.split("Tiles picked:")[1]))
    picked = {arch: notes[re.search(r"[¹²³⁴⁵⁶⁷⁸⁹]+$", c).group()].strip()
              for arch, c in cells.items()}  # fmt: skip
    assert picked["sm_90"] == "BLOCK_M=128, BLOCK_N=128, 8 warps, 3 stages"
    assert picked["sm_86"] == "BLOCK_M=128, BLOCK_N=64, 8 warps, 2 stages"
    assert picked["sm_75"].startswith("BLOCK_M=64, BLOCK_N=32")
    assert "refused" in md  # fp8 e4m3 before sm_89


def test_table_recompiles_only_the_snippets_that_changed(monkeypatch):
    # `support table` keeps the rows of a snippet whose code is unchanged
    # since the stored table, and compiles the others (and all of them when
    # triton or the compiling code changed); no compile here, both faked
    def launch(snippet, block):
        return {"snippet": snippet, "kernel": "k", "dtype": "", "archs": None,
                "constexprs": {"BLOCK": block},
                "options": {"num_warps": 4, "num_stages": 3}}  # fmt: skip

    launches = [launch("a.py", 64), launch("b.py", 64), launch("b.py", 128)]
    compiled = []

    def fake_compile(recorded, workers=None):
        compiled.extend(x["snippet"] for x in recorded["launches"])
        rows = [{"snippet": x["snippet"], "kernel": "k", "group": "",
                 "config": support.config_label(x), "launched_on": None,
                 "archs": "new"} for x in recorded["launches"]]  # fmt: skip
        return {"triton": "9.9", "rows": rows, "refusals": []}

    digest = {
        "triton": "9.9",
        "code": {"c": "1"},
        "snippets": {"a.py": "A", "b.py": "B2"},
    }
    monkeypatch.setattr(
        support,
        "_record_in_interpreter",
        lambda: {"launches": launches, "refusals": [], "inputs": digest},
    )
    monkeypatch.setattr(support, "compile_all", fake_compile)
    monkeypatch.setattr(support, "inputs_digest", lambda: digest)
    old_rows = [
        {**r, "archs": "old"} for r in fake_compile({"launches": launches})["rows"]
    ]
    was = {**digest, "snippets": {"a.py": "A", "b.py": "B1"}}
    stored = {"triton": "9.9", "rows": old_rows, "inputs": was}
    compiled.clear()
    table = support.updated_table(stored)
    assert compiled == ["b.py", "b.py"]  # a.py unchanged: kept
    assert [r["archs"] for r in table["rows"]] == ["old", "new", "new"]
    compiled.clear()
    support.updated_table(
        {**stored, "inputs": {**stored["inputs"], "code": {"c": "0"}}}
    )
    assert compiled == ["a.py", "b.py", "b.py"]  # the compiling code changed
