"""What a team tunes in `check`: which rules run (`--select`, `--ignore`), at what severity
(`--warn`, `--error`), and what a file itself accepts (suppression comments).

A rule is named by its id or by a prefix of it that ends at a `.` or `-` boundary, as ruff
reads rule codes: `check.glob` names check.glob, check.glob-unclosed and check.glob-unrelated;
`check.glob-` only the last two; `check` or `check.*` every rule. A suppression comment names
exact ids only, so what it accepts stays visible in the file.

A suppression is a comment line (its first non-blank character `#` or `;`: procps and
systemd-sysctl skip it, the kernel never sees it):

    # sysctl-advisor: ignore[check.tw-recycle-enabled] kept until the 2027 migration
    # sysctl-advisor: ignore-file[check.glob, check.overridden] the vendor's file, as shipped

`ignore[...]` applies to the next assignment line, `ignore-file[...]` to the whole file. The
reason is required (printable text, at most 200 characters). The comment is read with one
bounded pattern whose parts cannot overlap (linear in the line, which the reader caps).
"""

from __future__ import annotations

import bisect
import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from sysctl_advisor.model.errors import InputError

# A check rule's id (knowledge.rules.RULE_ID, within the check family).
_ID = r"check(?:\.[a-z0-9]+(?:-[a-z0-9]+)*)+"
# A selector: an id or a prefix of one (ending at a boundary, or with `*` after it).
_SELECTOR = re.compile(r"[a-z0-9]+(?:[.-][a-z0-9]+)*(?:[.-]\*?)?")
_MAX_SELECTOR = 100
MAX_REASON = 200
_DIRECTIVE = re.compile(
    rf"[#;][ \t]*sysctl-advisor:[ \t]*(ignore|ignore-file)\[[ \t]*"
    rf"({_ID}(?:[ \t]*,[ \t]*{_ID}){{0,31}})[ \t]*\](?:[ \t]+(.*))?"
)
_ID_LIST = re.compile(r"[ \t]*,[ \t]*")


# --- selection and severities ---------------------------------------------------------------


@dataclass(frozen=True)
class Given:
    """Where a list of selectors was given, for the error that names one of them: the
    option (`--select`), or a configuration file and its key."""

    field: str
    path: str | None = None


def _selectors(values: Iterable[str] | None, where: Given) -> list[str]:
    """Each value split at commas, blanks trimmed; every part a well-formed selector."""
    found = []
    for value in values or ():
        for part in value.split(","):
            part = part.strip()
            if not part:
                continue
            if len(part) > _MAX_SELECTOR or _SELECTOR.fullmatch(part) is None:
                shown = part[:_MAX_SELECTOR].encode("unicode_escape").decode("ascii")
                raise InputError(
                    f"{shown!r} is not a rule id or prefix", path=where.path, field=where.field
                )
            found.append(part)
    return found


def _matches(selector: str, rule_id: str) -> bool:
    if selector.endswith("*"):
        return rule_id.startswith(selector[:-1])
    if selector.endswith((".", "-")):
        return rule_id.startswith(selector)
    return rule_id == selector or (rule_id.startswith(selector) and rule_id[len(selector)] in ".-")


def nearest_name(word: str, names: list[str]) -> str | None:
    """The name among `names` closest to `word` (difflib's ratio, at least 0.6), or None."""
    found = difflib.get_close_matches(word, [str(n) for n in names], n=1)
    return found[0] if found else None


def _did_you_mean(word: str, names: list[str]) -> str:
    close = nearest_name(word, names)
    return f" (did you mean {close}?)" if close else ""


def _named(selector: str, ids: Iterable[str], where: Given) -> set[str]:
    ids = list(ids)
    named = {rule_id for rule_id in ids if _matches(selector, rule_id)}
    if not named:
        raise InputError(
            f"{selector!r} names no check rule{_did_you_mean(selector, ids)}",
            path=where.path,
            field=where.field,
        )
    return named


def named_rules(ids: Iterable[str], values: Iterable[str], where: Given) -> frozenset[str]:
    """The rules a list of selectors names (per-file-ignores' lists)."""
    ids = sorted(ids)
    return frozenset(r for s in _selectors(values, where) for r in _named(s, ids, where))


@dataclass(frozen=True)
class Tuning:
    """The rules that run, and the severity each changed one reports at."""

    selected: frozenset[str]
    severities: dict[str, str] = field(default_factory=dict)


def tuning(
    ids: Iterable[str],
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    warn: list[str] | None = None,
    error: list[str] | None = None,
    given: dict[str, Given] | None = None,
) -> Tuning:
    """--select (default: every rule) less --ignore, then --warn and --error; a selector that
    names no rule, or a rule both warned and errored, is bad input, named by where it was
    `given` (by default the option: --select, ...)."""
    where = {name: Given(f"--{name}") for name in ("select", "ignore", "warn", "error")}
    where.update(given or {})
    ids = sorted(ids)
    selected: set[str] = set()
    chosen = _selectors(select, where["select"])
    for selector in chosen:
        selected |= _named(selector, ids, where["select"])
    if not chosen:
        selected = set(ids)
    for selector in _selectors(ignore, where["ignore"]):
        selected -= _named(selector, ids, where["ignore"])
    severities: dict[str, str] = {}
    for severity, values in (("warning", warn), ("error", error)):
        place = where["warn" if severity == "warning" else "error"]
        for selector in _selectors(values, place):
            for rule_id in _named(selector, ids, place):
                if severities.get(rule_id, severity) != severity:
                    message = f"{rule_id} is given both warn and error"
                    raise InputError(message, path=place.path, field=place.field)
                severities[rule_id] = severity
    return Tuning(frozenset(selected), severities)


# --- suppression comments -------------------------------------------------------------------


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
    matched = _DIRECTIVE.fullmatch(text)
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
        hint = _did_you_mean(unknown[0], sorted(known))
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
