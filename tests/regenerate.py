"""Every generated file of the repository, each with the one function that makes it.

    python -m tests.regenerate           # rewrite every generated file
    python -m tests.regenerate --check   # change nothing; exit 1 naming each stale file

The golden files come first (their tests make them: `tests/golden_files.py`), then what is made
from the knowledge, the command-line table and the models, then what is cut from the golden
files (the README's worked example). The tests that keep each committed file current call
`stale(GROUP)`, the comparison `--check` makes. It lives with the tests, above every stage of
the package: the man page comes from the command line (`cli.man_page`), the golden files from
the tests themselves.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.outputs import advice_rules_reference, formats
from tests.conftest import ROOT, TESTS
from tests.golden_files import GOLDEN, REGENERATE, REPORT, UPDATE

README = ROOT / "README.md"
DOCS = ROOT / "docs"
ADVICE = DOCS / "advice"
WORKED_EXAMPLE = GOLDEN / "dcache-32bit.gridftp.conf"

Transform = Callable[[str | None], str]  # the file's committed text (None: missing) to its due text


@functools.cache
def _kb() -> KnowledgeBase:
    return KnowledgeBase.load()


def _whole(make: Callable[[], str]) -> Transform:
    return lambda _committed: make()


# ------------------------------------------------------------------ made from the knowledge


def _man_page() -> str:
    from sysctl_advisor.cli import man_page

    return man_page()


def _check_rules() -> str:
    from sysctl_advisor.outputs.check_rules_reference import render_reference

    return render_reference(_kb().check_rules, _kb().sources)


def _writers() -> str:
    from sysctl_advisor.outputs.writers_reference import render_writers

    return render_writers(_kb().writers, _kb().sources)


def _advice() -> dict[Path, Transform]:
    pages = advice_rules_reference.render_pages(_kb(), TESTS / "cases")
    return {ADVICE / name: _whole(functools.partial(str, text)) for name, text in pages.items()}


def _schemas() -> dict[Path, Transform]:
    from sysctl_advisor.outputs.json_schemas import SCHEMAS, schema_path, schema_text

    return {schema_path(name): _whole(functools.partial(schema_text, name)) for name in SCHEMAS}


# ------------------------------------------------------- lists in prose, from the knowledge


@dataclass(frozen=True)
class Span:
    """The text between `before` and `after` on the one line that starts with `line`."""

    line: str
    before: str
    after: str
    make: Callable[[], str]

    def __call__(self, committed: str | None) -> str:
        text = committed or ""
        lines = text.split("\n")
        found = [i for i, line in enumerate(lines) if line.startswith(self.line)]
        if len(found) != 1:
            raise LookupError(f"{len(found)} lines start with {self.line!r}, not one")
        line = lines[found[0]]
        start = line.index(self.before) + len(self.before)
        end = line.index(self.after, start)
        lines[found[0]] = line[:start] + self.make() + line[end:]
        return "\n".join(lines)


def _profiles() -> str:
    return ", ".join(f"`{name}`" for name in sorted(_kb().profiles))


def _choices(names: Iterable[str]) -> Callable[[], str]:
    names = tuple(names)
    return lambda: "\\|".join(names)


_RECOMMEND = "| `recommend --profile NAME"
_PLAN_FORMATS = [name for name in formats.RECOMMEND if name not in formats.NODE]
_LISTS: dict[Path, list[Span]] = {
    README: [
        Span("* [Profiles](docs/profiles.md)", ": ", ";", _profiles),
        Span(_RECOMMEND, "in `--format ", "`, or", _choices(_PLAN_FORMATS)),
        Span(_RECOMMEND, "node platform's (`", "`)", _choices(formats.NODE)),
    ],
    DOCS / "commands.md": [
        Span(_RECOMMEND, "[--format ", "]", _choices(formats.RECOMMEND)),
        Span("| `diff --profile", "[--format ", "]", _choices(formats.DIFF)),
        Span("| `check FILE", "[--format ", "]", _choices(formats.CHECK)),
        Span("| `facts [", "[--format ", "]", _choices(formats.FACTS)),
    ],
}


def _lists() -> dict[Path, Transform]:
    def each(spans: list[Span]) -> Transform:
        return lambda committed: functools.reduce(lambda text, span: span(text), spans, committed)

    return {path: each(spans) for path, spans in _LISTS.items()}


# ---------------------------------------------------------- cut from the golden files


def worked_example(golden: str) -> str:
    """The README's excerpt of the worked example's conf file: its head, the tcp_rmem block
    and the first two references, "# ..." where lines are left out."""
    lines = golden.split("\n")
    block = next(i for i, line in enumerate(lines) if line.startswith("# net.ipv4.tcp_rmem "))
    setting = next(i for i in range(block, len(lines)) if lines[i].startswith("net.ipv4."))
    references = lines.index("# References:")
    third = next(i for i in range(references, len(lines)) if lines[i].startswith("#   [3]"))
    return "\n".join(
        [
            *lines[: lines.index("#")],
            "# ...",
            *lines[block : setting + 1],
            "# ...",
            *lines[references:third],
            "# ...",
        ]
    )


def _readme_example(committed: str | None) -> str:
    text = committed or ""
    start = text.index("```\n# sysctl.conf for ") + 4
    end = text.index("\n```\n", start)
    return text[:start] + worked_example(WORKED_EXAMPLE.read_text()) + text[end:]


# ---------------------------------------------------------------------- the registry

GROUPS: dict[str, Callable[[], dict[Path, Transform]]] = {
    "man page": lambda: {ROOT / "sysctl_advisor" / "man" / "sysctl-advisor.1": _whole(_man_page)},
    "check rules": lambda: {DOCS / "rules.md": _whole(_check_rules)},
    "writers": lambda: {DOCS / "writers.md": _whole(_writers)},
    "advice rules": _advice,
    "json schemas": _schemas,
    "lists": _lists,
    "worked example": lambda: {README: _readme_example},  # after the golden files
}


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def due(group: str) -> dict[Path, str]:
    """What each file of the group should hold."""
    return {path: make(_read(path)) for path, make in GROUPS[group]().items()}


def _extra(group: str, texts: dict[Path, str]) -> list[Path]:
    """Files in a generated directory that no rule makes any more (advice pages)."""
    if group != "advice rules":
        return []
    return sorted(set(ADVICE.glob("*.md")) - set(texts))


_NOTHING = "made by nothing"


def stale(group: str) -> list[str]:
    """Each file of the group that is not what its function makes, with why, as a line."""
    texts = due(group)
    out = []
    for path, text in texts.items():
        committed = _read(path)
        if committed != text:
            out.append(f"{_shown(path)}: {'missing' if committed is None else 'stale'}")
    out += [f"{_shown(path)}: {_NOTHING}" for path in _extra(group, texts)]
    return out


def write(group: str) -> list[str]:
    """Rewrite the group's stale files; the lines `stale` gave."""
    found = stale(group)
    texts = due(group)
    found = [line for line in found if not line.endswith(_NOTHING)]
    if group == "advice rules":  # atomic, never through a link; removes the rules' old pages
        pages = {path.name: text for path, text in texts.items()}
        advice_rules_reference.write_pages(ADVICE, pages)
        return found
    for path, text in texts.items():
        if _read(path) != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    return found


# ---------------------------------------------------------------------- the golden files


def golden_tests() -> list[Path]:
    """The test files that compare a golden file (they call assert_golden)."""
    calls = re.compile(r"^\s+assert_golden\(", re.MULTILINE)  # a statement of a test
    return sorted(
        p for p in TESTS.rglob("test_*.py") if calls.search(p.read_text(encoding="utf-8"))
    )


def goldens(check: bool) -> list[str]:
    """Run the golden tests: rewriting the files, or (check) listing the stale ones."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "stale"
        report.touch()
        env = {k: v for k, v in os.environ.items() if k not in (UPDATE, REPORT)}
        env[REPORT] = str(report)
        if not check:
            env[UPDATE] = "1"
        files = [str(path.relative_to(ROOT)) for path in golden_tests()]
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "golden"]
        result = subprocess.run(
            [*command, *files], cwd=ROOT, env=env, capture_output=True, text=True, check=False
        )
        names = sorted(set(report.read_text(encoding="utf-8").split()))
    out = [f"{_shown(Path(name))}: stale" for name in names]
    if result.returncode not in (0, 1) or (result.returncode == 1 and not names):
        out.append(f"golden tests failed otherwise:\n{result.stdout[-4000:]}{result.stderr}")
    return out


def main(argv: list[str]) -> int:
    check = "--check" in argv
    if set(argv) - {"--check"}:
        sys.stderr.write(f"usage: {REGENERATE} [--check]\n")
        return 2
    found = goldens(check)
    for group in GROUPS:
        found += stale(group) if check else write(group)
    if check:
        for line in found:
            print(line, file=sys.stderr)
        return 1 if found else 0
    for line in found:
        print(f"rewrote {line.split(':', 1)[0]}", file=sys.stderr)
    left = [line for group in GROUPS for line in stale(group)]  # what writing cannot mend
    for line in left:
        print(f"{line}: remove it by hand", file=sys.stderr)
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
