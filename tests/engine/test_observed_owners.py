"""The observed owner: a write the host was seen making, joined with the writers catalog, gathered
per key, writer and network namespace, with the fix in the owner's configuration; two writers
taking turns on a key are a drift.writers-fight finding."""

from __future__ import annotations

from typing import Any

import pytest

from sysctl_advisor.engine.observed_owners import observed_owners, writers_by_key
from sysctl_advisor.engine.owners import owners
from sysctl_advisor.engine.plan_builder import build_plan, host_variables
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.host_facts import HostFacts, facts_from_data
from tests.conftest import TESTS, load_facts

FRONTEND = TESTS / "fixtures" / "writers-observed" / "frontend.yaml"
HOST_NS = {"kind": "host", "inode": 4026531840}
POD = {"uid": "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b", "namespace": "shop", "name": "cart-5d9f"}


def _write(key: str, value: str, **fields: Any) -> dict[str, Any]:
    return {"key": key, "value": value, "time": "2026-12-07T10:00:00Z", **fields}


def _facts(*writes: dict[str, Any], provenance: str = "watch 5s") -> HostFacts:
    return facts_from_data(
        {
            "hostname": "web-7",
            "kernel": "6.1.0",
            "memory": {"total": 16 * 2**30},
            "cpu": {"threads": 8},
            "sysctl": {"net.core.somaxconn": "2048"},
            "writers": {"provenance": provenance, "writes": list(writes)},
        }
    )


def _owners(kb: KnowledgeBase, facts: HostFacts, key: str, profile: str | None = None) -> list[Any]:
    plan = build_plan(kb, facts, profile) if profile else None
    observed = observed_owners(kb, facts, plan)
    assert observed is not None
    return observed.by_key.get(key, [])


@pytest.mark.parametrize(
    ("fields", "writer", "by"),
    [
        ({"comm": "tuned", "unit": "tuned.service"}, "tuned", "process tuned"),
        ({"comm": "sysctl", "unit": "docker.service"}, "dockerd", "unit docker.service"),
        (
            {"comm": "sysctl", "unit": "wg-quick@wg0.service"},
            "wg-quick",
            "unit wg-quick@wg0.service",
        ),
        ({"comm": "sysctl", "unit": "k3s-agent.service"}, "k3s", "unit k3s-agent.service"),
        ({"comm": "sysctl", "parent_comm": "wg-quick"}, "wg-quick", "parent wg-quick"),
        ({"comm": "systemd-network"}, "systemd-networkd", "process systemd-network"),
        ({"comm": "sh", "netns": {"kind": "pod", "pod": POD}}, "pod", "a pod"),
        ({"comm": "sh", "pod": POD, "netns": HOST_NS}, "pod", "a pod"),
    ],
)
def test_a_write_names_its_catalog_writer(
    kb: KnowledgeBase, fields: dict[str, Any], writer: str, by: str
) -> None:
    facts = _facts(_write("net.ipv4.conf.all.src_valid_mark", "1", **fields))
    [owner] = _owners(kb, facts, "net.ipv4.conf.all.src_valid_mark")
    assert (owner.writer, owner.named_by) == (writer, by)


def test_an_unknown_writer_is_named_by_what_it_shows_never_guessed(kb: KnowledgeBase) -> None:
    facts = _facts(
        _write(
            "net.core.somaxconn",
            "4096",
            comm="tune-net",
            parent_comm="cron",
            unit="cron.service",
            netns=HOST_NS,
        )
    )
    [owner] = _owners(kb, facts, "net.core.somaxconn", "frontend-proxy")
    assert owner.writer is None and owner.named_by is None
    assert owner.name == "tune-net (unit cron.service) (parent cron)"
    assert owner.fix is not None and "no known writer" in owner.fix
    assert owner.fix_target is None


def test_an_observed_write_is_a_sign_the_writer_runs(kb: KnowledgeBase) -> None:
    """TuneD shows by no process in the facts, only by a write it was seen making."""
    facts = _facts(_write("net.core.somaxconn", "2048", comm="tuned", netns=HOST_NS))
    variables, _, _ = host_variables(kb, facts)
    found = {w.writer.id: w.signs for w in owners(kb, variables).writes}
    assert "tuned" in found
    assert any("net.core.somaxconn seen (process tuned)" in sign for sign in found["tuned"])
    quiet = facts_from_data({"kernel": "6.1.0", "memory": {"total": 16 * 2**30}})
    variables, _, _ = host_variables(kb, quiet)
    assert "tuned" not in {w.writer.id for w in owners(kb, variables).writes}


def test_the_fix_goes_in_the_owners_configuration(kb: KnowledgeBase) -> None:
    facts = load_facts(FRONTEND)
    plan = build_plan(kb, facts, "frontend-proxy")
    observed = observed_owners(kb, facts, plan)
    assert observed is not None
    somaxconn = {o.writer: o for o in observed.by_key["net.core.somaxconn"]}
    assert somaxconn["tuned"].fix == "[sysctl] net.core.somaxconn=16384"
    assert somaxconn["tuned"].fix_target == "tuned"
    assert (somaxconn["tuned"].count, somaxconn["tuned"].in_force) == (2, True)
    # sysctl under sh in docker.service: a command of the unit wrote it, not dockerd's setting
    assert somaxconn["dockerd"].fix is not None
    assert somaxconn["dockerd"].fix.startswith("a command of docker.service")
    assert somaxconn["dockerd"].fix_target == "docker.service"
    # a pod's write of a key the kubelet does not let a pod set: the init container's command
    pod = somaxconn["pod"]
    assert not pod.in_force and pod.namespace == "pod shop/cart-5d9f"
    assert pod.fix is not None and "init container of pod shop/cart-5d9f" in pod.fix
    # one it does (a safe sysctl): the pod spec's securityContext.sysctls
    [ports] = observed.by_key["net.ipv4.ip_local_port_range"]
    assert ports.fix is not None and ports.fix.startswith(
        'securityContext: {sysctls: [{name: net.ipv4.ip_local_port_range, value: "10240 65535"}]}'
    )


def test_only_writes_in_the_host_namespace_explain_the_value_in_force(kb: KnowledgeBase) -> None:
    facts = _facts(
        _write("net.core.somaxconn", "1024", comm="sh", netns={"kind": "pod", "pod": POD}),
        _write("net.core.somaxconn", "2048", comm="tuned", netns=HOST_NS),
        _write("net.core.somaxconn", "512", comm="tuned"),  # namespace not given
        _write("vm.swappiness", "10", comm="tuned"),  # not per namespace: the host's
    )
    found = _owners(kb, facts, "net.core.somaxconn")
    assert [(o.name, o.namespace, o.in_force) for o in found] == [
        ("TuneD", "host", True),
        ("TuneD", "not given", None),
        ("a pod", "pod shop/cart-5d9f", False),
    ]
    [swappiness] = _owners(kb, facts, "vm.swappiness")
    assert swappiness.in_force


def test_two_writers_taking_turns_are_a_fight(kb: KnowledgeBase) -> None:
    observed = observed_owners(kb, load_facts(FRONTEND), None)
    assert observed is not None
    [fight] = [f for f in observed.findings if f.id == "drift.writers-fight"]
    assert (fight.key, fight.severity) == ("net.core.somaxconn", "warning")
    assert "TuneD wrote 2048 (2 writes)" in fight.message
    assert "dockerd wrote 4096 (1 write)" in fight.message
    assert "TuneD: remove the write" in fight.message  # no plan: no value to render


def test_a_fight_names_the_fix_for_each(kb: KnowledgeBase) -> None:
    facts = load_facts(FRONTEND)
    observed = observed_owners(kb, facts, build_plan(kb, facts, "frontend-proxy"))
    assert observed is not None
    [fight] = [f for f in observed.findings if f.id == "drift.writers-fight"]
    assert "TuneD: [sysctl] net.core.somaxconn=16384" in fight.message


@pytest.mark.parametrize(
    "writes",
    [
        # one writer, however often
        [("tuned", "2048"), ("tuned", "4096"), ("tuned", "2048")],
        # two writers, one change of hands (A, B): not yet a fight
        [("tuned", "2048"), ("dockerd", "4096")],
        # two writers taking turns with the same value
        [("tuned", "4096"), ("dockerd", "4096"), ("tuned", "4096")],
        # a refused write changes nothing
        [("tuned", "2048"), ("dockerd", "bogus", False), ("tuned", "2048")],
    ],
)
def test_no_fight_without_alternating_values(
    kb: KnowledgeBase, writes: list[tuple[Any, ...]]
) -> None:
    facts = _facts(
        *(
            _write(
                "net.core.somaxconn",
                value,
                comm=comm,
                netns=HOST_NS,
                **({"applied": rest[0]} if rest else {}),
            )
            for comm, value, *rest in writes
        )
    )
    observed = observed_owners(kb, facts, None)
    assert observed is not None and observed.findings == []


def test_writers_in_different_pods_namespaces_do_not_fight(kb: KnowledgeBase) -> None:
    other = {**POD, "uid": "11111111-2222-3333-4444-555555555555", "name": "web-1"}
    facts = _facts(
        *(
            _write("net.core.somaxconn", value, comm="sh", netns={"kind": "pod", "pod": pod})
            for pod, value in ((POD, "1"), (other, "2"), (POD, "1"), (other, "2"))
        )
    )
    observed = observed_owners(kb, facts, None)
    assert observed is not None and observed.findings == []


def test_a_pods_write_of_an_ipc_or_uts_key_is_its_own_namespaces(kb: KnowledgeBase) -> None:
    """kernel.shmmax and kernel.hostname are a pod's own IPC and UTS namespace's: its writes
    never explain the host's value, nor take turns with a host writer."""
    for key in ("kernel.shmmax", "kernel.hostname"):
        facts = _facts(
            _write(key, "1", comm="tuned", netns=HOST_NS, time=_at(1)),
            _write(key, "2", comm="sh", pod=POD, netns={"kind": "pod", "pod": POD}, time=_at(2)),
            _write(key, "1", comm="tuned", netns=HOST_NS, time=_at(3)),
            _write(key, "2", comm="sh", pod=POD, netns={"kind": "pod", "pod": POD}, time=_at(4)),
        )
        observed = observed_owners(kb, facts, None)
        assert observed is not None and observed.findings == []
        assert [(o.name, o.namespace, o.in_force, o.explains) for o in observed.by_key[key]] == [
            ("TuneD", "host", True, True),
            ("a pod", "pod shop/cart-5d9f", False, False),
        ]


def test_no_record_and_an_unavailable_one(kb: KnowledgeBase) -> None:
    bare = facts_from_data({"kernel": "6.1.0", "memory": {"total": 16 * 2**30}})
    assert observed_owners(kb, bare, None) is None
    unavailable = _facts(provenance="unavailable (not root)")
    observed = observed_owners(kb, unavailable, None)
    assert observed is not None and not observed.available and observed.by_key == {}


def test_fleet_counts_each_writer_of_a_key_once(kb: KnowledgeBase) -> None:
    pairs = writers_by_key(kb, load_facts(FRONTEND))
    assert ("net.core.somaxconn", "TuneD") in pairs
    assert ("net.core.somaxconn", "a pod") in pairs
    assert ("net.ipv4.tcp_fin_timeout", "tune-net (unit cron.service) (parent cron)") in pairs
    assert len(pairs) == len(set(pairs))


def _at(second: int) -> str:
    return f"2026-12-07T10:00:{second:02d}Z"


@pytest.mark.parametrize(
    ("fields", "writer", "by"),
    [
        # a process may name itself anything: the unit that claims the write wins
        ({"comm": "tuned", "unit": "docker.service"}, "dockerd", "unit docker.service"),
        # a name whose writer has units of its own, under a unit no writer claims: not trusted
        ({"comm": "tuned", "unit": "cron.service"}, None, None),
        ({"comm": "sysctl", "parent_comm": "wg-quick", "unit": "cron.service"}, None, None),
        # where the unit is not known, the name still names the writer
        ({"comm": "tuned"}, "tuned", "process tuned"),
        ({"comm": "tuned", "unit": "tuned.service"}, "tuned", "process tuned"),
    ],
)
def test_the_unit_outweighs_the_process_name(
    kb: KnowledgeBase, fields: dict[str, Any], writer: str | None, by: str | None
) -> None:
    facts = _facts(_write("net.core.somaxconn", "4096", netns=HOST_NS, **fields))
    [owner] = _owners(kb, facts, "net.core.somaxconn", "frontend-proxy")
    assert (owner.writer, owner.named_by) == (writer, by)
    if writer != "tuned":  # never TuneD's configuration
        assert owner.fix is not None and "[sysctl]" not in owner.fix
    if writer is None:
        assert owner.name.startswith(fields["comm"]) and "(unit cron.service)" in owner.name


def test_a_write_named_by_its_unit_only_is_fixed_in_the_units_command(kb: KnowledgeBase) -> None:
    facts = _facts(
        _write(
            "net.core.somaxconn", "4096", comm="sysctl", parent_comm="sh", unit="docker.service"
        ),
        _write("net.core.somaxconn", "4096", comm="sh", unit="tuned.service", netns=HOST_NS),
    )
    found = {o.writer: o for o in _owners(kb, facts, "net.core.somaxconn", "frontend-proxy")}
    docker = found["dockerd"]
    assert docker.fix is not None and docker.fix_target == "docker.service"
    assert "a command of docker.service" in docker.fix
    assert "/etc/systemd/system/docker.service.d/" in docker.fix
    assert "write 16384" in docker.fix and "dockerd's configuration" not in docker.fix
    # TuneD's catalog has a setting for the key: both, the setting and the unit's command
    tuned = found["tuned"]
    assert tuned.fix is not None and tuned.fix.startswith("[sysctl] net.core.somaxconn=16384")
    assert "a command of tuned.service" in tuned.fix


def test_systemd_sysctl_is_fixed_in_the_file_that_sets_the_key(kb: KnowledgeBase) -> None:
    def facts(source: str, value: str) -> HostFacts:
        return facts_from_data(
            {
                "hostname": "web-7",
                "kernel": "6.1.0",
                "memory": {"total": 16 * 2**30},
                "cpu": {"threads": 8},
                "sysctl": {"net.core.somaxconn": value},
                "sysctl_files": {"net.core.somaxconn": source},
                "writers": {
                    "provenance": "record since boot",
                    "writes": [
                        _write(
                            "net.core.somaxconn",
                            value,
                            comm="systemd-sysctl",
                            unit="systemd-sysctl.service",
                            netns=HOST_NS,
                        )
                    ],
                },
            }
        )

    [owner] = _owners(
        kb, facts("/etc/sysctl.d/99-web.conf:3", "1024"), "net.core.somaxconn", "frontend-proxy"
    )
    assert owner.writer == "systemd-sysctl"
    assert owner.fix == (
        "set 16384 for net.core.somaxconn in /etc/sysctl.d/99-web.conf:3, or in a sysctl.d file "
        "whose name sorts after it"
    )
    assert owner.fix_target == "/etc/sysctl.d/99-web.conf"
    # the plan's own file, applied with the plan's value: nothing to change
    own = facts("/etc/sysctl.d/90-sysctl-advisor.conf:7", "16384")
    [owner] = _owners(kb, own, "net.core.somaxconn", "frontend-proxy")
    assert owner.fix is not None and owner.fix.startswith("nothing to change")
    assert "remove" not in owner.fix


def test_only_the_last_applied_writer_explains_the_value_in_force(kb: KnowledgeBase) -> None:
    facts = _facts(
        _write("net.core.somaxconn", "2048", comm="tuned", netns=HOST_NS, time=_at(5)),
        _write(
            "net.core.somaxconn",
            "4096",
            comm="sysctl",
            unit="docker.service",
            netns=HOST_NS,
            time=_at(9),
        ),
        # refused: the value in force stayed dockerd's
        _write(
            "net.core.somaxconn", "x", comm="tune-net", netns=HOST_NS, applied=False, time=_at(12)
        ),
    )
    found = {o.name: o for o in _owners(kb, facts, "net.core.somaxconn")}
    assert [n for n, o in found.items() if o.explains] == ["dockerd"]
    assert found["TuneD"].in_force and not found["TuneD"].explains
    assert next(iter(found)) == "dockerd"  # listed first


def test_writes_are_ordered_by_time_not_by_their_place_in_the_file(kb: KnowledgeBase) -> None:
    docker = {"comm": "sysctl", "unit": "docker.service", "netns": HOST_NS}
    facts = _facts(
        _write("net.core.somaxconn", "2048", comm="tuned", netns=HOST_NS, time=_at(35)),
        _write("net.core.somaxconn", "2048", comm="tuned", netns=HOST_NS, time=_at(5)),
        _write("net.core.somaxconn", "4096", **docker, time="2026-12-07T11:00:20.000000001+0100"),
    )
    observed = observed_owners(kb, facts, None)
    assert observed is not None
    tuned = next(o for o in observed.by_key["net.core.somaxconn"] if o.writer == "tuned")
    assert tuned.last == _at(35) and tuned.explains  # TuneD (5), dockerd (20), TuneD (35)
    [fight] = observed.findings
    assert fight.id == "drift.writers-fight"


def test_a_write_whose_namespace_the_kernel_does_not_say_stands_apart(kb: KnowledgeBase) -> None:
    facts = _facts(
        _write("net.core.somaxconn", "2048", comm="tuned", time=_at(5)),
        _write("net.core.somaxconn", "4096", comm="sysctl", unit="docker.service", time=_at(9)),
        _write("net.core.somaxconn", "2048", comm="tuned", time=_at(12)),
    )
    found = _owners(kb, facts, "net.core.somaxconn")
    assert [(o.name, o.in_force, o.explains) for o in found] == [
        ("TuneD", None, False),
        ("dockerd", None, False),
    ]
    # two writers in two namespaces would look like a fight: no turns without the namespace
    observed = observed_owners(kb, facts, None)
    assert observed is not None and observed.findings == []
