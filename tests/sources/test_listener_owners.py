"""Whose listening socket it is, read where servers open their listeners first: a host whose
servers hold thousands of connections each costs `facts` what an idle one does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sysctl_advisor.sources.listeners import FIRST_FDS, _owners


def _process(proc: Path, pid: int, fds: dict[int, str]) -> None:
    fd = proc / str(pid) / "fd"
    fd.mkdir(parents=True)
    for number, target in fds.items():
        (fd / str(number)).symlink_to(target)


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    read: list[str] = []
    real = os.readlink

    def counted(path: str) -> str:
        read.append(target := real(path))
        return target

    monkeypatch.setattr(os, "readlink", counted)
    return read


def test_servers_full_of_connections_are_read_only_to_their_first_descriptors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three servers, each its listener at fd 3 and 1,000 connections after it: the owners are
    found without reading one connection."""
    proc = tmp_path / "proc"
    for pid, inode in ((100, 5001), (200, 5002), (300, 5003)):
        connections = {fd: f"socket:[{pid * 10_000 + fd}]" for fd in range(4, 1004)}
        _process(proc, pid, {3: f"socket:[{inode}]", **connections})
    read = _counted(monkeypatch)
    assert _owners({5001, 5002, 5003}, proc) == {5001: 100, 5002: 200, 5003: 300}
    connections_read = [int(target[8:-1]) % 10_000 for target in read if int(target[8:-1]) > 9_999]
    assert connections_read and max(connections_read) < FIRST_FDS  # never past the first ones


def test_a_listener_opened_late_is_still_found_and_the_lowest_pid_owns_a_shared_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proc = tmp_path / "proc"
    _process(proc, 10, {3: "socket:[7]", 5000: "socket:[8]"})  # 8 opened after many others
    _process(proc, 11, {3: "socket:[7]"})  # a worker sharing its master's listener
    _counted(monkeypatch)
    assert _owners({7, 8}, proc) == {7: 10, 8: 10}
