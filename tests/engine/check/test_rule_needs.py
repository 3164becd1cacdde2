"""Each check rule runs when what it declares it needs (`needs`: kernel, facts, profile) is
known, and reads nothing its needs do not make known: an era quantity that depends on the
release alone is there for a bare --kernel; one that reads the host needs the facts; a rule
reading more is refused when the rules load."""

from __future__ import annotations

from pathlib import Path

import pytest

from sysctl_advisor.engine.check.findings import CheckContext
from sysctl_advisor.engine.check.judge import Checker
from sysctl_advisor.engine.check.pipeline import judge_config
from sysctl_advisor.knowledge.catalog import KernelContext
from sysctl_advisor.knowledge.check_rules import check_needs
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.kernel_version import KernelVersion
from sysctl_advisor.sources.sysctl_files import read_file
from tests.conftest import Cli, assert_one_line_error

# Two 2 GiB maxima, as the public files the rule's cases cite write them.
TWO_GIB = (
    "net.core.rmem_max = 2147483647\n"
    "net.core.wmem_max = 2147483647\n"
    "net.ipv4.tcp_rmem = 4096 87380 2147483647\n"
    "net.ipv4.tcp_wmem = 4096 65536 2147483647\n"
)


def _ids(kb: KnowledgeBase, text: str, kernel: str, tmp_path: Path) -> list[str]:
    path = tmp_path / "99-tuning.conf"
    path.write_text(text)
    context = CheckContext(kernel=KernelVersion.parse(kernel))
    found, _ = judge_config(Checker(kb, kb.check_rules, context), read_file(path))
    return [f.id for f in found]


@pytest.mark.parametrize(("kernel", "wraps"), [("4.9", True), ("5.15", True), ("6.1", False)])
def test_a_bare_kernel_runs_the_rules_that_need_only_the_release(
    kb: KnowledgeBase, tmp_path: Path, kernel: str, wraps: bool
) -> None:
    found = _ids(kb, TWO_GIB, kernel, tmp_path)
    assert (found.count("check.backlog-limit-wraps") == 2) == wraps, found


def test_check_kernel_515_errors_on_two_2gib_maxima_and_61_does_not(
    cli: Cli, tmp_path: Path
) -> None:
    path = tmp_path / "local.conf"
    path.write_text(TWO_GIB)
    old = cli("check", path, "--kernel", "5.15")
    assert old.exit_code == 1 and "check.backlog-limit-wraps" in old.stdout, old.stdout
    new = cli("check", path, "--kernel", "6.1")
    assert new.exit_code == 0 and "check.backlog-limit-wraps" not in new.stdout, new.stdout


def test_a_bare_kernel_gets_the_release_quantities_and_not_the_host_ones(
    kb: KnowledgeBase,
) -> None:
    needs = kb.catalog.quantity_needs
    kernel = kb.catalog.release_context(KernelVersion.parse("5.15"))
    for name, need in needs.items():
        assert (name in kernel.fields) == (need == "kernel"), name
    assert kernel.backlog_limit_wraps is True
    assert needs["socket_slab_bytes"] == "facts"  # `host.calibrated` reads the facts


def test_the_release_quantities_are_the_facts_kernel_ones(kb: KnowledgeBase) -> None:
    """A quantity the release decides has the same value with or without the host."""
    from sysctl_advisor.engine.plan_builder import host_variables
    from sysctl_advisor.model.host_facts import facts_from_data

    for release in ("3.10.0-1160.el7.x86_64", "4.19.0", "5.15.0-91-generic", "6.18.0"):
        facts = facts_from_data({"kernel": release, "memory": {"total": "16 GiB"}})
        full = host_variables(kb, facts)[0]["kernel"]
        bare = kb.catalog.release_context(KernelVersion.parse(release))
        for name in bare.fields - KernelContext.BASE_FIELDS:
            assert getattr(bare, name) == getattr(full, name), (release, name)


def test_a_kernel_named_beside_facts_keeps_the_host_quantities(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    from sysctl_advisor.engine.check.host import host_context
    from sysctl_advisor.model.host_facts import facts_from_data

    facts = facts_from_data({"kernel": "6.18.0", "memory": {"total": "16 GiB"}})
    context = host_context(kb, facts)
    context.kernel = KernelVersion.parse("5.15")
    checker = Checker(kb, kb.check_rules, context)
    kernel = checker._kernel
    assert kernel is not None and kernel.short == "5.15.0"
    assert kernel.backlog_limit_wraps is True and "socket_slab_bytes" in kernel.fields


RULE = """id: check.site-{name}
severity: warning
title: a site rule
keys: [net.core.somaxconn]
{needs}when: "{when}"
message: "{message}"
rationale: "A site's own rule."
references:
  - "linux-6-18-doc-ip-sysctl: somaxconn"
examples:
  fires: "net.core.somaxconn = 128\\n"
  quiet: "net.core.somaxconn = 4096\\n"
"""


def _rules(tmp_path: Path, name: str, needs: str, when: str, message: str = "low") -> Path:
    rules = tmp_path / name / "site-rules"
    (rules / "check").mkdir(parents=True)
    text = RULE.format(name=name, needs=needs, when=when, message=message)
    (rules / "check" / f"site-{name}.yaml").write_text(text)
    return rules


@pytest.mark.parametrize(
    ("needs", "when", "message", "words"),
    [
        ("", "kernel.backlog_limit_wraps", "low", ("when", "kernel.backlog_limit_wraps", "kernel")),
        ("", "true", "{{ kernel.udp_gso }}", ("message", "kernel.udp_gso")),
        ("needs: [kernel]\n", "kernel.socket_slab_bytes > 0", "low", ("`facts`",)),
        ("needs: [kernel]\n", "host.total_bytes > 0", "low", ("host", "`facts`")),
        ("needs: [kernel]\n", "kernel.backlog_limit_wrap", "low", ("no such field",)),
    ],
)
def test_a_rule_reading_what_its_needs_do_not_give_fails_at_load(
    cli: Cli, tmp_path: Path, needs: str, when: str, message: str, words: tuple[str, ...]
) -> None:
    rules = _rules(tmp_path, f"r{len(when)}{len(message)}", needs, when, message)
    result = cli("rules", "--rules-dir", str(rules))
    assert_one_line_error(result.exit_code, result.stderr, "site-r", *words)


@pytest.mark.parametrize(
    ("needs", "when"),
    [
        ("needs: [kernel]\n", "kernel.backlog_limit_wraps"),
        ("needs: [facts]\n", "kernel.backlog_limit_wraps"),
        ("needs: [facts]\n", "kernel.socket_slab_bytes > 0 and host.total_bytes > 0"),
        ("", "kernel is none or kernel.short == '5.15.0'"),
    ],
)
def test_a_rule_whose_needs_give_what_it_reads_loads(
    cli: Cli, tmp_path: Path, needs: str, when: str
) -> None:
    rules = _rules(tmp_path, f"ok{len(needs)}{len(when)}", needs, when)
    result = cli("rules", "--rules-dir", str(rules))
    assert result.exit_code == 0, result.stderr


def test_every_shipped_rule_reads_only_what_its_needs_give(kb: KnowledgeBase) -> None:
    check_needs(kb.check_rules, kb.compiler, kb.catalog.quantity_needs, KernelContext.BASE_FIELDS)


def _per_interface(kb: KnowledgeBase) -> list[str]:
    """The catalog's per-interface keys: listed with `*` for the interface, or modelled
    under an interface's name (all, default)."""
    names = [*kb.catalog.keys, *kb.catalog.known]
    found = [n for n in names if ".conf.*." in n or ".conf.all." in n or ".conf.default." in n]
    assert any(".rp_filter" in n for n in found)
    return found


@pytest.mark.parametrize("kernel", [None, "4.19", "6.18"])
def test_a_glob_over_interfaces_reaches_every_per_interface_key_of_the_catalog(
    kb: KnowledgeBase, tmp_path: Path, kernel: str | None
) -> None:
    for name in _per_interface(kb):
        prefix, _, leaf = name.partition(".conf.")
        leaf = leaf.split(".", 1)[1]
        for glob in (f"{prefix}.conf.*.{leaf}", f"{prefix}.conf.eth*.{leaf}"):
            path = tmp_path / "glob.conf"
            path.write_text(f"{glob} = 0\n")
            context = CheckContext(kernel=KernelVersion.parse(kernel) if kernel else None)
            found, _ = judge_config(Checker(kb, kb.check_rules, context), read_file(path))
            said = [f.message for f in found if f.id == "check.glob"]
            assert said and "matches none" not in said[0] and name in said[0], (glob, said)


def test_a_glob_reaches_no_interface_key_it_does_not_spell(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    path = tmp_path / "glob.conf"
    path.write_text("net.ipv4.conf.*.no_such_setting = 1\nnet.ipv4.conf.*.rp_filters = 1\n")
    found, _ = judge_config(Checker(kb, kb.check_rules, CheckContext()), read_file(path))
    said = [f.message for f in found if f.id == "check.glob"]
    assert len(said) == 2 and all("matches none" in m for m in said), said
