"""Which files a knowledge load reads: a rules directory is listed whole, or refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sysctl_advisor.knowledge.knowledge_files import rule_files
from sysctl_advisor.model.errors import InputError


def test_a_folder_that_cannot_be_listed_is_an_error_not_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fourth review: a folder os.walk could not list (mode 000 for this user) was skipped
    without a word, and a rule it held (an override of a shipped id) silently not loaded. The
    refusal is simulated, so the test means the same as root."""
    (tmp_path / "open").mkdir()
    (tmp_path / "open" / "a.yaml").write_text("id: a.b\n")
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "s.yaml").write_text("id: s.t\n")
    assert [p.name for p in rule_files(tmp_path)] == ["a.yaml", "s.yaml"]
    listing = os.scandir

    def refuse(path: object = ".") -> object:
        if str(path).endswith("secret"):
            raise PermissionError(13, "Permission denied", str(path))
        return listing(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", refuse)
    with pytest.raises(InputError) as caught:
        rule_files(tmp_path)
    assert str(caught.value) == f"{tmp_path / 'secret'}: cannot list it: Permission denied"
