"""`--format aks` and `--format gke`: the node's keys in each platform's own file,
under its own names and types, with the keys the platform refuses listed with the reason.

AKS: the Linux OS configuration file validates against the AKS REST API's `LinuxOSConfig` and
`SysctlConfig` (vendored in tests/fixtures/schemas/, see SOURCES.md), holds each taken key
under its field with the field's type, and carries what AKS does not take in a member AKS
does not read. GKE: the node system configuration is what gcloud's loader accepts (a
`linuxConfig.sysctl` map of strings) with the refusals in its comment header. Both read back
as the taken keys, and the allow-lists agree with the platforms' own schema and list."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from sysctl_advisor.engine.kubernetes_placement import Placement, placement_for
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.outputs import node_fields
from sysctl_advisor.outputs.node_output import NodeOutput
from sysctl_advisor.outputs.node_platforms import read_back, render_node
from sysctl_advisor.outputs.plan_render import RenderCheckError, Renderer
from tests.conftest import EXAMPLE_PARAMS, EXAMPLE_PROFILES, EXAMPLES, TESTS
from tests.golden_files import assert_golden
from tests.outputs.node_helpers import node_output

GOLDEN = TESTS / "golden"
SCHEMAS = TESTS / "fixtures" / "schemas" / "aks-linuxosconfig.definitions.json"
HOSTS = ["haproxy-frontend-rhel7", "ec2-nginx-frontend", "c10m-conntrack-5.15"]
INT32 = 2**31 - 1


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    return KnowledgeBase.load()


def _placement(kb: KnowledgeBase, host: str) -> Placement:
    from sysctl_advisor.sources.facts_file import facts_from_text

    path = EXAMPLES / f"{host}.yaml"
    facts = facts_from_text(path, path.read_text())
    params = EXAMPLE_PARAMS.get(host, {})
    return placement_for(kb, facts, EXAMPLE_PROFILES[host], params, kb.kubernetes.version(None))


def _with(placement: Placement, key: str, value: str) -> Placement:
    """The placement with the node's `key` set to `value` (added when the plan lacks it)."""
    settings = list(placement.node.settings)
    template = settings[0]
    found = [i for i, s in enumerate(settings) if s.key == key]
    if found:
        settings[found[0]] = replace(settings[found[0]], value=value)
    else:
        settings.append(replace(template, key=key, value=value))
    return replace(placement, node=replace(placement.node, settings=settings))


def _render(kb: KnowledgeBase, platform: str, placement: Placement) -> str:
    command = f"sysctl-advisor recommend --format {platform}"
    return render_node(kb.node_platforms[platform], Renderer(kb.catalog), placement, command)


def _split(
    kb: KnowledgeBase, platform: str, placement: Placement
) -> tuple[dict[str, str], dict[str, str]]:
    """What the platform takes and what it refuses (with the reason), by its own allow-list."""
    taken, refused = {}, {}
    for setting in placement.node.settings:
        _, why = kb.node_platforms[platform].takes(setting.key, setting.value)
        if why is None:
            taken[setting.key] = setting.value
        else:
            refused[setting.key] = why
    return taken, refused


def _definitions() -> dict[str, Any]:
    return json.loads(SCHEMAS.read_text())


def _validate_aks(document: dict[str, Any]) -> None:
    """As the AKS REST API's schema reads it: LinuxOSConfig, its sysctls a SysctlConfig, and
    each `format: int32` within 32 bits (a format jsonschema does not check)."""
    definitions = _definitions()["definitions"]
    schema = {**definitions["LinuxOSConfig"], "definitions": definitions}
    jsonschema.Draft4Validator(schema).validate(document)
    sysctl = {**definitions["SysctlConfig"], "definitions": definitions}
    jsonschema.Draft4Validator(sysctl).validate(document["sysctls"])
    properties = definitions["SysctlConfig"]["properties"]
    assert set(document["sysctls"]) <= set(properties)  # no field the API does not define
    for field, value in document["sysctls"].items():
        if properties[field].get("format") == "int32":
            assert -(2**31) <= value <= INT32, field


# ---------------------------------------------------------------- AKS


@pytest.mark.parametrize("host", HOSTS)
def test_aks_takes_its_fields_typed_and_lists_what_it_refuses(kb: KnowledgeBase, host: str) -> None:
    placement = _placement(kb, host)
    text = _render(kb, "aks", placement)
    document = json.loads(text)
    _validate_aks(document)
    taken, refused = _split(kb, "aks", placement)
    entries = {k.name: k for k in kb.node_platforms["aks"].spec.keys}
    assert len(document["sysctls"]) == len(taken)
    for key, value in taken.items():  # under AKS's field name, with the field's type
        field_value = document["sysctls"][entries[key].field]
        kind = entries[key].kind
        if kind == "bool":
            assert field_value is (value == "1")
        elif kind == "int":
            assert type(field_value) is int and field_value == int(value)
        else:
            assert field_value == " ".join(value.split())
    notes = document[node_fields.NOTES]
    assert notes["notTaken"] == {
        s.key: {"value": s.value, "why": refused[s.key]}
        for s in placement.node.settings
        if s.key in refused
    }
    assert notes["podKeys"] == [p.setting.key for p in placement.pod]
    assert read_back(text, kb.node_platforms["aks"]) == taken


def test_aks_frontend_proxy_takes_four_keys_and_refuses_three(kb: KnowledgeBase) -> None:
    # HAProxy listens in the node's facts: hostNetwork, so somaxconn (per namespace) is the node's
    placement = _placement(kb, "haproxy-frontend-rhel7")
    assert placement.host_network == ["HAProxy listens on ports 80, 443"]
    document = json.loads(_render(kb, "aks", placement))
    assert document["sysctls"] == {
        "netIpv4TcpTwReuse": True,
        "netCoreSomaxconn": 16384,
        "netIpv4TcpMaxSynBacklog": 16384,
        "netNetfilterNfConntrackMax": 290000,
    }
    not_taken = document[node_fields.NOTES]["notTaken"]
    assert set(not_taken) == {
        "net.ipv4.tcp_slow_start_after_idle",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_local_reserved_ports",
    }
    assert all("--format daemonset" in n["why"] for n in not_taken.values())
    # the widened range is not given without the reservations AKS cannot take
    assert "reservations" in not_taken["net.ipv4.ip_local_port_range"]["why"]
    reserved = next(s for s in placement.node.settings if s.key.endswith("reserved_ports"))
    header = " ".join(document[node_fields.NOTES]["header"])
    assert f"net.ipv4.ip_local_reserved_ports = {reserved.value}" in header


@pytest.mark.parametrize(
    ("host", "key", "value", "why"),
    [
        # above AKS's documented interval
        ("ec2-nginx-frontend", "net.ipv4.tcp_max_tw_buckets", "6000000", "maximum of 1440000"),
        ("c10m-conntrack-5.15", "net.netfilter.nf_conntrack_max", "12000000", "maximum of 2097152"),
        # the documented interval reaches 2^63-1, the API's int32 does not
        ("c10m-conntrack-5.15", "fs.file-max", "9223372036854775807", "maximum of 2147483647"),
        # below it
        ("haproxy-frontend-rhel7", "net.ipv4.tcp_fin_timeout", "3", "minimum of 5"),
        # a boolean field: 2 has no spelling, and false is written as 1 by AgentBaker's template
        ("haproxy-frontend-rhel7", "net.ipv4.tcp_tw_reuse", "2", "true or false"),
        ("haproxy-frontend-rhel7", "net.ipv4.tcp_tw_reuse", "0", "only true (1)"),
    ],
)
def test_aks_refuses_a_value_out_of_its_range_with_the_reason(
    kb: KnowledgeBase, host: str, key: str, value: str, why: str
) -> None:
    placement = _with(_placement(kb, host), key, value)
    document = json.loads(_render(kb, "aks", placement))
    entry = next(k for k in kb.node_platforms["aks"].spec.keys if k.name == key)
    assert entry.field not in document["sysctls"]
    refused = document[node_fields.NOTES]["notTaken"][key]
    assert refused["value"] == value and why in refused["why"]


def test_aks_takes_a_value_inside_its_range(kb: KnowledgeBase) -> None:
    placement = _with(_placement(kb, "haproxy-frontend-rhel7"), "net.ipv4.tcp_fin_timeout", "5")
    document = json.loads(_render(kb, "aks", placement))
    assert document["sysctls"]["netIpv4TcpFinTimeout"] == 5
    assert "net.ipv4.tcp_fin_timeout" not in document[node_fields.NOTES]["notTaken"]


def _node(kb: KnowledgeBase, key: str, value: str) -> NodeOutput:
    """A node output taking `key` = `value` under AKS's entry, past `takes` (the port range
    is held back from real plans: this is the serializer's own check)."""
    return node_output(kb, _placement(kb, "haproxy-frontend-rhel7"), "aks", {key: value})


def test_aks_writes_the_port_range_as_its_string_within_its_bounds(kb: KnowledgeBase) -> None:
    key = "net.ipv4.ip_local_port_range"
    text = node_fields.document(_node(kb, key, "32768\t60999"))
    assert json.loads(text)["sysctls"] == {"netIpv4IpLocalPortRange": "32768 60999"}
    assert read_back(text, kb.node_platforms["aks"]) == {key: "32768 60999"}
    for value in ("80 65535", "40000 30000", "1024"):
        with pytest.raises(RenderCheckError, match="aks output takes two ports from 1024 to 65535"):
            node_fields.document(_node(kb, key, value))


def test_aks_read_back_refuses_a_field_aks_does_not_have_or_a_wrong_type(kb: KnowledgeBase) -> None:
    aks = kb.node_platforms["aks"]
    with pytest.raises(RenderCheckError, match="no field of the platform"):
        read_back(json.dumps({"sysctls": {"netIpv4TcpSlowStartAfterIdle": 0}}), aks)
    with pytest.raises(RenderCheckError, match="netCoreSomaxconn"):
        read_back(json.dumps({"sysctls": {"netCoreSomaxconn": "4096"}}), aks)
    with pytest.raises(RenderCheckError, match="more than sysctls"):
        read_back(json.dumps({"sysctls": {}, "swapFileSizeMB": 1}), aks)
    assert read_back(json.dumps({"sysctls": {"netIpv4TcpTwReuse": True}}), aks) == {
        "net.ipv4.tcp_tw_reuse": "1"
    }


def test_aks_allow_list_is_the_rest_apis_sysctl_config(kb: KnowledgeBase) -> None:
    """Every SysctlConfig field is listed, under the sysctl its description names, with the
    schema's type, and within the schema's bounds where it has them."""
    properties = _definitions()["definitions"]["SysctlConfig"]["properties"]
    entries = {k.field: k for k in kb.node_platforms["aks"].spec.keys}
    assert set(entries) == set(properties)
    kinds = {"integer": {"int"}, "boolean": {"bool"}, "string": {"range", "str"}}
    for field, schema in properties.items():
        entry = entries[field]
        assert schema["description"] == f"Sysctl setting {entry.name}.", field
        assert entry.kind in kinds[schema["type"]], field
        if "minimum" in schema:
            assert entry.min is not None and entry.min >= schema["minimum"], field
        if "maximum" in schema:
            assert entry.max is not None and entry.max <= schema["maximum"], field
        if schema.get("format") == "int32":
            assert entry.max is None or entry.max <= INT32, field


# ---------------------------------------------------------------- GKE


@pytest.mark.parametrize("host", HOSTS)
def test_gke_takes_its_listed_keys_as_strings_and_lists_what_it_refuses(
    kb: KnowledgeBase, host: str
) -> None:
    placement = _placement(kb, host)
    text = _render(kb, "gke", placement)
    document = yaml.safe_load(text)
    # what gcloud's loader accepts: kubeletConfig and linuxConfig at the root, sysctl a map
    assert set(document) == {"linuxConfig"} and set(document["linuxConfig"]) == {"sysctl"}
    sysctls = document["linuxConfig"]["sysctl"]
    taken, refused = _split(kb, "gke", placement)
    assert sysctls == {k: " ".join(v.split()) for k, v in taken.items()}
    assert all(type(v) is str for v in sysctls.values())
    header = " ".join(
        line.removeprefix("#").strip() for line in text.splitlines() if line.startswith("#")
    )
    for setting in placement.node.settings:
        if setting.key in refused:
            assert f"{setting.key} = {setting.value}: " in header
    for pod in placement.pod:
        assert pod.setting.key in header
    assert read_back(text, kb.node_platforms["gke"]) == taken


def test_gke_frontend_proxy_takes_three_keys_and_refuses_four(kb: KnowledgeBase) -> None:
    text = _render(kb, "gke", _placement(kb, "haproxy-frontend-rhel7"))
    assert yaml.safe_load(text)["linuxConfig"]["sysctl"] == {
        "net.ipv4.tcp_tw_reuse": "1",
        "net.core.somaxconn": "16384",  # hostNetwork HAProxy: the node's namespace is its
        "net.netfilter.nf_conntrack_max": "290000",
    }
    assert "'1'" in text and "'290000'" in text  # strings in the file, not integers
    header = " ".join(line.removeprefix("# ") for line in text.splitlines() if line[:1] == "#")
    assert header.count("takes only the sysctls LinuxNodeConfig lists") == 4


def test_gke_takes_a_listed_text_value_and_refuses_a_malformed_integer(kb: KnowledgeBase) -> None:
    placement = _with(
        _placement(kb, "haproxy-frontend-rhel7"), "net.ipv4.tcp_rmem", "4096 87380 6291456"
    )
    placement = _with(placement, "vm.swappiness", "ten")
    text = _render(kb, "gke", placement)
    sysctls = yaml.safe_load(text)["linuxConfig"]["sysctl"]
    assert sysctls["net.ipv4.tcp_rmem"] == "4096 87380 6291456"
    assert "vm.swappiness" not in sysctls
    assert "vm.swappiness = ten: the platform takes one integer here" in " ".join(
        line.removeprefix("# ") for line in text.splitlines()
    )


def test_gke_read_back_refuses_what_gcloud_would(kb: KnowledgeBase) -> None:
    gke = kb.node_platforms["gke"]
    with pytest.raises(RenderCheckError, match="string values"):
        read_back("linuxConfig:\n  sysctl:\n    net.core.somaxconn: 4096\n", gke)
    with pytest.raises(RenderCheckError, match="does not take"):
        read_back("linuxConfig:\n  sysctl:\n    net.ipv4.tcp_fin_timeout: '30'\n", gke)
    with pytest.raises(RenderCheckError, match="holds more than sysctl"):
        read_back("linuxConfig:\n  sysctls:\n    net.core.somaxconn: '4096'\n", gke)
    with pytest.raises(RenderCheckError, match="holds more than kubeletConfig and linuxConfig"):
        read_back("sysctls:\n  net.core.somaxconn: '4096'\n", gke)
    assert read_back("linuxConfig:\n  sysctl:\n    net.core.somaxconn: '4096'\n", gke) == {
        "net.core.somaxconn": "4096"
    }


# ---------------------------------------------------------------- golden files


@pytest.mark.parametrize(("platform", "ext"), [("aks", "json"), ("gke", "yaml")])
def test_golden(kb: KnowledgeBase, platform: str, ext: str) -> None:
    host = "haproxy-frontend-rhel7"
    command = (
        f"sysctl-advisor recommend --facts examples/{host}.yaml --profile "
        f"{EXAMPLE_PROFILES[host]} --format {platform}"
    )
    placement = _placement(kb, host)
    text = render_node(kb.node_platforms[platform], Renderer(kb.catalog), placement, command)
    path: Path = GOLDEN / f"node-{platform}.{EXAMPLE_PROFILES[host]}.{ext}"
    assert_golden(path, text)
