"""What configuration is in force: a `sysctl -a` dump, one sysctl.conf, or a sysctl.d tree.

A tree is resolved as systemd-sysctl does at boot:

* `*.conf` files in etc/sysctl.d, run/sysctl.d, usr/local/lib/sysctl.d, usr/lib/sysctl.d and
  lib/sysctl.d; a file name found in an earlier directory hides the same name in later ones,
  and a symlink to /dev/null masks it;
* the surviving files are applied in lexicographic order of their names, whatever their
  directory, and within the run a later assignment replaces an earlier one;
* a glob key (`net.ipv4.conf.*.rp_filter`) applies to every matching key that has no explicit
  assignment anywhere; `-key` on its own keeps a key out of globs.

etc/sysctl.conf is applied where a sysctl.d symlink places it (distributions ship
`99-sysctl.conf -> ../sysctl.conf`); without such a link systemd-sysctl ignores it and
`sysctl --system` applies it last. It is applied last here, with a note saying so.

A link is followed when it stays inside the configuration roots those directories sit in
(etc, run, usr/local/lib, usr/lib, lib, under the tree given; for a directory given alone,
such as /etc/sysctl.d, the tree its path names: `/`), as distributions ship them; a link
that leaves them (/home, /proc, a repository's .git, a copied tree's outside) is reported and
never read. A directory of *.conf files anywhere else keeps its links inside itself. The
decisive check is made on the descriptor that reads the file (model.documents).

Every value remembers the file and line it came from. Problems (unreadable files, broken
links, lines without `=`, inline comments) are collected, never raised, so the rest stays usable.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from sysctl_advisor.model.current_config import CurrentConfig, CurrentValue, Override, Problem
from sysctl_advisor.model.documents import max_input_bytes, read_file_and_time, read_stream_bytes
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.sysctl_conf import (
    ADVISOR_MARK,
    Assignment,
    advisor_comment,
    parse_conf_lines,
)
from sysctl_advisor.sources.sysctl_templates import template_lines
from sysctl_advisor.sources.tree_paths import inside, within

SYSCTL_D_DIRS = (
    "etc/sysctl.d",
    "run/sysctl.d",
    "usr/local/lib/sysctl.d",
    "usr/lib/sysctl.d",
    "lib/sysctl.d",
)
SYSCTL_CONF = "etc/sysctl.conf"
MAX_LINK_HOPS = 16


@dataclass
class _Collector:
    """Applies assignments in order: explicit keys, then globs over the keys that remain."""

    config: CurrentConfig
    known_keys: tuple[str, ...]
    explicit: dict[str, CurrentValue] = field(default_factory=dict)
    globs: list[CurrentValue] = field(default_factory=list)
    excluded: set[str] = field(default_factory=set)

    def add_text(self, text: str, display: str, template: bool = False) -> None:
        conditional: frozenset[int] = frozenset()
        if template:
            lines = template_lines(text)
            if lines.error is not None:
                number, reason = lines.error
                where = f"{display}:{number}"
                self.config.problems.append(Problem(where, reason, "error", "syntax"))
                self.config.documents.append((display, []))
                return
            text, conditional = lines.text, lines.conditional
        assignments, exclusions, bad = parse_conf_lines(text)
        if template:
            assignments = [
                a._replace(templated=True) if a.line in lines.templated else a for a in assignments
            ]
        self.config.documents.append((display, assignments))
        for line in bad:
            self.config.problems.append(
                Problem(f"{display}:{line.line}", line.reason, "error", line.code)
            )
        for exclusion in exclusions:
            self.excluded.add(exclusion.key)
        for item in assignments:
            self._add(item, display, conditional)
        if ADVISOR_MARK in text:  # rare: most files never address the advisor
            comments = _advisor_comments(text)
            if comments:
                self.config.advisor_comments.append((display, comments))

    def _add(self, item: Assignment, display: str, conditional: frozenset[int]) -> None:
        where = f"{display}:{item.line}"
        value = CurrentValue(item.key, item.value, where, item.ignore_failure, display, item.line)
        if item.is_glob:
            self.globs.append(value)
            return
        previous = self.explicit.get(item.key)
        # a template sets a key in each branch of an `if`: a later line that only a branch
        # holds may not run, so it overrides nothing for sure; an earlier one in a branch is
        # still replaced by a later line that always runs
        branches = previous is not None and previous.file == display and item.line in conditional
        if previous is not None and not branches:
            self.config.overrides.append(Override(item.key, previous, value))
        self.explicit[item.key] = value

    def finish(self) -> None:
        values = dict(self.explicit)
        for glob in self.globs:
            for key in self.known_keys:
                if key in self.explicit or key in self.excluded:
                    continue
                if fnmatch.fnmatchcase(key, glob.key):
                    values[key] = CurrentValue(key, glob.value, glob.source, glob.ignore_failure)
        self.config.values = {key: values[key] for key in sorted(values)}


# A comment line's text kept for the advisor, at most (the rest is cut; check judges it).
_COMMENT_CAP = 1024


def _advisor_comments(text: str) -> list[tuple[int, str]]:
    """The comment lines (first non-blank character `#` or `;`, which procps and
    systemd-sysctl skip) whose text starts with `sysctl-advisor:`, with their line numbers;
    one pass over the text."""
    found: list[tuple[int, str]] = []
    for number, raw in enumerate(text.split("\n"), start=1):
        line = advisor_comment(raw)
        if line is not None:
            found.append((number, line[:_COMMENT_CAP]))
    return found


def _read(
    path: Path,
    display: str,
    config: CurrentConfig,
    allowed: Callable[[Path], bool] | None = None,
) -> str | None:
    """A file's text, or None with the reason recorded: never blocks on a FIFO, never opens a
    device or reads more than the input limit; with `allowed`, only a file whose real path it
    accepts as opened (a link swapped in after the check by name is judged by what was
    opened). Its modification time goes into `config.modified`."""
    try:
        data, modified = read_file_and_time(path, allowed)
    except InputError as exc:
        config.problems.append(Problem(display, exc.message, "error", "unreadable"))
        return None
    config.modified[display] = modified
    return _decoded(data, display, config.problems)


def max_lines() -> int:
    """Lines of one sysctl file or dump, at most: one for every 128 bytes of the input cap
    (131,072 at 16 MiB). Every line is held while the file is judged, with its key, value and
    place (400 to 1,000 bytes a line), so the cap on bytes alone let a file of short lines
    take a gigabyte; a `sysctl -a` dump holds some 125 lines an interface, a thousand
    interfaces about 125,000."""
    return max_input_bytes() // 128


def _decoded(data: bytes, display: str, problems: list[Problem]) -> str | None:
    """Text from a file's bytes, or None (recorded) for a binary file or one of more than
    max_lines() lines (counted before anything is parsed)."""
    if b"\0" in data:
        problems.append(Problem(display, "binary file, not sysctl settings", "error", "unreadable"))
        return None
    limit = max_lines()
    if data.count(b"\n") + (not data.endswith(b"\n")) > limit:
        reason = f"more than {limit:,} lines (set SYSCTL_ADVISOR_MAX_INPUT to allow more)"
        problems.append(Problem(display, reason, "error", "unreadable"))
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _looks_like_dump(text: str) -> bool:
    """`sysctl -a` output: a `sysctl: ` line (its complaint about a key), or hundreds of keys
    without a comment, tab-separated vectors among them. One pass, nothing kept."""
    lines, comment, tab = 0, False, False
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("sysctl: "):
            return True
        lines += 1
        comment = comment or line[0] in "#;"
        tab = tab or "\t" in line
    return not comment and lines >= 100 and tab


TEMPLATE_SUFFIX = ".j2"


def read_file(
    path: Path, known_keys: Iterable[str] = (), display: str | None = None
) -> CurrentConfig:
    """One sysctl.conf, or a `sysctl -a` dump (told apart by its content); a `*.j2` file is a
    Jinja template of a sysctl.conf (sources.sysctl_templates)."""
    shown = display or str(path)
    config = CurrentConfig("file", shown)
    template = path.name.endswith(TEMPLATE_SUFFIX)
    return _from_text(config, _read(path, shown, config), known_keys, template)


STDIN_NAME = "<stdin>"


def read_stdin(stream: BinaryIO, known_keys: Iterable[str] = ()) -> CurrentConfig:
    """`-`: a sysctl.conf or a `sysctl -a` dump on standard input, bounded as a file is (more
    is one InputError), reported under the name <stdin>."""
    config = CurrentConfig("file", STDIN_NAME)
    data = read_stream_bytes(stream, "-")
    return _from_text(config, _decoded(data, STDIN_NAME, config.problems), known_keys)


def _from_text(
    config: CurrentConfig, text: str | None, known_keys: Iterable[str], template: bool = False
) -> CurrentConfig:
    shown = config.label
    collector = _Collector(config, tuple(known_keys))
    if text is not None:
        if not template and _looks_like_dump(text):
            config.kind = "dump"
            kept: list[str] = []
            for number, line in enumerate(text.splitlines(), start=1):
                if line.startswith("sysctl: "):  # "permission denied on key …", "reading key …"
                    config.problems.append(Problem(f"{shown}:{number}", line[8:].strip(), "info"))
                    kept.append("")
                else:
                    kept.append(line)
            text = "\n".join(kept)
        collector.add_text(text, shown, template)
        config.files.append(shown)
    collector.finish()
    return config


def _outside(shown: str) -> Problem:
    return Problem(shown, "a symlink out of the tree; not read", "error", "outside-link")


def _resolve_link(
    reroot: Path,
    allowed: Callable[[Path], bool],
    path: Path,
    checked: frozenset[Path] = frozenset(),
) -> Path | str | None:
    """Follow symlinks while they stay where `allowed` says (absolute targets are re-rooted at
    `reroot`, the tree's `/`). Returns the file, "mask" for /dev/null, "outside" for a link
    that leaves (never read: a pull request must not get a repository's secrets quoted back),
    or None when the link is broken or loops. `checked` holds directories already judged: an
    entry of one that is not a link is allowed too, without resolving its path again. This
    is a check by name, to say why a file is skipped; what is read is judged again on its
    descriptor."""
    current = path
    for _ in range(MAX_LINK_HOPS):
        if not current.is_symlink():
            if not current.exists():
                return None
            if current is path and current.parent in checked:
                return current
            return current if allowed(current) else "outside"
        target = os.readlink(current)
        if target == "/dev/null":
            return "mask"
        joined = reroot / target.lstrip("/") if target.startswith("/") else current.parent / target
        current = Path(os.path.normpath(joined))
        if not allowed(current.parent) and not allowed(current):
            # a dangling link to elsewhere in the tree given is broken, as it always was;
            # whether a path exists outside that tree is never said
            if not os.path.lexists(current) and inside(reroot, current):
                return None
            return "outside"
    return None


# The directories the sysctl.d directories sit in: a link may lead anywhere inside them.
CONFIG_ROOTS = tuple(dict.fromkeys(d.rsplit("/", 1)[0] for d in SYSCTL_D_DIRS))


def _tree_named_by(directory: Path) -> Path | None:
    """The tree a sysctl.d directory's own path names (`/` for /etc/sysctl.d, `repo` for
    repo/usr/lib/sysctl.d), or None for a directory of *.conf files anywhere else."""
    parts = Path(os.path.abspath(directory)).parts
    for relative in SYSCTL_D_DIRS:
        tail = tuple(relative.split("/"))
        if len(parts) > len(tail) and parts[-len(tail) :] == tail:
            return Path(*parts[: -len(tail)])
    return None


def _allowed_in(tree: Path, extra: tuple[Path, ...] = ()) -> Callable[[Path], bool]:
    """Whether a path, links resolved, lies in one of `tree`'s configuration roots (each
    resolved once, and only if it stays inside the tree: a copied tree's absolute `lib ->
    /usr/lib` would lead to this host's) or in one of `extra`."""
    roots = [tree / relative for relative in CONFIG_ROOTS if inside(tree, tree / relative)]
    return _allowed_at((*roots, *extra))


def _allowed_at(roots: tuple[Path, ...]) -> Callable[[Path], bool]:
    """Whether a path, links resolved, lies in one of `roots` (each resolved once here)."""
    found = tuple(dict.fromkeys(os.path.realpath(root) for root in roots))
    return lambda path: within(found, path)


def _is_sysctl_d(directory: Path) -> bool:
    try:
        return any(p.suffix == ".conf" for p in directory.iterdir())
    except OSError as exc:
        raise InputError(f"cannot list: {exc.strerror or exc}", path=directory) from None


def read_tree(root: Path, known_keys: Iterable[str] = ()) -> CurrentConfig:
    """A directory holding etc/sysctl.d, usr/lib/sysctl.d, … (or `/`), resolved as
    systemd-sysctl does; a plain directory of *.conf files is read as one sysctl.d."""
    config = CurrentConfig("tree", str(root))
    if not any((root / d).is_dir() for d in SYSCTL_D_DIRS) and not (root / SYSCTL_CONF).exists():
        if root.is_dir() and _is_sysctl_d(root):
            directories = [root]
            relative_to = root.parent
            named = _tree_named_by(root)
            # /etc/sysctl.d alone: its links may reach /etc (99-sysctl.conf -> ../sysctl.conf)
            # and the other roots of `/`; a directory anywhere else keeps them inside itself.
            if named is not None:
                reroot, allowed = named, _allowed_in(named, (root,))
            else:
                reroot, allowed = root, _allowed_at((root,))
        else:
            raise InputError(
                "no sysctl.d directories (etc/sysctl.d, usr/lib/sysctl.d, …), "
                "sysctl.conf or *.conf files here",
                path=root,
            )
    else:
        directories = [root / d for d in SYSCTL_D_DIRS]
        relative_to = root
        reroot, allowed = root, _allowed_in(root)

    def shown(path: Path) -> str:
        try:
            return str(path.relative_to(relative_to))
        except ValueError:
            return str(path)

    config.base = relative_to
    chosen: dict[str, Path] = {}
    inside_tree: set[Path] = set()
    for directory in directories:
        if not directory.is_dir():
            continue
        if not allowed(directory):
            config.problems.append(_outside(shown(directory)))
            continue
        inside_tree.add(directory)
        try:
            entries = sorted(directory.iterdir())
        except OSError as exc:
            config.problems.append(
                Problem(
                    shown(directory), f"cannot list: {exc.strerror or exc}", "error", "unreadable"
                )
            )
            continue
        for entry in entries:
            if entry.suffix == ".conf" and entry.name not in chosen:
                chosen[entry.name] = entry  # an earlier directory hides the same name

    checked = frozenset(inside_tree)
    collector = _Collector(config, tuple(known_keys))
    main_conf = root / SYSCTL_CONF
    main_conf_real = main_conf.resolve() if main_conf.exists() else None
    main_conf_linked = False
    for name in sorted(chosen):
        entry = chosen[name]
        entry_shown = shown(entry)
        target = _resolve_link(reroot, allowed, entry, checked)
        if target == "mask":
            config.masked.append(entry_shown)
            continue
        if target == "outside":
            config.problems.append(_outside(entry_shown))
            continue
        if target is None:
            config.problems.append(
                Problem(entry_shown, "broken symlink, skipped", "error", "broken-link")
            )
            continue
        assert isinstance(target, Path)
        if target.is_dir():
            continue
        linked = target is not entry  # _resolve_link returns the entry itself unless a link
        if main_conf_real is not None and target.resolve() == main_conf_real:
            main_conf_linked = True
        # A link (99-sysctl.conf -> ../sysctl.conf) is applied at its own name's position, but
        # values are attributed to the file an operator would edit.
        display = shown(target) if linked else entry_shown
        text = _read(target, display, config, allowed)
        if text is not None:
            collector.add_text(text, display)
            config.files.append(
                entry_shown if display == entry_shown else f"{entry_shown} -> {display}"
            )
    if main_conf.is_file() and not main_conf_linked and not allowed(main_conf):
        config.problems.append(
            Problem(
                shown(main_conf), "a symlink out of the tree; not read", "error", "outside-link"
            )
        )
    elif main_conf.is_file() and not main_conf_linked:
        config.problems.append(
            Problem(
                shown(main_conf),
                "not linked from sysctl.d: systemd-sysctl does not read it at boot; "
                "`sysctl --system` applies it last, as assumed here",
                "info",
            )
        )
        text = _read(main_conf, shown(main_conf), config, allowed)
        if text is not None:
            collector.add_text(text, shown(main_conf))
            config.files.append(shown(main_conf))
    collector.finish()
    return config


def read_current(path: Path, known_keys: Iterable[str] = ()) -> CurrentConfig:
    """`--current PATH`: a directory is a tree, a file is a sysctl.conf or a `sysctl -a` dump."""
    if path.is_dir():
        return read_tree(path, known_keys)
    if not path.exists():
        raise InputError("no such file or directory", path=path)
    config = read_file(path, known_keys)
    if not config.files:
        raise InputError(config.problems[0].message if config.problems else "unreadable", path=path)
    return config
