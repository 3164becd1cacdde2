"""Every command is a plain function: called without typer it takes the options as arguments,
writes its result and returns the exit code the CLI would exit with; bad input is an
InputError, which `guarded` turns into one line and exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from sysctl_advisor.commands.check import check
from sysctl_advisor.commands.common import guarded
from sysctl_advisor.commands.diff import diff
from sysctl_advisor.commands.explain import explain, profiles, rules
from sysctl_advisor.commands.facts import facts
from sysctl_advisor.commands.recommend import recommend
from sysctl_advisor.model.errors import InputError
from tests.conftest import EXAMPLES, TESTS, load_facts

DCACHE = EXAMPLES / "dcache-32bit.yaml"
EC2 = EXAMPLES / "ec2-nginx-frontend.yaml"


def test_recommend_and_diff(tmp_path: Path) -> None:
    out = tmp_path / "90-advisor.conf"
    assert recommend("gridftp", DCACHE, fmt="conf", output=out) == 0
    assert "net.ipv4.tcp_rmem" in out.read_text()
    layered = TESTS / "fixtures" / "sysctl-trees" / "layered"
    assert diff("frontend-proxy", EC2, current=layered, fmt="json", output=tmp_path / "d") == 1
    assert '"drift"' in (tmp_path / "d").read_text()


def test_check_returns_the_cli_exit_codes(tmp_path: Path) -> None:
    bad = tmp_path / "bad.conf"
    bad.write_text("net.ipv4.tcp_tw_recycle = 1\n")
    good = tmp_path / "good.conf"
    good.write_text("net.ipv4.tcp_fin_timeout = 30\n")
    assert check([bad], kernel="4.4.0", output=tmp_path / "r1") == 1
    assert check([good], kernel="4.4.0", output=tmp_path / "r2") == 0
    assert check([bad], kernel="4.4.0", fail_on="error", fmt="json", output=tmp_path / "r3") == 1


def test_facts_explain_profiles_rules(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = next(p for p in sorted((TESTS / "fixtures" / "hosts").iterdir()) if p.is_dir())
    out = tmp_path / "host.yaml"
    assert facts(root, "yaml", out) == 0
    assert load_facts(out).memory.total > 0
    assert explain("tcp_mem") == 0 and "net.ipv4.tcp_mem" in capsys.readouterr().out
    assert profiles() == 0 and "gridftp" in capsys.readouterr().out
    assert rules("check.tw-recycle-enabled") == 0 and "fires on" in capsys.readouterr().out


def test_bad_input_is_an_input_error_and_guarded_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(InputError, match="--set"):
        recommend("gridftp", DCACHE, settings=["no-equals-sign"])
    assert guarded(lambda: recommend("no-such-profile", DCACHE)) == 2
    err = capsys.readouterr().err
    assert err.startswith("sysctl-advisor: error:") and err.count("\n") == 1
    assert guarded(lambda: check([tmp_path / "missing.conf"])) == 2
