"""`check` configured by a repository: `.sysctl-advisor.toml` or `[tool.sysctl-advisor]` in
pyproject.toml, found upward from the files checked (not past the repository's top), each key
applied, command-line flags winning, `--show-config` saying where each value came from, and
every bad or hostile configuration refused in one line with exit 2. Files are built at test
time, through the CLI."""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

import jsonschema
import pytest

from sysctl_advisor.outputs.json_schemas import schema_path
from tests.commands.check_repo import make_repo, run_in
from tests.conftest import EXAMPLES, assert_one_line_error

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


RECYCLE = "net.ipv4.tcp_tw_recycle = 1\n"  # check.tw-recycle-enabled, an error
SYNCOOKIES_OFF = "net.ipv4.tcp_syncookies = 0\n"  # check.syncookies-off, a warning
FACTS = EXAMPLES / "dcache-32bit.yaml"


def _ids(stdout: str) -> set[str]:
    return {f["id"] for f in json.loads(stdout)["findings"]}


# --- found as users expect -------------------------------------------------------------------


def test_the_configuration_is_found_upward_from_the_files(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path,
        'ignore = ["check.tw-recycle-enabled"]\nfail-on = "warning"\n',
        {"hosts/web/etc/sysctl.d/10-a.conf": RECYCLE + SYNCOOKIES_OFF},
    )
    code, out, _ = run_in(repo / "hosts", "check", "web/etc/sysctl.d", "-f", "json")
    assert _ids(out) >= {"check.syncookies-off"}
    assert "check.tw-recycle-enabled" not in _ids(out)
    assert code == 1  # fail-on = "warning" from the file: the warning fails the check
    code, out, _ = run_in(repo / "hosts", "check", "web/etc/sysctl.d", "-f", "json", "--isolated")
    assert "check.tw-recycle-enabled" in _ids(out) and code == 1


def test_pyproject_table_and_the_search_stops_at_the_repository_top(tmp_path: Path) -> None:
    # A configuration above the repository is not the repository's: never read.
    (tmp_path / ".sysctl-advisor.toml").write_text('ignore = ["check"]\n')
    repo = make_repo(tmp_path, None, {"etc/sysctl.d/10-a.conf": RECYCLE})
    code, out, _ = run_in(repo, "check", "etc/sysctl.d", "-f", "json")
    assert code == 1 and "check.tw-recycle-enabled" in _ids(out)
    # A pyproject.toml without the table is passed over; one with it is read.
    (repo / "etc" / "pyproject.toml").write_text('[project]\nname = "x"\n')
    (repo / "pyproject.toml").write_text(
        '[project]\nname = "infra"\n\n[tool.sysctl-advisor]\nignore = ["check.tw-recycle"]\n'
    )
    code, out, _ = run_in(repo, "check", "etc/sysctl.d", "-f", "json")
    assert code == 0 and "check.tw-recycle-enabled" not in _ids(out)
    code, out, _ = run_in(repo, "check", "--show-config", "etc/sysctl.d")
    assert code == 0 and "# configuration: " in out and "pyproject.toml" in out


def test_command_line_flags_win_and_show_config_says_where_each_came_from(
    tmp_path: Path,
) -> None:
    repo = make_repo(
        tmp_path,
        'select = ["check.tw-recycle-enabled"]\nfail-on = "info"\nkernel = "3.10"\n',
        {"sysctl.d/10-a.conf": RECYCLE + SYNCOOKIES_OFF},
    )
    code, out, _ = run_in(repo, "check", "sysctl.d", "-f", "json")
    assert _ids(out) == {"check.tw-recycle-enabled"} and code == 1
    # --select replaces the file's list; --fail-on replaces its severity.
    code, out, _ = run_in(
        repo, "check", "sysctl.d", "-f", "json", "--select", "check.syncookies-off",
        "--fail-on", "error",
    )  # fmt: skip
    assert _ids(out) == {"check.syncookies-off"} and code == 0
    code, out, err = run_in(repo, "check", "--show-config", "--fail-on", "error")
    assert code == 0, err
    shown = tomllib.loads(out)  # what it prints is TOML a team can paste
    assert shown["select"] == ["check.tw-recycle-enabled"] and shown["fail-on"] == "error"
    lines = {line.split(" = ")[0]: line for line in out.splitlines() if " = " in line}
    assert lines["fail-on"].endswith("# command line")
    assert lines["select"].endswith('# ".sysctl-advisor.toml"')
    assert lines["kernel"].endswith('# ".sysctl-advisor.toml"')
    assert "# ignore: not set" in out


def test_per_file_ignores_by_name_and_by_path(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path,
        '[per-file-ignores]\n"99-vendor.conf" = ["check.tw-recycle-enabled"]\n'
        '"hosts/*/sysctl.d/*.conf" = ["check.syncookies-off"]\n',
        {
            "etc/sysctl.d/99-vendor.conf": RECYCLE,
            "etc/sysctl.d/10-own.conf": RECYCLE.replace("1", "1 ") + SYNCOOKIES_OFF,
            "hosts/db/sysctl.d/10-db.conf": SYNCOOKIES_OFF,
        },
    )
    _, out, _ = run_in(repo, "check", "etc/sysctl.d", "hosts/db/sysctl.d", "-f", "json")
    found = {(f["file"], f["id"]) for f in json.loads(out)["findings"]}
    assert ("etc/sysctl.d/99-vendor.conf", "check.tw-recycle-enabled") not in found
    assert ("etc/sysctl.d/10-own.conf", "check.tw-recycle-enabled") in found
    assert ("etc/sysctl.d/10-own.conf", "check.syncookies-off") in found
    assert ("hosts/db/sysctl.d/10-db.conf", "check.syncookies-off") not in found
    _, text, _ = run_in(repo, "check", "etc/sysctl.d", "hosts/db/sysctl.d")
    assert "suppressed: 2 by per-file-ignores" in text
    # SARIF keeps them, with an external suppression and the reason.
    _, sarif, _ = run_in(repo, "check", "etc/sysctl.d", "hosts/db/sysctl.d", "-f", "sarif")
    kinds = {
        s["kind"]
        for r in json.loads(sarif)["runs"][0]["results"]
        for s in r.get("suppressions", [])
    }
    assert kinds == {"external"}


def test_facts_profile_and_parameters_from_the_configuration(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path,
        'facts = "hosts/dcache.yaml"\nprofile = "gridftp"\n[set]\nbogus = 1\n',
        {"sysctl.d/10-a.conf": "net.ipv4.tcp_mem = 90000000 90000000 90000000\n"},
    )
    (repo / "hosts").mkdir()
    (repo / "hosts" / "dcache.yaml").write_bytes(FACTS.read_bytes())
    code, _, err = run_in(repo, "check", "sysctl.d")
    assert_one_line_error(code, err, "bogus")  # the file's parameter reached the profile
    text = (repo / ".sysctl-advisor.toml").read_text().replace("bogus = 1", "")
    (repo / ".sysctl-advisor.toml").write_text(text)
    code, out, err = run_in(repo, "check", "sysctl.d", "-f", "json")
    assert code in (0, 1), err
    assert "check.tcp-mem-above-memory" in _ids(out)  # the facts were read


# --- bad and hostile configurations: one line, exit 2 ----------------------------------------


@pytest.mark.parametrize(
    ("config", "parts"),
    [
        ("selekt = []\n", ["selekt", "unknown field"]),
        ("select = [\n", ["not TOML"]),
        ('select = ["check.no-such-rule"]\n', ["select", "check.no-such-rule"]),
        ('fail-on = "fatal"\n', ["fail-on"]),
        ('kernel = "five"\n', ["kernel"]),
        ('facts = "../outside.yaml"\n', ["facts", "leaves the directory"]),
        ('facts = "/etc/passwd"\n', ["facts", "leaves the directory"]),
        ('baseline = "../b.json"\n', ["baseline", "leaves the directory"]),
        ('[per-file-ignores]\n"x.conf" = ["check.nope"]\n', ["per-file-ignores.x.conf"]),
        ('profile = "gridftp"\n', ["profile", "facts"]),
        ('ignore = ["a\\u0000b"]\n', ["ignore"]),
        ("ignore = " + "[" * 5000 + "]" * 5000 + "\n", [".sysctl-advisor.toml"]),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None,
)
def test_a_bad_configuration_is_one_line_naming_file_and_key(
    tmp_path: Path, config: str, parts: list[str]
) -> None:
    repo = make_repo(tmp_path, config, {"sysctl.d/10-a.conf": RECYCLE})
    code, _, err = run_in(repo, "check", "sysctl.d")
    assert_one_line_error(code, err, ".sysctl-advisor.toml", *parts)


def test_a_configuration_link_out_of_its_directory_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.toml"
    outside.write_text('ignore = ["check"]\n')
    repo = make_repo(tmp_path, None, {"sysctl.d/10-a.conf": RECYCLE})
    (repo / ".sysctl-advisor.toml").symlink_to(outside)
    code, _, err = run_in(repo, "check", "sysctl.d")
    assert_one_line_error(code, err, ".sysctl-advisor.toml", "outside")


def test_facts_linked_out_of_the_configuration_directory_are_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.yaml"
    secret.write_bytes(FACTS.read_bytes())
    repo = make_repo(tmp_path, 'facts = "host.yaml"\n', {"sysctl.d/10-a.conf": RECYCLE})
    (repo / "host.yaml").symlink_to(secret)
    code, _, err = run_in(repo, "check", "sysctl.d")
    assert_one_line_error(code, err, "host.yaml", "outside")
    # The same file named on the command line is the operator's own choice: read.
    code, _, err = run_in(repo, "check", "sysctl.d", "--facts", "host.yaml")
    assert code == 1, err


def test_a_fifo_configuration_is_refused_without_hanging(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, None, {"sysctl.d/10-a.conf": RECYCLE})
    os.mkfifo(repo / ".sysctl-advisor.toml")
    done: list[tuple[int, str, str]] = []
    worker = threading.Thread(target=lambda: done.append(run_in(repo, "check", "sysctl.d")))
    worker.start()
    worker.join(60)
    if worker.is_alive():  # unblock the reader so the suite can finish, then fail
        with open(repo / ".sysctl-advisor.toml", "w"):
            pass
        worker.join()
        pytest.fail("check blocked on a FIFO named .sysctl-advisor.toml")
    code, _, err = done[0]
    assert_one_line_error(code, err, ".sysctl-advisor.toml", "not a regular file")


def test_two_configurations_config_and_isolated(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, 'fail-on = "info"\n', {"a/sysctl.d/1.conf": RECYCLE})
    (repo / "b" / "sysctl.d").mkdir(parents=True)
    (repo / "b" / "sysctl.d" / "1.conf").write_text(RECYCLE)
    (repo / "b" / ".sysctl-advisor.toml").write_text('fail-on = "error"\n')
    code, _, err = run_in(repo, "check", "a/sysctl.d", "b/sysctl.d")
    assert_one_line_error(code, err, "different configurations", "--config")
    code, _, err = run_in(
        repo, "check", "a/sysctl.d", "b/sysctl.d", "--config", "b/.sysctl-advisor.toml"
    )
    assert code == 1, err
    code, _, err = run_in(repo, "check", "a/sysctl.d", "--config", "x.toml", "--isolated")
    assert_one_line_error(code, err, "--isolated")
    code, _, err = run_in(repo, "check", "a/sysctl.d", "--config", "missing.toml")
    assert_one_line_error(code, err, "missing.toml", "--config")


def test_show_config_escapes_what_it_prints(tmp_path: Path) -> None:
    pattern = 'x"] = 1\\n#'  # would close the string and start a table in naive output
    repo = make_repo(
        tmp_path,
        "[per-file-ignores]\n" + json.dumps(pattern) + ' = ["check.glob"]\n',
        {"sysctl.d/10-a.conf": RECYCLE},
    )
    code, out, err = run_in(repo, "check", "--show-config")
    assert code == 0, err
    assert tomllib.loads(out)["per-file-ignores"] == {pattern: ["check.glob"]}


def test_the_configuration_schema_accepts_what_check_accepts(tmp_path: Path) -> None:
    schema = json.loads(schema_path("config").read_text())
    good = {
        "select": ["check"],
        "ignore": ["check.glob"],
        "per-file-ignores": {"99-*.conf": ["check.overridden"]},
        "fail-on": "warning",
        "kernel": "5.14",
        "facts": "hosts/web.yaml",
        "profile": "gridftp",
        "set": {"window": "4MiB"},
        "baseline": "sysctl-baseline.json",
    }
    jsonschema.validate(good, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"selekt": []}, schema)


def test_a_configuration_is_validated_once_per_text_and_a_stranger_entry_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import marshal
    import pickle

    from sysctl_advisor.cache.facts import facts_key

    cache = tmp_path / "cache"
    monkeypatch.setenv("SYSCTL_ADVISOR_CACHE", str(cache))
    repo = make_repo(tmp_path, 'ignore = ["check.tw-recycle-enabled"]\n', {"a.conf": RECYCLE})
    config = repo / ".sysctl-advisor.toml"
    assert run_in(repo, "check", "a.conf")[0] == 0  # validated, and kept
    cache_file = next((cache / "private").glob("facts-*.marshal"))
    entries = marshal.loads(cache_file.read_bytes())
    assert facts_key(config, config.read_text(), "CheckConfig") in entries
    # An edit is a new text: validated again, never the old settings.
    config.write_text('ignore = ["check.glob"]\n')
    assert run_in(repo, "check", "a.conf")[0] == 1
    # An entry under the configuration's key that is not a CheckConfig is refused: the file
    # is validated again (and the check runs with what it says).
    key = facts_key(config, config.read_text(), "CheckConfig")
    entries = {key: pickle.dumps({"ignore": ["check"]})}
    cache_file.write_bytes(marshal.dumps(entries))
    code, out, _ = run_in(repo, "check", "a.conf", "-f", "json")
    assert code == 1 and "check.tw-recycle-enabled" in _ids(out)
