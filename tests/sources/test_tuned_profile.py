"""tuned's active profile in the facts: which keys it sets, and where."""

from __future__ import annotations

import shutil
from pathlib import Path

from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.sources.local_host import collect_data
from sysctl_advisor.sources.tuned_profile import tuned_sysctls
from tests.conftest import TESTS, Cli

HOSTS = TESTS / "fixtures" / "hosts"
RMEM, WMEM, SOMAXCONN = "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.core.somaxconn"


def _profile(root: Path, directory: str, name: str, text: str) -> Path:
    path = root / directory.lstrip("/") / name / "tuned.conf"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _tuned_tree(tmp_path: Path) -> Path:
    """busy-frontend with tuned's network-throughput active (it includes
    throughput-performance), its tcp_rmem in force as the profile writes it."""
    root = tmp_path / "host"
    shutil.copytree(HOSTS / "busy-frontend", root, symlinks=True)
    (root / "etc/tuned").mkdir(parents=True, exist_ok=True)
    (root / "etc/tuned/active_profile").write_text("network-throughput\n")
    _profile(
        root,
        "/usr/lib/tuned",
        "throughput-performance",
        "[main]\nsummary=throughput\n\n[sysctl]\nnet.core.somaxconn = 2048\nvm.swappiness=10\n",
    )
    _profile(
        root,
        "/usr/lib/tuned",
        "network-throughput",
        "\n# a leading blank line: line numbers count it\n[main]\n"
        "include=throughput-performance\n\n[sysctl]\n"
        "net.ipv4.tcp_rmem=4096 87380 16777216\nnet/ipv4/tcp_wmem=4096 16384 16777216\n",
    )
    (root / "proc/sys/net/ipv4/tcp_rmem").write_text("4096\t87380\t16777216\n")
    return root


def test_the_active_profile_and_its_includes_are_read_with_their_lines(tmp_path: Path) -> None:
    root = _tuned_tree(tmp_path)
    kb = KnowledgeBase.load()
    data = collect_data(kb.catalog.read_keys(), root, tuned=kb.catalog.tuned_places())
    files = data["sysctl_files"]
    assert files[RMEM] == "/usr/lib/tuned/network-throughput/tuned.conf:7"
    assert files[WMEM] == "/usr/lib/tuned/network-throughput/tuned.conf:8"
    assert files[SOMAXCONN] == "/usr/lib/tuned/throughput-performance/tuned.conf:5"
    # /etc/tuned holds an own copy: it wins over /usr/lib/tuned, as tuned's locator does
    _profile(root, "/etc/tuned", "network-throughput", "[sysctl]\nnet.ipv4.tcp_rmem=1 2 3\n")
    data = collect_data(kb.catalog.read_keys(), root, tuned=kb.catalog.tuned_places())
    assert data["sysctl_files"][RMEM] == "/etc/tuned/network-throughput/tuned.conf:2"
    assert WMEM not in data["sysctl_files"] and SOMAXCONN not in data["sysctl_files"]


def test_tuned_2_23_keeps_its_profiles_under_profiles(tmp_path: Path) -> None:
    """From tuned 2.23 the profiles are /usr/lib/tuned/profiles/<name> (consts.py
    CFG_DEF_PROFILE_DIRS): a host with that layout is read as well as one with the older."""
    root = _tuned_tree(tmp_path)
    shutil.move(str(root / "usr/lib/tuned"), str(tmp_path / "old"))
    (root / "usr/lib/tuned").mkdir()
    shutil.move(str(tmp_path / "old"), str(root / "usr/lib/tuned/profiles"))
    kb = KnowledgeBase.load()
    files = collect_data(kb.catalog.read_keys(), root, tuned=kb.catalog.tuned_places())[
        "sysctl_files"
    ]
    assert files[RMEM] == "/usr/lib/tuned/profiles/network-throughput/tuned.conf:7"
    assert files[SOMAXCONN] == "/usr/lib/tuned/profiles/throughput-performance/tuned.conf:5"
    assert kb.catalog.tuning_daemon(files[RMEM]) == "tuned"


def test_a_sysctl_d_file_wins_over_the_profile(tmp_path: Path) -> None:
    """tuned applies sysctl.d again after its profile (reapply_sysctl, on by default)."""
    root = _tuned_tree(tmp_path)
    (root / "etc/sysctl.d").mkdir(parents=True, exist_ok=True)
    (root / "etc/sysctl.d/50-local.conf").write_text("net.core.somaxconn = 4096\n")
    kb = KnowledgeBase.load()
    files = collect_data(kb.catalog.read_keys(), root, tuned=kb.catalog.tuned_places())[
        "sysctl_files"
    ]
    assert files[SOMAXCONN].endswith("etc/sysctl.d/50-local.conf:1")
    assert files[RMEM] == "/usr/lib/tuned/network-throughput/tuned.conf:7"


def test_an_etc_profile_extending_the_shipped_one_of_its_name_keeps_both(tmp_path: Path) -> None:
    """tuned's documented customisation: /etc/tuned/X/tuned.conf with include=X reads the
    shipped X too (the locator skips the file already read), and include=-NAME is an include
    that may be missing, not a name to refuse."""
    root = _tuned_tree(tmp_path)
    _profile(
        root,
        "/etc/tuned",
        "network-throughput",
        "[main]\ninclude=-absent-profile, network-throughput\n\n[sysctl]\n"
        "net.ipv4.tcp_rmem=4096 87380 33554432\n",
    )
    kb = KnowledgeBase.load()
    files = collect_data(kb.catalog.read_keys(), root, tuned=kb.catalog.tuned_places())[
        "sysctl_files"
    ]
    assert files[RMEM] == "/etc/tuned/network-throughput/tuned.conf:5"
    assert files[WMEM] == "/usr/lib/tuned/network-throughput/tuned.conf:8"
    assert files[SOMAXCONN] == "/usr/lib/tuned/throughput-performance/tuned.conf:5"
    _profile(root, "/etc/tuned", "network-throughput", "[main]\ninclude=-throughput-performance\n")
    files = collect_data(kb.catalog.read_keys(), root, tuned=kb.catalog.tuned_places())[
        "sysctl_files"
    ]
    assert files[SOMAXCONN] == "/usr/lib/tuned/throughput-performance/tuned.conf:5"


def test_a_vendor_sysctl_d_file_loses_to_the_profile(tmp_path: Path) -> None:
    """tuned applies again only /run/sysctl.d, /etc/sysctl.d and /etc/sysctl.conf
    (plugin_sysctl.py _apply_system_sysctl): a key a /usr/lib/sysctl.d file sets and the
    profile sets too holds the profile's value, so tuned set it."""
    root = _tuned_tree(tmp_path)
    (root / "usr/lib/sysctl.d").mkdir(parents=True, exist_ok=True)
    (root / "usr/lib/sysctl.d/50-vendor.conf").write_text(
        "net.core.somaxconn = 1024\nnet.ipv4.tcp_rmem = 4096 87380 6291456\n"
        "net.core.netdev_max_backlog = 2000\n"
    )
    kb = KnowledgeBase.load()
    files = collect_data(kb.catalog.read_keys(), root, tuned=kb.catalog.tuned_places())[
        "sysctl_files"
    ]
    assert files[SOMAXCONN] == "/usr/lib/tuned/throughput-performance/tuned.conf:5"
    assert files[RMEM] == "/usr/lib/tuned/network-throughput/tuned.conf:7"
    # a key the profile does not set keeps the file that set it
    assert files["net.core.netdev_max_backlog"].endswith("usr/lib/sysctl.d/50-vendor.conf:3")


def test_hostile_profile_names_and_include_loops_stay_bounded(tmp_path: Path) -> None:
    """A profile name is a directory name, never a path (`../../etc/shadow`); an include loop
    or a self-include ends; a link out of a copied tree is not read."""
    root = tmp_path / "host"
    outside = tmp_path / "outside"
    _profile(outside, "/", "leak", "[sysctl]\nnet.core.somaxconn=1\n")
    (root / "etc/tuned").mkdir(parents=True)
    (root / "etc/tuned/active_profile").write_text("../../etc/shadow .. . a b leak\n")
    (root / "etc/tuned/tuned.conf").write_text("[sysctl]\nnet.core.somaxconn=9\n")
    _profile(root, "/usr/lib/tuned", "a", "[main]\ninclude=b,a\n[sysctl]\nnet.core.somaxconn=5\n")
    _profile(root, "/usr/lib/tuned", "b", "[main]\ninclude = a ; b\n")
    (root / "usr/lib/tuned/leak").symlink_to(outside / "leak", target_is_directory=True)
    from sysctl_advisor.sources.local_host import _read

    found = tuned_sysctls(
        lambda path: _read(path, root, strip=False),
        root,
        "/etc/tuned/active_profile",
        ["/usr/lib/tuned", "/etc/tuned"],
        [SOMAXCONN],
    )
    assert found == {SOMAXCONN: "/usr/lib/tuned/a/tuned.conf:4"}


def test_recommend_says_tuned_set_the_default(cli: Cli, tmp_path: Path) -> None:
    """End to end: `facts --root` of a tuned host, then `recommend`: tcp_rmem's 16 MiB maximum
    is the host's default, set by tuned, with the kernel's own beside it."""
    root = _tuned_tree(tmp_path)
    facts = tmp_path / "facts.yaml"
    made = cli("facts", "--root", str(root), "-o", str(facts))
    assert made.exit_code == 0, made.stderr
    result = cli("recommend", "--facts", str(facts), "-p", "gridftp")
    assert result.exit_code == 0, result.stderr
    said = " ".join(line.lstrip("#").strip() for line in result.stdout.splitlines())
    assert "set by tuned from /usr/lib/tuned/network-throughput/tuned.conf:7" in said
    assert "the kernel's 4 KiB / 128 KiB / 6 MiB" in said


def test_a_special_file_in_a_copied_tree_is_never_opened(tmp_path: Path) -> None:
    """The sixth review: the collector opened a file before it checked it, so a device node
    in a `--root` tree (a watchdog's, a tape's) ran its driver's open. Files are found with
    O_PATH, refused on that descriptor, and only a regular file is opened to be read: a FIFO
    named as tuned's profile (or a /proc file) never releases a writer blocked on it."""
    import os
    import threading

    from tests.conftest import HANG_SECONDS

    root = _tuned_tree(tmp_path)
    fifos = [root / "usr/lib/tuned/network-throughput/tuned.conf", root / "proc/sys/vm/swappiness"]
    for fifo in fifos:
        fifo.parent.mkdir(parents=True, exist_ok=True)
        fifo.unlink(missing_ok=True)
        os.mkfifo(fifo)
    opened = threading.Event()

    def writer(fifo: Path) -> None:
        with open(fifo, "wb"):  # blocks until someone opens the FIFO to read
            opened.set()

    threads = [threading.Thread(target=writer, args=(f,), daemon=True) for f in fifos]
    for thread in threads:
        thread.start()
    kb = KnowledgeBase.load()
    data = collect_data(kb.catalog.read_keys(), root, tuned=kb.catalog.tuned_places())
    assert RMEM not in (data["sysctl_files"] or {})
    assert not opened.wait(0.3), "a FIFO was opened"
    for fifo in fifos:
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))  # let the writers go
    for thread in threads:
        thread.join(HANG_SECONDS)
