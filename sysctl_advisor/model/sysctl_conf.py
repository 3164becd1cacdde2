"""Read sysctl.conf text as procps and systemd-sysctl do.

Comments are lines whose first non-blank character is `#` or `;`; there are no inline
comments (a `#` after the value is part of the value). Keys may use `/` as separator; a
leading `-` means "ignore failure". A `-pattern` line without `=` excludes keys from globs.
Spaces and tabs inside vector values are normalised to one space; lines end at \\n only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from sysctl_advisor.model.vocabulary import CONF_KEY_TOKEN


class Assignment(NamedTuple):
    """One `key = value` line; immutable (a tuple: a long file makes one per line)."""

    key: str
    value: str
    line: int
    ignore_failure: bool = False
    # a template's line whose value Jinja makes (`= {{ somaxconn }}`): its key is judged, its
    # value is not (sources.sysctl_templates)
    templated: bool = False
    # the comment lines right above the line (no blank line between), their text joined, at
    # most COMMENT_CHARS: what the line says of itself ("# 256MB"), for check rules to read
    comment: str = ""

    @property
    def is_glob(self) -> bool:
        key = self.key
        return "*" in key or "?" in key or "[" in key


@dataclass(frozen=True)
class Exclusion:
    """`-net.ipv4.conf.all.rp_filter` on its own: keep this key out of glob assignments."""

    key: str
    line: int


@dataclass(frozen=True)
class BadLine:
    line: int
    text: str
    reason: str
    code: str = "syntax"  # or byte-order-mark


BYTE_ORDER_MARK = "\ufeff"


def is_sysctl_key(key: str) -> bool:
    """Shaped like a sysctl key (`net.ipv4.tcp_mem`, `net/core/somaxconn`). Lines that are not
    (a `url = ...` of some other file) never have their values quoted in findings."""
    return CONF_KEY_TOKEN.fullmatch(key) is not None


def normalise_key(token: str) -> str:
    """Dotted form. If the first separator is '/', every '/' is a separator (net/ipv4/tcp_mem);
    if it is '.', a later '/' is a literal dot inside a name (eth0/100 is interface eth0.100)
    and is kept as written."""
    first_slash = token.find("/")
    if first_slash == -1:  # the common case: nothing to change
        return token
    first_dot = token.find(".")
    if first_dot == -1 or first_slash < first_dot:
        return token.replace("/", ".")
    return token


C_SPACE = " \t\n\v\f\r"  # isspace() in C: what procps trims from a key and a value
# A comment line whose text starts with this is one the advisor reads (a suppression comment).
ADVISOR_MARK = "sysctl-advisor:"


def advisor_comment(raw: str) -> str | None:
    """A line's text when it is a comment the advisor reads (first non-blank character `#` or
    `;`, which procps and systemd-sysctl skip, then `sysctl-advisor:`), else None."""
    if ADVISOR_MARK not in raw:
        return None
    line = raw.strip(C_SPACE)
    if line[:1] in ("#", ";") and line[1:].lstrip(" \t").startswith(ADVISOR_MARK):
        return line
    return None


def unmarked(text: str) -> str:
    """Comment lines the advisor writes with text it quotes (a finding naming a process, a
    log line), where a line wrapped at a word would start with `sysctl-advisor:` and so be
    read back as a suppression comment: the mark's colon escaped as one_line escapes
    (`sysctl-advisor\\x3a`), so only the lines the advisor means as suppressions are read."""
    if ADVISOR_MARK not in text:
        return text
    return "\n".join(
        line.replace(ADVISOR_MARK, ADVISOR_MARK[:-1] + "\\x3a", 1)
        if advisor_comment(line) is not None
        else line
        for line in text.split("\n")
    )


_FIELD_SEPARATOR = re.compile(r"[ \t]+")
# What of the comment block above a line is kept with it: its last lines, at most this long.
COMMENT_CHARS = 200


def parse_conf_lines(text: str) -> tuple[list[Assignment], list[Exclusion], list[BadLine]]:
    assignments: list[Assignment] = []
    exclusions: list[Exclusion] = []
    bad: list[BadLine] = []
    comment = ""  # the comment block right above the line being read
    # Lines end at \n only, as procps and systemd-sysctl read them (str.splitlines would also
    # break at \v, \f, \x1c-\x1e, \x85 and U+2028, and number every later line wrongly).
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.strip(C_SPACE)
        if line.startswith(BYTE_ORDER_MARK):
            # Neither procps nor systemd-sysctl skips it: it becomes part of the key (which
            # then does not exist) or turns a comment into a line that is not an assignment.
            what = line[1:].strip(C_SPACE)
            reason = (
                "a UTF-8 byte-order mark before the key: procps and systemd-sysctl read it as "
                "part of the key, which does not exist, so the setting is lost at boot"
                if "=" in what and what[:1] not in "#;"
                else "a UTF-8 byte-order mark starts the line: procps reports invalid syntax "
                "and systemd-sysctl fails"
            )
            bad.append(BadLine(number, raw, reason, "byte-order-mark"))
            continue
        if not line or line[0] in "#;":
            # a blank line ends a comment block; a comment line adds to it (its end is kept)
            text = line[1:].strip(C_SPACE) if line else ""
            comment = "" if not line else (comment + " " + text).strip()[-COMMENT_CHARS:]
            continue
        above, comment = comment, ""
        key, sep, value = line.partition("=")
        key = key.strip(C_SPACE)
        ignore = key.startswith("-")
        if ignore:
            key = key[1:].strip(C_SPACE)
        if not sep:
            if ignore and key and " " not in key:
                exclusions.append(Exclusion(normalise_key(key), number))
            else:
                bad.append(BadLine(number, raw, "no '=' on the line"))
            continue
        if not key:
            bad.append(BadLine(number, raw, "empty key"))
            continue
        # Fields are separated by spaces and tabs only, as the kernel separates them; any
        # other character stays in the value for the checks to see.
        value = value.strip(C_SPACE)
        if "\t" in value or "  " in value:
            value = " ".join(_FIELD_SEPARATOR.split(value))
        assignments.append(Assignment(normalise_key(key), value, number, ignore, comment=above))
    return assignments, exclusions, bad
