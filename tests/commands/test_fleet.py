"""`fleet`: Ansible facts of many hosts in; host files, host_vars, a playbook and summaries out."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sysctl_advisor.model.sysctl_conf import parse_conf_lines
from tests.conftest import TESTS, Cli, invoke

FIXTURES = TESTS / "fixtures" / "ansible"
TREE = FIXTURES / "tree"
GOOD = ["door-07", "dtn-01", "web-01"]
BAD = ["broken-03", "db-02", "nomem-04"]


def fleet(*args: str | Path) -> tuple[int, str]:
    result = invoke("fleet", *map(str, args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stderr


def tree_of(tmp_path: Path, names: list[str], copies: int = 0) -> Path:
    tree = tmp_path / "tree"
    tree.mkdir(exist_ok=True)
    for name in names:
        shutil.copy(TREE / name, tree / name)
    for i in range(copies):  # enough hosts for the worker pool
        shutil.copy(TREE / "web-01", tree / f"web-{i + 2:03d}")
    return tree


def snapshot(outdir: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(outdir)): p.read_bytes() for p in sorted(outdir.rglob("*")) if p.is_file()
    }


def test_fleet_writes_every_good_host_and_skips_the_broken(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, err = fleet("--ansible-facts", TREE, "--profile", "base", "--out", out)
    assert code == 1  # some hosts were skipped
    for name in BAD:
        assert f"skipped {name}:" in err
    assert "3 of 6 hosts written" in err
    assert sorted(p.name for p in (out / "host_files").iterdir()) == [f"{h}.conf" for h in GOOD]
    assert sorted(p.name for p in (out / "host_vars").iterdir()) == [f"{h}.yml" for h in GOOD]
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == [".sysctl-advisor-fleet"]
    assert not list(out.parent.glob(".out.staging-*"))  # no staging left behind

    summary = json.loads((out / "summary.json").read_text())
    assert summary["schema"] == "sysctl-advisor/fleet/v1"
    assert (summary["hosts_total"], summary["hosts_written"], summary["hosts_skipped"]) == (6, 3, 3)
    assert [h["host"] for h in summary["hosts"]] == GOOD
    assert [s["host"] for s in summary["skipped"]] == BAD
    door = summary["hosts"][0]
    assert door["profile"] == "base" and door["file"] == "host_files/door-07.conf"
    assert door["findings"]["warning"] >= 1  # a 32-bit kernel gets the move-to-64-bit advice
    fleet_ids = {f["id"]: f["hosts"] for f in summary["findings"]}
    assert all(fleet_ids[i] >= 1 for i in door["finding_ids"])
    markdown = (out / "summary.md").read_text()
    assert "6 hosts" in markdown and "3 written, 3 skipped" in markdown
    assert "| `db-02` |" in markdown and "| `door-07` | `base` |" in markdown


def test_host_files_are_exactly_what_recommend_prints(cli: Cli, tmp_path: Path) -> None:
    out = tmp_path / "out"
    fleet("--ansible-facts", TREE, "--profile", "gridftp", "--out", out)
    for host in GOOD:
        result = cli("recommend", "--facts", str(TREE / host), "--profile", "gridftp")
        conf = (out / "host_files" / f"{host}.conf").read_text()
        assert conf == result.stdout
        assignments, _, bad = parse_conf_lines(conf)
        assert not bad
        host_vars = yaml.safe_load((out / "host_vars" / f"{host}.yml").read_text())
        assert {i["name"]: i["value"] for i in host_vars["sysctl_advisor_settings"]} == {
            a.key: a.value for a in assignments
        }


def test_profile_map_globs_groups_and_parameters(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, err = fleet(
        "--ansible-facts", TREE, "--profile", "base", "--out", out,
        "--profile-map", FIXTURES / "profile-map.yaml", "--inventory", FIXTURES / "inventory.json",
    )  # fmt: skip
    assert code == 1, err
    summary = json.loads((out / "summary.json").read_text())
    assert {h["host"]: h["profile"] for h in summary["hosts"]} == {
        "door-07": "gridftp",  # group transfer, nested in dcache
        "dtn-01": "gridftp",
        "web-01": "frontend-proxy",  # glob web-*
    }
    assert summary["profiles"] == {"frontend-proxy": 1, "gridftp": 2}
    conf = (out / "host_files" / "dtn-01.conf").read_text()
    assert "rtt_ms=80" in conf and "streams=8" in conf
    assert "--set rtt_ms=80 --set streams=8" in conf  # the rebuild command reproduces it


def test_a_profile_map_entry_may_name_several_workloads(tmp_path: Path) -> None:
    """`profile: [frontend-proxy, c1m-server]`: the hosts get the merged plan, a parameter of
    one of them is `PROFILE.NAME`, and the rebuild line gives each --profile."""
    path = tmp_path / "profile-map.yaml"
    path.write_text(
        "- hosts: '*'\n  profile: [frontend-proxy, c1m-server]\n"
        "  set: {c1m-server.connections: 200000, listen_backlog: 8192}\n"
    )
    out = tmp_path / "out"
    code, err = fleet("--ansible-facts", TREE, "--out", out, "--profile-map", path)
    assert code in (0, 1), err
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["profiles"]) == {"frontend-proxy+c1m-server"}
    conf = (out / "host_files" / "dtn-01.conf").read_text()
    assert "--profile frontend-proxy --profile c1m-server" in conf
    assert "connections=200000" in conf and "listen_backlog=8192" in conf
    path.write_text("- {hosts: '*', profile: [frontend-proxy, redis], set: {gridftp.rtt_ms: 9}}\n")
    code, err = fleet("--ansible-facts", TREE, "--out", tmp_path / "o2", "--profile-map", path)
    assert code == 2 and "[0].set" in err and "unknown parameter 'gridftp.rtt_ms'" in err


@pytest.mark.parametrize(
    ("map_text", "extra", "words"),
    [
        ("- {hosts: '*', profile: nope}\n", [], ["profile-map.yaml", "[0].profile", "nope"]),
        ("- {hosts: '*', profile: base, set: {x: 1}}\n", [], ["[0].set", "unknown parameter"]),
        (
            "- {hosts: '*', profile: gridftp, set: {streams: -3}}\n",
            [],
            ["[0].set.streams", "below the minimum"],
        ),
        ("- {group: web, profile: base}\n", [], ["--inventory"]),
        ("- {group: nosuch, profile: base}\n", ["--inventory"], ["groups not in the inventory"]),
        ("- {profile: base}\n", [], ["needs `hosts` or `group`"]),
        ("hosts: x\n", [], ["is a list"]),
    ],
)
def test_bad_profile_maps_exit_2(
    tmp_path: Path, map_text: str, extra: list[str], words: list[str]
) -> None:
    path = tmp_path / "profile-map.yaml"
    path.write_text(map_text)
    args: list[str | Path] = ["--ansible-facts", TREE, "--out", tmp_path / "out"]
    args += ["--profile-map", path]
    if extra:
        args += ["--inventory", FIXTURES / "inventory.json"]
    code, err = fleet(*args)
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    for word in words:
        assert word in err
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    code, err = fleet("--ansible-facts", TREE, "--out", tmp_path / "o")
    assert code == 2 and "--profile" in err
    code, err = fleet("--ansible-facts", TREE, "--profile", "nope", "--out", tmp_path / "o")
    assert code == 2 and "unknown profile 'nope'" in err
    code, err = fleet(
        "--ansible-facts", tmp_path / "missing", "--profile", "base", "--out", tmp_path
    )
    assert code == 2 and "missing" in err
    (tmp_path / "empty").mkdir()
    code, err = fleet("--ansible-facts", tmp_path / "empty", "--profile", "base", "--out", tmp_path)
    assert code == 2 and "--tree" in err
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code, err = fleet("--ansible-facts", TREE, "--profile", "base", "--out", blocker / "out")
    assert code == 2 and "--out" in err and "cannot write" in err


def test_nothing_to_do_leaves_the_previous_run_alone(tmp_path: Path) -> None:
    out = tmp_path / "out"
    fleet("--ansible-facts", tree_of(tmp_path, ["web-01"]), "--profile", "base", "--out", out)
    before = snapshot(out)
    bad = tmp_path / "bad"
    bad.mkdir()
    for name in BAD:
        shutil.copy(TREE / name, bad / name)
    code, err = fleet("--ansible-facts", bad, "--profile", "base", "--out", out)
    assert code == 2 and "no host could be advised" in err
    assert snapshot(out) == before


def test_rerun_replaces_the_whole_output(tmp_path: Path) -> None:
    out = tmp_path / "out"
    fleet("--ansible-facts", tree_of(tmp_path, ["web-01", "dtn-01"]), "-p", "base", "--out", out)
    (tmp_path / "tree" / "dtn-01").unlink()
    code, _ = fleet("--ansible-facts", tmp_path / "tree", "-p", "base", "--out", out)
    assert code == 0
    # dtn-01 is gone from the facts, so no stale file of it can reach the playbook
    assert [p.name for p in (out / "host_files").iterdir()] == ["web-01.conf"]


def test_deterministic_and_parallel_equals_serial(tmp_path: Path) -> None:
    tree = tree_of(tmp_path, GOOD, copies=80)
    outputs = []
    for jobs, name in (("1", "a"), ("2", "b"), ("2", "c")):
        out = tmp_path / name
        code, _ = fleet("--ansible-facts", tree, "-p", "frontend-proxy", "--out", out, "-j", jobs)
        assert code == 0
        outputs.append(snapshot(out))
    assert len(outputs[0]) == 2 * 83 + 3 + 1  # + the marker listing them
    assert outputs[0] == outputs[1] == outputs[2]


# --- the playbook, run by the real ansible-playbook ------------------------------------------

ANSIBLE_PLAYBOOK = shutil.which("ansible-playbook") or str(
    Path(sys.executable).parent / "ansible-playbook"
)
needs_ansible = pytest.mark.skipif(
    not Path(ANSIBLE_PLAYBOOK).exists(), reason="ansible-core is not installed"
)


def playbook(
    out: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environment = dict(
        os.environ,
        ANSIBLE_PYTHON_INTERPRETER=sys.executable,
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_RETRY_FILES_ENABLED="0",
        **(env or {}),
    )
    return subprocess.run(
        [ANSIBLE_PLAYBOOK, "-i", "localhost,", "-c", "local", str(out / "playbook.yml"), *args],
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
    )


@pytest.fixture(scope="module")
def localhost_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fleet run whose only host is `localhost`, from the committed web-01 facts."""
    work = tmp_path_factory.mktemp("fleet")
    (work / "tree").mkdir()
    shutil.copy(TREE / "web-01", work / "tree" / "localhost")
    code, err = fleet("--ansible-facts", work / "tree", "-p", "frontend-proxy", "--out", work / "o")
    assert code == 0, err
    return work / "o"


@needs_ansible
def test_playbook_syntax(localhost_out: Path) -> None:
    result = playbook(localhost_out, "--syntax-check")
    assert result.returncode == 0, result.stdout + result.stderr


@needs_ansible
def test_playbook_check_mode_changes_nothing(localhost_out: Path) -> None:
    dest = Path("/etc/sysctl.d/90-sysctl-advisor.conf")
    before = dest.read_bytes() if dest.exists() else None
    result = playbook(localhost_out, "--check", "--diff")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "net.core.somaxconn = 16384" in result.stdout  # the --diff of the file to install
    assert (dest.read_bytes() if dest.exists() else None) == before


FAKE_SYSCTL = """#!/bin/sh
# Stands in for procps sysctl: logs its arguments, prints `key = value` from $FAKE_SYSCTL_VALUES.
echo "$@" >> "$FAKE_SYSCTL_LOG"
[ "$1" = "--system" ] && exit 0
[ "$1" = "-e" ] && shift
for key in "$@"; do
  grep "^$key = " "$FAKE_SYSCTL_VALUES"
done
exit 0
"""


@needs_ansible
@pytest.mark.skipif(os.geteuid() != 0, reason="the copy task sets owner root: needs root")
@pytest.mark.parametrize("overridden", [False, True])
def test_playbook_installs_applies_and_verifies(
    localhost_out: Path, tmp_path: Path, overridden: bool
) -> None:
    """A real (not --check) run against a stand-in sysctl and a scratch destination."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "sysctl"
    fake.write_text(FAKE_SYSCTL)
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    conf = (localhost_out / "host_files" / "localhost.conf").read_text()
    assignments, _, _ = parse_conf_lines(conf)
    in_force = {a.key: a.value.replace(" ", "\t") for a in assignments}  # sysctl prints tabs
    if overridden:
        in_force["net.core.somaxconn"] = "4096"  # as if 99-sysctl.conf set it again
    values = tmp_path / "values"
    values.write_text("".join(f"{k} = {v}\n" for k, v in in_force.items()))
    dest = tmp_path / "90-sysctl-advisor.conf"
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "FAKE_SYSCTL_LOG": str(tmp_path / "log"),
        "FAKE_SYSCTL_VALUES": str(values),
    }
    result = playbook(
        localhost_out, "-e", f"sysctl_advisor_dest={dest}", "-e", "sysctl_advisor_become=false",
        env=env,
    )  # fmt: skip
    assert dest.read_text() == conf
    calls = (tmp_path / "log").read_text().splitlines()
    assert calls[0] == "--system"  # the handler ran before the read-back
    assert calls[1].split() == ["-e", *in_force]
    if overridden:
        assert result.returncode != 0
        assert "net.core.somaxconn is 4096, not 16384" in result.stdout
    else:
        assert result.returncode == 0, result.stdout + result.stderr


def test_progress_bar_counts_hosts_and_skips(capsys: pytest.CaptureFixture[str]) -> None:
    import io

    from rich.console import Console

    from sysctl_advisor.outputs.fleet_summary import HostOutcome
    from sysctl_advisor.outputs.progress import progress_reporter

    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=100)
    with progress_reporter(3, terminal=True, console=console) as advance:
        advance(HostOutcome("a", "a"))
        advance(HostOutcome("b", "b", error="broken"))
        advance(HostOutcome("c", "c"))
    assert "3/3" in screen.getvalue() and "1 skipped" in screen.getvalue()
    with progress_reporter(2, terminal=False, console=console) as advance:
        before = screen.getvalue()
        advance(HostOutcome("d", "d"))
    assert screen.getvalue() == before  # not a terminal: nothing drawn
    assert capsys.readouterr().out == ""  # the bar never touches stdout


def test_a_hosts_hostile_text_never_reaches_the_terminal(tmp_path: Path) -> None:
    """The fourth review: a host file's failure message with ESC, BEL and a bidi override
    was printed raw in the skip line on the operator's terminal."""
    tree = tree_of(tmp_path, GOOD[:1])
    message = "boom\x1b[2J\x1b]0;pwned\x07 \u202eevil"
    (tree / "evil-02").write_text(json.dumps({"failed": True, "msg": message}))
    code, err = fleet("--ansible-facts", tree, "--out", tmp_path / "out", "-p", "c1m-server")
    assert code == 1 and "skipped evil-02:" in err
    assert all(line.isprintable() for line in err.splitlines()), repr(err)
