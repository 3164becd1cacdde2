"""The words every contract is written in, each defined once: a sysctl key's name (and a glob
of names), and one line of text. Facts files, knowledge files and configurations validate
with these types; `tests/model/test_vocabulary.py` fails on a second definition elsewhere.

* `SysctlKey`: a key as the kernel names it in dotted form (`net.ipv4.tcp_mem`): two names or
  more joined by dots; a `/` stands for a dot inside one name (`net.ipv4.conf.eth0/100.rp_filter`
  for interface eth0.100), as sysctl(8) writes it. At most MAX_KEY characters.
* `SysctlKeyGlob`: the same, where a name may hold fnmatch's `*` (`net.ipv4.conf.*.rp_filter`).
* `CONF_KEY_TOKEN`: what a sysctl.conf line's key looks like before it is read as a name.
* `Timestamp`: an ISO 8601 date or time; `ProcessName`: a process's name (/proc/PID/comm).
* `OneLine`: printable text on one line: no line break, tab, escape (ESC), format or separator
  character (a bidi override), so nothing in it restyles, reorders or adds a line of what an
  operator reads. Its length is the field's: `Field(max_length=...)`, or
  `Constraints(max_length=...)` for a list's items (MAX_TEXT at the most); `After(not_blank)`
  where it must say something.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Annotated

from sysctl_advisor.model.model_base import After
from sysctl_advisor.model.text_escape import plain_line

MAX_KEY = 256  # characters of a key's name: /proc/sys paths are far shorter

_NAME = r"A-Za-z0-9_/:\-"  # the characters of one name of a key (`/`: a dot inside the name)
SYSCTL_KEY = re.compile(rf"[A-Za-z0-9_][{_NAME}]*(?:\.[{_NAME}]+)+")
SYSCTL_KEY_GLOB = re.compile(rf"[A-Za-z0-9_][{_NAME}*]*(?:\.[{_NAME}*]+)+")
# A line's key as a sysctl.conf file writes it, not yet a key's name: either separator, `-`
# (ignore a failed write) before it, a glob, `@` of an interface name.
CONF_KEY_TOKEN = re.compile(r"[A-Za-z0-9_-]+(?:[./][A-Za-z0-9_*:@-]+)+")


def sysctl_key(value: str) -> str:
    """`value` when it is a key's name; else ValueError."""
    return _key(value, SYSCTL_KEY)


def sysctl_key_glob(value: str) -> str:
    """`value` when it is a key's name, `*` allowed in its names; else ValueError."""
    return _key(value, SYSCTL_KEY_GLOB)


def _key(value: str, grammar: re.Pattern[str]) -> str:
    plain_line(value, "sysctl key", MAX_KEY)
    if grammar.fullmatch(value) is None:
        raise ValueError(f"not a sysctl key: {value[:80]!r}")
    return value


def not_blank(value: str) -> str:
    """`value` unless it is empty or only spaces (a title, a reference); else ValueError."""
    if not value.strip():
        raise ValueError("is empty")
    return value


SysctlKey = Annotated[str, After(sysctl_key)]
SysctlKeyGlob = Annotated[str, After(sysctl_key_glob)]
OneLine = Annotated[str, After(plain_line)]

# An ISO 8601 date or time as the facts write them, its parts grouped for model/timestamps.py:
# year, month, day, hour, minute, second, fraction, zone
TIMESTAMP = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})"
    r"(?:[T ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]{1,9}))?)?)?"
    r"(Z|[+-][0-9]{2}:?[0-9]{2})?"
)


def timestamp(value: str) -> str:
    """`value` when it is an ISO 8601 date or time; else ValueError."""
    plain_line(value, "timestamp (ISO 8601)")
    if TIMESTAMP.fullmatch(value) is None:
        raise ValueError(f"not a valid timestamp (ISO 8601): {value[:80]!r}")
    return value


def process_name(value: str) -> str:
    """`value` when it is a process's name as /proc/PID/comm gives it; else ValueError."""
    plain_line(value, "process name")
    if not 1 <= len(value) <= 15:  # /proc/PID/comm: TASK_COMM_LEN 16, with its NUL
        raise ValueError(f"a process name (/proc/PID/comm) has 1-15 characters: {value[:40]!r}")
    return value


Timestamp = Annotated[str, After(timestamp)]  # ISO 8601, as the facts write times
ProcessName = Annotated[str, After(process_name)]


NOT_INTERFACES = frozenset({"all", "default"})  # conf/ and neigh/ entries that are no link


def key_matches(pattern: str, key: str) -> bool:
    """A written key against a sysctl key: a part with `*` names interfaces (`*` any one,
    `cilium_*` those with that prefix), never `all` or `default`, which a writer that means
    them names."""
    if "*" not in pattern:
        return pattern == key
    parts, names = pattern.split("."), key.split(".")
    return len(parts) == len(names) and all(
        p == n or ("*" in p and n not in NOT_INTERFACES and fnmatch.fnmatchcase(n, p))
        for p, n in zip(parts, names, strict=True)
    )
