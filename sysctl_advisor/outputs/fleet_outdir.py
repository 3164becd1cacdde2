"""The fleet's output directory: whole runs in, one atomic swap, nothing of the user's lost.

OUTDIR is the advisor's: it is created by the first run, marked with MARKER, and holds
exactly the files a run wrote (the marker lists them). A run refuses an OUTDIR that is not
empty and not such an output, and refuses to replace one that gained files the advisor did
not write (a user's own host_vars, say): it never deletes what it did not write.

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
import ctypes.util
import errno
import fcntl
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from sysctl_advisor.model.errors import InputError

MARKER = ".sysctl-advisor-fleet"
MARKER_HEADER = "sysctl-advisor fleet output: every file listed here was written by the advisor\n"
STAGING_MARK = "sysctl-advisor fleet staging directory: the next run removes it\n"
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _listed(outdir: Path) -> set[str] | None:
    """The files the marker says a run wrote (relative paths), None if there is no marker."""
    marker = outdir / MARKER
    if not marker.is_file() or marker.is_symlink():
        return None
    lines = marker.read_text(encoding="utf-8", errors="replace").splitlines()
    if not lines or lines[0] + "\n" != MARKER_HEADER:
        return None
    return {line for line in lines[1:] if line}


def _present(outdir: Path) -> tuple[set[str], set[str]]:
    """Files (and links) and directories under OUTDIR, as relative paths."""
    files: set[str] = set()
    directories: set[str] = set()
    for directory, dirs, names in os.walk(outdir):
        relative = Path(directory).relative_to(outdir)

        def path(name: str, relative: Path = relative) -> str:
            return str(relative / name) if str(relative) != "." else name

        for name in dirs:
            if (Path(directory) / name).is_symlink():
                files.add(path(name))
            else:
                directories.add(path(name))
        files.update(path(name) for name in names)
    return files, directories


def _parents(paths: set[str]) -> set[str]:
    """The directories a run's files imply (host_files, host_vars)."""
    return {str(parent) for p in paths for parent in Path(p).parents if str(parent) != "."}


def check_outdir(outdir: Path) -> None:
    """Refuse an OUTDIR that holds anything the advisor did not write, empty directories
    included."""
    if outdir.is_symlink() or (outdir.exists() and not outdir.is_dir()):
        raise InputError("exists and is not a directory", path=outdir, field="--out")
    if not outdir.exists():
        return
    files, directories = _present(outdir)
    if not files and not directories:
        return
    listed = _listed(outdir)
    if listed is None:
        raise InputError(
            "is not empty and is not a previous fleet output (no "
            f"{MARKER}); give a new or empty directory: the advisor never deletes files it "
            "did not write",
            path=outdir,
            field="--out",
        )
    foreign = sorted(
        (files - listed - {MARKER}) | {f"{d}/" for d in directories - _parents(listed)}
    )
    if foreign:
        more = f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
        raise InputError(
            f"holds files the advisor did not write ({', '.join(foreign[:3])}{more}); move them "
            "out or choose another directory",
            path=outdir,
            field="--out",
        )


@contextlib.contextmanager
def locked(outdir: Path) -> Iterator[None]:
    """One run at a time per OUTDIR: an flock on `.NAME.sysctl-advisor.lock` beside it."""
    parent = outdir.parent if str(outdir.parent) else Path(".")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(
            parent / f".{outdir.name}.sysctl-advisor.lock",
            os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
            0o600,
        )
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", path=parent, field="--out") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(
                "another fleet run is writing this directory; try again when it has finished",
                path=outdir,
                field="--out",
            ) from None
        yield
    finally:
        os.close(fd)


def staging_directory(outdir: Path) -> Path:
    """A fresh directory beside OUTDIR (same filesystem, so the swap is a rename); leftovers of
    killed runs (marked as ours) are removed first."""
    parent = outdir.parent if str(outdir.parent) else Path(".")
    prefix = f".{outdir.name}.staging-"
    for stale in parent.glob(prefix + "*"):
        if _is_our_staging(stale):
            shutil.rmtree(stale, ignore_errors=True)
        elif _is_ours(stale) and _listed(stale) is not None:
            # a run killed while publishing: its complete output (mark already gone), or the
            # previous run it had swapped out; only what the marker lists is removed
            _remove_run(stale)
    _restore_after_crash(outdir)
    try:
        path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        _take_mode(path, outdir)
        (path / ".staging").write_text(STAGING_MARK)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", path=parent, field="--out") from None
    return path


def _is_ours(path: Path) -> bool:
    """A real directory (not a link) that belongs to this user."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()


def _is_our_staging(path: Path) -> bool:
    """A staging directory a killed run of this user left: a real directory owned by us whose
    `.staging` is a regular file of ours holding the mark (a user's own `.out.staging-x`
    directory is never taken for one)."""
    try:
        info = os.lstat(path)
        mark = os.lstat(path / ".staging")
    except OSError:
        return False
    ours = info.st_uid == mark.st_uid == os.geteuid()
    if not (ours and stat.S_ISDIR(info.st_mode) and stat.S_ISREG(mark.st_mode)):
        return False
    try:
        return (path / ".staging").read_text(encoding="utf-8", errors="replace") == STAGING_MARK
    except OSError:
        return False


def _take_mode(staging: Path, outdir: Path) -> None:
    """Give the staging directory (mkdtemp makes it 0700) the mode OUTDIR has now, and its
    group with a shared group's setgid bit, so files written into it get that group too; a new
    OUTDIR, or one that is not the user's own directory, gets the mode the umask gives a new
    directory. As root the output is root's: writable by no one else (as with `-o`). Set on
    the open directory, never by name."""
    umask = os.umask(0)
    os.umask(umask)
    fd = os.open(staging, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        try:
            current: os.stat_result | None = os.lstat(outdir)
        except FileNotFoundError:
            current = None
        own = (
            current is not None and stat.S_ISDIR(current.st_mode) and current.st_uid == os.geteuid()
        )
        mode = stat.S_IMODE(current.st_mode) & 0o3777 if own and current else 0o777 & ~umask
        if own and current and current.st_gid != os.fstat(fd).st_gid:
            try:
                os.fchown(fd, -1, current.st_gid)
            except PermissionError:
                mode &= ~stat.S_ISGID
        if os.geteuid() == 0:
            mode &= 0o2755
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two directories atomically (renameat2 RENAME_EXCHANGE); False if unsupported."""
    name = ctypes.util.find_library("c")
    libc = ctypes.CDLL(name, use_errno=True) if name else None
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    result = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def _retired(outdir: Path) -> Path:
    return outdir.parent / f".{outdir.name}.retired"


def _restore_after_crash(outdir: Path) -> None:
    """The two-rename fallback was interrupted between its renames: put OUTDIR back."""
    retired = _retired(outdir)
    if not outdir.exists() and retired.is_dir() and _listed(retired) is not None:
        retired.rename(outdir)


def publish(staging: Path, outdir: Path, written: list[str]) -> Path | None:
    """Make `staging` the new OUTDIR in one step and remove the previous run's files. Returns
    where the previous run was kept instead, when something the advisor did not write appeared
    in it while this run was working (that is never deleted)."""
    (staging / ".staging").unlink()
    (staging / MARKER).write_text(MARKER_HEADER + "".join(f"{p}\n" for p in sorted(written)))
    os.sync()  # contents on disk before the rename that publishes them
    try:
        if not outdir.exists():
            staging.rename(outdir)
            return None
        check_outdir(outdir)  # files may have appeared since the run started
        if _exchange(staging, outdir):
            previous = staging  # after the exchange it holds the previous run
        else:
            previous = _retired(outdir)
            outdir.rename(previous)
            staging.rename(outdir)
    except OSError as exc:
        raise InputError(f"cannot publish: {exc.strerror}", path=outdir, field="--out") from None
    return _remove_run(previous)


def _remove_run(previous: Path) -> Path | None:
    """Delete what the marker lists, then the directories that held it: only what a run
    wrote, and never through a link (a listed `host_files/x` where host_files has become a
    link to /etc deletes nothing). None when nothing else was there; else the directory, left
    in place."""
    listed = _listed(previous)
    if listed is None:  # the empty directory the user gave as --out: nothing to keep
        try:
            os.rmdir(previous)
        except OSError:
            return previous
        return None
    top = os.open(previous, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        for relative in [*sorted(listed), MARKER]:
            _unlink_below(top, Path(relative).parts, directory=False)
        for relative in sorted(_parents(listed), key=lambda d: -d.count("/")):
            _unlink_below(top, Path(relative).parts, directory=True)
    finally:
        os.close(top)
    try:
        os.rmdir(previous)
    except OSError:
        return previous
    return None


def _unlink_below(top: int, parts: tuple[str, ...], directory: bool) -> None:
    """Remove top/parts (a file, or an empty directory), opening each directory on the way
    without following links; anything odd (.., a link, a missing part) removes nothing."""
    if not parts or any(p in ("", ".", "..") or "/" in p for p in parts):
        return
    fds: list[int] = []
    try:
        at = top
        for name in parts[:-1]:
            at = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=at)
            fds.append(at)
        if directory:
            os.rmdir(parts[-1], dir_fd=at)
        else:
            os.unlink(parts[-1], dir_fd=at)
    except OSError:
        pass
    finally:
        for fd in fds:
            os.close(fd)


def discard(staging: Path) -> None:
    """Remove a staging directory this run made (it carries the `.staging` mark)."""
    if staging.is_dir() and (staging / ".staging").is_file():
        shutil.rmtree(staging, ignore_errors=True)
