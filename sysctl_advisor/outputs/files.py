"""Writing output files: atomically, never through a link, never over a device."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from sysctl_advisor.model.errors import InputError


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(path: Path, content: str) -> None:
    """Write a file so that readers see the old or the new content, never a half-written one.

    The new file is created by mkstemp (0600, a fresh name) and given its final mode through
    its own descriptor (fchmod), never by name: the mode of the file it replaces without the
    setuid, setgid and sticky bits, or 0666 less the umask for a new file. Root's output is
    root's: owned by root and writable by no one else, whatever the replaced file allowed (a
    file planted as `nobody`, mode 0777, must not make what root applies writable by
    `nobody`). The file and its directory are fsynced. A target
    that is a symlink, a device, a FIFO or a directory is refused, not replaced (write the
    real path; `-` is standard output).
    """
    directory = path.parent if str(path.parent) else Path(".")
    try:
        existing: os.stat_result | None = os.lstat(path)
    except FileNotFoundError:
        existing = None
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", path=path) from None
    if existing is not None:
        if stat.S_ISLNK(existing.st_mode):
            raise InputError(
                "is a symbolic link; give the file it points to (links are not followed when "
                "writing)",
                path=path,
            )
        if not stat.S_ISREG(existing.st_mode):
            raise InputError(
                "is not a regular file (a device, FIFO or directory); use - for standard output",
                path=path,
            )
        mode = stat.S_IMODE(existing.st_mode) & 0o777
    else:
        mode = 0o666 & ~_umask()
    if os.geteuid() == 0:
        mode &= 0o755
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", path=path) from None
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        _fsync_directory(directory)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(f"cannot write: {exc.strerror}", path=path) from None


def _fsync_directory(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
