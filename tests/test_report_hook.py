"""hooks/report.py: the [[report NAME]] directive renders a benchmark's report()."""

import importlib.util
from types import SimpleNamespace

from conftest import REPO_ROOT

_spec = importlib.util.spec_from_file_location(
    "report_hook", REPO_ROOT / "hooks/report.py"
)
hook = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hook)


def _gpu(report):
    bench = {
        "snippet": "snippets/x.py",
        "provenance": {"date": "2026-11-21T12:00:00Z"},
        "notes": {"report": report},
    }
    return SimpleNamespace(
        label="NVIDIA H100", gpu={"name": "NVIDIA H100"}, benchmarks={"x": bench}
    )


def test_list_of_rows_becomes_a_table_per_gpu():
    report = {"autotuned": [{"n_cols": 256, "ROWS": 16}, {"n_cols": 4096, "ROWS": 1}]}
    text = hook.render_report("x", [_gpu(report)])
    # `===!` opens a new tab set, so two directives in a row do not merge
    assert text.startswith('===! "NVIDIA H100"')
    assert "<th>n_cols</th><th>ROWS</th>" in text
    assert "<td>4096</td><td>1</td>" in text
    assert "report()` of `snippets/x.py`" in text


def test_other_shapes_of_report():
    text = hook.render_report("x", [_gpu({"a": {"k": 1}, "b": [[1, 2]]})])
    assert "<td>k</td><td>1</td>" in text and "```json" in text


def test_no_data_says_so():
    text = hook.render_report("missing", [_gpu({})])
    assert "Not yet measured" in text


def test_directive_is_replaced_outside_code_only():
    hook._state["gpus"] = []
    page = SimpleNamespace(file=SimpleNamespace(src_uri="p.md"))
    md = "a\n[[report x]]\n```\n[[report x]]\n```"
    out = hook.on_page_markdown(md, page, {}, None)
    assert out.count("Not yet measured") == 1 and out.count("[[report x]]") == 1


def test_one_entry_of_a_report():
    report = {"roofline": [{"flops": 1}], "memory": [{"n_ctx": 1024, "naive": 528.0}]}
    text = hook.render_report("x", [_gpu(report)], key="memory")
    assert "**memory**" in text and "<td>1024</td><td>528</td>" in text
    assert "roofline" not in text and "flops" not in text


def test_unknown_entry_is_an_error_naming_what_exists():
    import pytest

    with pytest.raises(KeyError, match="has no 'memroy'.*roofline"):
        hook.render_report("x", [_gpu({"roofline": []})], key="memroy")


def test_directive_with_a_key():
    hook._state["gpus"] = [_gpu({"a": {"k": 1}, "b": {"j": 2}})]
    page = SimpleNamespace(file=SimpleNamespace(src_uri="p.md"))
    out = hook.on_page_markdown("[[report x b]]", page, {}, None)
    assert "<td>j</td><td>2</td>" in out and "| k | 1 |" not in out


def test_a_pipe_in_a_header_and_long_floats_still_make_a_table():
    # issue 26: "max error / max |O|" turned lesson 02's table into a
    # paragraph of pipes and 16-digit floats
    report = {"accuracy": [{"n_ctx": 1024, "max error / max |O|": 0.0012345678901}]}
    text = hook.render_report("x", [_gpu(report)])
    assert "<th>max error / max |O|</th>" in text
    assert "<td>0.001235</td>" in text and "0.0012345678901" not in text


def test_a_directive_inside_a_tab_renders_inside_it():
    # A block directive indented under `=== "tab"` or `??? note` renders to
    # several lines: each keeps the indentation, or the block leaves its tab.
    spec = importlib.util.spec_from_file_location(
        "directives_hook", REPO_ROOT / "hooks/_directives.py"
    )
    directives = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(directives)
    page = SimpleNamespace(file=SimpleNamespace(src_uri="x.md"))

    def render(line):
        return line.replace("[[table]]", "| a |\n|---|\n\n| 1 |")

    source = '=== "H100"\n\n    [[table]]\n\nafter\n[[table]]'
    out = directives.rewrite_directives(source, page, render)
    inside = '=== "H100"\n\n    | a |\n    |---|\n\n    | 1 |\n\n'
    assert out == inside + "after\n| a |\n|---|\n\n| 1 |"
