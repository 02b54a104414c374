"""Headless Chromium against the built site: what a learner actually sees.

Uses Debian's chromium through Playwright (Playwright's own browser download
does not work offline); COURSE_CHROMIUM overrides the path (CI uses Chrome).
"""

import base64
import functools
import http.server
import json
import os
import re
import threading

import pytest

pytestmark = pytest.mark.browser

CHROMIUM = os.environ.get("COURSE_CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
TUTORIAL = "triton-series/vector-addition/"


# axe-core, served beside the site (not part of it) so that each page loads
# it by URL: Chromium then keeps its compiled code between pages, instead of
# compiling half a megabyte of JavaScript again on every page.
AXE_URL = "/__tests__/axe.min.js"


class _SiteHandler(http.server.SimpleHTTPRequestHandler):
    """The built site as a static host serves it, cacheable: the pages share
    Material's bundle, MathJax and the search index, and a reader's browser
    loads them once, not once per page."""

    def translate_path(self, path):
        if path.split("?", 1)[0] == AXE_URL:
            return AXE
        return super().translate_path(path)

    def end_headers(self):
        self.send_header("Cache-Control", "max-age=3600")
        super().end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server(built_site):
    site = built_site[0]
    handler = functools.partial(_SiteHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    assert os.path.exists(CHROMIUM), (
        f"{CHROMIUM} not found: run scripts/ensure-chromium (or set COURSE_CHROMIUM)"
    )
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield browser
        browser.close()


# The machine running the tests is offline. Two external requests are by
# design (Material's GitHub repository facts; the Colab badge image in the
# notebook): they are answered as the services would. Any other external
# request fails and shows up as a console error.
EXTERNAL = {
    "https://api.github.com/": ("application/json", json.dumps({"tag_name": "v0"})),
    "https://colab.research.google.com/assets/colab-badge.svg": (
        "image/svg+xml",
        "<svg xmlns='http://www.w3.org/2000/svg'/>",
    ),
}


def _answer_external_requests(context, page, answers=EXTERNAL):
    """Answer EXTERNAL's requests (or ``answers``': URL prefix -> (content
    type, body)) through the DevTools protocol, for those URLs only.
    (Playwright's context.route would do it too, but routing turns Chromium's
    HTTP cache off: every page then fetched and compiled Material's bundle and
    MathJax again.)"""
    cdp = context.new_cdp_session(page)

    def paused(event):
        url = event["request"]["url"]
        for prefix, (content_type, body) in answers.items():
            if url.startswith(prefix):
                cdp.send(
                    "Fetch.fulfillRequest",
                    {
                        "requestId": event["requestId"],
                        "responseCode": 200,
                        "responseHeaders": [
                            {"name": "Content-Type", "value": content_type},
                            {"name": "Access-Control-Allow-Origin", "value": "*"},
                        ],
                        "body": base64.b64encode(body.encode()).decode(),
                    },
                )
                return
        cdp.send("Fetch.continueRequest", {"requestId": event["requestId"]})

    cdp.on("Fetch.requestPaused", paused)
    cdp.send("Fetch.enable", {"patterns": [{"urlPattern": p + "*"} for p in answers]})


SEARCH_INDEX = "search/search_index.json"


def _index_without_documents(site) -> str:
    """The site's search index with its configuration and no documents.

    Material's search worker starts on every page load and indexes every
    document of the site (800 kB of text) before anyone searches: half a
    second of CPU per load, the same work on each page. The visits of every
    page (``desktop`` here, ``phone`` in tests/test_browser_phone.py) get
    this index instead: the same worker, configured the same, starts on each
    page and indexes nothing. The whole index is loaded, indexed and
    searched, console errors included, by test_search_finds_program_id and
    every test on the ``page`` fixture."""
    whole = json.loads((site / SEARCH_INDEX).read_text(encoding="utf-8"))
    assert set(whole) == {"config", "docs"} and whole["docs"], sorted(whole)
    return json.dumps({**whole, "docs": []})


def _new_page(browser, server, search_index: str | None = None):
    """(context, page) as a reader's browser opens the site, offline; with
    ``search_index``, the site's search index is answered with that text."""
    context = browser.new_context(base_url=server)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server)
    page = context.new_page()
    answers = dict(EXTERNAL)
    if search_index is not None:
        answers[server + SEARCH_INDEX] = ("application/json", search_index)
    _answer_external_requests(context, page, answers)
    page.console_errors = []
    page.on(
        "console", lambda m: m.type == "error" and page.console_errors.append(m.text)
    )
    page.on("pageerror", lambda e: page.console_errors.append(str(e)))
    return context, page


@pytest.fixture
def page(browser, server):
    context, page = _new_page(browser, server)
    yield page
    context.close()


def _urls(site):
    """Every page of the built site, as a URL relative to its root."""
    return sorted(
        "" if html.parent == site else html.parent.relative_to(site).as_posix() + "/"
        for html in site.rglob("index.html")
    )


def test_tutorial_renders_the_snippet_code(page):
    page.goto(TUTORIAL)
    code = page.locator("pre code").filter(has_text="def vector_add_kernel")
    assert code.count() == 1
    text = code.inner_text()
    assert "tl.program_id(axis=0)" in text and "--8<--" not in text
    # Maths rendered by the vendored MathJax (an SVG per formula).
    page.wait_for_selector("mjx-container svg", timeout=10_000)
    assert page.console_errors == []


def test_copy_button_copies_the_kernel(page):
    page.goto(TUTORIAL)
    block = page.locator("div.highlight").filter(has_text="def vector_add_kernel").first
    block.hover()
    block.locator('button.md-code__button[data-md-type="copy"]').click()
    copied = page.evaluate("navigator.clipboard.readText()")
    source = open("snippets/vector_add.py", encoding="utf-8").read()
    kernel = source.split("# --8<-- [start:kernel]\n")[1].split(
        "# --8<-- [end:kernel]"
    )[0]
    assert copied.strip() == kernel.strip()


def test_previous_and_next_follow_the_nav(page):
    page.goto(TUTORIAL)
    previous = page.locator("a.md-footer__link--prev")
    assert previous.get_attribute("aria-label").endswith("What Triton is")
    nav = page.locator(".module-nav").first
    previous_link = nav.locator("a").nth(2)
    assert previous_link.inner_text() == "What Triton is"
    previous_link.click()
    page.wait_for_url(re.compile(r"triton-series/$"))
    assert page.locator("h1").first.inner_text().startswith("What Triton is")
    page.locator("a.md-footer__link--next").click()
    page.wait_for_url(re.compile(r"vector-addition/$"))


def test_search_finds_program_id(page):
    page.goto("")
    page.locator("input.md-search__input").click(force=True)
    page.keyboard.type("program_id")
    results = page.locator(".md-search-result__item")
    results.first.wait_for(timeout=15_000)
    assert "Vector addition" in page.locator(".md-search-result").inner_text()
    # the whole index, loaded and searched (the visits of every page get an
    # index without documents: _index_without_documents)
    assert page.console_errors == []


def test_colab_and_download_links(page, server):
    page.goto(TUTORIAL)
    colab = page.locator("a.colab-button")
    repo = re.search(
        r"^repo_url:\s*https://github\.com/(\S+)$",
        open("mkdocs.yml", encoding="utf-8").read(),
        re.M,
    ).group(1)
    assert colab.get_attribute("href") == (
        f"https://colab.research.google.com/github/{repo}/blob/main/"
        "docs/notebooks/vector_addition.ipynb"
    )
    href = page.locator("a.notebook-download").get_attribute("href")
    response = page.request.get(server + TUTORIAL + href)
    assert response.ok and '"cells"' in response.text()


def test_dark_mode_toggle(page):
    page.goto("")
    before = page.evaluate("document.body.getAttribute('data-md-color-scheme')")
    page.locator("label.md-header__button[for^='__palette']:visible").first.click()
    after = page.evaluate("document.body.getAttribute('data-md-color-scheme')")
    assert {before, after} == {"default", "slate"}


def test_pages_load_without_console_errors(desktop):
    assert len(desktop) >= 20, sorted(desktop)
    errors = {url: r["console"] for url, r in desktop.items() if r["console"]}
    assert not errors, errors


# ------------------------------------------------- results at a glance (#14) ---
def _pages_with_timings(site):
    return sorted(
        html.parent.relative_to(site).as_posix() + "/"
        for html in site.rglob("index.html")
        if 'class="course-timings"' in html.read_text(encoding="utf-8")
    )


# Per GPU tab of every timing table: the plot before it, its points, the
# table's width against the content column, and numeric cells on one line.
_TABS_JS = """() => {
  const column = document.querySelector('.md-content__inner').clientWidth;
  const out = [];
  for (const block of document.querySelectorAll('.tabbed-block')) {
    const table = block.querySelector(':scope > .course-timings table');
    // a table in a collapsed block has no layout (and no text to read): the
    // block is what a first visit shows; its tables are measured open nowhere
    if (!table || table.closest('details:not([open])')) continue;
    // the plot drawn for this width (a wide and a narrow one are inlined)
    const plot = [...block.querySelectorAll(':scope > .course-plot svg')]
      .find(svg => svg.getClientRects().length);
    const cells = [...table.querySelectorAll('tbody td')];
    const wrapped = cells.filter(td => {
      const line = parseFloat(getComputedStyle(td).lineHeight) || 20;
      return td.getClientRects().length && td.scrollHeight > 1.8 * line;
    }).length;
    out.push({
      label: (() => {
        const set = block.closest('.tabbed-set');
        const i = [...block.parentElement.children].indexOf(block);
        return set.querySelectorAll('.tabbed-labels label')[i]?.innerText;
      })(),
      plot_before_table: !!plot &&
        (plot.compareDocumentPosition(table) & Node.DOCUMENT_POSITION_FOLLOWING) > 0,
      // one plot is shown (the ratio where the page judges a ratio), the
      // other is in the collapsed block: every row is on the rate plot
      points: (() => {
        if (!plot) return 0;
        const layout = plot.classList.contains('narrow') ? 'narrow' : 'wide';
        const rate = plot.querySelector('.panel:not(.ratio)') ? plot :
          [...block.querySelectorAll(':scope details .course-plot svg')]
            .find(s => s.classList.contains(layout) &&
                       s.querySelector('.panel:not(.ratio)'));
        const ratioShown = plot.querySelectorAll('.panel.ratio .point').length;
        if (plot !== rate && ratioShown === 0) return 0;
        return rate ? rate.querySelectorAll(
          '.panel:not(.ratio) .series[data-peer="Triton"] .point').length : 0;
      })(),
      rows: (() => {  // rows with a Triton rate
        const i = [...table.querySelectorAll('thead th')]
          .findIndex(th => th.innerText.startsWith('Triton'));
        return [...table.querySelectorAll('tbody tr')]
          .filter(tr => tr.children[i].innerText.trim() !== '—').length;
      })(),
      wrapped,
      width: table.getBoundingClientRect().width, column,
      box_scrolls: getComputedStyle(table.closest('.md-typeset__scrollwrap')
        || table.parentElement).overflowX,
    });
  }
  return out;
}"""


def _show_every_tab(page):
    """Tables in hidden tabs have no layout: open each tab in turn."""
    results = []
    for label in page.locator(".tabbed-labels label").all():
        if label.is_visible():
            label.click()
        results += [
            r for r in page.evaluate(_TABS_JS) if r["width"] > 0 and r not in results
        ]
    return results or page.evaluate(_TABS_JS)


def test_every_timing_table_has_its_plot_and_fits_at_1400px(desktop, built_site):
    # Layout only: the colour scheme changes no size (the contrast tests
    # below look at both schemes), so one scheme keeps the suite's time down.
    pages = _pages_with_timings(built_site[0])
    assert len(pages) >= 8, pages
    for url in pages:
        tabs = desktop[url]["tabs"]
        if not tabs:  # every table of the page in a collapsed block, or a bug
            from bs4 import BeautifulSoup

            html = (built_site[0] / url / "index.html").read_text(encoding="utf-8")
            blocks = BeautifulSoup(html, "html.parser").select(".course-timings")
            assert blocks and all(b.find_parent("details") for b in blocks), url
            continue
        for tab in tabs:
            where = f"{url} [{tab['label']}]"
            assert tab["plot_before_table"], f"{where}: no plot before the table"
            assert tab["points"] >= tab["rows"], where
            assert tab["width"] <= tab["column"] + 1, f"{where}: {tab}"
            assert tab["wrapped"] == 0, f"{where}: numeric cells wrap"


def _contrast(a, b):
    def lum(rgb):
        chan = [c / 255 for c in rgb]
        chan = [
            c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in chan
        ]
        return 0.2126 * chan[0] + 0.7152 * chan[1] + 0.0722 * chan[2]

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@pytest.mark.parametrize("scheme", ["default", "slate"])
def test_plot_text_passes_wcag_aa_in_both_schemes(page, scheme):
    page.goto("triton-series/tiled-gemm/")
    page.evaluate(f"document.body.setAttribute('data-md-color-scheme', '{scheme}')")
    found = page.evaluate(
        """() => {
        const rgb = s => s.match(/\\d+(\\.\\d+)?/g).slice(0, 3).map(Number);
        const bg = rgb(getComputedStyle(document.querySelector('.md-main')
          .closest('body')).backgroundColor);
        const texts = [...document.querySelectorAll('.course-plot svg text')]
          .slice(0, 200);
        return {bg, fills: texts.map(t => rgb(getComputedStyle(t).fill))};
    }"""
    )
    assert found["fills"], "no plot text on the page"
    worst = min(_contrast(f, found["bg"]) for f in found["fills"])
    assert worst >= 4.5, f"plot text contrast {worst:.2f} in {scheme}"


def test_data_downloads_are_published_beside_the_tables(page, built_site):
    page.goto("triton-series/tiled-gemm/")
    links = page.eval_on_selector_all(
        ".tabbed-block details a[href$='.json'], .tabbed-block details a[href$='.csv']",
        "els => els.map(e => e.href)",
    )
    assert any(h.endswith(".json") for h in links)
    assert any(h.endswith(".csv") for h in links)
    for href in links:
        response = page.request.get(href)
        assert response.ok, href
        assert len(response.body()) > 100, href


# ------------------------------------------- rendering that cannot break (#26) ---
def _open_in_scheme(page, url, scheme):
    """Load a page as a reader whose system asks for that scheme: Material
    picks the palette on load, so no colour is caught mid-transition."""
    page.emulate_media(color_scheme="dark" if scheme == "slate" else "light")
    page.goto(url)
    page.evaluate("localStorage.clear()")  # a palette an earlier page saved
    page.reload()
    got = page.evaluate("document.body.getAttribute('data-md-color-scheme')")
    assert got == scheme, (url, got)


_BACKGROUND_JS = """el => {
  const rgb = s => s.match(/\\d+(\\.\\d+)?/g).slice(0, 4).map(Number);
  for (let e = el; e; e = e.parentElement) {
    const c = rgb(getComputedStyle(e).backgroundColor);
    if (c.length < 4 || c[3] > 0) return c.slice(0, 3);
  }
  return rgb(getComputedStyle(document.body).backgroundColor).slice(0, 3);
}"""

# The pixels of a screenshot, read in the page (no image library needed):
# the colour most of them have (the background) and the one that differs
# from it most (the ink).
_INK_JS = """async png => {
  const img = new Image();
  img.src = 'data:image/png;base64,' + png;
  await img.decode();
  const c = document.createElement('canvas');
  c.width = img.width; c.height = img.height;
  const ctx = c.getContext('2d');
  ctx.drawImage(img, 0, 0);
  const d = ctx.getImageData(0, 0, c.width, c.height).data;
  const count = new Map();
  for (let i = 0; i < d.length; i += 4) {
    const k = d[i] + ',' + d[i + 1] + ',' + d[i + 2];
    count.set(k, (count.get(k) || 0) + 1);
  }
  const sorted = [...count.entries()].sort((a, b) => b[1] - a[1]);
  return sorted.slice(0, 400).map(([k, n]) => [k.split(',').map(Number), n]);
}"""


@pytest.mark.parametrize("scheme", ["default", "slate"])
def test_download_button_and_figures_pass_wcag_aa_in_both_schemes(page, scheme):
    import base64

    page.set_viewport_size({"width": 1400, "height": 900})
    _open_in_scheme(page, "triton-series/tiled-gemm/", scheme)
    button = page.locator("a.notebook-download").first
    color = page.evaluate(
        "el => getComputedStyle(el).color.match(/\\d+/g).slice(0, 3).map(Number)",
        button.element_handle(),
    )
    background = page.evaluate(_BACKGROUND_JS, button.element_handle())
    ratio = _contrast(color, background)
    assert ratio >= 4.5, f"'Download the notebook' {ratio:.2f}:1 in {scheme}"
    # the drawing for this width (a phone gets a narrower one)
    figures = page.locator("img[src*='assets/figures/']:visible")
    assert figures.count() >= 1
    for i in range(figures.count()):
        figure = figures.nth(i)
        figure.scroll_into_view_if_needed()
        png = base64.b64encode(figure.screenshot()).decode()
        colours = page.evaluate(_INK_JS, png)
        page_bg = page.evaluate(_BACKGROUND_JS, figure.element_handle())
        # the figure's text and lines: the colours covering at least 0.5 % of
        # it that differ most from the page; they must read against it
        total = sum(n for _, n in colours)
        inks = [rgb for rgb, n in colours if n >= total * 0.005]
        best = max(_contrast(rgb, page_bg) for rgb in inks)
        src = figure.get_attribute("src")
        assert best >= 4.5, f"{src}: ink {best:.2f}:1 on the page in {scheme}"


_CODE_JS = """() => [...document.querySelectorAll('.md-content pre > code')]
  .filter(c => c.getClientRects().length && c.innerText.length)
  .map(c => ({cols: Math.max(...c.innerText.split('\\n').map(l => l.length)),
              scroll: c.scrollWidth - c.clientWidth,
              head: c.innerText.slice(0, 60)}))"""


def test_code_written_to_88_columns_never_scrolls_at_1400px(desktop):
    # the snippets are written to 88 columns; captured tool output (ncu
    # tables, generated code) may be wider and scrolls in its own box. A block
    # inside a closed details element has no text to Chromium (innerText is
    # ''): it is not shown, and is judged where it is (_CODE_JS skips it)
    checked, scrolling = 0, []
    for url, found in desktop.items():
        for b in found["code"]:
            if b["cols"] <= 88:
                checked += 1
                if b["scroll"] > 1:
                    scrolling.append(f"{url}: {b['cols']} columns: {b['head']!r}")
    assert checked >= 50, checked
    assert not scrolling, "\n".join(scrolling[:20])


_SUPPORT_JS = """() => [...document.querySelectorAll('.course-support table')]
  .filter(t => t.getClientRects().length).map(t => ({
    width: t.getBoundingClientRect().width,
    column: document.querySelector('.md-content__inner').clientWidth,
    broken: [...t.querySelectorAll('code')]
      .filter(c => c.getClientRects().length > 1).length,
    legend: !!t.parentElement.querySelector('.course-support-legend'),
  }))"""


def test_support_matrix_fits_the_column_with_names_whole(desktop, built_site):
    pages = _pages(built_site[0], 'class="course-support"')
    assert len(pages) >= 5, pages
    for url in pages:
        tables = desktop[url]["support"]
        assert tables, url
        for t in tables:
            assert t["width"] <= t["column"] + 1, f"{url}: {t}"
            assert t["broken"] == 0, f"{url}: a kernel name breaks: {t}"
            assert t["legend"], url


def test_the_roofline_fits_a_phone(page):
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("gpu-architecture/01-roofline/")
    plots = page.evaluate(
        """() => [...document.querySelectorAll('.course-plot.roofline svg')]
          .filter(s => s.getClientRects().length).map(s => {
            const width = s.getBoundingClientRect().width;
            return {cls: s.getAttribute('class'), width,
                    scale: width / s.viewBox.baseVal.width,
                    box: s.parentElement.clientWidth};
          })"""
    )
    assert plots
    for plot in plots:
        assert "narrow" in plot["cls"], plot
        assert 12 * plot["scale"] >= 10, plot  # its 12-unit text, in px
        assert plot["width"] <= plot["box"] + 1, plot
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


def test_the_404_page_is_styled_and_its_links_work_served_at_the_root(
    browser, built_site
):
    # served at / (not under /triton-course/), with 404.html for a missing
    # path, as GitHub Pages does
    site = built_site[0]

    class Handler(http.server.SimpleHTTPRequestHandler):
        def send_error(self, code, message=None, explain=None):
            if code != 404:
                return super().send_error(code, message, explain)
            body = (site / "404.html").read_bytes()
            self.send_response(404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Handler, directory=str(site))
    )
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    root = f"http://127.0.0.1:{httpd.server_address[1]}/"
    context = browser.new_context()
    try:
        page = context.new_page()
        response = page.goto(root + "no/such/lesson/")
        assert response.status == 404
        assert "Page not found" in page.locator("h1").first.inner_text()
        # styled: Material's stylesheet laid the header out
        position = page.evaluate(
            "getComputedStyle(document.querySelector('.md-header')).position"
        )
        assert position == "sticky"
        links = page.eval_on_selector_all(
            ".md-content a[href], .md-nav a[href]", "els => els.map(e => e.href)"
        )
        assert len(links) >= 4
        for href in {h.split("#")[0] for h in links if h.startswith(root)}:
            assert page.request.get(href).ok, href
    finally:
        context.close()
        httpd.shutdown()


# --------------------------------------------- every device, every reader (#34) ---
PHONE = {"width": 390, "height": 844}


def _pages(site, *markers):
    """The site's pages whose HTML holds any of ``markers``, as URLs."""
    return sorted(
        html.parent.relative_to(site).as_posix() + "/"
        for html in site.rglob("index.html")
        if any(m in html.read_text(encoding="utf-8") for m in markers)
    )


def _wait_for_maths(page):
    page.evaluate("() => window.MathJax && MathJax.startup && MathJax.startup.promise")


def test_formulas_are_not_tab_stops(page):
    # every formula was a Tab stop (lesson 02: 174 of its 1 024); its menu
    # still opens on right-click and screen readers read its hidden MathML
    page.goto("gpu-architecture/02-flash-attention-mixed-precision/")
    _wait_for_maths(page)
    found = page.evaluate(
        """() => [...document.querySelectorAll('mjx-container')]
          .map(c => c.tabIndex)"""
    )
    assert len(found) >= 20, len(found)
    assert max(found) < 0, f"{sum(t >= 0 for t in found)} formulas are Tab stops"


AXE = os.path.join(os.path.dirname(__file__), "vendor", "axe-core", "axe.min.js")
# Only what a reader's scheme changes is checked again in the other scheme.
AXE_COLOUR_RULES = ["color-contrast", "link-in-text-block"]

# Before axe runs, thin out what it would check thousands of times over with
# one outcome, so a page takes seconds, not tens of seconds. Of the spans of
# highlighted code, the first of each colour class per kind of code block
# stays (its colour and background depend on nothing else); a block that
# scrolled sideways is kept as wide, so it still scrolls. Drawings that are
# one image to a reader (role=img: MathJax's, the plots, the figures) keep
# their name and lose their paths.
_AXE_TRIM_JS = """() => {
  const scrolling = [...document.querySelectorAll(
      'pre, pre > code, .highlight-ipynb, .jp-OutputArea-output')]
    .filter(e => e.scrollWidth > e.clientWidth + 1)
    .map(e => [e, e.scrollWidth]);
  const seen = new Set();
  for (const span of document.querySelectorAll('pre span[class]')) {
    if (span.querySelector('span[class]')) continue;
    const block = span.closest('.jp-Cell, .highlight, pre');
    const key = block.className + '|' + span.className;
    if (seen.has(key)) span.remove(); else seen.add(key);
  }
  // every width read before any spacer is added: a read after a change to
  // the page lays the whole page out again, once per block
  const narrowed = scrolling.filter(([e]) => e.scrollWidth <= e.clientWidth + 1);
  for (const [e, width] of narrowed) {
    const spacer = document.createElement('span');
    spacer.style.cssText = `display:block;height:1px;width:${width}px`;
    e.appendChild(spacer);
  }
  for (const svg of document.querySelectorAll(
      'mjx-container > svg, svg[role="img"]'))
    for (const child of [...svg.children])
      if (!['title', 'desc'].includes(child.tagName)) child.remove();
  // a scheme switched below must not be caught mid-transition, nor a part
  // of the page that just appeared mid-animation (Material fades in the
  // repository facts, from opacity 0, each time a page shows them)
  const style = document.createElement('style');
  style.textContent = '*, *::before, *::after ' +
    '{ transition: none !important; animation: none !important }';
  document.head.appendChild(style);
}"""

_AXE_RUN_JS = """async rules => {
  const options = {resultTypes: ['violations']};
  if (rules) options.runOnly = rules;
  const result = await axe.run(document, options);
  return result.violations
    .filter(v => ['serious', 'critical'].includes(v.impact))
    .map(v => ({rule: v.id, impact: v.impact, nodes: v.nodes.length,
                first: v.nodes[0].target.join(' '),
                why: v.nodes[0].failureSummary.slice(0, 200)}));
}"""


# A screen is the 900 px a 1400 px wide laptop window shows (scripts/
# page_sizes.py measures the same way, at 390 px too).
SCREENS_JS = "() => document.documentElement.scrollHeight / 900"
# #34: a lesson page reads in 12 screens or fewer at 1400 px; the limit gives
# half a screen to fonts and tables that differ between browsers and runs.
MAX_SCREENS = 12.5


def test_every_page_but_the_notebooks_fits_twelve_screens_at_1400px(desktop):
    long = {
        url: round(r["screens"], 1)
        for url, r in desktop.items()
        if not url.startswith("notebooks/") and r["screens"] > MAX_SCREENS
    }
    assert len(desktop) >= 20 and not long, long


def test_axe_finds_no_serious_violation_on_any_page_in_either_scheme(desktop):
    assert len(desktop) >= 20, sorted(desktop)
    found = []
    for url, r in desktop.items():
        assert r["scheme"] == "default", (url, r["scheme"])
        found += [(url, scheme, v) for scheme, v in r["axe"]]
    assert not found, "\n".join(
        f"{url or '/'} [{scheme}] {v['impact']} {v['rule']} x{v['nodes']}: "
        f"{v['first']}: {v['why']}"
        for url, scheme, v in found[:30]
    )


# ------------------------------------------------------- one visit per page ---
# Loading a page (with its formulas and plots) is most of what a check of it
# costs, so each page is visited once per viewport and everything checked at
# that viewport is read in that visit; the tests above judge what was read.
READABLE_MARKERS = ('class="arithmatex"', "assets/figures/", "<svg")


@pytest.fixture(scope="module")
def desktop(browser, server, built_site):
    """Every page at 1400 px in the light scheme, as a first visit shows it:
    {url: {console, scheme, code, support?, tabs?, axe}}. axe runs last (it
    trims the page), in the light scheme and then the dark one. The search
    index has no documents here (_index_without_documents)."""
    site = built_site[0]
    support = set(_pages(site, 'class="course-support"'))
    timings = set(_pages_with_timings(site))
    context, page = _new_page(browser, server, _index_without_documents(site))
    page.set_viewport_size({"width": 1400, "height": 900})
    page.emulate_media(color_scheme="light")
    found = {}
    try:
        for url in _urls(site):
            page.console_errors.clear()
            page.goto(url)
            page.wait_for_load_state("load")
            _wait_for_maths(page)
            r = found[url or "./"] = {
                "scheme": page.evaluate(
                    "document.body.getAttribute('data-md-color-scheme')"
                ),
                "code": page.evaluate(_CODE_JS),
                # before any tab or block is opened: what a first visit shows
                "screens": page.evaluate(SCREENS_JS),
            }
            key = url or "./"
            if key in support:
                r["support"] = page.evaluate(_SUPPORT_JS)
            if key in timings:
                r["tabs"] = _show_every_tab(page)
            r["console"] = list(page.console_errors)
            page.evaluate(_AXE_TRIM_JS)
            page.add_script_tag(url=AXE_URL)
            r["axe"] = [("default", v) for v in page.evaluate(_AXE_RUN_JS, None)]
            page.evaluate("document.body.setAttribute('data-md-color-scheme', 'slate')")
            r["axe"] += [
                ("slate", v) for v in page.evaluate(_AXE_RUN_JS, AXE_COLOUR_RULES)
            ]
    finally:
        context.close()
    return found
