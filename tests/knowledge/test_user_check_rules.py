"""A --rules-dir also brings check rules (its check/ folder), under the same
strict schema and sandbox as the shipped ones; a colleague's rule cannot shadow a shipped one."""

from __future__ import annotations

from pathlib import Path

from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from tests.conftest import Cli

RULE = """id: check.site-somaxconn-floor
severity: warning
title: somaxconn below the site's floor
keys: [net.core.somaxconn]
when: "numbers is not none and numbers[0] < 4096"
message: >-
  net.core.somaxconn = {{ value }} is below the site's floor of 4096.
rationale: >-
  Our load balancers hold 4,096 connections per listener.
references:
  - "linux-6-18-doc-ip-sysctl: somaxconn"
examples:
  fires: "net.core.somaxconn = 128\\n"
  quiet: "net.core.somaxconn = 4096\\n"
"""


def _dir(tmp_path: Path, name: str, text: str) -> Path:
    rules = tmp_path / "site-rules"
    (rules / "check").mkdir(parents=True, exist_ok=True)
    (rules / "check" / name).write_text(text)
    return rules


def test_a_rules_dir_check_rule_is_loaded_beside_the_shipped_ones(cli: Cli, tmp_path: Path) -> None:
    rules = _dir(tmp_path, "site-somaxconn-floor.yaml", RULE)
    kb = KnowledgeBase.load([rules])
    assert "check.site-somaxconn-floor" in kb.check_rules
    assert "check.tw-recycle-enabled" in kb.check_rules
    listed = cli("rules", "--rules-dir", str(rules))
    assert listed.exit_code == 0 and "check.site-somaxconn-floor" in listed.stdout


def test_a_rules_dir_cannot_shadow_a_shipped_check_rule(cli: Cli, tmp_path: Path) -> None:
    text = RULE.replace("check.site-somaxconn-floor", "check.tw-recycle-enabled")
    rules = _dir(tmp_path, "tw-recycle-enabled.yaml", text)
    result = cli("rules", "--rules-dir", str(rules))
    assert result.exit_code == 2
    assert "duplicate check rule id 'check.tw-recycle-enabled'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_user_check_rule_meets_the_same_schema(cli: Cli, tmp_path: Path) -> None:
    for bad, words in (
        (RULE.replace("severity: warning", "severity: fatal"), "severity"),
        (RULE + "extra: 1\n", "extra"),
        (RULE.replace("check.site-somaxconn-floor", "site.floor"), "family"),
    ):
        rules = _dir(tmp_path / words, "rule.yaml", bad)
        result = cli("rules", "--rules-dir", str(rules))
        assert result.exit_code == 2, (words, result.stdout)
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_check_runs_a_rules_dir_check_rule_on_the_files(cli: Cli, tmp_path: Path) -> None:
    rules = _dir(tmp_path, "site-somaxconn-floor.yaml", RULE)
    conf = tmp_path / "90-site.conf"
    conf.write_text("net.core.somaxconn = 128\n")
    found = cli("check", str(conf), "--rules-dir", str(rules))
    assert "check.site-somaxconn-floor" in found.stdout and found.exit_code == 0  # a warning
    failed = cli("check", str(conf), "--rules-dir", str(rules), "--fail-on", "warning")
    assert failed.exit_code == 1
    conf.write_text("net.core.somaxconn = 4096\n")
    quiet = cli("check", str(conf), "--rules-dir", str(rules))
    assert quiet.exit_code == 0 and "check.site-somaxconn-floor" not in quiet.stdout


def test_a_user_check_rule_runs_in_the_sandbox(cli: Cli, tmp_path: Path) -> None:
    """An expression reaching for Python internals is refused when it runs: one line, exit 2,
    naming the line checked and the rule, never a traceback."""
    escape = RULE.replace('numbers[0] < 4096"', 'numbers.__class__.__mro__"')
    rules = _dir(tmp_path, "escape.yaml", escape)
    conf = tmp_path / "90-site.conf"
    conf.write_text("net.core.somaxconn = 128\n")
    result = cli("check", str(conf), "--rules-dir", str(rules))
    assert result.exit_code == 2, result.stdout
    assert (
        "check.site-somaxconn-floor" in result.stderr and "refused by the sandbox" in result.stderr
    )
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_user_check_rule_title_holds_no_terminal_escape(cli: Cli, tmp_path: Path) -> None:
    """A colleague's check rule reaches terminals (`rules`, `check`): an ESC sequence in its
    title is refused at load, as in every knowledge file, with one line naming the file, the
    line and the field, exit 2."""
    import yaml

    escape = chr(27) + "[31m"  # built here: no escape byte sits in this file
    rule = yaml.safe_load(RULE)
    rule["title"] = f"somaxconn below the site's floor{escape}"
    rules = _dir(tmp_path, "escape.yaml", yaml.safe_dump(rule))
    line = next(
        n
        for n, text in enumerate((rules / "check" / "escape.yaml").read_text().splitlines(), 1)
        if text.startswith("title:")
    )
    for args in (["rules"], ["check", str(tmp_path / "none.conf")]):
        result = cli(*args, "--rules-dir", str(rules))
        assert result.exit_code == 2, result.stdout
        assert escape not in result.stdout + result.stderr
        assert f"escape.yaml:{line}: title: " in result.stderr, result.stderr
        assert "U+001B" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
