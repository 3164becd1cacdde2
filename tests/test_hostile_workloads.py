"""A hostile-input review of the several-workloads work: `-p` repeated, profiles'
`includes:`, `--set PROFILE.NAME=V`, `merge:`, check's `profile = [...]`, the plan's
contradictions, the Redis/Valkey/PostgreSQL config readers and the application events. Each
payload is built at test time and run through the CLI: bad input is one line on stderr and
exit 2, never a traceback or an internal error, and nothing from a profile or a facts file
becomes a setting of a rendered file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from sysctl_advisor.outputs.plan_render import rendered_settings
from tests.commands.check_repo import make_repo, run_in
from tests.conftest import EXAMPLES, assert_one_line_error, invoke

APP_NODE = str(EXAMPLES / "app-node.yaml")
SHIPPED = ["redis", "postgresql", "frontend-proxy", "elasticsearch", "opensearch", "kafka"]


def run(*args: str) -> tuple[int, str, str]:
    result = invoke(*args)
    return result.exit_code, result.stdout, result.stderr


def profiles_dir(tmp_path: Path, profiles: dict[str, str]) -> str:
    directory = tmp_path / "profiles"
    directory.mkdir(exist_ok=True)
    for name, text in profiles.items():
        (directory / f"{name}.yaml").write_text(text)
    return str(directory)


def profile(name: str, includes: list[str] | None = None, extra: str = "") -> str:
    text = f"name: {name}\nsummary: s\nextends: base\n"
    if includes:
        text += "includes:\n" + "".join(f"  - {i}\n" for i in includes)
    return text + extra


def recommend(*args: str) -> tuple[int, str, str]:
    return run("recommend", "--facts", APP_NODE, *args)


# --- broke, fixed -----------------------------------------------------------------------------


def test_daemonset_refuses_a_label_the_api_server_would_refuse() -> None:
    """Seven shipped profiles join to a 69-character label: `-f kubernetes` refused it, but
    `-f daemonset` wrote it as the node label and the objects' names, exit 0."""
    flags = [f for name in [*SHIPPED, "valkey"] for f in ("-p", name)]
    for fmt in ("daemonset", "kubernetes"):
        code, _, err = recommend(*flags, "-f", fmt)
        assert_one_line_error(code, err, "cannot name Kubernetes objects", "includes:")
    code, out, _ = recommend(*flags, "-f", "talos")  # no label there: still written
    assert code == 0 and out
    code, out, _ = recommend("-p", "redis", "-p", "postgresql", "-f", "daemonset")
    assert code == 0 and "name: sysctl-advisor-redis.postgresql" in out


@pytest.mark.parametrize("name", ["x-", "a" * 64])
def test_a_profile_name_that_is_not_a_dns_label_is_refused(tmp_path: Path, name: str) -> None:
    """`x-` passed the old pattern, and `-p x- -p y` gave the label x-.y, which is a label value
    but not an object name (sysctl-advisor-x-.y); 64 characters can never be a label."""
    directory = profiles_dir(tmp_path, {name: profile(name), "y": profile("y")})
    code, _, err = recommend("--profiles-dir", directory, "-p", "y", "-f", "kubernetes")
    assert_one_line_error(code, err, "name", "does not match the pattern")


@pytest.mark.parametrize("parameter", ["a.b", "q #=x", "p\\nnet.core.somaxconn = 9", "1st"])
def test_a_parameter_name_must_be_one_a_rule_and_set_can_name(
    tmp_path: Path, parameter: str
) -> None:
    """`a.b` could not be given to --set (the dot names a profile), `q #=x` neither (the `=`),
    and a line break in a name reached the `profiles` listing raw."""
    extra = f'parameters:\n  "{parameter}":\n    type: int\n    default: 1\n    description: d\n'
    directory = profiles_dir(tmp_path, {"pn": profile("pn", extra=extra)})
    code, _, err = recommend("--profiles-dir", directory, "-p", "pn")
    assert_one_line_error(code, err, "parameter name")


def test_summary_and_unit_are_one_line(tmp_path: Path) -> None:
    """A summary holding `\\nnet.core.somaxconn = 7` printed as lines of their own, at the left
    margin, in `sysctl-advisor profiles`; a unit likewise after the parameter's name."""
    forged = "s\\nbase: a forged entry\\nnet.core.somaxconn = 7"
    summary = f'name: pn\nsummary: "{forged}"\nextends: base\n'
    unit = (
        "name: pn\nsummary: s\nextends: base\nparameters:\n  ok:\n    type: int\n"
        '    default: 1\n    unit: "u\\nvm.swappiness = 3"\n    description: d\n'
    )
    for text, field in ((summary, "summary"), (unit, "parameters.ok.unit")):
        directory = profiles_dir(tmp_path, {"pn": text})
        code, _, err = run("profiles", "--profiles-dir", directory)
        assert_one_line_error(code, err, field, "U+000A")


def test_check_refuses_an_empty_or_long_profile_list(tmp_path: Path) -> None:
    """`profile = []` planned for no workload at all and said nothing; 33 names said only
    that a string was expected."""
    for count, expected in ((0, "got 0"), (33, "got 33"), (10_000, "got 10000")):
        names = ", ".join(['"redis"'] * count)
        repo = make_repo(
            tmp_path / str(count),
            f'facts = "f.yaml"\nprofile = [{names}]\n',
            {"sysctl.d/10-a.conf": "net.core.somaxconn = 4096\n"},
        )
        (repo / "f.yaml").write_bytes(Path(APP_NODE).read_bytes())
        code, _, err = run_in(repo, "check", "sysctl.d")
        assert_one_line_error(code, err, ".sysctl-advisor.toml", "profile", "1 to 32", expected)


@pytest.mark.parametrize("value", ['["redis", 3]', '["redis", ["x"]]', "[{a = 1}]", "true"])
def test_check_refuses_a_profile_list_of_non_strings(tmp_path: Path, value: str) -> None:
    repo = make_repo(
        tmp_path,
        f'facts = "f.yaml"\nprofile = {value}\n',
        {"sysctl.d/10-a.conf": "net.core.somaxconn = 4096\n"},
    )
    (repo / "f.yaml").write_bytes(Path(APP_NODE).read_bytes())
    code, _, err = run_in(repo, "check", "sysctl.d")
    assert_one_line_error(code, err, ".sysctl-advisor.toml", "profile")


def facts_file(tmp_path: Path, change: Any) -> str:
    """app-node's facts, changed by `change`, as a facts file (JSON, which YAML reads: fast to
    write for payloads of 100,000 entries)."""
    data = yaml.safe_load(Path(APP_NODE).read_text())
    change(data)
    path = tmp_path / "facts.yaml"
    path.write_text(json.dumps(data))
    return str(path)


def _events(*events: dict[str, Any]) -> Any:
    return lambda data: data["observed"].__setitem__("app_events", list(events))


def test_an_app_event_counted_zero_times_is_refused(tmp_path: Path) -> None:
    """count: 0 with wants: 5000 had evidence.redis-somaxconn say the log "holds ... (0
    times)" and raise somaxconn to 5000."""
    event = {"family": "redis.tcp-backlog", "count": 0, "example": "x", "wants": 5000}
    code, _, err = run("recommend", "--facts", facts_file(tmp_path, _events(event)), "-p", "redis")
    assert_one_line_error(code, err, "observed.app_events.0.count")


def test_a_kernel_event_counted_zero_times_is_refused(tmp_path: Path) -> None:
    """An event is a line read: a count of 0 is evidence of nothing."""
    event = {"family": "tcp.out-of-memory", "count": 0, "example": "x"}
    setter = lambda data: data["observed"].__setitem__("kernel_events", [event])  # noqa: E731
    code, _, err = run("recommend", "--facts", facts_file(tmp_path, setter), "-p", "base")
    assert_one_line_error(code, err, "observed.kernel_events.0.count")


@pytest.mark.parametrize("wants", [True, "5000", 5000.0])
def test_wants_is_an_integer_exactly(tmp_path: Path, wants: Any) -> None:
    event = {"family": "redis.tcp-backlog", "count": 1, "example": "x", "wants": wants}
    code, _, err = run("recommend", "--facts", facts_file(tmp_path, _events(event)), "-p", "redis")
    assert_one_line_error(code, err, "observed.app_events.0.wants", "must be int")


def _service_facts(tmp_path: Path, services: dict[str, Any]) -> str:
    return facts_file(tmp_path, lambda data: data.__setitem__("services", services))


def _finding(out: str, rule: str) -> str:
    found = [f["message"] for f in json.loads(out)["findings"] if f["id"] == rule]
    assert len(found) == 1, found
    return found[0]


def test_an_unreadable_application_config_is_said(tmp_path: Path) -> None:
    """A FIFO, an oversized file, a path out of the facts' directory or a figure out of
    bounds: the reader refused each, and the plan went on with the defaults and said nothing
    (config_error reached no rule)."""
    os.mkfifo(tmp_path / "redis.conf")
    (tmp_path / "postgresql.conf").write_bytes(b"max_connections = 99999999\n")
    (tmp_path / "valkey.conf").write_bytes(b"tcp-backlog 1000\n" + b"#" * (2 << 20))
    facts = _service_facts(
        tmp_path,
        {
            "redis": {"config": "redis.conf"},
            "postgresql": {"config": "postgresql.conf"},
            "valkey": {"config": "valkey.conf"},
            "nginx": {"config": "/etc/passwd"},  # its own finding, not repeated here
        },
    )
    code, out, err = run(
        "recommend", "--facts", facts, "-p", "redis", "-p", "postgresql", "-f", "json"
    )
    assert code == 0, err
    message = _finding(out, "evidence.service-config-unreadable")
    assert "redis's configuration was not read in full" in message
    assert "not a regular file" in message
    assert "postgresql's configuration" in message and "max_connections is not" in message
    assert "valkey's configuration" in message and "larger than" in message
    assert "nginx's" not in message
    assert json.loads(out)["profile"]["params"]["max_connections"] == 100  # the default


def test_a_config_read_in_full_is_not_reported(tmp_path: Path) -> None:
    (tmp_path / "redis.conf").write_bytes(b"tcp-backlog 2048\n")
    facts = _service_facts(tmp_path, {"redis": {"config": "redis.conf"}})
    code, out, err = run("recommend", "--facts", facts, "-p", "redis", "-f", "json")
    assert code == 0, err
    assert json.loads(out)["profile"]["params"]["listen_backlog"] == 2048
    assert all(f["id"] != "evidence.service-config-unreadable" for f in json.loads(out)["findings"])


# --- held: each attack tried, and what stops it -------------------------------------------------


def test_an_includes_loop_or_self_include_is_one_line(tmp_path: Path) -> None:
    directory = profiles_dir(
        tmp_path,
        {"aa": profile("aa", ["bb"]), "bb": profile("bb", ["aa"]), "cc": profile("cc", ["cc"])},
    )
    for name in ("aa", "cc"):
        code, _, err = recommend("--profiles-dir", directory, "-p", name)
        assert_one_line_error(code, err, "includes", "loop")


def test_a_long_includes_chain_stops_at_the_workload_bound(tmp_path: Path) -> None:
    chain = {f"c{i}": profile(f"c{i}", [f"c{i + 1}"] if i < 499 else []) for i in range(500)}
    directory = profiles_dir(tmp_path, chain)
    code, _, err = recommend("--profiles-dir", directory, "-p", "c0")
    assert_one_line_error(code, err, "more than 32 profiles")
    code, _, err = recommend("--profiles-dir", directory, "-p", "c470")  # 30 deep: fine
    assert code == 0, err


def test_many_profile_flags(tmp_path: Path) -> None:
    code, out, err = recommend(*["-p", "redis"] * 10_000)
    assert code == 0, err
    assert "--profile redis --profile" not in out  # the rebuild line names it once
    directory = profiles_dir(tmp_path, {f"w{i}": profile(f"w{i}") for i in range(33)})
    flags = [f for i in range(33) for f in ("-p", f"w{i}")]
    code, _, err = recommend("--profiles-dir", directory, *flags)
    assert_one_line_error(code, err, "more than 32 profiles")
    code, _, err = recommend("-p", "redis", *["-p", "nope"] * 10_000)
    assert_one_line_error(code, err, "unknown profile 'nope'")


@pytest.mark.parametrize(
    ("setting", "fragment"),
    [
        ("..x=1", "is not a profile"),
        ("a.b.c=1", "'a' is not a profile"),
        ("redis.=1", "unknown parameter ''"),
        ("redis..listen_backlog=1", "unknown parameter '.listen_backlog'"),
        ("=1", "expected NAME=VALUE"),
        ("x", "expected NAME=VALUE"),
        ("ré\u202e.x=1", "\\u202e"),
        ("redis.li\x1bsten=1", "\\x1b"),
        ("listen_backlog=1\n2", "\\n"),
        ("listen_backlog=\u0661\u0662", "expected an integer"),
        ("listen_backlog=" + "9" * 5000, "expected an integer"),
        ("redis.listen_backlog=99999999999999999999", "above the maximum"),
        ("listen_backlog=nan", "expected an integer"),
    ],
)
def test_set_names_and_values(setting: str, fragment: str) -> None:
    code, _, err = recommend("-p", "redis", "-p", "postgresql", "--set", setting)
    assert_one_line_error(code, err, "--set", fragment)


def test_profile_text_with_line_breaks_never_becomes_a_setting(tmp_path: Path) -> None:
    """A --profiles-dir profile whose description and a str parameter's default hold `#`,
    `=`, `[sysctl]`, `---` and (the description) line breaks: every rendered file of a
    several-profile plan reads back as exactly the plan, and a listing prints the text
    indented under its profile."""
    evil = 'v # net.core.somaxconn = 8 ; [sysctl] \\" --- {a: b}'
    text = (
        'name: evil\nsummary: s\ndescription: "d\\nnet.core.somaxconn = 7\\n[sysctl]\\n'
        'vm.swappiness=1\\n# x"\nextends: base\nparameters:\n  tag:\n    type: str\n'
        f'    default: "{evil}"\n    description: "t\\nnet.core.rmem_max = 1"\n'
    )
    directory = profiles_dir(tmp_path, {"evil": text})
    base = ("--profiles-dir", directory, "-p", "evil", "-p", "redis", "-p", "postgresql")
    code, out, err = recommend(*base, "-f", "json")
    assert code == 0, err
    plan = {s["key"]: s["value"] for s in json.loads(out)["settings"]}
    assert json.loads(out)["profile"]["params"]["tag"] == evil.replace('\\"', '"')
    for fmt in ("conf", "tuned", "ansible"):
        code, out, err = recommend(*base, "-f", fmt)
        assert code == 0, err
        assert rendered_settings(fmt, out) == plan, fmt
    for fmt in ("markdown", "kubernetes", "daemonset"):
        code, out, err = recommend(*base, "-f", fmt)
        assert code == 0, err
        for line in out.splitlines():
            assert not line.startswith(("net.core.somaxconn", "vm.swappiness", "[sysctl]")), line
    code, out, err = run("profiles", "--profiles-dir", directory)
    assert code == 0, err
    listing = out[out.index("evil: s") :].split("\n\n")[0].splitlines()
    assert all(line.startswith("  ") for line in listing[1:]), listing


def test_a_str_parameter_set_with_a_line_break_is_refused(tmp_path: Path) -> None:
    extra = "parameters:\n  tag:\n    type: str\n    default: a\n    description: d\n"
    directory = profiles_dir(tmp_path, {"pn": profile("pn", extra=extra)})
    code, _, err = recommend(
        "--profiles-dir", directory, "-p", "pn", "--set", "tag=b\nnet.core.somaxconn = 4"
    )
    assert_one_line_error(code, err, "--set tag", "U+000A")


def test_a_several_profile_conf_reads_back_as_the_plan() -> None:
    """The renderer reads each file back as its consumer does (plan_render.check_rendered);
    the same read-back here, from outside, for a plan with a contradiction."""
    flags = [f for name in SHIPPED for f in ("-p", name)]
    code, out, err = recommend(*flags, "-f", "json")
    assert code == 0, err
    document = json.loads(out)
    assert "plan.contradiction" in {f["id"] for f in document["findings"]}
    plan = {s["key"]: s["value"] for s in document["settings"]}
    for fmt in ("conf", "tuned", "ansible"):
        for detail in ("normal", "brief", "none"):
            code, out, err = recommend(*flags, "-f", fmt, "--detail", detail)
            assert code == 0, err
            assert rendered_settings(fmt, out) == plan, (fmt, detail)


@pytest.mark.parametrize(
    ("name", "make"),
    [
        ("symlink out of the tree", lambda d: os.symlink("/etc/passwd", d / "redis.conf")),
        ("symlink to a device", lambda d: os.symlink("/dev/zero", d / "redis.conf")),
        ("a directory", lambda d: (d / "redis.conf").mkdir()),
        ("a link loop", lambda d: os.symlink("redis.conf", d / "redis.conf")),
        ("include", lambda d: (d / "redis.conf").write_bytes(b"include other.conf\n" * 50_000)),
    ],
)
def test_hostile_redis_configs_fall_back_and_say_so(tmp_path: Path, name: str, make: Any) -> None:
    make(tmp_path)
    facts = _service_facts(tmp_path, {"redis": {"config": "redis.conf"}})
    code, out, err = run("recommend", "--facts", facts, "-p", "redis", "-f", "json")
    assert code == 0, (name, err)
    assert json.loads(out)["profile"]["params"]["listen_backlog"] == 511, name
    assert "redis's configuration" in _finding(out, "evidence.service-config-unreadable")


def test_a_nul_filled_config_falls_back_and_says_why(tmp_path: Path) -> None:
    """Read (a regular file within the cap); its one tcp-backlog line, a NUL inside the
    figure, is not a number: the default stands, and the finding says why."""
    (tmp_path / "redis.conf").write_bytes(b"\0" * (1 << 19) + b"\ntcp-backlog 10\x0000\n")
    facts = _service_facts(tmp_path, {"redis": {"config": "redis.conf"}})
    code, out, err = run("recommend", "--facts", facts, "-p", "redis", "-f", "json")
    assert code == 0, err
    assert json.loads(out)["profile"]["params"]["listen_backlog"] == 511
    assert "not a number" in _finding(out, "evidence.service-config-unreadable")


@pytest.mark.parametrize("wants", [2**62, 2**31, 10**18])
def test_huge_wants_stay_within_the_keys_ranges(tmp_path: Path, wants: int) -> None:
    events = _events(
        {"family": "redis.tcp-backlog", "count": 1, "example": "x", "wants": wants},
        {"family": "elasticsearch.max-map-count", "count": 1, "example": "x", "wants": wants},
    )
    facts = facts_file(tmp_path, events)
    code, out, err = run(
        "recommend", "--facts", facts, "-p", "redis", "-p", "elasticsearch", "-f", "json"
    )
    assert code == 0, err
    values = {s["key"]: int(s["value"]) for s in json.loads(out)["settings"]}
    assert values["net.core.somaxconn"] <= 2**31 - 1
    assert values["vm.max_map_count"] <= 2**31 - 1


def test_app_events_and_udp_counters_at_and_past_their_bounds(tmp_path: Path) -> None:
    from sysctl_advisor.model.host_facts import MAX_COUNT, MAX_WANTS

    at = {"family": "redis.tcp-backlog", "count": MAX_COUNT, "example": "x", "wants": MAX_WANTS}
    udp_at = {"in_datagrams": MAX_COUNT, "rcvbuf_errors": MAX_COUNT, "mem_pages_peak": MAX_COUNT}

    def at_bounds(data: dict[str, Any]) -> None:
        data["observed"]["app_events"] = [at]
        data["observed"]["udp"] = udp_at

    code, _, err = run("recommend", "--facts", facts_file(tmp_path, at_bounds), "-p", "redis")
    assert code == 0, err
    past: list[tuple[str, Any]] = [
        (
            "app_events.0.wants",
            lambda d: d["observed"].__setitem__("app_events", [at | {"wants": MAX_WANTS + 1}]),
        ),
        (
            "app_events.0.count",
            lambda d: d["observed"].__setitem__("app_events", [at | {"count": MAX_COUNT + 1}]),
        ),
        ("app_events", lambda d: d["observed"].__setitem__("app_events", [at] * 1025)),
        (
            "udp.in_datagrams",
            lambda d: d["observed"].__setitem__("udp", udp_at | {"in_datagrams": MAX_COUNT + 1}),
        ),
        ("udp.rcvbuf_errors", lambda d: d["observed"].__setitem__("udp", {"in_datagrams": 1})),
        ("udp.mem_errors", lambda d: d["observed"].__setitem__("udp", udp_at | {"mem_errors": -1})),
    ]
    for field, change in past:
        code, _, err = run("recommend", "--facts", facts_file(tmp_path, change), "-p", "redis")
        assert_one_line_error(code, err, f"observed.{field}")


# --- not fixed here: knowledge/workloads.py is the lead's (the fix is in the report) ----------


def test_the_profile_s_own_set_wins_whatever_the_order() -> None:
    """`--set postgresql.max_connections=700 --set max_connections=600` planned 600: the
    unprefixed setting, given later, silently replaced the one meant for that profile."""
    for order in (
        ("max_connections=600", "postgresql.max_connections=700"),
        ("postgresql.max_connections=700", "max_connections=600"),
    ):
        flags = [f for s in order for f in ("--set", s)]
        code, out, err = recommend("-p", "redis", "-p", "postgresql", *flags, "-f", "json")
        assert code == 0, err
        assert json.loads(out)["profile"]["params"]["max_connections"] == 700, order


def test_an_empty_workload_is_refused() -> None:
    """build_plan(kb, host, []) (check's `profile = []` before the configuration refused it)
    gave a plan named '' with no setting and no finding."""
    from sysctl_advisor.commands.common import load_knowledge, read_facts
    from sysctl_advisor.engine.plan_builder import build_plan
    from sysctl_advisor.model.errors import InputError

    kb = load_knowledge()
    with pytest.raises(InputError, match="--profile"):
        build_plan(kb, read_facts(Path(APP_NODE), kb), [], {})


def test_a_profile_parameter_for_a_profile_not_run_is_blamed_on_the_configuration(
    tmp_path: Path,
) -> None:
    """`set = {"redis.x" = 1}` in the check configuration, with redis not among its profiles:
    the error names the file and key, not a --set that was never given."""
    facts = (EXAMPLES / "ec2-nginx-frontend.yaml").read_text()
    config = 'profile = ["frontend-proxy", "c1m-server"]\nfacts = "f.yaml"\n[set]\n"redis.x" = 1\n'
    repo = make_repo(tmp_path, config, {"f.yaml": facts, "sysctl.d/a.conf": "vm.swappiness = 10\n"})
    code, _, err = run_in(repo, "check", "sysctl.d")
    assert code == 2
    assert err.count("\n") == 1
    assert ".sysctl-advisor.toml: set.redis.x:" in err
    assert "'redis' is not a profile of this workload" in err
