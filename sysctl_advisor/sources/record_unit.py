"""The systemd unit that re-attaches the sysctl-write record at boot, before systemd-sysctl
applies sysctl.d (bpffs is empty after a reboot), and its `sysinit.target.wants/` link.

systemd-sysctl.service is `DefaultDependencies=no`, `Before=sysinit.target` (systemd v255,
units/systemd-sysctl.service.in): this unit is ordered before it and before sysinit.target,
with no default dependencies of its own. systemd mounts bpffs at /sys/fs/bpf itself before
any unit starts (src/shared/mount-setup.c, `mount_table`); `After=sys-fs-bpf.mount` orders it
after a mount unit where one mounts it instead. The link is what `systemctl enable` makes for
`WantedBy=sysinit.target`: CONFIG/sysinit.target.wants/NAME pointing at the unit's path
(src/shared/install.c, `install_info_symlink_wants`).

Every file is reached through its directory's descriptor, never through a link: the unit is
replaced atomically (model/directories.py `replace_file`) only where there is none or the one
there carries the advisor's marker line; a file of that name without it, a link or a FIFO in
its place, is refused and left alone, and uninstall removes only what is the advisor's."""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sysctl_advisor.model.directories import beneath, read_at, replace_file

UNIT = "sysctl-advisor-record.service"
WANTS = "sysinit.target.wants"
MARKER = "# sysctl-advisor: the sysctl write record (facts --install); facts --uninstall removes it"
BOOT = "SYSCTL_ADVISOR_RECORD_BOOT"  # set by the unit: the boot run pins and attaches only
UNIT_LIMIT = 64 * 1024  # more than any unit of ours
# what ExecStart= and RequiresMountsFor= take as it is: no quoting, no %specifier, no $variable
_PLAIN = re.compile(r"[A-Za-z0-9_@+=:,./-]+")


class Refused(Exception):
    """A file in the way that is not the advisor's, or a command a unit cannot carry: the
    one-line reason; nothing was changed."""


def render(command: Sequence[str]) -> str:
    """The unit's text, running `command` (an absolute executable and its arguments)."""
    if not command or not command[0].startswith("/"):
        raise Refused(f"the unit's command must start with an absolute path: {list(command)}")
    for word in command:
        if not _PLAIN.fullmatch(word):
            raise Refused(f"the unit cannot carry {word!r} as it is (quotes, spaces, % or $)")
    return (
        f"{MARKER}\n"
        "[Unit]\n"
        "Description=Record the last writer of each sysctl from early boot (sysctl-advisor)\n"
        "Documentation=man:sysctl-advisor(1)\n"
        "DefaultDependencies=no\n"
        "After=sys-fs-bpf.mount\n"
        "Before=systemd-sysctl.service sysinit.target\n"
        f"RequiresMountsFor={command[0]}\n"
        "\n"
        "[Service]\n"
        "Type=oneshot\n"
        f"Environment={BOOT}=1\n"
        f"ExecStart={' '.join(command)}\n"
        "\n"
        "[Install]\n"
        "WantedBy=sysinit.target\n"
    )


@dataclass(frozen=True)
class State:
    """What is at the unit's name and the wants link's, in a unit directory."""

    unit: str  # "absent", "ours" (with the marker), "foreign" (a file without), "not a file"
    text: str | None  # the unit's text where it is ours
    wants: str  # "absent", "ours" (a link to the unit), "foreign", "no directory"


def lstat_at(directory: int, name: str) -> os.stat_result | None:
    """`name`'s lstat in the directory open at `directory`; None where there is none."""
    try:
        return os.stat(name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _unit(directory: int) -> tuple[str, str | None]:
    info = lstat_at(directory, UNIT)
    if info is None:
        return "absent", None
    if not stat.S_ISREG(info.st_mode):
        return "not a file", None
    data = read_at(directory, UNIT, UNIT_LIMIT)
    if data is None:  # replaced meanwhile, or too large to be ours
        return "foreign", None
    text = data.decode("utf-8", errors="replace")
    return ("ours", text) if text.split("\n", 1)[0] == MARKER else ("foreign", None)


def _wants(directory: int, target: str) -> str:
    info = lstat_at(directory, WANTS)
    if info is None:
        return "absent"
    if not stat.S_ISDIR(info.st_mode):
        return "no directory"
    with beneath(directory, [WANTS]) as wants:
        link = lstat_at(wants, UNIT)
        if link is None:
            return "absent"
        if stat.S_ISLNK(link.st_mode) and os.readlink(UNIT, dir_fd=wants) == target:
            return "ours"
    return "foreign"


def survey(directory: int, unit_dir: Path) -> State:
    """The state of the unit directory open at `directory` (its path `unit_dir`)."""
    unit, text = _unit(directory)
    return State(unit, text, _wants(directory, str(unit_dir / UNIT)))


def refusal(state: State, unit_dir: Path) -> str | None:
    """Why install must not touch this unit directory, or None."""
    if state.unit == "foreign":
        return f"{unit_dir / UNIT} is not the advisor's (no marker line): left alone"
    if state.unit == "not a file":
        return f"{unit_dir / UNIT} is not a regular file: left alone"
    if state.wants == "no directory":
        return f"{unit_dir / WANTS} is not a directory: left alone"
    if state.wants == "foreign":
        return f"{unit_dir / WANTS / UNIT} is not the advisor's link to the unit: left alone"
    return None


def plan(state: State, unit_dir: Path, text: str) -> list[str]:
    """The lines saying what `install` does here, the unit's text in full."""
    path, link = unit_dir / UNIT, unit_dir / WANTS / UNIT
    if state.unit == "ours" and state.text == text:
        lines = [f"unit: {path} is there as written (kept)"]
    else:
        verb = "rewrite" if state.unit == "ours" else "write"
        lines = [f"unit: {verb} {path} (0644, atomically), which reads:"]
        lines += [f"    {line}" if line else "" for line in text.splitlines()]
    if state.wants == "ours":
        lines.append(f"link: {link} -> {path} is there (kept)")
    else:
        lines.append(f"link: {link} -> {path} (what systemctl enable makes for WantedBy=)")
    return lines


def install(directory: int, unit_dir: Path, text: str) -> list[str]:
    """Write the unit (where absent or ours and different) and its wants link (where absent);
    Refused, with nothing changed, where either is not the advisor's."""
    state = survey(directory, unit_dir)
    if (reason := refusal(state, unit_dir)) is not None:
        raise Refused(reason)
    path, done = unit_dir / UNIT, []
    if state.unit == "ours" and state.text == text:
        done.append(f"kept {path}")
    else:
        replace_file(directory, UNIT, text.encode(), mode=0o644, durable=True)
        done.append(f"wrote {path}")
    if state.wants != "ours":
        with contextlib.suppress(FileExistsError):
            os.mkdir(WANTS, 0o755, dir_fd=directory)
        with beneath(directory, [WANTS]) as wants:
            os.symlink(str(path), UNIT, dir_fd=wants)
            os.fsync(wants)
        done.append(f"linked {unit_dir / WANTS / UNIT} -> {path}")
    return done


def uninstall(directory: int, unit_dir: Path, dry: bool = False) -> list[str]:
    """Remove the unit and its wants link where they are the advisor's (with `dry`, only say
    so); what was removed and what was left alone (the wants directory stays: it may hold
    others' links)."""
    state = survey(directory, unit_dir)
    removed = "would remove" if dry else "removed"
    done: list[str] = []
    if state.wants == "ours":
        if not dry:
            with beneath(directory, [WANTS]) as wants:
                os.unlink(UNIT, dir_fd=wants)
        done.append(f"{removed} {unit_dir / WANTS / UNIT}")
    elif state.wants == "foreign":
        done.append(f"left {unit_dir / WANTS / UNIT} alone: not the advisor's link")
    if state.unit == "ours":
        if not dry:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(UNIT, dir_fd=directory)
        done.append(f"{removed} {unit_dir / UNIT}")
    elif state.unit == "foreign":
        done.append(f"left {unit_dir / UNIT} alone: not the advisor's (no marker line)")
    elif state.unit == "not a file":
        done.append(f"left {unit_dir / UNIT} alone: not a regular file")
    return done
