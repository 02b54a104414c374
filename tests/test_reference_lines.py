"""Published figures drawn as reference lines on the rate plots (issue 37):
declared as data in a snippet (REFERENCE_LINES, read without importing it),
checked, drawn dotted in the panel they name and nowhere else, labelled as
the paper's, with their source in the caption; a declaration that cannot be
drawn as written is refused with a message naming what is wrong."""

import re
import textwrap

import pytest
import svg_geometry as G
from conftest import REPO_ROOT

from triton_course import timings as T
from triton_course.runner import plots as P

GPU = {"name": "Fixture GPU", "slug": "fixture"}
TITLE = "A fixture copy, batch 1"


def _bench(rows, params=("h", "n")):
    return {
        "title": TITLE,
        "snippet": "snippets/fixture.py",
        "unit": "GB/s",
        "metric": "bandwidth",
        "params": list(params),
        "peers": ["Triton", "PyTorch eager"],
        "roofline": {"name": "copy", "value": 1000.0, "unit": "GB/s"},
        "rows": [
            {
                "size": size,
                "dtype": "float32",
                "results": {
                    "Triton": {"rate": rate, "median_ms": 1.0, "rounds_ms": [1.0]},
                    "PyTorch eager": {
                        "rate": rate / 2,
                        "median_ms": 2.0,
                        "rounds_ms": [2.0],
                    },
                },
            }
            for size, rate in rows
        ],
    }


GRID = [({"h": h, "n": 2**k}, 100.0 * k / 10 * h) for h in (1, 2) for k in (10, 11, 12)]


def _snippet(tmp_path, references: str, benchmarks: str | None = None):
    """A fixture snippet under tmp_path/snippets: a benchmark description
    (the literal parts the plots read) and the given REFERENCE_LINES."""
    benchmarks = benchmarks or textwrap.dedent(f"""\
        BENCHMARKS = [
            {{"name": "fixture_copy", "title": "{TITLE}", "params": ["h", "n"],
              "metric": "bandwidth", "work": len, "sizes": SIZES}},
        ]
        """)
    folder = tmp_path / "snippets"
    folder.mkdir(exist_ok=True)
    path = folder / "fixture.py"
    path.write_text(benchmarks + "\n" + textwrap.dedent(references))
    return path


PAPER = """\
REFERENCE_LINES = [
    {
        "label": "Paper X (machine Y, 16k tokens)",
        "short_label": "Paper X",
        "source": "A. Author, Paper X, arXiv:0000.00000, figure 2",
        "unit": "GB/s",
        "values": [
            {"bench": "fixture_copy", "where": {"h": 2}, "value": 600},
        ],
    },
]
"""


def _panels(svg: str) -> dict[str, str]:
    """Each rate panel's SVG by its title (the setting of a small multiple,
    or the plot's title where there is one panel)."""
    found = {}
    for chunk in svg.split('<g class="panel"')[1:]:
        title = re.search(r'font-weight="600"[^>]*>([^<]+)</text>', chunk).group(1)
        found[title] = chunk
    return found


def _y_of(panel: str, value: float) -> float:
    """Where the panel's linear y axis puts ``value``, from two tick labels."""
    ticks = [
        (float(v.replace("\u2009", "").replace(" ", "")), float(y) - 4)
        for y, v in re.findall(
            r'<text x="\d+" y="([\d.]+)" font-size="11" text-anchor="end"[^>]*>'
            r"([\d  ]+)</text>",
            panel,
        )
    ]
    (v0, y0), (v1, y1) = ticks[0], ticks[-1]
    return y0 + (value - v0) / (v1 - v0) * (y1 - y0)


# ------------------------------------------------------ the course's data ---
def test_the_attention_snippet_declares_the_papers_figures_with_their_source():
    benches, lines = P.read_reference_lines(REPO_ROOT / "snippets/flash_attention.py")
    assert set(benches) == {"flash_attention_fwd", "flash_attention_bwd"}
    for line in lines:
        assert line["label"] == "FlashAttention-3 paper (H100 SXM5, 16k tokens)"
        assert "Shah et al., arXiv:2407.08608" in line["source"]
        assert line["unit"] == "TFLOP/s"
    # the figures confirmed in the paper's charts, at sequence length 16k
    assert {
        (x["bench"], x["where"]["head_dim"], x["where"]["causal"], x["value"])
        for x in lines
    } == {
        ("flash_attention_fwd", 64, 0, 497),
        ("flash_attention_fwd", 128, 0, 648),
        ("flash_attention_fwd", 128, 1, 616),
        ("flash_attention_bwd", 64, 0, 474),
        ("flash_attention_bwd", 128, 0, 561),
    }


@pytest.mark.parametrize("layout", [P.WIDE, P.NARROW], ids=["wide", "narrow"])
def test_the_attention_plots_draw_each_figure_in_its_panel_only(layout):
    drawn = 0
    for path in sorted((REPO_ROOT / "data" / "timings").glob("*.json")):
        g = T.load_file(path)
        for name in ("flash_attention_fwd", "flash_attention_bwd"):
            bench = g.benchmarks[name]
            lines = P.references_for(bench)
            svg = P.render_svg(bench, g.gpu, layout=layout)  # as the runner draws
            assert not G.outside(svg) and not G.overlaps(svg), name
            assert not G.labels_on_data(svg), (name, G.labels_on_data(svg))
            for title, panel in _panels(svg).items():
                want = [
                    x["value"]
                    for x in lines
                    if f"head_dim {x['where']['head_dim']}," in title
                    and title.endswith(f"causal {x['where']['causal']}")
                ]
                got = [float(v) for v in re.findall(r'data-value="([\d.]+)"', panel)]
                assert got == want, (name, title)
                for value in want:
                    assert f"FlashAttention-3 paper {value:.0f}<" in panel
                    drawn += 1
    assert drawn == 5 * len(list((REPO_ROOT / "data" / "timings").glob("*.json")))


def _hook():
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(
        "_measured_hook_refs", REPO_ROOT / "hooks" / "measured.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_attention_tables_caption_the_figures_with_their_source():
    hook = _hook()
    hook._state.update(downloads={}, deferred=[])
    gpus = T.load_dir(REPO_ROOT / "data" / "timings")
    md = hook.render_timings("flash_attention_fwd", gpus, REPO_ROOT, "", 0.85, "SDPA")
    # the ratio plot comes first here: the rate plot and its caption are in
    # the block below it
    deferred = "".join(hook._state["deferred"])
    assert "Dotted on the rate panels" not in md
    assert "Dotted on the rate panels: published figures, not measured here" in (
        deferred
    )
    assert "648 TFLOP/s at head_dim 128, causal 0" in deferred
    assert "Shah et al., arXiv:2407.08608" in deferred
    assert 'class="reference"' in deferred
    md = hook.render_timings("flash_attention_bwd", gpus, REPO_ROOT, "")
    assert "561 TFLOP/s at head_dim 128, causal 0" in md  # rate plot first


# ------------------------------------------------------------- drawing ---
@pytest.mark.parametrize("layout", [P.WIDE, P.NARROW], ids=["wide", "narrow"])
def test_a_declared_reference_is_drawn_with_its_label_in_its_panel_only(
    tmp_path, layout
):
    _snippet(tmp_path, PAPER)
    bench = _bench(GRID)
    lines = P.references_for(bench, tmp_path)
    assert [(x["where"], x["value"]) for x in lines] == [({"h": 2}, 600.0)]
    svg = P.render_svg(bench, GPU, layout=layout, references=lines)
    panels = _panels(svg)
    assert sorted(panels) == ["h 1", "h 2"]
    assert 'class="reference"' not in panels["h 1"]
    assert "Paper X" not in panels["h 1"]
    line = re.findall(r'<line class="reference"[^>]*>', panels["h 2"])
    assert len(line) == 1 and 'data-value="600"' in line[0], line
    assert 'data-reference="Paper X (machine Y, 16k tokens)"' in line[0]
    assert f'stroke-dasharray="{P.REFERENCE_DASH}"' in line[0]
    # at 600 on the panel's own axis, labelled where no data is
    y = float(re.search(r'y1="([\d.]+)"', line[0]).group(1))
    assert y == pytest.approx(_y_of(panels["h 2"], 600), abs=0.2)
    assert ">Paper X 600<" in panels["h 2"]  # small multiples: the short label
    assert "arXiv:0000.00000" in panels["h 2"]  # the line's hover title
    assert not G.labels_on_data(svg) and not G.overlaps(svg) and not G.outside(svg)


def test_one_panel_in_a_wide_plot_takes_the_full_label(tmp_path):
    rows = [({"h": 2, "n": 2**k}, 100.0 * k / 10) for k in (10, 11, 12)]
    _snippet(tmp_path, PAPER)
    bench = _bench(rows)
    svg = P.render_svg(bench, GPU, references=P.references_for(bench, tmp_path))
    assert ">Paper X (machine Y, 16k tokens) 600 GB/s<" in svg
    narrow = P.render_svg(
        bench, GPU, layout=P.NARROW, references=P.references_for(bench, tmp_path)
    )
    assert ">Paper X 600<" in narrow


def test_a_reference_without_room_on_its_line_is_named_in_the_legend(tmp_path):
    # the data run along the reference: no place for its label on the line
    rows = [({"n": 2**k}, 600.0 + (k % 2) * 20) for k in range(10, 26)]
    bench = _bench(rows, params=("n",))
    ref = {"bench": "x", "where": {"dtype": "float32"}, "value": 605.0,
           "label": "Paper X", "short_label": "Paper X", "unit": "GB/s",
           "source": "somewhere"}  # fmt: skip
    svg = P.render_svg(bench, GPU, layout=P.NARROW, references=[ref])
    assert not G.labels_on_data(svg), G.labels_on_data(svg)
    label = re.search(r"<text[^>]*>Paper X 605</text>", svg)
    assert label and 'class="line-label"' not in label.group(0)
    assert f'stroke-dasharray="{P.REFERENCE_DASH}"' in svg.split("Paper X 605")[0]


def test_a_ratio_plot_draws_no_reference(tmp_path):
    _snippet(tmp_path, PAPER)
    bench = _bench(GRID)
    lines = P.references_for(bench, tmp_path)
    svg = P.render_svg(bench, GPU, kind="ratio", ratio=True, references=lines)
    assert 'class="reference"' not in svg and "Paper X" not in svg


def test_a_benchmark_of_another_title_or_snippet_gets_no_reference(tmp_path):
    _snippet(tmp_path, PAPER)
    assert P.references_for(dict(_bench(GRID), title="Another"), tmp_path) == []
    gone = dict(_bench(GRID), snippet="snippets/renamed.py")
    assert P.references_for(gone, tmp_path) == []


# ------------------------------------------------------- refused input ---
def _group(**changes) -> str:
    group = {
        "label": "Paper X",
        "source": "A. Author, arXiv:0000.00000",
        "unit": "GB/s",
        "values": [{"bench": "fixture_copy", "where": {"h": 2}, "value": 600}],
    }
    for key, value in changes.items():
        if value is None:
            group.pop(key)
        else:
            group[key] = value
    return f"REFERENCE_LINES = [{group!r}]\n"


@pytest.mark.parametrize(
    "references, message",
    [
        (_group(source=None), r"misses \['source'\]"),
        (_group(source="  "), r"\['source'\] must be a non-empty string"),
        (_group(label=None), r"misses \['label'\]"),
        (
            _group(values=[{"bench": "fixture_cpy", "where": {"h": 2}, "value": 1}]),
            r"names benchmark 'fixture_cpy', which this snippet does not "
            r"declare \(it declares \['fixture_copy'\]\)",
        ),
        (
            _group(values=[{"bench": "fixture_copy", "where": {"heads": 2},
                            "value": 1}]),  # fmt: skip
            r"names 'heads', which is not a parameter of 'fixture_copy'",
        ),
        (
            _group(values=[{"bench": "fixture_copy", "where": {}, "value": 1}]),
            r"\['where'\] must name the panel",
        ),
        (
            _group(values=[{"bench": "fixture_copy", "where": {"h": 2},
                            "value": -3}]),  # fmt: skip
            r"must be positive",
        ),
        (
            _group(values=[{"bench": "fixture_copy", "where": {"h": 2},
                            "value": True}]),  # fmt: skip
            r"must be a number",
        ),
        (
            _group(values=[{"bench": "fixture_copy", "where": {"h": 2}}]),
            r"exactly the keys \['bench', 'where', 'value'\]",
        ),
        (_group(unit="TFLOP/s"), r"'fixture_copy' is measured in GB/s"),
        (_group(unit="GB"), r"\['unit'\] must be one of"),
        (_group(colour="red"), r"unknown keys \['colour'\]"),
        ("REFERENCE_LINES = []\n", r"must be a non-empty list"),
        ("REFERENCE_LINES = [PAPER]\n", r"must be a literal"),
    ],
    ids=[
        "no source", "blank source", "no label", "unknown benchmark",
        "unknown parameter", "no panel named", "negative value", "bool value",
        "no value", "wrong unit", "unknown unit", "unknown key", "empty",
        "not a literal",
    ],
)  # fmt: skip
def test_an_invalid_declaration_is_refused_with_what_is_wrong(
    tmp_path, references, message
):
    path = _snippet(tmp_path, references)
    with pytest.raises(P.ReferenceLineError, match=message) as caught:
        P.read_reference_lines(path)
    assert str(path) in str(caught.value)  # names the file
    with pytest.raises(P.ReferenceLineError, match=message):  # and so does drawing
        P.render_svg(
            _bench(GRID), GPU, references=P.references_for(_bench(GRID), tmp_path)
        )


@pytest.mark.parametrize(
    "where",
    [{"h": 3}, {"n": 1024}, {"dtype": "float16"}],
    ids=["a value no row has", "part of each panel", "another dtype"],
)
def test_a_reference_naming_no_panel_is_refused_when_drawn(tmp_path, where):
    _snippet(
        tmp_path,
        "REFERENCE_LINES = [{'label': 'Paper X', 'source': 'arXiv:0000.00000', "
        "'unit': 'GB/s', 'values': [{'bench': 'fixture_copy', "
        f"'where': {where!r}, 'value': 600}}]}}]\n",
    )
    bench = _bench(GRID)
    lines = P.references_for(bench, tmp_path)  # a valid declaration
    with pytest.raises(P.ReferenceLineError, match="which is no panel of its plot"):
        P.render_svg(bench, GPU, references=lines)
    with pytest.raises(P.ReferenceLineError, match=r"the panels: \['h 1', 'h 2'\]"):
        P.check_reference_panels(bench, lines)
