"""The `map` shape of a node platform's document: a map of sysctl name to string value at a
path in YAML or TOML, with the header on top as comments (Talos's `machine.sysctls`,
Bottlerocket's `settings.kernel.sysctl`, GKE's `linuxConfig.sysctl`: the platform's
`document`, rules/catalog/node-platforms/ID.yaml).

Every value is a string (what each of them types it as); a platform whose `document` says
`one_line` gets a value's fields joined by single spaces. The document comes from the YAML
serializer or a TOML one (tomli-w); the read-back parses it as the platform does and takes
only the map at the path, string values only, each key one the platform takes (the top of
the document may also hold the members `beside` names, which the output never writes).
"""

from __future__ import annotations

from typing import Any

import tomli_w
import yaml

from sysctl_advisor.knowledge.node_platforms import NodePlatform
from sysctl_advisor.model.documents import parse_toml
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.outputs.node_output import NodeOutput, at_path, nest, read_back_error


def _value(platform: NodePlatform, value: str) -> str:
    return " ".join(value.split()) if platform.spec.document.one_line else str(value)


def document(node: NodeOutput) -> str:
    spec = node.platform.spec.document
    data = nest(spec.path, {t.key: _value(node.platform, t.value) for t in node.taken})
    head = "\n".join(node.header) + "\n"
    if spec.syntax == "toml":
        return head + tomli_w.dumps(data)
    return head + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=4096)


def _parse(text: str, platform: NodePlatform) -> Any:
    if platform.spec.document.syntax == "toml":
        try:
            return parse_toml(text, None)
        except InputError as exc:
            raise read_back_error(platform, "", f"is not TOML ({exc.message[:80]})") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise read_back_error(platform, "", f"is not YAML ({type(exc).__name__})") from None


def read_back(text: str, platform: NodePlatform) -> dict[str, str]:
    """The map at the document's path as the platform reads it."""
    spec = platform.spec.document
    found = at_path(platform, _parse(text, platform), spec.path, spec.beside)
    where = ".".join(spec.path)
    values: dict[str, str] = {}
    for key, value in found.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise read_back_error(
                platform, where, f"holds {key!r}: {value!r}; it takes only string values"
            )
        why = platform.takes(key, value)[1]
        if why is not None:
            raise read_back_error(
                platform, where, f"holds {key!r}, which the platform does not take: {why}"
            )
        values[key] = value
    return values


def extension(platform: NodePlatform) -> str:
    return str(platform.spec.document.syntax)
