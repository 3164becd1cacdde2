"""Read YAML/JSON safely, and turn validation errors into one line naming file, line and field."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from advisor.errors import InputError

# libyaml is several times faster; fall back to the pure-Python loader.
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a file", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", path=path) from None


def parse_document(text: str, path: Path) -> Any:
    """YAML (a superset of JSON) via safe_load; errors carry the line."""
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or "invalid YAML"
        raise InputError(f"invalid YAML: {problem}", path=path, line=line) from None
    except yaml.YAMLError as exc:
        raise InputError(f"invalid YAML: {exc}", path=path) from None


def load_document(path: Path) -> Any:
    return parse_document(read_text(path), path)


def line_of(text: str, loc: Sequence[int | str]) -> int | None:
    """The 1-based line of the node at `loc` (a pydantic error location) in a YAML/JSON text.

    Walks as deep as the location goes; returns the line of the deepest node found.
    """
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.YAMLError:
        return None
    line = None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if str(key_node.value) == str(part):
                    line = key_node.start_mark.line + 1
                    node = value_node
                    break
            else:
                break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                break
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


def validation_error(exc: ValidationError, path: Path | None, text: str | None) -> InputError:
    """The first pydantic error as an InputError with the field path and, if known, the line."""
    err = exc.errors(include_url=False)[0]
    loc = [p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-"))]
    field = ".".join(str(p) for p in loc) or None
    message = err["msg"]
    if message.startswith("Value error, "):
        message = message[len("Value error, ") :]
    line = line_of(text, loc) if text is not None and loc else None
    return InputError(message, path=path, line=line, field=field)


def write_atomic(path: Path, content: str) -> None:
    """Write a file so that readers see the old or the new content, never a half-written one."""
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", path=path) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        else:
            os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(f"cannot write: {exc.strerror}", path=path) from None


def dump_json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
