"""MkDocs hook: course navigation at the top and bottom of every lesson page.

Derived from the nav in mkdocs.yml, never hand-kept. The nav's order is the
course's teaching order, so Previous/Next are a page's neighbours in the whole
nav (the same pages Material's footer links), crossing from one section into
the next. A lesson is a page inside a nav section (a module or series); the
section's index page is its overview. Each lesson gets

    Module: Course Contents → <section>
    Previous: <page before it>      Next: <page after it>
    Assumes: <earlier pages it builds on>   (top only, from front matter)

so adding or reordering a lesson in mkdocs.yml updates every page. A lesson
may be a chapter (a section inside the module): its pages add the chapter to
the breadcrumbs. ``assumes:`` in a page's front matter lists the pages, by
relative path, that a reader should have read first; each must come earlier
in the nav, or the build stops.
"""

from __future__ import annotations

import posixpath

from mkdocs.exceptions import PluginError
from mkdocs.structure.nav import Section
from mkdocs.structure.pages import Page

_state: dict = {}


def on_nav(nav, config, files):
    _state["home"] = next((p for p in nav.pages if p.file.src_uri == "index.md"), None)
    _state["order"] = {p.file.src_uri: i for i, p in enumerate(nav.pages)}
    _state["pages"] = {p.file.src_uri: p for p in nav.pages}
    return nav


def _title(page: Page) -> str:
    """The nav title, or the page's first heading (pages later in the build
    have not been read yet, so their title is not known to MkDocs)."""
    if page.title:
        return page.title
    source = page.file.abs_src_path
    if source and source.endswith(".md"):
        with open(source, encoding="utf-8") as handle:
            text = handle.read()
        if text.startswith("---\n"):  # front matter: its "# " lines are comments
            text = text.split("\n---\n", 1)[-1]
        for line in text.splitlines():
            if line.startswith("# "):
                return line[2:].strip()
    return page.file.name.replace("-", " ").replace("_", " ").capitalize()


def _link(from_page: Page, to_page: Page, text: str | None = None) -> str:
    here = posixpath.dirname(from_page.file.src_uri)
    target = posixpath.relpath(to_page.file.src_uri, here or ".")
    return f"[{text or _title(to_page)}]({target})"


def _is_index(page: Page) -> bool:
    return posixpath.basename(page.file.src_uri) in ("index.md", "README.md")


def _overview(section: Section) -> Page | None:
    pages = (child for child in section.children if isinstance(child, Page))
    return next((p for p in pages if _is_index(p)), None)


def assumed_pages(page: Page) -> list[Page]:
    """The pages ``assumes:`` in the front matter names, each checked to be a
    page of the nav that comes before ``page`` (a reader cannot be assumed to
    have read what the course puts later)."""
    wanted = page.meta.get("assumes") or []
    if isinstance(wanted, str):
        wanted = [wanted]
    order, pages = _state.get("order", {}), _state.get("pages", {})
    here = page.file.src_uri
    found = []
    for target in wanted:
        uri = posixpath.normpath(posixpath.join(posixpath.dirname(here), target))
        if uri not in pages:
            raise PluginError(f"{here}: 'assumes: {target}' is not a page of the nav")
        if here in order and order[uri] >= order[here]:
            raise PluginError(
                f"{here}: 'assumes: {target}', but the nav puts that page later:"
                " reorder the nav or drop it"
            )
        found.append(pages[uri])
    return found


def module_nav_block(page: Page, top: bool = True) -> str | None:
    """The Markdown of the navigation block for ``page``, or None if not a
    lesson. ``top`` adds the Assumes line, which the foot of the page omits."""
    section = page.parent
    if not isinstance(section, Section):
        return None
    # A chapter's page: the module is the section above its chapter.
    chapter = section if isinstance(section.parent, Section) else None
    module = section.parent if chapter else section
    overview = _overview(module)

    home = _state.get("home")
    crumbs = [_link(page, home) if home else "Course Contents"]
    if overview is not None and overview is not page:
        crumbs.append(_link(page, overview, module.title))
    else:
        crumbs.append(module.title)
    if chapter is not None:
        first = _overview(chapter)
        if first is not None and first is not page:
            crumbs.append(_link(page, first, chapter.title))
        else:
            crumbs.append(chapter.title)
    lines = ["**Module:** " + " → ".join(crumbs)]
    # The nav's neighbours, as the footer's links: one order on every page.
    if page.previous_page is not None:
        lines.append("**Previous:** " + _link(page, page.previous_page))
    if page.next_page is not None:
        lines.append("**Next:** " + _link(page, page.next_page))
    assumed = assumed_pages(page)
    if top and assumed:
        links = ", ".join(_link(page, p) for p in assumed)
        lines.append("**Assumes:** " + links)
    body = "<br>\n".join(lines)
    return f'<div class="module-nav" markdown>\n{body}\n</div>\n'


def on_page_markdown(markdown, page, config, files):
    block = module_nav_block(page)
    if block is None:
        if page.meta.get("assumes"):
            assumed_pages(page)  # still checked where no box shows it
        return markdown
    foot = module_nav_block(page, top=False)
    # Top: after the page's first heading, as the source lesson shows it.
    head, sep, rest = markdown.partition("\n")
    if head.startswith("# "):
        return f"{head}\n\n{block}\n---\n{rest}\n\n---\n\n{foot}"
    return f"{block}\n---\n\n{markdown}\n\n---\n\n{foot}"
