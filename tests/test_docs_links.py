"""Every relative link in README.md and the pages under docs/ leads somewhere: the file exists,
and an `#anchor` names a heading of it (as GitHub makes anchors from headings)."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tests.conftest import ROOT

PAGES = sorted(
    [ROOT / "README.md", ROOT / "benchmarks" / "README.md", *(ROOT / "docs").rglob("*.md")]
)
# [text](target) and [text](target "title"), not images' sources; code is left out first
_LINK = re.compile(r"(?<!\\)\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_FENCE = re.compile(r"^(`{3,}|~{3,}).*?^\1[`~]*$", re.MULTILINE | re.DOTALL)
_SPAN = re.compile(r"(`+).+?\1", re.DOTALL)
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)


def _prose(text: str) -> str:
    """The page without its code blocks and code spans (a link there is not a link)."""
    text = _FENCE.sub("", text)
    text = "\n".join(
        "" if line.startswith(("    ", "\t")) and not line.lstrip().startswith(("*", "|")) else line
        for line in text.split("\n")
    )
    return _SPAN.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: the text without Markdown, lower case, punctuation other
    than `-` and `_` dropped, each space a `-`."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").lower()
    text = text.replace("\\", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for heading in _HEADING.findall(text):
        base = slug(heading)
        name, n = base, 0
        while name in found:  # GitHub numbers repeated headings: x, x-1, x-2
            n += 1
            name = f"{base}-{n}"
        found.add(name)
    return found


def links(path: Path) -> list[str]:
    return _LINK.findall(_prose(path.read_text(encoding="utf-8")))


def broken_links(page: Path) -> list[str]:
    """Each relative link of the page that leads nowhere, with the reason."""
    broken = []
    for target in links(page):
        parts = urlsplit(target)
        if parts.scheme or parts.netloc:
            continue  # absolute: not checked here
        path = (page.parent / unquote(parts.path)).resolve() if parts.path else page
        if not path.exists():
            broken.append(f"{target}: no such file")
        elif parts.fragment and (path.suffix != ".md" or path.is_dir()):
            broken.append(f"{target}: an anchor into a file that is not Markdown")
        elif parts.fragment and unquote(parts.fragment) not in anchors(path):
            broken.append(f"{target}: no heading with that anchor in {path.name}")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_relative_link_resolves(page: Path) -> None:
    broken = broken_links(page)
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_link_checker_finds_broken_links(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other page\n\n## Writing a file: `-o`\n\n## Other page\n")
    page.write_text(
        "# Page\n\n[ok](other.md#writing-a-file--o) [ok](other.md#other-page-1) "
        "[ok](#page) [web](https://example.com/x.md) `[code](missing.md)`\n\n"
        "    [indented code](missing.md)\n\n"
        "[gone](missing.md) [bad](other.md#nowhere) [self](#nothing)\n"
    )
    found = links(page)
    assert found == [
        "other.md#writing-a-file--o",
        "other.md#other-page-1",
        "#page",
        "https://example.com/x.md",
        "missing.md",
        "other.md#nowhere",
        "#nothing",
    ]
    assert {"other-page", "writing-a-file--o", "other-page-1"} == anchors(tmp_path / "other.md")
    assert [reason.split(":")[0] for reason in broken_links(page)] == [
        "missing.md",
        "other.md#nowhere",
        "#nothing",
    ]
