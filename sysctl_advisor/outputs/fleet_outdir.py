"""The fleet's output directory: whole runs in, one atomic swap, nothing of the user's lost.

OUTDIR is the advisor's: it is created by the first run, marked with MARKER, and holds
exactly the files a run wrote (the marker lists them). A run refuses an OUTDIR that is not
empty and not such an output (looking at its top level only: `--out /` is refused at once),
and refuses to replace one that gained files the advisor did not write (a user's own
host_vars, say): it never deletes what it did not write.

OUTDIR's parent is opened once, from `/`, as `-o`'s directory is (model/directories.py: no
directory another user owns or may rename entries in, no link another user made on the way),
and everything after goes through descriptors: OUTDIR and the previous run are opened and
walked by descriptor without following links, the staging directory is made and filled by
descriptor, and the swap is a renameat2 between names in the parent's descriptor. No name is
looked up twice by path, so no one can swap a directory for a link between a check and a
write.

A run builds its output in a staging directory beside OUTDIR and publishes it with one
renameat2(RENAME_EXCHANGE): readers, and a run killed at any moment, see either the previous
run or the new one, never a mix. (Where the kernel or filesystem lacks the exchange, two
renames are used; a crash between them leaves the new run beside a missing OUTDIR, which the
next run puts back.) Concurrent runs on one OUTDIR are serialized by an flock on a lock file
beside it; the second says so and stops.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import re
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

from sysctl_advisor.model.directories import (
    Directory,
    UntrustedDirectory,
    beneath,
    open_directory,
    read_at,
)
from sysctl_advisor.model.errors import InputError

MARKER = ".sysctl-advisor-fleet"
MARKER_HEADER = "sysctl-advisor fleet output: every file listed here was written by the advisor\n"
STAGING_MARK = "sysctl-advisor fleet staging directory: the next run removes it\n"
# The list of a run's files: ~35 bytes for each of its 3 or 4 files a host, so 100,000 hosts
# in a few MB; a larger marker is no marker.
MAX_MARKER = 16 * 1024 * 1024
# What a run writes (commands/fleet.py): its files at the top, and one file per host or pool in
# its four directories. A marker listing anything else is not a run's.
_RUN_FILE = re.compile(
    r"(playbook\.yml|summary\.json|summary\.md"
    r"|(host_files|host_undo)/[A-Za-z0-9_][A-Za-z0-9_.:@+-]{0,249}\.conf"
    r"|host_vars/[A-Za-z0-9_][A-Za-z0-9_.:@+-]{0,249}\.yml"
    r"|node_pools/[A-Za-z0-9_][A-Za-z0-9_.:@+-]{0,249}\.[a-z]{3,4})\Z"
)
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2


def _listed(directory: int, strict: bool = True) -> set[str] | None:
    """The files the marker in the directory open at `directory` says a run wrote (relative
    paths), None if there is no marker, or, when `strict`, if it lists anything a run never
    writes (a doctored marker; without `strict` such lines are left out)."""
    data = read_at(directory, MARKER, MAX_MARKER)
    if data is None:
        return None
    lines = data.decode("utf-8", errors="replace").splitlines()
    if not lines or lines[0] + "\n" != MARKER_HEADER:
        return None
    listed = {line for line in lines[1:] if line}
    runs = {line for line in listed if _RUN_FILE.match(line)}
    if strict and runs != listed:
        return None
    return runs


def _parents(paths: set[str]) -> set[str]:
    """The directories a run's files imply (host_files, host_vars)."""
    return {str(parent) for p in paths for parent in Path(p).parents if str(parent) != "."}


def _foreign(directory: int, listed: set[str]) -> list[str]:
    """What is in the run open at `directory` that its marker does not list, looking only
    into the directories the listing implies (by descriptor, never through a link)."""
    children: dict[str, set[str]] = {}
    for relative in listed | _parents(listed) | {MARKER}:
        parent, _, name = relative.rpartition("/")
        children.setdefault(parent, set()).add(name)
    foreign: list[str] = []

    def look(fd: int, relative: str) -> None:
        expected = children.get(relative, set())
        for name in sorted(os.listdir(fd)):
            path = f"{relative}/{name}" if relative else name
            is_directory = stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
            if path in children and is_directory:  # a directory the listing implies
                below = os.open(name, _DIRECTORY, dir_fd=fd)
                try:
                    look(below, path)
                finally:
                    os.close(below)
            elif name not in expected or path in children or is_directory:
                foreign.append(f"{path}/" if is_directory else path)

    look(directory, "")
    return foreign


def _open_below(parent: int, name: str) -> int | None:
    """The directory `name` in `parent`, opened without following a link; None if absent."""
    try:
        return os.open(name, _DIRECTORY, dir_fd=parent)
    except FileNotFoundError:
        return None


def _libc() -> ctypes.CDLL:
    """The C library the interpreter runs with (never looked for: ctypes.util.find_library
    runs gcc and ld from the caller's PATH where ldconfig lists no libc)."""
    return ctypes.CDLL(None, use_errno=True)


def _syncfs(fd: int) -> None:
    """The output's filesystem on disk (syncfs), not every filesystem of the host."""
    call = getattr(_libc(), "syncfs", None)
    if call is None or call(fd) != 0:
        os.sync()


def _renameat2(parent: int, old: str, new: str, flags: int) -> bool:
    """renameat2 between two names in one directory; False where the C library, kernel or
    filesystem lacks it."""
    call = getattr(_libc(), "renameat2", None)
    if call is None:
        return False
    if call(parent, os.fsencode(old), parent, os.fsencode(new), flags) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), new)


class Staging(Directory):
    """A run's output being built: a directory of a fresh name beside OUTDIR (same
    filesystem, so the swap is a rename), made and filled by descriptor."""

    def __init__(self, fd: int, path: Path, name: str) -> None:
        super().__init__(fd, path)
        self.name = name


class OutDir:
    """`fleet --out DIR`: DIR's parent opened once (as `-o` opens its directory), and every
    step after it by descriptor. Use as a context manager; `close` releases the parent."""

    def __init__(self, outdir: Path) -> None:
        absolute = Path(os.path.abspath(outdir))
        self.path = outdir
        self.name = absolute.name
        if not self.name:
            raise InputError(
                "is not a directory the advisor can fill: give a new or empty directory",
                path=outdir,
                field="--out",
            )
        try:
            self.parent, _ = open_directory(absolute.parent, create=True)
        except UntrustedDirectory as exc:
            raise InputError(f"cannot write there: {exc}", path=outdir, field="--out") from None

    def __enter__(self) -> OutDir:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        if self.parent >= 0:
            os.close(self.parent)
            self.parent = -1

    def _error(self, message: str) -> InputError:
        return InputError(message, path=self.path, field="--out")

    def _beside(self, name: str) -> Path:
        return self.path.parent / name

    def check(self) -> None:
        """Refuse an OUTDIR that is not a directory, that another user owns or may write, or
        that holds anything the advisor did not write, empty directories included: its top
        level first (no marker and not empty is refused without looking further), then only
        the directories its marker implies."""
        try:
            fd = _open_below(self.parent, self.name)
        except OSError:
            raise self._error("exists and is not a directory (or is a link)") from None
        if fd is None:
            return
        try:
            if not os.listdir(fd):
                return
            owner = os.fstat(fd).st_uid
            if owner not in (0, os.geteuid()):
                raise self._error(
                    f"belongs to another user (uid {owner}) and is not empty; give a new or "
                    "empty directory"
                )
            listed = _listed(fd)
            if listed is None:
                raise self._error(
                    f"is not empty and is not a previous fleet output (no {MARKER}); give a new "
                    "or empty directory: the advisor never deletes files it did not write"
                )
            foreign = _foreign(fd, listed)
        except OSError as exc:  # changed while it was read: a link or a file swapped in
            raise self._error(f"cannot read: {exc.strerror}") from None
        finally:
            os.close(fd)
        if foreign:
            more = f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
            raise self._error(
                f"holds files the advisor did not write ({', '.join(foreign[:3])}{more}); move "
                "them out or choose another directory"
            )

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """One run at a time per OUTDIR: an flock on `.NAME.sysctl-advisor.lock` beside it, a
        regular file of this user's (one planted by someone else is refused)."""
        name = f".{self.name}.sysctl-advisor.lock"
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
        try:
            fd = os.open(name, flags, 0o600, dir_fd=self.parent)
        except OSError as exc:
            raise self._error(f"cannot write {name}: {exc.strerror}") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
                raise self._error(
                    f"{name} beside it is not a lock file of yours; remove it and run again"
                )
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise self._error(
                    "another fleet run is writing this directory; try again when it has finished"
                ) from None
            yield
        finally:
            os.close(fd)

    def staging(self) -> Staging:
        """A fresh staging directory beside OUTDIR; leftovers of killed runs (marked as ours)
        are removed first, and a two-rename publish a crash interrupted is completed."""
        prefix = f".{self.name}.staging-"
        for entry in os.scandir(self.parent):
            if entry.name.startswith(prefix):
                self._remove_leftover(entry.name)
        self._restore_after_crash()
        if self._exists(self.name):  # a two-rename publish killed after both renames
            self._remove_leftover(self._retired())
        name = prefix + secrets.token_hex(4)
        try:
            os.mkdir(name, 0o700, dir_fd=self.parent)
        except OSError as exc:
            raise self._error(f"cannot write: {exc.strerror}") from None
        try:
            staging = Staging(
                os.open(name, _DIRECTORY, dir_fd=self.parent), self._beside(name), name
            )
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.rmdir(name, dir_fd=self.parent)
            raise self._error(f"cannot write: {exc.strerror}") from None
        try:
            self._take_mode(staging.fd, final=False)
            staging.write(".staging", STAGING_MARK)
        except OSError as exc:
            self.discard(staging, marked=False)
            raise self._error(f"cannot write: {exc.strerror}") from None
        return staging

    def _remove_leftover(self, name: str) -> None:
        """A staging directory a killed run of this user left (a real directory of ours whose
        `.staging` is a regular file holding the mark: a user's own `.out.staging-x` is never
        taken for one) goes whole; a run killed while publishing (its complete output, or the
        previous run it had swapped out) loses only what its marker lists."""
        try:
            fd = _open_below(self.parent, name)
        except OSError:
            return
        if fd is None:
            return
        try:
            if os.fstat(fd).st_uid != os.geteuid():
                return
            if read_at(fd, ".staging", len(STAGING_MARK)) == STAGING_MARK.encode():
                _remove_tree(fd)
                with contextlib.suppress(OSError):
                    os.rmdir(name, dir_fd=self.parent)
            elif _listed(fd, strict=False) is not None:
                self._remove_run(name, fd)
        finally:
            os.close(fd)

    def _take_mode(self, staging: int, final: bool) -> None:
        """Give the staging directory (made 0700) the mode OUTDIR has now, and its group with
        a shared group's setgid bit, so files written into it get that group too; a new
        OUTDIR, or one that is not the user's own directory, gets the mode the umask gives a
        new directory. As root the output is root's: writable by no one else (as with `-o`).
        Until the run is `final` only the group and its setgid bit are taken: no one else may
        enter the staging directory while it is filled."""
        umask = os.umask(0)
        os.umask(umask)
        try:
            current: os.stat_result | None = os.stat(
                self.name, dir_fd=self.parent, follow_symlinks=False
            )
        except FileNotFoundError:
            current = None
        own = (
            current is not None and stat.S_ISDIR(current.st_mode) and current.st_uid == os.geteuid()
        )
        mode = stat.S_IMODE(current.st_mode) & 0o3777 if own and current else 0o777 & ~umask
        if own and current and current.st_gid != os.fstat(staging).st_gid:
            try:
                os.fchown(staging, -1, current.st_gid)
            except PermissionError:
                mode &= ~stat.S_ISGID
        if os.geteuid() == 0:
            mode &= 0o2755
        os.fchmod(staging, mode if final else 0o700 | mode & stat.S_ISGID)

    def _retired(self) -> str:
        return f".{self.name}.retired"

    def _exists(self, name: str) -> bool:
        try:
            os.stat(name, dir_fd=self.parent, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return True

    def _restore_after_crash(self) -> None:
        """The two-rename fallback was interrupted between its renames: put OUTDIR back."""
        retired = self._retired()
        if self._exists(self.name):
            return
        try:
            fd = _open_below(self.parent, retired)
        except OSError:
            return
        if fd is None:
            return
        try:
            ours = os.fstat(fd).st_uid == os.geteuid() and _listed(fd) is not None
        finally:
            os.close(fd)
        if ours:
            os.rename(retired, self.name, src_dir_fd=self.parent, dst_dir_fd=self.parent)

    def publish(self, staging: Staging, written: list[str]) -> Path | None:
        """Make `staging` the new OUTDIR in one step and remove the previous run's files.
        Returns where the previous run was kept instead, when something the advisor did not
        write appeared in it while this run was working (that is never deleted)."""
        try:
            staging.write(MARKER, MARKER_HEADER + "".join(f"{p}\n" for p in sorted(written)))
            _syncfs(staging.fd)  # contents on disk before the rename that publishes them
            if self._exists(self.name):
                self.check()  # files may have appeared since the run started
            self._take_mode(staging.fd, final=True)
            staging.unlink(".staging")
            if not self._exists(self.name):
                if not _renameat2(self.parent, staging.name, self.name, _RENAME_NOREPLACE):
                    os.rename(
                        staging.name, self.name, src_dir_fd=self.parent, dst_dir_fd=self.parent
                    )
                return None
            if _renameat2(self.parent, staging.name, self.name, _RENAME_EXCHANGE):
                previous = staging.name  # after the exchange it holds the previous run
            else:
                if os.fstat(self.parent).st_mode & 0o022:
                    # between the two renames OUTDIR's name is free: anyone who may create
                    # names here (a sticky /tmp) could take it
                    raise self._error(
                        "this filesystem cannot swap two directories at once (renameat2 "
                        "RENAME_EXCHANGE) and others may create names beside it; give an "
                        "--out in a directory only you can write"
                    )
                previous = self._retired()
                os.rename(self.name, previous, src_dir_fd=self.parent, dst_dir_fd=self.parent)
                os.rename(staging.name, self.name, src_dir_fd=self.parent, dst_dir_fd=self.parent)
        except OSError as exc:
            raise self._error(f"cannot publish: {exc.strerror}") from None
        return self._remove_run(previous)

    def _remove_run(self, name: str, top: int | None = None) -> Path | None:
        """Delete what the marker of the run at `name` lists, then the directories that held
        it: only what a run wrote, and never through a link (a listed `host_files/x` where
        host_files has become a link to /etc deletes nothing). `top`: the run, already open
        (it is not looked up again). None when nothing else was there; else the directory's
        path, left in place."""
        opened = top is None
        if top is None:
            try:
                top = _open_below(self.parent, name)
            except OSError:
                return self._beside(name)
            if top is None:
                return None
        try:
            listed = _listed(top, strict=False) or set()
            for relative in [*sorted(listed), MARKER]:
                _unlink_below(top, Path(relative).parts, directory=False)
            for relative in sorted(_parents(listed), key=lambda d: -d.count("/")):
                _unlink_below(top, Path(relative).parts, directory=True)
        finally:
            if opened:
                os.close(top)
        try:
            os.rmdir(name, dir_fd=self.parent)
        except OSError:
            return self._beside(name)
        return None

    def discard(self, staging: Staging, marked: bool = True) -> None:
        """Remove a staging directory this run made, while it still carries the `.staging`
        mark (after publishing, its name holds the previous run, which is not for this), or,
        not `marked`, one the mark could not be written to."""
        try:
            mark = read_at(staging.fd, ".staging", len(STAGING_MARK))
            if mark == STAGING_MARK.encode() or not marked:
                _remove_tree(staging.fd)
                same = os.stat(staging.name, dir_fd=self.parent, follow_symlinks=False)
                mine = os.fstat(staging.fd)
                if (same.st_dev, same.st_ino) == (mine.st_dev, mine.st_ino):
                    os.rmdir(staging.name, dir_fd=self.parent)
        except OSError:
            pass
        finally:
            staging.close()


def _remove_tree(fd: int) -> None:
    """Empty the directory open at `fd`, walking by descriptor and never following a link;
    its `.staging` mark goes last, so a run killed meanwhile leaves it for the next run."""
    for top, dirs, files, at in os.fwalk(".", topdown=False, dir_fd=fd):
        for name in files:
            if top == "." and name == ".staging":
                continue
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=at)
        for name in dirs:
            try:
                os.rmdir(name, dir_fd=at)
            except NotADirectoryError:  # a link to a directory: the link goes, not its target
                os.unlink(name, dir_fd=at)
            except OSError:
                pass
    with contextlib.suppress(OSError):
        os.unlink(".staging", dir_fd=fd)


def _unlink_below(top: int, parts: tuple[str, ...], directory: bool) -> None:
    """Remove top/parts (a file, or an empty directory), opening each directory on the way
    without following links; anything odd (.., a link, a missing part) removes nothing."""
    if not parts or any(p in ("", ".", "..") or "/" in p for p in parts):
        return
    with contextlib.suppress(OSError), beneath(top, parts[:-1]) as at:
        if directory:
            os.rmdir(parts[-1], dir_fd=at)
        else:
            os.unlink(parts[-1], dir_fd=at)
