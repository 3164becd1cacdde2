"""`recommend --format kubernetes`: a Placement as YAML documents for the cluster.

1. a kustomize Component holding a strategic-merge patch for the workload's pod template: the
   per-namespace keys in securityContext.sysctls. The patch is a string inside the Component, so
   no document of the stream is a fragment: a validator run on the committed file (kubeconform,
   kubernetes-validate) meets no Deployment missing its selector and containers;
2. a KubeletConfiguration fragment: allowedUnsafeSysctls for those the kubelet does not
   consider safe on that release and kernel (only when there are any);
3. a Node Tuning Operator `Tuned`: the global keys, in the tuned profile the `tuned` format
   writes (only when there are any).

The documents come from the YAML serializer; only the comments before each are text, each
line escaped and wrapped by `_yaml_comment`. The result is read back (`manifest_settings`) and
must hold exactly the placement's keys and values, each in its one place.
"""

from __future__ import annotations

from typing import Any

import yaml

from sysctl_advisor import __version__
from sysctl_advisor.engine.kubernetes_placement import Placement
from sysctl_advisor.knowledge.catalog import Catalog
from sysctl_advisor.outputs.node_output import NODE_LABEL, node_label
from sysctl_advisor.outputs.plan_render import RenderCheckError, Renderer, _param, _yaml_comment

TUNED_NAMESPACE = "openshift-cluster-node-tuning-operator"
TUNED_PRIORITY = 20  # the operator's defaults: openshift-control-plane 30, openshift-node 40
WORKLOAD_NAME = "workload"
# A kustomize Component: a kustomization that another includes under `components:`, its patches
# applied to that kustomization's resources (kustomize 3.7 and later; kubectl kustomize from 1.21).
COMPONENT_API_VERSION = "kustomize.config.k8s.io/v1alpha1"
COMPONENT_KIND = "Component"
# The workload kinds whose pod template is spec.template.spec, as the patch may name them.
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet")


class _Dumper(yaml.SafeDumper):
    """Block style, sequences indented under their key (as kubectl and yamllint write them),
    multi-line strings as literal blocks where YAML allows one."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def _dump(document: dict[str, Any]) -> str:
    return yaml.dump(  # unicode as it is: a citation's name never turns a block into a quote
        document,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        width=4096,
        allow_unicode=True,
    )


def _comment(text: str) -> str:
    return str(_yaml_comment(text, indent="# "))


def _list(title: str, items: list[str]) -> list[str]:
    lines = [_comment(title)]
    lines += [str(_yaml_comment(item, indent="#     ", first="#   - ")) for item in items]
    return lines


def _header(placement: Placement, catalog: Catalog, command: str) -> list[str]:
    plan = placement.node
    h = plan.host
    kernel = h.kernel or "unknown"
    if h.kernel_modelled_as != (h.kernel or ""):
        kernel += f" (modelled as {h.kernel_modelled_as})"
    params = " ".join(f"{k}={_param(v)}" for k, v in sorted(plan.profile.params.items()))
    version = placement.version
    release = (
        f"{version}: the kubelet's safe sysctls and the Pod Security baseline as of "
        f"{placement.lists_from}"
        + ("" if placement.lists_from == version else " (the newest the advisor has read)")
    )
    lines = [
        _comment(
            f"Kubernetes manifests for {h.hostname or 'an unnamed host'}'s workload, written by "
            f"sysctl-advisor {__version__}"
        ),
        "#",
        _comment(f"node: kernel {kernel}, {h.arch or 'arch unknown'} ({h.bits}-bit)"),
        _comment(f"profile: {plan.profile.name}"),
    ]
    if params:
        lines.append(_comment(f"params: {params}"))
    lines += [_comment(f"kubernetes: {release}"), _comment(f"rebuild: {command}"), "#"]
    copied = [p.setting.key for p in placement.pod if p.copied_from_node]
    trap = (
        "Per-namespace values set on the node do not reach pods. Each pod has its own network "
        "namespace, and a new namespace starts from the kernel's defaults, not from the node's "
        "values: a per-namespace key set in the node's /etc/sysctl.d, by tuned or by the "
        "operator below changes the node's own namespace only. "
    )
    # Which keys a new namespace copies from the node, and why some stay the node's: the
    # catalog's netns_copies_init_since and netns_restricted, for this kernel.
    copying = [
        name
        for name, spec in catalog.keys.items()
        if spec.netns_copies_init_since and placement.kernel >= spec.netns_copies_init_since
    ]
    if copying:
        trap += (
            f"The exceptions on this kernel: {', '.join(copying)} are copied from the node "
            "when a namespace is created, so a pod started before the node was tuned keeps "
            "the old values"
            + (f" (here: {', '.join(copied)}, set in the pod too)" if copied else "")
            + ". "
        )
    for key in placement.inherited:
        restriction = " ".join(str(catalog.keys[key].netns_restricted).split())
        trap += (
            f"{key} is set on the node even so (document 3), and new pods copy it. "
            f"{restriction} A pod asking for another value would not start. "
        )
    trap += (
        "So the per-namespace keys are the pod's (document 1, planned for a fresh namespace), "
        "and the global keys are the node's (document 3): one value for the node and all its "
        "pods, which a pod cannot set (hidden or read-only in its namespace; the runtime "
        "would fail to start it). A hostNetwork pod shares the node's namespace: the kubelet "
        "(and from 1.29 the API server) refuses net.* sysctls for it, so its per-namespace "
        "keys belong with the node's."
    )
    lines += [_comment(trap)]
    lines += _namespace_comments(placement, "document 3")
    if not placement.kernel_known:
        lines += [
            "#",
            _comment(
                "The facts give no kernel: per-namespace scope and the kubelet's kernel checks "
                f"are judged for {placement.kernel.short}, the newest the catalog knows."
            ),
        ]
    if plan.findings:
        lines += ["#"]
        lines += _list(
            "Findings:",
            [
                f"[{f.severity}] {f.id}" + (f" ({f.key})" if f.key else "") + f": {f.message}"
                for f in plan.findings
            ],
        )
    if plan.companions:
        lines += ["#"]
        lines += _list(
            "Outside sysctl, change these too (on the node, or in the workload's own config):",
            [f"{c.target}: {c.setting}" for c in plan.companions],
        )
    if plan.notes:
        lines += ["#"]
        lines += _list("Notes:", list(plan.notes))
    return lines


def _namespace_comments(placement: Placement, where: str) -> list[str]:
    """Why per-namespace keys are set on the node (`where`: the document that sets them):
    the workload runs in the node's namespace, or the keys protect that namespace."""
    if placement.host_network:
        return [
            "#",
            _comment(
                "The workload runs in the node's own network namespace (hostNetwork: "
                f"{'; '.join(placement.host_network)}). A hostNetwork pod may not set net.* "
                "sysctls (the kubelet refuses them; the API server too from 1.29), so its "
                f"per-namespace keys are set on the node ({where}) and none in a pod. "
                "--workload-network pod plans for pods with their own namespace instead."
            ),
        ]
    if not placement.node_namespace:
        return []
    return [
        "#",
        *_list(
            f"Set for the node's own network namespace ({where}), not for pods:",
            [f"{key}: {why}" for key, why in placement.node_namespace.items()],
        ),
    ]


def _pod_document(placement: Placement, label: str | None) -> tuple[list[str], dict[str, Any]]:
    version = placement.version
    comments = [
        "#",
        _comment(
            "1. The pod's sysctls: a kustomize Component whose patch sets them in the "
            "workload's pod template. Commit this document as the kustomization.yaml of a "
            "directory of its own and list that directory under `components:` in the "
            "workload's kustomization. Set the patch's metadata.name to the workload's name "
            "(and its kind for a StatefulSet or DaemonSet): until it names one, kustomize "
            f"build fails (no resource matches Deployment {WORKLOAD_NAME}). The patch replaces "
            "the pod's securityContext.sysctls (the list has no merge key): add any sysctl the "
            "workload already sets. Without kustomize, the patch string, its name set, is a "
            "patch for kubectl patch deployment NAME --patch-file FILE."
        ),
        "#",
    ]
    for p in placement.pod:
        state = "safe" if p.verdict.safe else "unsafe"
        comments.append(
            str(
                _yaml_comment(
                    f"{p.setting.key} = {p.setting.value}: {state} on {version} ({p.verdict.why})",
                    indent="#       ",
                    first="#   ",
                )
            )
        )
    if placement.unsafe:
        comments += [
            "#",
            _comment(
                "The unsafe ones need the kubelet's allowedUnsafeSysctls (document 2) on every "
                "node the pod may run on, else the kubelet refuses the pod (SysctlForbidden): "
                f"the nodeSelector keeps it on the nodes labelled {label}."
            ),
        ]
    outside = placement.outside_baseline
    if outside:
        comments += [
            "#",
            _comment(
                "Pod Security: a namespace that enforces the baseline or restricted level "
                f"refuses a pod that sets {', '.join(outside)} (forbidden sysctls), whatever "
                "the kubelet allows; the pod's namespace must enforce privileged "
                "(pod-security.kubernetes.io/enforce=privileged)."
            ),
        ]
    spec: dict[str, Any] = {}
    if label is not None:
        key, value = label.split("=", 1)
        spec["nodeSelector"] = {key: value}
    spec["securityContext"] = {
        "sysctls": [{"name": p.setting.key, "value": p.setting.value} for p in placement.pod]
    }
    patch = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": WORKLOAD_NAME},
        "spec": {"template": {"spec": spec}},
    }
    # No `target`: the patch names its workload, so a name that matches nothing fails the build
    # instead of leaving the pod silently untuned (a target that selects nothing is no error).
    document = {
        "apiVersion": COMPONENT_API_VERSION,
        "kind": COMPONENT_KIND,
        "patches": [{"patch": _dump(patch)}],
    }
    return comments, document


def _kubelet_document(placement: Placement, label: str) -> tuple[list[str], dict[str, Any]]:
    comments = [
        "#",
        _comment(
            "2. The kubelet's allowance for the pod's unsafe sysctls, on the nodes labelled "
            f"{label}: merge into the kubelet's configuration file (its --config; kubeadm "
            "writes /var/lib/kubelet/config.yaml) and restart the kubelet. On OpenShift, a "
            "KubeletConfig (machineconfiguration.openshift.io/v1) carries the same list in "
            "spec.kubeletConfig.allowedUnsafeSysctls."
        ),
    ]
    document = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "allowedUnsafeSysctls": list(placement.unsafe),
    }
    return comments, document


def _tuned_document(
    placement: Placement, renderer: Renderer, command: str, label: str
) -> tuple[list[str], dict[str, Any]]:
    plan = placement.node
    key, value = label.split("=", 1)
    name = f"sysctl-advisor-{value}"
    comments = [
        "#",
        _comment(
            "3. The node's keys: a Node Tuning Operator profile (OpenShift; elsewhere install "
            "the tuned profile in `data` on the nodes, or use --format tuned or conf). It "
            f"applies to the nodes labelled {label} (kubectl label node NODE {label}); change "
            "the match to select the nodes another way."
        ),
    ]
    document = {
        "apiVersion": "tuned.openshift.io/v1",
        "kind": "Tuned",
        "metadata": {"name": name, "namespace": TUNED_NAMESPACE},
        "spec": {
            "profile": [{"name": name, "data": renderer.tuned_for_operator(plan, command)}],
            "recommend": [
                {
                    "profile": name,
                    "priority": TUNED_PRIORITY,
                    "match": [{"label": key, "value": value}],
                }
            ],
        },
    }
    return comments, document


def render_kubernetes(renderer: Renderer, placement: Placement, command: str) -> str:
    plan = placement.node
    label = f"{NODE_LABEL}={node_label(plan)}"
    parts = ["\n".join(_header(placement, renderer.catalog, command))]
    documents: list[tuple[list[str], dict[str, Any]]] = []
    if placement.pod:
        needs_nodes = bool(placement.unsafe) or bool(plan.settings)
        documents.append(_pod_document(placement, label if needs_nodes else None))
    elif placement.host_network:
        parts.append("#\n" + _comment("1. The pod: none (hostNetwork: its keys are the node's)."))
    else:
        parts.append("#\n" + _comment("1. The pod: no per-namespace key to set."))
    if placement.unsafe:
        documents.append(_kubelet_document(placement, label))
    if plan.settings:
        documents.append(_tuned_document(placement, renderer, command, label))
    else:
        parts.append("#\n" + _comment("3. The node: no key to set."))
    text = "\n".join(parts) + "\n"
    for comments, document in documents:
        text += "---\n" + "\n".join(comments) + "\n" + _dump(document)
    check_manifests(placement, text)
    return text


def manifest_settings(text: str) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """What the manifests hold, read back with a YAML parser as the cluster reads them: the
    pod's sysctls, the node's (from the Tuned's embedded profile, read as tuned reads it), and
    the kubelet's allowed unsafe sysctls."""
    from sysctl_advisor.outputs.plan_render import rendered_settings

    pod: dict[str, str] = {}
    node: dict[str, str] = {}
    unsafe: list[str] = []
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise RenderCheckError(f"the manifests are not YAML: {exc.__class__.__name__}") from None
    for document in documents:
        kind = document.get("kind") if isinstance(document, dict) else None
        if kind == COMPONENT_KIND:
            if pod:
                raise RenderCheckError("two pod patches")
            for item in _pod_sysctls(document):
                if item["name"] in pod:
                    raise RenderCheckError(f"{item['name']} is set twice in the pod")
                pod[item["name"]] = item["value"]
        elif kind == "KubeletConfiguration":
            unsafe = list(document["allowedUnsafeSysctls"])
        elif kind == "Tuned":
            for profile in document["spec"]["profile"]:
                node.update(rendered_settings("tuned", profile["data"]) or {})
        else:
            raise RenderCheckError(f"an unexpected document ({str(kind)[:40]})")
    return pod, node, unsafe


def pod_patch(component: dict[str, Any]) -> dict[str, Any]:
    """The one strategic-merge patch a Component of these manifests carries, parsed as
    kustomize parses it."""
    patches = component.get("patches")
    if component.get("apiVersion") != COMPONENT_API_VERSION or not isinstance(patches, list):
        raise RenderCheckError("the pod's Component is not a kustomize Component with patches")
    if len(patches) != 1 or set(patches[0]) != {"patch"}:
        raise RenderCheckError("the pod's Component must hold exactly one inline patch")
    try:
        patch = yaml.safe_load(patches[0]["patch"])
    except yaml.YAMLError as exc:
        raise RenderCheckError(f"the pod patch is not YAML: {exc.__class__.__name__}") from None
    if not isinstance(patch, dict) or patch.get("kind") not in WORKLOAD_KINDS:
        raise RenderCheckError("the pod patch names no workload")
    return patch


def _pod_sysctls(component: dict[str, Any]) -> list[dict[str, str]]:
    sysctls = pod_patch(component)["spec"]["template"]["spec"]["securityContext"]["sysctls"]
    return list(sysctls)


def check_manifests(placement: Placement, text: str) -> None:
    """Each setting in exactly its one place, with exactly the plan's value; the kubelet's
    list exactly the unsafe ones."""
    pod, node, unsafe = manifest_settings(text)
    wanted_pod = {p.setting.key: p.setting.value for p in placement.pod}
    wanted_node = {s.key: s.value for s in placement.node.settings}
    if pod != wanted_pod or node != wanted_node or unsafe != placement.unsafe:
        raise RenderCheckError(
            "the rendered kubernetes manifests do not read back as the plan; nothing was written"
        )
    if (set(pod) & set(node)) - set(placement.node_namespace):
        raise RenderCheckError("a key is set both in the pod and on the node")
