"""Directives, the phase of `check` that reads what a file itself accepts: its suppression
comments. A comment is parsed before its file is judged (the lines it addresses are always
listed, past the bound on one rule's findings); after judging, the findings it names on its
line (or in its file) are accepted, and a comment that is malformed, or accepts nothing a
rule in force reported, is itself a finding.

A suppression is a comment line (its first non-blank character `#` or `;`: procps and
systemd-sysctl skip it, the kernel never sees it):

    # sysctl-advisor: ignore[check.tw-recycle-enabled] kept until the 2027 migration
    # sysctl-advisor: ignore-file[check.glob, check.overridden] the vendor's file, as shipped

`ignore[...]` applies to the next assignment line, `ignore-file[...]` to the whole file. It
names exact ids only, so what it accepts stays visible in the file. The reason is required
(printable text, at most 200 characters). The comment is read with one bounded pattern whose
parts cannot overlap (linear in the line, which the reader caps).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sysctl_advisor.engine.check.findings import CheckFinding, Suppressed
from sysctl_advisor.engine.check.listing import Listing
from sysctl_advisor.model.near_names import did_you_mean

if TYPE_CHECKING:
    from sysctl_advisor.knowledge.check_rules import CheckRule
    from sysctl_advisor.model.current_config import CurrentConfig

# A check rule's id (knowledge.rules.RULE_ID, within the check family).
_ID = r"check(?:\.[a-z0-9]+(?:-[a-z0-9]+)*)+"
MAX_REASON = 200
# Compiled on first use (re's own cache): a file without comments never needs it.
_DIRECTIVE = (
    rf"[#;][ \t]*sysctl-advisor:[ \t]*(ignore|ignore-file)\[[ \t]*"
    rf"({_ID}(?:[ \t]*,[ \t]*{_ID}){{0,31}})[ \t]*\](?:[ \t]+(.*))?"
)
_ID_LIST = re.compile(r"[ \t]*,[ \t]*")


@dataclass
class Directive:
    """One well-formed suppression comment."""

    line: int  # the comment's own line
    whole_file: bool
    ids: tuple[str, ...]
    reason: str
    target: int | None = None  # ignore[...]: the assignment line it applies to
    used: set[str] = field(default_factory=set)

    @property
    def spelled(self) -> str:
        return f"{'ignore-file' if self.whole_file else 'ignore'}[{', '.join(self.ids)}]"


def parse_directive(line: int, text: str, known: Iterable[str]) -> Directive | str:
    """A suppression comment read strictly: the directive, or why it is not one."""
    matched = re.fullmatch(_DIRECTIVE, text)
    if matched is None:
        return (
            "not a suppression the advisor reads: write `# sysctl-advisor: ignore[check.ID] "
            "reason` (the next assignment line) or `ignore-file[check.ID] reason` (the file)"
        )
    kind, id_text, reason = matched.groups()
    ids = tuple(dict.fromkeys(_ID_LIST.split(id_text)))
    spelled = f"{kind}[{', '.join(ids)}]"
    reason = (reason or "").strip(" \t")
    if not reason:
        return f"{spelled} gives no reason: say after the ']' why the finding is accepted"
    if len(reason) > MAX_REASON:
        return f"{spelled}: the reason is longer than {MAX_REASON} characters"
    if not reason.isprintable():
        return f"{spelled}: the reason holds control or format characters"
    known = set(known)
    unknown = [rule_id for rule_id in ids if rule_id not in known]
    if unknown:
        hint = did_you_mean(unknown[0], sorted(known))
        return f"{spelled}: no check rule {', '.join(unknown)}{hint}"
    return Directive(line, kind == "ignore-file", ids, reason)


def with_targets(directives: list[Directive], assignment_lines: list[int]) -> list[Directive]:
    """Each ignore[...] pointed at the first assignment line after it (`assignment_lines` in
    file order)."""
    for directive in directives:
        if not directive.whole_file:
            at = bisect.bisect_right(assignment_lines, directive.line)
            directive.target = assignment_lines[at] if at < len(assignment_lines) else None
    return directives


@dataclass
class Comments:
    """The suppression comments of a configuration's files, parsed: each whole-file one by
    file and rule, each other by file, the line it addresses and rule; and what is wrong with
    the comments (`notes`)."""

    notes: Listing
    whole: dict[tuple[str, str], Directive] = field(default_factory=dict)
    by_line: dict[tuple[str, int, str], list[Directive]] = field(default_factory=dict)
    directives: list[tuple[str, Directive]] = field(default_factory=list)

    def addressed(self) -> frozenset[tuple[str, int]]:
        """The lines a comment addresses, by file."""
        return frozenset((display, line) for display, line, _ in self.by_line)


def read_comments(
    config: CurrentConfig, known: Iterable[str], malformed: CheckRule | None
) -> Comments:
    """The files' suppression comments, each pointed at the line it addresses; one that
    does not parse, gives no reason or names no rule (of the `known`) is a `malformed`
    finding in the notes."""
    known = list(known)
    lines = {display: [a.line for a in assignments] for display, assignments in config.documents}
    comments = Comments(Listing())
    for display, texts in config.advisor_comments:
        parsed: list[Directive] = []
        for number, text in texts:
            directive = parse_directive(number, text, known)
            if isinstance(directive, str):
                if malformed is not None:
                    comments.notes.add(
                        CheckFinding(
                            malformed.id, malformed.spec.severity, display, number, None, directive
                        )
                    )
                continue
            parsed.append(directive)
        for directive in with_targets(parsed, lines.get(display, [])):
            comments.directives.append((display, directive))
            for rule_id in directive.ids:
                if directive.whole_file:
                    comments.whole.setdefault((display, rule_id), directive)
                elif directive.target is not None:
                    key = (display, directive.target, rule_id)
                    comments.by_line.setdefault(key, []).append(directive)
    return comments


def accept_by_comments(
    comments: Comments, found: list[CheckFinding], in_force: set[str], unused: CheckRule | None
) -> tuple[list[CheckFinding], list[Suppressed]]:
    """The findings less those the comments accept (the second list), plus what is wrong
    with the comments: the notes, and each comment that accepts nothing a rule `in_force`
    reported (an `unused` finding)."""
    kept: list[CheckFinding] = []
    accepted: list[Suppressed] = []
    for finding in found:
        accepting = comments.by_line.get((finding.file, finding.line or 0, finding.id))
        if accepting is None:
            file_wide = comments.whole.get((finding.file, finding.id))
            accepting = [file_wide] if file_wide is not None else None
        if accepting is None:
            kept.append(finding)
            continue
        for directive in accepting:
            directive.used.add(finding.id)
        accepted.append(Suppressed(finding, accepting[0].reason))
    if unused is not None:
        for display, directive in comments.directives:
            message = _unused(directive, in_force)
            if message is not None:
                comments.notes.add(
                    CheckFinding(
                        unused.id, unused.spec.severity, display, directive.line, None, message
                    )
                )
    return kept + comments.notes.findings(), accepted


def _unused(directive: Directive, in_force: set[str]) -> str | None:
    """What is unused about a comment, None when it accepted what it names."""
    idle = [i for i in directive.ids if i not in directive.used and i in in_force]
    if directive.target is None and not directive.whole_file:
        return f"{directive.spelled}: no assignment line follows it"
    if not idle:
        return None
    where = "in this file" if directive.whole_file else f"on line {directive.target}"
    return f"{directive.spelled}: no {', '.join(idle)} finding {where} to accept; remove it"
