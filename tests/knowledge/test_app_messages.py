"""The application message families (rules/catalog/app-messages.yaml): every family matches
each version's wording and misses its near misses, the figure each line asks for is read, and
the file's model refuses bad input in one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from sysctl_advisor.cache.specs import SpecCache
from sysctl_advisor.knowledge.app_messages import app_readers, load_app_families
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.knowledge.resources import data_dir
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.sources.app_log import wanted
from tests.conftest import one_line_message

SHIPPED = data_dir("rules") / "catalog" / "app-messages.yaml"

# Each family: lines as the versions print them (with the log prefixes they reach the log
# with), and the figure each asks for (None: the family reads none).
ERAS: dict[str, list[tuple[str, int | None]]] = {
    "redis.overcommit-memory": [
        (  # Redis 2.0.0 .. 7.0.5
            "[11529] 23 Mar 16:10:09.624 # WARNING overcommit_memory is set to 0! Background "
            "save may fail under low memory condition. To fix this issue add "
            "'vm.overcommit_memory = 1' to /etc/sysctl.conf and then reboot or run the command "
            "'sysctl vm.overcommit_memory=1' for this to take effect.",
            None,
        ),
        (  # Redis 7.0.6 and later, Valkey 8
            "1:M 20 Nov 2026 08:00:00.001 # WARNING Memory overcommit must be enabled! Without "
            "it, a background save or replication may fail under low memory condition. Being "
            "disabled, it can also cause failures without low memory condition, see "
            "https://github.com/jemalloc/jemalloc/issues/1328.",
            None,
        ),
    ],
    "redis.tcp-backlog": [
        (  # Redis 2.8.18 and later, Valkey 8
            "1:M 15 Dec 2019 16:48:53.528 # WARNING: The TCP backlog setting of 511 cannot be "
            "enforced because /proc/sys/net/core/somaxconn is set to the lower value of 128.",
            511,
        ),
        (
            "12585:M 10 Sep 22:25:29.167 # WARNING: The TCP backlog setting of 65535 cannot be "
            "enforced because /proc/sys/net/core/somaxconn is set to the lower value of 4096.",
            65535,
        ),
    ],
    "redis.transparent-hugepages": [
        (  # Redis 2.8.18 .. 7.0.5
            "1:M 02 Oct 14:43:24.709 # WARNING you have Transparent Huge Pages (THP) support "
            "enabled in your kernel. This will create latency and memory usage issues with Redis.",
            None,
        ),
        (  # 7.0.6 and later, Valkey
            "1:M 20 Nov 2026 08:00:00.001 # WARNING You have Transparent Huge Pages (THP) "
            "support enabled in your kernel. This will create latency and memory usage issues "
            "with Valkey.",
            None,
        ),
    ],
    "elasticsearch.max-map-count": [
        (  # 5.x
            "max virtual memory areas vm.max_map_count [65530] likely too low, increase to at "
            "least [262144]",
            262144,
        ),
        (  # 6.0 and later, OpenSearch
            "[1]: max virtual memory areas vm.max_map_count [65530] is too low, increase to at "
            "least [262144]",
            262144,
        ),
    ],
    "elasticsearch.file-descriptors": [
        (
            "max file descriptors [4096] for elasticsearch process likely too low, increase to "
            "at least [65536]",
            65536,
        ),
        (
            "[2]: max file descriptors [4096] for elasticsearch process is too low, increase "
            "to at least [65535]",
            65535,
        ),
        (
            "max file descriptors [4096] for opensearch process is too low, increase to at "
            "least [65535]",
            65535,
        ),
    ],
    "elasticsearch.memory-lock": [
        ("memory locking requested for elasticsearch process but memory is not locked", None),
        ("memory locking requested for opensearch process but memory is not locked", None),
    ],
    "mongodb.max-map-count": [
        (  # startup_warnings_mongod.cpp (component CONTROL)
            '{"t":{"$date":"2024-04-30T00:21:59.842+00:00"},"s":"W",  "c":"CONTROL",  '
            '"id":5123300, "ctx":"initandlisten","msg":"vm.max_map_count is too low",'
            '"attr":{"currentValue":65530,"recommendedMinimum":1677720,"maxConns":838860},'
            '"tags":["startupWarnings"]}',
            1677720,
        ),
        (  # transport_layer_manager_impl.cpp (component NETWORK), LimitNOFILE=64000
            '{"t":{"$date":"2026-11-20T08:00:00.001+00:00"},"s":"W",  "c":"NETWORK",  '
            '"id":5123300, "ctx":"initandlisten","msg":"vm.max_map_count is too low",'
            '"attr":{"currentValue":65530,"recommendedMinimum":102400,"maxConns":51200},'
            '"tags":["startupWarnings"]}',
            102400,
        ),
    ],
    "quic-go.receive-buffer": [
        (  # v0.20 .. v0.42
            "2021/03/01 10:00:00 failed to sufficiently increase receive buffer size (was: 208 "
            "kiB, wanted: 2048 kiB, got: 416 kiB). See https://github.com/lucas-clemente/"
            "quic-go/wiki/UDP-Receive-Buffer-Size for details.",
            2048 * 1024,
        ),
        (  # v0.43 and later
            "failed to sufficiently increase receive buffer size (was: 208 kiB, wanted: 7168 "
            "kiB, got: 416 kiB). See https://github.com/quic-go/quic-go/wiki/UDP-Buffer-Sizes "
            "for details.",
            7168 * 1024,
        ),
        (  # the size did not change at all
            "failed to increase receive buffer size (wanted: 7168 kiB, got 208 kiB). See "
            "https://github.com/quic-go/quic-go/wiki/UDP-Buffer-Sizes for details.",
            7168 * 1024,
        ),
    ],
}
NEAR_MISSES: dict[str, list[str]] = {
    "redis.overcommit-memory": [
        "# Server initialized",
        "overcommit_memory is set to 1, which is fine",
    ],
    "redis.tcp-backlog": [  # the BSD builds (Redis 7.0+) name another limit
        "WARNING: The TCP backlog setting of 511 cannot be enforced because kern.ipc.somaxconn "
        "is set to the lower value of 128.",
        "WARNING: The TCP backlog setting of 511 cannot be enforced because SOMAXCONN is set "
        "to the lower value of 128.",
    ],
    "redis.transparent-hugepages": [
        "Transparent Huge Pages (THP) are disabled",
        "WARNING you have Transparent Huge Pages support disabled",
    ],
    "elasticsearch.max-map-count": [
        "unable to parse vm.max_map_count [abc]",
        "max virtual memory areas vm.max_map_count is fine",
    ],
    "elasticsearch.file-descriptors": [
        "max number of threads [1024] for user [es] is too low, increase to at least [4096]",
        "max file descriptors [65535] for elasticsearch process",
    ],
    "elasticsearch.memory-lock": [
        "memory locking requested for elasticsearch process",
        "Unable to lock JVM Memory: error=12, reason=Cannot allocate memory",
    ],
    "mongodb.max-map-count": [  # mongosh's summary and Elasticsearch's check are not it
        "   2024-06-14T10:27:43.641+00:00: vm.max_map_count is too low",
        "max virtual memory areas vm.max_map_count [65530] is too low, increase to at least "
        "[262144]",
    ],
    "quic-go.receive-buffer": [
        "failed to sufficiently increase send buffer size (was: 208 kiB, wanted: 7168 kiB, "
        "got: 416 kiB)",
        "Increased receive buffer size to 7168 kiB",
    ],
}


@pytest.fixture(scope="module")
def readers() -> dict[str, dict[str, Any]]:
    return app_readers(load_app_families(SHIPPED))


def families_of(line: str, readers: dict[str, dict[str, Any]]) -> set[str]:
    lowered = line.lower()
    return {f for f, r in readers.items() if any(s in lowered for s in r["match"])}


def test_every_family_has_era_lines_and_near_misses(readers: dict[str, dict[str, Any]]) -> None:
    assert set(ERAS) == set(readers), "every family needs era lines here (and no stale ones)"
    assert set(NEAR_MISSES) == set(readers)


@pytest.mark.parametrize(
    ("family", "line", "wants"),
    [(f, line, wants) for f, lines in ERAS.items() for line, wants in lines],
)
def test_each_era_matches_its_family_only_and_gives_its_figure(
    readers: dict[str, dict[str, Any]], family: str, line: str, wants: int | None
) -> None:
    assert families_of(line, readers) == {family}
    assert families_of(line.upper(), readers) == {family}  # case-insensitive
    spec = readers[family]["wants"]
    figure = wanted(line.lower(), spec["after"], spec["scale"]) if spec else None
    assert figure == wants


@pytest.mark.parametrize(
    ("family", "line"), [(f, line) for f, lines in NEAR_MISSES.items() for line in lines]
)
def test_near_misses_do_not_match(
    readers: dict[str, dict[str, Any]], family: str, line: str
) -> None:
    assert family not in families_of(line, readers)


def test_no_kernel_family_takes_an_application_line() -> None:
    kb = KnowledgeBase.load()
    kernel = kb.message_matchers()
    for family, lines in ERAS.items():
        for line, _ in lines:
            assert not any(s in line.lower() for subs in kernel.values() for s in subs), family
    texts = kb.message_texts
    assert texts["redis.tcp-backlog"]["key"] == "net.core.somaxconn"
    assert texts["redis.transparent-hugepages"]["key"] == ""  # sysfs, not a sysctl


def test_the_spec_cache_gives_the_same_families() -> None:
    assert load_app_families(SHIPPED, SpecCache()) == load_app_families(SHIPPED)


@pytest.mark.parametrize(
    ("after", "line", "scale", "figure"),
    [
        ("of ", "backlog of 511 x", 1, 511),
        ("of ", "backlog of x511", 1, None),  # digits right after the text only
        ("of ", "backlog of ", 1, None),
        ("of ", "no marker 511", 1, None),
        ("of ", "backlog of " + "9" * 19, 1, None),  # above the facts' bound
        ("of ", "backlog of " + "1" * 20, 1, None),  # more than 19 digits
        ("of ", "backlog of " + "1" * 5000, 1, None),  # stops counting, stays linear
        ("wanted: ", "wanted: 7168 kib", 1024, 7340032),
    ],
)
def test_the_figure_a_line_asks_for_is_bounded(
    after: str, line: str, scale: int, figure: int | None
) -> None:
    assert wanted(line, after, scale) == figure


GOOD: dict[str, Any] = {
    "id": "a.b",
    "application": "App",
    "title": "T",
    "match": ["some text"],
    "asks": "x = 1",
    "versions": "v",
    "means": "m",
    "references": ["r"],
}


def write_family(tmp_path: Path, **changes: object) -> Path:
    family = {**GOOD, "id": "c.d", **changes}
    path = tmp_path / "app-messages.yaml"
    path.write_text(yaml.safe_dump({"families": [GOOD, family]}, sort_keys=False))
    return path


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"id": "Bad_ID"}, "families.1.id", "does not match the pattern ^"),
        ({"match": ["ab"]}, "families.1.match.0", "4 to 200 characters"),
        ({"units": ["--output=export"]}, "families.1.units.0", "not a systemd unit"),
        ({"units": ["a b.service"]}, "families.1.units.0", "not a systemd unit"),
        ({"logs": ["/var/log/x.log"]}, "families.1.logs.0", "relative path"),
        ({"logs": ["var/../../etc/shadow"]}, "families.1.logs.0", ""),
        ({"logs": ["var/log/x\nlog"]}, "families.1.logs.0", "U+000A"),
        ({"key": "Not A Key"}, "families.1.key", "not a sysctl key"),
        ({"wants": {"after": ""}}, "families.1.wants.after", "1 to 64 characters"),
        ({"wants": {"after": "x", "scale": 0}}, "families.1.wants.scale", ""),
        ({"wants": {"after": "x", "scale": 2**40}}, "families.1.wants.scale", ""),
        ({"asks": "two\nlines"}, "families.1.asks", "U+000A"),
        ({"regex": "x"}, "families.1.regex", "unknown field"),
    ],
)
def test_bad_family_is_one_line_naming_file_and_field(
    tmp_path: Path, changes: dict[str, object], field: str, words: str
) -> None:
    path = write_family(tmp_path, **changes)
    with pytest.raises(InputError) as caught:
        load_app_families(path)
    one_line_message(caught.value, str(path))
    assert (caught.value.path, caught.value.field) == (str(path), field)
    assert words in caught.value.message


def test_duplicate_id_names_its_line(tmp_path: Path) -> None:
    path = write_family(tmp_path, id="a.b")
    with pytest.raises(InputError) as caught:
        load_app_families(path)
    assert caught.value.field == "families.1.id"
    assert "duplicate message family id 'a.b'" in str(caught.value)
