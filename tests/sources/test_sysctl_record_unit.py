"""The record's systemd unit and its wants link, in a temporary unit directory: written where
there is none or the advisor's, refused where a file of that name is someone else's, a link or
a FIFO (built here, at test time), removed only where it is the advisor's."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from sysctl_advisor.model.directories import open_directory
from sysctl_advisor.sources import record_unit
from sysctl_advisor.sources.record_unit import MARKER, UNIT, WANTS, Refused

COMMAND = ("/usr/bin/sysctl-advisor", "facts", "--install", "--yes")
FOREIGN = "[Unit]\nDescription=someone else's unit of that name\n"


@pytest.fixture
def units(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    directory = tmp_path / "system"
    directory.mkdir()
    fd, _ = open_directory(directory)
    try:
        yield fd, directory
    finally:
        os.close(fd)


def test_the_unit_runs_before_systemd_sysctl_and_is_wanted_by_sysinit() -> None:
    text = record_unit.render(COMMAND)
    lines = text.splitlines()
    assert lines[0] == MARKER
    for line in (
        "DefaultDependencies=no",
        "Before=systemd-sysctl.service sysinit.target",
        "After=sys-fs-bpf.mount",
        "RequiresMountsFor=/usr/bin/sysctl-advisor",
        "Type=oneshot",
        "Environment=SYSCTL_ADVISOR_RECORD_BOOT=1",  # the boot run: pins and attaches only
        "ExecStart=/usr/bin/sysctl-advisor facts --install --yes",
        "WantedBy=sysinit.target",
    ):
        assert line in lines


@pytest.mark.parametrize(
    "command",
    [
        ("sysctl-advisor", "facts"),
        ("/opt/my tools/sysctl-advisor", "facts"),
        ("/usr/bin/sysctl-advisor", "%h"),
        ("/usr/bin/sysctl-advisor", "$HOME"),
        ("/usr/bin/sysctl-advisor", "a\nExecStartPre=/bin/sh"),
    ],
)
def test_a_command_the_unit_cannot_carry_as_it_is_is_refused(command: tuple[str, ...]) -> None:
    with pytest.raises(Refused):
        record_unit.render(command)


def test_install_writes_the_unit_and_the_link_systemctl_enable_makes(
    units: tuple[int, Path],
) -> None:
    fd, directory = units
    text = record_unit.render(COMMAND)
    done = record_unit.install(fd, directory, text)
    assert done == [
        f"wrote {directory / UNIT}",
        f"linked {directory / WANTS / UNIT} -> {directory / UNIT}",
    ]
    assert (directory / UNIT).read_text() == text
    assert stat.S_IMODE((directory / UNIT).stat().st_mode) == 0o644
    assert os.readlink(directory / WANTS / UNIT) == str(directory / UNIT)
    assert record_unit.install(fd, directory, text) == [f"kept {directory / UNIT}"]
    assert record_unit.plan(record_unit.survey(fd, directory), directory, text) == [
        f"unit: {directory / UNIT} is there as written (kept)",
        f"link: {directory / WANTS / UNIT} -> {directory / UNIT} is there (kept)",
    ]


def test_an_install_that_finds_the_unit_as_written_writes_nothing(
    units: tuple[int, Path],
) -> None:
    fd, directory = units
    text = record_unit.render(COMMAND)
    record_unit.install(fd, directory, text)

    def seen() -> dict[Path, tuple[int, int, int]]:
        return {
            path: (info.st_ino, info.st_mtime_ns, info.st_ctime_ns)
            for path in [directory, *directory.rglob("*")]
            if (info := path.lstat())
        }

    before = seen()
    assert record_unit.install(fd, directory, text) == [f"kept {directory / UNIT}"]
    assert seen() == before


def test_an_older_unit_of_the_advisor_is_rewritten(units: tuple[int, Path]) -> None:
    fd, directory = units
    record_unit.install(fd, directory, record_unit.render(("/old/sysctl-advisor", "facts")))
    text = record_unit.render(COMMAND)
    assert record_unit.install(fd, directory, text) == [f"wrote {directory / UNIT}"]
    assert (directory / UNIT).read_text() == text


def _foreign_file(directory: Path) -> None:
    (directory / UNIT).write_text(FOREIGN)


def _link_elsewhere(directory: Path) -> None:
    (directory.parent / "elsewhere").write_text(FOREIGN)
    (directory / UNIT).symlink_to(directory.parent / "elsewhere")


def _fifo(directory: Path) -> None:
    os.mkfifo(directory / UNIT)


@pytest.mark.parametrize(
    "in_the_way", [_foreign_file, _link_elsewhere, _fifo], ids=["foreign unit", "link", "FIFO"]
)
def test_a_unit_that_is_not_the_advisors_is_refused_and_left_alone(
    units: tuple[int, Path], in_the_way: object
) -> None:
    fd, directory = units
    assert callable(in_the_way)
    in_the_way(directory)
    before = os.lstat(directory / UNIT)
    with pytest.raises(Refused, match="left alone"):
        record_unit.install(fd, directory, record_unit.render(COMMAND))
    assert not (directory / WANTS).exists()
    removed = record_unit.uninstall(fd, directory)
    assert len(removed) == 1 and removed[0].startswith(f"left {directory / UNIT} alone")
    after = os.lstat(directory / UNIT)
    assert (after.st_ino, after.st_mode, after.st_mtime_ns) == (
        before.st_ino,
        before.st_mode,
        before.st_mtime_ns,
    )
    if (directory.parent / "elsewhere").exists():
        assert (directory.parent / "elsewhere").read_text() == FOREIGN


def test_a_wants_link_to_another_file_is_refused_and_left_alone(units: tuple[int, Path]) -> None:
    fd, directory = units
    (directory / WANTS).mkdir()
    (directory / WANTS / UNIT).symlink_to("/usr/lib/systemd/system/other.service")
    with pytest.raises(Refused, match="not the advisor's link"):
        record_unit.install(fd, directory, record_unit.render(COMMAND))
    assert not (directory / UNIT).exists()
    assert record_unit.uninstall(fd, directory) == [
        f"left {directory / WANTS / UNIT} alone: not the advisor's link"
    ]
    assert os.readlink(directory / WANTS / UNIT) == "/usr/lib/systemd/system/other.service"


def test_uninstall_removes_the_unit_and_its_link_and_run_twice_removes_nothing(
    units: tuple[int, Path],
) -> None:
    fd, directory = units
    (directory / WANTS).mkdir()
    (directory / WANTS / "other.service").symlink_to("/usr/lib/systemd/system/other.service")
    record_unit.install(fd, directory, record_unit.render(COMMAND))
    assert record_unit.uninstall(fd, directory, dry=True) == [
        f"would remove {directory / WANTS / UNIT}",
        f"would remove {directory / UNIT}",
    ]
    assert (directory / UNIT).exists()
    assert record_unit.uninstall(fd, directory) == [
        f"removed {directory / WANTS / UNIT}",
        f"removed {directory / UNIT}",
    ]
    assert sorted(p.name for p in directory.rglob("*")) == ["other.service", WANTS]
    assert record_unit.uninstall(fd, directory) == []
