"""Host patterns of a profile map, read as an Ansible user writes host names.

* `[01:03]`, `[1:10:2]`, `[a:c]` are Ansible's inventory ranges, with the meaning ansible-core's
  `expand_hostname_range` gives them: `web[01:03]` is web01, web02 and web03 (begin and end of
  equal width when the begin has a leading zero, zero-padded to that width), `[1:10]` is 1 to 10
  without padding, an optional step, letters taken from `a..zA..Z`. Several ranges may follow
  each other (`rack[1:2]-node[a:b]`).
* `*` is any run of characters and `?` one character, as in Ansible's host patterns.
* A `[` that is not such a range (a shell character class like `[abc]`) is refused, as are
  Ansible's pattern operators `~regex`, `!`, `&` and `,`: the map lists patterns, first match
  wins, so an exclusion is an earlier entry.

Matching never expands a range and never backtracks: the set of positions reachable in the name
is carried through the pattern's parts, so the work is at most parts x len(name) x (digits of
the widest range bound), whatever the pattern and the name (selectors are hostile input):
about 10 ms for the worst 1,024-character pattern against a 255-character name.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

MAX_BOUND_DIGITS = 18  # a range bound has at most this many digits
MAX_PATTERN = 1024  # characters; inventory names are at most 255
LETTERS = string.ascii_letters  # Ansible's order for letter ranges: a..z then A..Z


class PatternError(ValueError):
    """A host pattern the profile map does not accept; the message says why."""


@dataclass(frozen=True)
class _Numbers:
    first: int
    last: int
    step: int
    width: int  # 0: no padding (Ansible's str); else every number zero-filled to this width

    def lengths(self) -> range:
        if self.width:
            return range(self.width, self.width + 1)
        return range(1, len(str(self.last)) + 1)

    def accepts(self, digits: str) -> bool:
        if not digits.isascii() or not digits.isdigit():
            return False
        if self.width:
            if len(digits) != self.width:
                return False
        elif len(digits) > 1 and digits[0] == "0":
            return False  # str(n) never has a leading zero
        value = int(digits)
        return self.first <= value <= self.last and (value - self.first) % self.step == 0


@dataclass(frozen=True)
class _Letters:
    allowed: frozenset[str]


_Part = str | _Numbers | _Letters  # a literal, "*", "?" (as one-character markers) or a range
_STAR, _ANY = "\x00*", "\x00?"  # markers that no literal (which never holds NUL) can equal


def _range(text: str, pattern: str) -> _Numbers | _Letters:
    bounds = text.split(":")
    if len(bounds) not in (2, 3):
        raise PatternError(f"{pattern!r}: a range is [begin:end] or [begin:end:step], not [{text}]")
    first, last = bounds[0] or "0", bounds[1]
    step_text = bounds[2] if len(bounds) == 3 else "1"
    if not last:
        raise PatternError(f"{pattern!r}: the range [{text}] needs an end")
    if not (step_text.isascii() and step_text.isdigit()) or int(step_text) < 1:
        raise PatternError(f"{pattern!r}: the step of [{text}] must be a whole number from 1")
    step = int(step_text)
    if len(first) == 1 and len(last) == 1 and first in LETTERS and last in LETTERS:
        begin, end = LETTERS.index(first), LETTERS.index(last)
        if begin > end:
            raise PatternError(f"{pattern!r}: the range [{text}] begins after it ends")
        return _Letters(frozenset(LETTERS[begin : end + 1 : step]))
    for bound in (first, last):
        if not (bound.isascii() and bound.isdigit()) or len(bound) > MAX_BOUND_DIGITS:
            raise PatternError(
                f"{pattern!r}: [{text}] is neither a number range (at most "
                f"{MAX_BOUND_DIGITS} digits) nor a range of single letters"
            )
    width = 0
    if first[0] == "0" and len(first) > 1:
        width = len(first)
        if len(last) != width:
            raise PatternError(
                f"{pattern!r}: in [{text}] a zero-padded begin needs an end of the same width"
            )
    if int(first) > int(last):
        raise PatternError(f"{pattern!r}: the range [{text}] begins after it ends")
    return _Numbers(int(first), int(last), step, width)


def compile_pattern(pattern: str) -> tuple[_Part, ...]:
    """The parts of a pattern, checked; PatternError says what is wrong."""
    if not pattern:
        raise PatternError("an empty host pattern matches nothing")
    if len(pattern) > MAX_PATTERN:
        raise PatternError(f"a host pattern of {len(pattern)} characters (at most {MAX_PATTERN})")
    if pattern[0] in "~!&" or "," in pattern:
        raise PatternError(
            f"{pattern!r}: Ansible's pattern operators (~regex, !, &, commas) are not used in a "
            "profile map; list the patterns, and put exceptions in an earlier entry"
        )
    parts: list[_Part] = []
    literal: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char in "*?[" and literal:
            parts.append("".join(literal))
            literal = []
        if char == "*":
            if not parts or parts[-1] != _STAR:
                parts.append(_STAR)
        elif char == "?":
            parts.append(_ANY)
        elif char == "[":
            close = pattern.find("]", i + 1)
            inner = pattern[i + 1 : close] if close >= 0 else ""
            if close < 0 or ":" not in inner or "[" in inner:
                raise PatternError(
                    f"{pattern!r}: '[' starts an Ansible range such as [01:03] or [a:c]; "
                    "character classes are not host patterns"
                )
            parts.append(_range(inner, pattern))
            i = close
        elif char == "]" or char == "\x00":
            raise PatternError(f"{pattern!r}: {char!r} outside a range")
        else:
            literal.append(char)
        i += 1
    if literal:
        parts.append("".join(literal))
    return tuple(parts)


def matches(parts: tuple[_Part, ...], name: str) -> bool:
    """Whether `name` is one of the names the compiled pattern stands for."""
    size = len(name)
    positions = {0}
    for part in parts:
        if not positions:
            return False
        if part == _STAR:
            positions = set(range(min(positions), size + 1))
        elif part == _ANY:
            positions = {p + 1 for p in positions if p < size}
        elif isinstance(part, str):
            positions = {p + len(part) for p in positions if name.startswith(part, p)}
        elif isinstance(part, _Letters):
            positions = {p + 1 for p in positions if p < size and name[p] in part.allowed}
        else:
            positions = {
                p + n
                for p in positions
                for n in part.lengths()
                if p + n <= size and part.accepts(name[p : p + n])
            }
    return size in positions
