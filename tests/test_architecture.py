"""The package's layout is its data flow, enforced: every import (module-level, lazy, or for type
checking only) runs down the stages, and no module imports itself back through others.

    commands -> outputs -> engine -> knowledge -> model
    commands -> sources -> model
    knowledge, outputs, commands -> cache -> model

`cli` (the command-line table, typer and the fast path) sits on top and calls only `commands`;
for its closed choices it reads the outputs' format registry and the severities, nothing else
of the stages. `sysctl_advisor/__init__.py` (the version) is importable from anywhere. The
engine does no I/O: no open(), no os, subprocess or sockets.
See docs/architecture.md."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGE = ROOT / "sysctl_advisor"
STAGES = ("model", "cache", "sources", "knowledge", "engine", "outputs", "commands")
# What each stage may import, besides itself and the package root. The caches are a leaf beside
# the model: what may keep something between runs imports them, they import only the model.
ALLOWED = {
    "model": set(),
    "cache": {"model"},
    "sources": {"model"},
    "knowledge": {"cache", "model"},
    "engine": {"knowledge", "model"},
    "outputs": {"engine", "knowledge", "cache", "model"},
    "commands": {"outputs", "engine", "knowledge", "sources", "cache", "model"},
    "cli": {"commands", "cli"},
}
# What the command-line table reads besides `commands`: names of formats and severities.
CLI_CHOICES = {"sysctl_advisor.outputs.formats", "sysctl_advisor.model.severity"}
ENTRY_POINTS = {"__main__", "entry", "cli", "cli_options", "fast_path"}
IO_MODULES = {"os", "subprocess", "shutil", "socket", "tempfile", "multiprocessing"}


def module_name(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def stage_of(module: str) -> str | None:
    """The stage a module belongs to; None for the package root (only the version lives there)."""
    parts = module.split(".")
    if len(parts) == 1:
        return None
    if parts[1] in STAGES:
        return parts[1]
    if parts[1] in ENTRY_POINTS:
        return "cli"
    raise AssertionError(f"{module} sits outside every stage: put it in one (docs/architecture.md)")


def imports(path: Path, package: Path) -> set[str]:
    """Every advisor module a file imports, wherever the import statement is."""
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == package.name}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] != package.name:
                continue
            for alias in node.names:  # `from sysctl_advisor.x import y` may name the module x.y
                candidate = f"{node.module}.{alias.name}"
                is_module = (package.parent / candidate.replace(".", "/")).with_suffix(".py")
                found.add(candidate if is_module.exists() else node.module)
    return found


def graph(package: Path) -> dict[str, set[str]]:
    return {
        module_name(path, package): imports(path, package) for path in sorted(package.rglob("*.py"))
    }


def flow_violations(edges: dict[str, set[str]]) -> list[str]:
    found = []
    for module, targets in sorted(edges.items()):
        stage = stage_of(module)
        for target in sorted(targets):
            to = stage_of(target)
            if to is None or stage is None or to == stage:
                continue
            if stage == "cli" and target in CLI_CHOICES:
                continue
            if to not in ALLOWED[stage]:
                found.append(f"{module} ({stage}) imports {target} ({to}): against the flow")
    return found


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), and self-imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in edges:
                continue
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in edges.get(node, ()):
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def engine_io(package: Path) -> list[str]:
    found = []
    for path in sorted((package / "engine").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                names += [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
                found += [
                    f"{path.name} imports {n}" for n in names if n.split(".")[0] in IO_MODULES
                ]
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "open":
                found.append(f"{path.name}:{node.lineno} calls open()")
    return found


@pytest.fixture(scope="module")
def edges() -> dict[str, set[str]]:
    """The package's import graph, parsed once for the module (read-only: no test edits it)."""
    return graph(PACKAGE)


def test_imports_run_down_the_stages(edges: dict[str, set[str]]) -> None:
    assert flow_violations(edges) == []


def test_no_import_cycles(edges: dict[str, set[str]]) -> None:
    assert cycles(edges) == []


def test_the_engine_does_no_io() -> None:
    assert engine_io(PACKAGE) == []


def test_every_module_sits_in_a_stage(edges: dict[str, set[str]]) -> None:
    for module in edges:
        stage_of(module)  # raises for a module on the package's top floor


def test_the_cli_holds_only_options(edges: dict[str, set[str]]) -> None:
    """cli.py: typer built from the table, calling into commands, under 200 lines."""
    text = (PACKAGE / "cli.py").read_text(encoding="utf-8")
    assert len(text.splitlines()) < 200
    outside = {t for t in imports(PACKAGE / "cli.py", PACKAGE) if stage_of(t) not in ("cli", None)}
    assert outside <= {t for t in edges if t.startswith("sysctl_advisor.commands")}


# A module found by a name computed at run time is an arrow no reader and no check here sees.
# The one call left: the cache's fingerprint looks up modules its callers have already imported
# (their own __name__), to hash their source.
COMPUTED_IMPORTS = {"cache/files.py"}


def computed_imports(package: Path) -> list[str]:
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
                if name in ("import_module", "__import__"):
                    found.append(f"{path.relative_to(package).as_posix()}:{node.lineno}")
    return [f for f in found if f.split(":")[0] not in COMPUTED_IMPORTS]


def test_no_module_is_imported_by_a_computed_name() -> None:
    """Every import is a statement the graph above reads (lazy ones in small functions)."""
    assert computed_imports(PACKAGE) == []


def test_each_command_is_an_arrow_from_the_command_line(edges: dict[str, set[str]]) -> None:
    """cli_options imports each command's module itself (lazily, in the command's loader), so
    the graph holds the arrow from the command line to every command it runs."""
    from sysctl_advisor.cli_options import COMMANDS

    modules = {command.function().__module__ for command in COMMANDS}
    assert modules <= edges["sysctl_advisor.cli_options"]
    assert {m for m in edges if m.startswith("sysctl_advisor.commands.")} - modules == {
        "sysctl_advisor.commands.check_files",  # check's report and baseline files
        "sysctl_advisor.commands.check_fix",  # check --fix's loop
        "sysctl_advisor.commands.check_policy",  # what check's settings mean to its engine
        "sysctl_advisor.commands.check_settings",  # check's settings
        "sysctl_advisor.commands.common",  # what every command shares
        "sysctl_advisor.commands.completion",  # shell completion's candidates
        "sysctl_advisor.commands.man_page",  # the man page, run as a module
    }


@pytest.mark.parametrize(
    ("file", "line", "expect"),
    [
        # a cycle: the model reaching back into a source that imports it
        ("model/units.py", "from sysctl_advisor.sources import proc_readers", "cycle"),
        # against the flow without a cycle: knowledge reading the host
        ("knowledge/values.py", "from sysctl_advisor.sources import local_host", "flow"),
        # a lazy import counts as much as one at the top
        ("engine/diff.py", "def f():\n    from sysctl_advisor.outputs import diff_report", "flow"),
        ("engine/check/judge.py", "import subprocess", "io"),
    ],
)
def test_the_checks_catch_what_they_are_for(
    tmp_path: Path, file: str, line: str, expect: str, edges: dict[str, set[str]]
) -> None:
    """The checks fail when a cycle or a backward import is introduced on purpose."""
    package = tmp_path / "sysctl_advisor"
    shutil.copytree(PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__", "schemas"))
    target = package / file
    target.write_text(target.read_text(encoding="utf-8") + "\n" + line + "\n", encoding="utf-8")
    edited = graph(package)
    found = {
        "cycle": cycles(edited),
        "flow": flow_violations(edited),
        "io": engine_io(package),
    }
    assert found[expect], found
    assert cycles(edges) == [] and flow_violations(edges) == []
