"""Every page in the nav has an independent review record (reviews/README.md).

The records are not on the site; these tests check they exist and are whole:
the header fields, findings whose count matches the header, each finding
with a proof and a resolution, and a list of what was checked and found
correct.
"""

from __future__ import annotations

import re

import pytest
import yaml
from conftest import REPO_ROOT

REVIEWS = REPO_ROOT / "reviews"
CLASSES = ("false", "misleading", "imprecise")


def _nav_pages(node) -> list[str]:
    """Every Markdown page the nav lists (notebooks are reviewed with the
    lesson that embeds their recipe's code)."""
    if isinstance(node, str):
        return [node] if node.endswith(".md") else []
    if isinstance(node, dict):
        return [p for v in node.values() for p in _nav_pages(v)]
    if isinstance(node, list):
        return [p for item in node for p in _nav_pages(item)]
    return []


def _mkdocs_nav():
    # mkdocs.yml uses !!python/name tags for extensions: skip unknown tags.
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("", lambda loader, suffix, node: None)
    config = yaml.load((REPO_ROOT / "mkdocs.yml").read_text(), Loader=Loader)
    return config["nav"]


PAGES = _nav_pages(_mkdocs_nav())


def parse_record(text: str) -> dict:
    """The parts of a review record; raises ValueError naming what is missing."""
    head = {}
    for key in ("reviewer", "date", "commit", "statements checked", "findings"):
        m = re.search(rf"^- {key}: *(.+)$", text, re.M)
        if not m or not m.group(1).strip() or m.group(1).strip().startswith("<"):
            raise ValueError(f"no '- {key}:' line")
        head[key] = m.group(1).strip()
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", head["date"]):
        raise ValueError(f"date {head['date']!r} is not YYYY-MM-DD")
    if not re.fullmatch(r"[0-9a-f]{7,40}", head["commit"]):
        raise ValueError(f"commit {head['commit']!r} is not a commit hash")
    if not re.fullmatch(r"\d+", head["statements checked"]):
        raise ValueError("'statements checked' is not a number")
    counts = {}
    for cls in CLASSES:
        m = re.search(rf"\b{cls} (\d+)", head["findings"])
        if not m:
            raise ValueError(f"'findings:' gives no count of {cls}")
        counts[cls] = int(m.group(1))

    if "## Findings" not in text or "## Checked and found correct" not in text:
        raise ValueError(
            "a '## Findings' or '## Checked and found correct' section is missing"
        )
    findings_text = text.split("## Findings", 1)[1].split(
        "## Checked and found correct", 1
    )[0]
    blocks = re.split(r"^### ", findings_text, flags=re.M)[1:]
    found = {cls: 0 for cls in CLASSES}
    open_findings = []
    for block in blocks:
        title = block.splitlines()[0]
        m = re.match(r"\d+\. (false|misleading|imprecise)\b", title)
        if not m:
            raise ValueError(f"finding {title!r} does not start with its class")
        found[m.group(1)] += 1
        if not re.search(r"^Proof:", block, re.M):
            raise ValueError(f"finding {title!r} has no proof")
        res = re.search(r"^Resolution: *(\S.*)$", block, re.M)
        if not res:
            raise ValueError(f"finding {title!r} has no resolution")
        if res.group(1).lower().startswith("open"):
            open_findings.append(title)
    if found != counts:
        raise ValueError(f"the header counts {counts}, the findings are {found}")
    correct = text.split("## Checked and found correct", 1)[1]
    if not re.search(r"^- \S", correct, re.M):
        raise ValueError("'Checked and found correct' lists nothing")
    return {**head, "counts": counts, "open": open_findings}


def test_the_nav_has_pages():
    assert len(PAGES) >= 10


@pytest.mark.parametrize("page", PAGES)
def test_every_page_has_a_whole_review_record(page):
    record = REVIEWS / page
    assert record.is_file(), f"{page} has no review record: write {record}"
    text = record.read_text()
    assert text.startswith(f"# Review: docs/{page}"), "the record names another page"
    parse_record(text)


def test_a_broken_record_is_refused():
    good = (
        "# Review: docs/x.md\n\n- reviewer: r\n- date: 2026-11-25\n"
        "- commit: abcdef1\n- statements checked: 12\n"
        "- findings: false 1, misleading 0, imprecise 0\n\n## Findings\n\n"
        '### 1. false: docs/x.md:3: "a"\n\nCorrect: b\n\nProof:\n\n    cmd\n\n'
        "Resolution: fixed in x, guarded by tests/t.py\n\n"
        "## Checked and found correct\n\n- the rest\n"
    )
    assert parse_record(good)["counts"]["false"] == 1
    for broken, why in (
        (good.replace("false 1", "false 2"), "header counts"),
        (good.replace("Proof:", "Evidence:"), "no proof"),
        (good.replace("Resolution: fixed", "Fixed"), "no resolution"),
        (good.replace("- the rest\n", ""), "lists nothing"),
        (good.replace("2026-11-25", "yesterday"), "date"),
        (good.replace("- statements checked: 12\n", ""), "statements checked"),
    ):
        with pytest.raises(ValueError, match=why):
            parse_record(broken)
