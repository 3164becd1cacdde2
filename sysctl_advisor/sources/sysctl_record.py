"""The persistent sysctl-write record (`facts --install`, `--uninstall`): the last write of each
sysctl key and how many there were, kept by the kernel in a pinned BPF map from early boot, so
that a later `facts` run reads who wrote each key without a daemon of ours running.

In the pin directory on bpffs (default /sys/fs/bpf/sysctl-advisor): `writes`, the hash map the
program keeps the last write of each key in (sources/bpf/program.py, sink "last"), `drops`,
the count of what it could not keep, and `link`, the BPF link attaching the program to the
cgroup v2 root (Linux 5.7+), or, on a kernel without links, `program`, the program attached
with BPF_PROG_ATTACH and BPF_F_ALLOW_MULTI. Unpinning the link detaches it (its last reference:
kernel/bpf/inode.c `bpf_free_inode`, kernel/bpf/cgroup.c `bpf_cgroup_link_release`); the
pinned program is detached before it is unpinned. The program allows every write. bpffs is
memory: after a reboot the unit (record_unit.py) runs `facts --install --yes` again before
systemd-sysctl.service, with SYSCTL_ADVISOR_RECORD_BOOT=1 in its environment: that run pins and
attaches only, and reads and writes nothing under /etc (not yet checked or remounted then). An
install that finds the unit and its link as it would write them writes neither. The record's
`since` is when its attachment was pinned (the pin's modification time, set when bpffs creates
it).

Directories are opened once from `/` (model/directories.py) and everything is done relative to
their descriptors: a pin is made and opened through /proc/self/fd/N/NAME, N the directory's
descriptor, and only where no link stands at NAME."""

from __future__ import annotations

import errno
import functools
import os
import re
import shutil
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import sysctl_advisor
from sysctl_advisor.model.directories import (
    UntrustedDirectory,
    beneath,
    check_directory,
    open_directory,
    read_at,
)
from sysctl_advisor.sources import mounts, record_unit
from sysctl_advisor.sources.bpf import syscall
from sysctl_advisor.sources.record_unit import Refused
from sysctl_advisor.sources.record_unit import lstat_at as _lstat
from sysctl_advisor.sources.sysctl_last_writes import (
    MAX_KEYS,
    LastWrite,
    create_map,
    read_last_writes,
)
from sysctl_advisor.sources.sysctl_watch import (
    Unavailable,
    cgroup2_mount,
    create_drops_map,
    load,
    offsets,
    read_dropped,
)

__all__ = ["LastWrite", "Places", "Record", "Refused", "Unavailable"]

PIN_DIR = Path("/sys/fs/bpf/sysctl-advisor")
UNIT_DIR = Path("/etc/systemd/system")
WRITES, DROPS, LINK, PROGRAM = "writes", "drops", "link", "program"
PINS = (LINK, PROGRAM, WRITES, DROPS)  # the order uninstall removes them in: detach first
EXECUTABLE = "sysctl-advisor"
NOT_INSTALLED = "the sysctl write record is not installed: nothing to remove"
PACKAGE = Path(sysctl_advisor.__file__).parent  # what the unit's command imports
# the file systems mounted before any unit starts: what the unit runs must be on one of them
BOOT_FILE_SYSTEMS = (Path("/"), Path("/usr"))
SCRIPT_LIMIT = 1 << 20  # the entry script read for its interpreter: pip's are a few hundred bytes
T = TypeVar("T")


@dataclass(frozen=True)
class Places:
    """Where the record lives: the pin directory (on bpffs), the systemd unit directory, the
    cgroup v2 root it watches (None: there is none) and the command the unit runs at boot;
    `boot`: the unit's run at boot (pin and attach only, nothing under the unit directory);
    `boot_file_systems`: the file systems what the unit runs must be on."""

    pin_dir: Path
    unit_dir: Path
    cgroup_root: Path | None
    command: tuple[str, ...]
    boot: bool = False
    boot_file_systems: tuple[Path, ...] = BOOT_FILE_SYSTEMS

    @classmethod
    def default(cls) -> Places:
        boot = os.environ.get(record_unit.BOOT) == "1"
        return cls(PIN_DIR, UNIT_DIR, cgroup2_mount(), default_command(), boot)


def default_command() -> tuple[str, ...]:
    """This installation's executable (beside the running interpreter, else on PATH), with
    `facts --install --yes`; an empty tuple when there is none."""
    beside = Path(sys.executable).parent / EXECUTABLE
    found = str(beside) if beside.is_file() else shutil.which(EXECUTABLE)
    return (os.path.abspath(found), "facts", "--install", "--yes") if found else ()


@dataclass(frozen=True)
class Record:
    since: float | None  # when the program was attached (epoch seconds); None: no longer
    writes: tuple[LastWrite, ...]  # by key: each key's last write and its count
    dropped: int  # writes the record could not keep (a new key past MAX_KEYS)


def _is_bpffs(fd: int) -> bool:
    """Whether the directory open at `fd` is on a bpf filesystem (its device in this mount
    namespace's mountinfo)."""
    return mounts.on(os.fstat(fd).st_dev, "bpf")


def _via(directory: int, name: str) -> str:
    return f"/proc/self/fd/{directory}/{name}"


@dataclass
class _Opened:
    pin_parent: int | None  # None: no bpffs where the pin directory would be
    pins: int | None  # None: no pin directory
    cgroup: int | None
    units: int | None  # None: no unit directory
    in_the_way: str | None  # why the pin directory's name is left alone


@contextmanager
def _open(places: Places, create: bool, pins_only: bool = False) -> Iterator[_Opened]:
    """The places' directories, opened (the pin directory made where `create`; with
    `pins_only`, or the unit directory at boot, left unopened: None); Unavailable where the
    record cannot be kept here."""
    if os.geteuid() != 0:
        raise Unavailable("the sysctl write record needs root")
    with ExitStack() as stack:

        def opened(path: Path) -> int | None:
            try:
                fd, _ = open_directory(path)
            except UntrustedDirectory as exc:
                if not Path(path).exists():
                    return None
                raise Unavailable(str(exc)) from None
            stack.callback(os.close, fd)
            return fd

        parent = opened(places.pin_dir.parent)
        if parent is not None and not _is_bpffs(parent):
            parent = None
        pins, in_the_way = None, None
        if parent is not None:
            info = _lstat(parent, places.pin_dir.name)
            if info is None and create:
                os.mkdir(places.pin_dir.name, 0o700, dir_fd=parent)
                info = _lstat(parent, places.pin_dir.name)
            if info is not None and not stat.S_ISDIR(info.st_mode):
                in_the_way = f"{places.pin_dir} is not a directory: left alone"
            elif info is not None:
                pins = stack.enter_context(beneath(parent, [places.pin_dir.name]))
                try:
                    check_directory(pins, places.pin_dir)
                except UntrustedDirectory as exc:
                    raise Unavailable(str(exc)) from None
        cgroup, units = None, None
        if not pins_only and places.cgroup_root is not None:
            cgroup = opened(places.cgroup_root)
        if not pins_only and not places.boot:
            units = opened(places.unit_dir)
        yield _Opened(parent, pins, cgroup, units, in_the_way)


def _check(places: Places, at: _Opened) -> str | None:
    """The unit's text (None at boot: the unit is left alone); Unavailable or Refused where
    install cannot go ahead here."""
    if at.pin_parent is None:
        raise Unavailable(f"no bpf filesystem mounted at {places.pin_dir.parent}")
    if at.in_the_way is not None:
        raise Refused(at.in_the_way)
    if at.cgroup is None:
        raise Unavailable("no cgroup v2 hierarchy to attach to")
    if at.pins is not None:
        for name in PINS:
            info = _lstat(at.pins, name)
            if info is not None and not stat.S_ISREG(info.st_mode):
                raise Refused(f"{places.pin_dir / name} is not a pinned object: left alone")
    if places.boot:
        return None
    if at.units is None:
        raise Unavailable(f"no systemd unit directory {places.unit_dir}")
    if not places.command:
        raise Unavailable(f"no {EXECUTABLE} executable for the unit to run")
    _check_executable(Path(places.command[0]), places.boot_file_systems)
    text = record_unit.render(places.command)
    state = record_unit.survey(at.units, places.unit_dir)
    if (reason := record_unit.refusal(state, places.unit_dir)) is not None:
        raise Refused(reason)
    return text


def _check_executable(path: Path, boot_file_systems: tuple[Path, ...]) -> None:
    """Root runs the unit's command at boot: the entry script, the interpreter its first line
    names (and the files links there point to), each with every directory on the way, and the
    directory of the package it imports with every one above it, may be changed by root, or
    the user running this, only; and each is on a file system of `boot_file_systems`, which
    are mounted before the unit starts (a later mount would put the unit in an ordering cycle
    with sysinit.target). Refused with the reason where not."""
    why = f"the unit would run {path}"
    files = [path, Path(os.path.realpath(path))]
    for interpreter in _interpreters(files[-1], why):
        files += [interpreter, Path(os.path.realpath(interpreter))]
    for candidate in dict.fromkeys(files):
        _check_file(candidate, why)
    try:
        fd, _ = open_directory(PACKAGE)
    except UntrustedDirectory as exc:
        raise Refused(f"{why}, which imports the package in {PACKAGE}: {exc}") from None
    os.close(fd)
    devices = {os.stat(place).st_dev for place in boot_file_systems}
    for candidate in dict.fromkeys([*files, PACKAGE]):
        if os.lstat(candidate).st_dev not in devices:
            on = " or ".join(str(place) for place in boot_file_systems)
            raise Refused(
                f"{why}, but {candidate} is not on the file system of {on}, which the unit "
                "needs before sysinit.target: install the advisor there"
            )


# pip's launcher for an interpreter path a shebang cannot carry (distlib `_build_shebang`)
_SHELL_EXEC = re.compile(rb"'''exec' (?:\"([^\"]+)\"|(\S+)) ")


def _interpreters(script: Path, why: str) -> list[Path]:
    """The interpreters the first line of `script` names (none for a binary); Refused where it
    cannot be read or names one through env (found on PATH, which is not this shell's at
    boot)."""
    try:
        fd, _ = open_directory(script.parent)
    except UntrustedDirectory as exc:
        raise Refused(f"{why}: {exc}") from None
    try:
        data = read_at(fd, script.name, SCRIPT_LIMIT)
    finally:
        os.close(fd)
    if data is None:
        raise Refused(f"{why}: cannot read {script} to find its interpreter")
    if not data.startswith(b"#!"):
        return []
    first, _, rest = data[2:].partition(b"\n")
    words = first.split()
    if not words or not words[0].startswith(b"/"):
        raise Refused(f"{why}: its first line names no interpreter by its absolute path")
    if os.path.basename(words[0]) == b"env":
        raise Refused(f"{why}: its first line finds the interpreter through env, on PATH")
    found = [Path(os.fsdecode(words[0]))]
    if (launched := _SHELL_EXEC.match(rest)) is not None:
        found.append(Path(os.fsdecode(launched[1] or launched[2])))
    return found


def _check_file(path: Path, why: str) -> None:
    """Refused where `path` (not followed), or a directory on the way to it, may be changed by
    others than root and the user running this."""
    try:
        fd, _ = open_directory(path.parent)
    except UntrustedDirectory as exc:
        raise Refused(f"{why}: {exc}") from None
    try:
        info = os.stat(path.name, dir_fd=fd, follow_symlinks=False)
    except OSError as exc:
        raise Refused(f"{why}: {path}: {exc.strerror}") from None
    finally:
        os.close(fd)
    writable = not stat.S_ISLNK(info.st_mode) and info.st_mode & 0o022
    if info.st_uid not in (0, os.geteuid()) or writable:
        raise Refused(f"{why}, which others may change ({path})")


def _in_one_line(action: Callable[[Places], T]) -> Callable[[Places], T]:
    """`action`, a failure of the kernel or the file system said in one line (Unavailable)."""

    @functools.wraps(action)
    def wrapped(places: Places) -> T:
        try:
            return action(places)
        except OSError as exc:
            where = f" ({exc.filename})" if exc.filename else ""
            raise Unavailable(f"the sysctl write record: {exc.strerror or exc}{where}") from None

    return wrapped


def _present(at: _Opened) -> set[str]:
    if at.pins is None:
        return set()
    return {name for name in PINS if _lstat(at.pins, name) is not None}


def _attached(at: _Opened, present: set[str]) -> bool:
    """Whether the pinned attachment holds: a pinned link, or the pinned program attached to
    the cgroup."""
    if LINK in present:
        return True
    if PROGRAM not in present or at.pins is None or at.cgroup is None:
        return False
    fd = syscall.obj_get(_via(at.pins, PROGRAM))
    try:
        return syscall.prog_id(fd) in syscall.prog_query(at.cgroup, syscall.CGROUP_SYSCTL)
    finally:
        os.close(fd)


@_in_one_line
def install_plan(places: Places) -> list[str]:
    """What `install` does here, each pin, attach, file and link, exactly; Unavailable or
    Refused where it would not."""
    with _open(places, create=False) as at:
        text = _check(places, at)
        present = _present(at)
        maps = {WRITES, DROPS} <= present
        pin = places.pin_dir
        lines = [] if at.pins is not None else [f"bpffs: make the directory {pin} (0700)"]
        if maps:
            lines.append(f"bpffs: {pin / WRITES} and {pin / DROPS} are there (kept)")
        else:
            lines.append(
                f"bpffs: pin at {pin / WRITES} a hash map keeping the last write of each sysctl "
                f"key and its count (up to {MAX_KEYS} keys)"
            )
            lines.append(
                f"bpffs: pin at {pin / DROPS} an array map counting what it could not keep"
            )
        if maps and _attached(at, present):
            lines.append(
                f"bpf: the program stays attached ({pin / (present & {LINK, PROGRAM}).pop()})"
            )
        else:
            lines.append(
                "bpf: load a BPF_PROG_TYPE_CGROUP_SYSCTL program that records each write into "
                "those maps and allows every access"
            )
            lines.append(
                f"bpf: attach it to the cgroup v2 root {places.cgroup_root} beside what is "
                f"attached there, by a BPF link pinned at {pin / LINK} (a kernel without links: "
                f"BPF_PROG_ATTACH with BPF_F_ALLOW_MULTI, the program pinned at {pin / PROGRAM})"
            )
        if text is None or at.units is None:  # at boot
            return [*lines, f"unit: {places.unit_dir} is left alone (the boot run)"]
        state = record_unit.survey(at.units, places.unit_dir)
        return lines + record_unit.plan(state, places.unit_dir, text)


@_in_one_line
def install(places: Places) -> list[str]:
    """Pin the maps where absent, load and attach the program where it is not attached, write
    the unit and its wants link where absent (or ours and different: one as it would be
    written is not touched), none of them at boot; what was done. Idempotent. Unavailable or
    Refused, with nothing changed, where it cannot."""
    with _open(places, create=False) as at:
        text = _check(places, at)
        made = at.pins is None
    with _open(places, create=True) as at:
        assert at.pins is not None and at.cgroup is not None
        done = [f"made {places.pin_dir}"] if made else []
        try:
            done += _install_pins(places, at)
        except OSError as exc:
            raise Unavailable(f"the sysctl write record cannot be installed: {exc}") from None
        if text is None or at.units is None:  # at boot: nothing under /etc
            return done
        return done + record_unit.install(at.units, places.unit_dir, text)


def _pinned_map(at: _Opened, name: str, create: Callable[[], int]) -> int:
    """A descriptor on the map pinned at `name`, made by `create` and pinned where absent."""
    assert at.pins is not None
    if _lstat(at.pins, name) is not None:
        return syscall.obj_get(_via(at.pins, name))
    fd = create()
    try:
        syscall.obj_pin(fd, _via(at.pins, name))
    except BaseException:
        os.close(fd)
        raise
    return fd


def _install_pins(places: Places, at: _Opened) -> list[str]:
    assert at.pins is not None and at.cgroup is not None
    present = _present(at)
    if {WRITES, DROPS} <= present and _attached(at, present):
        return [f"kept {places.pin_dir}: the record is attached"]
    done: list[str] = []
    for name in (LINK, PROGRAM):  # an attachment whose maps are gone, or no longer attached
        done += _unpin(places, at, name)
    pinned: list[str] = []
    try:
        with ExitStack() as stack:
            writes = _pinned_map(at, WRITES, create_map)
            stack.callback(os.close, writes)
            pinned += [] if WRITES in present else [WRITES]
            drops = _pinned_map(at, DROPS, create_drops_map)
            stack.callback(os.close, drops)
            pinned += [] if DROPS in present else [DROPS]
            prog, _ = load(writes, "last", drops, offsets())
            stack.callback(os.close, prog)
            done += _attach(places, at, prog, stack)
    except BaseException:
        for name in pinned:  # a failure leaves none of this call's pins
            os.unlink(name, dir_fd=at.pins)
        raise
    return [f"pinned {places.pin_dir / name}" for name in pinned] + done


def _attach(places: Places, at: _Opened, prog: int, stack: ExitStack) -> list[str]:
    """Attach the program to the cgroup root: by a link, pinned, where the kernel has links,
    else by BPF_PROG_ATTACH with the program pinned first (never attached unpinned)."""
    assert at.pins is not None and at.cgroup is not None
    try:
        link = syscall.link_create(prog, at.cgroup, syscall.CGROUP_SYSCTL)
    except OSError as exc:
        if exc.errno != errno.EINVAL:  # EINVAL: no BPF_LINK_CREATE, a kernel before 5.7
            raise
    else:
        stack.callback(os.close, link)  # the pin keeps it attached; without one it detaches
        syscall.obj_pin(link, _via(at.pins, LINK))
        return [f"attached the program to {places.cgroup_root}: {places.pin_dir / LINK}"]
    syscall.obj_pin(prog, _via(at.pins, PROGRAM))
    try:
        syscall.prog_attach(at.cgroup, prog, syscall.CGROUP_SYSCTL, syscall.F_ALLOW_MULTI)
    except BaseException:
        os.unlink(PROGRAM, dir_fd=at.pins)
        raise
    return [f"attached the program to {places.cgroup_root}: {places.pin_dir / PROGRAM}"]


def _unpin(places: Places, at: _Opened, name: str, dry: bool = False) -> list[str]:
    """Unpin `name`, the pinned program detached from the cgroup first (with `dry`, only say
    so)."""
    assert at.pins is not None
    info = _lstat(at.pins, name)
    if info is None:
        return []
    if not stat.S_ISREG(info.st_mode):
        return [f"left {places.pin_dir / name} alone: not a pinned object"]
    detached = " (detaching the program)" if name in (LINK, PROGRAM) else ""
    if dry:
        return [f"would remove {places.pin_dir / name}{detached}"]
    if name == PROGRAM and at.cgroup is not None:
        fd = syscall.obj_get(_via(at.pins, name))
        try:
            syscall.prog_detach(at.cgroup, fd, syscall.CGROUP_SYSCTL)
        except OSError as exc:
            if exc.errno != errno.ENOENT:  # ENOENT: not attached there
                raise
        finally:
            os.close(fd)
    os.unlink(name, dir_fd=at.pins)
    return [f"removed {places.pin_dir / name}{detached}"]


@_in_one_line
def uninstall_plan(places: Places) -> list[str]:
    """What `uninstall` would remove and leave alone here, changing nothing."""
    return _uninstall(places, dry=True)


@_in_one_line
def uninstall(places: Places) -> list[str]:
    """Remove every pin (detaching the program), the pin directory when nothing else is in it,
    the unit and its wants link where they are the advisor's; what was removed and what was
    left alone, or that there was nothing to remove. Run twice, it removes nothing."""
    return _uninstall(places, dry=False)


def _uninstall(places: Places, dry: bool) -> list[str]:
    with _open(places, create=False) as at:
        done = [] if at.in_the_way is None else [at.in_the_way]
        if at.pins is not None:
            for name in PINS:
                try:
                    done += _unpin(places, at, name, dry)
                except OSError as exc:
                    raise Unavailable(
                        f"cannot remove {places.pin_dir / name}: {exc.strerror}"
                    ) from None
            done += _remove_pin_dir(places, at, dry)
        if at.units is not None:
            done += record_unit.uninstall(at.units, places.unit_dir, dry)
    return done or [NOT_INSTALLED]


def _remove_pin_dir(places: Places, at: _Opened, dry: bool) -> list[str]:
    assert at.pin_parent is not None and at.pins is not None
    others = [n for n in os.listdir(at.pins) if not (dry and n in PINS)]
    if others:
        return [f"left {places.pin_dir} alone: it holds what the advisor did not pin"]
    if dry:
        return [f"would remove {places.pin_dir}"]
    try:
        os.rmdir(places.pin_dir.name, dir_fd=at.pin_parent)
    except OSError as exc:
        raise Unavailable(f"cannot remove {places.pin_dir}: {exc.strerror}") from None
    return [f"removed {places.pin_dir}"]


@_in_one_line
def read_record(places: Places) -> Record | None:
    """The record, or None where it is not installed (no pin directory or no `writes` pin:
    nothing else is opened then, the cgroup root only to see whether a pinned program is
    still attached)."""
    with _open(places, create=False, pins_only=True) as at:
        if at.pins is None or _lstat(at.pins, WRITES) is None:
            return None
        present = _present(at)
        try:
            with ExitStack() as stack:
                if LINK not in present and PROGRAM in present and places.cgroup_root:
                    at.cgroup = _opened_cgroup(places.cgroup_root)
                    stack.callback(os.close, at.cgroup)
                attached = _attached(at, present)
            writes = syscall.obj_get(_via(at.pins, WRITES))
            try:
                recorded = tuple(read_last_writes(writes))
            finally:
                os.close(writes)
            dropped = 0
            if DROPS in present:
                drops = syscall.obj_get(_via(at.pins, DROPS))
                try:
                    dropped = read_dropped(drops)
                finally:
                    os.close(drops)
        except OSError as exc:
            raise Unavailable(f"cannot read the sysctl write record: {exc.strerror}") from None
        since = None
        if attached:
            pin = LINK if LINK in present else PROGRAM
            info = _lstat(at.pins, pin)
            since = None if info is None else info.st_mtime
        return Record(since, recorded, dropped)


def _opened_cgroup(path: Path) -> int:
    try:
        fd, _ = open_directory(path)
    except UntrustedDirectory as exc:
        raise Unavailable(str(exc)) from None
    return fd
