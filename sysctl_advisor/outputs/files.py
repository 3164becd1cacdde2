"""Writing output files: atomically, never through a link, never over a device."""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
from pathlib import Path

from sysctl_advisor.model.directories import UntrustedDirectory, open_directory, replace_file
from sysctl_advisor.model.errors import InputError


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


STALE_SECONDS = 600  # a temporary file this old is a killed run's, not a concurrent one's


def write_atomic(path: Path, content: str) -> None:
    """Write a file so that readers see the old or the new content, never a half-written one
    (OutputFile says how)."""
    target = OutputFile(path)
    try:
        target.write(content)
    finally:
        target.close()


class OutputFile:
    """An output file, made ready before anything is written: its directory opened once, from
    `/` and checked on the way (model/directories.py: no directory another user owns or may
    rename entries in, so root never writes where a user can redirect it), and the target in
    it checked; everything after goes through the directory's descriptor.

    `write` creates the new file there under a fresh random name (O_EXCL, never through a
    link, 0600), gives it its final mode through its own descriptor (fchmod), never by name:
    the mode of the file it replaces without the setuid, setgid and sticky bits, or 0666 less
    the umask for a new file. Root's output is root's: owned by root and writable by no one
    else, whatever the replaced file allowed (a file planted as `nobody`, mode 0777, must not
    make what root applies writable by `nobody`). The file and its directory are fsynced. A
    target that is a symlink, a device, a FIFO or a directory is refused, not replaced (write
    the real path; `-` is standard output), when the OutputFile is made and again when it is
    written. Temporary files of this target that a killed run left (this user's, older than
    STALE_SECONDS) are removed first.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        directory = path.parent if str(path.parent) else Path(".")
        try:
            self._parent, _ = open_directory(directory)
        except UntrustedDirectory as exc:
            raise InputError(f"cannot write there: {exc}", path=path) from None
        try:
            self._mode()
            info = os.fstat(self._parent)
        except BaseException:
            self.close()
            raise
        # The same file however it is named (a link to the directory, `a/../b`).
        self.identity = (info.st_dev, info.st_ino, path.name)

    def existing(self) -> tuple[int, int] | None:
        """The (device, inode) of the file the target names now, None if there is none."""
        try:
            info = os.stat(self.path.name, dir_fd=self._parent, follow_symlinks=False)
        except OSError:
            return None
        return info.st_dev, info.st_ino

    def head(self, size: int = 4096) -> bytes | None:
        """The first bytes of the regular file the target names now (never through a link,
        never blocking), None if there is none."""
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(self.path.name, flags, dir_fd=self._parent)
        except OSError:
            return None
        try:
            return os.read(fd, size) if stat.S_ISREG(os.fstat(fd).st_mode) else None
        finally:
            os.close(fd)

    def close(self) -> None:
        if self._parent >= 0:
            os.close(self._parent)
            self._parent = -1

    def _mode(self) -> int:
        """The new file's mode; InputError for a target that is not a regular file."""
        path = self.path
        try:
            existing = os.stat(path.name, dir_fd=self._parent, follow_symlinks=False)
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
        except OSError as exc:
            raise InputError(f"cannot write: {exc.strerror}", path=path) from None
        else:
            if stat.S_ISLNK(existing.st_mode):
                raise InputError(
                    "is a symbolic link; give the file it points to (links are not followed "
                    "when writing)",
                    path=path,
                )
            if not stat.S_ISREG(existing.st_mode):
                raise InputError(
                    "is not a regular file (a device, FIFO or directory); use - for standard "
                    "output",
                    path=path,
                )
            mode = stat.S_IMODE(existing.st_mode) & 0o777
        return mode & 0o755 if os.geteuid() == 0 else mode

    def write(self, content: str) -> None:
        path, parent, name = self.path, self._parent, self.path.name
        mode = self._mode()
        _remove_stale_temporaries(parent, name)
        try:
            replace_file(parent, name, content.encode("utf-8"), mode, durable=True)
        except OSError as exc:
            raise InputError(f"cannot write: {exc.strerror}", path=path) from None


def _remove_stale_temporaries(parent: int, name: str) -> None:
    """`.NAME.XXXXXXXX.tmp` files a killed write of this target left: regular files of this
    user, older than STALE_SECONDS (a younger one may be a concurrent run's)."""
    pattern = re.compile(rf"\.{re.escape(name)}\.[A-Za-z0-9_]{{8}}\.tmp\Z")
    now = time.time()
    with contextlib.suppress(OSError):
        for entry in os.scandir(parent):
            if not pattern.match(entry.name):
                continue
            with contextlib.suppress(OSError):
                info = entry.stat(follow_symlinks=False)
                if (
                    stat.S_ISREG(info.st_mode)
                    and info.st_uid == os.geteuid()
                    and now - info.st_mtime > STALE_SECONDS
                ):
                    os.unlink(entry.name, dir_fd=parent)
