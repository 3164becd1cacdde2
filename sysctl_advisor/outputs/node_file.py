"""The `file` shape of a node platform's document: the node's sysctl.d file (the one
`--format conf --detail brief` writes), in a wrapper that installs it at the platform's
`document.file`, applies it with `sysctl -p` and leaves it for systemd-sysctl to apply at every
boot. The read-back is the file's settings, read as sysctl reads it, from the wrapper that
installs exactly that file. Two wrappers (`document.wrapper`):

* `daemonset`: on any cluster, a ConfigMap holding the file and the script that installs it,
  and a DaemonSet that runs the script on each node labelled for the profile. The script
  (`apply.sh`) copies the file into the node's /etc/sysctl.d, applies it and reads every value
  back; `apply.sh --check` only reads back, and is the pod's readiness probe, so a node where a
  value did not hold (another agent took it back) shows as not ready. The pod runs in the
  host's network namespace (a per-namespace key set elsewhere would reach only the pod's own)
  and privileged (/proc/sys is read-only otherwise). The manifest passes the linters people
  run on manifests (checkov, kube-linter) where a fix is right: limits, a read-only root
  filesystem, no service account token, an explicit root user and restart policy, the image
  pulled each start. Each check a privileged sysctl writer must fail is annotated on the
  DaemonSet with the reason, in each linter's own skip annotation (the platform's
  `exemptions`); a check whose fix the runtime would ignore (a seccomp profile, a capability
  drop list on a privileged container) is annotated, not faked.
* `user-data`: a MIME multi-part document (an EKS managed node group's launch template user
  data, which EKS merges with its own) holding one `text/x-shellscript` part, which cloud-init
  runs before the kubelet starts; the script installs the file and applies it. It comes from
  Python's email library; a MIME document cannot start with comments, so the header (and the
  platform's `document.comment`) is in the script.

The documents come from serializers; the file and the values a script expects are data in a
quoted here-document, never shell code.
"""

from __future__ import annotations

import email
import email.policy
import posixpath
from collections.abc import Callable
from email.message import EmailMessage
from email.mime.multipart import MIMEMultipart
from typing import Any

import yaml

from sysctl_advisor.knowledge.node_platforms import NodePlatform
from sysctl_advisor.outputs.node_output import (
    NODE_LABEL,
    NodeOutput,
    node_label,
    read_back_error,
)
from sysctl_advisor.outputs.plan_render import RenderCheckError, rendered_settings

# --- daemonset --------------------------------------------------------------------------

NAMESPACE = "kube-system"  # where system-node-critical is admitted without a quota
IMAGE = "busybox:1.37"  # sh, cp, mv, awk and sysctl; pin a digest in your own registry
_VALUES_END = "SYSCTL_ADVISOR_VALUES"

APPLY_SH = """\
#!/bin/sh
# Written by sysctl-advisor: install the node's sysctl.d file, apply it, read every value back.
# apply.sh --check only reads back (the readiness probe).
set -eu
config="${{SYSCTL_ADVISOR_CONFIG:-/config}}"
target="${{HOST_SYSCTL_D:-/host{directory}}}/{conf}"
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


def apply_sh(node: NodeOutput) -> str:
    directory, conf = posixpath.split(str(node.platform.spec.document.file))
    values = "\n".join(f"{t.key} {t.value}" for t in node.taken)
    return APPLY_SH.format(directory=directory, conf=conf, end=_VALUES_END, values=values)


def _container(directory: str) -> dict[str, Any]:
    return {
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
            {"name": "sysctl-d", "mountPath": f"/host{directory}"},
        ],
    }


def _daemonset(node: NodeOutput) -> str:
    directory, conf = posixpath.split(str(node.platform.spec.document.file))
    label = node_label(node.plan)  # it names the objects and selects the nodes
    name = f"sysctl-advisor-{label}"
    labels = {"app.kubernetes.io/name": "sysctl-advisor", NODE_LABEL: label}
    metadata = {"name": name, "namespace": NAMESPACE, "labels": labels}
    config_map: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata,
        "data": {conf: node.conf(), "apply.sh": apply_sh(node)},
    }
    pod = {
        "nodeSelector": {NODE_LABEL: label},
        "hostNetwork": True,
        "automountServiceAccountToken": False,  # it calls no API
        "securityContext": {"runAsUser": 0},  # whatever user the image names
        "restartPolicy": "Always",
        "tolerations": [{"operator": "Exists"}],
        "priorityClassName": "system-node-critical",
        "containers": [_container(directory)],
        "volumes": [
            {"name": "config", "configMap": {"name": name}},
            {"name": "sysctl-d", "hostPath": {"path": directory, "type": "DirectoryOrCreate"}},
        ],
    }
    daemon_set: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {**metadata, "annotations": linter_annotations(node.platform)},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod},
        },
    }
    head = "\n".join(node.header) + "\n"
    body = "---\n".join(
        yaml.dump(d, Dumper=_Dumper, sort_keys=False, width=4096) for d in (config_map, daemon_set)
    )
    return head + "---\n" + body


def _daemonset_file(text: str, platform: NodePlatform) -> str:
    """The ConfigMap's file, whose settings the script's own list must match key for key."""
    conf = posixpath.basename(str(platform.spec.document.file))
    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        raise read_back_error(platform, "", f"is not YAML ({type(exc).__name__})") from None
    maps = [d for d in documents if isinstance(d, dict) and d.get("kind") == "ConfigMap"]
    data = maps[0].get("data") if len(maps) == 1 else None
    if not isinstance(data, dict) or set(data) != {conf, "apply.sh"}:
        raise read_back_error(platform, "ConfigMap", f"holds other than {conf} and apply.sh")
    if not all(isinstance(v, str) for v in data.values()):
        raise read_back_error(platform, "ConfigMap", "holds a value that is not text")
    listed = data["apply.sh"].partition(f"<<'{_VALUES_END}'\n")[2]
    listed, sep, _ = listed.partition(f"\n{_VALUES_END}\n")
    expected = dict(line.partition(" ")[::2] for line in listed.splitlines() if line)
    if not sep or expected != _settings(data[conf]):
        raise read_back_error(platform, "apply.sh", f"does not check the values of {conf}")
    return str(data[conf])


# --- user-data --------------------------------------------------------------------------

BOUNDARY = "==SYSCTL-ADVISOR-BOUNDARY=="
_CONF_END = "SYSCTL_ADVISOR_CONF"

SCRIPT = """\
#!/bin/bash
{header}
set -euo pipefail
install -d -m 0755 {directory}
cat > {path}.tmp <<'{end}'
{conf}{end}
mv {path}.tmp {path}
sysctl -p {path}
"""


def script(node: NodeOutput) -> str:
    spec = node.platform.spec.document
    conf = node.conf()
    if not conf.endswith("\n"):
        conf += "\n"
    comment = [f"# {line}" for line in (spec.comment or "").splitlines()]
    header = "\n".join([*node.header, *comment])
    path = str(spec.file)
    directory = posixpath.dirname(path)
    text = SCRIPT.format(header=header, directory=directory, path=path, end=_CONF_END, conf=conf)
    if text.splitlines().count(_CONF_END) != 1:  # the here-document ends at its last line only
        raise RenderCheckError(f"the script holds the line {_CONF_END} twice; nothing was written")
    return text


def _user_data(node: NodeOutput) -> str:
    text = script(node)
    part = EmailMessage()
    ascii_only = text.isascii()  # 7bit or 8bit, never base64: the script stays readable
    part.set_content(
        text,
        subtype="x-shellscript",
        charset="us-ascii" if ascii_only else "utf-8",
        cte="7bit" if ascii_only else "8bit",
    )
    message = MIMEMultipart("mixed", boundary=BOUNDARY)
    message.attach(part)
    if f"--{BOUNDARY}" in text:
        raise RenderCheckError("the script holds the MIME boundary; nothing was written")
    # bytes, then text: a str generator would turn an 8bit part into base64
    return message.as_bytes(policy=email.policy.compat32.clone(linesep="\n")).decode("utf-8")


def _user_data_file(text: str, platform: NodePlatform) -> str:
    """The file the script installs and applies; a script that does not install and apply
    exactly that file fails the read-back."""
    message = email.message_from_bytes(text.encode("utf-8"), policy=email.policy.default)
    if message.get_content_type() != "multipart/mixed" or message.get("MIME-Version") != "1.0":
        raise read_back_error(platform, "", "is not MIME multi-part")
    parts = list(message.iter_parts())
    if len(parts) != 1 or parts[0].get_content_type() != "text/x-shellscript":
        raise read_back_error(platform, "", "holds other than one text/x-shellscript part")
    body = parts[0].get_content()
    path = str(platform.spec.document.file)
    opening = f"cat > {path}.tmp <<'{_CONF_END}'\n"
    if not isinstance(body, str) or body.count(opening) != 1:
        raise read_back_error(platform, "script", f"does not write {path} once")
    conf, sep, rest = body.split(opening, 1)[1].partition(f"\n{_CONF_END}\n")
    if not sep or rest != f"mv {path}.tmp {path}\nsysctl -p {path}\n":
        raise read_back_error(platform, "script", f"does not install and apply {path}")
    return conf + "\n"


# --- the shape ----------------------------------------------------------------------------

Wrapper = tuple[Callable[[NodeOutput], str], Callable[[str, NodePlatform], str], str]
# each wrapper: its document, the file read back out of it, and the document's file extension
WRAPPERS: dict[str, Wrapper] = {
    "daemonset": (_daemonset, _daemonset_file, "yaml"),
    "user-data": (_user_data, _user_data_file, "mime"),
}


def _settings(conf: str) -> dict[str, str]:
    return rendered_settings("conf", conf) or {}


def document(node: NodeOutput) -> str:
    return WRAPPERS[str(node.platform.spec.document.wrapper)][0](node)


def read_back(text: str, platform: NodePlatform) -> dict[str, str]:
    """The values the node gets: the installed file's settings, read as sysctl reads it."""
    return _settings(WRAPPERS[str(platform.spec.document.wrapper)][1](text, platform))


def extension(platform: NodePlatform) -> str:
    return WRAPPERS[str(platform.spec.document.wrapper)][2]
