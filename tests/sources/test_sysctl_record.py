"""The persistent sysctl write record on this kernel: each test runs the record in a private
mount namespace with its own bpffs (so every pin, and the attachment with it, is gone when the
namespace ends, whatever happens), a temporary unit directory, and a throwaway cgroup under
the test's own cgroup v2 directory as the root it attaches to; writers write per-namespace
keys in fresh network namespaces only, and the host's /proc/sys is compared before and after.
Root, cgroup v2, unshare and a kernel that loads the program are needed; elsewhere the tests
skip with the reason."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sysctl_advisor.sources import sysctl_record
from sysctl_advisor.sources.mounts import own_cgroup
from sysctl_advisor.sources.sysctl_last_writes import create_map
from sysctl_advisor.sources.sysctl_record import Places, Refused, Unavailable
from sysctl_advisor.sources.sysctl_watch import attached, create_drops_map, load
from tests.conftest import HANG_SECONDS, ROOT
from tests.namespaces import namespace_problem
from tests.sources.test_sysctl_watch import cgroup

__all__ = ["cgroup"]  # the fixture

COMMAND_NAME = "sysctl-advisor"
# where the stand-in executable, its interpreter and the package under test may be here
BOOT_FILE_SYSTEMS = (Path("/"), Path("/usr"), sysctl_record.PACKAGE)


def _problem() -> str | None:
    if os.geteuid() != 0:
        return "needs root to load a BPF program and mount a bpffs"
    if (netns := namespace_problem()) is not None:
        return netns
    if own_cgroup() is None:
        return "needs a cgroup v2 hierarchy"
    probe = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "mount", "-t", "bpf", "bpf", "/mnt"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        return f"cannot mount a bpffs in a private mount namespace: {probe.stderr.strip()}"
    try:
        writes = create_map(sysctl_record.MAX_KEYS)
        drops = create_drops_map()
    except OSError as exc:
        return f"the kernel refuses the record's maps: {exc.strerror}"
    try:
        prog, _ = load(writes, "last", drops)
        os.close(prog)
    except OSError as exc:
        return f"the kernel refuses the program: {exc.strerror}"
    finally:
        os.close(writes)
        os.close(drops)
    return None


root_only = pytest.mark.skipif(_problem() is not None, reason=str(_problem()))


@pytest.fixture
def places(tmp_path: Path, cgroup: Path) -> Places:
    """The pin directory on the bpffs the driver mounts at tmp/bpffs, a unit directory and a
    stand-in executable (the unit is never run here)."""
    (tmp_path / "bpffs").mkdir()
    (tmp_path / "system").mkdir()
    (tmp_path / "bin").mkdir()
    executable = tmp_path / "bin" / COMMAND_NAME
    executable.write_text("#!/bin/sh\nexit 0\n")
    executable.chmod(0o755)
    return Places(
        pin_dir=tmp_path / "bpffs" / "sysctl-advisor",
        unit_dir=tmp_path / "system",
        cgroup_root=cgroup,
        command=(str(executable), "facts", "--install", "--yes"),
        boot_file_systems=(*BOOT_FILE_SYSTEMS, tmp_path),
    )


# Run in the private mount namespace: argv[1] the places as JSON, argv[2] the steps.
DRIVER = """
import dataclasses, json, os, subprocess, sys
from pathlib import Path
from sysctl_advisor.sources import sysctl_record
from sysctl_advisor.sources.bpf import syscall
from sysctl_advisor.sources.sysctl_watch import attached

given = json.loads(sys.argv[1])
if given["no_links"]:  # as a kernel before 5.7, which has no BPF_LINK_CREATE
    def refused(*args):
        raise OSError(22, "Invalid argument")
    syscall.link_create = refused
places = sysctl_record.Places(
    Path(given["pin_dir"]), Path(given["unit_dir"]), Path(given["cgroup_root"]),
    tuple(given["command"]), given["boot"], tuple(map(Path, given["boot_file_systems"])),
)
cgroup = Path(given["cgroup_root"])

def write(script):
    subprocess.run(
        ["unshare", "-n", "sh", "-c", script],
        preexec_fn=lambda: (cgroup / "cgroup.procs").write_text("0"),
        check=True, timeout=60,
    )

def record():
    found = sysctl_record.read_record(places)
    if found is None:
        return None
    return {
        "since": found.since,
        "dropped": found.dropped,
        "writes": {
            r.write.key: [r.write.new, r.count, r.write.comm, r.write.cgroup_id]
            for r in found.writes
        },
    }

out = {}
for step in sys.argv[2].split(","):
    try:
        if step == "write":
            write(given["script"])
            out[step] = True
        elif step == "boot":  # the unit's run at boot from here on
            places = dataclasses.replace(places, boot=True)
        elif step == "link_in_place_of_the_pin_directory":
            os.symlink("/tmp", places.pin_dir)
        elif step == "attached":
            out.setdefault(step, []).append(attached(cgroup))
        elif step == "record":
            out.setdefault(step, []).append(record())
        else:
            out.setdefault(step, []).append(getattr(sysctl_record, step)(places))
    except (sysctl_record.Refused, sysctl_record.Unavailable) as exc:
        out.setdefault(step, []).append({"error": type(exc).__name__, "message": str(exc)})
print(json.dumps(out))
"""


def _drive(
    places: Places, steps: list[str], script: str = "", no_links: bool = False
) -> dict[str, list[object]]:
    """`steps` run in order in a private mount namespace with a bpffs mounted at the pin
    directory's parent; each step's results."""
    given = {
        "pin_dir": str(places.pin_dir),
        "unit_dir": str(places.unit_dir),
        "cgroup_root": str(places.cgroup_root),
        "command": list(places.command),
        "script": script,
        "no_links": no_links,
        "boot": places.boot,
        "boot_file_systems": [str(path) for path in places.boot_file_systems],
    }
    mount = 'mount -t bpf -o mode=700 bpf "$1" && shift && exec "$@"'
    ran = subprocess.run(
        [
            "unshare",
            "-m",
            "--propagation",
            "private",
            "sh",
            "-c",
            mount,
            "sh",
            str(places.pin_dir.parent),
            sys.executable,
            "-c",
            DRIVER,
            json.dumps(given),
            ",".join(steps),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
    )
    assert ran.returncode == 0, ran.stderr
    result: dict[str, list[object]] = json.loads(ran.stdout)
    return result


WRITER = (
    "echo 8192 > /proc/sys/net/core/somaxconn\n"
    "echo 600 > /proc/sys/net/ipv4/tcp_keepalive_time\n"
    "echo 4096 > /proc/sys/net/core/somaxconn\n"
)


@root_only
@pytest.mark.parametrize("no_links", [False, True], ids=["link", "no links: prog_attach"])
def test_the_record_keeps_the_last_writer_of_each_key_and_uninstall_leaves_nothing(
    places: Places, cgroup: Path, no_links: bool
) -> None:
    steps = ["install_plan", "install", "install", "attached", "write", "record"]
    steps += ["uninstall_plan", "attached", "uninstall", "attached", "uninstall", "record"]
    out = _drive(places, steps, WRITER, no_links)
    attachment = "program" if no_links else "link"
    plan = out["install_plan"][0]
    assert isinstance(plan, list)
    pin = places.pin_dir
    assert f"bpffs: make the directory {pin} (0700)" in plan
    assert any(str(pin / "writes") in line for line in plan)
    assert any(str(pin / attachment) in line for line in plan)
    assert f"    ExecStart={' '.join(places.command)}" in plan
    first, again = out["install"]
    assert isinstance(first, list) and isinstance(again, list)
    assert f"pinned {pin / 'writes'}" in first
    assert f"attached the program to {cgroup}: {pin / attachment}" in first
    assert again == [
        f"kept {pin}: the record is attached",
        f"kept {places.unit_dir / 'sysctl-advisor-record.service'}",
    ]
    while_installed, after_the_plan, after = out["attached"]
    assert after_the_plan == while_installed
    shown = out["uninstall_plan"][0]
    assert isinstance(shown, list)
    assert f"would remove {pin / attachment} (detaching the program)" in shown
    assert f"would remove {pin}" in shown
    assert isinstance(while_installed, list) and len(while_installed) == 1  # once, not twice
    recorded = out["record"][0]
    assert isinstance(recorded, dict)
    assert recorded["dropped"] == 0
    assert isinstance(recorded["since"], float)
    inode = os.stat(cgroup).st_ino
    assert recorded["writes"] == {
        "net.core.somaxconn": ["4096\n", 2, "sh", inode],
        "net.ipv4.tcp_keepalive_time": ["600\n", 1, "sh", inode],
    }
    removed, nothing = out["uninstall"]
    assert isinstance(removed, list)
    for name in (attachment, "writes", "drops"):
        assert any(line.startswith(f"removed {pin / name}") for line in removed)
    assert f"removed {pin}" in removed
    assert f"removed {places.unit_dir / 'sysctl-advisor-record.service'}" in removed
    assert after == []
    assert nothing == ["the sysctl write record is not installed: nothing to remove"]
    assert out["record"][1] is None
    assert list(places.unit_dir.rglob("*.service")) == []
    assert attached(cgroup) == []


@root_only
def test_a_foreign_unit_refuses_the_install_before_anything_is_pinned(
    places: Places, cgroup: Path
) -> None:
    unit = places.unit_dir / "sysctl-advisor-record.service"
    unit.write_text("[Service]\nExecStart=/usr/local/bin/someone-elses\n")
    out = _drive(places, ["install_plan", "install", "attached", "record", "uninstall"])
    for step in ("install_plan", "install"):
        assert out[step] == [
            {
                "error": "Refused",
                "message": f"{unit} is not the advisor's (no marker line): left alone",
            }
        ]
    assert out["attached"] == [[]]
    assert out["record"] == [None]
    assert out["uninstall"] == [[f"left {unit} alone: not the advisor's (no marker line)"]]
    assert unit.read_text() == "[Service]\nExecStart=/usr/local/bin/someone-elses\n"


def test_without_root_the_record_is_unavailable(
    places: Places, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    for action in (sysctl_record.install_plan, sysctl_record.read_record):
        with pytest.raises(Unavailable, match="needs root"):
            action(places)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to get past the root check")
def test_without_bpffs_or_cgroup_v2_install_is_unavailable_and_nothing_is_read(
    places: Places,
) -> None:
    """The pin directory's parent here is no bpffs (nothing mounts one in this test)."""
    with pytest.raises(Unavailable, match="no bpf filesystem mounted at"):
        sysctl_record.install(places)
    assert sysctl_record.read_record(places) is None
    assert sysctl_record.uninstall(places) == [
        "the sysctl write record is not installed: nothing to remove"
    ]
    assert not places.pin_dir.exists()
    no_cgroup = Places(places.pin_dir, places.unit_dir, None, places.command)
    with pytest.raises(Unavailable):
        sysctl_record.install_plan(no_cgroup)


@root_only
def test_a_link_in_place_of_the_pin_directory_is_refused(places: Places, cgroup: Path) -> None:
    steps = ["link_in_place_of_the_pin_directory", "install", "uninstall", "attached"]
    out = _drive(places, steps)
    assert out["install"] == [
        {"error": "Refused", "message": f"{places.pin_dir} is not a directory: left alone"}
    ]
    assert out["uninstall"] == [[f"{places.pin_dir} is not a directory: left alone"]]
    assert out["attached"] == [[]]
    assert list(places.unit_dir.iterdir()) == []


def _check(executable: Path, *file_systems: Path) -> None:
    sysctl_record._check_executable(executable, BOOT_FILE_SYSTEMS + file_systems)


def test_the_unit_runs_no_file_others_may_change(tmp_path: Path) -> None:
    executable = tmp_path / COMMAND_NAME
    executable.write_text("#!/bin/sh\n")
    executable.chmod(0o775)
    with pytest.raises(Refused, match="which others may change"):
        _check(executable, tmp_path)
    executable.chmod(0o755)
    _check(executable, tmp_path)
    (tmp_path / "link").symlink_to(executable)
    executable.chmod(0o757)
    with pytest.raises(Refused, match="which others may change"):
        _check(tmp_path / "link", tmp_path)


def _script(tmp_path: Path, first_lines: str) -> Path:
    executable = tmp_path / "bin" / COMMAND_NAME
    executable.parent.mkdir(exist_ok=True)
    executable.write_text(first_lines + "import sys\n")
    executable.chmod(0o755)
    return executable


@pytest.mark.parametrize(
    "launcher",
    [
        "#!{python}\n",
        "#!{python} -E\n",
        "#!/bin/sh\n'''exec' {python} \"$0\" \"$@\"\n' '''\n",  # pip's, for a long path
        "#!/bin/sh\n'''exec' \"{python}\" \"$0\" \"$@\"\n' '''\n",
    ],
    ids=["shebang", "shebang with an argument", "pip's launcher", "pip's launcher, quoted"],
)
def test_the_unit_runs_no_interpreter_others_may_change(tmp_path: Path, launcher: str) -> None:
    python = tmp_path / "venv" / "python3"
    python.parent.mkdir()
    python.write_bytes(b"\x7fELF")
    python.chmod(0o775)
    executable = _script(tmp_path, launcher.format(python=python))
    with pytest.raises(Refused, match=rf"which others may change \({python}\)"):
        _check(executable, tmp_path)
    python.chmod(0o755)
    _check(executable, tmp_path)
    python.parent.chmod(0o777)  # the directory it is in
    with pytest.raises(Refused, match="writable by others"):
        _check(executable, tmp_path)
    python.parent.chmod(0o755)
    (tmp_path / "venv" / "python").symlink_to(python)  # a link: what it points to counts
    executable = _script(tmp_path, f"#!{python.parent / 'python'}\n")
    python.chmod(0o757)
    with pytest.raises(Refused, match=rf"which others may change \({python}\)"):
        _check(executable, tmp_path)


def test_an_interpreter_found_on_path_is_refused(tmp_path: Path) -> None:
    with pytest.raises(Refused, match="through env"):
        _check(_script(tmp_path, "#!/usr/bin/env python3\n"), tmp_path)


def test_a_package_in_a_checkout_others_may_write_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An editable install runs the checkout's code as root at boot."""
    package = tmp_path / "checkout" / "src" / "sysctl_advisor"
    package.mkdir(parents=True)
    monkeypatch.setattr(sysctl_record, "PACKAGE", package)
    executable = _script(tmp_path, "#!/bin/sh\n")
    _check(executable, tmp_path)
    (tmp_path / "checkout").chmod(0o777)
    with pytest.raises(Refused, match=rf"imports the package in {package}: .*writable by others"):
        _check(executable, tmp_path)


def test_what_is_not_on_the_file_system_of_root_or_usr_is_refused(tmp_path: Path) -> None:
    """The unit runs before sysinit.target: what it runs must be on a file system mounted
    then (/proc stands in here for the only one: everything else is elsewhere)."""
    executable = _script(tmp_path, "#!/bin/sh\n")
    with pytest.raises(Refused, match=rf"{executable} is not on the file system of /proc"):
        sysctl_record._check_executable(executable, (Path("/proc"),))


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to get past the root check")
def test_reading_a_record_that_is_not_installed_opens_nothing_else(tmp_path: Path) -> None:
    """Neither the cgroup root nor the unit directory is looked at: odd ones stay unseen."""
    (tmp_path / "open").mkdir()
    (tmp_path / "open").chmod(0o777)  # writable by others: refused where it is opened
    (tmp_path / "bpffs").mkdir()
    odd = Places(
        pin_dir=tmp_path / "bpffs" / "sysctl-advisor",
        unit_dir=tmp_path / "open" / "system",
        cgroup_root=tmp_path / "open",
        command=(),
    )
    assert sysctl_record.read_record(odd) is None


@root_only
def test_a_second_install_and_the_boot_run_write_nothing_under_the_unit_directory(
    places: Places, cgroup: Path
) -> None:
    """The boot run comes before /etc is checked and remounted: it pins and attaches only,
    even where the unit it would write differs; an install that finds the unit as it would
    write it writes nothing either."""
    first = _drive(places, ["install"])["install"][0]
    assert isinstance(first, list)

    def seen() -> dict[Path, tuple[int, int, int]]:
        return {
            path: (info.st_ino, info.st_mtime_ns, info.st_ctime_ns)
            for path in [places.unit_dir, *places.unit_dir.rglob("*")]
            if (info := path.lstat())
        }

    before = seen()
    out = _drive(places, ["install"])  # a fresh bpffs: as after a reboot
    unit = places.unit_dir / "sysctl-advisor-record.service"
    assert f"kept {unit}" in out["install"][0]
    assert seen() == before
    other = dataclasses.replace(places, command=(*places.command[:1], "facts", "--install"))
    out = _drive(other, ["boot", "install_plan", "install", "attached", "write", "record"], WRITER)
    assert seen() == before
    plan, done = out["install_plan"][0], out["install"][0]
    assert isinstance(plan, list) and isinstance(done, list)
    assert f"unit: {places.unit_dir} is left alone (the boot run)" in plan
    assert f"pinned {places.pin_dir / 'writes'}" in done
    assert not any(str(places.unit_dir) in line for line in done)
    assert out["attached"][0] != []
    recorded = out["record"][0]
    assert isinstance(recorded, dict)
    assert recorded["writes"]["net.core.somaxconn"][:2] == ["4096\n", 2]
    assert attached(cgroup) == []
