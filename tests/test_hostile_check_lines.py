"""A hostile-input review of what `check` reads line by line: keys of very many components,
files of many duplicate lines under `--fix`. Each payload is built at test time; what is
asserted is the behaviour (a finding, a one-line error, a fixed file) and that the work done
stays linear in the file, counted rather than timed."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from sysctl_advisor.engine.check import fix
from sysctl_advisor.knowledge.kernel_keys import KernelKeys
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.kernel_version import KernelVersion
from tests.conftest import Cli, assert_one_line_error


class _CountingKeys(dict[str, str]):
    """The kernel-keys table, counting the names looked up in it."""

    looked_up = 0

    def __contains__(self, name: object) -> bool:
        type(self).looked_up += 1
        return super().__contains__(name)


def test_a_key_of_many_components_is_looked_up_in_bounded_work() -> None:
    """`a/a/.../sysctl x` (half a megabyte, 250,000 components) once took the kernel-keys
    lookup a name with `*` in each place in turn: quadratic, a hang. A key with more
    components than any the kernel lists is none of them."""
    keys = KnowledgeBase.lazy().kernel_keys
    counting = KernelKeys.__new__(KernelKeys)
    counting.__dict__.update(keys.__dict__)
    counting.spec = dataclasses.replace(keys.spec, keys=_CountingKeys(keys.spec.keys))
    deep = "net.ipv4.conf." + "a." * 5_000 + "rp_filter"
    _CountingKeys.looked_up = 0
    found = counting.verdict(deep, KernelVersion.parse("6.1"), False)
    assert found["exists"] is not True
    assert _CountingKeys.looked_up <= 20
    # an interface's key is still found with its name as `*`
    assert counting.verdict("net.ipv4.conf.eth0.rp_filter", KernelVersion.parse("6.1"), False)[
        "exists"
    ]


def test_a_line_of_many_components_gives_a_finding_or_one_line(cli: Cli, tmp_path: Path) -> None:
    conf = tmp_path / "deep.conf"
    conf.write_text("a/" * 250_000 + "sysctl x=1\nnet.core.somaxconn = 50\n")
    result = cli("check", conf, "--kernel", "6.1", "--isolated")
    assert_one_line_error(result.exit_code, result.stderr, "deep.conf:1")


def test_fix_of_many_duplicate_lines_reads_the_file_linearly(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A finding on every line of a file of one key set 3,000 times: the fix once parsed the
    rest of the file for each finding (10,000 lines took half a minute, 130,000 a hang)."""
    parsed = [0]
    real = fix.parse_conf_lines

    def counting(text: str) -> Any:
        parsed[0] += text.count("\n") + 1
        return real(text)

    monkeypatch.setattr(fix, "parse_conf_lines", counting)
    lines = 3_000
    conf = tmp_path / "dups.conf"
    conf.write_text("net.core.somaxconn = 4096\n" * (lines - 1) + "net.core.somaxconn = 8192\n")
    result = cli("check", conf, "--fix", "--isolated", "--fail-on", "never")
    assert result.exit_code == 0, result.stderr
    left = conf.read_text().splitlines()
    assert left[-1] == "net.core.somaxconn = 8192"
    assert len(left) < lines
    assert parsed[0] <= 20 * lines


@pytest.mark.parametrize(
    "lines",
    [
        ["sysctl -w net.core.somaxconn=" + "1" * 1_000_000],  # a pasted command
        ["net.ipv4.tcp_rmem = 4096 " + "8" * 600, "net.ipv4.tcp_rmem = 4096 " + "9" * 600],
        ["vm.dirty_bytes = 268435456 " + "x" * 600, "vm.dirty_ratio = 5"],  # twins
    ],
    ids=["shell-command", "duplicate", "twin"],
)
def test_a_message_quotes_a_long_value_in_part(cli: Cli, tmp_path: Path, lines: list[str]) -> None:
    """A structural finding quotes at most a few hundred characters of a line and says how
    long it is: a megabyte line gives a finding of a few hundred bytes, not of the line."""
    conf = tmp_path / "long.conf"
    conf.write_text("\n".join(lines) + "\n")
    result = cli("check", conf, "--isolated", "-f", "json")
    assert result.exit_code in (0, 1), result.output
    findings = json.loads(result.stdout)["findings"]
    structural = [
        f
        for f in findings
        if f["id"] in ("check.shell-command", "check.duplicate-key", "check.twin-cleared")
    ]
    assert structural, findings
    assert all(len(f["message"]) < 2_000 and "characters)" in f["message"] for f in structural)


def test_a_number_of_half_a_million_digits_beside_its_twin_clears_nothing(
    cli: Cli, tmp_path: Path
) -> None:
    """The twin thresholds read a line's number as the kernel does (a field that fills its
    21-character buffer is refused), never with int() on the whole text: Python's limit on
    digits once made this an internal error. The kernel refuses that write, so the ratio
    written after it clears nothing: no finding."""
    conf = tmp_path / "twin.conf"
    conf.write_text("vm.dirty_bytes = 1" + "0" * 500_000 + "\nvm.dirty_ratio = 5\n")
    result = cli("check", conf, "--isolated", "--select", "check.twin-cleared", "-f", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["findings"] == []


def test_a_key_is_never_its_own_suggestion(cli: Cli, tmp_path: Path) -> None:
    conf = tmp_path / "empty.conf"
    conf.write_text("net.ipv4.conf..rp_filter = 1\n")
    result = cli("check", conf, "--kernel", "6.1", "--isolated", "-f", "json")
    [finding] = json.loads(result.stdout)["findings"]
    assert finding["id"] == "check.key-not-in-kernel"
    assert "did you mean" not in finding["message"].lower()
