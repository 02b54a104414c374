"""Shared by the course's hooks: rewrite directive lines outside code fences.

Each hook supplies ``render(line) -> str`` (returning the line unchanged when it
holds none of its directives); lines inside ``` or ~~~ fences are left alone,
and a render error fails the build naming the page and line.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from mkdocs.exceptions import PluginError

_FENCE_RE = re.compile(r"^\s*(```|~~~)")


def rewrite_directives(
    markdown: str,
    page,
    render: Callable[[str], str],
    errors: tuple[type[Exception], ...] = (ValueError,),
    collect: tuple[type[Exception], list] | None = None,
) -> str:
    """``collect=(ExcType, problems)``: such an error is appended to
    ``problems`` as "page:line: message" and the line kept, so that a build
    can name every one of them before it fails (see measured.on_post_build)."""
    out, in_fence = [], False
    for number, line in enumerate(markdown.split("\n"), start=1):
        if _FENCE_RE.match(line):
            in_fence = not in_fence
        if in_fence:
            out.append(line)
            continue
        try:
            out.append(_indented(render(line), line))
        except Exception as exc:
            if collect is not None and isinstance(exc, collect[0]):
                collect[1].append(f"{page.file.src_uri}:{number}: {exc}")
                out.append(line)
                continue
            if not isinstance(exc, errors):
                raise
            raise PluginError(f"{page.file.src_uri}:{number}: {exc}") from None
    return "\n".join(out)


def _indented(rendered: str, line: str) -> str:
    """A directive inside a tab or an admonition is indented: every line it
    renders to keeps that indentation, or its first unindented line would
    close the container and leave the rest outside it."""
    lead = line[: len(line) - len(line.lstrip())]
    if not lead or rendered == line or "\n" not in rendered:
        return rendered
    first, *rest = rendered.split("\n")
    return "\n".join([first, *(lead + r if r.strip() else r for r in rest)])
