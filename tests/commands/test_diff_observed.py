"""`diff` and `explain` with the facts' record of writes: the observed owner of each drifted key,
the fix in its configuration, writes in pods' namespaces apart, a fight as a finding; a record
that could not be made is one line; hostile text is refused or shown escaped and bounded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import TESTS, Cli, assert_one_line_error

FRONTEND = TESTS / "fixtures" / "writers-observed" / "frontend.yaml"


def _with(tmp_path: Path, writers: dict[str, Any]) -> Path:
    data = yaml.safe_load(FRONTEND.read_text())
    data["writers"] = writers
    path = tmp_path / "facts.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_diff_names_the_observed_owner_and_its_fix(cli: Cli) -> None:
    result = cli("diff", "-p", "frontend-proxy", "--facts", FRONTEND)
    assert result.exit_code == 1
    out = " ".join(result.stdout.split())
    assert (
        "net.core.somaxconn: written by TuneD (tuned[812], parent systemd[1], unit tuned.service):"
        " 2048, 2 times, last 2026-12-07T10:00:35Z (explains the value in force). Fix (tuned):"
        " [sysctl] net.core.somaxconn=16384"
    ) in out
    assert "written by dockerd (sysctl[1290], parent sh[1288], unit docker.service)" in out
    apart = out.split("Written in other namespaces (not the value in force here):")[1]
    assert "net.core.somaxconn: written by a pod" in apart
    assert "in network namespace pod shop/cart-5d9f" in apart
    assert "TuneD (tuned[812]" not in apart
    assert "[warning] drift.writers-fight: net.core.somaxconn changes hands" in out


def test_diff_json_carries_the_observed_owners_beside_the_probable_one(cli: Cli) -> None:
    result = cli("diff", "-p", "frontend-proxy", "--facts", FRONTEND, "--format", "json")
    document = json.loads(result.stdout)
    assert document["provenance"] == "watch 60s"
    [entry] = [e for e in document["entries"] if e["key"] == "net.core.somaxconn"]
    assert entry["owner"] is not None and entry["owner"].startswith("TuneD")
    tuned = entry["observed"][0]
    assert (tuned["writer"], tuned["fix"], tuned["fix_target"]) == (
        "tuned",
        "[sysctl] net.core.somaxconn=16384",
        "tuned",
    )
    assert (tuned["count"], tuned["last"], tuned["applied"], tuned["in_force"]) == (
        2,
        "2026-12-07T10:00:35Z",
        True,
        True,
    )
    assert [f["id"] for f in document["findings"]].count("drift.writers-fight") == 1
    assert all("observed" not in e for e in document["entries"] if e["status"] == "ok")


def test_a_refused_write_is_marked(cli: Cli, tmp_path: Path) -> None:
    facts = _with(
        tmp_path,
        {
            "provenance": "watch 5s",
            "writes": [
                {
                    "key": "net.ipv4.ip_local_port_range",
                    "value": "bogus",
                    "applied": False,
                    "time": "2026-12-07T10:00:00Z",
                    "comm": "tune-net",
                    "netns": {"kind": "host"},
                }
            ],
        },
    )
    out = " ".join(cli("diff", "-p", "frontend-proxy", "--facts", facts).stdout.split())
    assert "written by tune-net: bogus, once, last 2026-12-07T10:00:00Z, refused" in out


def test_without_a_record_of_writes_diff_says_nothing_new(cli: Cli, tmp_path: Path) -> None:
    data = yaml.safe_load(FRONTEND.read_text())
    del data["writers"]
    path = tmp_path / "facts.yaml"
    path.write_text(yaml.safe_dump(data))
    for fmt in ("text", "json", "markdown"):
        out = cli("diff", "-p", "frontend-proxy", "--facts", path, "--format", fmt).stdout
        assert "observed" not in out.lower() and "provenance" not in out and "written by" not in out


def test_an_unavailable_record_is_one_line_the_static_tier_only(cli: Cli, tmp_path: Path) -> None:
    facts = _with(tmp_path, {"provenance": "unavailable (not root)"})
    out = cli("diff", "-p", "frontend-proxy", "--facts", facts).stdout
    lines = [line for line in out.splitlines() if "provenance" in line]
    assert lines == ["Observed writers: provenance unavailable (not root): the static tier only."]
    assert "static tier only" in " ".join(out.split())
    assert "written by" not in out
    markdown = cli("diff", "-p", "frontend-proxy", "--facts", facts, "--format", "markdown")
    assert "static tier only" in markdown.stdout
    explained = cli(
        "explain", "net.core.somaxconn", "--facts", facts, "-p", "frontend-proxy"
    ).stdout
    assert "provenance unavailable (not root): the static tier only" in " ".join(explained.split())


def test_markdown_lists_the_observed_owners(cli: Cli) -> None:
    out = cli("diff", "-p", "frontend-proxy", "--facts", FRONTEND, "--format", "markdown").stdout
    assert "written by TuneD" in out and r"\[sysctl\] net.core.somaxconn=16384" in out


def test_explain_names_who_wrote_the_key(cli: Cli) -> None:
    result = cli("explain", "net.core.somaxconn", "--facts", FRONTEND, "-p", "frontend-proxy")
    assert result.exit_code == 0
    out = " ".join(result.stdout.split())
    assert "Observed writers (watch 60s):" in out
    assert (
        "Written by TuneD (tuned[812], parent systemd[1], unit tuned.service): 2048, 2 times, "
        "last 2026-12-07T10:00:35Z (explains the value in force). Fix (tuned): [sysctl] "
        "net.core.somaxconn=16384"
    ) in out
    assert "finding drift.writers-fight (warning):" in out
    quiet = cli("explain", "vm.swappiness", "--facts", FRONTEND).stdout
    assert "none wrote vm.swappiness while the record ran" in quiet


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("comm", "tu\x1b[31mned"),
        ("unit", "evil\x1b]0;x\x07.service"),
        ("parent_comm", "a\nb"),
        ("value", "1\r2"),
    ],
)
def test_escape_sequences_in_a_write_are_refused(
    cli: Cli, tmp_path: Path, field: str, value: str
) -> None:
    write = {"key": "net.core.somaxconn", "value": "1", "time": "2026-12-07T10:00:00Z"}
    facts = _with(tmp_path, {"provenance": "watch 5s", "writes": [{**write, field: value}]})
    result = cli("diff", "-p", "frontend-proxy", "--facts", facts)
    assert_one_line_error(result.exit_code, result.stderr, "facts.yaml", field)


def test_long_values_are_bounded_in_the_text(cli: Cli, tmp_path: Path) -> None:
    long_value = "9" * 500
    long_unit = "a" * 240 + ".service"
    facts = _with(
        tmp_path,
        {
            "provenance": "watch 5s",
            "writes": [
                {
                    "key": "net.core.somaxconn",
                    "value": long_value,
                    "applied": False,
                    "time": "2026-12-07T10:00:00Z",
                    "comm": "x" * 15,
                    "unit": long_unit,
                    "netns": {"kind": "host"},
                }
            ],
        },
    )
    out = cli("diff", "-p", "frontend-proxy", "--facts", facts).stdout
    assert long_value not in out and long_unit not in out
    assert "9" * 63 + "…" in "".join(out.split())
    assert max(len(line) for line in out.splitlines()) <= 100
    document = json.loads(
        cli("diff", "-p", "frontend-proxy", "--facts", facts, "--format", "json").stdout
    )
    [entry] = [e for e in document["entries"] if e["key"] == "net.core.somaxconn"]
    assert entry["observed"][0]["value"] == long_value  # the document keeps it whole


def test_only_the_last_writer_is_marked_as_explaining_the_value(cli: Cli) -> None:
    for form in ("text", "markdown"):
        result = cli("diff", "-p", "frontend-proxy", "--facts", FRONTEND, "--format", form)
        out = " ".join(result.stdout.split()).replace("\\", "")
        docker = out.split("written by dockerd (sysctl[1290]")[1].split(" Fix")[0]
        assert "(an earlier writer: another wrote after it)" in docker, form
        assert "explains the value in force" not in docker, form
    explained = cli("explain", "net.core.somaxconn", "--facts", FRONTEND, "-p", "frontend-proxy")
    out = " ".join(explained.stdout.split())
    assert out.count("(explains the value in force)") == 1
    tuned = out.split("Written by TuneD")[1].split("Written by")[0]
    assert "(explains the value in force)" in tuned
    dockerd = out.split("Written by dockerd")[1].split("Written by")[0]
    assert "(an earlier writer: another wrote after it)" in dockerd


def test_a_write_in_a_namespace_not_given_is_not_listed_apart(cli: Cli, tmp_path: Path) -> None:
    facts = _with(
        tmp_path,
        {
            "provenance": "watch 5s",
            "not_given": ["netns", "parent_pid", "parent_comm"],
            "writes": [
                {
                    "key": "net.core.somaxconn",
                    "value": "2048",
                    "comm": "tuned",
                    "unit": "tuned.service",
                    "time": "2026-12-07T10:00:05Z",
                },
            ],
        },
    )
    result = cli("diff", "-p", "frontend-proxy", "--facts", facts)
    out = " ".join(result.stdout.split())
    assert "Written in other namespaces" not in out
    unknown = out.split("Written in a network namespace not known (this kernel does not say")[1]
    assert (
        "net.core.somaxconn: written by TuneD (tuned, unit tuned.service) in a network" in unknown
    )
    assert "explains the value in force" not in out
