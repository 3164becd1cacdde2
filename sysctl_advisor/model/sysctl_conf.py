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

from sysctl_advisor.model.text_escape import quoted
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
    code: str = "syntax"  # or byte-order-mark, shell-command


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

# A shell command pasted into a sysctl file: `sysctl -w key=value`, `/sbin/sysctl -p`,
# `sudo sysctl key=value`, `echo 1 > /proc/sys/net/ipv4/ip_forward`. No key has a space in it,
# so a line whose first word is one of these is never a setting.
_SUDO = r"(?:sudo[ \t]+)?"
_SYSCTL_COMMAND = re.compile(_SUDO + r"(?:\S*/)?sysctl(?:[ \t]|$)")
# `sysctl [-w] key=value` with one setting, its value perhaps quoted as a shell quotes it
_SYSCTL_SETTING = re.compile(
    _SUDO + r"(?:\S*/)?sysctl(?:[ \t]+-[a-zA-Z]+)*[ \t]+([A-Za-z0-9_][^ \t=]*)="
    r"(?:\"([^\"]*)\"|'([^']*)'|([^ \t\"']*))"
)
_ECHO_TO_PROC = re.compile(_SUDO + r"(?:echo|printf)[ \t].*/proc/sys/")
_ECHO_SETTING = re.compile(
    _SUDO + r"echo(?:[ \t]+-n)?[ \t]+(?:\"([^\"]*)\"|'([^']*)'|([^ \t\"'>]+))"
    r"[ \t]*>>?[ \t]*/proc/sys/([A-Za-z0-9_][^ \t]*)"
)
_SHELL = re.compile(r"[<>|;&$`\\]")  # a value holding these is not one to write as it is


def key_of_path(path: str) -> str:
    """The key a path under /proc/sys names, as sysctl(8) writes it: every `/` a separator and
    a `.` in a name written `/` (net/ipv4/conf/eth0.100/rp_filter ->
    net.ipv4.conf.eth0/100.rp_filter)."""
    return path.translate(_PATH_TO_KEY)


_PATH_TO_KEY = str.maketrans("./", "/.")


def _instead(key: str, value: str) -> str:
    """What to write instead of a command that sets one key (as sysctl(8) names it), when it
    is plain."""
    value = value.strip()
    if not value or _SHELL.search(value) or _SHELL.search(key):
        return "write the setting as `key = value` instead"
    return f"write `{quoted(key)} = {quoted(value)}` instead"


def shell_command(line: str) -> str | None:
    """Why a stripped, non-comment line is a pasted shell command, with what to write
    instead (`sysctl -p` and systemd-sysctl read it so: measured with procps 4.0.2 and
    systemd 252), or None when it is not one."""
    if _SYSCTL_COMMAND.match(line):
        if "=" in line:
            found = _SYSCTL_SETTING.fullmatch(line)
            instead = (
                _instead(
                    normalise_key(found[1]), next(v for v in found.groups()[1:] if v is not None)
                )
                if found
                else "write each setting as `key = value` on its own line instead"
            )
            key = line.partition("=")[0].strip(C_SPACE)
            return (
                f"a pasted shell command: sysctl -p reads `{quoted(key)}` as the key, which does "
                "not exist (`cannot stat`, exit 1), and systemd-sysctl cannot write it either: "
                f"the setting is never made; {instead}"
            )
        return (
            "a pasted shell command: sysctl -p reports invalid syntax and skips it, "
            "systemd-sysctl ignores it and exits 1; a sysctl file holds only "
            "`key = value` lines: delete it"
        )
    if _ECHO_TO_PROC.match(line):
        found = _ECHO_SETTING.fullmatch(line)
        instead = (
            _instead(key_of_path(found[4]), next(v for v in found.groups()[:3] if v is not None))
            if found
            else "write the setting as `key = value` instead"
        )
        return (
            "a pasted shell command: sysctl -p reports invalid syntax and skips it, "
            f"systemd-sysctl ignores it and exits 1; the setting is never made: {instead}"
        )
    return None


def _kept(comment: str) -> str:
    """A comment block's end, at most COMMENT_CHARS long, from a whole word on: a number cut
    in two ("1024 GiB" kept as "4 GiB") would name another size."""
    comment = comment.strip()
    if len(comment) <= COMMENT_CHARS:
        return comment
    return comment[-COMMENT_CHARS:].partition(" ")[2]


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
            comment = "" if not line else _kept(comment + " " + text)
            continue
        above, comment = comment, ""
        if line[0] in "/sep":  # the first letter of every shell_command
            command = shell_command(line)
            if command is not None:
                bad.append(BadLine(number, raw, command, "shell-command"))
                continue
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
