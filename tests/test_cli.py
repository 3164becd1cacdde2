"""The command line: outputs, exit codes, one-line errors for bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sysctl_advisor import __version__
from tests.conftest import EXAMPLES, Cli, assert_one_line_error, invoke

DCACHE = str(EXAMPLES / "dcache-32bit.yaml")


def run(*args: str) -> tuple[int, str, str]:
    result = invoke(*args)
    return result.exit_code, result.stdout, result.stderr


def test_version() -> None:
    code, out, _ = run("--version")
    assert code == 0 and out.strip() == f"sysctl-advisor {__version__}"


def test_recommend_conf_is_loadable_and_annotated() -> None:
    code, out, _ = run("recommend", "--facts", DCACHE, "--profile", "gridftp")
    assert code == 0
    assert "net.ipv4.tcp_mem = 21504 28672 43008" in out
    assert f"# rebuild:  sysctl-advisor recommend --facts {DCACHE} --profile gridftp" in out
    for line in out.splitlines():  # procps syntax: comments or key = value, no inline comments
        assert not line or line.startswith("#") or ("=" in line and "#" not in line)


def test_recommend_json_contract() -> None:
    code, out, _ = run("recommend", "--facts", DCACHE, "--profile", "gridftp", "--format", "json")
    assert code == 0
    plan = json.loads(out)
    assert plan["schema"] == "sysctl-advisor/plan/v1"
    assert set(plan["host"]) >= {"hostname", "kernel", "arch", "bits", "memory_total"}
    assert plan["host"]["bits"] == 32 and plan["host"]["memory_total"] == 8 * 2**30
    assert plan["profile"]["name"] == "gridftp" and plan["profile"]["params"]["streams"] == 20
    rmem = next(s for s in plan["settings"] if s["key"] == "net.ipv4.tcp_rmem")
    assert rmem["value"] == "4096 87380 1048576" and rmem["values"] == [4096, 87380, 1048576]
    assert rmem["unit"] == "bytes" and rmem["current"] == "4096 87380 4194304"
    assert rmem["kernel_default"] == "4096 87380 3670016"
    assert "tcp-buffers.bdp" in rmem["rules"] and rmem["rationale"] and rmem["references"]
    assert {"id", "severity", "key", "message"} <= set(plan["findings"][0])
    assert {"target", "setting", "rationale"} <= set(plan["companions"][0])


def test_set_changes_params_and_output() -> None:
    code, out, _ = run(
        "recommend", "--facts", DCACHE, "-p", "gridftp", "--set", "transfers=10", "-f", "json"
    )
    assert code == 0
    plan = json.loads(out)
    assert plan["profile"]["params"]["transfers"] == 10
    rmem = next(s for s in plan["settings"] if s["key"] == "net.ipv4.tcp_rmem")
    # ten concurrent transfers: 400 sockets share the lowmem budget (a stream alone would
    # need 1 MiB, which the default transfers=1 plan gives)
    assert rmem["values"][2] == 262144 and rmem["capped_by"] == ["lowmem.buffer-budget"]


def test_markdown() -> None:
    code, out, _ = run("recommend", "--facts", DCACHE, "--profile", "gridftp", "-f", "markdown")
    assert code == 0 and "| key | kernel default | recommended | why |" in out


def test_output_written_atomically(tmp_path: Path) -> None:
    target = tmp_path / "90-advisor.conf"
    target.write_text("old\n")
    code, out, _ = run("recommend", "--facts", DCACHE, "-p", "gridftp", "-o", str(target))
    assert code == 0 and out == ""
    assert target.read_text().startswith("# sysctl.conf for dcache-07")
    assert [p.name for p in tmp_path.iterdir()] == ["90-advisor.conf"]  # no temp files left


def test_same_input_same_bytes() -> None:
    first = run("recommend", "--facts", DCACHE, "-p", "gridftp", "-f", "json")[1]
    assert first == run("recommend", "--facts", DCACHE, "-p", "gridftp", "-f", "json")[1]


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--profile", "gridtfp"], ["unknown profile 'gridtfp' (did you mean gridftp?)"]),
        (["--profile", "gridftp", "--set", "streams=many"], ["--set streams", "integer"]),
        (["--profile", "gridftp", "--set", "streams=0"], ["--set streams", "below the minimum"]),
        (["--profile", "gridftp", "--set", "bogus=1"], ["unknown parameter 'bogus'"]),
        (["--profile", "gridftp", "--set", "streams"], ["NAME=VALUE"]),
    ],
)
def test_bad_arguments(args: list[str], fragments: list[str]) -> None:
    code, _, err = run("recommend", "--facts", DCACHE, *args)
    assert_one_line_error(code, err, *fragments)


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("memory: {total: 8 GiB\n", ["facts.yaml:", "invalid YAML"]),
        ("hostname: x\n", ["facts.yaml", "memory", "required field missing"]),
        ("memory:\n  total: -5\n", ["facts.yaml:2", "memory.total", "positive"]),
        ("memory:\n  total: lots\n", ["facts.yaml:2", "memory.total", "cannot read 'lots'"]),
        ("memory:\n  total: 8 GiB\nkernel: banana\n", ["kernel version", "banana"]),
        ("memory: {total: 8 GiB}\nmemroy: 1\n", ["facts.yaml:2", "memroy", "unknown field"]),
        ("- 1\n- 2\n", ["facts.yaml", "mapping"]),
    ],
)
def test_bad_facts(tmp_path: Path, text: str, fragments: list[str]) -> None:
    path = tmp_path / "facts.yaml"
    path.write_text(text)
    code, _, err = run("recommend", "--facts", str(path), "--profile", "base")
    assert_one_line_error(code, err, *fragments)


def test_missing_facts_file(tmp_path: Path) -> None:
    code, _, err = run("recommend", "--facts", str(tmp_path / "none.yaml"), "--profile", "base")
    assert_one_line_error(code, err, "none.yaml", "no such file")


RULE = """id: custom.test
title: A test rule
description: A rule written by a user, to check errors name the file and field.
set:
  net.core.somaxconn: "{expr}"
rationale: test
references: [linux-6-18-doc-ip-sysctl]
"""


@pytest.mark.parametrize(
    ("expr", "fragments"),
    [
        ("facts.__class__.__mro__", ["custom.yaml", "set.net.core.somaxconn", "sandbox"]),
        ("1 +", ["custom.yaml", "set.net.core.somaxconn", "invalid expression"]),
        ("no_such_name + 1", ["custom.yaml", "set.net.core.somaxconn", "undefined"]),
        ("[1, 2]", ["custom.yaml", "set.net.core.somaxconn", "expected one number"]),
        ("'many'", ["custom.yaml", "set.net.core.somaxconn", "expected a number"]),
    ],
)
def test_bad_rule_expressions(tmp_path: Path, expr: str, fragments: list[str]) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "custom.yaml").write_text(RULE.format(expr=expr))
    code, _, err = run(
        "recommend", "--facts", DCACHE, "--profile", "base", "--rules-dir", str(rules)
    )
    if code == 0:  # a custom rule only runs when a profile enables it
        code, _, err = run(
            "recommend",
            "--facts",
            DCACHE,
            "--profile",
            "custom",
            "--rules-dir",
            str(rules),
            "--profiles-dir",
            str(_profile(tmp_path)),
        )
    assert_one_line_error(code, err, *fragments)


def _profile(tmp_path: Path) -> Path:
    d = tmp_path / "profiles"
    d.mkdir(exist_ok=True)
    (d / "custom.yaml").write_text(
        "name: custom\nsummary: test\nextends: base\nrules: [custom.test]\n"
    )
    return d


def test_rule_schema_error_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").write_text(
        "id: custom.broken\ntitle: t\ndescription: d\nrationale: r\n"
        "references: [linux-6-18-doc-ip-sysctl]\nsett: {}\n"
    )
    code, _, err = run("rules", "--rules-dir", str(tmp_path))
    assert_one_line_error(code, err, "broken.yaml:6", "sett", "unknown field")


def test_rule_unknown_key(tmp_path: Path) -> None:
    (tmp_path / "k.yaml").write_text(RULE.format(expr="1").replace("net.core.somaxconn", "net.x.y"))
    code, _, err = run("rules", "--rules-dir", str(tmp_path))
    assert_one_line_error(code, err, "k.yaml", "unknown key 'net.x.y'")


@pytest.mark.parametrize(
    ("where", "source"),
    [
        ("when", "params.rtt_msec is defined"),  # gridftp's is rtt_ms
        ("set.net.core.somaxconn", "params['listen_backlogg'] or 1"),
        ("rationale", "{{ params.streams }} streams, {{ params.stream }} of them"),
    ],
)
def test_a_rule_reading_an_undeclared_parameter_fails_at_load(
    tmp_path: Path, where: str, source: str
) -> None:
    """A misspelt parameter would make `params.X is defined` never hold and
    the rule never fire; loading names the rule file and field instead."""
    rules = tmp_path / "rules" / "custom"
    rules.mkdir(parents=True)
    rule = RULE.format(expr="1") if where != "set.net.core.somaxconn" else RULE.format(expr=source)
    if where == "when":
        rule += f"when: {source!r}\n"
    if where == "rationale":
        rule = rule.replace("rationale: test", f"rationale: {source!r}")
    (rules / "test.yaml").write_text(rule)
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "custom.yaml").write_text(
        "name: custom\nsummary: test\nextends: gridftp\nrules: [custom.test]\n"
    )
    code, _, err = run(
        *["rules", "--rules-dir", str(tmp_path / "rules"), "--profiles-dir", str(profiles)]
    )
    assert_one_line_error(code, err, "test.yaml", where, "params.", "custom")


def test_a_rule_outside_its_familys_folder_fails_at_load(tmp_path: Path) -> None:
    rules = tmp_path / "rules" / "time-wait"
    rules.mkdir(parents=True)
    (rules / "test.yaml").write_text(RULE.format(expr="1"))  # id custom.test
    code, _, err = run("rules", "--rules-dir", str(tmp_path / "rules"))
    assert_one_line_error(code, err, "test.yaml", "id", "custom.test", "time-wait")
    (tmp_path / "rules" / "custom").mkdir()
    (rules / "test.yaml").rename(tmp_path / "rules" / "custom" / "test.yaml")
    assert run("rules", "--rules-dir", str(tmp_path / "rules"))[0] == 0


def test_profile_errors(tmp_path: Path) -> None:
    d = tmp_path / "p"
    d.mkdir()
    (d / "loop.yaml").write_text("name: loop\nsummary: s\nextends: loop\n")
    code, _, err = run("profiles", "--profiles-dir", str(d))
    assert_one_line_error(code, err, "loop.yaml", "loops")


def test_profiles_and_rules_lists() -> None:
    code, out, _ = run("profiles")
    assert code == 0
    for name in ("base", "frontend-proxy", "gridftp", "c1m-server"):
        assert f"{name}:" in out
    assert "rtt_ms (float ms, 0.01..10000; default 125)" in out
    code, out, _ = run("rules")
    assert code == 0 and "tcp-buffers.bdp" in out
    code, out, _ = run("rules", "tcp-buffers.bdp")
    assert (
        code == 0
        and "Tuning Systems for TCP/IP Performance on High Latency Networks" in out
        and "gridftp" in out
    )


def test_explain() -> None:
    code, out, _ = run("explain", "tcp_mem")
    assert code == 0
    assert out.startswith("net.ipv4.tcp_mem") and "pages" in out and "tcp-mem.ram-cap" in out
    code, out, _ = run("explain", "net.ipv4.tcp_mem", "--facts", DCACHE, "--profile", "gridftp")
    assert code == 0
    assert "Profile gridftp: net.ipv4.tcp_mem = 21504 28672 43008" in out
    assert "86016 114688 172032" in out
    assert "  pods:      set on the node" in out
    code, out, _ = run("explain", "tcp_rmem")
    assert "copies the initial namespace's value from 4.15" in out
    assert "safe sysctl from Kubernetes 1.32 on kernel 4.15+" in out
    code, out, _ = run("explain", "somaxconn")
    assert "unsafe through Kubernetes" in out and "starts from the kernel default" in out
    code, _, err = run("explain", "net.nope")
    assert_one_line_error(code, err, "unknown key 'net.nope'")


def _entry(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str, str]:
    """Through the real entry point (usage errors become one line there)."""
    import sys

    from sysctl_advisor.cli import main

    monkeypatch.setattr(sys, "argv", ["sysctl-advisor", *args])
    with pytest.raises(SystemExit) as stopped:
        main()
    captured = capsys.readouterr()
    return int(stopped.value.code or 0), captured.out, captured.err


def test_closed_choices_are_listed_and_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--format and --fail-on offer exactly the renderers'
    registry (outputs/formats.py) and the severities (and never); help lists them, a wrong one
    is one line and exit 2."""
    from sysctl_advisor.cli_options import command
    from sysctl_advisor.model.severity import NEVER, SEVERITY_ORDER
    from sysctl_advisor.outputs import formats

    registry = {"recommend": formats.RECOMMEND, "diff": formats.DIFF, "check": formats.CHECK}
    registry["facts"] = formats.FACTS
    for name, choices in registry.items():
        found = command(name)
        assert found is not None and found.options["fmt"].choices == choices
    found = command("check")
    assert found is not None and set(found.options["fail_on"].choices) == {*SEVERITY_ORDER, NEVER}
    code, out, _ = _entry(monkeypatch, capsys, "check", "-h")
    assert (
        code == 0
        and "<text|json|github|sarif|markdown>" in out
        and "<error|warning|info|never>" in out
    )
    code, _, err = _entry(
        monkeypatch, capsys, "recommend", "--facts", DCACHE, "-p", "gridftp", "-f", "xml"
    )
    assert_one_line_error(code, err, "--format", "'xml'")


def test_short_help_version_and_completion(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _entry(monkeypatch, capsys, "-V")
    assert code == 0 and out.strip() == f"sysctl-advisor {__version__}"
    code, out, _ = _entry(monkeypatch, capsys, "-h")
    assert code == 0 and "--install-completion" in out and "--quiet" in out
    code, out, _ = _entry(monkeypatch, capsys, "recommend", "-h")
    assert code == 0 and "--profile NAME" in out and "--rules-dir DIR" in out
    for command, argument in (("check", "PATH"), ("explain", "KEY"), ("rules", "RULE_ID")):
        code, out, _ = _entry(monkeypatch, capsys, command, "-h")
        arguments = out.split("Arguments:")[1].split("Options:")[0]
        assert code == 0 and arguments.split()[0] == argument, arguments
        assert "<" not in arguments and "list[" not in out, arguments  # no Python type names
    for command in ("recommend", "diff", "facts", "check", "fleet", "calibrate", "explain"):
        code, out, _ = _entry(monkeypatch, capsys, command, "-h")
        python_types = re.findall(r"<(?:str|int|float|bool|int range|list\[\w+\])>", out)
        assert code == 0 and not python_types, (command, python_types)


def test_rules_lists_and_shows_check_rules() -> None:
    code, out, _ = run("rules")
    assert code == 0 and "Check rules (check):" in out and "check.tw-recycle-enabled" in out
    code, out, _ = run("rules", "check.tw-recycle-enabled")
    assert code == 0 and out.startswith("check.tw-recycle-enabled (error):") and "fires on:" in out
    code, out, _ = run("rules", "check.byte-order-mark")
    assert code == 0 and "\\ufeff" in out and "\ufeff" not in out  # shown, not hidden


def test_quiet_keeps_results_and_drops_notes(cli: Cli, tmp_path: Path) -> None:
    tree = str(Path(__file__).parent / "fixtures" / "ansible" / "tree")
    loud = cli("fleet", "--ansible-facts", tree, "-p", "base", "--out", str(tmp_path / "a"))
    quiet = cli("-q", "fleet", "--ansible-facts", tree, "-p", "base", "--out", str(tmp_path / "b"))
    assert loud.exit_code == quiet.exit_code and "hosts written to" in loud.stderr
    assert "hosts written to" not in quiet.stderr and "skipped" not in quiet.stderr
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == sorted(
        p.name for p in (tmp_path / "b").iterdir()
    )


def test_check_text_is_coloured_only_when_asked(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = tmp_path / "x.conf"
    conf.write_text("net.ipv4.tcp_tw_recycle = 1\n")
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert "\x1b[" in cli("check", str(conf)).stdout
    assert "\x1b[" not in cli("check", str(conf), "-f", "json").stdout
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in cli("check", str(conf)).stdout


def test_check_knows_rhel6_backported_reserved_ports(tmp_path: Path) -> None:
    """ip_local_reserved_ports is 2.6.35 upstream, and in RHEL 6's 2.6.32 from its first
    release: an error for a vanilla 2.6.32, nothing for RHEL 6."""
    conf = tmp_path / "ports.conf"
    conf.write_text("net.ipv4.ip_local_reserved_ports = 11211\n")
    code, out, _ = run("check", "--kernel", "2.6.32-754.el6.x86_64", str(conf))
    assert code == 0 and "no findings" in out
    code, out, _ = run("check", "--kernel", "2.6.32.61", str(conf))
    assert code == 1 and "check.key-not-in-kernel" in out


@pytest.mark.parametrize(
    ("profile", "facts", "settings"),
    [
        ("frontend-proxy", "ec2-nginx-frontend.yaml", ["listen_backlog=65535"]),
        ("gridftp", "dtn-10g.yaml", ["rtt_ms=200", "streams=1"]),
    ],
)
def test_check_takes_the_set_recommend_took(
    tmp_path: Path, profile: str, facts: str, settings: list[str]
) -> None:
    """A conf written by `recommend --set` departs from the profile's defaults, and not from
    the same profile run with the same --set."""
    conf, facts_file = tmp_path / "made.conf", str(EXAMPLES / facts)
    sets = [arg for pair in settings for arg in ("--set", pair)]
    made = ["--facts", facts_file, "--profile", profile]
    assert run("recommend", *made, *sets, "--output", str(conf))[0] == 0
    code, out, _ = run("check", str(conf), *made, "--format", "json")
    assert code == 0 and "check.departs-from-recommendation" in out
    code, out, _ = run("check", str(conf), *made, *sets, "--format", "json")
    assert code == 0 and "check.departs-from-recommendation" not in out, out


def test_check_set_needs_a_profile_and_a_known_parameter(tmp_path: Path) -> None:
    conf = tmp_path / "x.conf"
    conf.write_text("net.core.somaxconn = 4096\n")
    code, _, err = run("check", str(conf), "--set", "listen_backlog=2048")
    assert_one_line_error(code, err, "--set", "--profile")
    code, _, err = run(
        "check", str(conf), "--facts", DCACHE, "-p", "frontend-proxy", "--set", "bogus=1"
    )
    assert_one_line_error(code, err, "bogus")


TWO_WORKLOADS = (
    *("recommend", "--facts", str(EXAMPLES / "ec2-nginx-frontend.yaml")),
    *("-p", "frontend-proxy", "-p", "c1m-server"),
)


def test_profile_is_repeatable_and_the_rebuild_line_says_each() -> None:
    args = TWO_WORKLOADS
    code, out, _ = run(*args, "-f", "json")
    assert code == 0
    plan = json.loads(out)
    assert plan["profile"]["name"] == "frontend-proxy+c1m-server"
    assert plan["profile"]["workloads"] == ["frontend-proxy", "c1m-server"]
    code, out, _ = run(*args)
    assert code == 0
    assert "--profile frontend-proxy --profile c1m-server" in out
    code, _, err = run(*args, "--set", "redis-nope.x=1")
    assert_one_line_error(code, err, "not a profile of this workload")


def test_several_profiles_name_kubernetes_objects_with_a_valid_label() -> None:
    code, out, _ = run(*TWO_WORKLOADS, "-f", "daemonset")
    assert code == 0
    assert "sysctl-advisor/profile: frontend-proxy.c1m-server" in out
    assert "+" not in "".join(re.findall(r"name: (\S+)", out))


def test_diff_and_explain_take_several_profiles() -> None:
    facts = str(EXAMPLES / "app-node.yaml")
    profiles = ("-p", "redis", "-p", "postgresql")
    code, out, _ = run("diff", "--facts", facts, *profiles, "-f", "json")
    assert code == 1  # the host drifts from the plan
    assert json.loads(out)["profile"] == "redis+postgresql"
    code, out, _ = run("explain", "net.ipv4.tcp_max_syn_backlog", "--facts", facts, *profiles)
    assert code == 0
    assert "Profile redis+postgresql: net.ipv4.tcp_max_syn_backlog = 1024" in out
