"""Read YAML/JSON safely, and turn validation errors into one line naming file, line and field."""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import yaml

from sysctl_advisor.model.errors import InputError, NotFound, NotTrusted

if TYPE_CHECKING:
    from pydantic import ValidationError

# libyaml is several times faster; fall back to the pure-Python loader.
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


MAX_DEPTH = 64  # nesting of any YAML/JSON document the advisor reads
# Values in a document once YAML aliases are expanded: nine levels of nine aliases are 9**9
# values in 300 bytes ("billion laughs"), and every reader after the parser walks them all.
MAX_VALUES = 2_000_000


@dataclass(frozen=True)
class YamlBounds:
    """What one kind of document may hold as YAML, checked before anything of it is built: its
    size in bytes, and its nodes (scalars, sequences, mappings, aliases) counted on the
    parser's events. Building a YAML document costs over 100 bytes of memory for each byte of
    text (a 13 MB facts file reached 1.35 GB before its error), so a kind is held to what its
    largest legitimate document needs, many times over. JSON, built at a fifth of that cost
    (and ten times as fast), is held to the input cap: a facts file at the contract's largest
    lists (100,000 sysctl_files and settings) is JSON."""

    what: str
    max_bytes: int
    max_nodes: int


# A facts file the collector writes is a few KB (a host with a thousand interfaces, some
# 100 KB and 10,000 nodes), an `ansible -m setup` file 100-300 KB; a colleague's rule or
# profile is one screen, the shipped catalogs at most 140 KB and 4,000 nodes; a profile map
# lists host patterns.
FACTS_FILE = YamlBounds("a facts file", 4 * 1024 * 1024, 200_000)
KNOWLEDGE_FILE = YamlBounds("a rules, profiles or catalog file", 1024 * 1024, 100_000)
PROFILE_MAP = YamlBounds("a profile map", 4 * 1024 * 1024, 200_000)


DEFAULT_MAX_INPUT = 16 * 1024 * 1024  # bytes; what a knowledge file is read within, whatever
# SYSCTL_ADVISOR_MAX_INPUT says (its kind's bounds then refuse it in words that name them)


def max_input_bytes() -> int:
    """SYSCTL_ADVISOR_MAX_INPUT (bytes), DEFAULT_MAX_INPUT unless set."""
    try:
        return max(1024, int(os.environ.get("SYSCTL_ADVISOR_MAX_INPUT", DEFAULT_MAX_INPUT)))
    except ValueError:
        return DEFAULT_MAX_INPUT


def open_regular_file(
    path: Path,
    allowed: Callable[[Path], bool] | None = None,
    untrusted: Callable[[os.stat_result], str | None] | None = None,
) -> int:
    """A descriptor to read the regular file `path` (non-blocking), else InputError with the
    reason. The name is opened O_PATH first, which runs no driver code: a FIFO, a device node
    (a watchdog's, a tape's) or a socket is refused on that descriptor without being opened,
    and, with `allowed`, so is a file whose real path (as the descriptor resolves, so a link
    swapped in after a check by name is judged by what was opened) it refuses. Only then is
    the file opened for reading, through the descriptor: the file checked is the file read.
    With `untrusted` (why other users may write the file, None when they may not), such a
    file is refused too, as NotTrusted: a file that configures a run must be the running
    user's or root's, as git asks of a repository, and no one else's to write."""
    try:
        found = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        raise NotFound("no such file", path=path) from None
    except (OSError, ValueError) as exc:
        raise InputError(
            f"cannot read: {getattr(exc, 'strerror', None) or exc}", path=path
        ) from None
    try:
        # judged first: of a file outside the tree, nothing is told (what it is, who owns it)
        if allowed is not None and not allowed(Path(os.readlink(f"/proc/self/fd/{found}"))):
            raise InputError("outside the tree it was read from; not read", path=path)
        info = os.fstat(found)
        mode = info.st_mode
        if stat.S_ISDIR(mode):
            raise InputError("is a directory, expected a file", path=path)
        if not stat.S_ISREG(mode):
            raise InputError("not a regular file (a FIFO, device or socket)", path=path)
        why = untrusted(info) if untrusted is not None else None
        if why is not None:
            raise NotTrusted(
                f"not read: {why}, and a file that configures this run must be yours or "
                "root's and no one else's to write",
                path=path,
            )
        return os.open(f"/proc/self/fd/{found}", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from None
    finally:
        os.close(found)


def read_bytes(
    path: Path,
    allowed: Callable[[Path], bool] | None = None,
    untrusted: Callable[[os.stat_result], str | None] | None = None,
    limit: int | None = None,
) -> bytes:
    """A regular file's bytes, bounded: a FIFO, a device (/dev/zero, /dev/urandom) or a socket
    is refused without being opened (open_regular_file), and so is a file above `limit`
    (max_input_bytes() by default); with `allowed`, also one whose real path it refuses, as
    opened; with `untrusted`, one other users may write (NotTrusted)."""
    return read_file_and_time(path, allowed, untrusted, limit)[0]


def read_file_and_time(
    path: Path,
    allowed: Callable[[Path], bool] | None = None,
    untrusted: Callable[[os.stat_result], str | None] | None = None,
    limit: int | None = None,
) -> tuple[bytes, float]:
    """As read_bytes, with the file's modification time (epoch seconds) from the descriptor
    read."""
    hint = " (set SYSCTL_ADVISOR_MAX_INPUT to allow more)" if limit is None else ""
    limit = max_input_bytes() if limit is None else limit
    fd = open_regular_file(path, allowed, untrusted)
    try:
        info = os.fstat(fd)
        if info.st_size > limit:
            raise InputError(f"larger than {limit:,} bytes{hint}", path=path)
        data = read_descriptor(fd, limit)
        if data is None:  # a file that grew, or /proc files that report size 0
            raise InputError(f"larger than {limit:,} bytes", path=path)
        return data, info.st_mtime
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from None
    finally:
        os.close(fd)


def read_descriptor(fd: int, limit: int) -> bytes | None:
    """What an open descriptor holds, read to its end in chunks (one read may return less than
    asked, on FUSE or NFS); None once it holds more than `limit` bytes. OSError as raised."""
    chunks: list[bytes] = []
    size = 0
    while chunk := os.read(fd, min(1 << 20, limit + 1 - size)):
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def read_stream_bytes(stream: BinaryIO, name: str) -> bytes:
    """A stream's bytes (standard input: `sysctl -a | sysctl-advisor check -`), bounded as a
    file is: more than max_input_bytes() is an InputError naming `name`, read no further."""
    limit = max_input_bytes()
    try:
        data = stream.read(limit + 1)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=name) from None
    if len(data) > limit:
        raise InputError(
            f"larger than {limit:,} bytes (set SYSCTL_ADVISOR_MAX_INPUT to allow more)", path=name
        )
    return data


def read_text(
    path: Path, allowed: Callable[[Path], bool] | None = None, limit: int | None = None
) -> str:
    """A regular file's UTF-8 text, bounded (read_bytes, with `allowed` and `limit` as
    there: a knowledge file is held to its kind's size, never to SYSCTL_ADVISOR_MAX_INPUT)."""
    data = read_bytes(path, allowed, limit=limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", path=path) from None


class _StrictLoader(_Loader):  # type: ignore[misc]
    """The safe loader, refusing duplicate keys in a mapping (YAML's own rule)."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                key = self.construct_scalar(key_node)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {str(key)[:60]!r}", key_node.start_mark
                    )
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


_OPENERS = frozenset({"FlowSequenceStartToken", "FlowMappingStartToken"})
_CLOSERS = frozenset({"FlowSequenceEndToken", "FlowMappingEndToken"})


def _check_flow_depth(text: str, path: Path | None) -> None:
    """libyaml's composer recurses in C: 50,000 `[` crash the interpreter. Flow nesting is
    counted with the (iterative) scanner first, when the text has enough brackets to matter."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return
    depth = 0
    try:
        for token in yaml.scan(text, Loader=_Loader):
            name = type(token).__name__
            if name in _OPENERS:
                depth += 1
                if depth > MAX_DEPTH:
                    raise InputError(f"nested more than {MAX_DEPTH} levels deep", path=path)
            elif name in _CLOSERS:
                depth -= 1
    except yaml.YAMLError:
        return  # the loader reports the syntax error with its line


# Where a node can start: the document's root, or after one of these indicators; a `:` or `,`
# (or `{`, `?`) may start two (a key and its value, an empty value counting one).
_TWO_NODES = (":", ",", "{", "?")
_ONE_NODE = ("-", "[")
_NODE_EVENTS = (yaml.ScalarEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent, yaml.AliasEvent)


def node_bound(text: str) -> int:
    """At least the number of nodes in the YAML `text` (every node but the root follows an
    indicator that may start it), counted in C without parsing: most documents are known to
    be within their bound without a look at their events."""
    return (
        1
        + 2 * sum(text.count(mark) for mark in _TWO_NODES)
        + sum(text.count(mark) for mark in _ONE_NODE)
    )


def _check_yaml_size(text: str, path: Path | None, bounds: YamlBounds) -> None:
    """Refuse YAML above the kind's bounds before anything is built: its bytes, then its nodes
    counted on the parser's events (each dropped as it is counted), up to the first node
    past the bound."""
    size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    if size > bounds.max_bytes:
        raise InputError(
            f"YAML larger than {bounds.max_bytes:,} bytes, the limit for {bounds.what} "
            "(as JSON it may be larger); not read",
            path=path,
        )
    if node_bound(text) <= bounds.max_nodes:
        return
    nodes = 0
    try:
        for event in yaml.parse(text, Loader=_Loader):
            if isinstance(event, _NODE_EVENTS):
                nodes += 1
                if nodes > bounds.max_nodes:
                    raise InputError(
                        f"more than {bounds.max_nodes:,} YAML nodes (values, lists, mappings), "
                        f"the limit for {bounds.what}; not read",
                        path=path,
                        line=event.start_mark.line + 1 if event.start_mark else None,
                    )
    except yaml.YAMLError:
        return  # the loader reports the syntax error with its line


def _check_depth(data: Any, path: Path | None) -> None:
    """Nesting and size with aliases expanded, each shared value measured once."""
    measured: dict[int, tuple[int, int]] = {}  # id -> (values, height)

    def measure(value: Any, depth: int) -> tuple[int, int]:
        if depth > MAX_DEPTH:
            raise InputError(f"nested more than {MAX_DEPTH} levels deep", path=path)
        if isinstance(value, dict):
            children: Iterable[Any] = value.values()
        elif isinstance(value, list):
            children = value
        else:
            return 1, 0
        known = measured.get(id(value))
        if known is None:
            count, height = 1, 0
            for child in children:
                size, below = measure(child, depth + 1)
                count, height = count + size, max(height, below + 1)
                if count > MAX_VALUES:
                    raise InputError(
                        f"more than {MAX_VALUES:,} values once YAML aliases are expanded",
                        path=path,
                    )
            known = measured[id(value)] = (count, height)
        if depth + known[1] > MAX_DEPTH:
            raise InputError(f"nested more than {MAX_DEPTH} levels deep", path=path)
        return known

    measure(data, 0)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"duplicate key {key[:60]!r}")
            seen.add(key)
    return result


def parse_json(text: str, path: Path | None) -> Any:
    """JSON with the same limits as YAML: no duplicate keys, bounded nesting and numbers."""
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON: {exc.msg}", path=path, line=exc.lineno) from None
    except RecursionError:
        raise InputError(f"nested more than {MAX_DEPTH} levels deep", path=path) from None
    except ValueError as exc:  # duplicate keys, integers beyond 4,300 digits
        raise InputError(f"invalid JSON: {str(exc)[:120]}", path=path) from None
    return data  # json.loads recurses in Python: a bomb is a RecursionError, caught above


# tomllib takes time and memory quadratic in the parts of one dotted key (60 KB of `a.a.a...`
# is gigabytes): a key with more parts than this is refused before it is parsed.
MAX_KEY_PARTS = 64


def _key_parts_bounded(text: str, path: Path | None) -> None:
    """Refuse a line whose key (before `=`, or a `[table]` header) has more than
    MAX_KEY_PARTS dotted parts; counted in one pass, without parsing."""
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.lstrip()
        head = stripped.split("=", 1)[0] if "=" in stripped else ""
        if stripped.startswith("["):
            head = stripped
        if head.count(".") >= MAX_KEY_PARTS:
            raise InputError(
                f"a key of more than {MAX_KEY_PARTS} dotted parts; not read",
                path=path,
                line=number,
            )


def parse_toml(text: str, path: Path | None) -> dict[str, Any]:
    """TOML (tomllib, or tomli on Python 3.10) with the same bounds as YAML and JSON: a key
    of more than MAX_KEY_PARTS parts, too deep a nesting or an integer beyond Python's digits
    is one InputError."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]
    _key_parts_bounded(text, path)
    try:
        data: dict[str, Any] = tomllib.loads(text)
        return data
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not TOML: {exc}", path=path) from None
    except RecursionError:
        raise InputError("nested too deeply", path=path) from None
    except ValueError as exc:  # an integer beyond Python's 4,300 digits
        raise InputError(f"not TOML: {str(exc)[:100]}", path=path) from None


_NOT_JSON = object()


def parse_document(text: str, path: Path, bounds: YamlBounds) -> Any:
    """YAML (a superset of JSON) via the safe loader; errors carry the line. Duplicate keys,
    nesting deeper than MAX_DEPTH, more than `bounds` (checked before the document is built)
    and numbers no kernel value could hold are errors. A JSON document (a .json file, or text
    that opens with `{` and parses as JSON) is read as JSON: ten times faster than the YAML
    loader on a large facts file, and exact about numbers."""
    if path.suffix.lower() == ".json" or text.lstrip().startswith("{"):
        try:
            data = json.loads(text, object_pairs_hook=_unique_keys)
        except json.JSONDecodeError:
            if path.suffix.lower() == ".json":
                return parse_json(text, path)  # the one-line error with the line
            data = _NOT_JSON  # a YAML flow mapping: read below
        except (RecursionError, ValueError):
            return parse_json(text, path)  # the same one-line errors
        if data is not _NOT_JSON:
            _check_depth(data, path)
            return data
    _check_yaml_size(text, path, bounds)
    _check_flow_depth(text, path)
    try:
        data = yaml.load(text, Loader=_StrictLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or "invalid YAML"
        raise InputError(f"invalid YAML: {problem}", path=path, line=line) from None
    except yaml.YAMLError as exc:
        raise InputError(f"invalid YAML: {exc}", path=path) from None
    except RecursionError:
        raise InputError(f"nested more than {MAX_DEPTH} levels deep", path=path) from None
    except ValueError as exc:  # integers beyond 4,300 digits
        raise InputError(f"invalid YAML: {str(exc)[:120]}", path=path) from None
    _check_depth(data, path)
    return data


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


# The advisor's own words for the errors every reader of a contract meets; the rest keep
# pydantic's message (tests name the file, line and field, never a library's wording).
_OWN_WORDS = {
    "extra_forbidden": "unknown field (not in the contract; a misspelt name?)",
    "unexpected_keyword_argument": "unknown field (not in the contract; a misspelt name?)",
    "missing": "required field missing",
    "missing_keyword_only_argument": "required field missing",
    "string_pattern_mismatch": "does not match the pattern {pattern}",
}


def validation_error(exc: ValidationError, path: Path | None, text: str | None) -> InputError:
    """The first pydantic error as an InputError with the field path and, if known, the line."""
    err = exc.errors(include_url=False)[0]
    loc = [p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-"))]
    loc += getattr(err.get("ctx", {}).get("error"), "loc", ())  # below it: a field, a key
    field = ".".join(str(p) for p in loc) or None
    message = err["msg"]
    own = _OWN_WORDS.get(err["type"])
    with contextlib.suppress(KeyError):  # a context pydantic no longer gives: its own words
        message = own.format_map(err.get("ctx", {})) if own is not None else message
    if message.startswith("Value error, "):
        message = message[len("Value error, ") :]
    line = line_of(text, loc) if text is not None and loc else None
    return InputError(message, path=path, line=line, field=field)


def dump_json(data: Any) -> str:
    """Indented JSON that is valid UTF-8 whatever the data holds: a file name's undecodable
    byte (a lone surrogate, as Python reads it) is written as its JSON escape (\\udcff), which
    decodes back to the same string (os.fsencode restores the name), instead of a raw byte
    that would make the whole document unreadable to a strict UTF-8 consumer (or fail to be
    written at all)."""
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    # Nor does it hold a character a terminal acts on (DEL, C1 controls such as CSI, bidi
    # overrides, separators): json.dumps leaves all but C0 raw, so `check -f json` printed a
    # hostile value's ESC sequence. Each is written as its JSON escape, decoding the same.
    return _NOT_ASCII.sub(_escaped_if_unprintable, text)


_NOT_ASCII = re.compile(r"[^\n\x20-\x7e]")  # only these may need a look: rare in a document


def _escaped_if_unprintable(match: re.Match[str]) -> str:
    char = match.group()
    if char.isprintable():
        return char
    return json.dumps(char)[1:-1]  # \u007f, \u202e, \udcff (a lone surrogate), a pair above
