"""`recommend --format bottlerocket`: the node's keys as Bottlerocket user data.

Bottlerocket reads its settings from the instance's user data in TOML
(rules/catalog/node-platforms/bottlerocket.yaml): `[settings.kernel.sysctl]`, quoted keys and
string values; in an EKS managed node group's launch template, EKS merges it with its own.
corndog writes each value to its file under /proc/sys. The document comes from a TOML
serializer (tomli-w), read back with tomllib; the header on top as TOML comments.

The settings API refuses a key outside its SysctlKey pattern (the platform file's `refused`);
a plan's keys are the kernel's names, but a key the pattern refuses stops the document here
rather than the node's boot.
"""

from __future__ import annotations

import re
import sys
from typing import Any

import tomli_w

from sysctl_advisor.outputs.node_platforms import NodeOutput
from sysctl_advisor.outputs.plan_render import RenderCheckError

# Bottlerocket's SysctlKey (sources/models/modeled-types/src/shared.rs, v1.20.0): the pattern,
# no '..', no leading '.' or '/'
_SYSCTL_KEY = re.compile(r"[a-zA-Z0-9./_-]{1,128}")


def _refused(key: str) -> bool:
    return not _SYSCTL_KEY.fullmatch(key) or ".." in key or key.startswith((".", "/"))


def settings(node: NodeOutput) -> dict[str, Any]:
    bad = [t.key for t in node.taken if _refused(t.key)]
    if bad:
        raise RenderCheckError(
            f"Bottlerocket's settings API refuses the key {bad[0]!r} (letters, digits, '.', "
            "'/', '_' and '-', at most 128); set it with --format daemonset"
        )
    return {"settings": {"kernel": {"sysctl": {t.key: str(t.value) for t in node.taken}}}}


def document(node: NodeOutput) -> str:
    head = "\n".join(node.header) + "\n"
    return head + tomli_w.dumps(settings(node))


def _loads(text: str) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]
    data: dict[str, Any] = tomllib.loads(text)
    return data


def read_back(text: str) -> dict[str, str]:
    """`settings.kernel.sysctl` as Bottlerocket reads it: string values only (anything else in
    the document, or a value of another type, reads as nothing)."""
    data = _loads(text)
    if set(data) != {"settings"} or set(data["settings"]) != {"kernel"}:
        return {}
    kernel = data["settings"]["kernel"]
    if not isinstance(kernel, dict) or set(kernel) != {"sysctl"}:
        return {}
    sysctl = kernel["sysctl"]
    if not isinstance(sysctl, dict) or not all(isinstance(v, str) for v in sysctl.values()):
        return {}
    return dict(sysctl)
