"""nginx listen sockets through crossplane: grouping, includes, re-rooting, broken configs."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from sysctl_advisor.sources.nginx_conf import (
    MAX_CONFIG_BYTES,
    NginxListens,
    read_nginx,
    socket_address,
)
from tests.conftest import EXAMPLES, HANG_SECONDS, TESTS, Cli

FIXTURES = TESTS / "fixtures"
FRONTEND = FIXTURES / "hosts" / "busy-frontend"


def test_sockets_from_a_debian_layout_in_a_copied_tree() -> None:
    parsed = read_nginx(FRONTEND / "etc/nginx/nginx.conf", FRONTEND)
    assert parsed.error is None
    sockets = {s.address: s for s in parsed.listens}
    assert sorted(sockets) == ["*:443", "*:80", "127.0.0.1:8080", "[::]:80"]
    # Absolute include paths were followed inside the tree, and shown as host paths.
    assert sockets["127.0.0.1:8080"].file == "/etc/nginx/conf.d/status.conf"
    # Two server blocks listen on *:80: one socket, edited where default_server is.
    assert (sockets["*:80"].file, sockets["*:80"].line) == ("/etc/nginx/sites-enabled/default", 2)
    assert sockets["*:80"].backlog is None
    assert sockets["*:443"].backlog == 8192


def test_socket_addresses() -> None:
    assert socket_address("80") == socket_address("*:80") == socket_address("0.0.0.0:80")
    assert socket_address("[::]:443") == "[::]:443"
    assert socket_address("unix:/run/app.sock") == "unix:/run/app.sock"
    assert socket_address("example.org") == "example.org:80"


def test_broken_config_keeps_what_parsed() -> None:
    parsed = read_nginx(FIXTURES / "nginx/broken/nginx.conf")
    assert [(s.address, s.backlog) for s in parsed.listens] == [("*:8080", 65535)]
    assert parsed.error is not None and "bad.conf:" in parsed.error


def test_missing_config_is_an_error_not_a_crash(tmp_path: Path) -> None:
    parsed = read_nginx(tmp_path / "nginx.conf")
    assert parsed.listens == [] and parsed.error is not None


def test_nginx_conf_option_names_the_lines_to_change(cli: Cli) -> None:
    result = cli(
        "recommend",
        "--facts",
        str(EXAMPLES / "ec2-nginx-frontend.yaml"),
        "--profile",
        "frontend-proxy",
        "--nginx-conf",
        str(FIXTURES / "nginx/broken/nginx.conf"),
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.stderr
    import json

    doc = json.loads(result.stdout)
    ids = {f["id"] for f in doc["findings"]}
    assert "listen-backlog.nginx-config-unreadable" in ids
    # 8080 asks for 65535 > somaxconn 128 in force on that host: truncated.
    assert "listen-backlog.nginx-truncated" in ids
    truncated = next(f for f in doc["findings"] if f["id"] == "listen-backlog.nginx-truncated")
    assert "good.conf:2" in truncated["message"]
    # 65535 is above the 16384 target, so no listen line needs a larger backlog.
    assert not [c for c in doc["companions"] if c["rule"] == "listen-backlog.application"]


def _config_including(tmp_path: Path, target: str) -> Path:
    config = tmp_path / "nginx.conf"
    config.write_text(
        f"events {{}}\nhttp {{\n  server {{ listen 8080 backlog=4096; }}\n  include {target};\n}}\n"
    )
    return config


def test_an_included_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    """An include names a FIFO (in the config's own directory): refused on
    its descriptor, never read (opening it would wait for a writer forever)."""
    import os

    os.mkfifo(tmp_path / "fifo.conf")
    parsed = read_nginx(_config_including(tmp_path, "fifo.conf"), confine=tmp_path)
    assert [(s.address, s.backlog) for s in parsed.listens] == [("*:8080", 4096)]
    assert parsed.error is not None and "fifo.conf: not a regular file" in parsed.error


def test_an_included_device_is_refused_without_reading_it(tmp_path: Path) -> None:
    """`include /dev/zero;` through --nginx-conf once grew the process to 11 GB: a device is
    refused on its descriptor, and nothing larger than the cap is read."""
    parsed = read_nginx(_config_including(tmp_path, "/dev/zero"))
    assert parsed.error is not None and "/dev/zero: not a regular file" in parsed.error
    big = tmp_path / "big.conf"
    with big.open("wb") as out:
        out.truncate(MAX_CONFIG_BYTES + 1)  # sparse: costs no disk
    parsed = read_nginx(_config_including(tmp_path, "big.conf"))
    assert parsed.error is not None and f"passes {MAX_CONFIG_BYTES:,} bytes" in parsed.error
    assert [(s.address, s.backlog) for s in parsed.listens] == [("*:8080", 4096)]


def test_an_include_swapped_for_a_link_outside_is_judged_by_what_was_opened(
    tmp_path: Path,
) -> None:
    """The confinement check runs on the opened descriptor: a link to a file outside the
    facts file's directory is refused, whatever its name said."""
    outside = tmp_path / "outside.conf"
    outside.write_text("server { listen 9999 backlog=1; }\n")
    confined = tmp_path / "confined"
    confined.mkdir()
    (confined / "extra.conf").symlink_to(outside)
    parsed = read_nginx(_config_including(confined, "extra.conf"), confine=confined)
    assert "*:9999" not in {s.address for s in parsed.listens}
    assert parsed.error is not None and "outside" in parsed.error


def test_thousands_of_sockets_are_summarised_not_an_error(cli: Cli, tmp_path: Path) -> None:
    """5,000 listen blocks, or 20,000 included files, made a shipped rule
    exceed its rendering or work budget (exit 2 naming the rule); the rules look at the 1,000
    shortest backlogs, say so, and their messages count instead of listing every socket."""
    many = tmp_path / "many.conf"
    many.write_text(
        "events {}\nhttp {\n"
        + "".join(f"server {{ listen {10000 + i} backlog=4096; }}\n" for i in range(5000))
        + "}\n"
    )
    (tmp_path / "conf.d").mkdir()
    for i in range(20000):
        (tmp_path / "conf.d" / f"s{i}.conf").write_text(f"server {{ listen {20000 + i}; }}\n")
    included = tmp_path / "included.conf"
    included.write_text("events {}\nhttp {\n include conf.d/*.conf;\n}\n")
    for config, count in ((many, 5000), (included, 20000)):
        result = cli(
            *["recommend", "--facts", str(EXAMPLES / "ec2-nginx-frontend.yaml")],
            *["-p", "frontend-proxy", "--nginx-conf", str(config), "-f", "json"],
        )
        assert result.exit_code == 0, result.stderr
        import json

        plan = json.loads(result.stdout)
        assert any(f"has {count:,} listening sockets" in n for n in plan["notes"])
        short = next(f for f in plan["findings"] if f["id"] == "listen-backlog.nginx-below-target")
        assert "and 990 more" in short["message"] and len(short["message"]) < 2000
        assert len([c for c in plan["companions"] if c["target"] == "nginx"]) <= 1001


def test_a_long_comment_line_is_checked_not_refused(cli: Cli, tmp_path: Path) -> None:
    """A 3 MB comment line before a setting (valid input) is read."""
    conf = tmp_path / "99-long.conf"
    conf.write_text("# " + "x" * 3_000_000 + "\nnet.core.somaxconn = 4096\n")
    result = cli("check", str(conf))
    assert result.exit_code == 0, result.stderr


def test_a_fifo_is_never_opened_even_to_be_refused(tmp_path: Path) -> None:
    """The fourth review: files were opened before they were checked, so an include of a
    FIFO (or /dev/*: every device node) opened it, releasing a writer blocked on it. Files are
    now found with O_PATH, which opens nothing, and refused on that descriptor."""
    import os
    import threading

    confined = tmp_path / "confined"
    confined.mkdir()
    for fifo in (tmp_path / "outside.fifo", confined / "inside.fifo"):
        os.mkfifo(fifo)
        opened = threading.Event()

        def writer(fifo: Path = fifo, opened: threading.Event = opened) -> None:
            with open(fifo, "wb"):  # blocks until someone opens the FIFO to read
                opened.set()

        thread = threading.Thread(target=writer, daemon=True)
        thread.start()
        parsed = read_nginx(_config_including(confined, str(fifo)), confine=confined)
        assert parsed.error is not None
        assert not opened.wait(0.3), f"{fifo.name} was opened"
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))  # let the writer go
        thread.join(HANG_SECONDS)


def test_names_outside_the_confinement_are_never_listed(tmp_path: Path) -> None:
    """An include glob or name outside the facts file's directory was expanded (or probed)
    and the names found were quoted back: a listing of a root-only directory."""
    secret = tmp_path / "secret"
    secret.mkdir(mode=0o700)
    (secret / "password-is-hunter2").write_text("")
    confined = tmp_path / "confined"
    confined.mkdir()
    config = confined / "nginx.conf"
    config.write_text(f"http {{ include {secret}/*; include {secret}/nothere; }}\n")
    parsed = read_nginx(config, confine=confined)
    assert parsed.error is not None and "hunter2" not in parsed.error
    assert "nothere: no such file" not in parsed.error


def test_a_directive_bomb_and_an_include_fan_out_are_bounded(tmp_path: Path) -> None:
    """16 MiB of `a;` took 2.2 GB (crossplane builds a dict a directive); a glob that names
    one file through a thousand directories read it a thousand times. The directives of all
    files are counted before they are parsed, and a file is read once whatever its names."""
    from sysctl_advisor.sources.nginx_conf import MAX_DIRECTIVES

    bomb = tmp_path / "bomb.conf"
    bomb.write_text("a;" * (MAX_DIRECTIVES + 1))
    parsed = read_nginx(_config_including(tmp_path, "bomb.conf"))
    assert parsed.error is not None and f"passes {MAX_DIRECTIVES:,} directives" in parsed.error
    fan = tmp_path / "fan"
    fan.mkdir()
    for i in range(300):
        (fan / f"d{i}").mkdir()
    config = fan / "nginx.conf"
    config.write_text("http { server { listen 80; } include */../nginx.conf; }\n")
    parsed = read_nginx(config)
    assert [s.address for s in parsed.listens] == ["*:80"] and parsed.error is None


def test_blocks_nested_a_thousand_deep_are_one_error(tmp_path: Path) -> None:
    config = tmp_path / "nginx.conf"
    config.write_text("a {" * 965 + "server { listen 80 backlog=200; }" + "}" * 965 + "\n")
    parsed = read_nginx(config)
    assert parsed.error is not None


def test_a_wildcard_include_never_lists_outside_the_confinement(tmp_path: Path) -> None:
    """A wildcard that climbs out with `..` after it (`x*/../../secret/*`), or matches a
    link to a directory outside, was expanded by glob(3) semantics and listed the names
    there: the wildcard is walked by descriptor from inside, links are not followed to list
    and `..` after a wildcard is refused."""
    secret = tmp_path / "secret"
    secret.mkdir(mode=0o700)
    (secret / "password-is-hunter2.conf").write_text("server { listen 9999; }\n")
    confined = tmp_path / "confined"
    (confined / "xa").mkdir(parents=True)
    (confined / "sites").mkdir()
    (confined / "sites" / "ok.conf").write_text("server { listen 8081; }\n")
    (confined / "linked").symlink_to(secret, target_is_directory=True)
    config = confined / "nginx.conf"
    config.write_text(
        "http { server { listen 80; }\n  include x*/../../secret/pass*;\n  include */*.conf; }\n"
    )
    parsed = read_nginx(config, confine=confined)
    addresses = {s.address for s in parsed.listens}
    assert addresses == {"*:80", "*:8081"}
    assert parsed.error is not None and "`..` after a wildcard" in parsed.error
    assert "hunter2" not in parsed.error
    # unconfined (the operator's own --nginx-conf) a wildcard still climbs as glob(3) does
    parsed = read_nginx(config)
    assert "*:9999" in {s.address for s in parsed.listens}


def test_a_wildcard_include_that_looks_at_too_many_names_is_one_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`*/*/*/*` over a wide tree looked at every name in it: the names one wildcard looks
    at are bounded (the bound is lowered here so the tree stays small)."""
    from sysctl_advisor.sources import nginx_conf

    monkeypatch.setattr(nginx_conf, "MAX_LISTED", 50)
    for i in range(10):
        for j in range(10):
            (tmp_path / f"d{i}" / f"e{j}").mkdir(parents=True)
    config = tmp_path / "nginx.conf"
    config.write_text("http { server { listen 80; } include */*/*.conf; }\n")
    parsed = read_nginx(config, confine=tmp_path)
    assert [s.address for s in parsed.listens] == ["*:80"]
    assert parsed.error is not None and "look at more than 50 names" in parsed.error


def test_repeated_wildcard_includes_are_bounded_together(tmp_path: Path) -> None:
    """The sixth review: every `include c/*;` of 20,000 listed and opened the same 2,000
    files again (a 336 KB config kept recommend busy for hours). An include met again adds
    nothing, and the names and files of all the includes together are bounded."""
    (tmp_path / "c").mkdir()
    first = tmp_path / "c" / "f0.conf"
    first.write_text("")
    for i in range(1, 300):
        os.link(first, tmp_path / "c" / f"f{i}.conf")
    config = tmp_path / "nginx.conf"
    lines = [f"include c/{'*' if i % 2 else '*.conf'};" for i in range(20_000)]
    config.write_text("http { server { listen 80; } " + " ".join(lines) + " }\n")
    done = threading.Event()
    result: list[object] = []

    def run() -> None:
        result.append(read_nginx(config, confine=tmp_path))
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(HANG_SECONDS), "repeated includes did not finish"
    parsed = result[0]
    assert isinstance(parsed, NginxListens) and [s.address for s in parsed.listens] == ["*:80"]
