"""Peaks over a window from Prometheus: a fake server in-process for answers and failures, and
Debian's real Prometheus (in a private network namespace) over blocks made with promtool.

The fake server evaluates only the one query shape the reader sends, but it decodes the label
matcher as PromQL does (Go string literal, RE2 anchored match), so a query that an escaping bug
lets a hostile hostname break out of is answered with a PromQL parse error, or matches the
wrong instances, just as the real server would. The real server then checks the same against
series whose instance labels carry quotes, backslashes and newlines.

`.ci/run` installs Debian's `prometheus` package (without starting it).
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from sysctl_advisor.commands.common import guarded
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.host_facts import Observed
from sysctl_advisor.model.model_base import validate
from sysctl_advisor.sources import prometheus
from sysctl_advisor.sources.prometheus import (
    FIGURES,
    parse_duration,
    promql_string,
    read_history,
    regex_literal,
)
from tests.conftest import HANG_SECONDS, ROOT, Cli, one_line_message
from tests.namespaces import in_namespace, needs_netns, processes_with

NOW = datetime(2026, 11, 22, 10, 0, 0, tzinfo=timezone.utc).timestamp()
WEEK = 7 * 86400
METRICS = {f.field: f.metric for f in FIGURES}


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """urllib honours http_proxy; the servers here are on loopback."""
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


# --- what PromQL does with a label matcher: the fake server's reading of a query -------------

_GO_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_GO_ESCAPES.update({"\\": "\\", '"': '"'})


def go_unquote(literal: str) -> str:
    """A double-quoted Go/PromQL string literal's value (strconv.Unquote), written here
    independently of the code under test."""
    assert literal[0] == literal[-1] == '"', literal
    body, out, i = literal[1:-1], [], 0
    while i < len(body):
        char = body[i]
        if char == "\n" or char == '"':
            raise ValueError("unescaped newline or quote inside a literal")
        if char != "\\":
            out.append(char)
            i += 1
            continue
        kind = body[i + 1]
        if kind in _GO_ESCAPES:
            out.append(_GO_ESCAPES[kind])
            i += 2
        elif kind in "xuU":
            digits = {"x": 2, "u": 4, "U": 8}[kind]
            out.append(chr(int(body[i + 2 : i + 2 + digits], 16)))
            i += 2 + digits
        else:
            raise ValueError(f"unknown escape \\{kind}")
    return "".join(out)


def re2_matches(pattern: str, text: str) -> bool:
    """An anchored RE2 match as Prometheus does it, via Python's re (\\x{HEX} translated)."""
    python = re.sub(r"\\x\{([0-9a-fA-F]+)\}", lambda m: re.escape(chr(int(m[1], 16))), pattern)
    return re.fullmatch(python, text, flags=re.DOTALL) is not None


QUERY = re.compile(
    r"(?P<outer>max|sum) by \(instance\) \((?P<inner>max_over_time|increase)\("
    r"(?P<metric>node_[A-Za-z_]+)\{instance(?P<op>=~?)(?P<literal>\"(?:[^\"\\\n]|\\.)*\")\}"
    r"\[(?P<window>[0-9]+)s\]\)\)"
)


@dataclass
class FakePrometheus:
    """Answers /api/v1/query from `series`: metric -> instance -> sample value text."""

    url: str = ""
    series: dict[str, dict[str, str]] = field(default_factory=dict)
    queries: list[dict[str, str]] = field(default_factory=list)
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    reply: Callable[[BaseHTTPRequestHandler], None] | None = None  # replaces the answer

    def answer(self, params: dict[str, str]) -> tuple[int, dict[str, Any]]:
        if params.get("query") == "vector(1)":  # fleet's check that the server answers
            one = [{"metric": {}, "value": [float(params["time"]), "1"]}]
            return 200, {"status": "success", "data": {"resultType": "vector", "result": one}}
        match = QUERY.fullmatch(params.get("query", ""))
        if match is None:
            return 400, {"status": "error", "errorType": "bad_data", "error": "parse error"}
        wanted = go_unquote(match["literal"])
        if match["op"] == "=":
            instances = [i for i in self.series.get(match["metric"], {}) if i == wanted]
        else:
            instances = [i for i in self.series.get(match["metric"], {}) if re2_matches(wanted, i)]
        at = float(params["time"])
        result = [
            {"metric": {"instance": i}, "value": [at, self.series[match["metric"]][i]]}
            for i in instances
        ]
        return 200, {"status": "success", "data": {"resultType": "vector", "result": result}}


def send(handler: BaseHTTPRequestHandler, status: int, body: bytes, **headers: str) -> None:
    handler.send_response(status)
    for name, value in {"Content-Type": "application/json", **headers}.items():
        handler.send_header(name.replace("_", "-"), value)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


@pytest.fixture
def fake() -> Iterator[FakePrometheus]:
    state = FakePrometheus()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            state.requests.append((parts.path, dict(self.headers.items())))
            if state.reply is not None:
                state.reply(self)
                return
            params = {k: v[0] for k, v in parse_qs(parts.query).items()}
            state.queries.append(params)
            status, document = state.answer(params)
            send(self, status, json.dumps(document).encode())

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()
    thread.join()


def full_series(instance: str, **values: str) -> dict[str, dict[str, str]]:
    """Every metric the reader asks for, for one instance (values by field name)."""
    defaults = {
        "orphans_peak": "21564",
        "time_wait_peak": "48000",
        "connections_peak": "9000",
        "tcp_mem_pages_peak": "123456",
        "listen_overflows": "1234.4999",  # increase() extrapolates: fractions are normal
        "listen_drops": "1234.5",
        "rx_overruns": "1000.2",
        "softnet_dropped": "0",
        "softnet_time_squeeze": "1.5e+03",
    }
    defaults.update(values)
    return {METRICS[name]: {instance: value} for name, value in defaults.items()}


def add(fake: FakePrometheus, series: dict[str, dict[str, str]]) -> None:
    for metric, by_instance in series.items():
        fake.series.setdefault(metric, {}).update(by_instance)


# --- fleet ---------------------------------------------------------------------------------


def test_fleet_takes_each_hosts_peaks_by_its_instance_label(
    cli: Cli, fake: FakePrometheus, tmp_path: Path
) -> None:
    """`fleet --prometheus URL --instance {host}:9100`: each host's plan uses its own peaks
    (an orphan peak that only one host saw sets tcp_max_orphans only there)."""
    from tests.commands.test_fleet import TREE

    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("web-01", "dtn-01"):
        shutil.copy(TREE / name, tree / name)
    add(fake, full_series("web-01:9100", orphans_peak="90000"))
    add(fake, full_series("dtn-01:9100", orphans_peak="10"))
    out = tmp_path / "out"
    args = ["fleet", "--ansible-facts", str(tree), "--profile", "base", "--out", str(out)]
    result = cli(*args, "--prometheus", fake.url, "--instance", "{host}:9100", "--since", "7d")
    assert result.exit_code == 0, result.stderr
    web = (out / "host_files" / "web-01.conf").read_text()
    dtn = (out / "host_files" / "dtn-01.conf").read_text()
    assert "net.ipv4.tcp_max_orphans = 360000" in web
    assert "(observed peaks: Prometheus over 7d, not in these facts)" in web  # the rebuild line
    assert "net.ipv4.tcp_max_orphans = 262144 (wanted 40;" in dtn  # kept: default covers it
    instances = {q["query"].split('instance="', 1)[1].split('"')[0] for q in fake.queries[1:]}
    assert instances == {"web-01:9100", "dtn-01:9100"}
    # with --detail, the rebuild line is still a command, the note after it
    brief = tmp_path / "brief"
    args[-1] = str(brief)
    result = cli(
        *args,
        "--prometheus",
        fake.url,
        "--instance",
        "{host}:9100",
        "--since",
        "7d",
        "--detail",
        "brief",
    )
    assert result.exit_code == 0, result.stderr
    rebuild = next(
        line
        for line in (brief / "host_files" / "web-01.conf").read_text().splitlines()
        if line.startswith("# rebuild:")
    )
    assert rebuild.endswith(
        "--detail brief  (observed peaks: Prometheus over 7d, not in these facts)"
    ), rebuild


def test_fleet_matches_the_inventory_name_not_the_hostname_a_host_reports(
    cli: Cli, fake: FakePrometheus, tmp_path: Path
) -> None:
    """A compromised host that calls itself db-01 still gets its own figures."""
    from tests.commands.test_fleet import TREE

    tree = tmp_path / "tree"
    tree.mkdir()
    facts = json.loads((TREE / "web-01").read_text())
    facts["ansible_facts"]["ansible_hostname"] = "db-01"
    (tree / "evil-07").write_text(json.dumps(facts))
    add(fake, full_series("evil-07:9100", orphans_peak="10"))
    add(fake, full_series("db-01:9100", orphans_peak="90000"))
    out = tmp_path / "out"
    args = ["fleet", "--ansible-facts", str(tree), "--profile", "base", "--out", str(out)]
    result = cli(*args, "--prometheus", fake.url)
    assert result.exit_code == 0, result.stderr
    conf = (out / "host_files" / "evil-07.conf").read_text()
    assert "(wanted 40; orphans.headroom)" in conf  # 4 x its own peak of 10
    assert "360000" not in conf


def test_fleet_stops_once_when_the_server_is_down(cli: Cli, tmp_path: Path) -> None:
    from tests.commands.test_fleet import TREE

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    args = ["fleet", "--ansible-facts", str(TREE), "--profile", "base"]
    result = cli(*args, "--out", str(tmp_path / "out"), "--prometheus", f"http://127.0.0.1:{port}")
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "connection refused" in result.stderr
    assert not (tmp_path / "out").exists()


# --- answers ---------------------------------------------------------------------------------


def test_peaks_and_increases_over_the_window(fake: FakePrometheus) -> None:
    add(fake, full_series("web-01:9100"))
    add(fake, full_series("db-01:9100", orphans_peak="99999"))
    observed = read_history(fake.url, instance="web-01:9100", hostname="db-01", since="7d", now=NOW)
    assert observed == {
        "orphans_peak": 21564,
        "time_wait_peak": 48000,
        "connections_peak": 9000,
        "tcp_mem_pages_peak": 123456,
        "listen_overflows": 1234,
        "listen_drops": 1235,  # halves round up
        "rx_overruns": 1000,
        "softnet_dropped": 0,
        "softnet_time_squeeze": 1500,
        "period": {
            "kind": "history",
            "source": f"prometheus {fake.url} instance=web-01:9100",
            "at": "2026-11-22T10:00:00Z",
            "window_seconds": WEEK,
            "gaps": [],
        },
    }
    validate(Observed, observed)
    # one query per metric, all at the same instant, over the window in seconds
    sent = [QUERY.fullmatch(q["query"]) for q in fake.queries]
    assert [m["metric"] if m else None for m in sent] == list(METRICS.values())
    assert {q["time"] for q in fake.queries} == {f"{NOW:.3f}"}
    assert all(f"[{WEEK}s]" in q["query"] for q in fake.queries)
    assert "max by (instance) (max_over_time(node_sockstat_TCP_orphan{" in fake.queries[0]["query"]
    assert "sum by (instance) (increase(node_softnet_dropped_total{" in fake.queries[7]["query"]


def test_hostname_matches_the_instance_with_any_port_and_nothing_else(
    fake: FakePrometheus,
) -> None:
    add(fake, full_series("web-01:9100"))
    for decoy in ("web-01.example.com:9100", "xweb-01:9100", "web-010:9100", "web-01:", "web-0"):
        add(fake, full_series(decoy, orphans_peak="99999"))
    observed = read_history(fake.url, instance=None, hostname="web-01", since="36h", now=NOW)
    assert observed["orphans_peak"] == 21564
    assert observed["period"]["source"].endswith(" instance=web-01:9100")
    assert observed["period"]["window_seconds"] == 36 * 3600
    assert 'instance=~"web\\\\-01(:[0-9]+)?"' in fake.queries[0]["query"]
    # a bare hostname label (no port) matches too
    fake.series.clear()
    add(fake, full_series("web-01"))
    assert read_history(fake.url, instance=None, hostname="web-01", since="1d", now=NOW)


def test_missing_series_nan_and_impossible_values_are_gaps(fake: FakePrometheus) -> None:
    series = full_series(
        "web-01:9100",
        softnet_dropped="NaN",
        rx_overruns="+Inf",
        connections_peak="-3",
        tcp_mem_pages_peak="1e300",
    )
    del series["node_netstat_TcpExt_ListenDrops"]
    add(fake, series)
    observed = read_history(fake.url, instance="web-01:9100", hostname=None, since="14d", now=NOW)
    for name in ("listen_drops", "softnet_dropped", "rx_overruns", "connections_peak"):
        assert name not in observed  # a gap is not 0
    assert observed["period"]["gaps"] == [
        "connections_peak: node_sockstat_TCP_inuse is negative (-3) for instance=web-01:9100",
        "tcp_mem_pages_peak: node_sockstat_TCP_mem is beyond any counter a host reports "
        "(1e300) for instance=web-01:9100",
        "listen_drops: no series node_netstat_TcpExt_ListenDrops for instance=web-01:9100",
        "rx_overruns: node_network_receive_fifo_total is infinite for instance=web-01:9100",
        "softnet_dropped: node_softnet_dropped_total is NaN for instance=web-01:9100",
    ]
    assert observed["orphans_peak"] == 21564 and observed["listen_overflows"] == 1234
    validate(Observed, observed)


def test_a_hostname_matching_several_instances_asks_for_instance(fake: FakePrometheus) -> None:
    add(fake, full_series("web-01:9100"))
    add(fake, {"node_sockstat_TCP_inuse": {"web-01:9200": "5"}})  # only one metric: still found
    with pytest.raises(InputError) as caught:
        read_history(fake.url, instance=None, hostname="web-01", since="7d", now=NOW)
    text = one_line_message(caught.value)
    assert caught.value.field == "--instance"
    assert "web-01:9100, web-01:9200" in text and "pass --instance" in text


def test_no_series_for_the_host_is_an_error_not_nine_gaps(fake: FakePrometheus) -> None:
    add(fake, full_series("db-01:9100"))
    with pytest.raises(InputError) as caught:
        read_history(fake.url, instance=None, hostname="web-01", since="7d", now=NOW)
    one_line_message(caught.value, "found no instance: pass --instance")
    with pytest.raises(InputError) as caught:
        read_history(fake.url, instance="web-01", hostname=None, since="7d", now=NOW)
    one_line_message(caught.value, 'instance="web-01"')
    assert "host:9100" in str(caught.value)


def test_neither_instance_nor_hostname(fake: FakePrometheus) -> None:
    for hostname in (None, ""):
        with pytest.raises(InputError) as caught:
            read_history(fake.url, instance=None, hostname=hostname, since="7d")
        assert caught.value.field == "--instance" and "pass --instance" in one_line_message(
            caught.value
        )
    assert fake.requests == []


def test_path_prefix_and_basic_auth_credentials_stay_out_of_the_facts(
    fake: FakePrometheus,
) -> None:
    add(fake, full_series("web-01:9100"))
    port = fake.url.rsplit(":", 1)[1]
    url = f"http://ops:s%3Acret@127.0.0.1:{port}/prometheus/"
    observed = read_history(url, instance="web-01:9100", hostname=None, since="7d", now=NOW)
    path, headers = fake.requests[0]
    assert path == "/prometheus/api/v1/query"
    assert headers["Authorization"] == "Basic b3BzOnM6Y3JldA=="  # ops:s:cret
    assert observed["period"]["source"] == (
        f"prometheus http://127.0.0.1:{port}/prometheus instance=web-01:9100"
    )
    fake.reply = lambda handler: send(handler, 503, b"down for maintenance")
    with pytest.raises(InputError) as caught:
        read_history(url, instance="web-01:9100", hostname=None, since="7d", now=NOW)
    assert "cret" not in str(caught.value) and "ops" not in str(caught.value)


# --- hostile label values ----------------------------------------------------------------------


def hostile_values() -> list[str]:
    """Instance labels and hostnames written to break out of a PromQL string or regex."""
    every_control = "".join(chr(c) for c in range(1, 32)) + "\x7f\x85\u2028\u2029\u202e\ufeff"
    return [
        'web-01"} or vector(1) or up{instance="',
        'web-01\\"} or vector(1) #\\',
        "web-01\\",
        "web-01\n} or vector(1)",
        ".*",
        "web-01|.*",
        "(web-01)?.*",
        "web-01`'${x}$1",
        f"w{every_control}x",
        "ünïcödé-01\U0001f600",
        "x" * 1000,
    ]


@pytest.mark.parametrize("hostile", hostile_values(), ids=range(len(hostile_values())))
def test_a_hostile_instance_label_is_matched_literally(fake: FakePrometheus, hostile: str) -> None:
    add(fake, full_series("web-01:9100", orphans_peak="99999"))
    add(fake, full_series("decoy", orphans_peak="88888"))
    add(fake, full_series(hostile, orphans_peak="777"))
    observed = read_history(fake.url, instance=hostile, hostname=None, since="7d", now=NOW)
    assert observed["orphans_peak"] == 777
    for query in fake.queries:
        match = QUERY.fullmatch(query["query"])
        assert match is not None, query["query"]  # one matcher, nothing after the literal
        assert match["op"] == "=" and go_unquote(match["literal"]) == hostile
    validate(Observed, observed)  # the source line stays printable text


@pytest.mark.parametrize("hostile", hostile_values(), ids=range(len(hostile_values())))
def test_a_hostile_hostname_matches_only_itself(fake: FakePrometheus, hostile: str) -> None:
    add(fake, full_series(hostile + ":9100", orphans_peak="777"))
    for decoy in ("web-01:9100", "decoy", hostile + "x:9100", hostile + ":", "x" + hostile):
        add(fake, full_series(decoy, orphans_peak="88888"))
    observed = read_history(fake.url, instance=None, hostname=hostile, since="7d", now=NOW)
    assert observed["orphans_peak"] == 777
    for query in fake.queries:
        match = QUERY.fullmatch(query["query"])
        assert match is not None and match["op"] == "=~", query["query"]
        assert go_unquote(match["literal"]) == regex_literal(hostile) + "(:[0-9]+)?"
    assert observed["period"]["source"].endswith(prometheus._shown(hostile + ":9100"))
    validate(Observed, observed)


def test_literals_read_back_as_written() -> None:
    for value in [*hostile_values(), "", "plain"]:
        assert go_unquote(promql_string(value)) == value
        assert re2_matches(regex_literal(value), value)
        assert not re2_matches(regex_literal(value), value + "x")
    assert promql_string('a"b\\c\nd\te') == '"a\\"b\\\\c\\nd\\u0009e"'
    assert regex_literal("web-01.example_2 x") == "web\\-01\\.example_2\\x{20}x"


def test_label_values_that_are_not_text_are_refused(fake: FakePrometheus) -> None:
    refused = (("\udce9", "not valid Unicode"), ("x" * 1025, "longer than 1024"), ("", "empty"))
    for value, why in refused:
        with pytest.raises(InputError) as caught:
            read_history(fake.url, instance=value, hostname=None, since="7d")
        assert caught.value.field == "--instance" and f"the instance is {why}" in one_line_message(
            caught.value
        )
        if value:  # an empty hostname is an unknown one
            with pytest.raises(InputError) as caught:
                read_history(fake.url, instance=None, hostname=value, since="7d")
            assert f"the host's hostname (pass --instance) is {why}" in one_line_message(
                caught.value
            )
    assert fake.requests == []


# --- --since -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("14d", 14 * 86400),
        ("36h", 36 * 3600),
        ("90m", 90 * 60),
        ("1w", WEEK),
        ("1d12h", 36 * 3600),
        ("1w2d3h4m5s", WEEK + 2 * 86400 + 3 * 3600 + 4 * 60 + 5),
        ("1m", 60),
        ("60s", 60),
        ("60000ms", 60),
        ("1y", 365 * 86400),
        ("400d", 400 * 86400),
        (" 7d ", WEEK),
    ],
)
def test_since_durations(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    "text",
    [
        "", "14", "d", "1.5d", "-1d", "+1d", "14 d", "1h1d", "1d1d", "14D", "2 weeks", "P14D",
        "59s", "0d", "401d", "2y", "9" * 30 + "d", "1d\n1h", "1d;rm -rf /", "\x00",
    ],
)  # fmt: skip
def test_since_refused_on_one_line(text: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_duration(text)
    assert caught.value.field == "--since"
    one_line_message(caught.value, "e.g. 14d, 36h")


def test_since_is_checked_before_any_query(fake: FakePrometheus) -> None:
    with pytest.raises(InputError, match="--since"):
        read_history(fake.url, instance="web-01:9100", hostname=None, since="30s")
    assert fake.requests == []


# --- servers that fail -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "ftp://127.0.0.1/",
        "file:///etc/passwd",
        "localhost:9090",
        "127.0.0.1:9090",
        "http://",
        "http://127.0.0.1:9090/?x=1",
        "http://127.0.0.1:9090/#top",
        "http://127.0.0.1:99999/",
        "http://127.0.0.1:9090/\nHost: evil",
        "http://127.0.0.1: 9090/",
        "http://x/" + "a" * 3000,
    ],
)
def test_only_http_and_https_urls(url: str) -> None:
    with pytest.raises(InputError) as caught:
        read_history(url, instance="web-01:9100", hostname=None, since="7d", timeout=0.5)
    assert caught.value.field == "--prometheus"
    one_line_message(caught.value)


def prometheus_error(handler: BaseHTTPRequestHandler) -> None:
    body = {"status": "error", "errorType": "bad_data", "error": "1:1: parse error\n\x1b[31mred"}
    send(handler, 400, json.dumps(body).encode())


def deep_json(handler: BaseHTTPRequestHandler) -> None:
    send(handler, 200, b'{"status": "success", "data": ' + b"[" * 40 + b"]" * 40 + b"}")


def very_deep_json(handler: BaseHTTPRequestHandler) -> None:
    send(handler, 200, b"[" * 100_000 + b"]" * 100_000)


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (lambda h: send(h, 500, b"<html>oops</html>", Content_Type="text/html"), "HTTP 500"),
        (lambda h: send(h, 404, b"404 page not found"), "HTTP 404 Not Found"),
        (prometheus_error, "HTTP 400 Bad Request: bad_data: 1:1: parse error [31mred"),
        (lambda h: send(h, 200, b"<html>Grafana</html>", Content_Type="text/html"), "not JSON"),
        (lambda h: send(h, 200, b"\xff\xfe"), "not UTF-8"),
        (lambda h: send(h, 200, b'{"status":"error","error":"timeout"}'), "query failed"),
        (lambda h: send(h, 200, b'{"data": {}}'), "no status"),
        (lambda h: send(h, 200, b"[]"), "no status"),
        (
            lambda h: send(h, 200, b'{"status":"success","data":{"resultType":"matrix"}}'),
            "not an instant vector",
        ),
        (
            lambda h: send(
                h, 200, b'{"status":"success","data":{"resultType":"vector","result":[1]}}'
            ),
            "is not {metric",
        ),
        (deep_json, "nests more than 16 levels"),
        (very_deep_json, "not JSON"),
        (lambda h: h.wfile.write(b"SSH-2.0-OpenSSH_9.2\r\n"), "not an HTTP answer"),
        (lambda h: None, "closed the connection"),
    ],
    ids=[
        "500",
        "404",
        "prometheus-error",
        "html",
        "binary",
        "status-error",
        "no-status",
        "list",
        "matrix",
        "bad-series",
        "deep",
        "very-deep",
        "not-http",
        "hangup",
    ],
)
def test_a_failing_server_is_one_line_naming_the_url(
    fake: FakePrometheus, reply: Callable[[BaseHTTPRequestHandler], None], reason: str
) -> None:
    fake.reply = reply
    with pytest.raises(InputError) as caught:
        read_history(fake.url, instance="web-01:9100", hostname=None, since="7d", now=NOW)
    text = one_line_message(caught.value)
    assert caught.value.field == "--prometheus"
    assert f"Prometheus at {fake.url}: " in text and reason in text
    assert len(fake.requests) == 1  # the first failure ends the reading


def test_redirects_are_not_followed(fake: FakePrometheus) -> None:
    target = f"{fake.url}/elsewhere"
    fake.reply = lambda h: send(h, 302, b"", Location=target)
    with pytest.raises(InputError) as caught:
        read_history(fake.url, instance="web-01:9100", hostname=None, since="7d")
    one_line_message(caught.value, f"HTTP 302 Found: redirects to {target} (not followed)")
    assert [path for path, _ in fake.requests] == ["/api/v1/query"]


@pytest.mark.parametrize("declared", [True, False])
def test_the_answer_is_bounded(
    fake: FakePrometheus, monkeypatch: pytest.MonkeyPatch, declared: bool
) -> None:
    monkeypatch.setattr(prometheus, "MAX_ANSWER", 100_000)
    body = json.dumps({"status": "success", "data": {"padding": "x" * 200_000}}).encode()

    def big(handler: BaseHTTPRequestHandler) -> None:
        if declared:
            send(handler, 200, body)
        else:  # no Content-Length: read until the server closes
            handler.send_response(200)
            handler.end_headers()
            handler.wfile.write(body)
            handler.close_connection = True

    fake.reply = big
    with pytest.raises(InputError) as caught:
        read_history(fake.url, instance="web-01:9100", hostname=None, since="7d")
    one_line_message(caught.value, "the answer is larger than 100,000 bytes")


@contextlib.contextmanager
def _raw_server(
    serve: Callable[[socket.socket, threading.Event], None],
) -> Iterator[tuple[str, list[socket.socket]]]:
    """A bare TCP server that hands each connection to `serve` (with the event set when the
    test ends); its URL and the connections it accepted, all closed at the end."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    stop = threading.Event()
    accepted: list[socket.socket] = []

    def loop() -> None:
        with contextlib.suppress(OSError):  # the listener closed at the end of the test
            while not stop.is_set():
                accepted.append(listener.accept()[0])
                serve(accepted[-1], stop)

    threading.Thread(target=loop, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", accepted
    finally:
        stop.set()
        listener.close()
        for connection in accepted:
            connection.close()


def _timed_out(url: str) -> tuple[str, float]:
    """The one-line error of a 0.5 s query of url, and how long it took."""
    started = time.monotonic()
    with pytest.raises(InputError) as caught:
        read_history(url, instance="web-01:9100", hostname=None, since="7d", timeout=0.5)
    return one_line_message(caught.value), time.monotonic() - started


def test_a_server_that_never_answers_times_out() -> None:
    with _raw_server(lambda connection, stop: None) as (url, accepted):  # never a byte back
        message, elapsed = _timed_out(url)
        assert accepted, "the request reached the server"
    assert 0.45 <= elapsed < HANG_SECONDS
    assert message == f"--prometheus: Prometheus at {url}: no answer within 0.5 s"


def test_a_slow_trickle_is_bounded_by_the_timeout(fake: FakePrometheus) -> None:
    def trickle(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.end_headers()
        try:
            for _ in range(int(HANG_SECONDS * 20)):  # a byte every 0.1 s: never idle for the
                # socket timeout, and trickling for twice HANG_SECONDS
                handler.wfile.write(b" ")
                handler.wfile.flush()
                time.sleep(0.1)
        except OSError:
            pass

    fake.reply = trickle
    started = time.monotonic()
    with pytest.raises(InputError) as caught:
        read_history(fake.url, instance="web-01:9100", hostname=None, since="7d", timeout=0.5)
    assert time.monotonic() - started < HANG_SECONDS  # the 0.5 s timeout, not the trickle
    one_line_message(caught.value, "no complete answer within 0.5 s")


def test_only_series_of_exactly_the_instance_asked_for_are_taken(fake: FakePrometheus) -> None:
    """A server (or a proxy before it) that answers `instance="web-01:9100"`
    with the series of `web-01:9100-canary` or `web-01:91000`: those are not this host's."""
    original = fake.answer

    def prefixed(params: dict[str, str]) -> tuple[int, dict[str, Any]]:
        status, document = original(params)
        for series in document.get("data", {}).get("result", []):
            if "instance" in series["metric"]:
                series["metric"]["instance"] += "-canary"
        return status, document

    add(fake, full_series("web-01:9100"))
    fake.answer = prefixed  # type: ignore[method-assign]
    with pytest.raises(InputError) as caught:
        read_history(fake.url, instance="web-01:9100", hostname=None, since="7d")
    one_line_message(caught.value, "no node_exporter series")
    with pytest.raises(InputError) as caught:
        read_history(fake.url, instance=None, hostname="web-01", since="7d")
    one_line_message(caught.value, "found no instance")


def test_an_error_answer_nested_deep_is_one_error(fake: FakePrometheus) -> None:
    """An HTTP error whose body nests 200,000 levels was a RecursionError
    (exit 3); it is the HTTP error, in one line."""
    fake.reply = lambda handler: send(handler, 400, b"[" * 200_000 + b"]" * 200_000)
    with pytest.raises(InputError) as caught:
        read_history(fake.url, instance="web-01:9100", hostname=None, since="7d")
    one_line_message(caught.value, "HTTP 400")


def test_trickled_headers_are_bounded_by_the_timeout() -> None:
    """A server that sends its headers a byte at a time, never idle for the
    socket timeout, is cut off at --query-timeout: the timeout bounds the whole request."""

    def trickle(connection: socket.socket, stop: threading.Event) -> None:
        for byte in b"HTTP/1.1 200 OK\r\n" + b"X-Slow: " + b"a" * 100_000:
            if stop.is_set():
                return
            connection.sendall(bytes([byte]))
            time.sleep(0.1)

    with _raw_server(trickle) as (url, _):
        message, elapsed = _timed_out(url)
    assert elapsed < HANG_SECONDS  # the 0.5 s timeout, not the trickle
    assert "no complete answer within 0.5 s" in message


def test_connection_refused() -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{probe.getsockname()[1]}/"
    probe.close()  # nothing listens there now
    with pytest.raises(InputError) as caught:
        read_history(url, instance="web-01:9100", hostname=None, since="7d")
    assert one_line_message(caught.value).startswith(
        f"--prometheus: Prometheus at {url.rstrip('/')}: connection refused"
    )
    # as the command prints it: one line, exit 2
    assert guarded(lambda: len(read_history(url, instance="x", hostname=None, since="7d"))) == 2


# --- the real thing: Debian's Prometheus over blocks made by promtool ------------------------

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
STEP = 60
DAYS = 3
# Sent as \", \\, \n, \u0009 and \u2028 escapes (the regex: \x{20}, \x{9}) to the real server.
HOSTILE_INSTANCE = 'web-01:9100"} or node_sockstat_TCP_orphan{instance=~".*\\\n\t\u2028\u00e9'
HOSTILE_HOST = 'h.*|x"\\\n( \t'


@dataclass
class Series:
    metric: str
    labels: dict[str, str]
    values: list[tuple[int, float]]  # (unix seconds, value)


def om_labels(labels: dict[str, str]) -> str:
    def escape(value: str) -> str:
        return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

    return ",".join(f'{k}="{escape(v)}"' for k, v in sorted(labels.items()))


def openmetrics(series: list[Series]) -> str:
    """OpenMetrics text: each family once, its series one after another, `# EOF` last."""
    lines: list[str] = []
    for metric in dict.fromkeys(s.metric for s in series):
        # node_exporter's types: sockstat gauges, netstat untyped, the rest counters (whose
        # OpenMetrics family name drops _total)
        kind = "gauge" if "sockstat" in metric else "unknown" if "netstat" in metric else "counter"
        lines.append(f"# TYPE {metric.removesuffix('_total')} {kind}")
        for one in (s for s in series if s.metric == metric):
            labels = om_labels(one.labels)
            lines.extend(f"{metric}{{{labels}}} {v:g} {t}" for t, v in one.values)
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def gauge(times: list[int], base: int, peaks: dict[int, int]) -> list[tuple[int, float]]:
    return [(t, float(peaks.get(i, base + i % 37))) for i, t in enumerate(times)]


def counter(
    times: list[int], start: int, increase: int, reset_at: int | None = None
) -> list[tuple[int, float]]:
    """Rises by `increase` in all, evenly over the middle half; drops to 0 at sample
    `reset_at` (a reboot) and counts on from there."""
    n = len(times)
    values, value, left = [], float(start), increase
    for i, t in enumerate(times):
        if i == reset_at:
            value = 0.0
        if n // 4 <= i < 3 * n // 4 and left:
            step = max(1, increase // (n // 2))
            value += min(step, left)
            left -= min(step, left)
        values.append((t, value))
    return values


def node_series(end: int) -> list[Series]:
    times = list(range(end - DAYS * 86400, end + 1, STEP))
    n = len(times)
    hourly = times[:: 3600 // STEP]
    web = {"instance": "web-01:9100", "job": "node"}

    def cpu(c: int) -> dict[str, str]:
        return {**web, "cpu": str(c)}

    def dev(d: str) -> dict[str, str]:
        return {**web, "device": d}

    one_day, twelve_hours = 86400 // STEP, 43200 // STEP
    series = [
        # orphans: 21564 once, a day before the end (inside --since 36h too)
        Series("node_sockstat_TCP_orphan", web, gauge(times, 100, {n - 1 - one_day: 21564})),
        # time-wait: 48000 2.5 days back (outside 36h), 30000 12 h back (inside)
        Series(
            "node_sockstat_TCP_tw",
            web,
            gauge(times, 2000, {n // 6: 48000, n - 1 - twelve_hours: 30000}),
        ),
        Series("node_sockstat_TCP_inuse", web, gauge(times, 500, {3 * n // 4: 9000})),
        Series("node_sockstat_TCP_mem", web, gauge(times, 90, {n // 2: 123456})),
        Series(
            "node_netstat_TcpExt_ListenOverflows",
            web,
            counter(times, 5_000_000, 1200, reset_at=n // 2),
        ),
        # node_netstat_TcpExt_ListenDrops: deliberately absent
        Series("node_network_receive_fifo_total", dev("eth0"), counter(times, 10**6, 700)),
        Series("node_network_receive_fifo_total", dev("eth1"), counter(times, 5, 300)),
        Series("node_network_receive_fifo_total", dev("lo"), counter(times, 0, 0)),
        Series("node_softnet_dropped_total", cpu(0), counter(times, 77, 40)),
        Series("node_softnet_dropped_total", cpu(1), counter(times, 3, 2)),
        Series("node_softnet_times_squeezed_total", cpu(0), counter(times, 90_000, 1200)),
        Series("node_softnet_times_squeezed_total", cpu(1), counter(times, 12_000, 300)),
    ]
    # Other instances, hourly: bigger figures that must not leak into web-01's.
    others = {
        "web-01.example.com:9100": 99999,
        "dup:9100": 11,
        "dup:9200": 12,
        HOSTILE_INSTANCE: 777,
        "web-01:9100x": 55555,
        HOSTILE_HOST + ":9100": 888,
        "hX:9100": 66666,  # what h.* would match, were the hostname not escaped
        HOSTILE_HOST + ":x9100": 44444,
    }
    for instance, peak in others.items():
        labels = {"instance": instance, "job": "node"}
        flat = [(t, float(peak)) for t in hourly]
        series.append(Series("node_sockstat_TCP_orphan", labels, flat))
        series.append(Series("node_sockstat_TCP_inuse", labels, flat))
    return series


# Runs inside the namespace: read_history called directly, and through `guarded` against a
# port nothing listens on, as the command would. Prints one JSON document.
DIRECT = """
import json, sys
from sysctl_advisor.commands.common import guarded
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.host_facts import Observed
from sysctl_advisor.sources.prometheus import read_history
from sysctl_advisor.model.model_base import validate

url, now, hostile_instance, hostile_host = sys.argv[1], float(sys.argv[2]), *json.loads(sys.argv[3])
out = {}
def run(name, **kwargs):
    kwargs.setdefault("since", "7d")
    try:
        out[name] = read_history(url, now=now, **kwargs)
        validate(Observed, out[name])
    except InputError as exc:
        out[name] = {"error": str(exc)}

run("exact", instance="web-01:9100", hostname=None)
run("36h", instance="web-01:9100", hostname=None, since="36h")
run("hostname", instance=None, hostname="web-01")
run("several", instance=None, hostname="dup")
run("none", instance=None, hostname="db-07")
run("hostile_instance", instance=hostile_instance, hostname=None)
run("hostile_host", instance=None, hostname=hostile_host)
out["down_exit"] = guarded(lambda: len(read_history(
    "http://127.0.0.1:9099", instance="web-01:9100", hostname=None, since="7d")))
print(json.dumps(out))
"""

WAIT_READY = """
import sys, time, urllib.request
for _ in range(300):
    try:
        with urllib.request.urlopen(sys.argv[1] + "/-/ready", timeout=1) as answer:
            if answer.status == 200:
                sys.exit(0)
    except OSError:
        pass
    time.sleep(0.05)
sys.exit("prometheus did not become ready")
"""

# $1 work dir, $2 python, $3 port, $4 prometheus, $5 the time the data ends near, $6 the hostile
# labels (JSON), $7 the repository. Prometheus dies with the trap; `timeout` (which passes the
# trap's SIGTERM on) ends it even if this script is killed first.
SCRIPT = """
cd "$1"
export PYTHONPATH="$7"
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY
timeout 50 "$4" --config.file="$1/prometheus.yml" --storage.tsdb.path="$1/data" \
    --web.listen-address="127.0.0.1:$3" --storage.tsdb.retention.time=30d \
    > "$1/prometheus.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
"$2" "$1/wait_ready.py" "http://127.0.0.1:$3" || { tail -20 "$1/prometheus.log" >&2; exit 1; }
set +e
"$2" "$1/direct.py" "http://127.0.0.1:$3" "$5" "$6" > "$1/direct.json" 2> "$1/direct.err"
echo $? > "$1/direct.rc"
"$2" -m sysctl_advisor facts --prometheus "http://127.0.0.1:$3" --instance web-01:9100 --since 7d \
    --format json > "$1/facts.json" 2> "$1/facts.err"
echo $? > "$1/facts.rc"
"$2" -m sysctl_advisor facts --prometheus "http://127.0.0.1:9099" --instance web-01:9100 \
    --since 7d --format json > "$1/down.out" 2> "$1/down.err"
echo $? > "$1/down.rc"
"""


@dataclass
class RealRun:
    work: Path
    seconds: float

    def read(self, name: str) -> str:
        return (self.work / name).read_text()


@pytest.fixture(scope="module")
def real_prometheus(tmp_path_factory: pytest.TempPathFactory) -> RealRun:
    for binary in (PROMETHEUS, PROMTOOL):
        if not Path(binary).exists():
            pytest.skip(f"{binary} is not installed (Debian package prometheus)")
    started = time.monotonic()
    work = tmp_path_factory.mktemp("prometheus")
    now = int(time.time())
    data = work / "metrics.om"
    data.write_text(openmetrics(node_series(end=now - 120)))
    created = subprocess.run(
        [
            PROMTOOL,
            "tsdb",
            "create-blocks-from",
            "openmetrics",
            "-q",
            str(data),
            str(work / "data"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert created.returncode == 0, created.stderr
    (work / "prometheus.yml").write_text("global:\n  scrape_interval: 1m\n")
    (work / "direct.py").write_text(DIRECT)
    (work / "wait_ready.py").write_text(WAIT_READY)
    hostile = json.dumps([HOSTILE_INSTANCE, HOSTILE_HOST])
    args = (str(work), sys.executable, "9090", PROMETHEUS, str(now), hostile, str(ROOT))
    result = in_namespace(SCRIPT, *args, timeout=60)
    assert result.returncode == 0, result.stderr
    assert processes_with(str(work)) == []  # prometheus is gone
    (work / "now").write_text(str(now))
    return RealRun(work, time.monotonic() - started)


@needs_netns
def test_real_prometheus_peaks_window_and_gap(real_prometheus: RealRun) -> None:
    run = real_prometheus
    assert run.read("direct.rc").strip() == "0", run.read("direct.err")
    out = json.loads(run.read("direct.json"))
    exact = out["exact"]
    assert {k: v for k, v in exact.items() if k != "period"} == {
        "orphans_peak": 21564,
        "time_wait_peak": 48000,
        "connections_peak": 9000,
        "tcp_mem_pages_peak": 123456,
        "listen_overflows": 1200,  # across a counter reset
        "rx_overruns": 1000,  # eth0 + eth1 + lo
        "softnet_dropped": 42,  # cpu0 + cpu1
        "softnet_time_squeeze": 1500,
    }
    now = int(run.read("now"))
    assert exact["period"] == {
        "kind": "history",
        "source": "prometheus http://127.0.0.1:9090 instance=web-01:9100",
        "at": datetime.fromtimestamp(now, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "window_seconds": WEEK,
        "gaps": [
            "listen_drops: no series node_netstat_TcpExt_ListenDrops for instance=web-01:9100"
        ],
    }
    # 36 h: the time-wait peak 2.5 days back falls out, the one 12 h back stays
    assert out["36h"]["time_wait_peak"] == 30000 and out["36h"]["orphans_peak"] == 21564
    assert out["36h"]["period"]["window_seconds"] == 36 * 3600
    assert out["hostname"] == exact  # web-01 -> web-01:9100, not web-01.example.com:9100
    assert run.seconds < HANG_SECONDS, f"the real Prometheus test took {run.seconds:.1f} s"


@needs_netns
def test_real_prometheus_instance_selection_and_hostile_labels(real_prometheus: RealRun) -> None:
    out = json.loads(real_prometheus.read("direct.json"))
    assert "dup:9100, dup:9200" in out["several"]["error"]
    assert "found no instance: pass --instance" in out["none"]["error"]
    # the label values that would break a carelessly built query match only themselves
    assert out["hostile_instance"]["orphans_peak"] == 777
    assert out["hostile_host"]["orphans_peak"] == 888
    assert out["hostile_host"]["period"]["source"].endswith(
        prometheus._shown(HOSTILE_HOST + ":9100")
    )
    assert out["hostile_instance"]["period"]["source"] == (
        f"prometheus http://127.0.0.1:9090 instance={json.dumps(HOSTILE_INSTANCE)}"
    )
    for name in ("hostile_instance", "hostile_host"):
        assert len(out[name]["period"]["gaps"]) == 7  # these instances have two metrics only
        assert out[name]["connections_peak"] == out[name]["orphans_peak"]
    assert out["down_exit"] == 2
    assert "connection refused" in real_prometheus.read("direct.err")
    assert len(real_prometheus.read("direct.err").splitlines()) == 1


@needs_netns
def test_real_prometheus_through_the_facts_command(real_prometheus: RealRun) -> None:
    run = real_prometheus
    assert run.read("facts.rc").strip() == "0", run.read("facts.err")
    observed = json.loads(run.read("facts.json"))["observed"]
    assert observed["orphans_peak"] == 21564
    assert observed["time_wait_peak"] == 48000
    assert observed["softnet_time_squeeze"] == 1500
    assert "listen_drops" not in observed
    assert observed["period"]["kind"] == "history"
    assert observed["period"]["window_seconds"] == WEEK
    assert observed["period"]["gaps"] == [
        "listen_drops: no series node_netstat_TcpExt_ListenDrops for instance=web-01:9100",
        # this host's /proc/net/snmp counters are since boot: left out of a window's figures
        "udp: /proc/net/snmp counters since boot are not read over the window",
    ]
    assert "udp" not in observed


@needs_netns
def test_real_prometheus_down_is_exit_2_and_one_line(real_prometheus: RealRun) -> None:
    run = real_prometheus
    assert run.read("down.rc").strip() == "2", run.read("down.err")
    assert run.read("down.out") == ""
    assert run.read("down.err").splitlines() == [
        "sysctl-advisor: error: --prometheus: Prometheus at http://127.0.0.1:9099: "
        "connection refused (is the server running, and is the port right?)"
    ]


def test_udp_counters_since_boot_are_left_out_of_a_history_window() -> None:
    """observed.udp comes from /proc (since boot); with figures over a window it would be read
    as counted over that window, so it is dropped and named in the gaps."""
    from sysctl_advisor.sources.prometheus import with_history

    snapshot = {
        "period": {"kind": "snapshot", "source": "/proc", "at": "2026-11-22T10:00:00Z"},
        "udp": {"in_datagrams": 1000000, "rcvbuf_errors": 500},
        "orphans_peak": 3,
    }
    history = {
        "orphans_peak": 21564,
        "period": {
            "kind": "history",
            "source": "p",
            "at": "2026-11-22T10:00:00Z",
            "window_seconds": WEEK,
            "gaps": ["listen_drops: no series"],
        },
    }
    merged = with_history(snapshot, history)
    assert "udp" not in merged and merged["orphans_peak"] == 21564
    assert merged["period"]["gaps"] == [
        "listen_drops: no series",
        "udp: /proc/net/snmp counters since boot are not read over the window",
    ]
    assert history["period"]["gaps"] == ["listen_drops: no series"]  # not changed in place
    validate(Observed, merged)
