"""`--format talos|bottlerocket|eks`: each platform's document holds the node plan's
keys where the platform reads them, checked with the platform's own schema where one exists
(Talos: its published JSON schema) and by reading it back as the platform does (Bottlerocket:
TOML; EKS: the MIME document and the sysctl.d file its script installs, which also runs inside
`unshare -n`); a key or value with quotes and line breaks stays data; golden files.
"""

from __future__ import annotations

import email
import email.policy
import json
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest
import yaml

from sysctl_advisor.engine.kubernetes_placement import Placement, placement_for
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.outputs import node_file, node_map
from sysctl_advisor.outputs.node_platforms import read_back, render_node
from sysctl_advisor.outputs.plan_render import RenderCheckError, Renderer, rendered_settings
from tests.conftest import EXAMPLES, TESTS, load_facts
from tests.golden_files import assert_golden
from tests.namespaces import namespace_problem
from tests.outputs.node_helpers import node_output

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

HOST, PROFILE = "haproxy-frontend-rhel7", "frontend-proxy"
COMMAND = (
    f"sysctl-advisor recommend --facts examples/{HOST}.yaml --profile {PROFILE}"
    " --workload-network pod"
)
GOLDEN = {"talos": "yaml", "bottlerocket": "toml", "eks": "mime"}
CONF_PATH = "/etc/sysctl.d/90-sysctl-advisor.conf"  # where the EKS script installs the file
TALOS_SCHEMA = TESTS / "fixtures" / "schemas" / "talos-v1.11-config.schema.json"
# what no plan value holds, and each serializer must keep as data
HOSTILE = {"net.ipv4.tcp_rmem": '4096 "87380" \'6291456\'\n[settings]\nmotd = "x" # \\'}


@pytest.fixture(scope="module")
def placement(kb: KnowledgeBase) -> Placement:
    facts = load_facts(EXAMPLES / f"{HOST}.yaml")
    # the workload in pods of their own (its HAProxy listeners in the facts would otherwise
    # make it hostNetwork): the node's per-namespace keys are then only those of its namespace
    return placement_for(kb, facts, PROFILE, {}, kb.kubernetes.version(None), "pod")


def _render(kb: KnowledgeBase, placement: Placement, platform: str) -> str:
    command = f"{COMMAND} --format {platform}"
    return render_node(kb.node_platforms[platform], Renderer(kb.catalog), placement, command)


def _planned(placement: Placement) -> dict[str, str]:
    return {s.key: s.value for s in placement.node.settings}


def test_the_three_platforms_take_any_key(kb: KnowledgeBase) -> None:
    for platform in GOLDEN:
        spec = kb.node_platforms[platform].spec
        assert spec.accepts == "any" and not spec.keys


@pytest.mark.parametrize("platform", sorted(GOLDEN))
def test_golden(kb: KnowledgeBase, placement: Placement, platform: str) -> None:
    text = _render(kb, placement, platform)
    path = TESTS / "golden" / f"node-{platform}.{PROFILE}.{GOLDEN[platform]}"
    assert_golden(path, text)


# --- Talos ---------------------------------------------------------------------------------


def _talos_validator() -> jsonschema.protocols.Validator:
    schema = json.loads(TALOS_SCHEMA.read_text())
    config = {"$schema": schema["$schema"], "$defs": schema["$defs"]}
    config["$ref"] = "#/$defs/v1alpha1.Config"  # the machine configuration document
    return jsonschema.Draft202012Validator(config)


def test_talos_patch_holds_the_node_keys_and_validates(
    kb: KnowledgeBase, placement: Placement
) -> None:
    text = _render(kb, placement, "talos")
    assert text.startswith("# A Talos machine configuration patch")
    patch = yaml.safe_load(text)
    assert patch == {"machine": {"sysctls": _planned(placement)}}
    assert all(isinstance(v, str) for v in patch["machine"]["sysctls"].values())
    assert placement.node.settings and "net.core.somaxconn" not in patch["machine"]["sysctls"]
    validator = _talos_validator()
    assert list(validator.iter_errors(patch)) == []
    # merged onto a minimal worker configuration, as `talosctl gen config --config-patch` does
    base = {"version": "v1alpha1", "machine": {"type": "worker", "sysctls": {"vm.x": "1"}}}
    merged = {**base, "machine": {**base["machine"]}}
    merged["machine"]["sysctls"] = {**base["machine"]["sysctls"], **patch["machine"]["sysctls"]}
    assert list(validator.iter_errors(merged)) == []


def test_the_talos_schema_refuses_what_talos_refuses() -> None:
    validator = _talos_validator()
    assert list(validator.iter_errors({"machine": {"sysctls": {"vm.swappiness": 10}}}))
    assert list(validator.iter_errors({"machine": {"sysctl": {"vm.swappiness": "10"}}}))


def test_talos_read_back_takes_only_strings(kb: KnowledgeBase) -> None:
    with pytest.raises(
        RenderCheckError, match=re.escape("machine.sysctls holds 'vm.swappiness': 10")
    ):
        read_back("machine:\n  sysctls:\n    vm.swappiness: 10\n", kb.node_platforms["talos"])
    assert read_back(
        "machine:\n  sysctls:\n    vm.swappiness: '10'\n", kb.node_platforms["talos"]
    ) == {"vm.swappiness": "10"}


# --- Bottlerocket --------------------------------------------------------------------------


def test_bottlerocket_user_data_holds_the_node_keys(
    kb: KnowledgeBase, placement: Placement
) -> None:
    text = _render(kb, placement, "bottlerocket")
    assert text.startswith("# Bottlerocket user data")
    data = tomllib.loads(text)
    assert data == {"settings": {"kernel": {"sysctl": _planned(placement)}}}
    # the documented form: one table, each key quoted, each value a string
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert lines[0] == "[settings.kernel.sysctl]"
    assert f'"net.ipv4.tcp_tw_reuse" = "{_planned(placement)["net.ipv4.tcp_tw_reuse"]}"' in lines


def test_bottlerocket_refuses_a_key_its_settings_api_refuses(
    kb: KnowledgeBase, placement: Placement
) -> None:
    platform = kb.node_platforms["bottlerocket"]
    for key in ("net.ipv4.conf.*.rp_filter", "a" * 129, "net..x", ".net.x", "/net/x"):
        entry, why = platform.takes(key, "1")  # listed as not taken, never written
        assert entry is None and why is not None and "settings API refuses" in why, key
    for key in ("net.ipv4.tcp_tw_reuse", "net.ipv4.conf.eth0/1.rp_filter", "a" * 128):
        assert platform.takes(key, "1") == (None, None), key
    with pytest.raises(RenderCheckError, match=re.escape("settings.kernel.sysctl holds 'vm.x': 1")):
        read_back('[settings.kernel.sysctl]\n"vm.x" = 1\n', kb.node_platforms["bottlerocket"])


# --- EKS -----------------------------------------------------------------------------------


def _script(text: str) -> str:
    message = email.message_from_bytes(text.encode("utf-8"), policy=email.policy.default)
    assert message.get_content_type() == "multipart/mixed"
    (part,) = message.iter_parts()  # type: ignore[attr-defined]
    assert part.get_content_type() == "text/x-shellscript"
    content: str = part.get_content()
    return content


def test_eks_user_data_is_mime_with_a_script_installing_the_node_file(
    kb: KnowledgeBase, placement: Placement
) -> None:
    text = _render(kb, placement, "eks")
    assert text.startswith("Content-Type: multipart/mixed;") and "\nMIME-Version: 1.0\n" in text
    script = _script(text)
    assert script.startswith("#!/bin/bash\n# EKS managed node group user data")
    conf = script.split("<<'SYSCTL_ADVISOR_CONF'\n")[1].split("\nSYSCTL_ADVISOR_CONF\n")[0]
    # The port range and its reservations are left to the image's 67-eks-reserved-ports.conf
    # (a later file would replace its list whole), and said in the header.
    held = {h.name for h in kb.node_platforms["eks"].spec.held}
    wanted = {k: v for k, v in _planned(placement).items() if k not in held}
    assert held and held <= set(_planned(placement))
    assert rendered_settings("conf", conf + "\n") == wanted
    assert read_back(text, kb.node_platforms["eks"]) == wanted
    for key in held:
        assert f"# {key} = " in script
    assert f"sysctl -p {CONF_PATH}\n" in script
    if shutil.which("bash"):
        syntax = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
        assert syntax.returncode == 0, syntax.stderr


def test_eks_read_back_refuses_a_script_that_does_not_apply_the_file(
    kb: KnowledgeBase, placement: Placement
) -> None:
    text = _render(kb, placement, "eks")
    eks = kb.node_platforms["eks"]
    with pytest.raises(RenderCheckError, match="script does not install and apply /etc/sysctl"):
        read_back(text.replace("sysctl -p ", "echo "), eks)
    with pytest.raises(RenderCheckError, match="holds other than one text/x-shellscript part"):
        read_back(text.replace("text/x-shellscript", "text/plain"), eks)


@pytest.mark.skipif(namespace_problem() is not None, reason=str(namespace_problem()))
@pytest.mark.skipif(not Path("/etc/sysctl.d").is_dir(), reason="needs /etc/sysctl.d")
def test_the_eks_script_installs_and_applies_in_a_namespace(
    kb: KnowledgeBase, placement: Placement, tmp_path: Path
) -> None:
    """Per-namespace keys only, in a network namespace with a private /etc/sysctl.d (a tmpfs
    in a mount namespace of its own): the host's values and files are never touched."""
    values = {"net.ipv4.tcp_fin_timeout": "17", "net.ipv4.ip_local_port_range": "20000 60999"}
    host_file = Path(CONF_PATH)
    before = host_file.read_bytes() if host_file.exists() else None
    script = tmp_path / "user-data.sh"
    script.write_text(_script(node_file.document(node_output(kb, placement, "eks", values))))
    applied = subprocess.run(
        ["unshare", "-n", "-m", "--propagation", "private", "sh", "-c",
         f"mount -t tmpfs none /etc/sysctl.d && bash {script} >/dev/null && "
         f"cat {CONF_PATH} >/dev/null && "
         "sysctl -n net.ipv4.tcp_fin_timeout net.ipv4.ip_local_port_range"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.split("\n")[:2] == ["17", "20000\t60999"]
    assert (host_file.read_bytes() if host_file.exists() else None) == before


# --- every serializer keeps a hostile key and value as data ---------------------------------


def test_quotes_and_line_breaks_stay_data(kb: KnowledgeBase, placement: Placement) -> None:
    key, value = next(iter(HOSTILE.items()))
    weird = {key: value, 'net.x"y': "1", "net.a'b": "2"}
    talos = node_map.document(node_output(kb, placement, "talos", weird))
    assert read_back(talos, kb.node_platforms["talos"]) == weird
    assert yaml.safe_load(talos) == {"machine": {"sysctls": weird}}
    plain = {key: value}  # Bottlerocket refuses quotes in a key (its own pattern)
    bottlerocket = node_map.document(node_output(kb, placement, "bottlerocket", plain))
    assert tomllib.loads(bottlerocket) == {"settings": {"kernel": {"sysctl": plain}}}
    assert read_back(bottlerocket, kb.node_platforms["bottlerocket"]) == plain
    # EKS: the script carries the sysctl.d file the renderer writes; a line that would end the
    # here-document, or the MIME boundary, stops the document
    node = node_output(kb, placement, "eks", {"net.ipv4.tcp_fin_timeout": "17"})
    accented = node_file.document(replace(node, header=["# café – naïve"]))
    assert 'charset="utf-8"' in accented and "Content-Transfer-Encoding: 8bit" in accented
    assert "# café – naïve" in _script(accented)
    assert read_back(accented, kb.node_platforms["eks"]) == {"net.ipv4.tcp_fin_timeout": "17"}
    with pytest.raises(RenderCheckError):
        node_file.document(replace(node, header=["SYSCTL_ADVISOR_CONF"]))
    with pytest.raises(RenderCheckError):
        node_file.document(replace(node, header=[f"# --{node_file.BOUNDARY}"]))
