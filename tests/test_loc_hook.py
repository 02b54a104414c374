"""hooks/loc.py: the ``[[loc FILE.py:SECTION]]`` directive and the line counts
the reference page shows for snippets/vector_add_frameworks.py.

Kept apart from tests/test_vector_add_frameworks.py because the hook imports
mkdocs, which the GPU image does not have: the GPU runner runs each
snippet's tests/test_<snippet>.py and the modules with GPU-only tests, and
this module is neither.
"""

import importlib.util

import pytest
from conftest import REPO_ROOT, SNIPPETS, load_snippet

fw = load_snippet("vector_add_frameworks")


def _load_loc_hook():
    spec = importlib.util.spec_from_file_location(
        "course_loc_hook", REPO_ROOT / "hooks/loc.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


loc = _load_loc_hook()


@pytest.mark.parametrize("framework, section", list(fw.KERNEL_SECTIONS.items()))
def test_each_kernel_section_has_code(framework, section):
    count = loc.count_loc(SNIPPETS / "vector_add_frameworks.py", section)
    assert 3 <= count <= 40, f"{framework}: {count} lines"


def test_the_page_shows_every_count_through_the_hook():
    page = (REPO_ROOT / "docs/reference/triton-at-a-glance.md").read_text()
    for section in fw.KERNEL_SECTIONS.values():
        assert f"[[loc snippets/vector_add_frameworks.py:{section}]]" in page


def test_count_skips_blanks_comments_and_markers(tmp_path):
    source = tmp_path / "x.py"
    source.write_text(
        "a = 1\n# --8<-- [start:s]\n\n# a comment\n"
        'src = """\n// cuda comment\nint i;\n"""\nb = 2  # trailing\n'
        "# --8<-- [end:s]\n"
    )
    assert loc.count_loc(source, "s") == 4  # src = """, int i;, """, b = 2


def test_hook_replaces_directives_and_fails_on_missing_sections(tmp_path):
    (tmp_path / "x.py").write_text("# --8<-- [start:s]\nx = 1\n# --8<-- [end:s]\n")
    config = {"config_file_path": str(tmp_path / "mkdocs.yml")}

    class Page:
        class file:
            src_uri = "p.md"

    md = "It takes [[loc x.py:s]] line.\n```\n[[loc x.py:s]]\n```"
    assert loc.on_page_markdown(md, Page, config, None).split("\n")[0] == (
        "It takes 1 line."
    )
    assert "[[loc x.py:s]]" in loc.on_page_markdown(md, Page, config, None)  # fenced
    from mkdocs.exceptions import PluginError

    with pytest.raises(PluginError, match="p.md:1.*'nope' not found"):
        loc.on_page_markdown("[[loc x.py:nope]]", Page, config, None)
