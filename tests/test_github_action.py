"""The GitHub Action (action.yml, action/review.py), run here as the runner would run it.

`run_action` plays the runner's part for a composite action: it reads action.yml, gives each
step the environment its `env:` asks for (inputs, earlier steps' outputs, the github context),
evaluates `if:`, runs `run:` steps with bash and records `uses:` steps with their inputs (the
SARIF upload). The workspace is a git repository holding a pull request's merge commit, as
actions/checkout leaves it; the event payload, GITHUB_OUTPUT and GITHUB_STEP_SUMMARY are files,
as on a runner. The install step is replaced by a wrapper around this interpreter (the advisor
is installed here already; installing it again would need the network).
"""

from __future__ import annotations

import http.server
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cmarkgfm  # type: ignore[import-untyped]
import jsonschema
import pytest
import yaml

from tests.conftest import EXAMPLES, ROOT

ACTION = ROOT / "action.yml"
SCHEMA = ROOT / "tests" / "fixtures" / "schemas" / "github-action.schema.json"
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def test_action_yml_is_valid_action_metadata() -> None:
    """Against SchemaStore's schema for action.yml (vendored, see fixtures/schemas/SOURCES.md)."""
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    errors = [e.message for e in jsonschema.Draft7Validator(schema).iter_errors(_action())]
    assert errors == []


def test_no_input_is_spliced_into_a_script() -> None:
    """Script injection: an expression inside `run:` would paste a pull request's text into
    bash. Every value reaches the scripts through `env:`."""
    for step in _action()["runs"]["steps"]:
        assert "${{" not in step.get("run", ""), step["name"]


def test_the_action_installs_from_the_lock() -> None:
    """The action installs the libraries CI passed with (constraints.txt), which ships with it,
    pinning every runtime dependency of the package."""
    (install,) = [s for s in _action()["runs"]["steps"] if s["name"] == "Install sysctl-advisor"]
    assert '-c "$GITHUB_ACTION_PATH/constraints.txt" "$GITHUB_ACTION_PATH"' in install["run"]
    pinned = {
        line.split("==")[0].lower().replace("_", "-")
        for line in (ROOT / "constraints.txt").read_text().splitlines()
        if "==" in line
    }
    for requirement in importlib.metadata.requires("sysctl-advisor") or []:
        if "extra ==" in requirement:
            continue
        name = re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")
        assert name in pinned, requirement


# --- a small runner ---------------------------------------------------------------------------


def _action() -> dict[str, Any]:
    data = yaml.safe_load(ACTION.read_text())
    assert isinstance(data, dict)
    return data


@dataclass
class Run:
    outputs: dict[str, dict[str, str]] = field(default_factory=dict)  # by step id
    ran: list[str] = field(default_factory=list)
    uses: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    failed_step: str | None = None
    stdout: str = ""
    summary: str = ""


def _parse_outputs(text: str) -> dict[str, str]:
    """GITHUB_OUTPUT as the runner reads it: name=value, or name<<DELIMITER ... DELIMITER."""
    outputs: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, i + 1)
            outputs[name] = "\n".join(lines[i + 1 : end])
            i = end + 1
        elif "=" in line:
            name, value = line.split("=", 1)
            outputs[name] = value
            i += 1
        else:
            i += 1
    return outputs


class _Context:
    def __init__(self, inputs: dict[str, str], github: dict[str, str], run: Run) -> None:
        self.inputs, self.github, self.run = inputs, github, run
        self.failed = False

    def value(self, expression: str) -> str:
        expression = expression.strip()
        if expression.startswith("inputs."):
            return self.inputs[expression.removeprefix("inputs.")]
        if expression.startswith("github."):
            return self.github[expression.removeprefix("github.")]
        if expression == "runner.temp":
            return self.github["runner_temp"]
        match = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expression)
        if match:
            return self.run.outputs.get(match[1], {}).get(match[2], "")
        match = re.fullmatch(r"'([^']*)'", expression)
        if match:
            return match[1]
        raise AssertionError(f"the test runner cannot evaluate {expression!r}")

    def condition(self, text: str | None) -> bool:
        if text is None:
            return not self.failed
        body = text.strip()
        if body.startswith("${{") and body.endswith("}}"):
            body = body[3:-2]
        always = False
        result = True
        for term in body.split("&&"):
            term = term.strip()
            if term == "always()":
                always = True
            elif "==" in term or "!=" in term:
                op = "==" if "==" in term else "!="
                left, right = term.split(op)
                equal = self.value(left) == self.value(right)
                result = result and (equal if op == "==" else not equal)
            else:
                raise AssertionError(f"the test runner cannot evaluate {term!r}")
        return result and (always or not self.failed)

    def substitute(self, text: str) -> str:
        return re.sub(r"\$\{\{(.*?)\}\}", lambda m: self.value(m[1]), text)


def run_action(
    workspace: Path,
    tmp: Path,
    inputs: dict[str, str],
    event_name: str,
    event: dict[str, Any],
    extra_env: dict[str, str] | None = None,
) -> Run:
    action = _action()
    values = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    values["token"] = "test-token"
    values.update(inputs)
    runner_temp = tmp / "runner-temp"
    runner_temp.mkdir(exist_ok=True)
    event_path = tmp / "event.json"
    event_path.write_text(json.dumps(event))
    github = {
        "action_path": str(ROOT),
        "action_repository": "example/sysctl-advisor",
        "action_ref": "v1",
        "token": "test-token",
        "runner_temp": str(runner_temp),
    }
    run = Run()
    context = _Context(values, github, run)
    summary = tmp / "summary.md"
    summary.write_text("")
    for index, step in enumerate(action["runs"]["steps"]):
        if not context.condition(step.get("if")):
            continue
        name = step["name"]
        run.ran.append(name)
        if "uses" in step:
            with_ = {k: context.substitute(str(v)) for k, v in (step.get("with") or {}).items()}
            run.uses.append((step["uses"], with_))
            continue
        output_file = tmp / f"output-{index}"
        output_file.write_text("")
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(tmp),
            "GITHUB_ACTION_PATH": str(ROOT),
            "GITHUB_WORKSPACE": str(workspace),
            "GITHUB_EVENT_NAME": event_name,
            "GITHUB_EVENT_PATH": str(event_path),
            "GITHUB_OUTPUT": str(output_file),
            "GITHUB_STEP_SUMMARY": str(summary),
            "GITHUB_REPOSITORY": "example/infra",
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_API_URL": os.environ.get("TEST_GITHUB_API_URL", "https://api.invalid"),
            "RUNNER_TEMP": str(runner_temp),
            **{k: context.substitute(str(v)) for k, v in (step.get("env") or {}).items()},
            **(extra_env or {}),
        }
        script = step["run"]
        if name == "Install sysctl-advisor":
            venv_bin = runner_temp / "sysctl-advisor-action" / "bin"
            venv_bin.mkdir(parents=True, exist_ok=True)
            wrapper = venv_bin / "python"
            wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
            wrapper.chmod(0o755)
            script = "true"
        cwd = context.substitute(step.get("working-directory", str(workspace)))
        result = subprocess.run(
            ["bash", "-e", "-c", script], cwd=cwd, env=env, capture_output=True, text=True
        )
        run.stdout += result.stdout
        if "id" in step:
            run.outputs[step["id"]] = _parse_outputs(output_file.read_text())
        if result.returncode != 0:
            context.failed = True
            run.failed_step = name
            run.stdout += result.stderr
    run.summary = summary.read_text()
    return run


# --- a repository with a pull request --------------------------------------------------------


def _git(cwd: Path, *args: str) -> str:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(cwd),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    result = subprocess.run(
        ["git", "-C", str(cwd), *args], env=env, capture_output=True, text=True, check=True
    )
    return result.stdout.strip()


def pull_request(
    workspace: Path,
    base_files: dict[str, str],
    pr_files: dict[str, str],
    removed: tuple[str, ...] = (),
) -> dict[str, Any]:
    """A repository whose HEAD is the merge commit of a pull request, as actions/checkout
    leaves it (refs/pull/N/merge: first parent the base branch, second the pull request),
    which writes `pr_files` and deletes `removed`."""
    workspace.mkdir()
    _git(workspace, "init", "-q", "-b", "main")
    for name, text in base_files.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(text)
    _git(workspace, "add", "-A")
    _git(workspace, "commit", "-q", "--allow-empty", "-m", "base")
    return merged_pull_request(workspace, pr_files, removed)


def merged_pull_request(
    workspace: Path, pr_files: dict[str, str], removed: tuple[str, ...] = (), number: int = 42
) -> dict[str, Any]:
    """On a repository at the tip of main: a topic branch that writes `pr_files` and deletes
    `removed`, merged into main as actions/checkout leaves it; the pull request event."""
    base = _git(workspace, "rev-parse", "HEAD")
    _git(workspace, "checkout", "-q", "-b", "topic")
    for name in removed:
        _git(workspace, "rm", "-q", "-r", "--", name)
    for name, text in pr_files.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(text)
    _git(workspace, "add", "-A")
    _git(workspace, "commit", "-q", "-m", "change")
    head = _git(workspace, "rev-parse", "HEAD")
    _git(workspace, "checkout", "-q", "main")
    _git(workspace, "merge", "-q", "--no-ff", "-m", "merge", "topic")
    pull = {"number": number, "head": {"sha": head}, "base": {"sha": base}}
    return {"number": number, "pull_request": pull}


BASE = {
    "README.md": "infra\n",
    "hosts/web/etc/sysctl.d/10-web.conf": "net.core.somaxconn = 4096\n",
    "hosts/web/etc/sysctl.d/99-late.conf": "net.ipv4.tcp_syncookies = 1\n",
}


def test_a_pull_request_with_an_error_fails_with_sarif_summary_and_annotations(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "repo"
    event = pull_request(
        workspace,
        BASE,
        {
            "hosts/web/etc/sysctl.d/20-pr.conf": (
                "net.ipv4.tcp_syncookies = 0\nnet.ipv4.tcp_tw_recycle = 1\n"
            ),
            "docs/notes.md": "not a sysctl file\n",
        },
    )
    run = run_action(workspace, tmp_path, {}, "pull_request", event)

    review = run.outputs["review"]
    assert review["files"] == "hosts/web"  # the tree: 99-late.conf, unchanged, is read too
    assert review["worst"] == "error" and review["findings"] == "3"
    assert run.failed_step == "Fail on findings at fail-on"
    # The override by an unchanged file is found: the whole tree was checked.
    assert "check.overridden" in run.summary and "99-late.conf:1" in run.summary
    assert "check.tw-recycle-enabled" in run.summary
    assert "check.syncookies-off" in run.summary  # SYN cookies off: a warning
    assert "Reviewed: the pull request" in run.summary
    assert "::error file=hosts/web/etc/sysctl.d/20-pr.conf,line=2" in run.stdout
    # The SARIF upload runs (after the failure is known, before the job fails) with our file.
    (uses,) = run.uses
    assert uses[0].startswith("github/codeql-action/upload-sarif@")
    sarif = json.loads(Path(uses[1]["sarif_file"]).read_text())
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in sarif["runs"][0]["results"]
    }
    assert uris == {"hosts/web/etc/sysctl.d/20-pr.conf"}
    assert uses[1]["category"] == "sysctl-advisor"
    # Rule links point at the action's own release of the rules reference.
    help_uri = sarif["runs"][0]["tool"]["driver"]["rules"][0]["helpUri"]
    assert help_uri.startswith("https://github.com/example/sysctl-advisor/blob/v1/docs/rules.md#")


def test_the_review_runs_check_once_for_every_format(tmp_path: Path) -> None:
    """The review ran `check` four times (JSON, SARIF, annotations,
    summary); one run writes them all (`--also FORMAT=FILE`)."""
    workspace = tmp_path / "repo"
    event = pull_request(
        workspace, BASE, {"hosts/web/etc/sysctl.d/20-pr.conf": "net.ipv4.tcp_tw_recycle = 1\n"}
    )
    calls = tmp_path / "calls"
    logging = tmp_path / "advisor"
    logging.write_text(
        f'#!/bin/sh\necho "$*" >> "{calls}"\nexec "{sys.executable}" -m sysctl_advisor "$@"\n'
    )
    logging.chmod(0o755)
    run = run_action(
        workspace, tmp_path, {}, "pull_request", event, extra_env={"SYSCTL_ADVISOR": str(logging)}
    )
    # one check writes every format; one more run only asks which settings files were in force
    lines = calls.read_text().splitlines()
    checks = [line for line in lines if "--show-config" not in line]
    assert [line.split()[0] for line in checks] == ["check"] and len(lines) == 2
    assert run.outputs["review"]["worst"] == "error"
    assert "check.tw-recycle-enabled" in run.summary and "::error file=" in run.stdout
    assert run.uses and Path(run.uses[0][1]["sarif_file"]).read_text().startswith("{")


def test_fail_on_and_a_clean_change(tmp_path: Path) -> None:
    workspace = tmp_path / "repo"
    event = pull_request(
        workspace, BASE, {"hosts/web/etc/sysctl.d/30-ok.conf": "net.ipv4.tcp_fin_timeout = 30\n"}
    )
    run = run_action(workspace, tmp_path, {"fail-on": "info"}, "pull_request", event)
    assert run.outputs["review"]["worst"] == "none"
    assert run.failed_step is None
    assert "1 error" not in run.summary and "no findings" in run.summary
    assert len(run.uses) == 1  # a clean review is uploaded too (it closes earlier alerts)


def test_a_change_without_sysctl_files_reviews_nothing(tmp_path: Path) -> None:
    workspace = tmp_path / "repo"
    event = pull_request(workspace, BASE, {"docs/notes.md": "text\n"})
    run = run_action(workspace, tmp_path, {}, "pull_request", event)
    assert run.outputs["review"]["files"] == ""
    assert run.outputs["review"]["findings"] == "0"
    assert run.uses == [] and run.failed_step is None
    assert "No sysctl files to review" in run.summary


def test_a_push_reads_the_files_the_payload_lists(tmp_path: Path) -> None:
    """Without the history (a shallow checkout), a push is reviewed from the file lists of
    its commits in the payload."""
    workspace = tmp_path / "repo"
    workspace.mkdir()
    (workspace / "sysctl.d").mkdir()
    (workspace / "sysctl.d" / "90-bad.conf").write_text("net.ipv4.tcp_mem = 1 2\n")
    (workspace / "sysctl.d" / "10-ok.conf").write_text("net.core.somaxconn = 4096\n")
    event = {
        "before": "1" * 40,
        "after": "2" * 40,
        "commits": [{"added": ["sysctl.d/90-bad.conf"], "modified": [], "removed": []}],
    }
    run = run_action(workspace, tmp_path, {"fail-on": "warning"}, "push", event)
    assert run.outputs["review"]["files"] == "sysctl.d"
    assert run.outputs["review"]["worst"] == "warning"
    assert run.failed_step == "Fail on findings at fail-on"
    assert "check.short-vector" in run.summary


def test_hostile_file_names_stay_data(tmp_path: Path) -> None:
    """A pull request controls its file names: a name holding a newline and a would-be output
    line cannot add an output, and Markdown in it is shown as text."""
    workspace = tmp_path / "repo"
    evil = "etc/x\nfailed=false\n<img src=x>[a](b).conf"
    event = pull_request(workspace, {"README.md": "x\n"}, {evil: "net.ipv4.tcp_tw_recycle = 1\n"})
    run = run_action(
        workspace, tmp_path, {"paths": "etc/**", "fail-on": "error"}, "pull_request", event
    )
    review = run.outputs["review"]
    assert review["files"] == evil
    assert review["failed"] == "true" and run.failed_step == "Fail on findings at fail-on"
    html = cmarkgfm.github_flavored_markdown_to_html(run.summary)
    assert "<img" not in html and 'href="b"' not in html
    assert "&lt;img src=x&gt;[a](b).conf" in html  # shown, as text


def test_a_link_out_of_the_workspace_is_not_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.conf"
    secret.write_text("net.ipv4.tcp_tw_recycle = 1\n")
    workspace = tmp_path / "repo"
    event = pull_request(workspace, {"README.md": "x\n"}, {"sysctl.d/10-ok.conf": "a = 1\n"})
    (workspace / "sysctl.d" / "20-link.conf").symlink_to(secret)
    run = run_action(workspace, tmp_path, {}, "pull_request", event)
    assert "tw-recycle" not in run.summary
    assert "tcp_tw_recycle" not in run.stdout


class _FakeGitHub(http.server.BaseHTTPRequestHandler):
    comments: list[dict[str, Any]] = []  # noqa: RUF012 - the test's shared state
    requests: list[tuple[str, str]] = []  # noqa: RUF012

    def _reply(self, code: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length", "0"))
        return dict(json.loads(self.rfile.read(length)))

    def do_GET(self) -> None:
        self.requests.append(("GET", self.path))
        assert self.headers["Authorization"] == "Bearer test-token"
        self._reply(200, self.comments if "page=1" in self.path else [])

    def do_POST(self) -> None:
        self.requests.append(("POST", self.path))
        body = self._body()
        comment = {"id": 100 + len(self.comments), "body": body["body"]}
        comment["user"] = {"login": "github-actions[bot]"}
        self.comments.append(comment)
        self._reply(201, comment)

    def do_PATCH(self) -> None:
        self.requests.append(("PATCH", self.path))
        body = self._body()
        for comment in self.comments:
            if self.path.endswith(f"/comments/{comment['id']}"):
                comment["body"] = body["body"]
        self._reply(200, {})

    def log_message(self, *args: Any) -> None:
        pass


def test_the_diff_comment_is_posted_once_and_then_edited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "repo"
    facts = (EXAMPLES / "ec2-nginx-frontend.yaml").read_text()
    event = pull_request(
        workspace,
        {"facts/web.yaml": facts, **BASE},
        {"hosts/web/etc/sysctl.d/20-pr.conf": "net.core.somaxconn = 8192\n"},
    )
    _FakeGitHub.comments = [
        {"id": 7, "body": "<!-- sysctl-advisor diff -->\nforged", "user": {"login": "mallory"}}
    ]
    _FakeGitHub.requests = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _FakeGitHub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("TEST_GITHUB_API_URL", f"http://127.0.0.1:{server.server_address[1]}")
    inputs = {
        "facts": "facts/web.yaml",
        "profile": "frontend-proxy",
        "comment": "true",
        "fail-on": "never",
    }
    try:
        first = run_action(workspace, tmp_path, inputs, "pull_request", event)
        second = run_action(workspace, tmp_path, inputs, "pull_request", event)
    finally:
        server.shutdown()
    assert first.failed_step is None and second.failed_step is None
    assert "Comment the diff on the pull request" in first.ran
    methods = [m for m, _ in _FakeGitHub.requests]
    # (what each run printed and which steps it ran, should this ever differ)
    said = [
        [
            line
            for line in run.stdout.splitlines()
            if line.startswith(("::warning", "::error", "::notice"))
        ]
        for run in (first, second)
    ]
    print("requests:", _FakeGitHub.requests, "notices, warnings and errors of each run:", said)
    # A run whose connection dropped (CI saw it under load) lists again and then edits or
    # posts once: the extra GET must come with the action's "trying once more" notice.
    retried = [any("trying once more" in line for line in lines) for lines in said]
    expected = [
        *(["GET"] * (1 + retried[0])),
        "POST",
        *(["GET"] * (1 + retried[1])),
        "PATCH",
    ]
    assert methods == expected, said
    assert all(
        "/repos/example/infra/issues/42/comments" in p
        for m, p in _FakeGitHub.requests
        if m != "PATCH"
    )
    forged, ours = _FakeGitHub.comments
    assert forged["body"].endswith("forged")  # someone else's comment with our marker: untouched
    assert ours["body"].startswith("<!-- sysctl-advisor diff -->\n### sysctl-advisor diff:")
    assert "`net.core.somaxconn`" in ours["body"] and "`8192`" in ours["body"]


def test_a_comment_the_token_may_not_write_is_a_warning(tmp_path: Path) -> None:
    """A pull request from a fork gets a read-only token: the review still passes or fails on
    its findings, the comment step only warns."""
    workspace = tmp_path / "repo"
    (tmp_path / "body.md").write_text("report\n")
    workspace.mkdir()
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 1}}))
    env = {
        **os.environ,
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": "example/infra",
        "GITHUB_API_URL": "http://127.0.0.1:9",  # nothing listens: refused
        "INPUT_TOKEN": "t",
    }
    result = subprocess.run(
        [sys.executable, str(ROOT / "action" / "review.py"), "comment", str(tmp_path / "body.md")],
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0
    first, last = result.stdout.splitlines()  # refused twice: one more try, then a warning
    assert first.startswith("::notice::commenting on the pull request") and "once more" in first
    assert last.startswith("::warning::could not comment on the pull request")


def review_alone(workspace: Path, inputs: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """review.py run by itself with these INPUT_* variables (no event, no git)."""
    env = {**os.environ, "GITHUB_WORKSPACE": str(workspace), **inputs}
    return subprocess.run(
        [sys.executable, str(ROOT / "action" / "review.py"), "review"],
        env=env,
        capture_output=True,
        text=True,
    )


def test_bad_inputs_exit_2_with_one_line(tmp_path: Path) -> None:
    result = review_alone(tmp_path, {"INPUT_FAIL_ON": "sometimes"})
    assert result.returncode == 2
    assert result.stderr == (
        "sysctl-advisor: error: fail-on: 'sometimes' is not one of error, warning, info, never\n"
    )


def test_the_documented_workflow_uses_the_action_as_it_is() -> None:
    """The documented workflow (docs/github-action.md): valid YAML, the inputs it passes
    (commented ones too) exist, and it grants what the action's steps need."""
    readme = (ROOT / "docs" / "github-action.md").read_text()
    start = readme.index("```yaml\nname: sysctl review")
    block = readme[start + len("```yaml\n") : readme.index("```\n", start + 8)]
    workflow = yaml.safe_load(block)
    (job,) = workflow["jobs"].values()
    checkout, action = job["steps"]
    assert checkout["with"]["fetch-depth"] == 2
    inputs = set(_action()["inputs"])
    uncommented = yaml.safe_load(re.sub(r"(?m)^(\s*)# (\w[\w-]*:)", r"\1\2", block))
    passed = set(uncommented["jobs"]["sysctl"]["steps"][1]["with"])
    assert set(action["with"]) <= passed <= inputs
    assert workflow["permissions"]["security-events"] == "write"


# --- attacks (each payload built here) -------------------------------------------------------


def test_a_pull_request_cannot_replace_the_advisor(tmp_path: Path) -> None:
    """The review runs in the checkout of the pull request: a sysctl_advisor/ package it adds at
    the top of the repository must not be what runs (python -I: the working directory is not on
    the path)."""
    workspace = tmp_path / "repo"
    marker = tmp_path / "PWNED"
    fake = f"open({str(marker)!r}, 'w').write('x')\nprint('{{\"findings\": []}}')\n"
    event = pull_request(
        workspace,
        {"README.md": "x\n"},
        {
            "sysctl_advisor/__init__.py": "",
            "sysctl_advisor/__main__.py": fake,
            "sysctl.d/90-bad.conf": "net.ipv4.tcp_tw_recycle = 1\n",
        },
    )
    run = run_action(workspace, tmp_path, {}, "pull_request", event)
    assert not marker.exists()
    assert run.outputs["review"]["worst"] == "error"


def test_many_changed_files_cannot_hide_a_sysctl_file(tmp_path: Path) -> None:
    """Thirty thousand changed names sorting before the sysctl file: every one is matched, none
    cut off."""
    workspace = tmp_path / "repo"
    (workspace / "sysctl.d").mkdir(parents=True)
    (workspace / "sysctl.d" / "90-bad.conf").write_text("net.ipv4.tcp_tw_recycle = 1\n")
    names = [f"aaa/{i:05d}.txt" for i in range(30000)] + ["sysctl.d/90-bad.conf"]
    run = run_action(workspace, tmp_path, {}, "push", {"commits": [{"added": names}]})
    assert run.outputs["review"]["worst"] == "error"


def test_more_trees_than_one_run_takes_fail_closed(tmp_path: Path) -> None:
    workspace = tmp_path / "repo"
    names = []
    for i in range(1001):
        directory = workspace / f"h{i}" / "sysctl.d"
        directory.mkdir(parents=True)
        (directory / "a.conf").write_text("net.core.somaxconn = 4096\n")
        names.append(f"h{i}/sysctl.d/a.conf")
    run = run_action(workspace, tmp_path, {"files": "\n".join(names)}, "push", {})
    assert run.failed_step == "Review the changed sysctl files"
    assert "more than one run takes" in run.stdout


def test_a_link_into_git_is_refused(tmp_path: Path) -> None:
    """actions/checkout keeps the token in .git/config: a sysctl file that links there would
    have its lines quoted in the findings."""
    workspace = tmp_path / "repo"
    event = pull_request(workspace, {"README.md": "x\n"}, {"sysctl.d/10-ok.conf": "a = 1\n"})
    config = workspace / ".git" / "config"
    config.write_text(
        config.read_text() + "[http]\n\textraheader = AUTHORIZATION: basic c2VjcmV0\n"
    )
    (workspace / "sysctl.d" / "20-token.conf").symlink_to("../.git/config")
    run = run_action(workspace, tmp_path, {}, "pull_request", event)
    assert run.failed_step == "Review the changed sysctl files"
    assert "links into .git" in run.stdout
    assert "c2VjcmV0" not in run.stdout + run.summary


def test_path_inputs_stay_in_the_repository(tmp_path: Path) -> None:
    workspace = tmp_path / "repo"
    event = pull_request(workspace, BASE, {"hosts/web/etc/sysctl.d/30.conf": "a = 1\n"})
    (workspace / "facts.yaml").symlink_to("/etc/passwd")
    run = run_action(
        workspace, tmp_path, {"facts": "facts.yaml", "profile": "base"}, "pull_request", event
    )
    assert run.failed_step == "Review the changed sysctl files"
    assert "facts: 'facts.yaml' is not a file of the repository" in run.stdout


def test_a_name_that_is_not_utf8_is_reported_not_a_crash(tmp_path: Path) -> None:
    workspace = tmp_path / "repo"
    directory = Path(os.fsdecode(os.fsencode(workspace) + b"/h\xff/sysctl.d"))
    directory.mkdir(parents=True)
    (directory / "a.conf").write_text("net.ipv4.tcp_tw_recycle = 1\n")
    run = run_action(workspace, tmp_path, {}, "workflow_dispatch", {})
    assert run.outputs["review"]["worst"] == "error"
    assert run.outputs["review"]["files"] == "h\\udcff/sysctl.d"  # the byte, escaped


def test_globs() -> None:
    sys.path.insert(0, str(ROOT / "action"))
    try:
        from review import glob_match  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    assert glob_match("**/sysctl.d/*.conf", "sysctl.d/a.conf")
    assert glob_match("**/sysctl.d/*.conf", "x/y/etc/sysctl.d/a.conf")
    assert not glob_match("**/sysctl.d/*.conf", "x/sysctl.d/sub/a.conf")
    assert glob_match("etc/**", "etc/a/b") and not glob_match("etc/*", "etc/a/b")
    assert glob_match("[0-9][0-9]-*.conf", "10-x.conf") and not glob_match("?.conf", "ab.conf")
    # Many stars in one name: fnmatch does not backtrack, so this answers at once.
    assert not glob_match("*a*a*a*a*a*b", "a" * 250)


class _FlakyGitHub(_FakeGitHub):
    """Drops the connection of the first request of each method in `drop` (after the server
    did its work, as a lost response would look to the client)."""

    drop: set[str] = set()  # noqa: RUF012

    def _reply(self, code: int, body: Any) -> None:
        method = self.command
        if method in self.drop:
            self.drop.discard(method)
            self.close_connection = True
            self.connection.shutdown(2)
            return
        super()._reply(code, body)


@pytest.mark.parametrize("lost", ["GET", "POST"])
def test_a_dropped_connection_is_tried_once_more_and_never_doubles_the_comment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lost: str
) -> None:
    """A lost listing is listed again; a lost answer to the POST that did create the comment
    finds it on the second try and edits it instead of posting a second one."""
    sys.path.insert(0, str(ROOT / "action"))
    try:
        import review  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    monkeypatch.setattr(review.time, "sleep", lambda seconds: None)
    _FlakyGitHub.comments = []
    _FlakyGitHub.requests = []
    _FlakyGitHub.drop = {lost}
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _FlakyGitHub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 42}}))
    body = tmp_path / "comment.md"
    body.write_text("the diff\n")
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    monkeypatch.setenv("GITHUB_REPOSITORY", "example/infra")
    monkeypatch.setenv("GITHUB_API_URL", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setenv("INPUT_TOKEN", "test-token")
    try:
        assert review.comment(str(body)) == 0
    finally:
        server.shutdown()
    methods = [m for m, _ in _FlakyGitHub.requests]
    expected = {"GET": ["GET", "GET", "POST"], "POST": ["GET", "POST", "GET", "PATCH"]}[lost]
    assert methods == expected
    assert len(_FlakyGitHub.comments) == 1 and _FlakyGitHub.comments[0]["body"].endswith("diff\n")


def test_the_profile_runs_with_the_parameters_the_conf_was_made_with(tmp_path: Path) -> None:
    """The action's `set` input reaches check (and the diff) as `--set`, so a
    conf made with `recommend --set rtt_ms=200` is not reported as departing from the profile's
    defaults; `set` without `profile` is bad input."""
    facts = (EXAMPLES / "dtn-10g.yaml").read_text()
    made = subprocess.run(
        [
            *(sys.executable, "-m", "sysctl_advisor", "recommend", "-p", "gridftp"),
            *(
                "--facts",
                str(EXAMPLES / "dtn-10g.yaml"),
                "--set",
                "rtt_ms=200",
                "--set",
                "streams=2",
            ),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    results = {}
    for name, parameters in (("with", "rtt_ms=200\nstreams=2\n"), ("without", "")):
        workspace = tmp_path / name
        event = pull_request(
            workspace,
            {"facts/dtn.yaml": facts, "README.md": "dtn\n"},
            {"hosts/dtn/etc/sysctl.d/90-sysctl-advisor.conf": made},
        )
        inputs = {"facts": "facts/dtn.yaml", "profile": "gridftp", "fail-on": "info"}
        if parameters:
            inputs["set"] = parameters
        (tmp_path / f"{name}-run").mkdir()
        run = run_action(workspace, tmp_path / f"{name}-run", inputs, "pull_request", event)
        results[name] = run.outputs["review"]["worst"]
    assert results == {"with": "none", "without": "info"}
    bad = review_alone(tmp_path, {"INPUT_SET": "rtt_ms=200"})
    assert bad.returncode == 2 and "set: needs profile" in bad.stderr


# --- a change to what the review is judged by, and templates --------------------------------

ACCEPTED_ERROR = "hosts/web/etc/sysctl.d/50-old.conf"
WRITE = ("--write-baseline", "sysctl-baseline.json")


def _warnings(run: Run) -> list[str]:
    return [line for line in run.stdout.splitlines() if line.startswith("::warning::")]


def test_the_documented_workflow_reviews_what_can_weaken_it() -> None:
    """The documented `paths:` filter starts the review for a pull request that touches only
    the settings (configuration, pyproject.toml, baseline, rules-dir) or a template."""
    from action.review import glob_match

    readme = (ROOT / "docs" / "github-action.md").read_text()
    start = readme.index("```yaml\nname: sysctl review")
    workflow = yaml.safe_load(readme[start + len("```yaml\n") : readme.index("```\n", start + 8)])
    paths = workflow[True]["pull_request"]["paths"]  # YAML 1.1 reads `on` as true
    for name in [
        ".sysctl-advisor.toml",
        "roles/net/.sysctl-advisor.toml",
        "pyproject.toml",
        "sysctl-baseline.json",
        "site-rules/check/site-floor.yaml",
        "roles/net/templates/sysctl.conf.j2",
        "roles/net/templates/99-sysctl.conf.j2",
        "hosts/web/etc/sysctl.d/10-web.conf",
        "hosts/web/etc/sysctl.conf",
    ]:
        assert any(glob_match(p, name) for p in paths), name


def _adopted(tmp_path: Path) -> dict[str, str]:
    """A repository that adopted the linter: an old error, accepted by its baseline."""
    scratch = tmp_path / "scratch"
    (scratch / ".git").mkdir(parents=True)
    (scratch / ".sysctl-advisor.toml").write_text('baseline = "sysctl-baseline.json"\n')
    (scratch / ACCEPTED_ERROR).parent.mkdir(parents=True)
    (scratch / ACCEPTED_ERROR).write_text("net.ipv4.tcp_tw_recycle = 1\n")
    written = subprocess.run(
        [sys.executable, "-m", "sysctl_advisor", "check", "hosts/web", *WRITE],
        cwd=scratch, capture_output=True, text=True,
    )  # fmt: skip
    assert written.returncode == 0, written.stderr
    return {
        **BASE,
        ".sysctl-advisor.toml": '# adopted\nbaseline = "sysctl-baseline.json"\n',
        ACCEPTED_ERROR: "net.ipv4.tcp_tw_recycle = 1\n",
        "sysctl-baseline.json": (scratch / "sysctl-baseline.json").read_text(),
    }


@pytest.mark.parametrize("removed", ["sysctl-baseline.json", ".sysctl-advisor.toml"])
def test_a_pull_request_that_only_deletes_a_setting_is_reviewed_and_warned(
    tmp_path: Path, removed: str
) -> None:
    """The change touches no sysctl file: without the baseline (or the configuration naming
    it) the accepted error would fail every later review, or be accepted by nothing. The
    review runs on every file with the base's settings, and says what the change deletes."""
    workspace = tmp_path / "repo"
    event = pull_request(workspace, _adopted(tmp_path), {"docs/notes.md": "x\n"}, (removed,))
    run = run_action(workspace, tmp_path, {}, "pull_request", event)
    assert run.outputs["review"]["files"] == "hosts/web", run.stdout
    assert run.failed_step is None, run.stdout  # the base's baseline still accepts the error
    (warning,) = _warnings(run)
    assert f"This change deletes {removed}" in warning, warning
    assert "the review used the base commit" in warning
    assert "every matching file was reviewed" in run.summary


def test_a_pull_request_that_only_edits_a_site_rule_is_warned(tmp_path: Path) -> None:
    from tests.knowledge.test_user_check_rules import RULE

    rule = "site-rules/check/site-somaxconn-floor.yaml"
    workspace = tmp_path / "repo"
    base = {**BASE, "hosts/web/etc/sysctl.d/10-web.conf": "net.core.somaxconn = 128\n"}
    base[rule] = RULE
    event = pull_request(workspace, base, {rule: RULE.replace("< 4096", "< 0")})
    run = run_action(workspace, tmp_path, {"rules-dir": "site-rules"}, "pull_request", event)
    assert run.outputs["review"]["files"] == "hosts/web", run.stdout
    assert "check.site-somaxconn-floor" in run.summary  # the base's rule still judges
    (warning,) = _warnings(run)
    assert f"This change edits {rule}" in warning, warning


def test_a_change_to_an_unrelated_settings_like_file_reviews_nothing(tmp_path: Path) -> None:
    workspace = tmp_path / "repo"
    event = pull_request(workspace, BASE, {"inventory/groups.yaml": "web: []\n"})
    run = run_action(workspace, tmp_path, {}, "pull_request", event)
    assert run.outputs["review"]["files"] == "" and _warnings(run) == []
    assert "No sysctl files to review" in run.summary


def test_a_push_that_deletes_the_configuration_is_warned(tmp_path: Path) -> None:
    workspace = tmp_path / "repo"
    (workspace / "sysctl.d").mkdir(parents=True)
    (workspace / "sysctl.d" / "10-ok.conf").write_text("net.ipv4.tcp_timestamps = 0\n")
    event = {
        "before": "1" * 40,
        "after": "2" * 40,
        "commits": [{"added": [], "modified": ["sysctl.d/10-ok.conf"]}],
    }
    event["commits"][0]["removed"] = [".sysctl-advisor.toml"]
    run = run_action(workspace, tmp_path, {}, "push", event)
    (warning,) = _warnings(run)
    assert "This change deletes .sysctl-advisor.toml" in warning, warning


def test_a_templated_sysctl_file_is_reviewed_as_a_template(tmp_path: Path) -> None:
    template = "roles/net/templates/sysctl.conf.j2"
    text = "# {{ ansible_managed }}\nnet.core.somaxconn = {{ somaxconn }}\n{% if fwd %}\n"
    text += "net.ipv4.ip_forward = 1\n{% endif %}\n"
    workspace = tmp_path / "repo"
    event = pull_request(workspace, BASE, {template: text})
    run = run_action(workspace, tmp_path, {"fail-on": "warning"}, "pull_request", event)
    assert run.outputs["review"]["files"] == template
    assert run.failed_step is None and run.outputs["review"]["findings"] == "0", run.summary

    workspace, tmp = tmp_path / "bad" / "repo", tmp_path / "bad"
    tmp.mkdir()
    event = pull_request(workspace, BASE, {template: text + "net.ipv4.tcp_tw_recycle = 1\n"})
    run = run_action(workspace, tmp, {}, "pull_request", event)
    assert run.failed_step == "Fail on findings at fail-on"
    assert f"::error file={template},line=6" in run.stdout, run.stdout


def test_a_template_is_never_the_tree_the_plan_is_compared_with(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`diff --current` reads a tree's values in force: a pull request changing only a
    template has none (its lines are unrendered), a sysctl.d directory has."""
    import importlib

    monkeypatch.syspath_prepend(str(ROOT / "action"))
    review = importlib.import_module("review")
    assert review._single_tree(["roles/net/templates/sysctl.conf.j2"]) == ""
    assert review._single_tree(["etc/sysctl.d/10-net.conf"]) == ""
    assert review._single_tree(["etc/sysctl.d"]) == "etc/sysctl.d"
