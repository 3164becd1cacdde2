"""`check --fix` on files as they come from other systems: a CRLF file keeps its line endings
on every line a fix rewrites, and what the kernel stores is the same after the fix."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Cli

CRLF = (
    "net.ipv4.tcp_rmem = 0x1000 0x4000 0x8000\r\n"
    "net.ipv4.tcp_fin_timeout = 030\r\n"
    "net.ipv4.tcp_keepalive_time = 600 # ten minutes\r\n"
)


def test_fix_keeps_a_crlf_files_line_endings(cli: Cli, tmp_path: Path) -> None:
    conf = tmp_path / "crlf.conf"
    conf.write_bytes(CRLF.encode())
    cli("check", conf, "--fix", "--fail-on", "never")
    fixed = conf.read_bytes()
    assert fixed == (
        b"net.ipv4.tcp_rmem = 4096 16384 32768\r\n"
        b"net.ipv4.tcp_fin_timeout = 24\r\n"
        b"# ten minutes\r\n"
        b"net.ipv4.tcp_keepalive_time = 600\r\n"
    )


def test_fix_judges_a_template_by_the_lines_it_renders(cli: Cli, tmp_path: Path) -> None:
    """An earlier line set again only by a line Jinja makes (whose value may be refused) is
    kept: the assignment inside a Jinja comment after it is no line the kernel is given."""
    template = tmp_path / "sysctl.conf.j2"
    text = (
        "net.core.somaxconn = 1024\n"
        "net.core.somaxconn = {{ somaxconn }}\n"
        "{#\nnet.core.somaxconn = 4096\n#}\n"
        "net.ipv4.tcp_fin_timeout = 030\n"
    )
    template.write_text(text)
    cli("check", template, "--fix", "--fail-on", "never")
    assert template.read_text() == text.replace("= 030", "= 24")
