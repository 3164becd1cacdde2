"""A hostile-input review of the writers work: the facts' `sysctl_file_settings`, `processes` and
`kernel_build`, their collector under `facts --root`, evidence dated by the files' times, the
advisor's own file kept whole, the writers catalog, check's `check.other-writer` and
`check.other-writer-file`, and diff's `owner`. Each payload is built at test time and run
through the CLI: bad input is one line on stderr and exit 2, never a traceback or an internal
error, and nothing the facts say becomes a setting no rule asked for."""

from __future__ import annotations

import gzip
import json
import os
import zlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from sysctl_advisor.outputs.plan_render import rendered_settings
from tests.conftest import EXAMPLES, TESTS, assert_one_line_error
from tests.test_hostile_workloads import facts_file, run

APP_NODE = EXAMPLES / "app-node.yaml"
TREE = TESTS / "fixtures" / "hosts" / "busy-frontend"  # kernel 5.15.0-91-generic
OWN = "/etc/sysctl.d/90-sysctl-advisor.conf"
TCP_MEM = "1543770 2058360 3087540"  # in force on the 64 GiB app-node: within every cap


def plan_of(facts: str, *flags: str) -> dict[str, str]:
    code, out, err = run("recommend", "--facts", facts, *flags, "-f", "json")
    assert code == 0, err
    return {s["key"]: s["value"] for s in json.loads(out)["settings"]}


def tree(tmp_path: Path) -> Path:
    """A copy of a fixture host tree to make hostile."""
    import shutil

    root = tmp_path / "root"
    shutil.copytree(TREE, root, symlinks=True)
    return root


def collected(root: Path) -> dict[str, Any]:
    code, out, err = run("facts", "--root", str(root))
    assert code == 0, err
    assert "Traceback" not in err and "internal error" not in err, err
    data = yaml.safe_load(out)
    assert isinstance(data, dict)
    return data


# --- broke, fixed -----------------------------------------------------------------------------


def _own_file(settings: dict[str, str], in_force: dict[str, str | None]) -> Any:
    def change(data: dict[str, Any]) -> None:
        for key, value in in_force.items():
            if value is None:
                data["sysctl"].pop(key, None)
            else:
                data["sysctl"][key] = value
        data["sysctl_files"] = {key: f"{OWN}:{i + 1}" for i, key in enumerate(settings)}
        data["sysctl_file_settings"] = {key: {"value": v} for key, v in settings.items()}

    return change


def test_the_own_file_keeps_the_value_in_force_never_the_facts_value(tmp_path: Path) -> None:
    """A facts file that named a file like the advisor's own and gave a value for it beside
    the value in force made the plan set that value, which no rule wanted: tcp_mem 1 2 3 (a
    few pages for all of TCP) and somaxconn 1, "Kept at 1 2 3, which the advisor's own file
    sets". Keeping the value in force is never a move; setting the facts' value is one."""
    hostile = {"net.ipv4.tcp_mem": "1 2 3", "net.core.somaxconn": "1"}
    in_force: dict[str, str | None] = {"net.ipv4.tcp_mem": TCP_MEM, "net.core.somaxconn": "4096"}
    facts = facts_file(tmp_path, _own_file(hostile, in_force))
    plan = plan_of(facts, "-p", "base")
    assert plan["net.ipv4.tcp_mem"] == TCP_MEM
    assert plan["net.core.somaxconn"] == "4096"
    for fmt in ("conf", "tuned", "ansible"):
        code, out, err = run("recommend", "--facts", facts, "-p", "base", "-f", fmt)
        assert code == 0, err
        settings = rendered_settings(fmt, out)
        assert settings["net.ipv4.tcp_mem"] == TCP_MEM, fmt
        assert settings["net.core.somaxconn"] == "4096", fmt
    # frontend-proxy's listen-backlog.target wants somaxconn itself: the rules' value stands
    assert plan_of(facts, "-p", "frontend-proxy")["net.core.somaxconn"] == "16384"


def test_the_own_file_keeps_no_key_whose_value_in_force_is_not_known(tmp_path: Path) -> None:
    """Without the value in force, the facts' file value was set all the same."""
    facts = facts_file(
        tmp_path,
        _own_file({"net.ipv4.tcp_mem": "1 2 3"}, {"net.ipv4.tcp_mem": None}),
    )
    assert plan_of(facts, "-p", "base").get("net.ipv4.tcp_mem") != "1 2 3"


def test_the_own_file_still_keeps_its_applied_value(tmp_path: Path) -> None:
    """The feature itself holds: the file's value, in force, stays in the plan."""
    facts = facts_file(
        tmp_path, _own_file({"net.ipv4.tcp_mem": TCP_MEM}, {"net.ipv4.tcp_mem": TCP_MEM})
    )
    assert plan_of(facts, "-p", "base")["net.ipv4.tcp_mem"] == TCP_MEM


class _Dated:
    """sysctl_files.read_file_and_time with every file's time replaced by `moment`: a copied
    tree's files carry any time their owner set (tmpfs, XFS and btrfs hold 64-bit seconds;
    ext4 stops at 2446)."""

    def __init__(self, moment: float) -> None:
        from sysctl_advisor.sources import sysctl_files

        self.real = sysctl_files.read_file_and_time
        self.moment = moment

    def __call__(self, *args: Any, **kwargs: Any) -> tuple[bytes, float]:
        return self.real(*args, **kwargs)[0], self.moment


@pytest.mark.parametrize("moment", [2.0**40, 253402300800.0, -62_000_000_000.0, -(2.0**40), 1e18])
def test_a_sysctl_d_file_of_no_date_leaves_its_time_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, moment: float
) -> None:
    """A sysctl.d file modified in year 36812 was `internal error: ValueError: year 36812 is
    out of range`, exit 3; one of year 5 gave '5-04-19T09:46:40Z', which the facts refused as
    no timestamp, so the whole collection failed."""
    from sysctl_advisor.sources import sysctl_files

    root = tree(tmp_path)
    (root / "etc/sysctl.d").mkdir(parents=True)
    (root / "etc/sysctl.d/10-a.conf").write_text("net.core.somaxconn = 4096\n")
    monkeypatch.setattr(sysctl_files, "read_file_and_time", _Dated(moment))
    data = collected(root)
    assert data["sysctl_file_settings"] == {"net.core.somaxconn": {"value": "4096"}}


def test_a_sysctl_d_file_of_no_date_on_a_filesystem_that_holds_it(tmp_path: Path) -> None:
    """The same, with the time on the file itself where the filesystem keeps 64-bit times."""
    candidates = [tmp_path, Path("/dev/shm")]
    for base in candidates:
        if not base.is_dir() or not os.access(base, os.W_OK):
            continue
        probe = base / f"probe-{os.getpid()}"
        probe.write_bytes(b"")
        try:
            os.utime(probe, (2.0**40, 2.0**40))
            holds = probe.stat().st_mtime == 2.0**40
        finally:
            probe.unlink()
        if holds:
            break
    else:
        pytest.skip("no filesystem here keeps a time past 2446")
    import shutil
    import tempfile

    work = Path(tempfile.mkdtemp(dir=base))
    try:
        root = tree(work)
        (root / "etc/sysctl.d").mkdir(parents=True)
        conf = root / "etc/sysctl.d/10-a.conf"
        conf.write_text("net.core.somaxconn = 4096\n")
        os.utime(conf, (2.0**40, 2.0**40))
        assert collected(root)["sysctl_file_settings"] == {"net.core.somaxconn": {"value": "4096"}}
    finally:
        shutil.rmtree(work)


def _pid(root: Path, pid: int, comm: bytes, cmdline: bytes = b"x\0") -> Path:
    directory = root / "proc" / str(pid)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "comm").write_bytes(comm)
    (directory / "cmdline").write_bytes(cmdline)
    return directory


def test_a_comm_file_is_read_only_as_far_as_a_comm_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each /proc/PID/comm was read up to 1 MiB: 65,536 sparse 1 MiB files in a copied tree
    (no disk space) took minutes (5,000 took 11 s). And a comm no kernel can hold, "kubelet"
    with spaces after it past TASK_COMM_LEN, was read as kubelet."""
    from sysctl_advisor.sources import local_host

    root = tree(tmp_path)
    _pid(root, 1, b"systemd\n")
    _pid(root, 2, b"kubelet" + b" " * 100 + b"\n")
    with open(_pid(root, 3, b"") / "comm", "wb") as sparse:
        sparse.truncate(1 << 20)
    _pid(root, 4, "é".encode() * 8 + b"\n")  # 8 characters, 16 bytes: more than a comm holds
    reads: list[int] = []
    real = local_host._read_bytes

    def counted(path: Path, root: Path = Path("/"), limit: int = 1 << 20) -> bytes | None:
        if path.name == "comm":
            reads.append(limit)
        return real(path, root, limit)

    monkeypatch.setattr(local_host, "_read_bytes", counted)
    data = collected(root)
    assert data["processes"] == ["systemd"]
    assert reads and max(reads) <= 64, reads


def _config_gz(root: Path, data: bytes) -> None:
    (root / "proc/config.gz").write_bytes(data)


def _config_outside(path: Path) -> Path:
    """A readable kernel config beside the tree (tree() copies it to tmp_path/root), for a
    link at `path` inside it to lead to."""
    outside = next(a for a in path.parents if a.name == "root").parent / f"outside-{path.name}"
    config = _qdisc_config("fq")
    outside.write_bytes(gzip.compress(config) if path.name.endswith(".gz") else config)
    return outside


def _qdisc_config(name: str) -> bytes:
    return (
        f'CONFIG_NET_SCH_DEFAULT=y\nCONFIG_DEFAULT_NET_SCH="{name}"\n'
        f"CONFIG_NET_SCH_{name.upper()}=y\n"
    ).encode()


@pytest.mark.parametrize("name", ["\u017fq", "\u212aq", "fq\u0131", "\u00e9"])
def test_a_qdisc_name_of_other_letters_than_ascii_is_left_out(tmp_path: Path, name: str) -> None:
    """str.isalpha took any letter: "ſq" (its upper case is SQ) failed the whole collection
    (kernel_build.default_qdisc: not a valid qdisc name), and the Kelvin sign's "Kq" became
    the qdisc kq, lower-cased to ASCII."""
    root = tree(tmp_path)
    _config_gz(root, gzip.compress(_qdisc_config(name)))
    build = collected(root)["kernel_build"]
    assert build == {"config": "/proc/config.gz"}, build


def test_a_truncated_config_gz_is_not_read_as_the_whole_config(tmp_path: Path) -> None:
    """A config.gz cut short (a copy taken while it was written, or past the 1 MiB read) was
    inflated as far as it went and read as if whole: its options after the cut were missing,
    and the default qdisc came out pfifo_fast."""
    filler = b"".join(b"CONFIG_R%s=y\n" % os.urandom(12).hex().encode() for _ in range(4000))
    packed = gzip.compress(filler + _qdisc_config("fq"))
    root = tree(tmp_path)
    _config_gz(root, packed[: len(packed) // 2])
    assert "kernel_build" not in collected(root)
    _config_gz(root, packed)  # whole: read
    assert collected(root)["kernel_build"] == {"config": "/proc/config.gz", "default_qdisc": "fq"}


def _dated_event(modified: str, last_seen: str) -> Any:
    def change(data: dict[str, Any]) -> None:
        data["observed"]["app_events"] = [
            {
                "family": "redis.overcommit-memory",
                "count": 2,
                "example": "WARNING Memory overcommit must be enabled!",
                "last_seen": last_seen,
            }
        ]
        data["sysctl_files"] = {"vm.overcommit_memory": "/etc/sysctl.d/10-x.conf:1"}
        data["sysctl_file_settings"] = {
            "vm.overcommit_memory": {"value": "0", "modified": modified}
        }

    return change


def _findings(facts: str) -> list[dict[str, Any]]:
    code, out, err = run("recommend", "--facts", facts, "-p", "redis", "-f", "json")
    assert code == 0, err
    findings: list[dict[str, Any]] = json.loads(out)["findings"]
    return findings


def _dated_findings(facts: str) -> list[str]:
    return [f["message"] for f in _findings(facts) if f["id"] == "evidence.logged-before-value"]


def test_a_file_time_with_an_offset_is_said_in_utc(tmp_path: Path) -> None:
    """The time "2024-01-01T10:00:00+05:30" was written "2024-01-01 10:00:00 UTC"."""
    facts = facts_file(tmp_path, _dated_event("2024-01-01T10:00:00+05:30", "2023-12-01T00:00:00Z"))
    (said,) = _dated_findings(facts)
    assert "(written 2024-01-01 04:30:00 UTC)" in said, said


def test_a_time_before_year_1_in_utc_is_no_time(tmp_path: Path) -> None:
    """0001-01-01T00:00:00+23:59 is in year 0 in UTC: the line's time is not known, and the
    lines stay evidence (they were dropped as older than the file)."""
    facts = facts_file(tmp_path, _dated_event("0001-01-01T00:30:00Z", "0001-01-01T00:00:00+23:59"))
    ids = {f["id"] for f in _findings(facts)}
    assert "evidence.logged-before-value" not in ids and "evidence.redis-overcommit" in ids, ids


# --- held: each attack tried, and what stops it -------------------------------------------------


def _settings(settings: Any, files: dict[str, str] | None = None) -> Any:
    def change(data: dict[str, Any]) -> None:
        keys = settings if isinstance(settings, dict) else {}
        data["sysctl_files"] = files if files is not None else {k: f"{OWN}:1" for k in keys}
        data["sysctl_file_settings"] = settings

    return change


def _set(field: str, value: Any) -> Any:
    return lambda data: data.__setitem__(field, value)


@pytest.mark.parametrize(
    ("change", "fragments"),
    [
        (_settings({"vm.swappiness": {"value": "1"}}, {}), ("sysctl_file_settings", "no file")),
        (_settings({"vm.swappiness": ["1"]}), ("sysctl_file_settings.vm.swappiness",)),
        (_settings({"vm.swappiness": {"value": {"a": 1}}}), (".value",)),
        (_settings({"vm.swappiness": {"value": None}}), (".value",)),
        (_settings({"vm.swappiness": {"value": 10**400}}), ("larger than any kernel value",)),
        (_settings({"vm.swappiness": {"value": "1\u202e"}}), ("U+202E",)),
        (_settings({"vm.swappiness": {"value": "1\x1b[31m"}}), ("U+001B",)),
        (_settings({"vm.swappiness": {"value": "1", "modified": 12345}}), (".modified",)),
        (_settings({"vm.swappiness": {"value": "1", "modified": True}}), (".modified",)),
        (
            _settings({"vm.swappiness": {"value": "1", "modified": "yesterday"}}),
            ("not a valid timestamp",),
        ),
        (_settings({"vm.swappiness": {"value": "1", "x": 1}}), ("unknown field",)),
        (
            _settings({f"net.ipv4.conf.e{i}.rp_filter": {"value": "1"} for i in range(100_001)}),
            ("sysctl_file_settings", "100000"),
        ),
        (_set("processes", ["a", 1]), ("processes.1",)),
        (_set("processes", "kubelet"), ("processes",)),
        (_set("processes", ["k" * 16]), ("1-15 characters",)),
        (_set("processes", [""]), ("1-15 characters",)),
        (_set("processes", ["a\nb"]), ("U+000A",)),
        (_set("processes", ["\u202ekubelet"]), ("U+202E",)),
        (_set("processes", [f"p{i}" for i in range(65537)]), ("processes", "65536")),
        (_set("kernel_build", ["x"]), ("kernel_build",)),
        (_set("kernel_build", {"config": "x", "default_qdisc": "fq\n"}), ("U+000A",)),
        (_set("kernel_build", {"config": "x", "default_qdisc": "FQ"}), ("not a valid qdisc",)),
        (_set("kernel_build", {"config": "x", "default_qdisc": 5}), ("default_qdisc",)),
        (_set("kernel_build", {"config": "\u202ex"}), ("U+202E",)),
        (_set("kernel_build", {"config": "x" * 10**6}), ("longer than",)),
        (_set("kernel_build", {"default_qdisc": "fq"}), ("kernel_build.config",)),
    ],
)
def test_hostile_new_facts_fields_are_one_line(
    tmp_path: Path, change: Any, fragments: tuple[str, ...]
) -> None:
    code, _, err = run("recommend", "--facts", facts_file(tmp_path, change), "-p", "base")
    assert_one_line_error(code, err, *fragments)


EDGES = [
    "0001-01-01T00:00:00+23:59",
    "0001-01-01T00:00:00-23:59",
    "0000-01-01T00:00:00Z",
    "9999-12-31T23:59:59-23:59",
    "9999-12-31T23:59:59.999999999Z",
    "2024-01-01T00:00:00+99:99",
    "2016-12-31T23:59:60Z",
    "2016-13-45",
    "2024-01-01",
    "2024-01-01 10:00",
    "2024-01-01T10:00:00+0530",
]


@pytest.mark.parametrize("modified", EDGES)
def test_file_times_at_the_edges_never_crash(tmp_path: Path, modified: str) -> None:
    for last_seen in EDGES:
        facts = facts_file(tmp_path, _dated_event(modified, last_seen))
        code, _, err = run("recommend", "--facts", facts, "-p", "redis", "-f", "markdown")
        assert code == 0, (modified, last_seen, err)


def test_many_processes_and_file_settings_at_their_bounds(tmp_path: Path) -> None:
    def change(data: dict[str, Any]) -> None:
        data["processes"] = [f"p{i}" for i in range(65535)] + ["kubelet"]
        keys = [f"net.ipv4.conf.e{i}.rp_filter" for i in range(100_000)]
        data["sysctl_files"] = {k: f"{OWN}:1" for k in keys}
        data["sysctl_file_settings"] = {k: {"value": "1"} for k in keys}

    code, out, err = run(
        "recommend", "--facts", facts_file(tmp_path, change), "-p", "base", "-f", "json"
    )
    assert code == 0, err
    settings = {s["key"]: s for s in json.loads(out)["settings"]}
    # the kubelet, the 65,536th name, was read: its start value is the host's default
    overcommit = settings["vm.overcommit_memory"]
    assert (overcommit["default_set_by"] or "").startswith("the kubelet"), overcommit
    # the 100,000 keys the advisor's own file names are no rule's: none enters the plan
    assert not [k for k in settings if k.startswith("net.ipv4.conf.e")]


@pytest.mark.parametrize(
    ("name", "make"),
    [
        ("gzip bomb", lambda: gzip.compress(_qdisc_config("fq") + b"#" * (64 << 20))),
        ("corrupt", lambda: b"\x1f\x8b\x08\x00garbage" * 10),
        ("empty", lambda: b""),
        ("not compressed", lambda: _qdisc_config("fq")),
    ],
)
def test_a_hostile_config_gz_is_not_read(tmp_path: Path, name: str, make: Any) -> None:
    root = tree(tmp_path)
    _config_gz(root, make())
    assert "kernel_build" not in collected(root), name


def test_a_zlib_config_is_read(tmp_path: Path) -> None:
    root = tree(tmp_path)
    _config_gz(root, zlib.compress(_qdisc_config("fq_codel")))
    assert collected(root)["kernel_build"]["default_qdisc"] == "fq_codel"


@pytest.mark.parametrize(
    "make",
    [
        lambda p: os.mkfifo(p),
        lambda p: os.symlink(_config_outside(p), p),
        lambda p: os.symlink("/dev/zero", p),
        lambda p: os.symlink("/etc/passwd", p),
        lambda p: p.mkdir(),
    ],
    ids=["fifo", "link to a config outside", "device", "link out", "directory"],
)
def test_a_config_that_is_no_regular_file_of_the_tree_is_not_read(
    tmp_path: Path, make: Any
) -> None:
    """A FIFO would block, a device would run its driver, and a link out of the tree would
    describe the machine running the advisor, at /proc/config.gz and at /boot/config-R."""
    root = tree(tmp_path)
    make(root / "proc/config.gz")
    (root / "boot").mkdir()
    make(root / "boot/config-5.15.0-91-generic")
    assert "kernel_build" not in collected(root)


@pytest.mark.parametrize(
    ("release", "fragment"),
    [
        (b"5.15.0\x00x", "U+0000"),
        (b"5.15.0\nx", "U+000A"),
        ("5.15.0-\u202e".encode(), "U+202E"),
        (b"../../etc", "cannot read a kernel version"),
        (b".", "cannot read a kernel version"),
        (b"x" * 5000, "kernel release longer than"),
    ],
)
def test_a_hostile_release_never_names_a_boot_config_outside(
    tmp_path: Path, release: bytes, fragment: str
) -> None:
    root = tree(tmp_path)
    (root / "proc/sys/kernel/osrelease").write_bytes(release)
    (root / "boot").mkdir()
    code, _, err = run("facts", "--root", str(root))
    assert_one_line_error(code, err, fragment)


def test_a_release_that_names_another_path_reads_no_boot_config(tmp_path: Path) -> None:
    """The facts refuse a release with a `/` before the collector looks for
    /boot/config-RELEASE; the collector refuses it too, though the path it names leads to a
    config inside the tree."""
    from sysctl_advisor.sources import local_host

    root = tree(tmp_path)
    (root / "boot/config-x").mkdir(parents=True)
    (root / "evil").write_bytes(_qdisc_config("fq"))
    assert local_host._kernel_build(root, "x/../../evil") is None


def test_process_names_from_a_hostile_proc(tmp_path: Path) -> None:
    """FIFOs, links out of the tree, a pid directory that is a link to the host's, kernel
    threads (no cmdline) and names with escapes: no hang, nothing from outside the tree, and
    no name that is not one printable line."""
    root = tree(tmp_path)
    _pid(root, 1, b"tree-init\n")  # a name no host's pid 1 has: one from outside shows
    _pid(root, 2, b"kthreadd\n", cmdline=b"")
    _pid(root, 3, b"a`b<i>|\n")
    _pid(root, 4, b"a\x1b[31mb\n")
    _pid(root, 5, b"a\nb\n")
    _pid(root, 6, "\u202ekubelet\n".encode())
    _pid(root, 7, b"bad\xffname\n")
    fifo = _pid(root, 8, b"")
    (fifo / "comm").unlink()
    os.mkfifo(fifo / "comm")
    outside = _pid(root, 9, b"")
    (outside / "comm").unlink()
    os.symlink("/proc/self/comm", outside / "comm")
    os.symlink("/proc/1", root / "proc/10")
    (root / "proc/11").mkdir()
    os.mkfifo(root / "proc/11/cmdline")
    names = collected(root)["processes"]
    assert names == sorted(["tree-init", "a`b<i>|", "bad\ufffdname"]), names


def test_a_directory_swapped_for_a_link_after_its_check_is_not_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The NUMA node directory (and /proc, listed the same way) was checked inside the tree by
    name, then listed by name again: swapped between the two for a link to a directory outside,
    the outside one was listed. It is listed through the descriptor it was judged by."""
    from sysctl_advisor.sources import local_host

    root = tree(tmp_path)
    nodes = root / "sys/devices/system/node"
    (nodes / "node0").mkdir(parents=True)
    outside = tmp_path / "outside"
    for name in ("node0", "node1", "node2"):
        (outside / name).mkdir(parents=True)
    real = local_host._reachable

    def reachable_then_swapped(base: Path, path: Path) -> bool:
        answer = real(base, path)
        if not nodes.is_symlink():
            nodes.rename(nodes.with_name("node.was"))
            os.symlink(outside, nodes)
        return answer

    monkeypatch.setattr(local_host, "_reachable", reachable_then_swapped)
    assert local_host._numa_nodes(root) == 1
    assert nodes.is_symlink()  # the swap happened, after the check
    assert local_host._numa_nodes(root) is None  # and, checked again, the link is refused


def test_hostile_sysctl_d_values_leave_only_their_own_setting_out(tmp_path: Path) -> None:
    root = tree(tmp_path)
    (root / "etc/sysctl.d").mkdir(parents=True)
    (root / "etc/sysctl.d/10-a.conf").write_text(
        "net.core.somaxconn = 99999999999999999999999\n"
        "vm.swappiness = 1\u202e0\n"
        "net.ipv4.tcp_mem = " + "1 " * 100_000 + "\n"
        "net.core.netdev_max_backlog = 5000\n"
    )
    data = collected(root)
    settings = data["sysctl_file_settings"]
    assert "net.core.somaxconn" not in settings and "vm.swappiness" not in settings
    assert settings["net.core.netdev_max_backlog"]["value"] == "5000"
    # a value the key cannot hold is the file's text all the same: it never equals the value
    # in force, so it dates nothing
    assert settings["net.ipv4.tcp_mem"]["value"] == " ".join(["1"] * 100_000)


def _check_tree(tmp_path: Path) -> tuple[Path, str]:
    name = "50-a`b<i>x[l](http:e)::error::x%0A.conf"
    directory = tmp_path / "d"
    directory.mkdir()
    (directory / name).write_text(
        "vm.overcommit_memory = 2`</code><script>alert(1)</script>|x|\n"
        "net.core.somaxconn = 1 ::error file=x::pwn %0A::warning::y\n"
        "net.netfilter.nf_conntrack_max = 5\u202e0\n"
        "net.ipv4.ip_forward = 0 <!-- -->\n"
        "net.ipv4.conf.cilium_`<b>.rp_filter = 1 `x`\n"
    )
    facts = {
        "memory": {"total": 16 * 2**30},
        "kernel": "6.1.0-18-amd64",
        "processes": ["kubelet", "kube-proxy", "dockerd", "cilium-agent"],
        "sysctl": {"net.core.somaxconn": "16384"},
        "sysctl_files": {"net.core.somaxconn": "/etc/sysctl.d/999-sysctl-aks.conf:4"},
    }
    (tmp_path / "facts.yaml").write_text(yaml.safe_dump(facts))
    return directory, str(tmp_path / "facts.yaml")


def test_other_writer_findings_are_escaped_in_every_check_format(tmp_path: Path) -> None:
    directory, facts = _check_tree(tmp_path)
    outputs = {}
    for fmt in ("text", "github", "markdown", "sarif", "json"):
        code, out, err = run("check", str(directory), "--facts", facts, "-f", fmt)
        assert code == 1, (fmt, err)
        outputs[fmt] = out
    for fmt in ("text", "github", "markdown"):
        assert "\u202e" not in outputs[fmt], fmt
        assert "\x1b" not in outputs[fmt], fmt
    ids = [f["id"] for f in json.loads(outputs["json"])["findings"]]
    assert "check.other-writer" in ids and "check.other-writer-file" in ids
    for line in outputs["github"].splitlines():  # one workflow command per finding
        assert line.startswith(("::error ", "::warning ", "::notice ")), line
        assert "%0A.conf" not in line.split("::", 2)[1], line  # the file's % escaped
    markdown = outputs["markdown"]
    assert "<script>" not in markdown and "<i>" not in markdown and "<!--" not in markdown
    assert "&lt;script&gt;" in markdown and "\\|x\\|" in markdown
    rows = [line for line in markdown.splitlines() if line.startswith("| ")]
    assert all(line.count(" | ") == 4 for line in rows[2:]), rows  # no cell split by a |
    sarif = json.loads(outputs["sarif"])
    results = sarif["runs"][0]["results"]
    assert {r["ruleId"] for r in results} >= {"check.other-writer", "check.other-writer-file"}
    for r in results:
        assert "markdown" not in r["message"], r  # plain text only: nothing rendered


def test_an_owner_from_hostile_facts_is_escaped_in_diff(tmp_path: Path) -> None:
    evil = "/!`<b>x<\\b>[l](javascript:e)|*_{{x}}&#x3c;/999-sysctl-aks.conf:1"
    data = {
        "memory": {"total": 16 * 2**30},
        "kernel": "6.1.0-18-amd64",
        "sysctl": {"net.core.somaxconn": "16384", "vm.swappiness": "60"},
        "sysctl_files": {
            "net.core.somaxconn": "/etc/sysctl.d/999-sysctl-aks.conf:4",
            "vm.swappiness": evil,
        },
        "services": {"nginx": {"listen_backlog": 65535}},
    }
    facts = tmp_path / "facts.yaml"
    facts.write_text(yaml.safe_dump(data))
    code, out, err = run("diff", "--facts", str(facts), "-p", "frontend-proxy", "-f", "json")
    assert code == 1, err  # changes to make
    (entry,) = [e for e in json.loads(out)["entries"] if e["key"] == "net.core.somaxconn"]
    assert entry["owner"].startswith("the AKS node image writes 16384 at boot"), entry
    code, out, err = run("diff", "--facts", str(facts), "-p", "frontend-proxy", "-f", "markdown")
    assert code == 1, err
    said = next(line for line in out.splitlines() if "In force: probably" in line)
    assert "<b>" not in said and "&lt;b&gt;" in said and "\\[l\\]" in said, said
    assert "{{x}}" in said  # text, never a template
    code, out, err = run("diff", "--facts", str(facts), "-p", "frontend-proxy", "-f", "text")
    assert code == 1, err
    assert "probably the AKS node image" in out
