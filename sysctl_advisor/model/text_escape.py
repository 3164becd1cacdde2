"""Text that cannot break a line: the one escape every output and every quoted message uses."""

from __future__ import annotations

from typing import Any


def one_line(value: Any) -> str:
    """Any value as text that cannot break a line or hide in one: control, format and line or
    paragraph separator characters (\\n, \\r, \\v, \\x85, U+2028, bidi overrides …) become
    visible escapes. Applied to every `{{ }}` of every template (Jinja's finalize), so a
    comment, a value or a heading is one line by construction, whatever a hostname holds."""
    text = str(value)
    if text.isprintable():
        return text
    return "".join(
        c if c.isprintable() else (f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}")
        for c in text
    )


# What a message quotes of a file's text, at most: the rest is counted, not repeated (a line
# of the 16 MiB a file may hold gives a finding of a few hundred bytes, not of the line).
QUOTE_CHARS = 200


def quoted(text: str, limit: int = QUOTE_CHARS) -> str:
    """A file's text as a message quotes it: whole up to `limit` characters, else its start and
    how long it is."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"


class ControlCharacter(ValueError):
    """Text holds a control, format or separator character; `loc` says where below the value
    checked (mapping keys, list indexes), so that the error names the field and its line."""

    def __init__(self, char: str, loc: tuple[str | int, ...] = ()) -> None:
        super().__init__(f"contains a control or separator character (U+{ord(char):04X})")
        self.loc = loc


def refuse_control_characters(value: Any, loc: tuple[str | int, ...] = ()) -> None:
    """Raise ControlCharacter for any string in `value` (nested lists and mappings too)
    holding a control, format or separator character other than a newline or tab: text from
    a rule or profile directory reaches terminals and files, where an ESC sequence or a bidi
    override would restyle or reorder what the operator reads."""
    if isinstance(value, str):
        if not value.isprintable():
            bad = next((c for c in value if not c.isprintable() and c not in "\n\t"), None)
            if bad is not None:
                raise ControlCharacter(bad, loc)
    elif isinstance(value, dict):
        for key, item in value.items():
            refuse_control_characters(key, (*loc, key))
            refuse_control_characters(item, (*loc, key))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            refuse_control_characters(item, (*loc, index))


MAX_TEXT = 4096  # characters of a text field in facts, profiles and catalogs


def plain_line(value: str, what: str = "text", limit: int = MAX_TEXT) -> str:
    """`value` when it is one line of printable text of at most `limit` characters; else
    ValueError naming the first offending character."""
    if len(value) > limit:
        raise ValueError(f"{what} longer than {limit} characters")
    if not value.isprintable():
        bad = next(c for c in value if not c.isprintable())
        raise ValueError(f"{what} contains a control or separator character (U+{ord(bad):04X})")
    return value


def as_fact(message: str) -> str:
    """A message that quotes a file (a service's config: its names, its lines, a parser's
    errors) as facts text: one line, escaped, and no longer than a facts text field may be."""
    text = one_line(message)
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 3] + "..."


def double_quoted(value: str) -> str:
    """`value` as a double-quoted string with backslash escapes that reads back as exactly
    `value` in both PromQL and TOML basic strings: backslash and quote escaped, a line feed as
    \\n, every other character that is not printable as \\uXXXX or \\UXXXXXXXX (a lone
    surrogate too, which TOML refuses: its callers check for one)."""
    out = ['"']
    for char in value:
        if char == "\\":
            out.append("\\\\")
        elif char == '"':
            out.append('\\"')
        elif char == "\n":
            out.append("\\n")
        elif char.isprintable():
            out.append(char)
        elif ord(char) <= 0xFFFF:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    out.append('"')
    return "".join(out)
