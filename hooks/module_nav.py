"""MkDocs hook: module navigation at the top and bottom of every lesson page.

Derived from the nav in mkdocs.yml, never hand-kept: a lesson is a page inside
a nav section (a module or series); the section's index page is its overview.
Each lesson gets

    Module: Course Contents → <section>
    Previous: <lesson before it>      Next: <lesson after it>

so adding or reordering a lesson in mkdocs.yml updates every page. A lesson
may be a chapter (a section inside the module): its pages add the chapter to
the breadcrumbs and take their place in the module's Previous/Next order.
"""

from __future__ import annotations

import posixpath

from mkdocs.structure.nav import Section
from mkdocs.structure.pages import Page

_state: dict = {}


def on_nav(nav, config, files):
    _state["home"] = next((p for p in nav.pages if p.file.src_uri == "index.md"), None)
    return nav


def _title(page: Page) -> str:
    """The nav title, or the page's first heading (pages later in the build
    have not been read yet, so their title is not known to MkDocs)."""
    if page.title:
        return page.title
    source = page.file.abs_src_path
    if source and source.endswith(".md"):
        with open(source, encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("# "):
                    return line[2:].strip()
    return page.file.name.replace("-", " ").replace("_", " ").capitalize()


def _link(from_page: Page, to_page: Page, text: str | None = None) -> str:
    here = posixpath.dirname(from_page.file.src_uri)
    target = posixpath.relpath(to_page.file.src_uri, here or ".")
    return f"[{text or _title(to_page)}]({target})"


def _section_pages(section: Section) -> list[Page]:
    return [child for child in section.children if isinstance(child, Page)]


def _is_index(page: Page) -> bool:
    return posixpath.basename(page.file.src_uri) in ("index.md", "README.md")


def _overview(section: Section) -> Page | None:
    return next((p for p in _section_pages(section) if _is_index(p)), None)


def _reading_order(module: Section) -> list[Page]:
    """The module's pages in nav order, its own overview left out. A chapter
    (a section inside the module) contributes its overview, then its pages,
    so Previous/Next runs 02 -> 03's overview -> 03's pages -> 04."""
    order: list[Page] = []
    for child in module.children:
        if isinstance(child, Page) and not _is_index(child):
            order.append(child)
        elif isinstance(child, Section):
            chapter = _section_pages(child)
            order += [p for p in chapter if _is_index(p)]
            order += [p for p in chapter if not _is_index(p)]
    return order


def module_nav_block(page: Page) -> str | None:
    """The Markdown of the navigation block for ``page``, or None if not a lesson."""
    section = page.parent
    if not isinstance(section, Section):
        return None
    # A chapter's page: the module is the section above its chapter.
    chapter = section if isinstance(section.parent, Section) else None
    module = section.parent if chapter else section
    overview = _overview(module)
    lessons = _reading_order(module)

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
    if page in lessons:
        i = lessons.index(page)
        previous = lessons[i - 1] if i > 0 else overview
        following = lessons[i + 1] if i + 1 < len(lessons) else None
        if previous is not None:
            lines.append("**Previous:** " + _link(page, previous))
        if following is not None:
            lines.append("**Next:** " + _link(page, following))
    elif page is overview and lessons:
        lines.append("**Next:** " + _link(page, lessons[0]))
    body = "<br>\n".join(lines)
    return f'<div class="module-nav" markdown>\n{body}\n</div>\n'


def on_page_markdown(markdown, page, config, files):
    block = module_nav_block(page)
    if block is None:
        return markdown
    # Top: after the page's first heading, as the source lesson shows it.
    head, sep, rest = markdown.partition("\n")
    if head.startswith("# "):
        return f"{head}\n\n{block}\n---\n{rest}\n\n---\n\n{block}"
    return f"{block}\n---\n\n{markdown}\n\n---\n\n{block}"
