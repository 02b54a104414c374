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
) -> str:
    out, in_fence = [], False
    for number, line in enumerate(markdown.split("\n"), start=1):
        if _FENCE_RE.match(line):
            in_fence = not in_fence
        if in_fence:
            out.append(line)
            continue
        try:
            out.append(render(line))
        except errors as exc:
            raise PluginError(f"{page.file.src_uri}:{number}: {exc}") from None
    return "\n".join(out)
