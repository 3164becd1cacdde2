"""Program paths judged as paths: a kernel.core_pattern pipe or a kernel.modprobe that hands
root a program someone other than root chooses is an error (a path that climbs or is not
written plainly, a % specifier the crashing process fills in, a shell, interpreter or wrapper
whose arguments say what runs, a file outside the system program directories); the
distributions' handlers pass; any other clean program is named as unknown (a warning).
Payloads are built at test time, around a directory the test owns."""

from __future__ import annotations

from pathlib import Path

import pytest

from sysctl_advisor.engine.check.findings import CheckContext
from sysctl_advisor.engine.check.judge import Checker
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.kernel_version import KernelVersion
from sysctl_advisor.sources.sysctl_files import read_file

PROGRAM_RULES = {
    "kernel.core_pattern": "check.core-pattern-program",
    "kernel.modprobe": "check.modprobe-program",
}
UNKNOWN = "check.unknown-helper-program"
TRUNCATED = "check.helper-value-truncated"


def findings(kb: KnowledgeBase, tmp_path: Path, key: str, value: str) -> dict[str, str]:
    """Rule id -> severity of what `check` reports on the one line `key = value`."""
    conf = tmp_path / "50-helper.conf"
    conf.write_text(f"{key} = {value}\n")
    context = CheckContext(kernel=KernelVersion.parse("6.12.0"))
    report = Checker(kb, kb.check_rules, context).check_config(read_file(conf))
    return {f.id: f.severity for f in report}


def attacks(planted: Path) -> list[tuple[str, str]]:
    """The review's payloads and their kin, each running `planted` (a file anyone could
    write) as root, through a program or path that starts in a system directory."""
    evil = str(planted)
    climb = "/usr/.." + evil  # /usr/../tmp/...: starts with /usr/, lands in the test's dir
    return [
        ("kernel.core_pattern", f"|{climb} %p"),
        ("kernel.core_pattern", f"|/usr/bin/env {evil} %p"),
        ("kernel.core_pattern", f"|/bin/sh -c {evil}"),
        ("kernel.core_pattern", f"|/usr/bin/python3 {evil}.py"),
        ("kernel.core_pattern", f"|/usr/bin/perl {evil}.pl %p"),
        ("kernel.core_pattern", f"|/bin/busybox sh {evil}"),
        ("kernel.core_pattern", f"|/lib64/ld-linux-x86-64.so.2 {evil}"),
        ("kernel.core_pattern", "|/usr/tmp/" + planted.name),  # /usr/tmp: /var/tmp on some
        ("kernel.core_pattern", "|/usr/./bin/" + planted.name),
        ("kernel.core_pattern", "|/usr//bin/" + planted.name),
        ("kernel.core_pattern", "|/usr/lib/%e"),  # the crashing process names the program
        ("kernel.core_pattern", "|/usr/lib/%%%e"),  # a plain % and then a specifier
        ("kernel.core_pattern", "|" + planted.name + " %p"),  # relative: looked up from /
        ("kernel.core_pattern", f"|{evil} %p"),
        ("kernel.modprobe", "/sbin/.." + evil),
        ("kernel.modprobe", "/usr/bin/env"),
        ("kernel.modprobe", evil),
        ("kernel.modprobe", planted.name),
    ]


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    path = tmp_path / "evil"
    path.write_text("#!/bin/sh\n")
    return path


def test_each_attack_is_an_error_of_its_key(
    kb: KnowledgeBase, tmp_path: Path, planted: Path
) -> None:
    for key, value in attacks(planted):
        found = findings(kb, tmp_path, key, value)
        assert found.get(PROGRAM_RULES[key]) == "error", (key, value, found)
        assert UNKNOWN not in found, (key, value, found)


def test_every_runner_of_the_table_is_refused_in_every_system_directory(
    kb: KnowledgeBase, tmp_path: Path, planted: Path
) -> None:
    """A shell, interpreter or wrapper in a system directory runs what its arguments name."""
    for runner in kb.helpers.spec.runners:
        for name in runner.names:
            program = name.replace("*", "3.12")  # python* -> python3.12
            for directory in ("/usr/bin/", "/bin/", "/usr/local/bin/"):
                for key, value in (
                    ("kernel.core_pattern", f"|{directory}{program} {planted}"),
                    ("kernel.modprobe", f"{directory}{program}"),
                ):
                    found = findings(kb, tmp_path, key, value)
                    assert found.get(PROGRAM_RULES[key]) == "error", (value, found)


@pytest.mark.parametrize("key", sorted(PROGRAM_RULES))
def test_the_distributions_handlers_pass(kb: KnowledgeBase, tmp_path: Path, key: str) -> None:
    handlers = kb.helpers.spec.keys[key].handlers
    assert handlers
    for handler in handlers:
        value = f"|{handler.path} %P %u %g %s %t %c %h" if key.endswith("pattern") else handler.path
        assert findings(kb, tmp_path, key, value) == {}, value


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("kernel.core_pattern", "|/usr/local/bin/site-crash-handler %p"),
        ("kernel.core_pattern", "|/usr/libexec/site/crash %P"),
        ("kernel.modprobe", "/usr/bin/modprobe"),
        ("kernel.core_pattern", "|/usr/local/bin/crash%%log"),  # %% is a plain %, no specifier
    ],
)
def test_a_clean_program_no_distribution_installs_is_named_as_unknown(
    kb: KnowledgeBase, tmp_path: Path, key: str, value: str
) -> None:
    assert findings(kb, tmp_path, key, value) == {UNKNOWN: "warning"}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("kernel.core_pattern", "core"),
        ("kernel.core_pattern", "/var/crash/core.%e.%p"),
        ("kernel.core_pattern", "|"),  # the kernel aborts every dump: it runs nothing
        ("kernel.modprobe", ""),  # module autoloading off
    ],
)
def test_a_value_that_names_no_program_is_not_judged_as_one(
    kb: KnowledgeBase, tmp_path: Path, key: str, value: str
) -> None:
    found = findings(kb, tmp_path, key, value)
    assert not {PROGRAM_RULES[key], UNKNOWN} & set(found), found


@pytest.mark.parametrize(("key", "keeps"), [("kernel.core_pattern", 127), ("kernel.modprobe", 255)])
def test_a_value_longer_than_the_kernel_keeps_is_an_error(
    kb: KnowledgeBase, tmp_path: Path, key: str, keeps: int
) -> None:
    """proc_dostring keeps the first size - 1 characters and reports the write done."""
    handler = kb.helpers.spec.keys[key].handlers[0].path
    start = f"|{handler} " if key.endswith("pattern") else handler
    fits = start + "x" * (keeps - len(start))
    assert len(fits) == keeps and TRUNCATED not in findings(kb, tmp_path, key, fits)
    assert findings(kb, tmp_path, key, fits + "y").get(TRUNCATED) == "error"
