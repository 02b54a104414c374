"""hooks/codegen.py render_support: "Which GPUs run these kernels" as a
compact matrix with a legend (issue 26), on the committed data/support.json
and on a small fixture."""

import importlib.util
import json
import re

import pytest
from conftest import REPO_ROOT


def _load_hook():
    spec = importlib.util.spec_from_file_location(
        "codegen_hook", REPO_ROOT / "hooks" / "codegen.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hook = _load_hook()

ARCHS = {"sm_75": 65536, "sm_90": 232448}


def _fixture(tmp_path):
    def row(kernel, group, statuses, launched_on=None, config="BLOCK=64"):
        return {
            "snippet": "k.py",
            "kernel": kernel,
            "group": group,
            "config": config,
            "launched_on": launched_on,
            "archs": {a: s for a, s in zip(ARCHS, statuses, strict=True)},
        }

    runs = {"shared": 1024, "status": "runs", "dot": "mma"}
    big = {"shared": 98304, "status": "exceeds shared memory"}
    data = {
        "triton": "3.9.0",
        "written_by": "fixture",
        "shared_limit": ARCHS,
        "gpus": {"sm_75": "T4", "sm_90": "H100, H200"},
        "rows": [
            row("a_rather_long_kernel_name", "", [runs, runs]),
            # two configs, one too big for sm_75: 1 of 2 fit there
            row("tuned_kernel", "float16", [runs, runs]),
            row("tuned_kernel", "float16", [big, runs]),
            row(
                "sized_kernel",
                "",
                [big, {**runs, "tma": True}],
                ["sm_90"],
                "BLOCK_M=128, BLOCK_N=128",
            ),  # fmt: skip
        ],
        "refusals": [],
    }
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "support.json").write_text(json.dumps(data))
    return tmp_path


def _cells(html):
    return re.findall(r'<td class="(\w+)">([^<]*)</td>', html)


def test_each_cell_is_a_short_mark_and_the_legend_says_what_marks_mean(tmp_path):
    out = hook.render_support(["k.py"], _fixture(tmp_path))
    assert out.startswith('<div class="course-support"')
    assert "|---" not in out and " · picks " not in out  # no Markdown sentences
    assert _cells(out) == [
        ("yes", "✓ mma"), ("yes", "✓ mma"),
        ("some", "1/2 mma"), ("yes", "✓ mma"),
        ("no", "refused"), ("yes", "✓ mma TMA¹"),
    ]  # fmt: skip
    # columns: the architecture, its GPUs and its shared-memory limit
    assert "sm_75<br><small>T4<br>64 KB</small>" in out
    legend = out[out.find('class="course-support-legend"') :]
    for mark in ("✓", "k/n", "refused", "mma, wgmma", "TMA", "¹ ² …"):
        assert f"<b>{mark}</b>" in legend, mark
    for unused in ("✗ N KB", "✗ compile", "FMA"):  # not in this table
        assert f"<b>{unused}</b>" not in legend, unused
    assert "*Tiles picked: ¹ BLOCK_M=128, BLOCK_N=128.*" in out


def test_a_config_too_big_everywhere_shows_what_it_needs(tmp_path):
    root = _fixture(tmp_path)
    path = root / "data" / "support.json"
    data = json.loads(path.read_text())
    data["rows"] = [data["rows"][3] | {"launched_on": None}]
    path.write_text(json.dumps(data))
    out = hook.render_support(["k.py"], root)
    assert _cells(out)[0] == ("no", "✗ 96 KB")
    assert "<b>✗ N KB</b>" in out


def test_the_real_tables_are_compact():
    # every [[support ...]] a page uses, on the committed data
    pages = sorted((REPO_ROOT / "docs").rglob("*.md"))
    directives = [
        m.group(1).split()
        for p in pages
        for m in re.finditer(r"^\[\[support\s+([\w.\s-]+)\]\]\s*$", p.read_text(), re.M)
    ]
    assert directives
    for names in directives:
        out = hook.render_support([f"{n}.py" for n in names], REPO_ROOT)
        cells = _cells(out)
        assert cells, names
        # a mark, not a sentence: the longest is "✓ wgmma TMA" and a footnote
        assert max(len(text) for _, text in cells) <= 14, names
        assert "runs · " not in out and "picks BLOCK" not in out


@pytest.mark.parametrize("bad", ["nope.py"])
def test_a_snippet_with_no_launches_is_an_error(bad):
    with pytest.raises(ValueError, match="no launches recorded"):
        hook.render_support([bad], REPO_ROOT)
