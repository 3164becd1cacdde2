"""Peaks and increases over a window from Prometheus (node_exporter metrics), for `observed`.

One instant query per figure, all evaluated at the same `time`, each grouped by `instance`:

    max by (instance) (max_over_time(node_sockstat_TCP_orphan{SELECTOR}[Ns]))      peaks
    sum by (instance) (increase(node_netstat_TcpExt_ListenOverflows{SELECTOR}[Ns]))  counters

SELECTOR is `instance="NAME"` (--instance) or `instance=~"HOSTNAME(:[0-9]+)?"`. Grouping by
instance shows, from the answers themselves, which instances a hostname matched: one is used;
several, or none, is an error asking for --instance.

The hostname comes from the host being advised, which may be hostile: every label value is
written as a PromQL string literal with backslash, quote and every non-printable character
escaped, and the hostname is turned into a regular expression that matches only itself. The
window is sent as whole seconds, never as the text the operator typed.

Only the standard library talks HTTP: GET with a timeout per query, no redirects followed, the
answer bounded in size and nesting. Every failure is one InputError line naming the server.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import math
import re
import socket
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal, NoReturn

from sysctl_advisor import __version__
from sysctl_advisor.model.documents import parse_json
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.host_facts import MAX_COUNT, MAX_WINDOW
from sysctl_advisor.model.text_escape import double_quoted

MAX_ANSWER = 8 * 1024 * 1024  # bytes of one query's answer
MAX_ANSWER_DEPTH = 16  # a query answer nests 5 levels: data.result[].value[]
MAX_URL = 2048
MAX_LABEL = 1024  # characters of an instance or hostname sent in a query
MIN_WINDOW = 60
SHOWN_LABEL = 200  # characters of a label value repeated in messages and the source line

_DURATION = re.compile(
    r"(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?"
)
# Prometheus's units, in the order its duration syntax requires them (a year is 365 days).
_UNIT_MS = (365 * 86_400_000, 7 * 86_400_000, 86_400_000, 3_600_000, 60_000, 1000, 1)


@dataclass(frozen=True)
class Figure:
    """One field of `observed` and the node_exporter metric it is computed from."""

    field: str
    metric: str
    how: Literal["peak", "increase"]

    def query(self, selector: str, window: int) -> str:
        series = f"{self.metric}{{{selector}}}[{window}s]"
        if self.how == "peak":
            return f"max by (instance) (max_over_time({series}))"
        return f"sum by (instance) (increase({series}))"


FIGURES = (
    Figure("orphans_peak", "node_sockstat_TCP_orphan", "peak"),
    Figure("time_wait_peak", "node_sockstat_TCP_tw", "peak"),
    Figure("connections_peak", "node_sockstat_TCP_inuse", "peak"),
    Figure("tcp_mem_pages_peak", "node_sockstat_TCP_mem", "peak"),  # pages, not _mem_bytes
    Figure("listen_overflows", "node_netstat_TcpExt_ListenOverflows", "increase"),
    Figure("listen_drops", "node_netstat_TcpExt_ListenDrops", "increase"),
    Figure("rx_overruns", "node_network_receive_fifo_total", "increase"),  # all devices
    Figure("softnet_dropped", "node_softnet_dropped_total", "increase"),  # all CPUs
    Figure("softnet_time_squeeze", "node_softnet_times_squeezed_total", "increase"),
)


def parse_duration(
    text: str, field: str = "--since", bounds: tuple[int, int] = (MIN_WINDOW, MAX_WINDOW)
) -> int:
    """A Prometheus duration (14d, 36h, 90m, 1w, 1d12h, 5s) as whole seconds, within `bounds`
    (seconds; by default 1 minute .. 400 days)."""
    example = "e.g. 14d, 36h, 90m, 1w or 1d12h" if bounds[0] >= 60 else "e.g. 30s, 5m or 1h"
    value = text.strip()
    match = _DURATION.fullmatch(value) if len(value) <= 40 else None
    if not value or match is None or not any(match.groups()):
        raise InputError(f"not a duration: {_shown(text, 40)} ({example})", field=field)
    ms = sum(int(n) * unit for n, unit in zip(match.groups(), _UNIT_MS, strict=True) if n)
    low, high = bounds
    if not low * 1000 <= ms <= high * 1000:
        raise InputError(
            f"{value} is outside {_span(low)} .. {_span(high)} ({example})", field=field
        )
    return ms // 1000


def _span(seconds: int) -> str:
    """A bound as a duration: 60 -> 1m, 34560000 -> 400d."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def promql_string(value: str) -> str:
    """`value` as a double-quoted PromQL string literal that reads back as exactly `value`:
    backslash and quote escaped, every character that is not printable as \\uXXXX."""
    return double_quoted(value)


def regex_literal(value: str) -> str:
    """An RE2 (Go regexp) expression matching exactly `value`: letters, digits and _ as they
    are, other ASCII punctuation behind a backslash, anything else as \\x{HEX}."""
    out = []
    for char in value:
        if char.isascii() and (char.isalnum() or char == "_"):
            out.append(char)
        elif char.isascii() and char.isprintable() and char != " ":
            out.append("\\" + char)
        else:
            out.append(f"\\x{{{ord(char):x}}}")
    return "".join(out)


def _shown(value: str, limit: int = SHOWN_LABEL) -> str:
    """A label value fit for one line of text: as it is when printable and plain, else
    JSON-quoted (control characters escaped); cut at `limit` characters."""
    cut = value if len(value) <= limit else value[:limit] + "…"
    if cut and cut.isprintable() and not any(c in cut for c in ' "\\'):
        return cut
    return json.dumps(cut)


def _label_value(value: str, what: str) -> str:
    """An instance label or hostname fit to send: non-empty, bounded, valid Unicode."""
    why = ""
    if not value:
        why = "is empty"
    elif len(value) > MAX_LABEL:
        why = f"is longer than {MAX_LABEL} characters"
    else:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            why = f"is not valid Unicode: {_shown(value)}"
    if why:
        raise InputError(f"{what} {why}", field="--instance")
    return value


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is answered as the HTTP error it is, never followed (credentials and
    queries stay with the server the operator named)."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class _Deadline:
    """Ends a request at its deadline however the server trickles: a socket timeout bounds
    each read only, so a byte every tenth of a second (headers or body) would keep it going.
    At the deadline the connection's socket is shut down, which ends the read that waits."""

    def __init__(self, seconds: float) -> None:
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def watch(self, sock: socket.socket) -> None:
        self._sockets.append(sock)

    def _expire(self) -> None:
        self.expired = True
        for sock in self._sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()

    def handlers(self) -> list[urllib.request.BaseHandler]:
        """urllib's HTTP and HTTPS handlers, their connections watched by this deadline."""
        deadline = self

        class _HTTP(http.client.HTTPConnection):
            def connect(self) -> None:
                super().connect()
                deadline.watch(self.sock)

        class _HTTPS(http.client.HTTPSConnection):
            def connect(self) -> None:
                super().connect()
                deadline.watch(self.sock)

        class _HTTPHandler(urllib.request.HTTPHandler):
            def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
                return self.do_open(_HTTP, req)

        class _HTTPSHandler(urllib.request.HTTPSHandler):
            def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
                return self.do_open(_HTTPS, req, context=self._context)  # type: ignore[attr-defined]

        return [_HTTPHandler(), _HTTPSHandler()]


@dataclass(frozen=True)
class _Server:
    api: str  # .../api/v1/query, without user:password
    shown: str  # the URL as messages and the facts name it, without user:password
    authorization: str | None
    timeout: float

    @classmethod
    def parse(cls, url: str, timeout: float) -> _Server:
        def bad(why: str) -> NoReturn:
            raise InputError(f"{why}: {_shown(url, 120)}", field="--prometheus")

        if len(url) > MAX_URL:
            bad(f"URL longer than {MAX_URL} characters")
        if not url.isprintable() or any(c.isspace() for c in url):
            bad("URL contains a space or a control character")
        try:
            parts = urllib.parse.urlsplit(url)
            port = parts.port
        except ValueError as exc:
            bad(f"not a URL ({exc})")
        if parts.scheme.lower() not in ("http", "https"):
            bad("only http:// and https:// URLs are supported")
        if not parts.hostname:
            bad("the URL names no host")
        if parts.query or parts.fragment:
            bad("the URL must not carry a ?query or #fragment")
        if not (isinstance(timeout, int | float) and 0 < timeout <= 3600):
            raise InputError(
                f"must lie in (0, 3600] seconds, got {timeout}", field="--query-timeout"
            )
        host = parts.hostname
        netloc = f"[{host}]" if ":" in host else host
        if port is not None:
            netloc += f":{port}"
        path = parts.path.rstrip("/")
        base = f"{parts.scheme.lower()}://{netloc}{path}"
        authorization = None
        if parts.username is not None:
            user = urllib.parse.unquote(parts.username)
            password = urllib.parse.unquote(parts.password or "")
            token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
            authorization = f"Basic {token}"
        return cls(base + "/api/v1/query", base, authorization, float(timeout))

    def fail(self, why: str) -> NoReturn:
        raise InputError(f"Prometheus at {self.shown}: {_clean(why)}", field="--prometheus")

    def query(self, promql: str, at: float) -> list[tuple[dict[str, str], str]]:
        """The instant vector `promql` evaluates to at `at`: (labels, value text) per series."""
        params = urllib.parse.urlencode({"query": promql, "time": f"{at:.3f}"})
        request = urllib.request.Request(f"{self.api}?{params}", method="GET")
        request.add_header("Accept", "application/json")
        request.add_header("User-Agent", f"sysctl-advisor/{__version__}")
        if self.authorization:
            request.add_header("Authorization", self.authorization)
        with _Deadline(self.timeout) as watch:
            opener = urllib.request.build_opener(_NoRedirects, *watch.handlers())
            deadline = time.monotonic() + self.timeout
            try:
                with opener.open(request, timeout=self.timeout) as answer:
                    body = self._read(answer, deadline)
                    content_type = str(answer.headers.get("Content-Type", ""))
            except urllib.error.HTTPError as exc:
                self._http_error(exc, deadline)
            except urllib.error.URLError as exc:
                self._failed(exc.reason, watch)
            except (OSError, http.client.HTTPException, ValueError) as exc:
                self._failed(exc, watch)
        if watch.expired:
            self._failed(None, watch)
        return _vector(self._document(body, content_type), self)

    def _failed(self, error: object, watch: _Deadline) -> NoReturn:
        """A silent server is `no answer` (a socket timeout, or the deadline before a byte of
        the status line); one cut off at the deadline while it was still sending is `no
        complete answer`."""
        if watch.expired:
            silent = isinstance(error, TimeoutError | http.client.RemoteDisconnected)
            self.fail(f"no {'' if silent else 'complete '}answer within {self.timeout:g} s")
        self.fail(_reason(error, self.timeout))

    def _read(self, answer: Any, deadline: float) -> bytes:
        length = answer.headers.get("Content-Length")
        if length and length.strip().isdigit() and int(length) > MAX_ANSWER:
            self.fail(f"the answer is larger than {MAX_ANSWER:,} bytes")
        chunks: list[bytes] = []
        size = 0
        read = getattr(answer, "read1", answer.read)  # what has arrived: a trickle is timed
        while chunk := read(1 << 16):
            size += len(chunk)
            if size > MAX_ANSWER:
                self.fail(f"the answer is larger than {MAX_ANSWER:,} bytes")
            if time.monotonic() > deadline:
                self.fail(f"no complete answer within {self.timeout:g} s")
            chunks.append(chunk)
        return b"".join(chunks)

    def _http_error(self, exc: urllib.error.HTTPError, deadline: float) -> NoReturn:
        with exc:
            why = f"HTTP {exc.code} {exc.reason}"
            if 300 <= exc.code < 400:
                target = exc.headers.get("Location") if exc.headers else None
                self.fail(f"{why}: redirects to {_shown(str(target), 120)} (not followed)")
            try:
                body = self._read(exc, deadline)
                document = parse_json(body.decode("utf-8", "replace"), None)
            except (InputError, OSError, http.client.HTTPException, ValueError):
                document = None
            if isinstance(document, dict) and document.get("status") == "error":
                why += f": {document.get('errorType', 'error')}: {document.get('error', '')}"
        self.fail(why)

    def _document(self, body: bytes, content_type: str) -> dict[str, Any]:
        kind = content_type.split(";")[0].strip() or "no Content-Type"
        try:
            document = parse_json(body.decode("utf-8"), None)
        except UnicodeDecodeError:
            self.fail(f"the answer is not UTF-8 text ({kind}); is this a Prometheus URL?")
        except InputError as exc:
            self.fail(f"the answer is not JSON ({kind}: {exc.message}); is this a Prometheus URL?")
        if _depth(document) > MAX_ANSWER_DEPTH:
            self.fail(f"the answer nests more than {MAX_ANSWER_DEPTH} levels deep")
        if not isinstance(document, dict) or document.get("status") not in ("success", "error"):
            self.fail("the answer is not a Prometheus API response (no status)")
        if document["status"] == "error":
            self.fail(
                f"query failed: {document.get('errorType', 'error')}: {document.get('error', '')}"
            )
        return document


def _depth(document: Any) -> int:
    """Nesting of a parsed JSON document, without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(document, 0)]
    while stack:
        value, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_ANSWER_DEPTH:
            break
        if isinstance(value, dict):
            stack.extend((child, depth + 1) for child in value.values())
        elif isinstance(value, list):
            stack.extend((child, depth + 1) for child in value)
    return deepest


def _vector(document: dict[str, Any], server: _Server) -> list[tuple[dict[str, str], str]]:
    data = document.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "vector":
        server.fail("the answer is not an instant vector (data.resultType)")
    result = data.get("result")
    if not isinstance(result, list):
        server.fail("the answer has no data.result list")
    series: list[tuple[dict[str, str], str]] = []
    for item in result:
        labels = item.get("metric") if isinstance(item, dict) else None
        value = item.get("value") if isinstance(item, dict) else None
        if (
            not isinstance(labels, dict)
            or not all(isinstance(v, str) for v in labels.values())
            or not isinstance(value, list)
            or len(value) != 2
            or not isinstance(value[1], str)
        ):
            server.fail("a series in data.result is not {metric: {...}, value: [time, text]}")
        series.append((labels, value[1]))
    return series


def _clean(text: str) -> str:
    """Server-supplied text on one printable line, bounded."""
    text = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return text if len(text) <= 300 else text[:300] + "…"


def _reason(error: object, timeout: float) -> str:
    """Why a request failed, in a few words."""
    if isinstance(error, ConnectionRefusedError):
        return "connection refused (is the server running, and is the port right?)"
    if isinstance(error, TimeoutError | socket.timeout):
        return f"no answer within {timeout:g} s"
    if isinstance(error, socket.gaierror):
        return f"cannot resolve the host name ({error.strerror or error})"
    if isinstance(error, ssl.SSLError):
        return f"TLS failed: {getattr(error, 'reason', None) or error}"
    if isinstance(error, http.client.RemoteDisconnected | ConnectionResetError):
        return "the server closed the connection without an answer"
    if isinstance(error, http.client.IncompleteRead):
        return "the answer was cut short"
    if isinstance(error, http.client.HTTPException):
        return f"not an HTTP answer ({type(error).__name__}: {error})"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error) or type(error).__name__


def _count(value: str) -> int | str:
    """A sample value as a non-negative integer (rounded), or why it is not one."""
    try:
        number = float(value)
    except ValueError:
        return f"not a number ({_shown(value, 40)})"
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "infinite"
    rounded = math.floor(number + 0.5)
    if rounded < 0:
        return f"negative ({_shown(value, 40)})"
    if rounded > MAX_COUNT:
        return f"beyond any counter a host reports ({_shown(value, 40)})"
    return rounded


def utc_text(at: float) -> str:
    return datetime.fromtimestamp(int(at), tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def read_history(
    url: str,
    *,
    instance: str | None,
    hostname: str | None,
    since: str,
    timeout: float = 10.0,
    now: float | None = None,
) -> dict[str, Any]:
    """The `observed` figures over the window `since` ending `now` from node_exporter's metrics
    in the Prometheus at `url`, with `period` saying where they came from and what is missing.

    A figure without a series, or whose value is NaN, is left out and named in period.gaps."""
    window = parse_duration(since)
    server = _Server.parse(url, timeout)
    at = time.time() if now is None else now
    if instance is not None:
        _label_value(instance, "the instance")
        selector = f"instance={promql_string(instance)}"
        wanted = re.compile(re.escape(instance))
    elif hostname:
        _label_value(hostname, "the host's hostname (pass --instance)")
        selector = f"instance=~{promql_string(regex_literal(hostname) + '(:[0-9]+)?')}"
        wanted = re.compile(re.escape(hostname) + "(?::[0-9]+)?")
    else:
        raise InputError(
            "the host's hostname is not known: pass --instance with its Prometheus instance "
            "label (e.g. web-01:9100)",
            field="--instance",
        )

    found: dict[str, dict[str, str]] = {}  # instance -> field -> value text
    for figure in FIGURES:
        for labels, value in server.query(figure.query(selector, window), at):
            name = labels.get("instance")
            if name is None:
                server.fail(f"a series of {figure.metric} has no instance label")
            if not wanted.fullmatch(name):
                continue  # the server answered with another instance: never taken for ours
            found.setdefault(name, {})[figure.field] = value

    matched = _one_instance(found, instance, hostname, selector, since, server)
    shown = _shown(matched)
    observed: dict[str, Any] = {}
    gaps: list[str] = []
    for figure in FIGURES:
        text = found[matched].get(figure.field)
        if text is None:
            gaps.append(f"{figure.field}: no series {figure.metric} for instance={shown}")
            continue
        count = _count(text)
        if isinstance(count, str):
            gaps.append(f"{figure.field}: {figure.metric} is {count} for instance={shown}")
        else:
            observed[figure.field] = count
    observed["period"] = {
        "kind": "history",
        "source": f"prometheus {server.shown} instance={shown}",
        "at": utc_text(at),
        "window_seconds": window,
        "gaps": gaps,
    }
    return observed


def _one_instance(
    found: dict[str, dict[str, str]],
    instance: str | None,
    hostname: str | None,
    selector: str,
    since: str,
    server: _Server,
) -> str:
    if len(found) == 1:
        return next(iter(found))
    metrics = "node_exporter series (node_sockstat_TCP_*, node_netstat_TcpExt_Listen*, …)"
    if not found and instance is not None:
        raise InputError(
            f"no {metrics} for {selector} over the last {since.strip()} in {server.shown}; "
            "check the instance label (often host:9100)",
            field="--instance",
        )
    if not found:
        raise InputError(
            f"no {metrics} for hostname {_shown(hostname or '')} ({selector}) over the last "
            f"{since.strip()} in {server.shown}; found no instance: pass --instance",
            field="--instance",
        )
    names = sorted(found)
    listed = ", ".join(_shown(n, 80) for n in names[:10])
    if len(names) > 10:
        listed += f" and {len(names) - 10} more"
    raise InputError(
        f"hostname {_shown(hostname or '')} matches {len(names)} Prometheus instances "
        f"({listed}): pass --instance with the one to read",
        field="--instance",
    )


def with_history(observed: dict[str, Any], history: dict[str, Any]) -> dict[str, Any]:
    """`observed` with the figures a snapshot gives (sockstat now, counters since boot)
    replaced by `history`: a figure Prometheus lacks is left out, not kept from the snapshot
    (it is named in period.gaps)."""
    kept = {k: v for k, v in observed.items() if k not in _SNAPSHOT_ONLY and k != "period"}
    merged = {**kept, **history}
    if "udp" in observed and "udp" not in history:  # since boot, not over the window
        period = merged["period"] = dict(history["period"])
        period["gaps"] = [*period.get("gaps", []), _UDP_GAP]
    return merged


def check_server(url: str, timeout: float = 10.0) -> None:
    """One cheap query, so that a fleet run fails once, not once per host, when the server is
    down or is not Prometheus."""
    _Server.parse(url, timeout).query("vector(1)", time.time())


_FIELDS = frozenset(figure.field for figure in FIGURES)
# Read from /proc only, as counters since boot: with a history window they would be taken for
# figures over it (observed.counted_over), so they are left out and named in period.gaps.
_SNAPSHOT_ONLY = _FIELDS | {"udp"}
_UDP_GAP = "udp: /proc/net/snmp counters since boot are not read over the window"
