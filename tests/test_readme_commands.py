"""Every `sysctl-advisor ...` command in the code blocks of README.md and docs/*.md runs, through
the installed console script, against the repository's examples and fixtures, and exits as the
text says: 0, or the code a trailing comment names (`# exit 1: findings`).

Each command runs in a scratch directory holding copies of examples/ and tests/fixtures/, so
`-o FILE` and `> FILE` write there; a command that reads a file an earlier command of the same
page writes (`facts > host.yaml`, then `recommend --facts host.yaml`) runs after it. A pipe from
a known producer (`sysctl -a | sysctl-advisor check -`) gets the producer's output from a
fixture. Commands that need root, the network or Ansible are skipped by the table SKIPS, with
the reason; a documented command or option the command line does not declare (yet) fails with
a message that says so, before anything runs.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from sysctl_advisor import cli_options
from tests.conftest import HANG_SECONDS, ROOT, TESTS

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PROGRAM = "sysctl-advisor"

# A documented command matching the pattern is not run, for the reason given.
SKIPS: dict[str, str] = {
    r"^sudo ": "needs root",
    r"\bcalibrate\b": "needs root and a private network namespace",
    r"--prometheus\b": "needs a Prometheus server (the network)",
    r"--root /mnt/copy\b": "a placeholder for a copied tree (tests/sources cover facts --root)",
    r"--ansible-facts facts\b": "needs facts gathered by Ansible from an inventory",
    r"--watch\b": "watches this host's sysctl writes for the window it names (root; "
    "tests/test_provenance_acceptance.py runs it over throwaway cgroups)",
    r"--(?:un)?install\b": "installs on this host (root, bpffs, /etc/systemd/system); "
    "tests/sources/test_sysctl_record.py runs it in a private bpffs and unit directory",
}
# What a producer in a documented pipe writes, from the repository's fixtures.
PRODUCERS: dict[str, Path] = {
    "sysctl -a": TESTS / "fixtures" / "dumps" / "sysctl-a-6.18.txt",
}
GLOBAL_OPTIONS = {"-q", "--quiet", "-V", "--version", "-h", "--help"}
WRITING_OPTIONS = {"-o", "--output", "--write", "--out", "--write-baseline"}


@dataclass
class Documented:
    """One documented command line: where it is, what it runs, and how it should end."""

    where: str  # file:line
    text: str  # as written (one line, continuations joined)
    argv: list[str]  # after the program name
    stdin: str | None = None  # the producer of a pipe into it
    stdout: str | None = None  # `> FILE`
    exit_code: int = 0
    writes: set[str] = field(default_factory=set)
    needs: list[Documented] = field(default_factory=list)  # earlier commands writing its files


def _code_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, text) of the lines in code blocks: fenced, or indented four spaces;
    continuation lines (ending in `\\`) joined."""
    out: list[tuple[int, str]] = []
    fence: str | None = None
    pending: tuple[int, str] | None = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        stripped = line.strip()
        opener = re.match(r"^\s*(`{3,}|~{3,})", line)
        if fence is None and opener:
            fence = opener.group(1)
            continue
        if fence is not None and stripped.startswith(fence):
            fence = None
            continue
        if fence is None and not line.startswith(("    ", "\t")):
            continue
        if pending is not None:
            number, stripped = pending[0], pending[1] + " " + stripped
            pending = None
        if stripped.endswith("\\"):
            pending = (number, stripped[:-1].rstrip())
            continue
        out.append((number, stripped))
    return out


def _comment(line: str) -> tuple[str, str]:
    """(command, comment): a `#` that starts a word outside quotes begins the comment."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1 :].strip()
    return line, ""


def _commands(path: Path, root: Path = ROOT) -> list[Documented]:
    found: list[Documented] = []
    for number, line in _code_lines(path):
        text, comment = _comment(line.removeprefix("$ "))
        if PROGRAM not in text:
            continue
        lexer = shlex.shlex(text, posix=True, punctuation_chars="|&;<>")
        lexer.whitespace_split = True
        tokens = list(lexer)
        for segment in _split(tokens, ("&&", "||", ";")):
            stages = _split(segment, ("|",))
            last = stages[-1]
            start = 1 if last[:1] == ["sudo"] else 0
            if last[start : start + 1] != [PROGRAM]:
                continue
            argv, stdout = last[start + 1 :], None
            if ">" in argv:
                at = argv.index(">")
                argv, stdout = argv[:at], argv[at + 1]
            expected = re.search(r"\bexits? (\d)\b", comment)
            command = Documented(
                where=f"{path.relative_to(root)}:{number}",
                text=" ".join(segment),
                argv=argv,
                stdin=" ".join(" ".join(s) for s in stages[:-1]) or None,
                stdout=stdout,
                exit_code=int(expected.group(1)) if expected else 0,
            )
            command.writes = {stdout} if stdout else set()
            command.writes |= {argv[i + 1] for i, a in enumerate(argv[:-1]) if a in WRITING_OPTIONS}
            command.needs = [c for c in found if c.writes & set(argv)]
            found.append(command)
    return found


def _split(tokens: list[str], separators: tuple[str, ...]) -> list[list[str]]:
    parts: list[list[str]] = [[]]
    for token in tokens:
        if token in separators:
            parts.append([])
        else:
            parts[-1].append(token)
    return parts


COMMANDS = [command for path in DOCUMENTS for command in _commands(path)]


def _skip_reason(command: Documented) -> str | None:
    return next((why for pattern, why in SKIPS.items() if re.search(pattern, command.text)), None)


def undeclared(argv: list[str]) -> str | None:
    """Why the command line does not declare what the docs show, or None when it does."""
    words = list(argv)
    while words and words[0] in GLOBAL_OPTIONS:
        words.pop(0)
    if not words:
        return None
    name, rest = words[0], words[1:]
    command = cli_options.command(name)
    if command is None:
        known = ", ".join(c.name for c in cli_options.COMMANDS)
        return f"`{name}` is not a command of sysctl-advisor (yet); its commands: {known}"
    declared = {n for option in command.options.values() for n in option.names} | GLOBAL_OPTIONS
    for word in rest:
        if word == "--":
            break
        option = word.split("=", 1)[0]
        if option.startswith("-") and option != "-" and option not in declared:
            return f"`{option}` is not an option of `{name}` (yet)"
    return None


def _program() -> list[str]:
    script = Path(sys.executable).parent / PROGRAM
    return [str(script)] if script.exists() else [sys.executable, "-m", "sysctl_advisor"]


def _run(command: Documented, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    for earlier in command.needs:
        _run(earlier, tmp_path)
    stdin = None
    if command.stdin is not None:
        assert command.stdin in PRODUCERS, (
            f"{command.where}: no fixture stands for `{command.stdin}` (add one to PRODUCERS)"
        )
        stdin = PRODUCERS[command.stdin].read_text()
    result = subprocess.run(
        [*_program(), *command.argv],
        cwd=tmp_path,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
        env={**os.environ, "NO_COLOR": "1"},
    )
    if command.stdout is not None:
        (tmp_path / command.stdout).write_text(result.stdout)
    return result


@pytest.mark.parametrize("command", COMMANDS, ids=[c.where for c in COMMANDS])
def test_documented_command_runs(command: Documented, tmp_path: Path) -> None:
    reason = _skip_reason(command)
    if reason is not None:
        pytest.skip(f"{command.text}: {reason}")
    missing = undeclared(command.argv)
    assert missing is None, f"{command.where}: `{command.text}`: {missing}"
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    shutil.copytree(TESTS / "fixtures", tmp_path / "tests" / "fixtures", symlinks=True)
    result = _run(command, tmp_path)
    last = (result.stderr.strip().splitlines() or [""])[-1]
    assert result.returncode == command.exit_code, (
        f"{command.where}: `{command.text}` exited {result.returncode}, the docs imply "
        f"{command.exit_code}: {last}"
    )
    assert "Traceback" not in result.stderr, result.stderr


def test_the_docs_show_the_main_commands() -> None:
    """The README's own lines are among those run: the main job, a diff that finds drift."""
    readme = [c for c in COMMANDS if c.where.startswith("README.md:")]
    texts = [c.text for c in readme]
    main_job = f"{PROGRAM} recommend --facts examples/dcache-32bit.yaml --profile gridftp"
    assert main_job in texts
    assert any(c.exit_code == 1 for c in readme)
    assert len(COMMANDS) >= 20


def test_every_skip_is_for_a_documented_command() -> None:
    """A skip that no longer matches any documented command is removed, not kept."""
    for pattern in SKIPS:
        assert any(re.search(pattern, c.text) for c in COMMANDS), pattern


def test_commands_are_read_as_a_shell_would(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Prose with sysctl-advisor recommend in it is not a command.\n\n"
        "    sysctl-advisor facts > host.yaml   # this machine\n"
        "    sysctl-advisor recommend --facts host.yaml \\\n"
        "        --profile base  # exit 1: for the test\n\n"
        "```\n$ sysctl -a | sysctl-advisor check - --fail-on warning\n```\n\n"
        "```yaml\nentry: sysctl-advisor check\n```\n"
    )
    found = {c.text: c for c in _commands(page, root=tmp_path)}
    assert list(found) == [
        "sysctl-advisor facts > host.yaml",
        "sysctl-advisor recommend --facts host.yaml --profile base",
        "sysctl -a | sysctl-advisor check - --fail-on warning",
    ]
    facts, recommend, check = found.values()
    assert facts.stdout == "host.yaml" and facts.argv == ["facts"]
    assert recommend.needs == [facts] and recommend.exit_code == 1
    assert check.stdin == "sysctl -a" and check.argv == ["check", "-", "--fail-on", "warning"]


def test_an_undeclared_command_or_option_is_named() -> None:
    assert undeclared(["-q", "recommend", "--profile", "base", "-o", "-"]) is None
    assert "`frobnicate` is not a command" in str(undeclared(["frobnicate"]))
    assert "`--no-such` is not an option of `check`" in str(
        undeclared(["check", "x.conf", "--no-such", "1"])
    )
