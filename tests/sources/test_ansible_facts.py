"""Ansible facts -> HostFacts: real `setup --tree` output, both key spellings, broken hosts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sysctl_advisor.model.errors import InputError
from sysctl_advisor.sources.ansible_facts import host_facts_from_document, load_ansible_facts
from tests.conftest import ROOT, TESTS, Cli, load_facts

TREE = TESTS / "fixtures" / "ansible" / "tree"
MIB = 1024 * 1024


def test_real_setup_output_maps_onto_host_facts() -> None:
    facts = load_ansible_facts(TREE / "web-01")  # captured from this project's CI machine
    assert facts.hostname == "web-01"
    assert facts.kernel == "6.18.44-fc-v669"
    assert facts.arch == "x86_64" and facts.bits == 64
    assert facts.memory.total == 24105 * MIB
    assert facts.cpu.threads == 2
    # lo is loopback; ifb0/ifb1 have neither driver module nor link speed: not NICs
    assert [(n.name, n.driver, n.speed_mbps, n.mtu) for n in facts.nics] == [
        ("eth0", None, None, 1400)  # speed -1 means unknown
    ]


def test_interfaces_bridges_vlans_and_dashes() -> None:
    facts = load_ansible_facts(TREE / "dtn-01")
    assert facts.memory.total == 128 * 1024 * MIB
    assert facts.cpu.threads == 32
    assert [(n.name, n.driver, n.speed_mbps, n.mtu) for n in facts.nics] == [
        ("ens1f0", "ixgbe", 10000, 9000),
        ("ens1f1", "ixgbe", None, 1500),
    ]  # br-data (a bridge, fact key ansible_br_data) and the VLAN ens1f0.100 are left out
    assert facts.fastest_nic_mbps == 10000


def test_unprefixed_keys_and_cpu_topology() -> None:
    facts = load_ansible_facts(TREE / "door-07")
    assert (facts.arch, facts.bits, facts.lowmem) == ("i386", 32, 896 * MIB)
    assert facts.cpu.threads == 2 * 4 * 2  # processor_count x cores x threads per core
    assert [(n.name, n.driver, n.speed_mbps) for n in facts.nics] == [("eth0", "bnx2", 1000)]


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("db-02", ["db-02", "unreachable", "Connection timed out"]),
        ("broken-03", ["broken-03:3", "not JSON"]),
        ("nomem-04", ["nomem-04", "no memory facts"]),
    ],
)
def test_broken_hosts_are_one_line_errors(name: str, words: list[str]) -> None:
    with pytest.raises(InputError) as info:
        load_ansible_facts(TREE / name)
    message = str(info.value)
    assert "\n" not in message
    for word in words:
        assert word in message


def test_bad_values_name_the_field() -> None:
    document = {"ansible_facts": {"memtotal_mb": 1024, "kernel": "not-a-kernel"}}
    with pytest.raises(InputError) as info:
        host_facts_from_document(document, "h1")
    assert str(info.value).startswith("h1: kernel:")
    with pytest.raises(InputError, match="expected a JSON object"):
        host_facts_from_document([1, 2], "h2")


def test_recommend_reads_one_hosts_setup_file(cli: Cli) -> None:
    result = cli("recommend", "--facts", str(TREE / "dtn-01"), "-p", "gridftp", "-f", "json")
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert plan["host"]["hostname"] == "dtn-01"
    assert plan["profile"]["params"]["bandwidth_mbps"] == 10000  # the fastest NIC
    assert load_facts(TREE / "dtn-01") == load_ansible_facts(TREE / "dtn-01")


@pytest.fixture(scope="module")
def live_facts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This machine's facts, gathered by the real `ansible` (installed with the test extras)."""
    ansible = shutil.which("ansible") or str(Path(sys.executable).parent / "ansible")
    if not Path(ansible).exists():
        pytest.skip("ansible-core is not installed (pip install '.[test]')")
    tree = tmp_path_factory.mktemp("ansible-tree")
    env = dict(os.environ, ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_NOCOLOR="1")
    subprocess.run(
        [ansible, "localhost", "-c", "local", "-m", "setup", "--tree", str(tree)],
        check=True,
        capture_output=True,
        env=env,
        timeout=120,
    )
    return tree / "localhost"


def test_live_ansible_facts_agree_with_our_collector(live_facts: Path) -> None:
    from sysctl_advisor.sources.local_host import collect

    ours = collect([])
    theirs = load_ansible_facts(live_facts)
    assert theirs.kernel == ours.kernel and theirs.arch == ours.arch
    # memtotal_mb is MemTotal in KiB, divided by 1024 and rounded down
    assert ours.memory.total - MIB < theirs.memory.total <= ours.memory.total
    assert theirs.cpu.threads == ours.cpu.threads
    # the same devices as NICs (a device link: Ansible's pciid), and every interface as links
    assert {n.name for n in theirs.nics} == {n.name for n in ours.nics}
    assert theirs.links == ours.links


def test_gather_facts_playbook_writes_the_same_facts(live_facts: Path, tmp_path: Path) -> None:
    """examples/gather-facts.yml (no --tree, unprefixed keys) reads the same as --tree output,
    and creates its output directory as the README's command expects."""
    playbook = shutil.which("ansible-playbook") or str(
        Path(sys.executable).parent / "ansible-playbook"
    )
    env = dict(os.environ, ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_NOCOLOR="1")
    example = ROOT / "examples" / "gather-facts.yml"
    facts = tmp_path / "not-yet" / "facts"
    subprocess.run(
        [playbook, "-i", "localhost,", "-c", "local", str(example), "-e", f"facts_dir={facts}"],
        check=True,
        capture_output=True,
        env=env,
        timeout=120,
    )
    document = json.loads((facts / "localhost").read_text())
    assert "memtotal_mb" in document["ansible_facts"]  # playbooks see facts without the prefix
    assert load_ansible_facts(facts / "localhost") == load_ansible_facts(live_facts)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "ansible_facts",
                    "memtotal_mb",
                    "ansible_memtotal_mb",
                    "memory_mb",
                    "real",
                    "total",
                    "kernel",
                    "architecture",
                    "interfaces",
                    "eth0",
                    "ansible_eth0",
                    "module",
                    "speed",
                    "mtu",
                    "type",
                    "processor_vcpus",
                    "processor_count",
                    "processor_cores",
                    "unreachable",
                    "msg",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=15,
)


@settings(max_examples=300, deadline=None)
@given(document=_JSON)
def test_arbitrary_documents_give_facts_or_one_line_errors(document: Any) -> None:
    try:
        facts = host_facts_from_document(document, "host")
    except InputError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("host")
    else:
        assert facts.memory.total > 0


def test_a_facts_tree_is_listed_as_names_in_order(tmp_path: Path) -> None:
    """fleet streams the hosts: the listing keeps names (not a Path per host), in the order
    sorted Paths would have, without hidden files, directories or dangling links."""
    from sysctl_advisor.sources.ansible_facts import FactFiles, fact_files

    for name in ("web-10", "web-2", "Web-1", "db.example.net", ".hidden"):
        (tmp_path / name).write_text("{}")
    (tmp_path / "a-directory").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "web-2")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    listed = fact_files(tmp_path)
    assert isinstance(listed, FactFiles)
    assert all(isinstance(name, str) for name in listed.names)
    expected = sorted(p for p in tmp_path.iterdir() if not p.name.startswith(".") and p.is_file())
    assert list(listed) == expected == [listed[i] for i in range(len(listed))]
    assert listed[1:3] == expected[1:3]
