"""nginx's listening sockets and their backlogs, read with crossplane (nginx's own grammar).

Every `listen` in a `server` block opens (or shares) one socket per address:port. nginx lets
only one of the directives naming an address:port carry socket options such as `backlog=`;
the others share that socket. So the unit that has a backlog is the socket, not the directive:
this module groups directives by address and reports, per socket, the backlog nginx asks for
(None: its Linux default, 511) and the directive an operator should edit.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import crossplane

from sysctl_advisor.model.documents import open_regular_file
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.host_facts import Listen
from sysctl_advisor.model.model_base import validate
from sysctl_advisor.model.text_escape import as_fact, one_line
from sysctl_advisor.sources.tree_paths import inside

MAX_INCLUDE_DEPTH = 16
MAX_CONFIG_BYTES = 16 * 1024 * 1024  # of all the files together
MAX_FILES = 50_000  # files read, includes included
MAX_DIRECTIVES = 500_000  # (`;` and `{`) of all the files: what crossplane builds a dict for
MAX_LISTED = 200_000  # directory entries the wildcard includes of one config may look at
_SUBDIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class _Refused(Exception):
    """Why a wildcard include is not read."""


@dataclass(frozen=True)
class NginxListens:
    listens: list[Listen]
    error: str | None  # first problem, "file:line: message"; None when every file parsed


def socket_address(address: str) -> str:
    """`80`, `*:80` and `0.0.0.0:80` are one socket; IPv6 and unix addresses stay as written."""
    if address.startswith(("unix:", "[")):
        return address
    if address.isascii() and address.isdigit():
        return f"*:{address}"
    host, sep, port = address.rpartition(":")
    if not sep:
        return f"{address}:80"  # `listen example.org` means port 80
    return f"*:{port}" if host in ("*", "0.0.0.0") else address


def _backlog(args: list[str]) -> tuple[int | None, str | None]:
    """backlog=N as nginx reads it (ngx_atoi: decimal digits; -1 is accepted by nginx on some
    platforms), and an error when it is not a number nginx would take."""
    for arg in args[1:]:
        if arg.startswith("backlog="):
            value = arg.removeprefix("backlog=")
            if value == "-1":
                return -1, None
            plain = value.isascii() and value.isdigit() and len(value) <= 10
            if plain and 0 < int(value) <= 2**31 - 1:
                return int(value), None
            return None, f"invalid backlog={value[:24]!r} (nginx refuses it)"
    return None, None


class _Reader:
    """Follows includes itself (crossplane parses one file at a time) so that absolute include
    paths can be re-rooted in a copied tree and a broken include spoils only itself."""

    def __init__(self, config: Path, root: Path | None, confine: Path | None) -> None:
        self.config_dir = config.parent
        self.root = root
        self.confine = confine  # every file read must lie inside it (links resolved)
        self.found: list[Listen] = []
        self.errors: list[str] = []
        self.seen: set[tuple[int, int]] = set()  # (device, inode) of every file read
        self.bytes = 0
        self.directives = 0
        # for every include together: what was expanded (an include met again adds nothing,
        # as its files were read), the names wildcards looked at and the files they matched
        self.expanded: set[str] = set()
        self.listed = 0
        self.matched = 0

    def _resolve(self, pattern: str) -> list[Path]:
        """The files an include names: a path as it is (read, or refused, like every file),
        or a wildcard's matches (`_glob`). With a confinement, a name outside it is never
        listed or probed: a path's links are resolved only to compare it with the
        confinement, and a wildcard is expanded by descriptor from inside it."""
        if pattern.startswith("/"):
            base = (self.root or Path("/")) / pattern.lstrip("/")
        else:
            base = self.config_dir / pattern
        if str(base) in self.expanded:
            return []  # its files were read (or refused) the first time
        self.expanded.add(str(base))
        parts = base.parts
        first = next((i for i, part in enumerate(parts) if any(c in part for c in "*?[")), None)
        fixed = base if first is None else Path(*parts[:first])
        if self.confine is not None and not inside(self.confine, fixed):
            # never listed or probed: the names there are none of a facts file's business
            self.errors.append(f"include {one_line(pattern)}: outside {self.confine}; not read")
            return []
        if first is None:
            return [base]
        return self._glob(fixed, list(parts[first:]), pattern)

    def _glob(self, start: Path, rest: list[str], pattern: str) -> list[Path]:
        """A wildcard include's matches, as glob(3) finds them for nginx (sorted, no hidden
        names unless the pattern asks), but by descriptor: from `start` (opened, and checked
        inside the confinement as that descriptor resolves) one component at a time, never
        through a link to list what lies beyond it (a matched link to a file is judged when
        it is read) and, with a confinement, never up through `..`; all the includes of a
        config together look at MAX_LISTED names at most and gather MAX_FILES."""
        shown = f"include {one_line(pattern)}"
        found: list[Path] = []

        def expand(fd: int, where: Path, parts: list[str]) -> None:
            part, later = parts[0], parts[1:]
            if part in ("", "."):
                if later:
                    expand(fd, where, later)
                return
            if part == "..":
                if self.confine is not None:
                    raise _Refused("`..` after a wildcard")
                names = [".."]
            else:
                names = []
                with os.scandir(fd) as entries:
                    for entry in entries:
                        self.listed += 1
                        if self.listed > MAX_LISTED:
                            raise _Refused(f"the includes look at more than {MAX_LISTED:,} names")
                        hidden = entry.name.startswith(".") and not part.startswith(".")
                        if not hidden and fnmatch.fnmatchcase(entry.name, part):
                            names.append(entry.name)
            for name in sorted(names):
                if not later:
                    found.append(where / name)
                    self.matched += 1
                    if self.matched > MAX_FILES:
                        raise _Refused(f"the includes match more than {MAX_FILES:,} files")
                    continue
                try:
                    sub = os.open(name, _SUBDIRECTORY, dir_fd=fd)
                except OSError:
                    continue  # not a directory, or a link: nothing is listed beyond it
                try:
                    expand(sub, where / name, later)
                finally:
                    os.close(sub)

        try:
            fd = os.open(start, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            self.errors.append(f"{shown}: {exc.strerror or exc}")
            return []
        try:
            opened = Path(os.readlink(f"/proc/self/fd/{fd}"))
            if self.confine is not None and not inside(self.confine, opened):
                raise _Refused(f"outside {self.confine}")
            expand(fd, start, rest)
        except _Refused as exc:
            self.errors.append(f"{shown}: {exc}; not read")
            return []
        except OSError as exc:
            self.errors.append(f"{shown}: {exc.strerror or exc}")
            return []
        finally:
            os.close(fd)
        return found

    def read(self, path: Path, inside_server: bool, depth: int = 0) -> None:
        if depth > MAX_INCLUDE_DEPTH:
            return
        if len(self.seen) >= MAX_FILES:
            self.errors.append(f"{self._shown(path)}: more than {MAX_FILES:,} files; not read")
            return
        copy = self._bounded_copy(path)
        if copy is None:
            return
        # crossplane opens a file by name: it gets the copy's, whose bytes cannot change
        copied = f"/proc/self/fd/{copy}"
        try:
            payload = crossplane.parse(
                copied, catch_errors=True, single=True, comments=False, check_ctx=False
            )
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            self.errors.append(f"{path}: {str(exc).replace(copied, str(path))}")
            return
        finally:
            os.close(copy)
        for entry in payload.get("config", []):
            entry["file"] = str(path)
            for problem in entry.get("errors", []):
                line = problem.get("line")
                shown = self._shown(Path(entry["file"]))
                where = f"{shown}:{line}" if line else shown
                message = str(problem.get("error") or "")
                message = message.split(f" in {copied}")[0]  # crossplane repeats the place
                self.errors.append(f"{where}: {message.strip() or 'cannot parse'}")
            self._walk(entry.get("parsed", []), self._shown(path), inside_server, depth)

    def _bounded_copy(self, path: Path) -> int | None:
        """A sealed in-memory copy of the file (a memfd), read like every other input
        (open_regular_file: found O_PATH, which runs no driver code, so a device is never
        opened; a regular file, inside `confine` as that descriptor resolves), not read
        before, within what is left of MAX_CONFIG_BYTES and MAX_DIRECTIVES for all the
        files. None with the reason in `errors`."""
        shown = self._shown(path)
        confine = self.confine
        allowed = None if confine is None else (lambda real: inside(confine, real))
        try:
            fd = open_regular_file(path, allowed)
        except InputError as exc:
            self.errors.append(f"{shown}: {exc.message}")
            return None
        try:
            info = os.fstat(fd)
            if (info.st_dev, info.st_ino) in self.seen:
                return None  # read already (an include cycle, or one file by many names)
            self.seen.add((info.st_dev, info.st_ino))
            data = self._read(fd, shown)
        except OSError as exc:
            self.errors.append(f"{shown}: {exc.strerror or exc}")
            return None
        finally:
            os.close(fd)
        if data is None:
            return None
        copy = os.memfd_create("nginx.conf", os.MFD_CLOEXEC)
        view = memoryview(data)
        while view:
            view = view[os.write(copy, view) :]
        os.lseek(copy, 0, os.SEEK_SET)
        return copy

    def _read(self, fd: int, shown: str) -> bytes | None:
        """The file's bytes, within the budgets left."""
        left = MAX_CONFIG_BYTES - self.bytes
        chunks: list[bytes] = []
        size = 0
        while size <= left and (chunk := os.read(fd, min(1 << 20, left + 1 - size))):
            chunks.append(chunk)
            size += len(chunk)
        if size > left:
            self.errors.append(f"{shown}: the configuration passes {MAX_CONFIG_BYTES:,} bytes")
            return None
        data = b"".join(chunks)
        directives = data.count(b";") + data.count(b"{")
        if self.directives + directives > MAX_DIRECTIVES:
            self.errors.append(f"{shown}: the configuration passes {MAX_DIRECTIVES:,} directives")
            return None
        self.bytes += size
        self.directives += directives
        return data

    def _shown(self, path: Path) -> str:
        """The path as it is on the host: inside a copied tree, relative to its root."""
        if self.root is not None:
            try:
                return "/" + str(path.resolve().relative_to(self.root.resolve()))
            except ValueError:
                pass
        return str(path)

    def _walk(
        self, directives: list[dict[str, Any]], file: str, inside_server: bool, depth: int
    ) -> None:
        for directive in directives:
            name, args = directive.get("directive"), directive.get("args", [])
            if name == "listen" and inside_server and args:
                line = directive.get("line", 1)
                backlog, problem = _backlog(args)
                if problem is not None:
                    self.errors.append(f"{file}:{line}: {problem}")
                try:
                    listen = {
                        "address": socket_address(args[0]),
                        "backlog": backlog,
                        "file": file,
                        "line": line,
                        "text": " ".join(["listen", *args]),
                    }
                    self.found.append(validate(Listen, listen))
                except InputError:
                    self.errors.append(f"{file}:{line}: a listen directive that is not plain text")
            elif name == "include" and args:
                for included in self._resolve(args[0]):
                    self.read(included, inside_server, depth + 1)
            block = directive.get("block")
            if block is not None:
                self._walk(block, file, inside_server or name == "server", depth)


def _group(found: list[Listen]) -> list[Listen]:
    """One Listen per socket: the directive that sets backlog=, else the one that carries
    other socket options (default_server, reuseport, …), else the first."""
    by_socket: dict[str, list[Listen]] = {}
    for listen in found:
        by_socket.setdefault(listen.address, []).append(listen)
    sockets: list[Listen] = []
    for group in by_socket.values():
        chosen = next((d for d in group if d.backlog is not None), None)
        chosen = chosen or next((d for d in group if len(d.text.split()) > 2), group[0])
        sockets.append(chosen)
    return sorted(sockets, key=lambda d: (d.file, d.line, d.address))


def read_nginx(config: Path, root: Path | None = None, confine: Path | None = None) -> NginxListens:
    """Parse the main config and everything it includes; never raises. `root` stands for `/`
    when following absolute include paths (a copied tree read with `facts --root`); with
    `confine`, no file outside that directory is read (a config named by a facts file)."""
    if confine is not None and not inside(confine, config):
        return NginxListens([], as_fact(f"{config}: outside {confine}; not read"))
    reader = _Reader(config, root, confine)
    try:
        reader.read(config, inside_server=False)
    except RecursionError:  # blocks nested a thousand deep: crossplane parses them, we stop
        reader.errors.append(f"{config}: blocks nested too deeply; not all read")
    errors = reader.errors
    error = "; ".join(errors[:3]) + (f" (and {len(errors) - 3} more)" if len(errors) > 3 else "")
    return NginxListens(_group(reader.found), as_fact(error) or None)
