"""A baseline's names are looked for only beneath its root: a name that climbs out in its
text, is absolute, holds a NUL, or leads out through a link in the root is never looked at,
so what lies outside never decides which baselined files are gone."""

from __future__ import annotations

import os
from pathlib import Path

from sysctl_advisor.sources.check_inputs import gone_files


def test_names_leaving_the_root_are_never_looked_at(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "present").write_text("")
    root = tmp_path / "repo"
    (root / "sysctl.d").mkdir(parents=True)
    (root / "sysctl.d" / "kept.conf").write_text("")
    os.symlink(outside, root / "out")  # a directory link leading out of the root
    os.symlink(outside, root / "sysctl.d" / "deeper")
    names = [
        "out/absent",  # missing outside: looking would call it gone
        "sysctl.d/deeper/absent",
        "out/present",
        "../outside/absent",
        f"{outside}/absent",
        "sysctl.d/a\0b.conf",
        "sysctl.d/kept.conf",
        "sysctl.d/removed.conf",
        "sysctl.d/../removed-too.conf",
    ]
    assert gone_files(root, names) == {"sysctl.d/removed.conf", "sysctl.d/../removed-too.conf"}


def test_a_root_that_is_no_directory_finds_nothing_gone(tmp_path: Path) -> None:
    assert gone_files(tmp_path / "missing", ["a.conf"]) == frozenset()
