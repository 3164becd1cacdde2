"""The one error type for bad input: it carries where the problem is, and prints on one line."""

from __future__ import annotations

from pathlib import Path

from sysctl_advisor.model.text_escape import one_line


class InputError(Exception):
    """Bad input from the user: a file, a field or a command-line value. Exit code 2."""

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line
        self.field = field

    def __str__(self) -> str:
        where = ""
        if self.path:
            where = self.path + (f":{self.line}" if self.line else "") + ": "
        field = f"{self.field}: " if self.field else ""
        # One line, always: YAML and pydantic messages can span several; and no character of
        # a hostile file's name, key or text (ESC, BEL, a bidi override) reaches a terminal.
        return one_line(" ".join(f"{where}{field}{self.message}".split()))


class NotFound(InputError):
    """The file named does not exist: bad input where a file was required, and the one failure
    a search for an optional file (a configuration) goes on after."""


class NotTrusted(InputError):
    """The file is one other users may write (another user's, or in a directory they may
    write to): bad input where a file was named, and a file a search for a configuration
    skips, saying so."""
