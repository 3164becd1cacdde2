"""Node platforms as shapes: a platform whose document has one of the shapes (a string map at a
path in YAML or TOML, typed fields in JSON, the sysctl.d file in a wrapper) is its YAML file
alone, rendered and read back by the shape's module; the shapes the knowledge files name are
the ones registered; a file whose document does not fit its shape is one line."""

from __future__ import annotations

import json
import sys
import typing
from pathlib import Path

import pytest
import yaml

from sysctl_advisor.cache.specs import SpecCache
from sysctl_advisor.engine.kubernetes_placement import Placement, placement_for
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.knowledge.node_platforms import NodePlatformSpec, load_node_platforms
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.outputs import formats
from sysctl_advisor.outputs.node_platforms import SHAPES, extension, read_back, render_node
from sysctl_advisor.outputs.plan_render import RenderCheckError, Renderer
from tests.conftest import EXAMPLES, load_facts

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

HEAD = """\
title: An example platform
place: wherever the example takes them
references:
  - "kubernetes-docs-sysctl-cluster: node-level sysctls are set on each node's operating system"
"""
# One platform of each shape, none of them shipped: each is this file and nothing else.
PLATFORMS = {
    "example-toml": """\
accepts: any
shape: map
document:
  syntax: toml
  path: [os, kernel, sysctl]
""",
    "example-fields": """\
accepts: listed
shape: fields
document:
  path: [node, kernelSettings]
keys:
  - name: net.ipv4.tcp_tw_reuse
    field: tcpTwReuse
    kind: bool
    source: "kubernetes-docs-sysctl-cluster: an example"
  - name: net.netfilter.nf_conntrack_max
    field: conntrackMax
    source: "kubernetes-docs-sysctl-cluster: an example"
""",
    "example-script": """\
accepts: any
shape: file
document:
  wrapper: user-data
  file: /etc/sysctl.d/80-example.conf
  comment: |-
    The example's own words.
""",
}


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    return KnowledgeBase.load()


@pytest.fixture(scope="module")
def placement(kb: KnowledgeBase) -> Placement:
    facts = load_facts(EXAMPLES / "haproxy-frontend-rhel7.yaml")
    return placement_for(kb, facts, "frontend-proxy", {}, kb.kubernetes.version(None))


def _platforms(directory: Path, files: dict[str, str]) -> dict[str, typing.Any]:
    directory.mkdir(exist_ok=True)
    for name, body in files.items():
        (directory / f"{name}.yaml").write_text(f"id: {name}\n{HEAD}{body}")
    return load_node_platforms(directory, SpecCache())


def test_a_platform_of_a_known_shape_is_one_yaml_file(
    kb: KnowledgeBase, placement: Placement, tmp_path: Path
) -> None:
    platforms = _platforms(tmp_path / "node-platforms", PLATFORMS)
    planned = {s.key: s.value for s in placement.node.settings}
    texts = {}
    for name, platform in platforms.items():
        texts[name] = render_node(platform, Renderer(kb.catalog), placement, "rebuild")
        taken = read_back(texts[name], platform)
        assert taken and all(planned[key] == value for key, value in taken.items()), name
    toml = tomllib.loads(texts["example-toml"])
    assert toml == {"os": {"kernel": {"sysctl": planned}}}
    assert extension(platforms["example-toml"]) == "toml"
    fields = json.loads(texts["example-fields"])["node"]["kernelSettings"]
    assert fields == {"tcpTwReuse": True, "conntrackMax": 290000}
    assert "net.core.somaxconn = 16384" in texts["example-fields"]  # refused, and said
    script = texts["example-script"]
    assert "Content-Type: multipart/mixed;" in script and "# The example's own words.\n" in script
    assert "sysctl -p /etc/sysctl.d/80-example.conf\n" in script
    assert extension(platforms["example-script"]) == "mime"


def test_a_read_back_fails_in_one_line_naming_the_member(tmp_path: Path) -> None:
    platforms = _platforms(tmp_path / "node-platforms", PLATFORMS)
    cases = {
        "example-toml": ('[os.kernel]\nsysctl = "x"\n', "os.kernel.sysctl is not a mapping"),
        "example-fields": ('{"node": {"kernelSettings": {"x": 1}}}', "holds 'x'"),
        "example-script": ("Content-Type: text/plain\n\nx\n", "is not MIME multi-part"),
    }
    for name, (text, words) in cases.items():
        with pytest.raises(RenderCheckError) as caught:
            read_back(text, platforms[name])
        message = str(caught.value)
        assert words in message and "\n" not in message and name in message, message


@pytest.mark.parametrize(
    ("document", "words"),
    [
        ("shape: map\ndocument:\n  syntax: yaml\n", "a map document names path, syntax"),
        ("shape: map\ndocument:\n  syntax: json\n  path: [a]\n", "YAML or TOML"),
        (
            "shape: file\ndocument:\n  wrapper: daemonset\n  file: /etc/sysctl.d/x.conf\n"
            "  comment: words\n",
            "only a user-data script holds a comment",
        ),
        ("shape: file\ndocument:\n  wrapper: daemonset\n  file: /etc/x.conf\n", "document.file"),
        ("shape: pipe\ndocument:\n  path: [a]\n", "shape"),
    ],
)
def test_a_document_that_does_not_fit_its_shape_is_one_line(
    tmp_path: Path, document: str, words: str
) -> None:
    with pytest.raises(InputError) as caught:
        _platforms(tmp_path / "node-platforms", {"example": f"accepts: any\n{document}"})
    message = str(caught.value)
    assert words in message and "example.yaml" in message and "\n" not in message, message


def test_the_shapes_the_knowledge_names_are_the_ones_registered() -> None:
    shape = typing.get_type_hints(NodePlatformSpec)["shape"]
    assert set(typing.get_args(shape)) == set(SHAPES)


def test_the_command_line_offers_each_shipped_platform(kb: KnowledgeBase) -> None:
    """The one list besides the platform's file: the --format names, in the order the help
    and the man page give them."""
    assert sorted(formats.NODE) == sorted(kb.node_platforms)
    for platform in kb.node_platforms.values():
        assert yaml.safe_load(platform.path.read_text())["shape"] in SHAPES
