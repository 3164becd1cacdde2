"""`check` of a stock distribution's sysctl trees, as a new user runs it first. The
trees in tests/fixtures/distro-trees/ hold the files the distributions ship (their README says
where each comes from); the links they ship are made here, at test time."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.sources.sysctl_files import read_tree
from tests.conftest import TESTS, Cli

TREES = TESTS / "fixtures" / "distro-trees"
NAMES = ["debian", "fedora", "opensuse", "arch", "alpine"]
# The links each distribution ships (Debian's and Fedora's systemd packages install
# /etc/sysctl.d/99-sysctl.conf -> ../sysctl.conf).
LINKS = {
    "debian": {"etc/sysctl.d/99-sysctl.conf": "../sysctl.conf"},
    "fedora": {"etc/sysctl.d/99-sysctl.conf": "../sysctl.conf"},
}


def _tree(name: str, tmp_path: Path) -> Path:
    tree = tmp_path / name
    shutil.copytree(TREES / name, tree, symlinks=True)
    for link, target in LINKS.get(name, {}).items():
        (tree / link).parent.mkdir(parents=True, exist_ok=True)
        (tree / link).symlink_to(target)
    return tree


def test_every_tree_is_described() -> None:
    readme = (TREES / "README.md").read_text()
    for name in NAMES:
        assert (TREES / name).is_dir() and f"## {name}" in readme, name


@pytest.mark.parametrize("name", NAMES)
def test_a_stock_tree_is_clean(cli: Cli, name: str, tmp_path: Path) -> None:
    tree = _tree(name, tmp_path)
    result = cli("check", str(tree))
    assert result.exit_code == 0, result.stdout + result.stderr
    result = cli("check", str(tree), "--fail-on", "info", "-f", "json")
    findings = json.loads(result.stdout)["findings"]
    # no info noise for keys the kernel has: every key these trees set is known
    noise = [f for f in findings if f["id"] in ("check.unknown-key", "check.misspelt-key")]
    assert not noise, noise
    assert all(f["severity"] != "error" for f in findings), findings


@pytest.mark.parametrize("name", ["debian", "fedora"])
def test_the_sysctl_d_directory_with_its_link_is_clean(cli: Cli, name: str, tmp_path: Path) -> None:
    """The first command the issue's user ran: `check /etc/sysctl.d /etc/sysctl.conf` (exit 1:
    the link to ../sysctl.conf was 'out of the tree'), and `check /etc/sysctl.d` (exit 2)."""
    tree = _tree(name, tmp_path)
    conf_d, conf = tree / "etc" / "sysctl.d", tree / "etc" / "sysctl.conf"
    for args in ([str(conf_d), str(conf)], [str(conf_d)]):
        result = cli("check", *args, "-f", "json")
        assert result.exit_code == 0, result.stdout + result.stderr
        report = json.loads(result.stdout)
        assert not report["findings"]
        assert any(f.endswith("etc/sysctl.d/99-sysctl.conf") for f in report["files"])


@pytest.mark.parametrize("name", NAMES)
def test_every_key_a_stock_tree_sets_is_one_the_catalog_knows(
    name: str, tmp_path: Path, kb: KnowledgeBase
) -> None:
    config = read_tree(_tree(name, tmp_path))
    assert config.values, name
    for key in config.values:
        assert key in kb.catalog.keys or kb.catalog.is_known(key), (name, key)


def test_the_facts_collector_reads_a_copied_tree_as_check_does(tmp_path: Path) -> None:
    """`facts --root` of a copied Debian tree: the 99-sysctl.conf link is followed into
    etc/sysctl.conf; a link to the copy's /home is not read."""
    from sysctl_advisor.sources.local_host import collect_data

    tree = _tree("debian", tmp_path)
    with (tree / "etc" / "sysctl.conf").open("a") as conf:
        conf.write("net.core.somaxconn = 4096\n")
    (tree / "home" / "user").mkdir(parents=True)
    (tree / "home" / "user" / "x.conf").write_text("net.ipv4.tcp_fin_timeout = 7\n")
    (tree / "etc" / "sysctl.d" / "50-home.conf").symlink_to("/home/user/x.conf")
    (tree / "proc").mkdir()
    (tree / "proc" / "meminfo").write_text("MemTotal: 8000000 kB\n")
    data = collect_data(["net.core.somaxconn", "net.ipv4.tcp_fin_timeout"], tree)
    line = len((tree / "etc" / "sysctl.conf").read_text().splitlines())
    assert data["sysctl_files"] == {"net.core.somaxconn": f"etc/sysctl.conf:{line}"}


def test_a_line_read_through_the_link_and_given_itself_is_reported_once(
    cli: Cli, tmp_path: Path
) -> None:
    tree = _tree("debian", tmp_path)
    conf = tree / "etc" / "sysctl.conf"
    with conf.open("a") as out:
        out.write("net.ipv4.tcp_tw_recycle = 1\n")
    result = cli(
        "check", str(tree / "etc" / "sysctl.d"), str(conf), "-f", "json", "--kernel", "4.4"
    )
    findings = json.loads(result.stdout)["findings"]
    assert [f["id"] for f in findings] == ["check.tw-recycle-enabled"], findings
    # the same file named twice is checked twice, as asked
    result = cli("check", str(conf), str(conf), "-f", "json", "--kernel", "4.4")
    assert len(json.loads(result.stdout)["findings"]) == 2
