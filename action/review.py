"""The GitHub Action's work (action.yml runs it): review the sysctl files a change touches.

    review.py review    find the changed sysctl files, run `sysctl-advisor check` on them (whole
                        sysctl.d directories and trees, so an override in an unchanged file is
                        seen), write SARIF, annotations, the job summary and the step outputs;
                        with facts and a profile, write the `diff` report for a comment
    review.py comment   post that report on the pull request, replacing the previous one

The standard library and the advisor itself (installed from the action's own directory); it
runs nothing from the repository under review. Everything from the event and the repository
is data: file names go to the advisor as arguments (never through a shell), into outputs
through a delimiter no file name can hold, and into Markdown through the advisor's escaping.

Inputs arrive as environment variables (INPUT_PATHS, INPUT_FILES, INPUT_FACTS, INPUT_PROFILE,
INPUT_SET, INPUT_SELECT, INPUT_IGNORE, INPUT_FAIL_ON, INPUT_KERNEL, INPUT_CONFIG,
INPUT_BASELINE, INPUT_RULES_DIR, INPUT_CURRENT, INPUT_COMMENT, INPUT_TOKEN), never
interpolated into a script.
A pull request is reviewed with the settings of its base commit (base_settings.py: the
configuration, the baseline and facts files in force, the rules directory, read from git into
a private directory, never from the work tree the change controls), and the summary says so;
a change that edits them gets a warning. Other events (a push) have no base: `check` finds the
work tree's own, and a change that edits them is said in the summary. Exit status: 0 done
(findings are reported in the outputs, and a later step fails the job on them), 2 bad input.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

# The advisor's own pieces (installed in the same environment, the action's venv): the
# directories systemd-sysctl reads, and the escaping its outputs use.
from sysctl_advisor.model.check_config import CONFIG_FILE, PYPROJECT
from sysctl_advisor.model.text_escape import one_line
from sysctl_advisor.outputs.check_report import escape_workflow_data
from sysctl_advisor.outputs.markdown_text import md_text
from sysctl_advisor.sources.sysctl_files import SYSCTL_D_DIRS, TEMPLATE_SUFFIX
from sysctl_advisor.sources.tree_paths import inside

# The action's own modules, beside this file (python -I leaves its directory off the path).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from base_settings import BaseCommitError, Used, from_base, search_places

MAX_EVENT_BYTES = 16 * 1024 * 1024
MAX_TARGETS = 1000
MAX_ARGUMENT_BYTES = 64 * 1024  # the advisor's command line stays far below ARG_MAX
# sysctl files, and the Jinja templates of them an Ansible role holds (checked as templates)
DEFAULT_PATHS = (
    "**/sysctl.d/*.conf",
    "**/sysctl.conf",
    "**/sysctl.d/*.conf.j2",
    "**/*sysctl*.conf.j2",
)
FAIL_ON = ("error", "warning", "info", "never")
MARKER = "<!-- sysctl-advisor diff -->"
COMMENT_AUTHOR = "github-actions[bot]"


class ReviewError(Exception):
    """Bad input: one line on stderr as a workflow error, exit 2."""


# --- the runner's files ----------------------------------------------------------------------


def set_output(name: str, value: str) -> None:
    """One step output, in the runner's multi-line form with a delimiter drawn at random, so no
    value (a file name from the pull request) can end it early and write another output."""
    path = os.environ.get("GITHUB_OUTPUT")
    if not path:
        return
    delimiter = f"ghadelimiter_{secrets.token_hex(16)}"
    while delimiter in value:  # pragma: no cover - 128 random bits
        delimiter = f"ghadelimiter_{secrets.token_hex(16)}"
    with open(path, "a", encoding="utf-8", errors="backslashreplace") as out:
        out.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")


def add_summary(markdown: str) -> None:
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if path:
        with open(path, "a", encoding="utf-8", errors="backslashreplace") as out:
            out.write(markdown if markdown.endswith("\n") else markdown + "\n")


def notice(level: str, message: str) -> None:
    """A workflow command (::notice:: / ::warning:: / ::error::) with the runner's escapes."""
    print(f"::{level}::{escape_workflow_data(one_line(message))}", flush=True)


def temp_dir() -> Path:
    base = Path(os.environ.get("RUNNER_TEMP") or "/tmp")
    path = base / f"sysctl-advisor-{os.getpid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


# --- which files changed ---------------------------------------------------------------------


def glob_match(pattern: str, path: str) -> bool:
    """A path glob as git and most CI tools read it: a `**` segment matches any number of
    directories (none too), `*`, `?` and `[...]` match within one name (fnmatch, whose patterns
    do not backtrack). Segment by segment, so the work is bounded by pattern × path length."""
    parts, names = pattern.split("/"), path.split("/")
    # reach[j]: the first i pattern segments can match the first j names.
    reach = [True] + [False] * len(names)
    for part in parts:
        if part == "**":
            for j in range(1, len(names) + 1):
                reach[j] = reach[j] or reach[j - 1]
            continue
        reach = [False] + [
            reach[j] and fnmatch.fnmatchcase(names[j], part) for j in range(len(names))
        ]
    return reach[len(names)]


def matching(files: Iterable[str], patterns: list[str]) -> list[str]:
    return [f for f in files if any(glob_match(p, f) for p in patterns)]


def _git(workspace: Path, *args: str) -> str | None:
    """git's output, or None when git fails (no history, a shallow clone, no git)."""
    git = shutil.which("git")
    if git is None:
        return None
    result = subprocess.run(
        [git, "-C", str(workspace), *args], capture_output=True, text=True, errors="surrogateescape"
    )
    return result.stdout if result.returncode == 0 else None


def _changed(workspace: Path, *revisions: str) -> str | None:
    return _git(workspace, "diff", "--no-ext-diff", "--name-only", "-z", "--no-renames", *revisions)


def _names(output: str) -> list[str]:
    return [name for name in output.split("\0") if name]


def read_event(path: str | None) -> dict[str, Any]:
    if not path:
        return {}
    try:
        with open(path, "rb") as source:
            data = source.read(MAX_EVENT_BYTES + 1)
    except OSError as exc:
        raise ReviewError(f"GITHUB_EVENT_PATH {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_EVENT_BYTES:
        raise ReviewError(f"GITHUB_EVENT_PATH {path}: larger than {MAX_EVENT_BYTES} bytes")
    try:
        event = json.loads(data)
    except (ValueError, RecursionError):
        raise ReviewError(f"GITHUB_EVENT_PATH {path}: not JSON, or nested too deeply") from None
    return event if isinstance(event, dict) else {}


def _mapping(value: Any) -> dict[str, Any]:
    """A payload object, or an empty one where the payload has something else."""
    return value if isinstance(value, dict) else {}


def _sha(value: Any) -> str | None:
    return value if isinstance(value, str) and re.fullmatch(r"[0-9a-f]{40,64}", value) else None


def changed_files(
    event_name: str, event: dict[str, Any], workspace: Path
) -> tuple[list[str] | None, str]:
    """The files the change touches (repository paths), or None to review every matching
    file; and how they were found, for the summary."""
    if event_name in ("pull_request", "pull_request_target", "merge_group"):
        pull = _mapping(event.get("pull_request"))
        head = _sha(_mapping(pull.get("head")).get("sha"))
        base = _sha(_mapping(pull.get("base")).get("sha"))
        # actions/checkout checks a pull request out as its merge commit: its first parent is
        # the base branch, so the diff between them is exactly what merging would change.
        second = _git(workspace, "rev-parse", "--verify", "-q", "HEAD^2")
        if second is not None and head is not None and second.strip() == head:
            out = _changed(workspace, "HEAD^1", "HEAD")
            if out is not None:
                return _names(out), "the pull request's merge commit against its base"
        if base is not None and head is not None:
            out = _changed(workspace, f"{base}...{head}")
            if out is not None:
                return _names(out), f"{base[:12]}...{head[:12]}"
        return None, (
            "the pull request's changes could not be read from git (check out with "
            "fetch-depth: 2), so every matching file was reviewed"
        )
    if event_name == "push":
        before, after = _sha(event.get("before")), _sha(event.get("after"))
        if before and after and set(before) != {"0"}:
            out = _changed(workspace, before, after)
            if out is not None:
                return _names(out), f"the push {before[:12]}..{after[:12]}"
        if isinstance(event.get("commits"), list):  # the payload lists each commit's files
            names: list[str] = []
            for commit in event["commits"]:
                if isinstance(commit, dict):
                    for field in ("added", "modified", "removed"):
                        listed = commit.get(field)
                        if isinstance(listed, list):
                            names += [n for n in listed if isinstance(n, str)]
            return list(dict.fromkeys(names)), "the files the pushed commits list"
    return None, f"a {event_name or 'manual'} run reviews every matching file"


def base_commit(event_name: str, event: dict[str, Any], workspace: Path) -> str | None:
    """The commit whose settings a pull request is reviewed with: the base branch as the
    merge commit actions/checkout makes has it (its first parent), else the event's base when
    git has that commit; None for other events, or without the history."""
    if event_name not in ("pull_request", "pull_request_target"):
        return None
    pull = _mapping(event.get("pull_request"))
    head = _sha(_mapping(pull.get("head")).get("sha"))
    base = _sha(_mapping(pull.get("base")).get("sha"))
    second = _git(workspace, "rev-parse", "--verify", "-q", "HEAD^2")
    if second is not None and head is not None and second.strip() == head:
        first = _git(workspace, "rev-parse", "--verify", "-q", "HEAD^1")
        if first is not None and _sha(first.strip()):
            return first.strip()
    if base is not None and _git(workspace, "cat-file", "-e", f"{base}^{{commit}}") is not None:
        return base
    return None


def tracked_files(workspace: Path) -> list[str]:
    out = _git(workspace, "ls-files", "-z")
    if out is not None:
        return _names(out)
    found = []
    for directory, dirs, files in os.walk(workspace):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in sorted(files):
            found.append(os.path.relpath(os.path.join(directory, name), workspace))
    return found


# --- what to check ---------------------------------------------------------------------------


def targets(files: list[str], workspace: Path) -> list[str]:
    """What `check` reads for each changed file: the tree holding it when the file sits in one
    of systemd-sysctl's directories under a common root (etc/sysctl.d, usr/lib/sysctl.d, ...:
    a name in etc hides the same name in usr/lib), else its sysctl.d directory, else the file.
    Only paths inside the workspace; a deleted file's directory is checked when it remains.
    A template (`*.j2`) is no file systemd-sysctl reads: it is checked on its own."""
    chosen: list[str] = []
    for name in files:
        path = PurePosixPath(name)
        target: PurePosixPath | None = path if path.name.endswith(TEMPLATE_SUFFIX) else None
        text = path.as_posix()
        for directory in () if target is not None else (*SYSCTL_D_DIRS, "etc"):
            suffix = f"/{directory}/{path.name}"
            if ("/" + text).endswith(suffix) and (directory != "etc" or path.name == "sysctl.conf"):
                root = ("/" + text)[: -len(suffix)].lstrip("/") or "."
                if any((workspace / root / d).is_dir() for d in SYSCTL_D_DIRS):
                    target = PurePosixPath(root)
                break
        if target is None and path.parent.name == "sysctl.d":
            target = path.parent
        if target is None:
            target = path
        full = workspace / target
        if not full.exists() or not inside(workspace, full):
            continue
        shown = target.as_posix()
        shown = shown if not shown.startswith("-") else f"./{shown}"
        if shown not in chosen:
            chosen.append(shown)
    return chosen


def _into_git(workspace: Path, path: Path) -> bool:
    """Whether `path` (resolved) lies in the repository's .git directory, which holds the
    checkout's token when actions/checkout persists credentials."""
    try:
        relative = path.resolve().relative_to(workspace.resolve())
    except (ValueError, OSError):
        return False
    return ".git" in relative.parts


def guard_links(chosen: list[str], workspace: Path) -> None:
    """Refuse a review that would read .git through a link the pull request adds (the advisor
    quotes the lines it reads in its findings). Links out of the workspace the advisor refuses
    itself."""
    for target in chosen:
        path = workspace / target
        found = [path] if not path.is_dir() else []
        if path.is_dir():
            for directory, dirs, files in os.walk(path):
                dirs[:] = [d for d in dirs if d != ".git"]
                found += [Path(directory, name) for name in files + dirs]
        for item in found:
            if item.is_symlink() and _into_git(workspace, item):
                shown = os.path.relpath(item, workspace)
                raise ReviewError(f"{shown!r} links into .git; refusing to read it")


def _input_path(name: str, workspace: Path) -> str:
    """A path input (facts, current): inside the workspace and not into .git, once links are
    resolved (the file may come from the pull request)."""
    value = _input(name)
    if not value:
        return ""
    path = workspace / value
    if not inside(workspace, path) or _into_git(workspace, path):
        raise ReviewError(
            f"{name.lower().replace('_', '-')}: {value!r} is not a file of the repository"
        )
    return value


# --- running the advisor ---------------------------------------------------------------------


def advisor_command() -> list[str]:
    configured = os.environ.get("SYSCTL_ADVISOR")
    if configured:
        return [configured]
    # -I: the working directory is the repository under review; without it `-m sysctl_advisor`
    # would import an sysctl_advisor/ package the pull request adds there.
    return [sys.executable, "-I", "-m", "sysctl_advisor"]


def advisor_environment() -> dict[str, str]:
    """The environment for the advisor: rule links in SARIF and the summary point at the rules
    reference of the action's own release (github.action_repository at github.action_ref)."""
    env = dict(os.environ)
    server = os.environ.get("GITHUB_SERVER_URL", "https://github.com")
    repository = os.environ.get("ACTION_REPOSITORY", "")
    ref = os.environ.get("ACTION_REF", "")
    if (
        "SYSCTL_ADVISOR_DOCS_URL" not in env
        and re.fullmatch(r"https://[\w.:-]+", server)
        and re.fullmatch(r"[\w.-]+/[\w.-]+", repository)
        and re.fullmatch(r"[\w./-]+", ref)
    ):
        env["SYSCTL_ADVISOR_DOCS_URL"] = f"{server}/{repository}/blob/{ref}/docs/rules.md"
    return env


def run_advisor(args: list[str], workspace: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*advisor_command(), *args],
        cwd=workspace,
        capture_output=True,
        text=True,
        env=advisor_environment(),
    )


def _input(name: str, default: str = "") -> str:
    return os.environ.get(f"INPUT_{name}", default).strip()


def review(workspace: Path) -> int:
    fail_on = _input("FAIL_ON")  # empty: the configuration's, else error
    if fail_on and fail_on not in FAIL_ON:
        raise ReviewError(f"fail-on: {fail_on!r} is not one of {', '.join(FAIL_ON)}")
    patterns = [p.strip() for p in _input("PATHS").splitlines() if p.strip()] or list(DEFAULT_PATHS)
    facts, profile, kernel = _input_path("FACTS", workspace), _input("PROFILE"), _input("KERNEL")
    if profile and not facts:
        raise ReviewError("profile: needs facts (the host the files are for)")
    parameters = [line.strip() for line in _input("SET").splitlines() if line.strip()]
    if parameters and not profile:
        raise ReviewError("set: needs profile (the parameters are the profile's)")
    settings = [option for item in parameters for option in ("--set", item)]
    explicit = [f.strip() for f in _input("FILES").splitlines() if f.strip()]
    event = read_event(os.environ.get("GITHUB_EVENT_PATH"))  # the changes, and their base
    changed: list[str] | None = explicit
    how = "the files given"
    if not explicit:
        changed, how = changed_files(os.environ.get("GITHUB_EVENT_NAME", ""), event, workspace)
    candidates = changed if changed is not None else tracked_files(workspace)
    chosen = targets(matching(candidates, patterns), workspace)
    context = []  # which rules run and how; the settings files come from `settings_in_force`
    if profile:
        context += ["--profile", profile, *settings]
    if kernel:
        context += ["--kernel", kernel]
    for name in ("SELECT", "IGNORE"):  # which rules run: check reads the ids, bad ones exit 2
        for line in _input(name).splitlines():
            if line.strip():
                context += [f"--{name.lower()}", line.strip()]
    if fail_on and fail_on != "never":
        context += ["--fail-on", fail_on]
    inputs = {"facts": facts}
    for name in ("CONFIG", "BASELINE", "RULES_DIR"):
        inputs[name.lower().replace("_", "-")] = _input_path(name, workspace)
    base = base_commit(os.environ.get("GITHUB_EVENT_NAME", ""), event, workspace)
    used: Used | None = None
    if not chosen and changed and may_be_settings(changed, inputs):
        # No sysctl file changed, but the settings they are judged by may have (a deleted
        # configuration or baseline, an edited site rule): every matching file is reviewed,
        # so a change that would turn a failing review into a passing one is seen and said.
        whole = targets(matching(tracked_files(workspace), patterns), workspace)
        _fits_one_run(whole)
        guard_links(whole, workspace)
        if whole:
            used = settings_in_force(base, workspace, temp_dir(), whole, inputs, context, changed)
            if used.changed:
                chosen = whole
                how += (
                    "; it edits the settings the files are judged by, so every matching file "
                    "was reviewed"
                )
    _fits_one_run(chosen)
    guard_links(chosen, workspace)
    set_output("files", "\n".join(chosen))
    if not chosen:
        message = f"No sysctl files to review ({how}; paths: {', '.join(patterns)})."
        notice("notice", message)
        add_summary(f"### sysctl-advisor check\n\n{md_text(message)}\n")
        for name, value in (("findings", "0"), ("worst", "none"), ("exit-code", "0")):
            set_output(name, value)
        set_output("sarif-file", "")
        set_output("comment-file", "")
        set_output("failed", "false")
        return 0

    work = temp_dir()
    if used is None:
        used = settings_in_force(base, workspace, work, chosen, inputs, context, changed)
    sarif = work / "sysctl-advisor.sarif"
    annotations_file, summary_file = work / "annotations.txt", work / "summary.md"
    written = [f"sarif={sarif}", f"github={annotations_file}", f"markdown={summary_file}"]
    also = [option for pair in written for option in ("--also", pair)]
    # one check, every format the job needs
    report = run_advisor(
        ["check", *chosen, *used.options, *context, "--format", "json", *also], workspace
    )
    if report.returncode not in (0, 1):
        raise ReviewError(used.shown(_first_line(report.stderr)) or "sysctl-advisor check failed")
    try:
        findings = json.loads(report.stdout)["findings"]
    except (ValueError, KeyError, TypeError):
        raise ReviewError("sysctl-advisor check did not write its JSON report") from None
    order = {"error": 0, "warning": 1, "info": 2}
    worst = min((f["severity"] for f in findings), key=order.__getitem__, default="none")
    sys.stdout.write(annotations_file.read_text(encoding="utf-8"))
    summary = summary_file.read_text(encoding="utf-8")
    add_summary(summary + f"\nReviewed: {md_text(how)}.\n\n{md_text(_settings_line(used, base))}\n")
    for message in [*used.notes, *_edited_message(used, workspace)]:
        notice("warning", message)
        add_summary(f"\n{md_text(message)}\n")
    failed = fail_on != "never" and report.returncode == 1  # check applied fail-on

    comment_file = ""
    if facts and profile:
        current = _input_path("CURRENT", workspace) or _single_tree(chosen)
        if not used.facts:
            notice("notice", "no diff report: the base commit has no facts file to compare for")
        elif current:
            body = work / "comment.md"
            diff = run_advisor(
                [
                    "diff",
                    "--facts",
                    used.facts,
                    "--profile",
                    profile,
                    *settings,
                    "--current",
                    current,
                    "--format",
                    "markdown",
                    "--output",
                    str(body),
                ],
                workspace,
            )
            if diff.returncode in (0, 1):
                comment_file = str(body)
            else:
                notice("warning", f"no diff report: {used.shown(_first_line(diff.stderr))}")
        else:
            notice(
                "notice",
                "no diff report: the change touches more than one sysctl tree "
                "(set the `current` input to choose one)",
            )
    for name, value in (
        ("findings", str(len(findings))),
        ("worst", worst),
        ("exit-code", "1" if failed else "0"),
        ("sarif-file", str(sarif)),
        ("comment-file", comment_file),
        ("failed", "true" if failed else "false"),
    ):
        set_output(name, value)
    return 0


def _fits_one_run(chosen: list[str]) -> None:
    if len(chosen) > MAX_TARGETS or sum(len(c) + 1 for c in chosen) > MAX_ARGUMENT_BYTES:
        raise ReviewError(
            f"{len(chosen)} sysctl files and trees to review is more than one run takes; "
            "narrow `paths` or review in several jobs"
        )  # fail closed: a review cut short would pass what it never read


# A file of these kinds may be a baseline or a facts file a configuration names.
SETTINGS_SUFFIXES = (".json", ".yaml", ".yml", ".toml")


def may_be_settings(changed: list[str], inputs: dict[str, str]) -> bool:
    """Whether a changed file may be one the review's settings are made of: a configuration
    (.sysctl-advisor.toml, pyproject.toml), an input, a file under `rules-dir`, or a file a
    configuration may name (a baseline, facts). Which ones are is settings_in_force's word."""
    named = {os.path.normpath(v) for v in inputs.values() if v}
    tree = os.path.normpath(inputs["rules-dir"]) if inputs.get("rules-dir") else None
    for name in changed:
        normal = os.path.normpath(name)
        if (
            PurePosixPath(name).name in (CONFIG_FILE, PYPROJECT)
            or name.endswith(SETTINGS_SUFFIXES)
            or normal in named
            or (tree is not None and normal.startswith(f"{tree}/"))
        ):
            return True
    return False


def settings_in_force(
    base: str | None,
    workspace: Path,
    work: Path,
    chosen: list[str],
    inputs: dict[str, str],
    context: list[str],
    changed: list[str] | None,
) -> Used:
    """The settings the review runs with: a pull request's base commit's (base_settings), or
    without a base the work tree's, as `check` finds them; with the files behind them, as
    `check --show-config` names them, and those the change edits."""

    def show(options: list[str]) -> dict[str, Any] | None:
        shown = run_advisor(
            ["check", *chosen, *options, *context, "--show-config", "--format", "json"],
            workspace,
        )
        try:
            document = json.loads(shown.stdout)
        except ValueError:
            return None
        return document if isinstance(document, dict) else None

    if base is not None:
        try:
            return from_base(workspace, base, work, chosen, inputs, show)
        except BaseCommitError as exc:
            raise ReviewError(str(exc)) from None
    options = []
    for key in ("facts", "config", "baseline", "rules-dir"):
        if inputs.get(key):
            options += [f"--{key}", inputs[key]]
    used = Used(options, inputs.get("facts", ""), None, None)
    document = show(options)
    settings = document.get("settings") if document else None
    used.names = {"configuration": used.name(document.get("configuration") if document else None)}
    for key in ("baseline", "facts"):
        entry = settings.get(key) if isinstance(settings, dict) else None
        used.names[key] = used.name(entry.get("value") if isinstance(entry, dict) else None)
    used.names["rules-dir"] = inputs.get("rules-dir") or None
    files = {os.path.normpath(n) for k, n in used.names.items() if n and k != "rules-dir"}
    # a configuration the change deletes where check searches is in force no more
    files |= {os.path.join(p, CONFIG_FILE) for p in search_places(chosen, workspace)}
    rules_dir = inputs.get("rules-dir")
    used.changed = [
        name
        for name in changed or []
        if os.path.normpath(name) in files
        or (rules_dir and os.path.normpath(name).startswith(f"{os.path.normpath(rules_dir)}/"))
    ]
    return used


def _settings_line(used: Used, base: str | None) -> str:
    """Which settings the review used, for the summary."""
    names = used.names
    parts = [
        f"configuration {names['configuration']}"
        if names.get("configuration")
        else "no configuration file"
    ]
    parts += [f"{key} {names[key]}" for key in ("baseline", "facts", "rules-dir") if names.get(key)]
    if base is not None:
        return f"Settings from the base commit {base[:12]}: {', '.join(parts)}."
    return (
        f"Settings from the work tree (no pull request base to read them from): {', '.join(parts)}."
    )


def _edited_message(used: Used, workspace: Path) -> list[str]:
    """The warning for a change that edits the settings the review's are made of."""
    if not used.changed:
        return []
    edited = _what_it_does(used.changed, workspace)
    if used.commit is not None:
        return [
            f"This change {edited}, which the review's settings are made of: the review "
            f"used the base commit's ({used.commit[:12]}) instead. The change's own apply once "
            "it is merged; read that part of the change."
        ]
    return [
        f"This change {edited}: the review ran with the check settings it proposes; "
        "read that part of the change before trusting a clean review."
    ]


def _what_it_does(names: list[str], workspace: Path) -> str:
    """`deletes a, b and edits c`: a deleted file said as deleted, not as edited."""
    deleted = [n for n in names if not os.path.lexists(workspace / n)]
    edited = [n for n in names if n not in deleted]
    said = [
        f"{verb} {', '.join(group)}"
        for verb, group in (("deletes", deleted), ("edits", edited))
        if group
    ]
    return " and ".join(said)


def _single_tree(chosen: list[str]) -> str:
    # a tree or a sysctl.d directory: never a file, nor a template (unrendered lines are no
    # host's values to compare with the plan)
    directories = [
        c for c in chosen if Path(c).suffix != ".conf" and not c.endswith(TEMPLATE_SUFFIX)
    ]
    return directories[0] if len(directories) == 1 and len(chosen) == 1 else ""


def _first_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[0] if lines else ""


# --- the pull-request comment ----------------------------------------------------------------


def _api(method: str, url: str, token: str, body: dict[str, Any] | None = None) -> Any:
    request = urllib.request.Request(
        url,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={
            "Accept": "application/vnd.github+json",
            "Authorization": f"Bearer {token}",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": "sysctl-advisor-action",
            **({"Content-Type": "application/json"} if body is not None else {}),
        },
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        data = response.read(MAX_EVENT_BYTES)
    return json.loads(data) if data else None


def _post_or_edit(
    api: str, comments_url: str, repository: str, token: str, author: str, body: str
) -> None:
    """Edit our comment (found by its marker and author) or create one."""
    existing = None
    for page in range(1, 11):
        batch = _api("GET", f"{comments_url}?per_page=100&page={page}", token) or []
        for item in batch if isinstance(batch, list) else []:
            item = _mapping(item)
            user = _mapping(item.get("user")).get("login")
            if user == author and str(item.get("body", "")).startswith(MARKER):
                existing = item
        if len(batch) < 100:
            break
    if existing is not None:
        _api(
            "PATCH",
            f"{api}/repos/{repository}/issues/comments/{int(existing['id'])}",
            token,
            {"body": body},
        )
    else:
        _api("POST", comments_url, token, {"body": body})


def comment(body_path: str) -> int:
    """Post the report as the pull request's sysctl-advisor comment: the previous one (ours,
    found by its marker and author) is edited, else one is created. A token that may not write
    (a pull request from a fork) gets a warning, not a failed job."""
    event = read_event(os.environ.get("GITHUB_EVENT_PATH"))
    number = _mapping(event.get("pull_request")).get("number")
    repository = os.environ.get("GITHUB_REPOSITORY", "")
    token = _input("TOKEN")
    if not isinstance(number, int) or not re.fullmatch(r"[\w.-]+/[\w.-]+", repository):
        notice("notice", "no pull request to comment on")
        return 0
    if not token:
        raise ReviewError("token: needed to comment")
    with open(body_path, encoding="utf-8") as source:
        text = source.read()
    body = f"{MARKER}\n{text}"
    api = os.environ.get("GITHUB_API_URL", "https://api.github.com").rstrip("/")
    comments_url = f"{api}/repos/{repository}/issues/{number}/comments"
    author = _input("COMMENT_AUTHOR") or COMMENT_AUTHOR
    for attempt in (1, 2):
        try:
            _post_or_edit(api, comments_url, repository, token, author, body)
        except urllib.error.HTTPError as exc:
            notice(
                "warning",
                f"could not comment on the pull request: HTTP {exc.code} (a pull "
                "request from a fork gets a read-only token)",
            )
        except (urllib.error.URLError, OSError, ValueError) as exc:
            if attempt == 1:
                # A dropped connection: look again and edit or create once more. A comment the
                # first try created is found by its marker then, and edited, not doubled.
                notice("notice", f"commenting on the pull request: {exc}; trying once more")
                time.sleep(1)
                continue
            notice("warning", f"could not comment on the pull request: {exc}")
        break
    return 0


def main(argv: list[str]) -> int:
    workspace = Path(os.environ.get("GITHUB_WORKSPACE") or os.getcwd())
    try:
        if argv[1:2] == ["review"]:
            return review(workspace)
        if argv[1:2] == ["comment"] and len(argv) == 3:
            return comment(argv[2])
        raise ReviewError("usage: review.py review | review.py comment FILE")
    except ReviewError as exc:
        notice("error", f"sysctl-advisor: {exc}")
        print(f"sysctl-advisor: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
