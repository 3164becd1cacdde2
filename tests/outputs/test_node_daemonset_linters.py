"""`--format daemonset` passes the linters people run on manifests: checkov fails none of its
checks (each one a privileged sysctl writer must fail is skipped by its own annotation, with
the reason), kube-linter's checks as its sources define them find nothing that is not ignored
with a reason, and `apply.sh` is shellcheck clean, for several hosts and profiles.

checkov and shellcheck run when installed (`.ci/run` installs both: checkov in a virtual
environment of its own, named by SYSCTL_ADVISOR_CHECKOV); elsewhere those tests skip with the
reason. kube-linter has no package here: its checks are read from its source (stackrox/
kube-linter, pkg/templates and pkg/builtinchecks) into the predicates below.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from sysctl_advisor.engine.kubernetes_placement import placement_for
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.knowledge.node_platforms import LinterExemption
from sysctl_advisor.outputs import node_file
from sysctl_advisor.outputs.node_platforms import render_node
from sysctl_advisor.outputs.plan_render import Renderer
from tests.conftest import EXAMPLES, HANG_SECONDS, load_facts

# Hosts and their workloads: one profile, another, and three at once.
CASES: dict[str, tuple[str, str | list[str]]] = {
    "haproxy-frontend": ("haproxy-frontend-rhel7", "frontend-proxy"),
    "dcache-gridftp": ("dcache-32bit", "gridftp"),
    "c1m-server": ("c1m-server", "c1m-server"),
    "app-node": ("app-node", ["frontend-proxy", "redis", "postgresql"]),
}


def _tool(variable: str, name: str) -> str | None:
    """The tool named by the environment variable .ci/run sets, or found on PATH."""
    return os.environ.get(variable) or shutil.which(name)


CHECKOV = _tool("SYSCTL_ADVISOR_CHECKOV", "checkov")
SHELLCHECK = _tool("SYSCTL_ADVISOR_SHELLCHECK", "shellcheck")


@pytest.fixture(scope="module")
def manifests(kb: KnowledgeBase, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each case's `--format daemonset` output, written to a file as a user commits it."""
    directory = tmp_path_factory.mktemp("daemonsets")
    paths = {}
    for case, (host, profile) in CASES.items():
        facts = load_facts(EXAMPLES / f"{host}.yaml")
        placement = placement_for(kb, facts, profile, {}, kb.kubernetes.version(None))
        platform = kb.node_platforms["daemonset"]
        text = render_node(platform, Renderer(kb.catalog), placement, "rebuild")
        paths[case] = directory / f"{case}.yaml"
        paths[case].write_text(text)
    return paths


def _documents(path: Path) -> dict[str, dict[str, Any]]:
    return {d["kind"]: d for d in yaml.safe_load_all(path.read_text()) if d}


def _exemptions() -> list[LinterExemption]:
    return KnowledgeBase.load().node_platforms["daemonset"].spec.exemptions


def test_each_exemption_is_written_as_each_linters_annotation() -> None:
    """checkov reads `checkov.io/skipN: ID=reason` and splits the value at every `=`, so a
    reason holding one would stop its run; kube-linter reads `ignore-check.kube-linter.io/
    CHECK`. Every key is a valid annotation name (a DNS prefix, a name of at most 63)."""
    platform = KnowledgeBase.load().node_platforms["daemonset"]
    annotations = node_file.linter_annotations(platform)
    exemptions = platform.spec.exemptions
    checkov = sorted(c for e in exemptions for c in e.checkov)
    skips = [v for k, v in annotations.items() if k.startswith("checkov.io/skip")]
    assert sorted(v.split("=")[0] for v in skips) == checkov
    for exemption in exemptions:
        reason = exemption.why
        assert "=" not in reason and reason
        for check in exemption.checkov:
            assert f"{check}={reason}" in skips
        for check in exemption.kube_linter:
            assert annotations[f"ignore-check.kube-linter.io/{check}"] == reason
    for key in annotations:
        prefix, name = key.split("/")
        assert re.fullmatch(r"[a-z0-9]([a-z0-9.-]*[a-z0-9])?", prefix) and len(prefix) <= 253
        assert re.fullmatch(r"[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?", name) and len(name) <= 63


# --- checkov --------------------------------------------------------------------------------


@pytest.mark.skipif(CHECKOV is None, reason="checkov is not installed (.ci/run installs it)")
def test_checkov_fails_no_check(manifests: dict[str, Path]) -> None:
    """One checkov run over every case's file: no check fails, each one skipped is skipped by
    the manifest's own annotation for a reason the advisor wrote, and checks did run."""
    assert CHECKOV is not None
    directory = next(iter(manifests.values())).parent
    env = {**os.environ, "CKV_SKIP_PACKAGE_UPDATE_CHECK": "true"}  # no network from a test
    ran = subprocess.run(
        [CHECKOV, "-d", str(directory), "--framework", "kubernetes", "--compact",
         "--output", "json", "--skip-download"],
        capture_output=True, text=True, timeout=HANG_SECONDS * 5, env=env,
    )  # fmt: skip
    assert ran.returncode in (0, 1), ran.stderr[-2000:]
    output = json.loads(ran.stdout)
    reports = output if isinstance(output, list) else [output]
    report = next(r for r in reports if r.get("check_type") == "kubernetes")
    results, summary = report["results"], report["summary"]
    failed = [(c["check_id"], c["file_path"], c["resource"]) for c in results["failed_checks"]]
    assert failed == [] and summary["failed"] == 0
    assert summary["parsing_errors"] == 0 and summary["passed"] > 0
    files = {Path(c["file_path"]).name for c in results["passed_checks"]}
    assert files == {path.name for path in manifests.values()}
    reasons = {c: e.why for e in _exemptions() for c in e.checkov}
    for skipped in results["skipped_checks"]:
        assert skipped["check_id"] in reasons
        assert skipped["check_result"]["suppress_comment"] == reasons[skipped["check_id"]]


# --- kube-linter ----------------------------------------------------------------------------
# Each check's condition on a DaemonSet, as stackrox/kube-linter's template for it flags one
# (pkg/templates/*/template.go with the parameters in pkg/builtinchecks/yamls/*.yaml), for its
# built-in checks that look at a pod. The ones that need other objects (dangling-*, RBAC,
# PodDisruptionBudget, ...) or an organisation's own policy (required-label-owner,
# required-annotation-email) are left out.

_LATEST = [r".*:(latest)$", r"^[^:]*$", r"(.*/[^:]+)$"]
_SENSITIVE = [r"^/$", r"^/boot$", r"^/dev$", r"^/etc$", r"^/lib$", r"^/proc$", r"^/sys$", r"^/usr$"]
_UNSAFE_SYSCTLS = ("kernel.msg", "kernel.sem", "kernel.shm", "fs.mqueue.", "net.")


def _containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [*pod.get("initContainers", []), *pod["containers"]]


def _security(container: dict[str, Any]) -> dict[str, Any]:
    return container.get("securityContext") or {}


def _run_as_root(pod: dict[str, Any], container: dict[str, Any]) -> bool:
    merged = {**(pod.get("securityContext") or {}), **_security(container)}
    if merged.get("runAsGroup") == 0:
        return True
    if (merged.get("runAsUser") or 0) > 0:
        return False
    return not merged.get("runAsNonRoot") or merged.get("runAsUser") == 0


def _host_paths(pod: dict[str, Any]) -> dict[str, str]:
    return {v["name"]: v["hostPath"]["path"] for v in pod.get("volumes", []) if "hostPath" in v}


KUBE_LINTER = {
    "privileged-container": lambda pod: any(
        _security(c).get("privileged") for c in _containers(pod)
    ),
    "privilege-escalation-container": lambda pod: any(
        _security(c).get("allowPrivilegeEscalation")
        or _security(c).get("privileged")
        or "SYS_ADMIN" in (_security(c).get("capabilities") or {}).get("add", [])
        for c in _containers(pod)
    ),
    "host-network": lambda pod: bool(pod.get("hostNetwork")),
    "host-pid": lambda pod: bool(pod.get("hostPID")),
    "host-ipc": lambda pod: bool(pod.get("hostIPC")),
    "run-as-non-root": lambda pod: any(_run_as_root(pod, c) for c in _containers(pod)),
    "no-read-only-root-fs": lambda pod: any(
        not _security(c).get("readOnlyRootFilesystem") for c in _containers(pod)
    ),
    "drop-net-raw-capability": lambda pod: any(
        "NET_RAW" in (_security(c).get("capabilities") or {}).get("add", [])
        or (
            "capabilities" in _security(c)
            and not {"NET_RAW", "ALL"} & set(_security(c)["capabilities"].get("drop", []))
        )
        for c in _containers(pod)
    ),
    "unsafe-proc-mount": lambda pod: any(
        _security(c).get("procMount") == "Unmasked" for c in _containers(pod)
    ),
    "unsafe-sysctls": lambda pod: any(
        s["name"].startswith(_UNSAFE_SYSCTLS)
        for s in (pod.get("securityContext") or {}).get("sysctls", [])
    ),
    "sensitive-host-mounts": lambda pod: any(
        re.search(pattern, path) for path in _host_paths(pod).values() for pattern in _SENSITIVE
    ),
    "writable-host-mount": lambda pod: any(
        m["name"] in _host_paths(pod) and not m.get("readOnly")
        for c in _containers(pod)
        for m in c.get("volumeMounts", [])
    ),
    "docker-sock": lambda pod: any(p.endswith("docker.sock") for p in _host_paths(pod).values()),
    "latest-tag": lambda pod: any(
        re.search(pattern, c["image"]) for c in _containers(pod) for pattern in _LATEST
    ),
    "unset-cpu-requirements": lambda pod: any(
        "cpu" not in (c.get("resources") or {}).get("requests", {}) for c in pod["containers"]
    ),
    "unset-memory-requirements": lambda pod: any(
        "memory" not in (c.get("resources") or {}).get("limits", {}) for c in pod["containers"]
    ),
    "no-liveness-probe": lambda pod: any("livenessProbe" not in c for c in pod["containers"]),
    "no-readiness-probe": lambda pod: any("readinessProbe" not in c for c in pod["containers"]),
    "default-service-account": lambda pod: (
        pod.get("automountServiceAccountToken") is not False
        and pod.get("serviceAccountName", "") in ("", "default")
    ),
    "restart-policy": lambda pod: pod.get("restartPolicy") not in ("Always", "OnFailure"),
    "priority-class-name": lambda pod: (
        pod.get("priorityClassName") not in ("system-cluster-critical", "system-node-critical")
    ),
    "no-node-affinity": lambda pod: not (pod.get("affinity") or {}).get("nodeAffinity"),
    "non-isolated-pod": lambda pod: True,  # the output holds no NetworkPolicy
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_kube_linter_finds_nothing_it_is_not_told_why(
    manifests: dict[str, Path], case: str
) -> None:
    """Every kube-linter check the DaemonSet fails carries `ignore-check.kube-linter.io/CHECK`
    with the reason, and none is ignored that it passes (an ignore would hide a regression)."""
    daemon_set = _documents(manifests[case])["DaemonSet"]
    pod = daemon_set["spec"]["template"]["spec"]
    fails = {check for check, fails in KUBE_LINTER.items() if fails(pod)}
    prefix = "ignore-check.kube-linter.io/"
    ignored = {
        k[len(prefix) :] for k in daemon_set["metadata"]["annotations"] if k.startswith(prefix)
    }
    assert fails == ignored
    assert daemon_set["metadata"]["namespace"] not in ("", "default")  # use-namespace


# --- shellcheck -----------------------------------------------------------------------------


@pytest.mark.skipif(SHELLCHECK is None, reason="shellcheck is not installed (.ci/run installs it)")
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_script_is_shellcheck_clean(
    manifests: dict[str, Path], case: str, tmp_path: Path
) -> None:
    """apply.sh as the pod runs it, a POSIX sh script: shellcheck finds nothing to say."""
    assert SHELLCHECK is not None
    script = tmp_path / "apply.sh"
    script.write_text(_documents(manifests[case])["ConfigMap"]["data"]["apply.sh"])
    ran = subprocess.run(
        [SHELLCHECK, "--shell=sh", "--format=json", str(script)],
        capture_output=True, text=True, timeout=HANG_SECONDS,
    )  # fmt: skip
    findings = [(f["code"], f["line"], f["message"]) for f in json.loads(ran.stdout or "[]")]
    assert findings == [] and ran.returncode == 0, ran.stderr


@pytest.mark.parametrize(
    "fields",
    [
        {"why": "needs a=b", "checkov": ["CKV_K8S_16"]},  # checkov would cut the reason at `=`
        {"why": "two\nlines", "kube_linter": ["host-network"]},
        {"why": "no check named"},
        {"why": "not a checkov id", "checkov": ["CKV_AWS_1"]},
        {"why": "too long a name", "kube_linter": ["x" * 64]},
    ],
)
def test_an_exemption_a_linter_could_not_read_fails_at_load(fields: dict[str, Any]) -> None:
    from sysctl_advisor.model.errors import InputError
    from sysctl_advisor.model.model_base import validate

    with pytest.raises(InputError):
        validate(LinterExemption, fields)
