"""Every bad input is exit 2 with one line naming the
file, line or field, and the run ends (HANG_SECONDS guards it); never a traceback, a hang, a
crash or nonsense. Payloads are built at test time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import HANG_SECONDS, ROOT, assert_one_line_error


def run(
    *args: str, env: dict[str, str] | None = None, timeout: float = HANG_SECONDS
) -> tuple[int, str]:
    result = subprocess.run(
        [sys.executable, "-m", "sysctl_advisor", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=ROOT,
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, result.stderr


def one_line_exit_2(*args: str, words: str, env: dict[str, str] | None = None) -> None:
    assert_one_line_error(*run(*args, env=env), words)


def facts_file(tmp_path: Path, text: str, name: str = "facts.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("memory: {total: 0.3}\n", "memory.total"),
        ("memory: {total: 1}\n", "between 16 MiB and 64 PiB"),
        ("memory: {total: 1e30 GiB}\n", "memory.total"),
        ("memory: {total: 8 GiB}\nobserved: {orphans_peak: 1000000000000000000000000000000}\n",
         "observed.orphans_peak"),
        ("memory: {total: 8 GiB}\nsysctl: {net.core.somaxconn: '1" + "0" * 40 + "'}\n",
         "larger than any kernel value"),
        ("memory: {total: 8 GiB}\nobserved: {orphans_peak: " + "9" * 5000 + "}\n", "facts.yaml"),
        ("memory: {total: 8 GiB}\nmemory: {total: 4 GiB}\n", "duplicate key 'memory'"),
        ('{"memory": {"total": "8 GiB", "total": "1 GiB"}}\n', "duplicate key 'total'"),
        ("[" * 50_000 + "]" * 50_000 + "\n", "facts.yaml:1"),  # PyYAML or our depth check
        ("memory: {total: 8 GiB}\nhostname: \"a\\nkernel.core_pattern = |x\"\n", "hostname"),
        ("memory: {total: 8 GiB}\narch: ppc\n", "memory.lowmem"),
        # nonsense that was planned as if it were a host
        ("memory: {total: 8 GiB}\narch: vax\n", "arch: 'vax' is not an architecture"),
        ("memory: {total: 8 GiB}\nkernel: 99999999999999999999.1.0\n", "kernel"),
        ("memory: {total: 8 GiB}\nnics: [{name: eth0}, {name: eth0}]\n", "eth0 is listed twice"),
        ("memory: {total: 8 GiB}\nobserved:\n  kernel_messages:\n"
         + ("  - " + "x" * 4000 + "\n") * 200, "more than 768 KiB of kernel messages"),
        # values no host can have
        ("memory: {total: 1 GiB, lowmem: 2 GiB}\narch: i686\n", "part of MemTotal"),
        # the kernel's shares of a few pages: tcp_mem 1 1 1 and udp_mem 0 0 0 were planned
        ("memory: {total: 3 GiB, lowmem: 4096}\narch: i686\n", "memory.lowmem"),
        ("memory: {total: 32 GiB, lowmem: 16 GiB}\narch: armv7l\n", "at most 4 GiB directly"),
        ("memory: {total: 1 TiB}\narch: i686\n", "at most 64 GiB"),
        ("memory: {total: 8 GiB}\narch: x86_64\npage_size: 65536\n", "pages of 4 KiB"),
        ("memory: {total: 8 GiB}\narch: s390x\npage_size: 16384\n", "pages of 4 KiB"),
        ("memory: {total: 8 GiB}\narch: aarch64\npage_size: 32768\n",
         "pages of 4 KiB, 16 KiB, 64 KiB"),
        ("memory: {total: 8 GiB}\ncpu: {threads: " + str(8192 + 1) + "}\n", "cpu.threads"),
        ("memory: {total: 8 GiB}\nobserved:\n  softnet:\n"
         + "  - {cpu: 3, processed: 1, dropped: 0, time_squeeze: 0}\n" * 2,
         "CPU 3 is listed twice"),
        ("memory: {total: 8 GiB}\nobserved:\n  kernel_log: {source: journal, lines: 2}\n"
         "  kernel_events: [{family: tcp.out-of-memory, count: 3, example: x}]\n",
         "more than the 2 kernel_log says were read"),
        ("memory: {total: 8 GiB}\nobserved:\n  kernel_events: [{family: tcp.out-of-memory, "
         "count: 1, example: x, first_seen: '2025-02-01T00:00:00Z', last_seen: '2025-01-01'}]\n",
         "is after last_seen"),
        ("memory: {total: 8 GiB}\nobserved:\n  app_events: [{family: redis.tcp-backlog, "
         "count: 1, example: x, first_seen: '2025-01-01 10:00', last_seen: '2025-01-01 09:00'}]\n",
         "is after last_seen"),
    ],
)  # fmt: skip
def test_bad_facts(text: str, words: str, tmp_path: Path) -> None:
    one_line_exit_2("recommend", "--facts", facts_file(tmp_path, text), "-p", "base", words=words)


def test_a_fifo_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "facts.yaml"
    os.mkfifo(fifo)
    one_line_exit_2("recommend", "--facts", str(fifo), "-p", "base", words="not a regular file")
    code, err = run("check", str(fifo))
    assert code == 2 and "not a regular file" in err


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_devices_are_refused(device: str) -> None:
    if not Path(device).exists():
        pytest.skip(f"no {device}")
    one_line_exit_2("recommend", "--facts", device, "-p", "base", words="not a regular file")
    one_line_exit_2("fleet", "--ansible-facts", device, "-p", "base", "--out", "/tmp/x",
                    words="not a regular file")  # fmt: skip


def test_oversized_input_is_refused(tmp_path: Path) -> None:
    path = facts_file(tmp_path, "memory: {total: 8 GiB}\n# " + "x" * 5000 + "\n")
    one_line_exit_2(
        "recommend", "--facts", path, "-p", "base",
        words="larger than 2,048 bytes", env={"SYSCTL_ADVISOR_MAX_INPUT": "2048"},
    )  # fmt: skip


def test_ansible_facts_bombs(tmp_path: Path) -> None:
    deep = tmp_path / "deep"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    one_line_exit_2("recommend", "--facts", str(deep), "-p", "base", words=f"{deep}:1")
    dup = tmp_path / "dup"
    dup.write_text(json.dumps({"ansible_facts": {}})[:-1] + ', "ansible_facts": {}}')
    code, err = run("recommend", "--facts", str(dup), "-p", "base")
    assert code == 2 and "duplicate key" in err


def _laughs(levels: int = 9) -> str:
    """Nine levels of nine aliases: 9**9 values in about 300 bytes."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("option", ["--facts", "--rules-dir", "--profiles-dir"])
def test_alias_bomb_is_refused_at_once(option: str, tmp_path: Path) -> None:
    bomb = tmp_path / "bombs" / "bomb.yaml"
    bomb.parent.mkdir()
    bomb.write_text(_laughs())
    target = str(bomb if option == "--facts" else bomb.parent)
    args = ["recommend", option, target, "-p", "base"]
    if option != "--facts":
        args += ["--facts", "examples/dcache-32bit.yaml"]
    one_line_exit_2(*args, words="values once YAML aliases are expanded")  # within HANG_SECONDS


@pytest.mark.parametrize(
    ("body", "words"),
    [
        # 4 MiB and a line of block mapping: refused on its size, before it is parsed
        (
            "sysctl:\n"
            + "".join(f"  net.ipv4.conf.veth{i:07}.rp_filter: '1'\n" for i in range(99_865)),
            "larger than 4,194,304 bytes, the limit for a facts file",
        ),
        # 600 KB of one flow sequence: 200,001 nodes, refused on its events, never built
        ("processes: [" + "a, " * 200_000 + "a]\n", "more than 200,000 YAML nodes"),
    ],
    ids=["bytes", "nodes"],
)
def test_a_large_yaml_facts_file_is_refused_before_it_is_built(
    body: str, words: str, tmp_path: Path
) -> None:
    """The fourth review: YAML costs 3-4 s and 100-120 MB per MB before its one-line error (a
    13 MB facts file reached 1.35 GB). A YAML facts file is held to 4 MiB and 200,000 nodes, both
    checked before the document is built, and the error says which limit."""
    path = facts_file(tmp_path, "memory: {total: 8 GiB}\n" + body)
    one_line_exit_2("recommend", "--facts", path, "-p", "base", words=words)


def test_a_large_yaml_rules_file_is_refused_before_it_is_built(tmp_path: Path) -> None:
    """A rules directory's file is held to 1 MiB (the shipped catalogs are at most 120 KB)."""
    rules = tmp_path / "rules" / "check"
    rules.mkdir(parents=True)
    (rules / "huge.yaml").write_text("id: check.huge\nrationale: |\n" + "  x\n" * 300_000)
    one_line_exit_2(
        "check", "tests/fixtures/check/annotated.conf", "--rules-dir",
        str(tmp_path / "rules"), words="the limit for a rules, profiles or catalog file",
    )  # fmt: skip


def test_the_largest_lists_a_facts_file_may_hold_still_load(tmp_path: Path) -> None:
    """Every list the facts contract bounds at its largest at once (65,536 interface names and
    process names, 4,096 NICs): some 2.5 MB and 160,000 nodes, within both bounds."""
    facts = {
        "kernel": "6.8.0-31-generic",
        "memory": {"total": "64 GiB"},
        "nics": [
            {"name": f"ens{i}", "driver": "mlx5_core", "speed_mbps": 100000} for i in range(4096)
        ],
        "links": [f"veth{i:08x}" for i in range(65536)],
        "processes": [f"worker-{i}" for i in range(65536)],
    }
    path = facts_file(tmp_path, yaml.safe_dump(facts))
    code, err = run("recommend", "--facts", path, "-p", "base")
    assert code == 0, err


def test_shared_aliases_within_bounds_still_load(tmp_path: Path) -> None:
    path = facts_file(
        tmp_path, "memory: {total: 8 GiB}\nnics:\n  - &nic {name: eth0, driver: e1000e}\n"
    )
    code, err = run("recommend", "--facts", path, "-p", "base")
    assert code == 0, err


def test_profile_with_nan_bound(tmp_path: Path) -> None:
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "nanny.yaml").write_text(
        yaml.safe_dump(
            {"name": "nanny", "summary": "s", "extends": "base",
             "parameters": {"x": {"type": "float", "description": "d", "min": float("nan")}}}
        )
    )  # fmt: skip
    one_line_exit_2(
        "recommend", "--facts", "examples/dcache-32bit.yaml", "-p", "nanny",
        "--profiles-dir", str(profiles), words="finite",
    )  # fmt: skip


def test_profile_map_float_for_int_parameter_works(tmp_path: Path) -> None:
    """`streams: 2.0` passed validation and then failed every host; now it is simply 2."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "dtn-01").write_text((ROOT / "tests/fixtures/ansible/tree/dtn-01").read_text())
    mapping = tmp_path / "map.yaml"
    mapping.write_text(
        yaml.safe_dump([{"hosts": "*", "profile": "gridftp", "set": {"streams": 2.0}}])
    )
    code, err = run("fleet", "--ansible-facts", str(tree), "--profile-map", str(mapping),
                    "--out", str(tmp_path / "out"))  # fmt: skip
    assert code == 0, err
    assert "--set streams=2" in (tmp_path / "out/host_files/dtn-01.conf").read_text()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["recommend"], "--profile"),  # the words around the names are click's
        (["recommend", "-p", "base", "--bogus"], "--bogus"),
        (["nosuch"], "nosuch"),
        ([], "no command given; commands: recommend, diff"),
        (["explain", "tcp_mem", "--set", "a=1"], "--set: needs --profile"),
        (["calibrate", "--pairs", "100"], ""),
        (["recommend", "--facts", "examples/ec2-nginx-frontend.yaml", "-p", "frontend-proxy",
          "--set", "listen_backlog=\u0661\u0662\u0663"], "expected an integer"),
        (["recommend", "--facts", "examples/ec2-nginx-frontend.yaml", "-p", "frontend-proxy",
          "--set", "listen_backlog=\u00b2"], "expected an integer"),
    ],
)  # fmt: skip
def test_usage_errors_are_one_line(args: list[str], words: str) -> None:
    code, err = run(*args)
    assert code == 2 and len(err.strip().splitlines()) == 1 and words in err, err


def test_calibrate_refuses_too_few_pairs_as_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("calibrate checks its options after the root check")
    code, err = run("calibrate", "--pairs", "100")
    assert code == 2 and "--pairs" in err and "noise" in err


# -- found by a hostile-input review --------------------------------------------------------------


def test_a_size_too_long_for_a_float_is_one_line(tmp_path: Path) -> None:
    path = facts_file(tmp_path, 'memory: {total: "' + "9" * 400 + ' GiB"}\n')
    one_line_exit_2("recommend", "--facts", path, "-p", "base", words="memory.total")


@pytest.mark.parametrize(
    "command", [["check"], ["facts", "--root"], ["diff", "-p", "base", "--current"]]
)
def test_a_path_too_long_for_the_system_is_one_line(command: list[str], tmp_path: Path) -> None:
    long = str(tmp_path / ("a" * 300))
    one_line_exit_2(*command, long, words="File name too long")


@pytest.mark.parametrize("group", [{"hosts": 5}, {"hosts": "ab"}, {"children": [1, 2]}])
def test_inventory_groups_must_list_names(group: dict[str, object], tmp_path: Path) -> None:
    from sysctl_advisor.knowledge.profile_map import load_inventory_groups
    from sysctl_advisor.model.errors import InputError

    inventory = tmp_path / "inventory.json"
    inventory.write_text(json.dumps({"web": group}))
    with pytest.raises(InputError) as caught:
        load_inventory_groups(inventory)
    assert caught.value.field in ("web.hosts", "web.children")


def test_a_deep_chain_of_inventory_groups_needs_no_recursion(tmp_path: Path) -> None:
    from sysctl_advisor.knowledge.profile_map import load_inventory_groups

    # Twice the interpreter's recursion limit (2,000 by default; 5,000 before): a recursive
    # walk would overflow halfway, and resolving every group of the chain is quadratic.
    depth = 2 * sys.getrecursionlimit()
    groups = {f"g{i}": {"children": [f"g{i + 1}"]} for i in range(depth)}
    groups[f"g{depth}"] = {"hosts": ["leaf-01"]}
    inventory = tmp_path / "inventory.json"
    inventory.write_text(json.dumps(groups))
    resolved = load_inventory_groups(inventory)
    assert resolved["g0"] == frozenset({"leaf-01"}) == resolved[f"g{depth - 1}"]


def test_a_doubled_minus_in_proc_counters_is_not_a_number(tmp_path: Path) -> None:
    from sysctl_advisor.sources.proc_readers import parse_netstat

    table = parse_netstat("TcpExt: ListenOverflows ListenDrops\nTcpExt: --5 3\n")
    assert table == {"TcpExt": {"ListenDrops": 3}}


@pytest.mark.parametrize(
    ("call", "field"),
    [
        ("recommend('base', fmt='yaml')", "--format"),
        ("diff('base', fmt='html')", "--format"),
        ("check([], fmt='xml')", "--format"),
        ("check([], fail_on='fatal')", "--fail-on"),
        ("facts(fmt='toml')", "--format"),
    ],
)
def test_commands_called_without_typer_check_their_choices(call: str, field: str) -> None:
    from sysctl_advisor.commands.check import check  # noqa: F401
    from sysctl_advisor.commands.diff import diff  # noqa: F401
    from sysctl_advisor.commands.facts import facts  # noqa: F401
    from sysctl_advisor.commands.recommend import recommend  # noqa: F401
    from sysctl_advisor.model.errors import InputError

    with pytest.raises(InputError) as caught:
        eval(call)  # the literal calls written above
    assert caught.value.field == field


def test_json_outputs_hold_a_file_name_that_is_not_utf8(tmp_path: Path) -> None:
    """A sysctl.d file name with an undecodable byte: diff --format json writes valid UTF-8
    JSON naming it with its escape, as check --format json always did."""
    directory = Path(os.fsdecode(bytes(tmp_path) + b"/bad\xff"))
    directory.mkdir()
    conf = directory / "s.conf"
    conf.write_text("net.ipv4.tcp_tw_reuse = 1\n")
    out = tmp_path / "diff.json"
    code, err = run("diff", "-p", "base", "--facts", str(ROOT / "examples/dcache-32bit.yaml"),
                    "--current", str(conf), "-f", "json", "-o", str(out))  # fmt: skip
    assert code in (0, 1), err
    document = json.loads(out.read_bytes().decode("utf-8"))  # strict UTF-8
    assert "bad\\udcff" in json.dumps(document) or "bad\udcff" in json.dumps(document)


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_json_reports_never_carry_a_character_a_terminal_acts_on(tmp_path: Path, fmt: str) -> None:
    """The sixth review: json.dumps leaves DEL, C1 controls (CSI, U+009B) and bidi overrides
    raw, so `check -f json` printed a hostile value's escape sequence to the terminal. They
    are written as JSON escapes, and the document decodes to the same text."""
    hostile = "1 2 3\u009b2J\x7f\u202e"
    directory = tmp_path / ("d\u202e\u009b" + fmt)
    directory.mkdir()
    conf = directory / "s.conf"
    conf.write_text(f"net.ipv4.tcp_wmem = {hostile}\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "sysctl_advisor", "check", str(conf), "-f", fmt],
        capture_output=True,
        encoding="utf-8",
        timeout=HANG_SECONDS,
        cwd=ROOT,
    )
    code, out = result.returncode, result.stdout
    assert code in (0, 1), result.stderr
    assert not any(c in out for c in "\x7f\u009b\u202e"), out
    assert "\\u009b" in out and "\\u202e" in out
    json.loads(out)


def test_a_long_extends_chain_is_refused_at_once(tmp_path: Path) -> None:
    """2,000 profiles each extending the one before ran for minutes; the
    chain is bounded, and each selector is matched once however many profiles inherit it."""
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    for i in range(2000):
        parent = f"p{i - 1}" if i else "base"
        (profiles / f"p{i}.yaml").write_text(f"name: p{i}\nsummary: s\nextends: {parent}\n")
    one_line_exit_2("profiles", "--profiles-dir", str(profiles), words="profiles deep")
    for i in range(2000):  # as many flat ones load
        (profiles / f"p{i}.yaml").write_text(
            f"name: p{i}\nsummary: s\nextends: gridftp\nrules: ['tcp-*']\n"
        )
    code, err = run("profiles", "--profiles-dir", str(profiles))
    assert code == 0, err


def test_folders_nested_a_thousand_deep_in_a_rules_directory_are_one_line(tmp_path: Path) -> None:
    """The fourth review: the walk of such a rules directory failed with a RecursionError
    (exit 3)."""
    rules = tmp_path / "rules"
    rules.mkdir()
    fds = [os.open(rules, os.O_RDONLY)]
    for _ in range(1100):  # built by descriptor: a path that long is beyond PATH_MAX
        os.mkdir("a", dir_fd=fds[-1])
        fds.append(os.open("a", os.O_RDONLY, dir_fd=fds[-1]))
    try:
        one_line_exit_2("rules", "--rules-dir", str(rules), words="nested more than 8 deep")
    finally:  # removed by descriptor too (shutil.rmtree recurses as deep)
        os.close(fds.pop())
        while fds:
            os.rmdir("a", dir_fd=fds[-1])
            os.close(fds.pop())


def test_no_home_directory_means_no_cache_not_a_crash(tmp_path: Path) -> None:
    """A user with no HOME and no passwd entry: `Could not determine home directory` (exit 3)
    before; now the run goes without a cache, and `cache` says why."""
    env = {k: v for k, v in os.environ.items() if k not in ("HOME", "SYSCTL_ADVISOR_CACHE")}
    command = [sys.executable, "-m", "sysctl_advisor"]
    if os.geteuid() == 0:
        command = ["setpriv", "--reuid", "43210", "--regid", "43210", "--clear-groups", *command]
    env["PYTHONPATH"] = str(ROOT)
    shown = subprocess.run([*command, "cache"], capture_output=True, text=True, env=env, cwd="/")
    assert shown.returncode == 0, shown.stderr
    if os.geteuid() == 0:
        assert "no home directory" in shown.stdout


def test_hostile_text_in_an_error_never_reaches_the_terminal(tmp_path: Path) -> None:
    """The fourth review: a facts file's key carrying ESC sequences was echoed raw in the
    one-line error. Every character that is not plain text is written as a visible escape."""
    path = facts_file(tmp_path, 'memory: {total: 8 GiB}\n"\\e[31mEVIL\\e[0m\\a\\u202e": 1\n')
    code, err = run("recommend", "--facts", path, "-p", "c1m-server")
    assert code == 2 and "unknown field" in err
    assert err.rstrip("\n").isprintable(), repr(err)
    assert "\\x1b[31mEVIL" in err


def test_an_input_that_is_a_fifo_is_never_opened(tmp_path: Path) -> None:
    """Every input was opened (non-blocking) before it was checked, so a device node named as
    a facts or sysctl file ran its driver's open (a watchdog's arms it). Inputs are found
    O_PATH and refused on that descriptor: a FIFO never releases a writer blocked on it."""
    import threading

    fifo = tmp_path / "facts.yaml"
    os.mkfifo(fifo)
    opened = threading.Event()

    def writer() -> None:
        with open(fifo, "wb"):  # blocks until someone opens the FIFO to read
            opened.set()

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    for args in (("recommend", "--facts", str(fifo), "-p", "base"), ("check", str(fifo))):
        code, err = run(*args)
        assert code == 2 and "not a regular file" in err, err
    assert not opened.wait(0.3), "the FIFO was opened"
    os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))  # let the writer go
    thread.join(HANG_SECONDS)
