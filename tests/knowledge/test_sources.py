"""The sources catalog (rules/catalog/sources.yaml): every reference the knowledge makes names a
public source a reader can open, cited by id; a load fails on an unknown id, and nothing cites
a file of this project's tooling instead of a public source."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.knowledge.sources import citation_parts
from tests.conftest import EXAMPLES, invoke

ROOT = Path(__file__).resolve().parents[2]

# what a reference to this project's own tooling looks like: the source documents it began
# from, by file name, the internal notes on kernel facts, the tool citing itself, a path of
# this repository
TOOLING = re.compile(
    r"seed:|\b\d{3}_[0-9a-f]{16}\.txt|kernel-facts|§|sysctl-advisor:|\.\./shared/|"
    r"\brules/catalog/|\btests/",
    re.IGNORECASE,
)


def _references(value: Any) -> list[str]:
    """Every item of every `references` list in a YAML document."""
    if isinstance(value, dict):
        found = []
        for key, item in value.items():
            if key == "references" and isinstance(item, list):
                found += [str(x) for x in item]
            else:
                found += _references(item)
        return found
    if isinstance(value, list):
        return [r for item in value for r in _references(item)]
    return []


KNOWLEDGE_FILES = sorted(
    p
    for p in [*(ROOT / "rules").rglob("*.yaml"), *(ROOT / "profiles").glob("*.yaml")]
    if p.name != "sources.yaml"
)


def test_every_reference_of_every_knowledge_file_cites_a_catalogued_source(
    kb: KnowledgeBase,
) -> None:
    """Walks the YAML itself (not only what the loaders keep): each reference is `ID` or
    `ID: where`, and the ID is in the catalog."""
    seen = 0
    for path in KNOWLEDGE_FILES:
        for citation in _references(yaml.safe_load(path.read_text())):
            source_id, _ = citation_parts(citation)
            assert source_id in kb.sources.entries, f"{path.name}: {citation!r}"
            assert not TOOLING.search(citation), f"{path.name}: {citation!r}"
            seen += 1
    assert seen > 300


def test_every_source_is_public_and_none_names_the_projects_tooling(kb: KnowledgeBase) -> None:
    for source_id, spec in kb.sources.entries.items():
        ref = kb.sources.references[source_id]
        assert not TOOLING.search(ref.citation + (spec.note or "")), source_id
        if spec.title is not None:  # a work: who or where, and a title; an address when known
            assert spec.site or spec.url, source_id
        assert ref.url is None or ref.url.startswith(("https://", "http://")), source_id


def test_every_source_is_cited(kb: KnowledgeBase) -> None:
    cited = {
        citation_parts(c)[0]
        for path in KNOWLEDGE_FILES
        for c in _references(yaml.safe_load(path.read_text()))
    }
    assert set(kb.sources.entries) - cited == set()


def test_each_document_has_one_entry(kb: KnowledgeBase) -> None:
    """Two ids for one document would number it twice in a file's references."""
    seen: dict[str, str] = {}
    for source_id, ref in kb.sources.references.items():
        if ref.url is not None:
            assert seen.setdefault(ref.url, source_id) == source_id, (seen[ref.url], source_id)


def test_the_seed_documents_are_cited_as_the_public_writing_they_are(kb: KnowledgeBase) -> None:
    citations = " | ".join(r.citation for r in kb.sources.references.values())
    for words in (
        "Tuning Systems for TCP/IP Performance on High Latency Networks",
        "Lessons learned tuning TCP and Nginx in EC2",
        "The 'Out of socket memory' error",
        "聂永",
    ):
        assert words in citations


def test_a_kernel_source_is_cited_with_its_release_and_an_address_at_that_release(
    kb: KnowledgeBase,
) -> None:
    kernel = [(i, s) for i, s in kb.sources.entries.items() if s.kernel is not None]
    assert len(kernel) > 30
    for source_id, spec in kernel:
        assert spec.kernel is not None
        ref = kb.sources.references[source_id]
        assert ref.url == (
            f"https://elixir.bootlin.com/linux/v{spec.kernel.release}/source/{spec.kernel.path}"
        )
        assert spec.kernel.release in ref.citation and spec.kernel.path in ref.citation


def _rules_dir(tmp_path: Path, references: str, sources: str | None = None) -> Path:
    rules = tmp_path / "more-rules"
    (rules / "extra").mkdir(parents=True)
    (rules / "extra" / "quiet.yaml").write_text(
        "id: extra.quiet\ntitle: A rule that never fires\ndescription: none\n"
        "when: 'false'\nset: {net.core.somaxconn: '4096'}\nrationale: never\n"
        f"references: {references}\n"
    )
    if sources is not None:
        (rules / "catalog").mkdir()
        (rules / "catalog" / "sources.yaml").write_text(sources)
    return rules


def _recommend(rules: Path) -> Any:
    return invoke(
        "recommend",
        "--facts",
        str(EXAMPLES / "dtn-10g.yaml"),
        "-p",
        "base",
        "--rules-dir",
        str(rules),
    )


def test_an_unknown_source_id_fails_the_load_in_one_line(tmp_path: Path) -> None:
    out = _recommend(_rules_dir(tmp_path, "[no-such-source]"))
    assert out.exit_code == 2
    assert "unknown source 'no-such-source'" in out.stderr and "quiet.yaml" in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_a_reference_in_the_old_free_text_form_is_refused(tmp_path: Path) -> None:
    out = _recommend(_rules_dir(tmp_path, '["kernel: net/ipv4/tcp.c tcp_init()"]'))
    assert out.exit_code == 2 and "unknown source 'kernel'" in out.stderr


def test_a_rules_dir_brings_its_own_sources(tmp_path: Path) -> None:
    sources = (
        "sources:\n  team-runbook-2026:\n    title: Our tuning runbook\n"
        "    site: example.org\n    url: https://example.org/runbook\n"
    )
    out = _recommend(_rules_dir(tmp_path, "['team-runbook-2026: section 2']", sources))
    assert out.exit_code == 0, out.stderr


@pytest.mark.parametrize(
    ("sources", "words"),
    [
        # a shipped id may not be redefined by a colleague's directory
        (
            "sources:\n  {shipped}:\n    title: Not the real one\n    site: example.org\n",
            "defined twice",
        ),
        # an address is http(s) with no quote, space or angle bracket a renderer would carry
        (
            "sources:\n  hostile-a:\n    title: T\n    url: 'javascript:alert(1)'\n",
            "hostile-a.url:",
        ),
        (
            "sources:\n  hostile-b:\n    title: T\n    url: 'https://x.org/a\"><script>'\n",
            "hostile-b.url:",
        ),
        # text is one plain line: a newline cannot carry a setting into a rendered file
        (
            'sources:\n  hostile-c:\n    title: "x\\nnet.core.somaxconn = 1"\n    site: s\n',
            "title: one line",
        ),
        (
            "sources:\n  ../../etc:\n    title: T\n    site: s\n",
            "source id",
        ),
        (
            "sources:\n  linux-x:\n    kernel: {path: ../../etc/passwd, release: '6.18'}\n",
            "path",
        ),
    ],
)
def test_hostile_sources_are_refused_in_one_line(
    tmp_path: Path, kb: KnowledgeBase, sources: str, words: str
) -> None:
    shipped = next(iter(kb.sources.entries))
    out = _recommend(_rules_dir(tmp_path, f"[{shipped}]", sources.replace("{shipped}", shipped)))
    assert out.exit_code == 2, out.stdout
    assert words in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
