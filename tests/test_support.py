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
    problems = support.differences(STORED, fresh)
    assert not problems, (
        "data/support.json is stale; run `python -m triton_course.support table`:\n"
        + "\n".join(problems[:20])
    )


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
