"""Directories the advisor writes into (its cache, an `-o` target's), opened so that no one but
root and the user running it can redirect what is written there.

The path is opened from `/` one component at a time with O_NOFOLLOW|O_DIRECTORY, each
directory checked on its descriptor: it belongs to root or to the user, and no one else may
write it unless it has the sticky bit (/tmp), as OpenSSH's StrictModes asks of the way to a
key. A link on the way is followed only when it lies in a directory that passed and belongs to
root or to the user (so no one else chose where it points; /var/run -> /run is fine), and its
target is walked the same way. A directory another user owns or may rename entries in, or a
link another user made, is refused with the reason. What is then done in the directory goes
through the descriptor returned.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@contextlib.contextmanager
def beneath(top: int, directories: Sequence[str]) -> Iterator[int]:
    """The directory `directories` name below the one open at `top`, opened one component at a
    time without following a link (OSError where one is a link, missing or no directory), its
    descriptor closed on leaving, with every one opened on the way."""
    opened: list[int] = []
    try:
        at = top
        for name in directories:
            at = os.open(name, _DIRECTORY, dir_fd=at)
            opened.append(at)
        yield at
    finally:
        for fd in opened:
            os.close(fd)


class UntrustedDirectory(Exception):
    """Why a directory (or the way to it) is not one to write into."""


MAX_LINKS = 40  # as the kernel's path walk


def open_directory(path: Path, create: bool = False) -> tuple[int, Path]:
    """(descriptor, path walked) of the directory, opened and checked as the module says;
    missing components are created (0700) when `create`. UntrustedDirectory says why not;
    the caller closes the descriptor."""
    me = os.geteuid()
    pending = list(reversed(os.path.abspath(path).split("/")))  # the next component last
    stack: list[tuple[int, Path]] = [(os.open("/", _DIRECTORY), Path("/"))]
    links = 0
    current = Path("/")
    try:
        _check(*stack[-1], me)
        while pending:
            name = pending.pop()
            fd, where = stack[-1]
            current = where / name
            if name in ("", "."):
                continue
            if name == "..":
                if len(stack) > 1:
                    os.close(stack.pop()[0])
                continue
            info = _entry(fd, name, create)
            if stat.S_ISLNK(info.st_mode):
                if info.st_uid not in (0, me):
                    raise UntrustedDirectory(f"{where / name} is a link another user made")
                links += 1
                if links > MAX_LINKS:
                    raise UntrustedDirectory(f"{path}: more than {MAX_LINKS} links on the way")
                target = os.readlink(name, dir_fd=fd)
                if target.startswith("/"):
                    while len(stack) > 1:
                        os.close(stack.pop()[0])
                pending.extend(reversed(target.split("/")))
                continue
            stack.append((os.open(name, _DIRECTORY, dir_fd=fd), where / name))
            _check(*stack[-1], me)
        return stack.pop()
    except OSError as exc:
        raise UntrustedDirectory(f"{current}: {exc.strerror or exc}") from None
    finally:
        for fd, _ in stack:
            os.close(fd)


def _check(fd: int, where: Path, me: int) -> None:
    info = os.fstat(fd)
    if info.st_uid not in (0, me):
        raise UntrustedDirectory(f"{where} belongs to another user (uid {info.st_uid})")
    if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
        raise UntrustedDirectory(f"{where} is writable by others and not sticky")


def _entry(parent: int, name: str, create: bool) -> os.stat_result:
    """lstat of `name` in the directory open at `parent`; a missing directory is created
    (0700) when asked."""
    try:
        return os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        if not create:
            raise
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o700, dir_fd=parent)
        return os.stat(name, dir_fd=parent, follow_symlinks=False)


def replace_file(
    directory: int, name: str, data: bytes, mode: int = 0o600, durable: bool = False
) -> None:
    """Replace `name` in the directory open at `directory` atomically: the bytes go to a new
    file of a random name (`.NAME.XXXXXXXX.tmp`, created O_EXCL|O_NOFOLLOW: never through a
    link, never over a file that exists), which is then renamed over `name`; with `durable`,
    the file is synced before the rename and the directory after it. OSError when it fails,
    with the temporary file removed."""
    temporary = f".{name}.{secrets.token_hex(4)}.tmp"
    fd = os.open(
        temporary,
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
        0o600,
        dir_fd=directory,
    )
    try:
        with os.fdopen(fd, "wb") as handle:
            if mode != 0o600:
                os.fchmod(handle.fileno(), mode)
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=directory)
        raise
    if durable:
        with contextlib.suppress(OSError):
            os.fsync(directory)


def check_directory(fd: int, where: Path) -> None:
    """UntrustedDirectory when the directory open at `fd` belongs to another user, or others
    may write it without the sticky bit (the test open_directory applies on the way)."""
    _check(fd, where, os.geteuid())


_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def read_at(directory: int, name: str, limit: int) -> bytes | None:
    """The bytes of the regular file `name` in the directory open at `directory` (never
    through a link, never blocking on a FIFO or device), None when there is none, it is not a
    regular file, or it is larger than `limit`."""
    try:
        fd = os.open(name, _READ, dir_fd=directory)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        data = os.read(fd, limit + 1)
        return data if len(data) <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)


class Directory:
    """A directory open by descriptor, and what is done in it: every name is a single
    component opened relative to the descriptor, never through a link. Subdirectories made
    with `mkdir` stay open too, so `write("host_files/a.conf", …)` walks no path by name."""

    def __init__(self, fd: int, path: Path) -> None:
        self.fd = fd
        self.path = path  # for messages only; never opened by name
        self._children: dict[str, Directory] = {}

    @classmethod
    def at(cls, path: Path) -> Directory:
        """An existing directory, opened and checked from `/` (open_directory)."""
        return cls(*open_directory(path))

    def mkdir(self, name: str) -> Directory:
        """A new subdirectory (0777 less the umask, 0755 at most as root), kept open."""
        os.mkdir(name, 0o755 if os.geteuid() == 0 else 0o777, dir_fd=self.fd)
        child = Directory(os.open(name, _DIRECTORY, dir_fd=self.fd), self.path / name)
        self._children[name] = child
        return child

    def _place(self, relative: str) -> tuple[int, str]:
        *parents, name = relative.split("/")
        at = self
        for part in parents:
            at = at._children[part]
        return at.fd, name

    def open(self, relative: str, mode: str = "r") -> IO[str]:
        """A text file here (in this directory or one made with `mkdir`): "r" to read, "w" to
        create or truncate (0666 less the umask, 0644 at most as root), never through a
        link."""
        directory, name = self._place(relative)
        if mode == "r":
            flags = _READ
        else:
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(name, flags, 0o644 if os.geteuid() == 0 else 0o666, dir_fd=directory)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise OSError(errno.EINVAL, "not a regular file", relative)
        return open(fd, mode, encoding="utf-8", newline="\n" if mode == "w" else None)

    def write(self, relative: str, text: str) -> None:
        with self.open(relative, "w") as handle:
            handle.write(text)

    def unlink(self, relative: str) -> None:
        directory, name = self._place(relative)
        os.unlink(name, dir_fd=directory)

    def close(self) -> None:
        for child in self._children.values():
            child.close()
        self._children.clear()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
