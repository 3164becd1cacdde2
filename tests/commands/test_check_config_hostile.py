"""A security review of check's repository configuration and baseline (cca2442..): each hostile
configuration, baseline, output target or pull request is built at test time and run through
the CLI (or the Action's simulated runner), and must end in the safe behaviour: a one-line
error with exit 2 (never an internal error, a hang or a blow-up), nothing read from outside
the tree the setting came from, nothing written over a file the advisor did not write, and
`--show-config` output that stays TOML."""

from __future__ import annotations

import json
import os
import resource
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.commands.check_repo import make_repo, run_in
from tests.conftest import EXAMPLES, assert_one_line_error

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]


RECYCLE = "net.ipv4.tcp_tw_recycle = 1\n"  # check.tw-recycle-enabled, an error
FACTS = EXAMPLES / "dcache-32bit.yaml"


def _ids(stdout: str) -> set[str]:
    return {f["id"] for f in json.loads(stdout)["findings"]}


# --- problems found by the review, each fixed -------------------------------------------------


@pytest.mark.parametrize("where", ["config", "pyproject"])
def test_an_integer_beyond_python_s_digit_limit_is_one_line(tmp_path: Path, where: str) -> None:
    huge = "1" * 5000
    if where == "config":
        repo = make_repo(tmp_path, f"kernel = {huge}\n", {"sysctl.d/10-a.conf": RECYCLE})
        name = ".sysctl-advisor.toml"
    else:
        repo = make_repo(tmp_path, None, {"sysctl.d/10-a.conf": RECYCLE})
        (repo / "pyproject.toml").write_text(f"[tool.other]\nx = {huge}\n")
        name = "pyproject.toml"
    code, _, err = run_in(repo, "check", "sysctl.d")
    assert_one_line_error(code, err, name)


def _limit_memory() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


@pytest.mark.parametrize("where", ["config", "pyproject"])
def test_a_long_dotted_key_is_refused_within_bounded_memory(tmp_path: Path, where: str) -> None:
    """Run in a child held to 1 GiB of address space (a normal check needs a fraction): the
    safe outcome is a one-line refusal naming the file, not a MemoryError (exit 3) or worse."""
    key = ".".join(["a"] * 30_000)
    if where == "config":
        repo = make_repo(tmp_path, f"set.{key} = 1\n", {"sysctl.d/10-a.conf": RECYCLE})
        name = ".sysctl-advisor.toml"
    else:
        repo = make_repo(tmp_path, None, {"sysctl.d/10-a.conf": RECYCLE})
        (repo / "pyproject.toml").write_text(f"[tool.other]\n{key} = 1\n")
        name = "pyproject.toml"
    result = subprocess.run(
        [sys.executable, "-m", "sysctl_advisor", "check", "sysctl.d"],
        cwd=repo,
        capture_output=True,
        text=True,
        preexec_fn=_limit_memory,
        timeout=120,
    )
    assert_one_line_error(result.returncode, result.stderr, name)


def test_write_baseline_to_standard_output_is_not_an_internal_error(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, None, {"sysctl.d/10-a.conf": RECYCLE})
    code, out, err = run_in(repo, "check", "sysctl.d", "--write-baseline", "-")
    assert "internal error" not in err and code in (0, 2), (code, err)
    if code == 2:
        assert_one_line_error(code, err, "--write-baseline")
    else:
        assert json.loads(out)["schema"] == "sysctl-advisor/baseline/v2"


def _baseline_accepting_everything(repo: Path) -> bytes:
    """The baseline `check --write-baseline` writes for the repository's sysctl.d."""
    code, _, err = run_in(repo, "check", "sysctl.d", "--isolated", "--write-baseline", "all.json")
    assert code == 0, err
    data = (repo / "all.json").read_bytes()
    (repo / "all.json").unlink()
    return data


def test_a_baseline_the_configuration_names_is_not_read_through_a_link_out(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path, 'baseline = "b.json"\n', {"sysctl.d/10-a.conf": RECYCLE})
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "b.json").write_bytes(_baseline_accepting_everything(repo))
    (repo / "b.json").symlink_to(outside / "b.json")
    code, _, err = run_in(repo, "check", "sysctl.d", "-f", "json")
    assert_one_line_error(code, err, "b.json")
    assert "outside" in err


def test_a_baseline_named_on_the_command_line_may_be_a_link(tmp_path: Path) -> None:
    """Held: the operator's own --baseline is read wherever it points (as --facts is)."""
    repo = make_repo(tmp_path, None, {"sysctl.d/10-a.conf": RECYCLE})
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "b.json").write_bytes(_baseline_accepting_everything(repo))
    (repo / "b.json").symlink_to(outside / "b.json")
    code, out, err = run_in(repo, "check", "sysctl.d", "--baseline", "b.json", "-f", "json")
    assert code == 0 and _ids(out) == set(), err


@pytest.mark.parametrize(
    "config",
    [
        '[per-file-ignores]\n"\U0001f600.conf" = ["check.glob"]\n',
        'profile = "web-\U0001d54f"\n',
        "[set]\nrtt_ms = inf\n",
        "[set]\nrtt_ms = nan\n",
    ],
    ids=["pfi-astral", "profile-astral", "set-inf", "set-nan"],
)
def test_show_config_stays_toml_whatever_the_configuration_holds(
    tmp_path: Path, config: str
) -> None:
    repo = make_repo(tmp_path, config, {"sysctl.d/10-a.conf": RECYCLE})
    code, out, err = run_in(repo, "check", "--show-config")
    if code == 2:  # refusing a non-finite parameter up front is as safe
        assert_one_line_error(code, err, ".sysctl-advisor.toml")
        return
    assert code == 0, err
    shown = tomllib.loads(out)  # what a team pastes back into .sysctl-advisor.toml
    given = tomllib.loads(config)
    for key, value in given.items():
        if key == "set":
            for name, parameter in value.items():
                assert str(shown["set"][name]) == str(parameter)
        else:
            assert shown[key] == value


@pytest.mark.parametrize(
    "config",
    [
        'profile = "gridftp"\n[set]\nrtt_ms = "fast"\n',
        'profile = "gridftp"\n[set]\nstreams = 1.5\n',
        'profile = "no-such-profile"\n',
    ],
    ids=["set-not-a-number", "set-not-an-integer", "unknown-profile"],
)
def test_a_bad_parameter_or_profile_in_the_configuration_names_the_file(
    tmp_path: Path, config: str
) -> None:
    repo = make_repo(tmp_path, 'facts = "host.yaml"\n' + config, {"sysctl.d/10-a.conf": RECYCLE})
    (repo / "host.yaml").write_bytes(FACTS.read_bytes())
    code, _, err = run_in(repo, "check", "sysctl.d")
    assert_one_line_error(code, err, ".sysctl-advisor.toml")
    assert "--set" not in err and "--profile" not in err, err


def test_a_huge_parameter_value_in_the_configuration_gives_a_short_error(
    tmp_path: Path,
) -> None:
    config = 'facts = "host.yaml"\nprofile = "gridftp"\n[set]\nrtt_ms = "' + "9x" * 500_000 + '"\n'
    repo = make_repo(tmp_path, config, {"sysctl.d/10-a.conf": RECYCLE})
    (repo / "host.yaml").write_bytes(FACTS.read_bytes())
    code, _, err = run_in(repo, "check", "sysctl.d")
    assert_one_line_error(code, err)
    assert len(err) < 1000, len(err)


def test_write_baseline_never_replaces_a_file_being_checked(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path,
        None,
        {"sysctl.d/10-a.conf": RECYCLE, "sysctl.d/20-b.conf": "net.ipv4.tcp_timestamps = 0\n"},
    )
    # What the shell makes of `check --write-baseline sysctl.d/*.conf`.
    code, _, err = run_in(
        repo, "check", "--write-baseline", "sysctl.d/10-a.conf", "sysctl.d/20-b.conf"
    )
    assert (repo / "sysctl.d/10-a.conf").read_text() == RECYCLE
    assert_one_line_error(code, err, "10-a.conf")


@pytest.mark.skipif(os.geteuid() != 0, reason="plants a file as another user (needs root)")
def test_a_configuration_another_user_planted_in_a_shared_directory_is_not_applied(
    tmp_path: Path,
) -> None:
    shared = tmp_path / "shared"  # as /tmp: world-writable, sticky
    shared.mkdir()
    shared.chmod(0o1777)
    planted = shared / ".sysctl-advisor.toml"
    planted.write_text('ignore = ["check"]\n')
    os.chown(planted, 65534, 65534)  # nobody's
    job = shared / "job"  # root's own files, no repository
    job.mkdir()
    (job / "a.conf").write_text(RECYCLE)
    code, out, err = run_in(tmp_path, "check", "shared/job/a.conf", "-f", "json")
    assert code in (1, 2), (code, out, err)  # refused, or checked without it
    if code == 1:
        assert "check.tw-recycle-enabled" in _ids(out)
    else:
        assert_one_line_error(code, err, ".sysctl-advisor.toml")


@pytest.mark.skipif(shutil.which("git") is None, reason="the Action's runner needs git")
def test_the_action_says_when_a_change_edits_the_baseline_the_configuration_names(
    tmp_path: Path,
) -> None:
    from tests.test_github_action import pull_request, run_action

    config = 'baseline = "accepted.json"\n'
    empty = '{"schema": "sysctl-advisor/baseline/v2", "findings": []}\n'
    added = {"hosts/web/etc/sysctl.d/20-pr.conf": RECYCLE}
    # The baseline that accepts the pull request's own finding, written at test time on a
    # copy of the merged tree, named as the Action's check names it.
    scratch = make_repo(tmp_path / "scratch", config, {"hosts/web/etc/sysctl.d/10-web.conf": ""})
    for name, text in added.items():
        (scratch / name).write_text(text)
    code, _, err = run_in(scratch, "check", "hosts/web", "--write-baseline", "accepted.json")
    assert code == 0, err
    accepted = (scratch / "accepted.json").read_text()
    assert "check.tw-recycle-enabled" in accepted

    workspace = tmp_path / "workspace"
    base = {
        "README.md": "infra\n",
        "hosts/web/etc/sysctl.d/10-web.conf": "",
        ".sysctl-advisor.toml": config,
        "accepted.json": empty,
    }
    event = pull_request(workspace, base, {**added, "accepted.json": accepted})
    run = run_action(workspace, tmp_path, {}, "pull_request", event)
    assert run.outputs["review"]["files"] == "hosts/web", run.stdout
    assert "accepted.json" in run.summary, run.summary


# Counts the opens of one path (audit hook "open": os.open, open, io.open) in a child.
_COUNT_OPENS = r"""
import os, runpy, sys
watched, opened = sys.argv[1], []
def hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        if os.path.abspath(os.fsdecode(args[0])) == watched:
            opened.append(1)
sys.addaudithook(hook)
sys.argv = ["sysctl-advisor", *sys.argv[2:]]
try:
    runpy.run_module("sysctl_advisor", run_name="__main__")
finally:
    sys.stderr.write(f"opened {len(opened)}\n")
"""


def test_the_configuration_is_read_once_however_many_directories_are_checked(
    tmp_path: Path,
) -> None:
    hosts = [f"hosts/h{i}/sysctl.d" for i in range(20)]
    repo = make_repo(
        tmp_path, 'fail-on = "warning"\n', {f"{h}/10-a.conf": "vm.swappiness = 10\n" for h in hosts}
    )
    config = str(repo / ".sysctl-advisor.toml")
    result = subprocess.run(
        [sys.executable, "-c", _COUNT_OPENS, config, "check", *hosts],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip().splitlines()[-1] == "opened 1", result.stderr


# --- what held: regression guards ----------------------------------------------------------------


@pytest.mark.parametrize(
    "config",
    [
        b"\xef\xbb\xbffail-on = 'info'\n",  # a byte-order mark
        b"fail-on = 'info'\x00\n",
        b"fail-on = 'info\xff'\n",  # not UTF-8
        b"fail-on = 'info'\nfail-on = 'error'\n",  # a duplicate key
        b"ignore = " + b"{a = " * 3000 + b"1" + b"}" * 3000 + b"\n",
        b"[set]\nx = 1979-05-27T07:32:00Z\n",
        b"[set]\nx = [1, 2]\n",
        b"[set]\nx = {a = 1}\n",
        b'select = ["\\u202echeck"]\n',  # a bidi override
        b'select = ["check.dup\\u00adlicate-key"]\n',  # a soft hyphen
        b'select = ["check.dup\xc2\xadlicate-key"]\n',  # the soft hyphen as raw UTF-8
        b"facts = 'a/../../x'\n",
        b"baseline = '//etc/passwd'\n",
        b"[per-file-ignores]\n" + b"".join(b'"p%d" = []\n' % i for i in range(1025)),
    ],
    ids=lambda v: repr(v[:24]),
)
def test_hostile_toml_is_one_line(tmp_path: Path, config: bytes) -> None:
    repo = make_repo(tmp_path, config, {"sysctl.d/10-a.conf": RECYCLE})
    code, _, err = run_in(repo, "check", "sysctl.d")
    assert_one_line_error(code, err, ".sysctl-advisor.toml")


@pytest.mark.parametrize(
    "pyproject",
    [
        b"[[tool.sysctl-advisor]]\nfail-on = 'info'\n",
        b"[tool]\nsysctl-advisor = 'x'\n",
        b"[tool.other]\nx = " + b"[" * 900 + b"]" * 900 + b"\n",
    ],
    ids=["array-of-tables", "string", "deep-unrelated"],
)
def test_a_hostile_pyproject_is_one_line(tmp_path: Path, pyproject: bytes) -> None:
    repo = make_repo(tmp_path, None, {"sysctl.d/10-a.conf": RECYCLE})
    (repo / "pyproject.toml").write_bytes(pyproject)
    code, _, err = run_in(repo, "check", "sysctl.d")
    assert_one_line_error(code, err, "pyproject.toml")


@pytest.mark.parametrize("kind", ["directory", "fifo", "loop", "device"])
def test_a_pyproject_that_is_not_a_file_is_refused_without_blocking(
    tmp_path: Path, kind: str
) -> None:
    repo = make_repo(tmp_path, None, {"sysctl.d/10-a.conf": RECYCLE})
    target = repo / "pyproject.toml"
    if kind == "directory":
        target.mkdir()
    elif kind == "fifo":
        os.mkfifo(target)  # opened O_PATH, never for reading: no writer needed
    elif kind == "loop":
        target.symlink_to("pyproject.toml")
    else:
        target.symlink_to("/dev/zero")
    code, _, err = run_in(repo, "check", "sysctl.d")
    assert_one_line_error(code, err, "pyproject.toml")


def test_per_file_ignores_with_pathological_globs_stay_linear(tmp_path: Path) -> None:
    """1,024 patterns of many `*` against 200 long names: fnmatch (3.9+) does not backtrack;
    this completes in about a second. No timing is asserted: a blow-up would hang the suite."""
    patterns = "".join(
        f'"*{"a*" * 90}{i}" = ["check.unknown-key"]\n"d/*{"[!a]*" * 35}{i}" = ["check"]\n'
        for i in range(512)
    )
    files = {f"d/{'a' * 200}{i}.conf": "foo.bar = 1\n" for i in range(200)}
    repo = make_repo(tmp_path, "[per-file-ignores]\n" + patterns, files)
    code, out, err = run_in(repo, "check", "d", "-f", "json")
    assert code in (0, 1), err
    assert "check.unknown-key" in _ids(out)


def test_a_hostile_configuration_path_is_escaped_in_every_report(tmp_path: Path) -> None:
    """The per-file-ignores and baseline reasons carry the configuration's and baseline's
    paths: a directory name holding ESC, a bidi override and a newline reaches no output raw."""
    hostile = "h\x1b[31mX\u202e\nY"
    repo = tmp_path / hostile
    (repo / ".git").mkdir(parents=True)
    (repo / "etc").mkdir()
    (repo / "etc" / "a.conf").write_text(RECYCLE + "foo.bar = 1\n")
    (repo / ".sysctl-advisor.toml").write_text(
        '[per-file-ignores]\n"a.conf" = ["check.unknown-key"]\n'
    )
    args = [f"{hostile}/etc/a.conf"]
    code, _, err = run_in(tmp_path, "check", *args, "--write-baseline", f"{hostile}/b.json")
    assert code == 0 and "\x1b" not in err and "\u202e" not in err, err
    (repo / "etc" / "a.conf").write_text(RECYCLE + "foo.bar = 1\nvm.swappiness = 10\n")
    for fmt in ("text", "markdown", "github", "json", "sarif"):
        code, out, err = run_in(
            tmp_path, "check", *args, "--baseline", f"{hostile}/b.json", "-f", fmt
        )
        assert code in (0, 1), err
        for text in (out, err):
            assert "\x1b" not in text and "\u202e" not in text, (fmt, text)
    code, out, _ = run_in(tmp_path, "check", *args, "--show-config")
    assert "\x1b" not in out and "\u202e" not in out
    tomllib.loads(out)


@pytest.mark.parametrize("kind", ["symlink", "dangling", "fifo", "directory"])
def test_write_baseline_never_replaces_what_is_not_a_regular_file(
    tmp_path: Path, kind: str
) -> None:
    repo = make_repo(tmp_path, None, {"sysctl.d/10-a.conf": RECYCLE})
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    target = repo / "out.json"
    if kind == "symlink":
        target.symlink_to(victim)
    elif kind == "dangling":
        target.symlink_to(tmp_path / "made-by-the-advisor")
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        target.mkdir()
    code, _, err = run_in(repo, "check", "sysctl.d", "--write-baseline", "out.json")
    assert_one_line_error(code, err, "out.json")
    assert victim.read_text() == "keep\n"
    assert not (tmp_path / "made-by-the-advisor").exists()
    mode = os.lstat(target).st_mode
    assert {
        "symlink": stat.S_ISLNK,
        "dangling": stat.S_ISLNK,
        "fifo": stat.S_ISFIFO,
        "directory": stat.S_ISDIR,
    }[kind](mode)


@pytest.mark.skipif(not os.path.isdir("/proc/sys/vm"), reason="needs /proc/sys")
def test_write_baseline_never_writes_proc_sys(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, None, {"sysctl.d/10-a.conf": RECYCLE})
    before = Path("/proc/sys/vm/swappiness").read_text()
    code, _, err = run_in(repo, "check", "sysctl.d", "--write-baseline", "/proc/sys/vm/swappiness")
    assert code == 2 and "internal error" not in err, err
    assert Path("/proc/sys/vm/swappiness").read_text() == before


@pytest.mark.parametrize(
    ("text", "part"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested"),
        ('{"schema": "sysctl-advisor/baseline/v2", "schema": "x", "findings": []}', "duplicate"),
        ('{"findings": [' + "1" * 4400 + "]}", "baseline.json"),
        (
            '{"findings": [{"rule": "check.x", "file": "a", "fingerprint": "' + "A" * 64 + '"}]}',
            "fingerprint",
        ),
    ],
    ids=["deep", "duplicate-key", "huge-integer", "upper-case-fingerprint"],
)
def test_a_hostile_baseline_is_one_line(tmp_path: Path, text: str, part: str) -> None:
    repo = make_repo(tmp_path, 'baseline = "baseline.json"\n', {"sysctl.d/10-a.conf": RECYCLE})
    (repo / "baseline.json").write_text(text)
    code, _, err = run_in(repo, "check", "sysctl.d")
    assert_one_line_error(code, err, "baseline.json", part)


def test_a_configuration_cannot_name_its_facts_through_a_link_out(tmp_path: Path) -> None:
    """Held (as the baseline should be): facts the configuration names through a directory
    link out of the repository are refused."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "host.yaml").write_bytes(FACTS.read_bytes())
    repo = make_repo(
        tmp_path, 'facts = "up/host.yaml"\nprofile = "gridftp"\n', {"sysctl.d/10-a.conf": RECYCLE}
    )
    (repo / "up").symlink_to(outside)
    code, _, err = run_in(repo, "check", "sysctl.d")
    assert_one_line_error(code, err, "host.yaml", "outside")
