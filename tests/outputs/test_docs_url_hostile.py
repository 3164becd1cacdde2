"""SYSCTL_ADVISOR_DOCS_URL as a fork or a mirror may spell it: brackets in the path or query,
an @ in the user's part, a fragment. Every help link rendered from it is a valid URI (the
suite's SARIF and JSON validation, rfc3987), and a fragment, to which each rule's anchor
would be added as a second one, is refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Cli, assert_one_line_error
from tests.sarif.validate import assert_valid_sarif

CONF = "net.ipv4.tcp_timestamps = 0\n"


@pytest.mark.parametrize(
    ("setting", "base"),
    [
        ("https://example.org/rules[v2].md?at=[1]", "https://example.org/rules%5Bv2%5D.md?at=%5B1%5D"),
        ("https://[2001:db8::1]:8443/r[1].md", "https://[2001:db8::1]:8443/r%5B1%5D.md"),
        ("https://me@work@example.org/rules.md", "https://me%40work@example.org/rules.md"),
    ],
)  # fmt: skip
def test_every_help_link_from_the_docs_url_is_a_valid_uri(
    setting: str, base: str, cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = tmp_path / "a.conf"
    conf.write_text(CONF)
    monkeypatch.setenv("SYSCTL_ADVISOR_DOCS_URL", setting)
    sarif = assert_valid_sarif(cli("check", conf, "-f", "sarif", "--fail-on", "never").stdout)
    driver = sarif["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == base
    assert all(rule["helpUri"].startswith(base + "#") for rule in driver["rules"])
    found = json.loads(cli("check", conf, "-f", "json", "--fail-on", "never").stdout)
    assert all(f["help"].startswith(base + "#") for f in found["findings"])
    markdown = cli("check", conf, "-f", "markdown", "--fail-on", "never").stdout
    assert f"](<{base}#" in markdown


@pytest.mark.parametrize("fmt", ["sarif", "json", "markdown"])
def test_a_docs_url_with_a_fragment_is_refused(
    fmt: str, cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = tmp_path / "a.conf"
    conf.write_text(CONF)
    monkeypatch.setenv("SYSCTL_ADVISOR_DOCS_URL", "https://example.org/rules.md#top")
    result = cli("check", conf, "-f", fmt)
    assert_one_line_error(result.exit_code, result.stderr, "SYSCTL_ADVISOR_DOCS_URL")
