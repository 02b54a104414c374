"""Headless Chromium against the built site on a phone (390 px): each page
with formulas, figures or timing tables visited once, read, then judged.

A file of its own beside tests/test_browser.py (whose fixtures and helpers it
uses): under pytest-xdist's --dist loadfile each file runs on one worker, and
the two visits of every page, at 1400 px and at 390 px, are minutes each on
CI's two cores; in one file they ran one after the other.
"""

import pytest
from test_browser import (  # noqa: F401  (browser, server: fixtures)
    PHONE,
    READABLE_MARKERS,
    _index_without_documents,
    _new_page,
    _pages,
    _pages_with_timings,
    _show_every_tab,
    _wait_for_maths,
    browser,
    server,
)

pytestmark = pytest.mark.browser


# the phone's own plot of a timing table
_PHONE_PLOTS_JS = """() => [...document.querySelectorAll(
    '.course-plot:not(.roofline) svg')]
  .filter(s => s.getClientRects().length)
  .map(s => {
    const width = s.getBoundingClientRect().width;
    return {cls: s.getAttribute('class'), width,
            scale: width / s.viewBox.baseVal.width,
            box: s.parentElement.clientWidth};
  })"""


def test_on_a_phone_tables_scroll_in_their_box_not_the_page(phone, built_site):
    pages = _pages_with_timings(built_site[0])
    assert len(pages) >= 8, pages
    for url in pages:
        found = phone[url]
        for tab in found["tabs"]:
            where = f"{url} [{tab['label']}]"
            assert tab["wrapped"] == 0, f"{where}: numeric cells wrap on a phone"
            assert tab["box_scrolls"] in ("auto", "scroll"), f"{where}: {tab}"
            assert tab["plot_before_table"], f"{where}: no plot on a phone"
            assert tab["points"] >= tab["rows"], where
        page_width = found["page_width"]
        assert page_width <= 390, f"{url} scrolls sideways ({page_width} px)"
        # the phone's own plot: drawn at about 1:1, so its 11-unit text stays
        # at least 10 px, and it fits its box (nothing to scroll)
        assert found["plots"], url
        for plot in found["plots"]:
            assert "narrow" in plot["cls"], f"{url}: the wide plot shows on a phone"
            assert 11 * plot["scale"] >= 10, (
                f"{url}: plot text {11 * plot['scale']:.1f} px"
            )
            assert plot["width"] <= plot["box"] + 1, f"{url}: {plot}"
    errors = {url: r["console"] for url, r in phone.items() if r["console"]}
    assert not errors, errors


SMALLEST_TEXT_PX = 9


# Every visible formula and figure on the page: its size on screen, the size
# of its smallest text, and the text that leaves its drawing. A figure shown
# as <img> is fetched and drawn inline, off screen, at the image's size, so
# its text can be measured; text size is the font size times the drawing's
# scale (rendered width / viewBox width).
_READABLE_JS = """async () => {
  // in a collapsed block nothing is shown (Chromium still lays it out)
  const visible = e => e.getClientRects().length > 0 &&
    !e.closest('details:not([open])');
  const formulas = [...document.querySelectorAll('.md-content mjx-container')]
    .filter(visible).map(c => {
      const svg = c.querySelector('svg');
      const r = svg.getBoundingClientRect();
      const scale = r.width / svg.width.baseVal.value;
      return {what: c.getAttribute('display') ? 'display' : 'inline',
              tex: (c.nextElementSibling || c).textContent.slice(0, 60),
              width: r.width, height: r.height,
              text_px: parseFloat(getComputedStyle(c).fontSize) * scale};
    });
  const measure = (svg, name) => {
    const vb = svg.viewBox.baseVal;
    const scale = svg.getBoundingClientRect().width / vb.width;
    let smallest = Infinity; const outside = [];
    for (const t of svg.querySelectorAll('text')) {
      if (!t.textContent.trim() || !t.getClientRects().length) continue;
      smallest = Math.min(smallest,
                          parseFloat(getComputedStyle(t).fontSize) * scale);
      // the text's box in the drawing's units (transforms of its groups
      // included), against the viewBox
      const b = t.getBoundingClientRect(), o = svg.getBoundingClientRect();
      const x0 = vb.x + (b.left - o.left) / scale;
      const x1 = vb.x + (b.right - o.left) / scale;
      const y0 = vb.y + (b.top - o.top) / scale;
      const y1 = vb.y + (b.bottom - o.top) / scale;
      if (x0 < vb.x - 1 || y0 < vb.y - 1 || x1 > vb.x + vb.width + 1 ||
          y1 > vb.y + vb.height + 1) outside.push(t.textContent);
    }
    return {name, smallest, outside,
            width: svg.getBoundingClientRect().width,
            box: svg.parentElement.clientWidth};
  };
  const figures = [];
  for (const svg of document.querySelectorAll('.md-content svg')) {
    if (svg.closest('mjx-container') || !visible(svg) ||
        !svg.querySelector('text')) continue;
    figures.push(measure(svg, svg.querySelector('title')?.textContent || 'svg'));
  }
  for (const img of document.querySelectorAll(
      '.md-content img[src*="assets/figures/"]')) {
    if (!visible(img)) continue;
    const text = await (await fetch(img.currentSrc)).text();
    const holder = document.createElement('div');
    holder.style.cssText = 'position:absolute;left:-10000px;top:0;width:' +
      img.getBoundingClientRect().width + 'px';
    holder.innerHTML = text;
    document.body.appendChild(holder);
    const svg = holder.querySelector('svg');
    svg.style.width = '100%'; svg.style.height = 'auto';
    const m = measure(svg, img.getAttribute('src'));
    m.width = img.getBoundingClientRect().width;
    m.box = img.parentElement.clientWidth;
    holder.remove();
    figures.push(m);
  }
  return {formulas, figures,
          page_width: document.documentElement.scrollWidth};
}"""


def test_on_a_phone_formulas_and_figures_are_readable(phone, built_site):
    # Material sizes a display formula to its content below 45em; MathJax's
    # SVG once collapsed to 1 x 1 px there. Figures drawn for the column
    # were scaled to half on a phone: 5 px labels.
    pages = _pages(built_site[0], *READABLE_MARKERS)
    seen = {"display": 0, "figure": 0}
    problems = []
    for url in pages:
        found = phone[url]["readable"]
        for f in found["formulas"]:
            seen["display"] += f["what"] == "display"
            if f["what"] == "display" and min(f["width"], f["height"]) <= 9:
                problems.append(
                    f"{url}: formula drawn {f['width']:.0f} x "
                    f"{f['height']:.0f} px: {f['tex']!r}"
                )
            if f["text_px"] < SMALLEST_TEXT_PX:
                problems.append(
                    f"{url}: formula text {f['text_px']:.1f} px: {f['tex']!r}"
                )
        for f in found["figures"]:
            seen["figure"] += 1
            if f["smallest"] < SMALLEST_TEXT_PX:
                problems.append(f"{url}: {f['name']}: text {f['smallest']:.1f} px")
            if f["outside"]:
                problems.append(
                    f"{url}: {f['name']}: text leaves the drawing: {f['outside'][:3]}"
                )
            if f["width"] > f["box"] + 1:
                problems.append(f"{url}: {f['name']} is wider than its column")
        if found["page_width"] > PHONE["width"]:
            problems.append(f"{url} scrolls sideways ({found['page_width']} px)")
    assert seen["display"] >= 20 and seen["figure"] >= 10, seen
    assert not problems, "\n".join(problems[:30])


@pytest.fixture(scope="module")
def phone(browser, server, built_site):  # noqa: F811 (the fixtures)
    """Every page with formulas, figures or timing tables at 390 px:
    {url: {console, readable?, tabs?, page_width?, plots?}}. The search index
    has no documents here (test_browser._index_without_documents)."""
    site = built_site[0]
    readable = set(_pages(site, *READABLE_MARKERS))
    timings = set(_pages_with_timings(site))
    context, page = _new_page(browser, server, _index_without_documents(site))
    page.set_viewport_size(PHONE)
    found = {}
    try:
        for url in sorted(readable | timings):
            page.console_errors.clear()
            page.goto(url)
            _wait_for_maths(page)
            r = found[url] = {}
            if url in readable:
                r["readable"] = page.evaluate(_READABLE_JS)
            if url in timings:
                r["tabs"] = _show_every_tab(page)
                r["page_width"] = page.evaluate("document.documentElement.scrollWidth")
                r["plots"] = page.evaluate(_PHONE_PLOTS_JS)
            r["console"] = list(page.console_errors)
    finally:
        context.close()
    return found
