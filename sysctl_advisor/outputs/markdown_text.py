"""Markdown for GitHub pull-request comments: text that stays text, and a document that fits.

Every value that reaches a Markdown output passes through `md_text` (prose: table cells,
headings, list items) or `md_code` (a code span). Both make the value one line (`one_line`),
so a newline cannot end a table row, and escape what GitHub's renderer (cmark-gfm) would read
as syntax: `|` would split a table row, `<!--` would open an HTML comment that hides the rest
of the comment, `*`, `_`, `~`, backticks, `[` would become emphasis, code or links, a leading
`-`, `+` or `1.` a list, a trailing `#` the end of a heading. The rendered text (what a reader
sees) is the value itself, spaces collapsed; tests/outputs/test_markdown_text.py checks this
with cmark-gfm.

GitHub refuses a comment longer than 65,536 characters. `fit_document` renders a document
with fewer rows per section until it fits in `BUDGET`, and `clip` caps a single prose value.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sysctl_advisor.model.text_escape import one_line

COMMENT_LIMIT = 65_536
"""GitHub's limit for an issue or pull-request comment body, in characters."""

BUDGET = 60_000
"""What a rendered document may use: the rest is left for what a CI job adds around it
(a heading, a marker to find its previous comment). Counted in UTF-16 code units, as the
browser counts, which is never fewer than characters."""

PROSE_LIMIT = 2_000
"""Characters of one prose value (a finding's message, a rationale) shown in Markdown."""

FOLD_ROWS = 20
"""A section with more rows than this is folded into <details>."""

# Backslash escapes for the ASCII punctuation that can start inline syntax (code, emphasis,
# strikethrough, links, images), end a heading (#), split a table row (|) or escape the next
# character (\); entities for the characters of HTML and of entities themselves, so that not
# even the text `<!--` is left in the source.
_INLINE = str.maketrans(
    {**{c: "\\" + c for c in "\\`*~[]|#"}, "<": "&lt;", ">": "&gt;", "&": "&amp;"}
)
# `_` is inert between two letters or digits (it can neither open nor close emphasis there), so
# tcp_mem stays readable; every other `_` is escaped.
_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
# GitHub links URLs in text (cmark-gfm's autolink extension) reading the source as it stands,
# so a link would swallow the escapes after it; with the `:` of `://` and the `.` of `www.`
# escaped no link is made. (E-mail addresses are linked after parsing, whatever the escapes:
# the link's text is the address as written, which is harmless.)
_AUTOLINK = re.compile(r":(?=//)|(?<=www)\.", re.IGNORECASE)
# At the start of a line these open a block: a bullet list item, a thematic break (---), a
# setext underline (===), an ordered list item (1. or 1)).
_LEADING = re.compile(r"^(?:[-+=]|\d{1,9}(?=[.)](?: |$)))")


def _flat(value: Any) -> str:
    return " ".join(one_line(value).split())


def clip(text: str, limit: int = PROSE_LIMIT) -> str:
    """At most `limit` characters of prose, saying how many more there were."""
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0] or text[:limit]
    return f"{cut} … ({len(text) - len(cut):,} more characters)"


def md_text(value: Any) -> str:
    """Prose for a table cell, heading or list item: rendered, it reads as the value itself
    (one line, spaces collapsed), and no character of it is Markdown or HTML syntax."""
    text = _UNDERSCORE.sub(r"\\_", _flat(value).translate(_INLINE))
    text = _AUTOLINK.sub(lambda m: "\\" + m.group(), text)
    match = _LEADING.match(text)
    if match:  # "1." -> "1\.", "-" -> "\-": a line that starts with the value stays a line
        end = match.end()
        text = text[:end] + "\\" + text[end:] if text[0].isdigit() else "\\" + text
    return text


def md_text_clipped(value: Any) -> str:
    return md_text(clip(_flat(value)))


def md_code(value: Any, *, table: bool = False) -> str:
    """The value as code: a code span, or, when the value holds a backtick (which would end
    the span), a <code> element around escaped text. Inside a table (`table=True`) the span's
    pipes are escaped: GitHub splits rows on `|` before it reads code spans, and turns `\\|`
    back into `|` there."""
    text = _flat(value)
    if not text:
        return "` `"  # an empty value: a code span of one space (`` is not a code span)
    if "`" in text:
        return f"<code>{md_text(text)}</code>"
    if table:
        text = text.replace("|", "\\|")
    return f"`{text}`"


def md_code_cell(value: Any) -> str:
    return md_code(value, table=True)


def md_length(text: str) -> int:
    """Length as GitHub's form counts it (UTF-16 code units; astral characters count two)."""
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


Limits = Mapping[str, int | None]


def fit_document(
    render: Callable[[Limits], str],
    tiers: Sequence[Mapping[str, int]],
    budget: int = BUDGET,
) -> str:
    """Render with every row, or, when that is over `budget`, with as many rows per section as
    fit. `tiers` maps section names to their row counts, least important tier first: a tier is
    cut (the same number of rows for each of its sections, found by bisection) only when the
    tiers before it are already down to no rows. `render(limits)` shows at most
    `limits[name]` rows of a section (None: all) and says how many it left out."""
    limits: dict[str, int | None] = {}
    text = render(limits)
    for tier in tiers:
        if md_length(text) <= budget or not tier:
            break
        low, high = 0, max(tier.values())  # `low` rows fit (or nothing does); `high` does not
        while low < high:
            mid = (low + high + 1) // 2
            if md_length(render({**limits, **dict.fromkeys(tier, mid)})) <= budget:
                low = mid
            else:
                high = mid - 1
        limits.update(dict.fromkeys(tier, low))
        text = render(limits)
    return text
