"""The catalog of sources (rules/catalog/sources.yaml): every public document the knowledge
cites, once. Rules, check rules and the catalog cite a source by id, optionally with a pinpoint
(`ID: where in it and what it shows`); a load fails on an id the catalog does not hold.

A source is one document a reader can open: a Linux file at a release (cited with its address
on elixir.bootlin.com at that tag), a Linux commit (with its subject and first release), or
any other public writing (author, title, site, date, address). A `--rules-dir` may bring its
own `catalog/sources.yaml` for the documents its rules cite; an id already shipped is refused.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from sysctl_advisor.cache.specs import SpecCache
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.model_base import After, Before, Field, SpecModel, model
from sysctl_advisor.model.vocabulary import OneLine

SOURCE_ID = r"[a-z0-9]+(?:-[a-z0-9]+)*"
_ID = rf"^{SOURCE_ID}$"  # patterns compiled on first use (re's own cache)
# a citation: the source's id, then optionally ": " and where in it (one line)
_CITATION = rf"^({SOURCE_ID})(?:: (\S.*))?$"
MAX_ID = 60
MAX_CITATION = 300
_RELEASE = r"^[0-9]+\.[0-9]+(\.[0-9]+)*(-rc[0-9]+)?$"
_PATH = r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*(/[A-Za-z0-9_][A-Za-z0-9_.+-]*)*$"
_URL = r"^https?://[A-Za-z0-9.-]+(:[0-9]+)?(/[^\s\"'<>`\\]*)?$"


def _plain_path(path: str) -> str:
    if ".." in path.split("/"):
        raise ValueError("a path in the kernel tree has no '..'")
    return path


def _single_spaced(text: object) -> object:
    if isinstance(text, str) and (not text.strip() or text != " ".join(text.split())):
        raise ValueError("one line of text, no line breaks or runs of spaces")
    return text


# A subject, a title, an author: one line, words single-spaced, nothing around them.
Words = Annotated[OneLine, Before(_single_spaced)]


@model
class KernelFile(SpecModel):
    path: Annotated[str, After(_plain_path)] = Field(pattern=_PATH, max_length=200)
    release: str = Field(pattern=_RELEASE, description="the tag (no 'v') the claims were read at")


@model
class KernelCommit(SpecModel):
    id: str = Field(pattern=r"^[0-9a-f]{12,40}$")
    subject: Words = Field(max_length=200)
    release: str = Field(pattern=_RELEASE, description="the first release that has it")


@model
class SourceSpec(SpecModel):
    """One public document: `kernel`, `commit`, or a work with a `title`."""

    kernel: KernelFile | None = None
    commit: KernelCommit | None = None
    author: Words | None = Field(default=None, max_length=200)
    title: Words | None = Field(default=None, max_length=300)
    site: Words | None = Field(default=None, max_length=200, description="publisher, site, project")
    date: Words | None = Field(default=None, max_length=40)
    url: str | None = Field(default=None, pattern=_URL, max_length=400)
    note: Words | None = Field(default=None, max_length=400)

    def __post_init__(self) -> None:
        super().__post_init__()
        kinds = [k for k in (self.kernel, self.commit, self.title) if k is not None]
        if len(kinds) != 1:
            raise ValueError("a source is exactly one of: kernel, commit, or a work with a title")
        if self.title is None and (self.author or self.site or self.date or self.url):
            raise ValueError("author, site, date and url belong to a work with a title")
        if self.title is not None and not (self.site or self.url):
            raise ValueError("a work needs a site (where it was published) or a url")


@model
class SourcesSpec(SpecModel):
    sources: dict[str, SourceSpec] = Field(max_length=5000)

    def __post_init__(self) -> None:
        super().__post_init__()
        for source_id in self.sources:
            if len(source_id) > MAX_ID or not re.match(_ID, source_id):
                raise ValueError(
                    f"source id {source_id[:80]!r}: lowercase words and digits joined by '-', "
                    f"at most {MAX_ID} characters"
                )


@dataclass(frozen=True)
class Reference:
    """A source as a reader sees it: its id, the citation in words and its address."""

    id: str
    citation: str
    url: str | None


# a plan asks about the same few hundred citations, and a fleet asks again for every host
@functools.lru_cache(maxsize=4096)
def citation_parts(citation: str) -> tuple[str, str | None]:
    """(source id, pinpoint or None) of a well-formed citation; ValueError otherwise."""
    found = re.match(_CITATION, citation) if len(citation) <= MAX_CITATION else None
    if found is None:
        raise ValueError(
            f"a reference is a source id, optionally followed by ': ' and where in it "
            f"(one line, at most {MAX_CITATION} characters): {citation[:80]!r}"
        )
    return found[1], found[2]


def reference(source_id: str, spec: SourceSpec) -> Reference:
    if spec.kernel is not None:
        k = spec.kernel
        return Reference(
            source_id,
            f"Linux {k.release}, {k.path}",
            f"https://elixir.bootlin.com/linux/v{k.release}/source/{k.path}",
        )
    if spec.commit is not None:
        c = spec.commit
        return Reference(
            source_id,
            f'Linux commit {c.id[:12]} ("{c.subject}"), in {c.release}',
            f"https://git.kernel.org/torvalds/c/{c.id}",
        )
    words = [spec.author, f'"{spec.title}"', spec.site, spec.date]
    return Reference(source_id, ", ".join(w for w in words if w), spec.url)


class Sources:
    """The shipped catalog of sources and those a --rules-dir brings."""

    FILE = "sources.yaml"

    def __init__(self, files: list[Path], specs: SpecCache) -> None:
        self.entries: dict[str, SourceSpec] = {}
        self.references: dict[str, Reference] = {}
        for path in files:
            loaded = specs.load(path, SourcesSpec, "sources")
            for source_id, spec in loaded.sources.items():
                if source_id in self.entries:
                    raise InputError(
                        f"source {source_id!r} is defined twice", path=path, field="sources"
                    )
                self.entries[source_id] = spec
                self.references[source_id] = reference(source_id, spec)

    def check(self, citations: list[str], path: Path | None, field: str) -> None:
        """Every citation well formed and naming a source the catalog holds."""
        for i, citation in enumerate(citations):
            try:
                source_id, _ = citation_parts(citation)
            except ValueError as exc:
                raise InputError(str(exc), path=path, field=f"{field}[{i}]") from None
            if source_id not in self.entries:
                raise InputError(
                    f"unknown source {source_id!r} (sources are listed in "
                    f"rules/catalog/{self.FILE})",
                    path=path,
                    field=f"{field}[{i}]",
                )

    def describe(self, citation: str, escape: Callable[[str], str] = str) -> str:
        """A citation in words: the source and where in it (through `escape`, for the format
        it goes into), then its address (an http(s) URL with no space, quote or bracket)."""
        source_id, at = citation_parts(citation)
        ref = self.references[source_id]
        where = f": {at}" if at else ""
        return escape(f"{ref.citation}{where}") + (f" <{ref.url}>" if ref.url else "")
