"""`--format daemonset`: the ConfigMap and DaemonSet validate against every
Kubernetes release's API schema (kubernetes-validate, strict: no unknown field), read back as
the node plan, and the script they carry does what it says inside `unshare -n`: installs the
file, applies it, reads every value back, and `--check` fails when a value did not hold; a
golden file. The linters' view of it: tests/outputs/test_node_daemonset_linters.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from sysctl_advisor.engine.kubernetes_placement import placement_for
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.outputs import node_file
from sysctl_advisor.outputs.node_output import NodeOutput
from sysctl_advisor.outputs.node_platforms import read_back, render_node
from sysctl_advisor.outputs.plan_render import Renderer
from tests.conftest import EXAMPLES, TESTS
from tests.golden_files import assert_golden
from tests.namespaces import namespace_problem
from tests.outputs.node_helpers import node_output

VERSIONS = ["1.29", "1.32"]
HOSTS = {"haproxy-frontend-rhel7": "frontend-proxy", "dcache-32bit": "gridftp"}


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    return KnowledgeBase.load()


def _facts(name: str) -> Any:
    from sysctl_advisor.sources.facts_file import facts_from_text

    path = EXAMPLES / f"{name}.yaml"
    return facts_from_text(path, path.read_text())


def _render(kb: KnowledgeBase, host: str) -> tuple[Any, str]:
    placement = placement_for(kb, _facts(host), HOSTS[host], {}, kb.kubernetes.version(None))
    text = render_node(kb.node_platforms["daemonset"], Renderer(kb.catalog), placement, "rebuild")
    return placement, text


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_the_documents_validate_and_hold_the_node_plan(kb: KnowledgeBase, host: str) -> None:
    placement, text = _render(kb, host)
    documents = [d for d in yaml.safe_load_all(text) if d is not None]
    assert [d["kind"] for d in documents] == ["ConfigMap", "DaemonSet"]
    for version in VERSIONS:
        for document in documents:
            assert kubernetes_validate.validate(document, version, strict=True) == version
    assert read_back(text, kb.node_platforms["daemonset"]) == {
        s.key: s.value for s in placement.node.settings
    }
    pod = documents[1]["spec"]["template"]["spec"]
    assert pod["hostNetwork"] is True and pod["containers"][0]["securityContext"]["privileged"]
    assert pod["nodeSelector"] == {"sysctl-advisor/profile": HOSTS[host]}
    # What a privileged sysctl writer can still hold to: no API token, root named (whatever
    # user the image names), a read-only root filesystem, bounded resources.
    container = pod["containers"][0]
    assert pod["automountServiceAccountToken"] is False
    assert pod["securityContext"] == {"runAsUser": 0}
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert set(container["resources"]["limits"]) == {"cpu", "memory"}
    assert container["imagePullPolicy"] == "Always"
    for pod_key in (p.setting.key for p in placement.pod):  # the pod's keys are pointed to
        assert pod_key in text.split("---")[0]


def test_golden(kb: KnowledgeBase) -> None:
    host = "haproxy-frontend-rhel7"
    command = f"sysctl-advisor recommend --facts examples/{host}.yaml --profile {HOSTS[host]}"
    placement = placement_for(kb, _facts(host), HOSTS[host], {}, kb.kubernetes.version(None))
    platform = kb.node_platforms["daemonset"]
    text = render_node(platform, Renderer(kb.catalog), placement, f"{command} --format daemonset")
    path = TESTS / "golden" / f"node-daemonset.{HOSTS[host]}.yaml"
    assert_golden(path, text)


def _node(kb: KnowledgeBase, values: dict[str, str]) -> NodeOutput:
    """A node output holding only per-namespace keys, which a test may apply in a namespace
    of its own (the host's values are never touched)."""
    version = kb.kubernetes.version(None)
    placement = placement_for(kb, _facts("haproxy-frontend-rhel7"), "frontend-proxy", {}, version)
    return node_output(kb, placement, "daemonset", values)


def _busybox(bin_dir: Path) -> str:
    """A PATH of busybox's applets alone, as the pod's image has them (its sh, awk and sysctl,
    not the test machine's)."""
    busybox = shutil.which("busybox")
    if busybox is None:
        pytest.skip("busybox is not installed (.ci/run installs it): the image's sh and sysctl")
    bin_dir.mkdir()
    for applet in ("sh", "awk", "sysctl", "cp", "mv"):
        (bin_dir / applet).symlink_to(busybox)
    return str(bin_dir)


@pytest.mark.skipif(namespace_problem() is not None, reason=str(namespace_problem()))
@pytest.mark.parametrize("tools", ["system", "busybox"])
def test_the_script_installs_applies_and_reads_back_in_a_namespace(
    kb: KnowledgeBase, tmp_path: Path, tools: str
) -> None:
    path = _busybox(tmp_path / "bin") if tools == "busybox" else os.environ["PATH"]
    values = {"net.ipv4.tcp_fin_timeout": "17", "net.ipv4.ip_local_port_range": "20000 60999"}
    text = node_file.document(_node(kb, values))
    data = next(d for d in yaml.safe_load_all(text) if d and d["kind"] == "ConfigMap")["data"]
    config, target = tmp_path / "config", tmp_path / "sysctl.d"
    config.mkdir()
    target.mkdir()
    for name, content in data.items():
        (config / name).write_text(content)
    env = f"SYSCTL_ADVISOR_CONFIG={config} HOST_SYSCTL_D={target}"
    applied = subprocess.run(
        ["unshare", "-n", "env", f"PATH={path}", "sh", "-c",
         f"{env} sh {config}/apply.sh && {env} sh {config}/apply.sh --check && "
         "sysctl -n net.ipv4.tcp_fin_timeout net.ipv4.ip_local_port_range && "
         f"sysctl -q -w net.ipv4.tcp_fin_timeout=30 && {env} sh {config}/apply.sh --check"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    # Installed, applied, read back (the port range's two fields, a tab between them, compared
    # as the one line the script lists); then a value taken back makes the probe fail, saying
    # which.
    conf = "90-sysctl-advisor.conf"  # the ConfigMap's file, installed under that name
    assert (target / conf).read_text() == data[conf]
    assert applied.stdout.split("\n")[:2] == ["17", "20000\t60999"], applied.stderr
    assert applied.returncode != 0
    assert "net.ipv4.tcp_fin_timeout is 30, not 17" in applied.stderr
