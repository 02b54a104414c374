"""Fixes to pages Material renders that no directive produces (called from
hooks/measured.py, the hook that already post-processes every page).

- ``fix_skip_link``: "Skip to content" must lead to an anchor that exists.
- ``portable_404``: 404.html works wherever the site is served.
"""

from __future__ import annotations

import json
import re
from urllib.parse import urlsplit

_SKIP_RE = re.compile(r'<a href="#([^"]*)" class="md-skip">')
_HEADING_ID_RE = re.compile(r'<h[1-6][^>]*\bid="([^"]+)"')


def fix_skip_link(output: str) -> str:
    """Material's "Skip to content" link points at the first entry of the
    page's table of contents. On a notebook page mkdocs-jupyter slugs that
    title one way (`tiled-gemm-with`) and the rendered heading another
    (`tiled-gemm-with-tldot`), so the link led nowhere: point it at the
    page's first heading that exists."""
    m = _SKIP_RE.search(output)
    if m is None or f'id="{m.group(1)}"' in output:
        return output
    heading = _HEADING_ID_RE.search(output, m.end())
    if heading is None:  # a page without headings: nothing better to offer
        return output
    return output[: m.start(1)] + heading.group(1) + output[m.end(1) :]


# Runs first in <head>, before any stylesheet: finds the site's root (the
# configured path, else the first path segment if a 404.html is served
# there, else "/") and makes it the base of every relative URL on the page.
_BASE_SCRIPT = """<script>(function () {
  var path = location.pathname, root = "/", seg = path.split("/")[1];
  if (path.indexOf(%(prefix)s) === 0) { root = %(prefix)s; }
  else if (seg) {
    try {
      var probe = new XMLHttpRequest();
      probe.open("HEAD", "/" + seg + "/404.html", false);
      probe.send();
      if (probe.status === 200) { root = "/" + seg + "/"; }
    } catch (e) {}
  }
  window.__courseRoot = root;
  document.write('<base href="' + root + '">');
})();</script>"""

# Before Material's bundle reads its configuration: the search index and
# the other assets it loads live under the root found above.
_CONFIG_SCRIPT = """<script>(function () {
  var c = document.getElementById("__config");
  if (!c) { return; }
  var cfg = JSON.parse(c.textContent), prefix = %(prefix)s, root = window.__courseRoot;
  cfg.base = root;
  if (cfg.search && cfg.search.indexOf(prefix) === 0) {
    cfg.search = root + cfg.search.slice(prefix.length);
  }
  c.textContent = JSON.stringify(cfg);
})();</script>"""


def portable_404(output: str, site_url: str | None) -> str:
    """MkDocs renders 404.html with absolute links under site_url's path
    (/triton-course/...): served anywhere else the page lost its styles and
    every link. Make those links relative, and let the page find the root it
    is served from (it is served for a missing URL at any depth)."""
    prefix = urlsplit(site_url or "").path or "/"
    if not prefix.endswith("/"):
        prefix += "/"
    if prefix != "/":
        output = re.sub(
            r'(\b(?:href|src)=")' + re.escape(prefix), r"\1", output
        ).replace('href="."', 'href="./"')
    output = output.replace(
        "<head>", "<head>" + _BASE_SCRIPT % {"prefix": json.dumps(prefix)}, 1
    )
    bundle = re.search(r'<script src="[^"]*assets/javascripts/bundle', output)
    if bundle:
        output = (
            output[: bundle.start()]
            + _CONFIG_SCRIPT % {"prefix": json.dumps(prefix)}
            + output[bundle.start() :]
        )
    return output
