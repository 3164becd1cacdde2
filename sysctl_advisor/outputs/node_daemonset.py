"""`recommend --format daemonset`: the node's keys on any cluster, as a ConfigMap holding the
sysctl.d file and the script that installs it, and a DaemonSet that runs the script on each
node labelled for the profile.

The script (`apply.sh`) copies the file into the node's /etc/sysctl.d (so a reboot keeps the
values: systemd-sysctl applies it at boot), applies it with `sysctl -p`, and reads every value
back; `apply.sh --check` only reads back, and is the pod's readiness probe, so a node where a
value did not hold (another agent took it back) shows as not ready. The pod runs in the host's
network namespace (a per-namespace key set elsewhere would reach only the pod's own) and
privileged (/proc/sys is read-only otherwise). The documents come from the YAML serializer;
the values the script expects are data in a quoted here-document, never shell code.

The manifest passes the linters people run on manifests (checkov, kube-linter) where a fix is
right: limits, a read-only root filesystem, no service account token, an explicit root user
and restart policy, the image pulled each start. Each check a privileged sysctl writer must
fail is annotated on the DaemonSet with the reason, in each linter's own skip annotation
(the platform's `exemptions`, rules/catalog/node-platforms/daemonset.yaml); a check whose
fix the runtime would ignore (a seccomp profile, a capability drop list on a privileged
container) is annotated, not faked.
"""

from __future__ import annotations

from typing import Any

import yaml

from sysctl_advisor.knowledge.node_platforms import NodePlatform
from sysctl_advisor.outputs.node_platforms import NODE_LABEL, NodeOutput, node_label

NAMESPACE = "kube-system"  # where system-node-critical is admitted without a quota
CONF_NAME = "90-sysctl-advisor.conf"
IMAGE = "busybox:1.37"  # sh, cp, mv, awk and sysctl; pin a digest in your own registry
_END = "SYSCTL_ADVISOR_VALUES"

SCRIPT = """\
#!/bin/sh
# Written by sysctl-advisor: install the node's sysctl.d file, apply it, read every value back.
# apply.sh --check only reads back (the readiness probe).
set -eu
config="${{SYSCTL_ADVISOR_CONFIG:-/config}}"
target="${{HOST_SYSCTL_D:-/host/etc/sysctl.d}}/{conf}"
check() {{
  status=0
  while read -r key value; do
    [ -n "$key" ] || continue
    got=$(sysctl -n "$key") || {{ echo "$key: cannot read" >&2; status=1; continue; }}
    # A value of several fields (tabs between them), as one line with single spaces.
    got=$(printf '%s\\n' "$got" | awk 'NF {{ $1 = $1; printf "%s%s", sep, $0; sep = " " }}')
    if [ "$got" != "$value" ]; then
      echo "$key is $got, not $value" >&2
      status=1
    fi
  done <<'{end}'
{values}
{end}
  return "$status"
}}
if [ "${{1:-}}" = --check ]; then
  check
  exit
fi
cp "$config/{conf}" "$target.tmp"
mv "$target.tmp" "$target"
sysctl -p "$target" >/dev/null
check
"""


def linter_annotations(platform: NodePlatform) -> dict[str, str]:
    """The platform's exemptions as each linter's skip annotations (checkov splits its value
    at `=`, so a reason holds none)."""
    exemptions = platform.spec.exemptions
    checkov = [(check, e.why) for e in exemptions for check in e.checkov]
    kube_linter = {
        f"ignore-check.kube-linter.io/{check}": e.why for e in exemptions for check in e.kube_linter
    }
    return {
        **{f"checkov.io/skip{n}": f"{check}={why}" for n, (check, why) in enumerate(checkov, 1)},
        **kube_linter,
    }


class _Dumper(yaml.SafeDumper):
    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)

    def ignore_aliases(self, data: Any) -> bool:  # the labels written out each time
        return True


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar(
        "tag:yaml.org,2002:str", value, style="|" if "\n" in value else None
    )


_Dumper.add_representer(str, _str)


def script(node: NodeOutput) -> str:
    values = "\n".join(f"{t.key} {t.value}" for t in node.taken)
    return SCRIPT.format(conf=CONF_NAME, end=_END, values=values)


def document(node: NodeOutput) -> str:
    label = node_label(node.plan)  # it names the objects and selects the nodes
    name = f"sysctl-advisor-{label}"
    labels = {"app.kubernetes.io/name": "sysctl-advisor", NODE_LABEL: label}
    config_map: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
        "data": {CONF_NAME: node.conf(), "apply.sh": script(node)},
    }
    container = {
        "name": "sysctl",
        "image": IMAGE,
        "imagePullPolicy": "Always",  # the tag's image now, not one a node kept
        "command": ["/bin/sh", "-c", "/bin/sh /config/apply.sh && exec sleep 2147483647"],
        "securityContext": {"privileged": True, "readOnlyRootFilesystem": True},
        "readinessProbe": {
            "exec": {"command": ["/bin/sh", "/config/apply.sh", "--check"]},
            "periodSeconds": 60,
            "timeoutSeconds": 10,  # a sysctl and an awk a key, within the CPU limit
        },
        "resources": {
            "requests": {"cpu": "1m", "memory": "8Mi"},
            "limits": {"cpu": "250m", "memory": "32Mi"},
        },
        "volumeMounts": [
            {"name": "config", "mountPath": "/config", "readOnly": True},
            {"name": "sysctl-d", "mountPath": "/host/etc/sysctl.d"},
        ],
    }
    daemon_set: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": labels,
            "annotations": linter_annotations(node.platform),
        },
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "nodeSelector": {NODE_LABEL: label},
                    "hostNetwork": True,
                    "automountServiceAccountToken": False,  # it calls no API
                    "securityContext": {"runAsUser": 0},  # whatever user the image names
                    "restartPolicy": "Always",
                    "tolerations": [{"operator": "Exists"}],
                    "priorityClassName": "system-node-critical",
                    "containers": [container],
                    "volumes": [
                        {"name": "config", "configMap": {"name": name}},
                        {
                            "name": "sysctl-d",
                            "hostPath": {"path": "/etc/sysctl.d", "type": "DirectoryOrCreate"},
                        },
                    ],
                },
            },
        },
    }
    head = "\n".join(node.header) + "\n"
    body = "---\n".join(
        yaml.dump(d, Dumper=_Dumper, sort_keys=False, width=4096) for d in (config_map, daemon_set)
    )
    return head + "---\n" + body


def read_back(text: str, platform: NodePlatform) -> dict[str, str]:
    """The values the node gets: the sysctl.d file's settings, which the script's own list must
    match key for key."""
    from sysctl_advisor.outputs.plan_render import rendered_settings

    documents = [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
    data = next(d["data"] for d in documents if d.get("kind") == "ConfigMap")
    settings = rendered_settings("conf", data[CONF_NAME]) or {}
    listed = data["apply.sh"].split(f"<<'{_END}'\n", 1)[1].split(f"\n{_END}\n", 1)[0]
    expected = dict(line.split(" ", 1) for line in listed.splitlines() if line)
    return settings if expected == settings else {}
