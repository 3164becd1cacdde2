"""A value in force that a tuning daemon (tuned's network-throughput) or a
file set is this host's default, not the kernel's: every output says who set it and gives the
kernel's own (modelled) default beside it."""

from __future__ import annotations

import json

import pytest

from sysctl_advisor.engine.plan_builder import build_plan, host_defaults
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.host_facts import facts_from_data
from tests.conftest import TESTS, invoke, load_facts

FACTS = TESTS / "fixtures" / "tuned" / "dtn-network-throughput.yaml"
TUNED_FILE = "/usr/lib/tuned/network-throughput/tuned.conf"


def _run(*args: str) -> str:
    result = invoke(*args)
    assert result.exit_code in (0, 1), result.stderr
    return result.stdout


def _modelled(kb: KnowledgeBase, key: str) -> str:
    """The kernel's own default for the fixture host, as the catalog models it."""
    facts = load_facts(FACTS)
    bare = facts_from_data(
        {"kernel": facts.kernel, "arch": facts.arch, "memory": {"total": "64 GiB"}}
    )
    default = host_defaults(kb, bare)[key]
    assert default is not None
    return default


def test_a_value_tuned_set_is_the_host_default_said_as_set_by_tuned(kb: KnowledgeBase) -> None:
    plan = build_plan(kb, load_facts(FACTS), "gridftp")
    rmem = next(s for s in plan.settings if s.key == "net.ipv4.tcp_rmem")
    assert rmem.kernel_default == "4096 131072 16777216"  # what the host keeps without advice
    assert rmem.default_set_by is not None and "tuned" in rmem.default_set_by
    assert f"{TUNED_FILE}:14" in rmem.default_set_by
    assert rmem.modelled_default == _modelled(kb, "net.ipv4.tcp_rmem") != rmem.kernel_default


def test_a_value_no_file_sets_names_no_setter_and_keeps_the_kernels_beside_it(
    kb: KnowledgeBase,
) -> None:
    plan = build_plan(kb, load_facts(FACTS), "frontend-proxy")
    syn = next(s for s in plan.settings if s.key == "net.ipv4.tcp_max_syn_backlog")
    assert syn.kernel_default == "1024"
    assert syn.default_set_by is not None and "tuned" not in syn.default_set_by
    assert syn.modelled_default == _modelled(kb, "net.ipv4.tcp_max_syn_backlog")
    somaxconn = next(s for s in plan.settings if s.key == "net.core.somaxconn")
    assert somaxconn.default_set_by is None and somaxconn.modelled_default is None


def test_a_sysctl_d_file_is_not_a_tuning_daemon(kb: KnowledgeBase) -> None:
    """A sysctl.d file's value far from the model stays the operator's: the default is the
    kernel's, and nothing says otherwise; a path that leaves tuned's directories is not
    tuned's."""
    data = {
        "kernel": "5.14.0-427.13.1.el9_4.x86_64",
        "arch": "x86_64",
        "memory": {"total": "64 GiB"},
        "sysctl": {"net.ipv4.tcp_rmem": "4096 131072 16777216"},
        "sysctl_files": {"net.ipv4.tcp_rmem": "/etc/sysctl.d/90-net.conf:1"},
    }
    rmem = next(
        s
        for s in build_plan(kb, facts_from_data(data), "gridftp").settings
        if s.key == "net.ipv4.tcp_rmem"
    )
    assert rmem.kernel_default == _modelled(kb, "net.ipv4.tcp_rmem")
    assert rmem.default_set_by is None
    assert kb.catalog.tuning_daemon(f"{TUNED_FILE}:14") == "tuned"
    assert kb.catalog.tuning_daemon("/etc/tuned/../sysctl.d/90-net.conf:1") is None
    assert kb.catalog.tuning_daemon("/etc/tunedx/a/tuned.conf:1") is None


@pytest.mark.parametrize("fmt", ["conf", "tuned", "markdown", "json"])
def test_every_plan_format_says_who_set_the_default(kb: KnowledgeBase, fmt: str) -> None:
    out = _run("recommend", "--facts", str(FACTS), "-p", "gridftp", "-f", fmt)
    modelled = _modelled(kb, "net.ipv4.tcp_rmem")
    if fmt == "json":
        rmem = next(s for s in json.loads(out)["settings"] if s["key"] == "net.ipv4.tcp_rmem")
        assert TUNED_FILE in rmem["default_set_by"] and rmem["modelled_default"] == modelled
        return
    assert "kernel default here: 4096 131072 16777216" not in out
    rmem_block = out[out.index("net.ipv4.tcp_rmem") :]
    assert "host default" in rmem_block and TUNED_FILE in rmem_block and modelled in rmem_block


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_the_diff_default_column_says_who_set_it(kb: KnowledgeBase, fmt: str) -> None:
    out = _run("diff", "--facts", str(FACTS), "-p", "gridftp", "-f", fmt)
    modelled = _modelled(kb, "net.ipv4.tcp_wmem")
    if fmt == "json":
        entry = next(e for e in json.loads(out)["entries"] if e["key"] == "net.ipv4.tcp_wmem")
        assert entry["kernel_default"] == "4096 16384 16777216"
        assert TUNED_FILE in entry["default_set_by"] and entry["modelled_default"] == modelled
        return
    # the key's row, or its block where the table is too narrow for the whole cell
    row = " ".join(out[out.index("net.ipv4.tcp_wmem") :].split("\nchange", 1)[0].split())
    assert "host default" in row and "tuned" in row and modelled in row


def test_explain_says_who_set_the_default() -> None:
    out = _run("explain", "net.ipv4.tcp_wmem", "--facts", str(FACTS), "-p", "gridftp")
    assert "kernel default here: 4096 16384 16777216" not in out
    assert any("host default here" in line and "tuned" in line for line in out.splitlines())
