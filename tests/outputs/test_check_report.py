"""`check` output formats, each read back by its consumer: SARIF by the official SARIF 2.1.0
schema (jsonschema, format checking on), check JSON by the schema the package ships, GitHub
workflow commands by a transliteration of the runner's own parser, colour by a terminal."""

from __future__ import annotations

import copy
import hashlib
import io
import json
import os
import pty
import re
from html import unescape as html_unescape
from pathlib import Path
from typing import Any
from urllib.parse import unquote_to_bytes, urlsplit

import pytest

import sysctl_advisor.outputs.check_report as check_render
from sysctl_advisor import __version__
from sysctl_advisor.engine.check.findings import CheckReport
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.text_escape import one_line
from sysctl_advisor.outputs.check_document import CheckDocument
from sysctl_advisor.outputs.json_schemas import model_schema
from tests.check_paths import check_paths
from tests.conftest import ROOT, TESTS, Cli, assert_one_line_error, invoke
from tests.sarif.validate import (
    CHECK_SCHEMA,
    SARIF_SCHEMA,
    VALIDATED,
    assert_valid_sarif,
    sarif_validator,
    validate_check_outputs,
)

__all__ = ["validate_check_outputs"]  # every SARIF and JSON rendered here is validated

FIXTURES = TESTS / "fixtures" / "check"
ANNOTATED = FIXTURES / "annotated.conf"
ESC = "\x1b"

# File names a pull request can carry: each must survive every format.
HOSTILE_NAMES = [
    b"50 my%20file,\xc3\xa9.conf",  # a literal %20 must not be decoded to a space
    b"a#b?c=d&e.conf",  # fragment and query delimiters
    b"new\nline.conf",
    b"tab\there;semi[x]{y}.conf",
    b"%SRCROOT%:colon.conf",
    b"::error title=forged::x.conf",  # workflow-command syntax in a name
    b"\xff\xfe not utf-8.conf",
    b"\xe2\x80\xaeevil\xe2\x80\xa8sep.conf",  # bidi override, line separator
]
TW_RECYCLE = "net.ipv4.tcp_tw_recycle = 1\n"


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NO_COLOR", "FORCE_COLOR", "SYSCTL_ADVISOR_DOCS_URL", "TERM"):
        monkeypatch.delenv(name, raising=False)


def _check(*args: str | Path) -> str:
    result = invoke("check", *map(str, args))
    assert result.exit_code in (0, 1), result.stderr or result.stdout
    return result.stdout


def _write(directory: Path, name: bytes, text: str = TW_RECYCLE) -> Path:
    path = Path(os.fsdecode(os.path.join(os.fsencode(directory), name)))
    path.write_text(text, encoding="utf-8")
    return path


def _results(sarif: dict[str, Any]) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = sarif["runs"][0]["results"]
    return results


# --- the consumer itself --------------------------------------------------------------------


def test_vendored_schema_is_the_official_oasis_file() -> None:
    data = SARIF_SCHEMA.read_bytes()
    recorded = (SARIF_SCHEMA.parent / "README.md").read_text(encoding="utf-8")
    assert hashlib.sha256(data).hexdigest() in recorded
    schema = json.loads(data)
    assert schema["$schema"] == "http://json-schema.org/draft-04/schema#"
    assert schema["id"].startswith("https://docs.oasis-open.org/sarif/sarif/v2.1.0/")


def test_format_checking_rejects_what_github_would_misread() -> None:
    """The validator really checks `uri` and `uri-reference`: the raw name and a relative
    helpUri are refused, their encoded forms accepted."""
    good = json.loads(check_render.render_check(_report_for(ANNOTATED), "sarif", {}))
    assert not list(sarif_validator().iter_errors(good))
    raw_name = copy.deepcopy(good)
    location = _results(raw_name)[0]["locations"][0]["physicalLocation"]["artifactLocation"]
    location["uri"] = "50 my%20file,é.conf"
    assert any("uri-reference" in e.message for e in sarif_validator().iter_errors(raw_name))
    relative_help = copy.deepcopy(good)
    relative_help["runs"][0]["tool"]["driver"]["rules"] = [
        {"id": "check.x", "helpUri": "docs/rules.md#checkx"}
    ]
    assert any("'uri'" in e.message for e in sarif_validator().iter_errors(relative_help))


def _report_for(path: Path) -> CheckReport:
    from sysctl_advisor.engine.check.findings import CheckContext
    from sysctl_advisor.engine.check.judge import Checker
    from sysctl_advisor.model.kernel_version import KernelVersion

    kb = KnowledgeBase.load()
    context = CheckContext(kernel=KernelVersion.parse("5.15"))
    return check_paths(Checker(kb, kb.check_rules, context), [path])


# --- SARIF ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=lambda n: repr(n)[2:20])
def test_sarif_uris_name_the_file_exactly(
    name: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    repo.mkdir()
    elsewhere.mkdir()
    path = _write(repo, name)

    monkeypatch.chdir(repo)  # as in CI: the file is under the working directory
    inside = assert_valid_sarif(_check(os.fsdecode(name), "--kernel", "5.15", "-f", "sarif"))
    run = inside["runs"][0]
    base = run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
    assert base.endswith("/") and unquote_to_bytes(urlsplit(base).path) == os.fsencode(repo) + b"/"
    for result in _results(inside):
        location = result["locations"][0]["physicalLocation"]["artifactLocation"]
        assert location["uriBaseId"] == "%SRCROOT%"
        assert unquote_to_bytes(location["uri"]) == name  # decodes to this name, no other

    monkeypatch.chdir(elsewhere)  # outside the working directory: absolute, no base
    outside = assert_valid_sarif(_check(path, "--kernel", "5.15", "-f", "sarif"))
    for result in _results(outside):
        location = result["locations"][0]["physicalLocation"]["artifactLocation"]
        assert "uriBaseId" not in location
        parts = urlsplit(location["uri"])
        assert parts.scheme == "file" and not parts.query and not parts.fragment
        assert unquote_to_bytes(parts.path) == os.fsencode(path)


def test_sarif_file_level_findings_have_no_invented_line(tmp_path: Path) -> None:
    good = _write(tmp_path, b"good.conf", "net.core.somaxconn = 4096\n")
    sarif = assert_valid_sarif(_check(good, tmp_path / "missing.conf", "-f", "sarif"))
    (missing,) = [
        r
        for r in _results(sarif)
        if "missing.conf" in r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    ]
    assert "region" not in missing["locations"][0]["physicalLocation"]
    github = _check(good, tmp_path / "missing.conf", "-f", "github")
    (line,) = [x for x in github.splitlines() if "missing.conf" in x]
    assert "line=" not in line.split("::")[1]
    text = _check(good, tmp_path / "missing.conf")
    assert re.search(r"missing\.conf: \[error\] not found", text)


def test_sarif_columns_span_the_assignment(tmp_path: Path) -> None:
    conf = _write(tmp_path, b"c.conf", "# x\n\t  net.ipv4.tcp_tw_recycle = 1   \n")
    sarif = assert_valid_sarif(_check(conf, "--kernel", "5.15", "-f", "sarif"))
    assert sarif["runs"][0]["columnKind"] == "unicodeCodePoints"
    for result in _results(sarif):
        region = result["locations"][0]["physicalLocation"]["region"]
        content = "net.ipv4.tcp_tw_recycle = 1"
        assert region == {"startLine": 2, "startColumn": 4, "endColumn": 4 + len(content)}
    text = _check(conf, "--kernel", "5.15")
    assert f"{conf}:2:4: [error]" in text


def test_partial_fingerprints_survive_line_shifts(tmp_path: Path) -> None:
    body = (
        "net.ipv4.tcp_tw_recycle = 1\n"
        "net.core.somaxconn = 1024\n"
        "net.core.somaxconn = 2048\n"
        "net.core.rmem_max = 512\n"
        "net.core.rmem_max = 512\n"
    )
    before = _write(tmp_path, b"before.conf", body)
    after = _write(tmp_path, b"after.conf", "# added\n# above\n\n" + body)

    def prints(path: Path) -> list[str]:
        sarif = assert_valid_sarif(_check(path, "--kernel", "5.15", "-f", "sarif"))
        return [r["partialFingerprints"]["sysctlAdvisorFinding/v1"] for r in _results(sarif)]

    first = prints(before)
    assert len(set(first)) == len(first) > 3  # every finding its own identity
    after.rename(before)  # same file name, every line three further down
    assert prints(before) == first


def _published() -> str:
    """The project's address, from its one place: pyproject.toml's [project.urls]."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    url: str = project["urls"]["Repository"]
    return url


def test_sarif_rules_help_and_properties(monkeypatch: pytest.MonkeyPatch) -> None:
    sarif = assert_valid_sarif(_check(ANNOTATED, "--kernel", "5.15", "-f", "sarif"))
    driver = sarif["runs"][0]["tool"]["driver"]
    kb = KnowledgeBase.load()
    assert {r["id"] for r in driver["rules"]} == set(kb.check_rules)
    for rule in driver["rules"]:
        assert rule["helpUri"].endswith("#" + rule["id"].replace(".", ""))
        properties = rule["properties"]
        assert properties["tags"] and "sysctl" in properties["tags"]
        assert properties["precision"] in {"very-high", "high", "medium", "low"}
        assert properties["problem.severity"] in {"error", "warning", "recommendation"}
    # The rules reference the helpUri names (docs/rules.md) has each rule's heading.
    headings = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert all(f"\n## {rule_id}\n" in headings for rule_id in kb.check_rules)

    monkeypatch.setenv("SYSCTL_ADVISOR_DOCS_URL", "https://example.org/a b/100%/r%C3%BCles.md")
    custom = assert_valid_sarif(_check(ANNOTATED, "-f", "sarif"))
    driver = custom["runs"][0]["tool"]["driver"]
    assert driver["rules"][0]["helpUri"].startswith(
        "https://example.org/a%20b/100%25/r%C3%BCles.md#"
    )
    assert driver["informationUri"] == "https://example.org/a%20b/100%25/r%C3%BCles.md"


def test_sarif_help_shows_a_rules_dir_rationale_as_text(tmp_path: Path) -> None:
    """Code scanning renders a rule's help.markdown: a colleague's rules directory whose
    rationale holds an image, a javascript: link, HTML or a comment gets none of them live."""
    import cmarkgfm  # type: ignore[import-untyped]

    rationale = (
        "![pixel](https://tracker.example/p.png?who=ci) see [the fix](javascript:alert(1)) "
        "<img src=x onerror=alert(1)> <a href='https://evil.example'>docs</a> "
        "https://evil.example/auto www.evil.example *bold* <!-- the rest is hidden"
    )
    rules = tmp_path / "site-rules" / "check"
    rules.mkdir(parents=True)
    (rules / "floor.yaml").write_text(
        "id: check.site-floor\nseverity: warning\ntitle: somaxconn below the floor\n"
        "keys: [net.core.somaxconn]\nwhen: numbers is not none and numbers[0] < 4096\n"
        "message: below the floor\nrationale: " + json.dumps(rationale) + "\n"
        'references: ["linux-6-18-doc-ip-sysctl: somaxconn"]\n'
        'examples: {fires: "net.core.somaxconn = 128\\n", quiet: "net.core.somaxconn = 4096\\n"}\n'
    )
    conf = tmp_path / "90-site.conf"
    conf.write_text("net.core.somaxconn = 128\n")
    out = _check(conf, "--rules-dir", rules.parent, "-f", "sarif")
    driver = assert_valid_sarif(out)["runs"][0]["tool"]["driver"]
    (rule,) = [r for r in driver["rules"] if r["id"] == "check.site-floor"]
    assert rule["help"]["text"] == rationale
    html = cmarkgfm.github_flavored_markdown_to_html(rule["help"]["markdown"])
    assert "<img" not in html and "<!--" not in html and "<em>" not in html
    assert html.count("<a ") == 1 and "Rule documentation</a>" in html  # only our own link
    words = re.sub(r"<[^>]+>", "", html.split("</p>")[0])
    assert html_unescape(words) == rationale  # the reader sees the rationale as written


def test_help_links_point_at_the_published_reference_of_this_version(cli: Cli) -> None:
    """Code scanning and a JSON reader open the project's docs/rules.md at the installed
    version's tag, over https: never a file of the machine that ran the check."""
    reference = f"{_published()}/blob/v{__version__}/docs/rules.md"
    assert reference.startswith("https://")
    sarif = assert_valid_sarif(cli("check", str(ANNOTATED), "-f", "sarif").stdout)
    driver = sarif["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == _published()
    for rule in driver["rules"]:
        assert rule["helpUri"] == f"{reference}#{rule['id'].replace('.', '')}"
        assert f"(<{rule['helpUri']}>)" in rule["help"]["markdown"]
    document = json.loads(cli("check", str(ANNOTATED), "-f", "json").stdout)
    assert document["findings"]
    for finding in document["findings"]:
        assert finding["help"] == f"{reference}#{finding['id'].replace('.', '')}"
    assert "file:" not in json.dumps(driver) + json.dumps(document)


@pytest.mark.parametrize(
    "setting", ["docs/rules.md", "file:///usr/share/doc/rules.md", "http://mirror/rules.md",
                "https://", "https://[::1/rules.md", "javascript:alert(1)"],
)  # fmt: skip
@pytest.mark.parametrize("fmt", ["sarif", "json", "markdown"])
def test_a_docs_url_that_is_not_https_is_refused(
    setting: str, fmt: str, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SYSCTL_ADVISOR_DOCS_URL", setting)
    result = cli("check", str(ANNOTATED), "-f", fmt)
    assert_one_line_error(result.exit_code, result.stderr, "SYSCTL_ADVISOR_DOCS_URL")


# --- GitHub workflow commands ---------------------------------------------------------------


def _runner_parse(line: str) -> tuple[str, dict[str, str], str] | None:
    """actions/runner's ActionCommand.TryParseV2 and its unescapes (src/Runner.Common/
    ActionCommand.cs), transliterated: the reading a workflow command really gets."""
    line = line.lstrip()
    if not line.startswith("::"):
        return None
    end = line.find("::", 2)
    if end < 0:
        return None
    info = line[2:end]
    name, space, rest = info.partition(" ")
    properties: dict[str, str] = {}
    if space:
        for item in rest.strip().split(","):
            key, eq, value = item.partition("=")
            if item and eq and key and value:
                for token, code in (("\r", "%0D"), ("\n", "%0A"), (":", "%3A"), (",", "%2C")):
                    value = value.replace(code, token)
                properties[key.lower()] = value.replace("%25", "%")
    data = line[end + 2 :]
    for token, code in (("\r", "%0D"), ("\n", "%0A"), ("%", "%25")):
        data = data.replace(code, token)
    return name, properties, data


@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=lambda n: repr(n)[2:20])
def test_github_annotations_round_trip_through_the_runner(
    name: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, name, "\n  net.ipv4.tcp_tw_recycle = 1\n")
    out = _check(os.fsdecode(name), "--kernel", "5.15", "-f", "github")
    lines = out.split("\n")[:-1]  # the runner reads one command per \n-terminated line
    assert len(lines) == 1  # the key 5.15 lacks: check.key-not-in-kernel alone
    for line in lines:
        parsed = _runner_parse(line)
        assert parsed is not None
        command, props, message = parsed
        # Exact, but for control and format characters (and bytes that are not UTF-8, which
        # the runner could not read): those are shown escaped, never obeyed by the log.
        shown = "".join(
            c if c in "\r\n" or c.isprintable() else one_line(c) for c in os.fsdecode(name)
        )
        assert command == "error" and props["file"] == shown
        assert (props["line"], props["endline"], props["col"], props["endcolumn"]) == (
            "2",
            "2",
            "3",
            str(2 + len("net.ipv4.tcp_tw_recycle = 1")),  # the last character's column
        )
        assert props["title"].startswith("check.") and message


# --- check JSON -----------------------------------------------------------------------------


def test_shipped_check_schema_is_generated_from_the_model() -> None:
    shipped = json.loads(CHECK_SCHEMA.read_text(encoding="utf-8"))
    assert shipped == model_schema(CheckDocument)
    assert shipped["$id"] == "sysctl-advisor/check/v1"


@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=lambda n: repr(n)[2:20])
def test_check_json_carries_the_version_and_the_name(
    name: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, name)
    out = _check(os.fsdecode(name), "--kernel", "5.15", "-f", "json")
    out.encode("utf-8")  # valid UTF-8 whatever the name held
    doc = json.loads(out)
    assert doc["schema"] == "sysctl-advisor/check/v1" and doc["version"] == __version__
    assert [os.fsencode(f) for f in doc["files"]] == [name]
    assert {os.fsencode(f["file"]) for f in doc["findings"]} == {name}


def test_every_check_output_here_was_validated() -> None:
    """The validating wrapper is in force (a guard against it silently not running)."""
    seen = dict(VALIDATED)
    _check(ANNOTATED, "-f", "sarif")
    _check(ANNOTATED, "-f", "json")
    assert VALIDATED["sarif"] == seen["sarif"] + 1 and VALIDATED["json"] == seen["json"] + 1


# --- colour ---------------------------------------------------------------------------------


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


@pytest.mark.parametrize(
    ("env", "tty", "expected"),
    [
        ({}, True, True),
        ({}, False, False),
        ({"NO_COLOR": "1"}, True, False),
        ({"NO_COLOR": ""}, True, True),  # empty means unset (no-color.org)
        ({"FORCE_COLOR": "1"}, False, True),
        ({"FORCE_COLOR": ""}, False, False),
        ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, True, False),
        ({"TERM": "dumb"}, True, False),
        ({"TERM": "dumb", "FORCE_COLOR": "1"}, False, True),
    ],
)
def test_wants_color(
    env: dict[str, str], tty: bool, expected: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert check_render.wants_color(_Stream(tty)) is expected


def test_wants_color_on_a_real_terminal() -> None:
    leader, follower = pty.openpty()
    try:
        with os.fdopen(follower, "w", closefd=False) as terminal:
            assert check_render.wants_color(terminal)
        with open(os.devnull, "w") as not_terminal:
            assert not check_render.wants_color(not_terminal)
    finally:
        os.close(leader)
        os.close(follower)


def _colour_report(tmp_path: Path) -> CheckReport:
    hostile = _write(tmp_path, b"\x1b[32mgreen\x1b[0m.conf")
    return _report_for(hostile)


def test_colour_marks_severity_and_rule_and_nothing_else(tmp_path: Path) -> None:
    report = _colour_report(tmp_path)
    rules = KnowledgeBase.load().check_rules
    plain = check_render.render_check(report, "text", rules)
    coloured = check_render.render_check(report, "text", rules, color=True)
    assert ESC not in plain  # a file name's escape codes are shown, not obeyed
    assert "\\x1b[32mgreen\\x1b[0m.conf" in plain
    assert "[\x1b[1;31merror\x1b[0m]" in coloured and "(\x1b[2mcheck." in coloured
    assert re.sub("\x1b\\[[0-9;]*m", "", coloured) == plain
    assert coloured.count(ESC) == 4 * len(report.findings)  # ours only
    assert coloured == check_render.render_check(report, "text", rules, color=True)


def test_colour_never_reaches_other_formats(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    report = _colour_report(tmp_path)
    rules = KnowledgeBase.load().check_rules
    for fmt in ("json", "github", "sarif"):
        for color in (True, None):
            assert ESC not in check_render.render_check(report, fmt, rules, color=color)
    assert ESC not in check_render.render_check(report, "text", rules)  # off unless asked
    assert ESC in check_render.render_check(report, "text", rules, color=None)  # FORCE_COLOR


def test_annotation_messages_show_control_characters_escaped(cli: Cli, tmp_path: Path) -> None:
    """A value in a pull request's file is quoted in the message: an ESC sequence in it must
    not reach the CI log raw (it would restyle or hide log lines)."""
    conf = tmp_path / "esc.conf"
    conf.write_text("net.core.somaxconn = 4\x1b[31mk\n")
    out = cli("check", str(conf), "--format", "github").stdout
    assert "\x1b" not in out and "\\x1b[31mk" in out


def test_text_summary_counts_in_words(cli: Cli, tmp_path: Path) -> None:
    """`1 file checked: 1 error`, `2 files checked: 2 errors, 2 warnings`: counted as said."""
    conf = tmp_path / "a.conf"
    conf.write_text("net.ipv4.tcp_tw_recycle = 1\nnet.ipv4.tcp_mem = 1 2\n")
    one = cli("check", str(conf))
    assert one.stdout.splitlines()[-1] == "1 file checked: 1 error, 1 warning."
    two = cli("check", str(conf), str(conf))
    assert two.stdout.splitlines()[-1] == "2 files checked: 2 errors, 2 warnings."
    clean = tmp_path / "b.conf"
    clean.write_text("")
    none = cli("check", str(clean))
    assert none.exit_code == 0 and none.stdout.splitlines()[-1] == "1 file checked: no findings."


# --- Markdown --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=lambda n: repr(n)[2:20])
def test_markdown_shows_hostile_names_as_text(
    name: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job summary and comment: a file name from a pull request is shown as its text (in a
    code span, control characters escaped), never as Markdown or HTML, and each finding is one
    table row."""
    import cmarkgfm  # type: ignore[import-untyped]

    _write(tmp_path, name + b"<img src=x>|y")
    monkeypatch.chdir(tmp_path)
    shown = os.fsdecode(name + b"<img src=x>|y")
    text = _check(shown, "-f", "markdown")
    html = cmarkgfm.github_flavored_markdown_to_html(text)
    assert "<img" not in html and html.count("<tr>") == 2  # the header and one finding
    assert "1 error" in text and "check.tw-recycle-enabled" in text


def test_markdown_links_rules_on_the_web(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = tmp_path / "a.conf"
    conf.write_text(TW_RECYCLE)
    published = cli("check", str(conf), "-f", "markdown").stdout
    reference = f"{_published()}/blob/v{__version__}/docs/rules.md#checktw-recycle-enabled"
    assert "file:" not in published
    assert f"[check.tw-recycle-enabled](<{reference}>)" in published
    monkeypatch.setenv("SYSCTL_ADVISOR_DOCS_URL", "https://example.com/rules.md")
    web = cli("check", str(conf), "-f", "markdown").stdout
    link = "[check.tw-recycle-enabled](<https://example.com/rules.md#checktw-recycle-enabled>)"
    assert link in web


def test_markdown_fits_a_comment_with_many_findings(cli: Cli, tmp_path: Path) -> None:
    from sysctl_advisor.outputs.markdown_text import BUDGET, md_length

    conf = tmp_path / "many.conf"
    conf.write_text(TW_RECYCLE * 3000)
    text = cli("check", str(conf), "-f", "markdown").stdout
    assert md_length(text) <= BUDGET
    assert "more findings: `--format json` lists them all." in text
