"""`recommend --format eks`: the node's keys as an EKS managed node group's user data.

nodeadm's NodeConfig (Amazon Linux 2023) has no sysctl field, so the keys go in the launch
template's user data (rules/catalog/node-platforms/eks.yaml): a MIME multi-part document, which
EKS merges with its own, holding one `text/x-shellscript` part. cloud-init runs the script
before nodeadm starts the kubelet; it installs the node's sysctl.d file (the same file
`--format conf --detail brief` writes) as /etc/sysctl.d/90-sysctl-advisor.conf, which
systemd-sysctl applies again at every boot, and applies it with `sysctl -p`.

The document comes from Python's email library; the file is data in a quoted here-document,
never shell code. A MIME document cannot start with comments, so the header is in the script.
"""

from __future__ import annotations

import email
import email.policy
from email.message import EmailMessage
from email.mime.multipart import MIMEMultipart

from sysctl_advisor.knowledge.node_platforms import NodePlatform
from sysctl_advisor.outputs.node_platforms import NodeOutput
from sysctl_advisor.outputs.plan_render import RenderCheckError

CONF_PATH = "/etc/sysctl.d/90-sysctl-advisor.conf"
BOUNDARY = "==SYSCTL-ADVISOR-BOUNDARY=="
_END = "SYSCTL_ADVISOR_CONF"

SCRIPT = """\
#!/bin/bash
{header}
# The node's sysctl.d file, installed before nodeadm starts the kubelet and applied again by
# systemd-sysctl at every boot, where files are read in name order and the last value wins.
# It comes after the AMI's 67-eks-reserved-ports.conf (the ports of the EKS add-ons), whose
# list a later file would replace whole: the port range and its reservations are left to it.
# A key the AMI's 99-*.conf files also set takes their value at a reboot.
set -euo pipefail
install -d -m 0755 /etc/sysctl.d
cat > {path}.tmp <<'{end}'
{conf}{end}
mv {path}.tmp {path}
sysctl -p {path}
"""


def script(node: NodeOutput) -> str:
    conf = node.conf()
    if not conf.endswith("\n"):
        conf += "\n"
    text = SCRIPT.format(header="\n".join(node.header), path=CONF_PATH, end=_END, conf=conf)
    if text.splitlines().count(_END) != 1:  # the here-document ends at its last line only
        raise RenderCheckError(f"the script holds the line {_END} twice; nothing was written")
    return text


def document(node: NodeOutput) -> str:
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


def _script_of(text: str) -> str | None:
    message = email.message_from_bytes(text.encode("utf-8"), policy=email.policy.default)
    if message.get_content_type() != "multipart/mixed" or message.get("MIME-Version") != "1.0":
        return None
    parts = list(message.iter_parts())
    if len(parts) != 1 or parts[0].get_content_type() != "text/x-shellscript":
        return None
    content = parts[0].get_content()
    return content if isinstance(content, str) else None


def read_back(text: str, platform: NodePlatform) -> dict[str, str]:
    """The values the node gets: the sysctl.d file the script installs and applies, read as
    sysctl reads it; a script that does not install and apply exactly that file reads as
    nothing."""
    from sysctl_advisor.outputs.plan_render import rendered_settings

    body = _script_of(text)
    if body is None:
        return {}
    opening = f"cat > {CONF_PATH}.tmp <<'{_END}'\n"
    if body.count(opening) != 1:
        return {}
    conf, sep, rest = body.split(opening, 1)[1].partition(f"\n{_END}\n")
    if not sep or rest != f"mv {CONF_PATH}.tmp {CONF_PATH}\nsysctl -p {CONF_PATH}\n":
        return {}
    return rendered_settings("conf", conf + "\n") or {}
