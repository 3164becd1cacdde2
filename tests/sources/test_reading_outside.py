"""Links resolve inside the tree they came from, or are reported without
being read; a facts file cannot make the advisor read the controller's files; findings never
quote values of lines that are not sysctl keys. Secrets are planted at test time."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from sysctl_advisor.sources.local_host import collect_data
from tests.conftest import Cli

SECRET = "token=ghp_s3cr3t_value_that_must_not_leak"


def _repo_with_escaping_link(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text(f'[remote "origin"]\n\turl = https://{SECRET}@example\n')
    sysctl_d = repo / "etc" / "sysctl.d"
    sysctl_d.mkdir(parents=True)
    (sysctl_d / "10-good.conf").write_text("net.core.somaxconn = 4096\n")
    (sysctl_d / "20-a.conf").symlink_to("../../.git/config")
    return repo


def test_check_does_not_follow_a_link_out_of_the_tree(cli: Cli, tmp_path: Path) -> None:
    repo = _repo_with_escaping_link(tmp_path)
    for fmt in ("text", "json", "github", "sarif"):
        result = cli("check", str(repo / "etc" / "sysctl.d"), "-f", fmt)
        assert SECRET not in result.stdout and "ghp_" not in result.stdout, fmt
        assert "symlink out of the tree" in result.stdout, fmt


def test_diff_current_does_not_follow_a_link_out_of_the_tree(cli: Cli, tmp_path: Path) -> None:
    repo = _repo_with_escaping_link(tmp_path)
    facts = tmp_path / "facts.yaml"
    facts.write_text(yaml.safe_dump({"memory": {"total": "8 GiB"}}))
    for fmt in ("text", "json", "markdown"):
        result = cli("diff", "--facts", str(facts), "-p", "base", "--current", str(repo), "-f", fmt)
        assert SECRET not in result.stdout and "ghp_" not in result.stdout, fmt


def test_a_directory_link_out_of_the_tree_is_not_read(cli: Cli, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "99-x.conf").write_text(f"url = {SECRET}\nnet.core.somaxconn = 1\n")
    tree = tmp_path / "tree"
    (tree / "etc").mkdir(parents=True)
    (tree / "etc" / "sysctl.d").symlink_to(outside)
    (tree / "usr" / "lib" / "sysctl.d").mkdir(parents=True)
    (tree / "usr" / "lib" / "sysctl.d" / "50-a.conf").write_text("vm.swappiness = 10\n")
    result = cli("check", str(tree), "-f", "json")
    assert SECRET not in result.stdout
    assert "symlink out of the tree" in result.stdout


def test_values_of_non_sysctl_lines_are_never_quoted(cli: Cli, tmp_path: Path) -> None:
    conf = tmp_path / "x.conf"
    conf.write_text(f"url = {SECRET} # note\nurl = again {SECRET}\n")
    result = cli("check", str(conf), "-f", "json")
    assert SECRET not in result.stdout
    assert json.loads(result.stdout)["findings"]


def test_facts_root_does_not_follow_absolute_links_out(tmp_path: Path) -> None:
    secret = tmp_path / "shadow"
    secret.write_text("4096\n")
    root = tmp_path / "copy"
    (root / "proc" / "sys" / "net" / "core").mkdir(parents=True)
    (root / "proc" / "sys" / "net" / "ipv4").mkdir(parents=True)
    (root / "proc" / "meminfo").write_text("MemTotal: 8000000 kB\n")
    (root / "proc" / "sys" / "net" / "core" / "somaxconn").symlink_to(secret)
    (root / "proc" / "sys" / "net" / "ipv4" / "tcp_mem").symlink_to("../../../../shadow")
    data = collect_data(["net.core.somaxconn", "net.ipv4.tcp_mem"], root)
    assert data["sysctl"] == {}


def test_facts_root_does_not_list_directories_outside(tmp_path: Path) -> None:
    """Directory links out of the copy (found by the hostile-input hunt): the NICs, NUMA nodes
    and nginx config of the host running the advisor must not appear in the copy's facts."""
    outside = tmp_path / "outside"
    (outside / "net" / "eth9" / "device").mkdir(parents=True)
    (outside / "net" / "eth9" / "mtu").write_text("9000\n")
    (outside / "node" / "node0").mkdir(parents=True)
    (outside / "node" / "node1").mkdir(parents=True)
    (outside / "nginx.conf").write_text("events {}\n")
    root = tmp_path / "copy"
    (root / "proc").mkdir(parents=True)
    (root / "proc" / "meminfo").write_text("MemTotal: 8000000 kB\n")
    (root / "sys" / "class").mkdir(parents=True)
    (root / "sys" / "class" / "net").symlink_to(outside / "net")
    (root / "sys" / "devices" / "system").mkdir(parents=True)
    (root / "sys" / "devices" / "system" / "node").symlink_to(outside / "node")
    (root / "etc" / "nginx").mkdir(parents=True)
    (root / "etc" / "nginx" / "nginx.conf").symlink_to(outside / "nginx.conf")
    data = collect_data(["net.core.somaxconn"], root)
    assert data.get("nics", []) == []
    assert "numa_nodes" not in data["memory"]
    assert data.get("services", {}) == {}
    # The same tree with the directories inside the copy is read.
    for link in (root / "sys/class/net", root / "sys/devices/system/node"):
        link.unlink()
    (outside / "net").rename(root / "sys/class/net")
    (outside / "node").rename(root / "sys/devices/system/node")
    data = collect_data(["net.core.somaxconn"], root)
    assert [n["name"] for n in data["nics"]] == ["eth9"] and data["memory"]["numa_nodes"] == 2


def test_facts_root_with_odd_digits_is_not_a_crash(cli: Cli, tmp_path: Path) -> None:
    root = tmp_path / "copy"
    (root / "proc" / "net").mkdir(parents=True)
    (root / "proc" / "meminfo").write_text("MemTotal: 8000000 kB\nLowTotal: ²³ kB\n")
    (root / "proc" / "net" / "sockstat").write_text("TCP: inuse ² orphan ٤ tw 1\n")
    (root / "proc" / "net" / "dev").write_text("eth0: ² ² ² ² ² ² ² ²\n")
    result = cli("facts", "--root", str(root))
    assert result.exit_code == 0, result.stderr
    assert "time_wait_peak: 1" in result.stdout


def test_a_facts_file_cannot_make_the_advisor_read_other_files(cli: Cli, tmp_path: Path) -> None:
    """A compromised host writes `config: /etc/shadow` into its facts: not read, and nothing
    of the named file is quoted."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = elsewhere / "secret.conf"
    target.write_text(f"{SECRET};\n")
    facts_dir = tmp_path / "facts"
    facts_dir.mkdir()
    facts = facts_dir / "host.yaml"
    facts.write_text(
        yaml.safe_dump(
            {"memory": {"total": "8 GiB"}, "services": {"nginx": {"config": str(target)}}}
        )
    )
    result = cli("recommend", "--facts", str(facts), "-p", "frontend-proxy", "-f", "json")
    assert result.exit_code == 0, result.stderr
    assert SECRET not in result.stdout and "ghp_" not in result.stdout
    assert "not read" in result.stdout


def test_bad_nginx_backlogs_are_findings_not_crashes(cli: Cli, tmp_path: Path) -> None:
    conf = tmp_path / "nginx.conf"
    conf.write_text(
        "events {}\nhttp {\n  server { listen 80 backlog=-5; }\n"
        f"  server {{ listen 81 backlog={'9' * 4300}; }}\n"
        "  server { listen 82 backlog=٤٠٩٦; }\n}\n"
    )
    facts = tmp_path / "facts.yaml"
    facts.write_text(yaml.safe_dump({"memory": {"total": "8 GiB"}}))
    result = cli(
        *["recommend", "--facts", str(facts), "-p", "frontend-proxy"],
        *["--nginx-conf", str(conf), "-f", "json"],
    )
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    messages = " ".join(f["message"] for f in doc["findings"])
    assert "invalid backlog" in messages and "9" * 100 not in messages


def test_nginx_error_text_is_escaped_like_facts(cli: Cli, tmp_path: Path) -> None:
    """An include name with line breaks and separators (U+0085, U+2028) is quoted in the
    config error: the error is facts text, so it is one escaped line, in every output."""
    name = "x\nnet.core.somaxconn = 1\r\n\u0085y\u2028z"
    (tmp_path / "nginx.conf").write_text(f'events {{}}\nhttp {{ include "{name}"; }}\n')
    facts = tmp_path / "facts.yaml"
    facts.write_text(
        yaml.safe_dump(
            {"memory": {"total": "8 GiB"}, "services": {"nginx": {"config": "nginx.conf"}}}
        )
    )
    for fmt in ("json", "conf", "markdown"):
        result = cli("recommend", "--facts", str(facts), "-p", "frontend-proxy", "-f", fmt)
        assert result.exit_code == 0, result.stderr
        if fmt != "conf":  # the conf names an info finding by its id only
            assert "no such file" in result.stdout
        assert not any(c in result.stdout for c in "\r\x85\u2028"), fmt
        assert "net.core.somaxconn = 1" not in result.stdout.splitlines()
    doc = json.loads(
        cli("recommend", "--facts", str(facts), "-p", "frontend-proxy", "-f", "json").stdout
    )
    assert all(m["message"].isprintable() for m in doc["findings"])


def test_a_facts_file_cannot_re_root_the_operators_nginx_conf(cli: Cli, tmp_path: Path) -> None:
    """The sixth review: with --nginx-conf the facts file's services.nginx.config_root still
    re-rooted the operator's absolute includes, into a directory the facts file chose, and the
    attacker's listen lines were shown as the host's /etc/nginx files."""
    operator = tmp_path / "op"
    operator.mkdir()
    (operator / "nginx.conf").write_text(
        f"events {{}}\nhttp {{ include {operator}/conf.d/*.conf; }}\n"
    )
    (operator / "conf.d").mkdir()
    (operator / "conf.d" / "site.conf").write_text("server { listen 8443 backlog=4096; }\n")
    evil = tmp_path / "evil" / str(operator).lstrip("/") / "conf.d"
    evil.mkdir(parents=True)
    (evil / "site.conf").write_text("server { listen 80 backlog=7; }\n")
    facts = tmp_path / "facts" / "facts.yaml"
    facts.parent.mkdir()
    facts.write_text(
        yaml.safe_dump(
            {
                "memory": {"total": "8 GiB"},
                "services": {"nginx": {"config": "nginx.conf", "config_root": "../evil"}},
            }
        )
    )
    result = cli(
        *["recommend", "--facts", str(facts), "-p", "frontend-proxy"],
        *["--nginx-conf", str(operator / "nginx.conf"), "-f", "json"],
    )
    assert result.exit_code == 0, result.stderr
    assert "backlog=7" not in result.stdout and "8443" in result.stdout
