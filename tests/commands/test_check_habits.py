"""A linter's habits in `check`: `--fail-on never` (ruff's and flake8's --exit-zero),
`--statistics` (counts per rule), `--fix` (the certain mechanical fixes, written atomically,
only to the files given) and shell completion of profiles, keys and rule ids."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sysctl_advisor.commands.common import load_knowledge
from sysctl_advisor.engine.check.fix import FIXES
from sysctl_advisor.engine.check.values import taken
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.sysctl_conf import parse_conf_lines
from tests.conftest import HANG_SECONDS, Cli, assert_one_line_error, invoke

DEFECTS = (
    "net.ipv4.tcp_fin_timeout = 30 # shorter\n"  # 1: the kernel drops the comment
    "net.core.somaxconn = 1024\n"  # 2: set again on line 4
    "net.ipv4.tcp_rmem = 010 0x1000 6291456\n"  # 3: octal and hex
    "net.core.somaxconn = 4096\n"
    "kernel.core_pattern = |/usr/lib/systemd/systemd-coredump %P #x\n"  # 5: '#' is the value's
)


def _ids(result_stdout: str) -> list[str]:
    return [f["id"] for f in json.loads(result_stdout)["findings"]]


# --- --fail-on never ---------------------------------------------------------------------------


def test_fail_on_never_exits_zero_and_still_reports(cli: Cli, tmp_path: Path) -> None:
    conf = tmp_path / "a.conf"
    conf.write_text("net.ipv4.tcp_tw_recycle = 1\n")
    assert cli("check", conf).exit_code == 1
    result = cli("check", conf, "--fail-on", "never", "-f", "json")
    assert result.exit_code == 0, result.output
    assert "check.tw-recycle-enabled" in _ids(result.stdout)


def test_fail_on_never_in_the_configuration(cli: Cli, tmp_path: Path) -> None:
    """The configuration says what the option says: `fail-on = "never"` too."""
    conf = tmp_path / "a.conf"
    conf.write_text("net.ipv4.tcp_tw_recycle = 1\n")
    (tmp_path / ".sysctl-advisor.toml").write_text('fail-on = "never"\n')
    result = cli("check", conf, "-f", "json")
    assert result.exit_code == 0, result.output
    assert "check.tw-recycle-enabled" in _ids(result.stdout)
    assert cli("check", conf, "--fail-on", "error").exit_code == 1


# --- --statistics ------------------------------------------------------------------------------


def test_statistics_counts_each_rule(cli: Cli, tmp_path: Path) -> None:
    conf = tmp_path / "a.conf"
    conf.write_text(DEFECTS + "net.ipv4.tcp_keepalive_time = 600 # ten minutes\n")
    result = cli("check", conf, "--statistics", "-f", "json")
    assert result.exit_code == 0, result.output
    rows = {row["rule"]: row for row in json.loads(result.stdout)}
    assert rows["check.inline-comment"]["count"] == 3
    assert rows["check.inline-comment"]["fixable"] is True
    assert rows["check.duplicate-key"]["count"] == 1
    assert rows["check.not-decimal"]["severity"] == "warning"
    text = cli("check", conf, "--statistics").stdout.splitlines()
    first = text[0].split()
    assert first[:3] == ["3", "check.inline-comment", "[*]"]  # most first, fixable marked
    assert not any("shorter" in line for line in text)  # counts, not the findings
    assert text[-1].startswith("[*] ") and "--fix" in text[-1]


def test_statistics_keeps_the_exit_code(cli: Cli, tmp_path: Path) -> None:
    conf = tmp_path / "a.conf"
    conf.write_text("net.ipv4.tcp_tw_recycle = 1\n")
    assert cli("check", conf, "--statistics").exit_code == 1


def test_statistics_in_another_format_is_refused(cli: Cli, tmp_path: Path) -> None:
    conf = tmp_path / "a.conf"
    conf.write_text("net.core.somaxconn = 4096\n")
    result = cli("check", conf, "--statistics", "-f", "sarif")
    assert_one_line_error(result.exit_code, result.stderr, "--statistics", "sarif")


# --- --fix -------------------------------------------------------------------------------------


def test_fix_rewrites_what_is_certain_and_reports_the_rest(cli: Cli, tmp_path: Path) -> None:
    conf = tmp_path / "a.conf"
    conf.write_text(DEFECTS)
    conf.chmod(0o640)
    before = conf.stat()
    result = cli("check", conf, "--fix", "-f", "json")
    assert "fixed 3 findings in 1 file" in result.stderr
    assert conf.read_text() == (
        "# shorter\n"
        "net.ipv4.tcp_fin_timeout = 30\n"
        "net.ipv4.tcp_rmem = 8 4096 6291456\n"
        "net.core.somaxconn = 4096\n"
        "kernel.core_pattern = |/usr/lib/systemd/systemd-coredump %P #x\n"
    )
    after = conf.stat()
    assert after.st_ino != before.st_ino  # replaced whole, never written in place
    assert stat.S_IMODE(after.st_mode) == 0o640
    ids = _ids(result.stdout)  # what is left: the core_pattern '#' is the kernel's to read
    assert [i for i in ids if i in FIXES] == ["check.inline-comment"]
    assert result.exit_code == 0


@pytest.mark.parametrize(
    "text",
    [
        # a comment that would read as a suppression on its own line stays where it is; a
        # line a suppression comment stands before is not removed (it would pass to the next)
        "net.ipv4.tcp_fin_timeout = 30 # sysctl-advisor: ignore[check.unknown-key] x\n"
        "# sysctl-advisor: ignore[check.somaxconn-u16] old kernels\n"
        "net.core.somaxconn = 1024\n"
        "net.core.somaxconn = 4096\n",
        # after a short or refused write the earlier line's elements are still in force
        "net.ipv4.tcp_rmem = 4096 131072 6291456\n"
        "net.ipv4.tcp_rmem = 8192\n"
        "net.core.somaxconn = 4096\n"
        "net.core.somaxconn = 4k\n",
    ],
    ids=["suppression-comments", "not-wholly-replaced"],
)
def test_fix_keeps_what_it_cannot_be_sure_of(cli: Cli, tmp_path: Path, text: str) -> None:
    conf = tmp_path / "a.conf"
    conf.write_text(text)
    result = cli("check", conf, "--fix")
    assert result.exit_code in (0, 1) and "fixed" not in result.stderr, result.output
    assert conf.read_text() == text


def test_fix_refuses_what_it_did_not_open_as_a_file(cli: Cli, tmp_path: Path) -> None:
    conf = tmp_path / "sysctl.d" / "10-a.conf"
    conf.parent.mkdir()
    conf.write_text(DEFECTS)
    link = tmp_path / "link.conf"
    link.symlink_to(conf)
    for args, fragment in (
        (["-"], "standard input"),
        ([conf.parent], "is a directory"),
        ([link], "symbolic link"),
    ):
        result = invoke("check", *args, "--fix", input=DEFECTS)
        assert_one_line_error(result.exit_code, result.stderr, fragment)
    result = cli("check", conf, "--fix", "--write-baseline", tmp_path / "b.json")
    assert_one_line_error(result.exit_code, result.stderr, "--write-baseline")
    assert conf.read_text() == DEFECTS


def test_fix_touches_only_the_files_given(cli: Cli, tmp_path: Path) -> None:
    """--whole-directory reads the rest of the directory; --fix rewrites only the file named."""
    directory = tmp_path / "sysctl.d"
    directory.mkdir()
    given, other = directory / "10-a.conf", directory / "20-b.conf"
    given.write_text(DEFECTS)
    other.write_text(DEFECTS)
    cli("check", given, "--whole-directory", "--fix")
    assert given.read_text() != DEFECTS
    assert other.read_text() == DEFECTS


# The property: files with these defects, fixed, hold none of the fixed findings, and the
# kernel is handed the same values.
_KEYS = {
    "net.ipv4.tcp_fin_timeout": 1,
    "net.core.somaxconn": 1,
    "vm.swappiness": 1,
    "net.ipv4.tcp_rmem": 3,
    "net.ipv4.tcp_wmem": 3,
}
_number = st.tuples(st.integers(0, 70000), st.sampled_from(["{}", "0{:o}", "0x{:x}", "0X{:X}"]))
_comment = st.text("abcxyz -_#", min_size=0, max_size=12).map(lambda t: "#" + t)


@st.composite
def _line(draw: st.DrawFn) -> str:
    key = draw(st.sampled_from(sorted(_KEYS)))
    fields = [
        f.format(n) for n, f in draw(st.lists(_number, min_size=_KEYS[key], max_size=_KEYS[key]))
    ]
    value = draw(st.sampled_from([" ", "\t", "  "])).join(fields)
    comment = draw(st.one_of(st.just(""), _comment.map(lambda c: " " + c)))
    return f"{key} = {value}{comment}"


def _applied(text: str) -> dict[str, tuple[tuple[int, ...] | None, tuple[int, ...] | None]]:
    """What each tool leaves in force once the file is applied, by key: systemd-sysctl writes
    only a key's last line; `sysctl -p` writes every line in order, a line the kernel refuses
    leaving the value before it (None: the line changed nothing, the key's value is as it was)."""
    catalog = load_knowledge().catalog
    assignments, _, _ = parse_conf_lines(text)
    last: dict[str, tuple[int, ...] | None] = {}
    in_order: dict[str, tuple[int, ...] | None] = {}
    for a in assignments:
        stored = taken(catalog, a.key, a.value, None, None)
        last[a.key] = stored
        in_order[a.key] = stored if stored is not None else in_order.get(a.key)
    return {key: (last[key], in_order[key]) for key in last}


@settings(max_examples=25, deadline=None)
@given(st.lists(_line(), min_size=1, max_size=8))
@example(["vm.swappiness = 0", "vm.swappiness = 1", "vm.swappiness = 201"])  # 201 refused
@example(["net.ipv4.tcp_rmem = 0 0 0", "net.ipv4.tcp_rmem = 0 0 0"])  # the same, refused
def test_fixed_files_hold_none_of_the_fixed_findings(lines: list[str]) -> None:
    text = "\n".join(lines) + "\n"
    with tempfile.TemporaryDirectory() as directory:
        conf = Path(directory) / "a.conf"
        conf.write_text(text)
        invoke("check", conf, "--fix")
        fixed = conf.read_text()
        again = invoke("check", conf, "-f", "json")
    left = [f for f in json.loads(again.stdout)["findings"] if f["id"] in FIXES]
    # a duplicate whose later line the kernel may refuse stays: `sysctl -p` keeps the earlier
    # line then, so dropping it is not certain (its message says what each tool keeps)
    declined = [
        f for f in left if f["id"] == "check.duplicate-key" and "may refuse" in f["message"]
    ]
    assert left == declined, (text, fixed)
    assert _applied(fixed) == _applied(text)


# --- completion --------------------------------------------------------------------------------


def _complete(words: str) -> list[str]:
    """What bash completion offers for the last word (typer's completion protocol)."""
    env = dict(os.environ, _SYSCTL_ADVISOR_COMPLETE="complete_bash")
    env |= {"COMP_WORDS": words, "COMP_CWORD": str(len(words.split()) - 1)}
    script = Path(sys.executable).with_name("sysctl-advisor")
    done = subprocess.run(
        [script], env=env, capture_output=True, text=True, timeout=HANG_SECONDS, check=True
    )
    return done.stdout.split()


def test_completion_offers_profiles_keys_and_rule_ids(kb: KnowledgeBase) -> None:
    assert _complete("sysctl-advisor recommend -p frontend-pr") == ["frontend-proxy"]
    assert "redis" in _complete("sysctl-advisor check x.conf -p re")
    assert _complete("sysctl-advisor explain net.core.somaxco") == ["net.core.somaxconn"]
    glob = sorted(i for i in kb.check_rules if i.startswith("check.glob"))
    assert _complete("sysctl-advisor check x.conf --select check.glob") == glob
    assert _complete(
        "sysctl-advisor check x.conf --ignore check.tw-recycle-enabled,check.glob-e"
    ) == ["check.tw-recycle-enabled,check.glob-everything"]


def test_rule_ids_and_profiles_complete_without_the_knowledge_base(kb: KnowledgeBase) -> None:
    """Offered from the shipped files' names, which are the ids the loaded files declare."""
    code = (
        "import sys\n"
        "from sysctl_advisor.commands.completion import check_rule_ids, profile_names\n"
        "print(' '.join(check_rule_ids('check.') + profile_names('')))\n"
        "print(any(m.startswith('sysctl_advisor.knowledge.') and m != "
        "'sysctl_advisor.knowledge.resources' for m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG_SECONDS
    )
    names, loaded = done.stdout.splitlines()
    assert loaded == "False"
    shipped_rules = {i for i, r in kb.check_rules.items() if "rules/check/" in str(r.path)}
    assert set(names.split()) == shipped_rules | set(kb.profiles)
