"""The code a page shows is a program (#34 item 3): copied top to bottom, it runs.

For each lesson page of the built site, the Python blocks a reader sees
without a click are joined in page order into one script. The script must
- name nothing it does not define or import (ruff's F821, undefined name: a
  function may call a helper the page hides without the run reaching it);
- import each name once (one imports block, not one per embedded file);
- run: in a fresh process, under Triton's interpreter, from an empty
  temporary directory, it exits 0 with no traceback. That is the reader's
  situation after `pip install -e '.[kernels]'`: the package
  ``triton_course`` imports, the repository's ``snippets/`` do not.

What a reader sees without a click, the same rule as tests/test_chapter_03.py:
- not a collapsed block (``???``, a closed ``<details>``); an open one
  (``???+``) counts;
- in a tabbed set, only the tab shown on load (the first): the others are
  alternatives to it (another GPU, another framework), not the next step;
- only blocks fenced as ``python``: ``text`` (outputs), ``bash`` (commands)
  and ``pycon`` (sessions) are not part of the program. The language is read
  from the ``language-python`` class that ``pygments_lang_class`` adds
  (mkdocs.yml, pymdownx.highlight).

An excerpt says so where the reader sees it, in its title:
``python title="excerpt of matmul_kernel: the K loop"``. It is left out of the
program, and it must be a true excerpt: its lines appear, in order and
together, in the file its title names (``snippets/...py``, ``tests/...py``)
or, where it names none, in a block the program runs. An excerpt of code the
page does not show and does not name is a hidden helper.

The notebook pages are not checked here: each is a whole program already,
run cell by cell by tests/test_notebooks.py.

The scripts run side by side, one per CPU, each in a fork of one process
that imported torch and triton (tests/zygote.py): the file costs what the
pages' code runs. A page whose ``main()`` runs large sizes under the interpreter slows
this file for everyone.
"""

from __future__ import annotations

import ast
import os
import re
import signal
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

import pytest
import yaml
from bs4 import BeautifulSoup
from conftest import REPO_ROOT

# Pages whose Python blocks are deliberately not one program, with the reason.
# Each must still be a page of the nav (checked below).
NOT_A_PROGRAM: dict[str, str] = {}

# CPU seconds per page (about 3 of them import torch): a page that needs more
# runs sizes no reader waits for on a laptop. The wall-clock limit only stops a
# hang: a loaded machine takes several times the CPU time.
# CPU seconds a page's program may use (its own code: torch and triton are
# imported already, see run_program); SIGXCPU at the limit, SIGKILL 5 s later
CPU_S = 30
TIMEOUT_S = 300
PYTHON = {"language-python", "language-py", "language-python3"}
# A repository file an excerpt's title names
FILE_RE = re.compile(r"\b((?:snippets|tests|triton_course|notebooks)/[\w/.-]+\.py)\b")


def _nav_pages(node) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [p for value in node.values() for p in _nav_pages(value)]
    return [p for item in node for p in _nav_pages(item)]


CONFIG = yaml.safe_load((REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
PAGES = [p for p in _nav_pages(CONFIG["nav"]) if p.endswith(".md")]


def _html_path(site: Path, src_uri: str) -> Path:
    stem = src_uri.removesuffix(".md")
    if stem == "index":
        return site / "index.html"
    return site / stem.removesuffix("/index") / "index.html"


class Block(NamedTuple):
    code: str
    title: str = ""

    @property
    def excerpt(self) -> bool:
        return self.title.lower().startswith("excerpt")


def _hidden(tag) -> bool:
    """Inside a closed <details>, or in a tab other than the first of its set."""
    for parent in tag.parents:
        if parent.name == "details" and not parent.has_attr("open"):
            return True
        if "tabbed-block" in (parent.get("class") or []):
            first = parent.parent.find(class_="tabbed-block", recursive=False)
            if first is not parent:
                return True
    return False


def visible_python(html: str) -> list[Block]:
    """The Python blocks of a page's article a reader sees by default, in order."""
    soup = BeautifulSoup(html, "html.parser")
    article = soup.find("article") or soup
    blocks = []
    for div in article.find_all("div", class_="highlight"):
        classes = set(div.get("class") or [])
        if not classes & PYTHON or _hidden(div):
            continue
        code = div.find("code") or div
        title = div.find(class_="filename")
        blocks.append(Block(code.get_text(), title.get_text() if title else ""))
    return blocks


def program(blocks: list[Block]) -> str:
    runs = [b.code.rstrip("\n") for b in blocks if not b.excerpt]
    return "\n\n".join(runs) + "\n" if runs else ""


def _lines(code: str) -> list[str]:
    """Non-blank lines, stripped; a snippet file's section markers, which a
    page never shows, left out."""
    lines = (line.strip() for line in code.splitlines())
    return [line for line in lines if line and not line.startswith("# --8<--")]


def _within(part: list[str], whole: list[str]) -> bool:
    return any(
        whole[i : i + len(part)] == part for i in range(len(whole) - len(part) + 1)
    )


def false_excerpts(blocks: list[Block], root: Path = REPO_ROOT) -> list[str]:
    """The excerpts whose lines are not, in order and together, in the file
    their title names or, naming none, in a block the program runs."""
    shown = [_lines(b.code) for b in blocks if not b.excerpt]
    wrong = []
    for block in blocks:
        part = _lines(block.code)
        if not block.excerpt or not part:
            continue
        named = FILE_RE.findall(block.title)
        if named:
            files = [root / name for name in named]
            found = any(
                f.is_file() and _within(part, _lines(f.read_text("utf-8")))
                for f in files
            )
        else:
            found = any(_within(part, whole) for whole in shown)
        if not found:
            wrong.append(f"{block.title!r}, first line {part[0]!r}")
    return wrong


def imported_twice(source: str) -> list[str]:
    """Top-level imports that bind the same name to the same thing again."""
    bound = Counter()
    try:
        body = ast.parse(source).body
    except SyntaxError:  # the run reports it
        return []
    for node in body:
        if isinstance(node, ast.Import):
            bound.update(
                f"import {a.name}" + (f" as {a.asname}" if a.asname else "")
                for a in node.names
            )
        elif isinstance(node, ast.ImportFrom):
            bound.update(
                f"from {'.' * node.level}{node.module or ''} import {a.name}"
                + (f" as {a.asname}" if a.asname else "")
                for a in node.names
            )
    return sorted(name for name, count in bound.items() if count > 1)


def undefined_names(script: Path) -> list[str]:
    """ruff's F821 findings, one line each, the project's ruff config ignored."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--isolated",
            "--select",
            "F821",
            "--output-format",
            "concise",
            "--no-cache",
            script.name,
        ],
        cwd=script.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.returncode not in (0, 1):  # 2: ruff itself failed
        raise RuntimeError(f"ruff failed on {script}:\n{done.stderr}")
    return [line for line in done.stdout.splitlines() if " F821 " in line]


_ZYGOTE = None  # tests/zygote.py: one import of torch and triton for every page


@pytest.fixture(scope="module", autouse=True)
def zygote():
    global _ZYGOTE
    from zygote import Zygote

    # one thread each: the scripts run side by side, one per CPU (OpenMP
    # reads this when torch is imported, in the zygote)
    with Zygote(env=dict(os.environ, OMP_NUM_THREADS="1")) as _ZYGOTE:
        yield _ZYGOTE
    _ZYGOTE = None


def run_program(source: str, workdir: Path, cpu: int = CPU_S):
    """Run ``source`` as ``page.py`` in ``workdir`` under the interpreter,
    with at most ``cpu`` seconds of CPU. Returns (ok, message): the tail of
    the output when it failed. It runs in a fork of a process that imported
    torch and triton (tests/zygote.py), as ``python page.py`` would run."""
    script = workdir / "page.py"
    script.write_text(source, encoding="utf-8")
    # PYTHONPATH is dropped: only what an installed package provides imports
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TRITON_INTERPRET"] = "1"
    env["OMP_NUM_THREADS"] = "1"
    code, out, err = _ZYGOTE.run(
        "page.py", cwd=workdir, env=env, timeout=TIMEOUT_S, cpu_limit=cpu
    )
    if code is None:
        return False, f"still running after {TIMEOUT_S} s"
    output = out + err
    if code == -signal.SIGXCPU:
        return False, f"used more than {cpu} s of CPU\n{output[-3000:]}"
    if code != 0 or "Traceback (most recent call last)" in output:
        return False, f"exit {code}\n{output[-3000:]}"
    return True, ""


# ------------------------------------------------- the rule, without a site ---
def _div(code: str, language: str, title: str = "") -> str:
    name = f'<span class="filename">{title}</span>' if title else ""
    return (
        f'<div class="{language} highlight">{name}<pre><span></span>'
        f"<code>{code}</code></pre></div>"
    )


def _details(inner: str, *attrs: str) -> str:
    return (
        f'<details class="note"{"".join(attrs)}><summary>s</summary>{inner}</details>'
    )


PY = "language-python"
PAGE = f"""<article>
{_div("a = 1", PY)}
{_div("output", "language-text")}
{_details(_div("hidden()", PY))}
{_details(_div("b = a", PY), " open")}
<div class="tabbed-set"><div class="tabbed-content">
<div class="tabbed-block">{_div("c = b", PY)}</div>
<div class="tabbed-block">{_div("other_tab()", PY)}</div>
</div></div>
{_div("python x.py", "language-bash")}
{_div("b = a", PY, "Excerpt of the above")}
{_div("d = c", PY, "main.py")}
</article>"""


def test_a_reader_sees_open_blocks_and_the_first_tab_only():
    blocks = visible_python(PAGE)
    assert blocks == [
        Block("a = 1"),
        Block("b = a"),
        Block("c = b"),
        Block("b = a", "Excerpt of the above"),
        Block("d = c", "main.py"),
    ]
    assert [b.excerpt for b in blocks] == [False, False, False, True, False]
    assert program(blocks) == "a = 1\n\nb = a\n\nc = b\n\nd = c\n"


def test_an_excerpt_is_of_code_the_page_runs_or_of_the_file_it_names(tmp_path):
    whole = Block("def f():\n    x = 1\n    y = 2\n    return x + y\n")
    ok = Block("  x = 1\n\n  y = 2", "excerpt of f")
    assert false_excerpts([whole, ok]) == []
    # out of order, or of code the page hides, it is not an excerpt
    assert false_excerpts([whole, Block("y = 2\nx = 1", "excerpt of f")])
    assert false_excerpts([Block("z = 0", "excerpt of f")])
    # naming a file, it is checked against the file, not the page
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_f.py").write_text("def test_f():\n    z = 0\n")
    named = Block("z = 0", "excerpt of tests/test_f.py")
    assert false_excerpts([named], root=tmp_path) == []
    assert false_excerpts([Block("x = 1", "excerpt of tests/test_f.py")], tmp_path)
    assert false_excerpts([Block("z = 0", "excerpt of tests/test_g.py")], tmp_path)


def test_imports_twice_and_undefined_names_are_found(tmp_path):
    source = "import torch\nimport triton.language as tl\nimport torch\n"
    assert imported_twice(source) == ["import torch"]
    assert imported_twice("import triton\nimport triton.language as tl\n") == []
    script = tmp_path / "page.py"
    # a function that calls a helper the page hides: the run never reaches it
    script.write_text("def main():\n    return hidden_helper()\n")
    assert run_program(script.read_text(), tmp_path, cpu=30) == (True, "")
    [finding] = undefined_names(script)
    assert "hidden_helper" in finding


def test_a_failing_program_fails_and_a_working_one_passes(tmp_path):
    assert run_program("x = 1\nprint(x)\n", tmp_path, cpu=30) == (True, "")
    ok, message = run_program("print(triton)\n", tmp_path, cpu=30)
    assert not ok and "NameError" in message
    # run as a script: a page's `if __name__ == "__main__": main()` runs
    ok, message = run_program(
        'if __name__ == "__main__":\n    raise SystemExit(3)\n', tmp_path, cpu=30
    )
    assert not ok and message.startswith("exit 3")
    # the repository is not on the path: a page may not import its snippets
    ok, message = run_program("import snippets.vector_add\n", tmp_path, cpu=30)
    assert not ok and "ModuleNotFoundError" in message
    ok, message = run_program("while True:\n    pass\n", tmp_path, cpu=1)
    assert not ok and "more than 1 s of CPU" in message


# ------------------------------------------------------------ the pages ---
def test_the_exempt_pages_are_pages():
    for page, reason in NOT_A_PROGRAM.items():
        assert page in PAGES, f"{page} is exempt but not in the nav"
        assert reason.strip(), f"{page} is exempt without a reason"


class Result(NamedTuple):
    excerpts: list[str]  # excerpts of code neither the page nor a file holds
    twice: list[str]  # imports repeated
    undefined: list[str]  # ruff F821
    ran: tuple[bool, str]


@pytest.fixture(scope="module")
def results(built_site, tmp_path_factory) -> dict[str, Result]:
    """Every page's checks, the programs run side by side."""
    site = built_site[0]
    blocks = {
        page: visible_python(_html_path(site, page).read_text(encoding="utf-8"))
        for page in PAGES
        if page not in NOT_A_PROGRAM
    }
    # the site must mark each block's language, or every page looks code-free
    assert any(blocks.values()), (
        "no page has a language-python block: is pygments_lang_class: true set "
        "for pymdownx.highlight in mkdocs.yml?"
    )

    folders = {
        page: tmp_path_factory.mktemp(page.replace("/", "_").removesuffix(".md"))
        for page, page_blocks in blocks.items()
        if page_blocks
    }

    def one(page: str) -> tuple[str, Result]:
        folder = folders[page]
        source = program(blocks[page])
        ran = run_program(source, folder)  # writes folder/page.py
        return page, Result(
            false_excerpts(blocks[page]),
            imported_twice(source),
            undefined_names(folder / "page.py"),
            ran,
        )

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return dict(pool.map(one, folders))


NO_CODE = Result([], [], [], (True, ""))


def _result(page: str, results: dict[str, Result]) -> Result:
    if page in NOT_A_PROGRAM:
        pytest.skip(f"not a program: {NOT_A_PROGRAM[page]}")
    return results.get(page, NO_CODE)


@pytest.mark.parametrize("page", PAGES)
def test_the_visible_code_runs_top_to_bottom(page, results):
    ok, message = _result(page, results).ran
    if not ok:
        pytest.fail(
            f"{page}: its visible Python blocks, run in order, fail:\n{message}"
        )


@pytest.mark.parametrize("page", PAGES)
def test_the_visible_code_names_nothing_it_hides(page, results):
    result = _result(page, results)
    if result.undefined:
        pytest.fail(
            f"{page}: names its visible code uses but does not define or import "
            "(a helper in a collapsed block, on another page, in a test?):\n"
            + "\n".join(result.undefined)
        )
    if result.excerpts:
        pytest.fail(
            f"{page}: excerpts of code neither its visible blocks nor the file "
            "their title names hold:\n" + "\n".join(result.excerpts)
        )


@pytest.mark.parametrize("page", PAGES)
def test_the_visible_code_imports_each_name_once(page, results):
    twice = _result(page, results).twice
    if twice:
        pytest.fail(f"{page}: imported more than once in its visible code: {twice}")
