"""Visible words and screens per page of the built site, at 1400 and 390 px.

A "screen" is the page's scroll height divided by the viewport's height
(900 px high at 1400 px wide, 844 px at 390 px: a laptop and a phone).
Visible words are the words of the article as the reader sees it (collapsed
blocks and hidden tabs do not count).

    python scripts/page_sizes.py SITE_DIR [--json OUT.json]

Used for #34's before/after counts and by tests/test_page_sizes.py.
"""

import argparse
import functools
import http.server
import json
import os
import sys
import threading
from pathlib import Path

VIEWPORTS = {"desktop": (1400, 900), "phone": (390, 844)}
CHROMIUM = os.environ.get("COURSE_CHROMIUM", "/usr/bin/chromium")

# Words the reader sees in the article: innerText skips what CSS hides.
_WORDS_JS = """() => {
  const main = document.querySelector('article.md-content__inner');
  if (!main) return 0;
  return main.innerText.split(/\\s+/).filter(w => /\\w/.test(w)).length;
}"""
_HEIGHT_JS = "() => document.documentElement.scrollHeight"


def page_urls(site):
    """Every page of the built site, relative to its root, lessons first."""
    return sorted(
        "" if html.parent == site else html.parent.relative_to(site).as_posix() + "/"
        for html in Path(site).rglob("index.html")
        if "404" not in html.parent.name
    )


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # one line per file would bury the table
        pass


def measure(site):
    """{url: {"words": n, "desktop": screens, "phone": screens}}."""
    from playwright.sync_api import sync_playwright

    handler = functools.partial(_QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}/"
    sizes = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
            )
            for name, (width, height) in VIEWPORTS.items():
                context = browser.new_context(
                    base_url=base, viewport={"width": width, "height": height}
                )
                context.route("https://**", lambda route: route.abort())
                page = context.new_page()
                for url in page_urls(site):
                    page.goto(url)
                    page.wait_for_load_state("load")
                    # MathJax and the plots change the height once typeset.
                    page.wait_for_timeout(300)
                    entry = sizes.setdefault(url, {})
                    entry[name] = round(page.evaluate(_HEIGHT_JS) / height, 1)
                    if name == "desktop":
                        entry["words"] = page.evaluate(_WORDS_JS)
                context.close()
            browser.close()
    finally:
        httpd.shutdown()
    return sizes


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if not (args.site / "index.html").is_file():
        sys.exit(f"{args.site} is not a built site (no index.html): run mkdocs build")
    sizes = measure(args.site)
    print(f"{'page':55} {'words':>6} {'1400px':>7} {'390px':>6}")
    for url, entry in sizes.items():
        print(
            f"{url or '(home)':55} {entry['words']:6d} "
            f"{entry['desktop']:7.1f} {entry['phone']:6.1f}"
        )
    if args.json:
        args.json.write_text(json.dumps(sizes, indent=1) + "\n")


if __name__ == "__main__":
    main()
