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
