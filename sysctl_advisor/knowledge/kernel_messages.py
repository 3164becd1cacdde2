"""Kernel message families: which log lines name a problem the advisor knows (data in
rules/catalog/kernel-messages.yaml).

A family is matched by case-insensitive plain substrings, never regular expressions: rule
directories are hostile input, and a substring test is linear in the line however the pattern
is written. The log reader (`sysctl_advisor.sources.kernel_log`) takes `matchers(families)`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from sysctl_advisor.cache.specs import SpecCache
from sysctl_advisor.model.documents import (
    DEFAULT_MAX_INPUT,
    KNOWLEDGE_FILE,
    line_of,
    parse_document,
    read_text,
)
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.model_base import After, Constraints, Field, SpecModel, model, validate
from sysctl_advisor.model.text_escape import refuse_control_characters
from sysctl_advisor.model.vocabulary import OneLine, SysctlKey, not_blank

# The same rule as a KernelEvent's `family` in model/host_facts.py.
FAMILY_ID = r"^[a-z0-9][a-z0-9.-]{0,63}$"
MAX_FAMILIES = 256
MAX_MATCHES = 16  # substrings per family
MIN_MATCH = 4  # shorter substrings would match unrelated lines
MAX_MATCH = 200  # kernel log lines are matched in their first 4096 characters
MAX_LINE_TEXT = 200
MAX_PARAGRAPH = 4096


def _substring(value: str) -> str:
    if value != value.strip():
        raise ValueError(f"has leading or trailing spaces: {value!r}")
    if not MIN_MATCH <= len(value) <= MAX_MATCH:
        raise ValueError(f"must be {MIN_MATCH} to {MAX_MATCH} characters long, got {len(value)}")
    return value


def _paragraph(value: str) -> str:
    refuse_control_characters(value)  # a newline or tab of folded YAML text is fine
    if not value.strip():
        raise ValueError("is empty")
    if len(value) > MAX_PARAGRAPH:
        raise ValueError(f"is longer than {MAX_PARAGRAPH} characters")
    return value


# A title, a reference: one line, not blank, at most MAX_LINE_TEXT characters.
Line = Annotated[OneLine, Constraints(max_length=MAX_LINE_TEXT), After(not_blank)]
Substring = Annotated[OneLine, After(not_blank), After(_substring)]
Paragraph = Annotated[str, After(_paragraph)]


@model
class Family(SpecModel):
    """One kind of message (the kernel's, or an application's), in every wording printed."""

    id: str = Field(pattern=FAMILY_ID, description="e.g. tcp.out-of-socket-memory")
    title: Line
    match: list[Substring] = Field(
        min_length=1,
        max_length=MAX_MATCHES,
        description="case-insensitive plain substrings (not patterns); a line containing any "
        "of them belongs to the family",
    )
    means: Paragraph = Field(description="what the message says about the host")
    references: list[Line] = Field(
        min_length=1, max_length=16, description="the source file and function that prints it"
    )


@model
class MessageFamily(Family):
    """A kernel message family."""

    kernels: Paragraph = Field(description="which kernel versions print which wording")
    keys: list[SysctlKey] = Field(
        default_factory=list,
        max_length=8,
        description="the sysctls whose values the message argues against: lines logged before "
        "the value in force of every one of them was set are not evidence against it",
    )


@model
class MessageCatalog(SpecModel):
    families: list[MessageFamily] = Field(min_length=1, max_length=MAX_FAMILIES)


def load_message_families(path: Path, specs: SpecCache | None = None) -> list[MessageFamily]:
    """The families of a kernel-messages file, validated; errors are one-line InputErrors
    naming the file, the line and the field. With `specs`, the validated file is cached like
    the other knowledge files."""
    return load_families(path, MessageCatalog, "a kernel message catalog", specs)


def load_families(path: Path, spec: type[Any], what: str, specs: SpecCache | None) -> list[Any]:
    """The `families` of a message catalog file (`spec`: its model, whose families have an
    `id`), validated, ids unique."""
    if specs is not None:
        catalog = specs.load(path, spec, what)
        text: str | None = None
    else:
        text = read_text(path, limit=DEFAULT_MAX_INPUT)
        data = parse_document(text, path, KNOWLEDGE_FILE)
        if not isinstance(data, dict):
            raise InputError(f"{what} must be a mapping with `families`", path=path)
        catalog = validate(spec, data, path, text)
    seen: set[str] = set()
    for index, family in enumerate(catalog.families):
        if family.id in seen:
            where: list[int | str] = ["families", index, "id"]
            if text is None:
                text = read_text(path, limit=DEFAULT_MAX_INPUT)
            raise InputError(
                f"duplicate message family id {family.id!r}",
                path=path,
                line=line_of(text, where),
                field=f"families.{index}.id",
            )
        seen.add(family.id)
    return list(catalog.families)


def matchers(families: list[Any]) -> dict[str, tuple[str, ...]]:
    """Family id -> its substrings in lower case (duplicates dropped), in file order."""
    return {f.id: tuple(dict.fromkeys(m.lower() for m in f.match)) for f in families}


def logged(
    families: dict[str, tuple[str, ...]],
    messages: list[str],
    events: list[dict[str, Any]],
) -> dict[str, dict[str, Any]]:
    """Each message family the facts say was logged -> what is known of it: `family` (its id),
    `count` (lines), `first_seen` and `last_seen` (None where unknown), `example` (a line) and
    `lines` (the distinct lines known: the facts' kernel messages of the family, then the log
    reader's example). Both forms of the evidence count: the log reader's `kernel_events` and
    the facts' `kernel_messages` (the contract field), matched as the log reader matches them
    (`families`: `matchers()`). The two may tell of the same lines, so the count is the larger
    of theirs, never their sum. Plain data, for rules (`observed.logged`); families in the
    catalog's order, then any other the events name."""
    counts: dict[str, int] = {}
    lines: dict[str, dict[str, None]] = {}
    for line in messages:
        lowered = line.lower()
        for family, substrings in families.items():
            if any(s in lowered for s in substrings):
                counts[family] = counts.get(family, 0) + 1
                lines.setdefault(family, {})[line] = None
    dated: dict[str, dict[str, Any]] = {}
    for event in events:
        family = event["family"]
        counts[family] = max(counts.get(family, 0), event["count"])
        lines.setdefault(family, {})[event["example"]] = None
        dated[family] = event
    order = {family: index for index, family in enumerate(families)}
    found: dict[str, dict[str, Any]] = {}
    for family in sorted(counts, key=lambda f: order.get(f, len(order))):
        event = dated.get(family, {})
        known = list(lines[family])
        found[family] = {
            "family": family,
            "count": counts[family],
            "first_seen": event.get("first_seen"),
            "last_seen": event.get("last_seen"),
            # the log reader's example is the newest line; else the last message of the family
            "example": event.get("example", known[-1]),
            "lines": known,
        }
    return found
