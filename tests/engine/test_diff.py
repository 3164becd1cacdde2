"""`diff`: statuses, sources, formats and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE_PROFILES, EXAMPLES, TESTS, Cli, invoke

FIXTURES = TESTS / "fixtures"
LAYERED = str(FIXTURES / "sysctl-trees" / "layered")
DUMP = str(FIXTURES / "dumps" / "sysctl-a-6.18.txt")
EC2 = str(EXAMPLES / "ec2-nginx-frontend.yaml")


def diff_json(*args: str) -> tuple[int, dict[str, object]]:
    result = invoke("diff", *args, "--format", "json")
    assert result.exit_code in (0, 1), result.stderr
    return result.exit_code, json.loads(result.stdout)


def entries(doc: dict[str, object]) -> dict[str, dict[str, object]]:
    assert isinstance(doc["entries"], list)
    return {e["key"]: e for e in doc["entries"]}


def test_json_contract_and_statuses_against_a_tree() -> None:
    code, doc = diff_json("--facts", EC2, "--profile", "frontend-proxy", "--current", LAYERED)
    assert code == 1
    assert doc["schema"] == "sysctl-advisor/diff/v1"
    by_key = entries(doc)
    for entry in by_key.values():
        assert set(entry) == {
            "key",
            "current",
            "recommended",
            "kernel_default",
            "status",
            "source",
            "rationale",
            "default_set_by",
            "modelled_default",
            "owner",
        }
    somaxconn = by_key["net.core.somaxconn"]
    assert somaxconn["status"] == "change"
    assert (somaxconn["current"], somaxconn["recommended"]) == ("2048", "16384")
    assert somaxconn["source"] == "etc/sysctl.conf:3"
    assert somaxconn["kernel_default"] == "128"  # 3.2 kernel
    assert by_key["net.ipv4.tcp_max_syn_backlog"]["status"] == "missing"
    assert by_key["net.ipv4.tcp_max_syn_backlog"]["source"] is None
    assert by_key["net.ipv4.tcp_tw_reuse"]["status"] == "ok"
    assert doc["drift"] == sum(1 for e in by_key.values() if e["status"] != "ok")
    assert any(f["id"] == "time-wait.tw-recycle-enabled" for f in doc["findings"])  # type: ignore[index, union-attr]


def test_key_the_kernel_lacks_is_remove(tmp_path: Path) -> None:
    facts = tmp_path / "new.yaml"
    facts.write_text("kernel: 6.1.0-18-amd64\narch: x86_64\nmemory: {total: 16 GiB}\n")
    _, doc = diff_json("--facts", str(facts), "--profile", "base", "--current", LAYERED)
    recycle = entries(doc)["net.ipv4.tcp_tw_recycle"]
    assert recycle["status"] == "remove" and recycle["recommended"] is None
    assert recycle["rationale"] == (
        "Linux 6.1.0 has no net.ipv4.tcp_tw_recycle (it exists in <4.12); writing it fails, "
        "and `sysctl -p` reports an error unless the line starts with '-'."
    )
    assert recycle["source"] == "etc/sysctl.conf:2"


def test_vectors_compare_after_whitespace_normalisation(tmp_path: Path) -> None:
    # A dump prints vectors tab-separated; the plan writes them space-separated. The same
    # numbers must compare equal, different numbers must not.
    dump = tmp_path / "sysctl-a.txt"
    text = (
        Path(DUMP)
        .read_text()
        .replace(
            "net.ipv4.ip_local_port_range = 32768\t60999",
            "net.ipv4.ip_local_port_range = 10240\t65535",
        )
    )
    assert "10240\t65535" in text
    dump.write_text(text)
    _, doc = diff_json("--facts", EC2, "--profile", "frontend-proxy", "--current", str(dump))
    ports = entries(doc)["net.ipv4.ip_local_port_range"]
    assert (ports["status"], ports["current"], ports["recommended"]) == (
        "ok",
        "10240 65535",
        "10240 65535",
    )
    _, before = diff_json("--facts", EC2, "--profile", "frontend-proxy", "--current", DUMP)
    assert entries(before)["net.ipv4.ip_local_port_range"]["status"] == "change"


@pytest.mark.parametrize(("host", "profile"), sorted(EXAMPLE_PROFILES.items()))
def test_recommended_file_has_no_drift(cli: Cli, host: str, profile: str, tmp_path: Path) -> None:
    facts = str(EXAMPLES / f"{host}.yaml")
    conf = tmp_path / "90-sysctl-advisor.conf"
    made = cli("recommend", "--facts", facts, "--profile", profile, "-o", str(conf))
    assert made.exit_code == 0, made.stderr
    result = cli("diff", "--facts", facts, "--profile", profile, "--current", str(conf))
    assert result.exit_code == 0, result.stdout
    assert "No drift" in result.stdout


def test_text_is_plain_when_piped_and_markdown_is_a_table(cli: Cli) -> None:
    text = cli("diff", "--facts", EC2, "-p", "frontend-proxy", "--current", LAYERED)
    assert text.exit_code == 1
    assert "\x1b[" not in text.stdout  # no colour codes when not a terminal
    assert text.stdout.splitlines()[2].split()[:2] == ["STATUS", "KEY"]
    assert "Drift:" in text.stdout and "broken symlink" in text.stdout
    md = cli("diff", "--facts", EC2, "-p", "frontend-proxy", "--current", LAYERED, "-f", "markdown")
    assert md.exit_code == 1
    assert "| status | key | current | recommended | kernel default | source |" in md.stdout
    assert "`etc/sysctl.conf:3`" in md.stdout


def test_rich_table_on_a_terminal() -> None:
    from sysctl_advisor.model.diff import DiffEntry, DiffReport
    from sysctl_advisor.outputs.diff_report import render_rich

    report = DiffReport(
        "h",
        "6.1",
        "base",
        "file",
        "x.conf",
        [DiffEntry("net.core.somaxconn", "128", "4096", "4096", "change", "x.conf:1", "Why.")],
    )
    out = render_rich(report, width=120)
    assert "net.core.somaxconn" in out and "\x1b[" in out and "Drift: 1 of 1" in out


def _terminal_lines(text: str) -> list[str]:
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", text).splitlines()


def _report_for(facts: str, profile: str, current: str) -> object:
    code, doc = diff_json("--facts", facts, "--profile", profile, "--current", current)
    assert code in (0, 1)
    return doc


@pytest.mark.parametrize(
    ("facts", "profile", "current"),
    [
        (EC2, "frontend-proxy", DUMP),
        (str(EXAMPLES / "dtn-10g.yaml"), "gridftp", LAYERED),
        (str(EXAMPLES / "c1m-server.yaml"), "c1m-server", LAYERED),
    ],
)
@pytest.mark.parametrize("width", [80, 100, 200])
def test_the_terminal_table_never_breaks_a_key_or_a_number(
    cli: Cli, facts: str, profile: str, current: str, width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On an 80-column terminal every key and every number is read whole on one line, each
    value's elements, and the table fits the terminal; the source file is still shown."""
    import sysctl_advisor.outputs.diff_report as diff_render

    doc = _report_for(facts, profile, current)
    monkeypatch.setattr(
        diff_render,
        "render_diff",
        lambda report, fmt, renderer, terminal=False: diff_render.render_rich(report, width),
    )
    result = cli("diff", "--facts", facts, "-p", profile, "--current", current)
    assert isinstance(doc, dict) and isinstance(doc["entries"], list)
    lines = _terminal_lines(result.stdout)
    table = lines[: lines.index("Why:") if "Why:" in lines else len(lines)]
    assert all(len(line.rstrip()) <= width for line in table)
    words = [word for line in table for word in line.split()]
    for entry in doc["entries"]:
        assert entry["key"] in words, entry["key"]
        for value in (entry["current"], entry["recommended"], entry["kernel_default"]):
            if value is not None:
                assert all(element in words for element in value.split()), value
    header = next(line for line in table if line.startswith("STATUS"))
    if "SOURCE" in header:  # a sixth column: each source whole on its row
        sources = {line[header.index("SOURCE") :].strip() for line in table}
    else:  # under its key, perhaps folded: the key column's lines read together
        start, end = header.index("KEY"), header.index("CURRENT")
        sources = {"".join(line[start:end].strip() for line in table)}
    for entry in doc["entries"]:
        if entry["source"]:
            assert any(entry["source"] in text for text in sources), entry["source"]


def test_facts_sysctl_is_the_default_current() -> None:
    _, doc = diff_json("--facts", EC2, "--profile", "frontend-proxy")
    assert doc["current"] == {"kind": "facts", "label": EC2}  # type: ignore[comparison-overlap]
    sources = {e["source"] for e in entries(doc).values() if e["current"] is not None}
    assert sources == {f"{EC2}: sysctl"}


def test_bad_inputs_exit_2_with_one_line(cli: Cli, tmp_path: Path) -> None:
    missing = cli("diff", "--facts", EC2, "-p", "base", "--current", str(tmp_path / "nope"))
    assert missing.exit_code == 2 and missing.stderr.count("\n") == 1
    bare = tmp_path / "bare.yaml"
    bare.write_text("memory: {total: 4 GiB}\n")
    nothing = cli("diff", "--facts", str(bare), "-p", "base")
    assert nothing.exit_code == 2 and "--current" in nothing.stderr
    fmt = cli("diff", "--facts", EC2, "-p", "base", "-f", "html")
    assert fmt.exit_code == 2 and "--format" in fmt.stderr


@pytest.mark.skipif(not Path("/proc/sys/net/core/somaxconn").exists(), reason="needs /proc/sys")
def test_live_host_diff_runs(cli: Cli) -> None:
    result = cli("diff", "--profile", "base", "--format", "json")
    assert result.exit_code in (0, 1), result.stderr
    doc = json.loads(result.stdout)
    assert doc["current"]["kind"] == "live"
    for entry in doc["entries"]:
        if entry["current"] is not None:
            assert entry["source"].startswith("/proc/sys/")


def test_the_terminal_table_shows_emoji_codes_in_file_names_as_written(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file named `:white_check_mark:ok.conf` stays that name on the terminal: rich would
    draw an emoji for the code, and the operator would look for a file that does not exist."""
    import sysctl_advisor.outputs.diff_report as diff_render

    conf = tmp_path / ":white_check_mark:ok.conf"
    conf.write_text("net.ipv4.tcp_tw_recycle = 1\n")
    monkeypatch.setattr(
        diff_render,
        "render_diff",
        lambda report, fmt, renderer, terminal=False: diff_render.render_rich(report, 200),
    )
    facts = str(EXAMPLES / "dcache-32bit.yaml")
    result = cli("diff", "--facts", facts, "-p", "base", "--current", str(conf))
    assert ":white_check_mark:ok.conf" in result.stdout
    assert "\u2705" not in result.stdout
