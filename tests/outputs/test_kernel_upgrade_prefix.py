"""Keys that newer kernels no longer have (tcp_tw_recycle, gone in 4.12; the catalog's `exists`
range says so) are written as plain lines with a comment that says what happens after an
upgrade, not with the `-` prefix: the userland of kernels before 4.12 does not know it.

Measured (procps in `unshare -n`): procps-ng 3.3.15, built from its v3.3.15 tag, reads
`-net.ipv4.tcp_fin_timeout = 23` as a key named "-net.ipv4..." and does not apply it; 3.3.16
and 4.0.2 apply it, but all of them still fail ("cannot stat", non-zero exit) on a `-` line
whose key is missing: WriteSetting() stats the path before it looks at ignore_failure
(src/sysctl.c, v3.3.16 to v4.0.6 and master). systemd-sysctl (>= 243) does ignore it. The
procps and systemd tests below keep the generated comment honest on the tools installed here.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.kernel_version import KernelRange, KernelVersion
from sysctl_advisor.outputs.plan_render import Renderer, removed_in, rendered_settings
from tests.conftest import EXAMPLES, Cli, load_facts
from tests.namespaces import in_namespace, needs_netns

HOST, PROFILE = "ec2-nginx-frontend", "frontend-proxy"  # kernel 3.2, tcp_tw_recycle on


def test_removed_in_is_read_from_the_catalog(kb: KnowledgeBase) -> None:
    gone = {key: removed_in(spec.exists) for key, spec in kb.catalog.keys.items()}
    assert gone["net.ipv4.tcp_tw_recycle"] == "4.12"
    for key, release in gone.items():
        if release is None:
            continue
        exists = KernelRange.parse(kb.catalog.keys[key].exists)
        assert not exists.contains(KernelVersion.parse(release)), key  # gone from that release
    assert KernelRange.parse("<4.12").contains(KernelVersion.parse("4.11.12"))


def test_gone_keys_are_plain_lines_with_the_upgrade_note(kb: KnowledgeBase) -> None:
    plan = build_plan(kb, load_facts(EXAMPLES / f"{HOST}.yaml"), PROFILE)
    text = Renderer(kb.catalog).render(plan, "conf", "cmd")
    lines = text.split("\n")
    gone = [s for s in plan.settings if removed_in(kb.catalog.keys[s.key].exists)]
    assert [s.key for s in gone] == ["net.ipv4.tcp_tw_recycle"]
    at = lines.index("net.ipv4.tcp_tw_recycle = 0")
    note = " ".join(line.lstrip("# ") for line in lines[at - 4 : at])
    assert "Linux 4.12 and later have no net.ipv4.tcp_tw_recycle" in note
    assert "procps before 3.3.16 and systemd before 243" in note
    assert not any(line.startswith("-") for line in lines)
    assert rendered_settings("conf", text) == {s.key: s.value for s in plan.settings}


def test_check_is_clean_now_and_names_the_line_after_an_upgrade(cli: Cli, tmp_path: Path) -> None:
    facts = str(EXAMPLES / f"{HOST}.yaml")
    conf = tmp_path / "90-sysctl-advisor.conf"
    made = cli("recommend", "--facts", facts, "-p", PROFILE, "-o", str(conf))
    assert made.exit_code == 0, made.stderr
    now = cli("check", str(conf), "--kernel", "3.2.0-58-virtual")
    assert now.exit_code == 0, now.stdout
    later = cli("check", str(conf), "--kernel", "4.12.0", "-f", "json")
    assert "check.key-not-in-kernel" in later.stdout
    assert "net.ipv4.tcp_tw_recycle" in later.stdout


@needs_netns
@pytest.mark.skipif(shutil.which("sysctl") is None, reason="needs procps sysctl")
def test_procps_dash_prefix_applies_a_present_key_but_fails_on_a_missing_one(
    tmp_path: Path,
) -> None:
    present = tmp_path / "present.conf"
    present.write_text("-net.ipv4.tcp_fin_timeout = 23\n")
    missing = tmp_path / "missing.conf"
    missing.write_text("-net.ipv4.no_such_key_for_the_test = 1\n")
    applied = in_namespace('sysctl -p "$1"; sysctl -n net.ipv4.tcp_fin_timeout', str(present))
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.split() == ["net.ipv4.tcp_fin_timeout", "=", "23", "23"]
    failed = in_namespace('sysctl -p "$1"', str(missing))
    assert failed.returncode != 0
    assert "cannot stat" in failed.stderr


SYSTEMD_SYSCTL = next(
    (
        p
        for p in ("/usr/lib/systemd/systemd-sysctl", "/lib/systemd/systemd-sysctl")
        if Path(p).exists()
    ),
    None,
)


@needs_netns
@pytest.mark.skipif(SYSTEMD_SYSCTL is None, reason="needs systemd-sysctl")
def test_systemd_sysctl_ignores_a_missing_dash_key_even_when_strict(tmp_path: Path) -> None:
    assert SYSTEMD_SYSCTL is not None
    dashed = tmp_path / "dashed.conf"
    dashed.write_text("-net.ipv4.no_such_key_for_the_test = 1\n")
    plain = tmp_path / "plain.conf"
    plain.write_text("net.ipv4.no_such_key_for_the_test = 1\n")
    ignored = in_namespace('"$1" --strict "$2"', SYSTEMD_SYSCTL, str(dashed))
    assert ignored.returncode == 0, ignored.stderr
    strict = in_namespace('"$1" --strict "$2"', SYSTEMD_SYSCTL, str(plain))
    assert strict.returncode != 0
    logged = in_namespace('"$1" "$2"', SYSTEMD_SYSCTL, str(plain))
    assert logged.returncode == 0 and "no_such_key_for_the_test" in logged.stderr
