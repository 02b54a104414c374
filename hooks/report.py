"""MkDocs hook: what a benchmark's ``report()`` recorded, e.g. autotuned configs.

The GPU runner calls a benchmark description's ``report`` after timing and
stores the result under the benchmark's ``notes.report`` in
``data/timings/<gpu>.json``. This hook renders it, one tab per GPU:

``[[report NAME]]`` or ``[[report NAME KEY]]``  (alone on a line)
    Each entry of benchmark NAME's report (or only entry KEY): a list of
    flat objects becomes a table (columns in the order of the first object),
    an object of scalars a two-column table, anything else JSON in a code
    block. With no GPU data yet, a note says so; nothing is ever made up.

Like ``hooks/measured.py`` it reads only the runner's data; the docs build
needs neither torch, triton nor a GPU.
"""

from __future__ import annotations

import html
import json
import re
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:  # the hooks must work without an install
    sys.path.insert(0, str(REPO_ROOT))

from hooks._directives import rewrite_directives  # noqa: E402
from triton_course import timings as T  # noqa: E402

_REPORT_RE = re.compile(r"^\[\[report\s+([\w.-]+)(?:\s+([\w.-]+))?\]\]\s*$")
_state: dict = {}


def on_config(config):
    try:
        _state["gpus"] = T.load_for_site(config)
    except T.TimingDataError as exc:
        raise PluginError(f"timing data: {exc}") from None
    return config


def _cell(value) -> str:
    """A value as HTML: floats to 4 significant digits, text escaped."""
    if isinstance(value, float):
        return f"{value:.4g}"
    return html.escape(value if isinstance(value, str) else json.dumps(value))


def _is_scalar(value) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _table(head: list[str], rows: list[list]) -> str:
    """Raw HTML, not Markdown: a `|` in a header (max error / max |O|) can
    then never turn the table into a paragraph of pipes."""
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join(
        "<tr>" + "".join(f"<td>{_cell(c)}</td>" for c in r) + "</tr>" for r in rows
    )
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def render_entry(key: str, value) -> list[str]:
    """One report entry as Markdown lines."""
    out = [f"**{key}**", ""]
    if (
        isinstance(value, list)
        and value
        and all(isinstance(v, dict) and all(map(_is_scalar, v.values())) for v in value)
    ):
        columns = list(value[0])
        for row in value[1:]:
            columns += [c for c in row if c not in columns]
        out.append(_table(columns, [[r.get(c, "—") for c in columns] for r in value]))
    elif isinstance(value, dict) and all(map(_is_scalar, value.values())):
        out.append(_table(["", ""], [[k, v] for k, v in value.items()]))
    else:
        out += ["```json", json.dumps(value, indent=1), "```"]
    return out + [""]


def render_report(name: str, gpus: list, key: str | None = None) -> str:
    found = [
        g
        for g in gpus
        if name in g.benchmarks and "report" in (g.benchmarks[name].get("notes") or {})
    ]
    if not found:
        return (
            f"*Not yet measured on a GPU: what the runner records for `{name}` "
            "appears here once it has run on a real GPU.*\n"
        )
    blocks = []
    for g in found:
        bench = g.benchmarks[name]
        lines = []
        report = bench["notes"]["report"]
        if key is not None and key not in report:
            raise KeyError(
                f"[[report {name} {key}]]: {g.gpu['name']}'s report has no {key!r} "
                f"(it has {', '.join(report) or 'nothing'})"
            )
        for entry, value in report.items():
            if key is None or entry == key:
                lines += render_entry(entry, value)
        lines.append(
            f"*Recorded on {g.gpu['name']} on {bench['provenance']['date'][:10]} "
            f"by `report()` of `{bench['snippet']}`.*"
        )
        body = "\n".join(("    " + line) if line else "" for line in lines)
        # `===!` starts a new tab set, so adjacent directives do not merge.
        marker = "===!" if not blocks else "==="
        blocks.append(f'{marker} "{g.label}"\n\n{body}\n')
    return "\n".join(blocks)


def on_page_markdown(markdown, page, config, files):
    def render(line: str) -> str:
        match = _REPORT_RE.match(line.strip())
        if not match:
            return line
        return render_report(match.group(1), _state["gpus"], match.group(2))

    return rewrite_directives(
        markdown, page, render, errors=(KeyError, TypeError, ValueError)
    )
