"""Redis's and PostgreSQL's configs named by a facts file (sources/app_configs.py): the
settings the application profiles read, and every hostile payload closed, built at test time."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from sysctl_advisor.model.host_facts import HostFacts
from sysctl_advisor.sources.app_configs import (
    MAX_CONFIG_BYTES,
    read_postgresql,
    read_redis,
)
from sysctl_advisor.sources.facts_file import facts_from_text
from sysctl_advisor.sources.service_configs import with_service_configs
from tests.conftest import Cli

SECRET = "token=ghp_s3cr3t_value_that_must_not_leak"


def _load(facts: Path) -> HostFacts:
    return with_service_configs(facts_from_text(facts, facts.read_text()), facts.parent)


def _facts(tmp_path: Path, services: dict[str, object]) -> Path:
    path = tmp_path / "facts.yaml"
    data = {"memory": {"total": "16 GiB"}, "kernel": "6.1.0", "services": services}
    path.write_text(yaml.safe_dump(data))
    return path


def test_redis_tcp_backlog_last_one_wins(tmp_path: Path) -> None:
    conf = tmp_path / "redis.conf"
    conf.write_text("# tcp-backlog 9\nbind 0.0.0.0\ntcp-backlog 1024\nTCP-BACKLOG 2048\n")
    assert read_redis(conf).values == {"listen_backlog": 2048}
    facts = _load(_facts(tmp_path, {"redis": {"config": "redis.conf", "listen_backlog": 511}}))
    assert facts.services["redis"].listen_backlog == 2048  # the config the server reads wins
    assert facts.services["redis"].config_error is None


def test_postgresql_settings_and_units(tmp_path: Path) -> None:
    conf = tmp_path / "postgresql.conf"
    conf.write_text(
        "max_connections = 100\n"
        "max_connections=300   # raised\n"
        "shared_buffers = '8GB'\n"
        "#shared_buffers = 1TB\n"
        "include_dir = 'conf.d'\n"
    )
    settings = read_postgresql(conf)
    assert settings.values == {"max_connections": 300, "shared_buffers": 8 * 2**30}
    assert settings.error is not None and "include_dir not followed" in settings.error
    conf.write_text("shared_buffers 16384\n")  # no unit: 8 kB blocks, `=` optional
    assert read_postgresql(conf).values == {"shared_buffers": 16384 * 8192}


def test_the_profile_takes_the_configs_figures(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "postgresql.conf").write_text("max_connections = 300\nshared_buffers = 8GB\n")
    facts = _facts(tmp_path, {"postgresql": {"config": "postgresql.conf"}})
    result = cli("recommend", "--facts", str(facts), "-p", "postgresql", "--set", "huge_pages=true")
    assert result.exit_code == 0, result.output
    assert "listen_backlog=600" in result.stdout and "max_connections=300" in result.stdout
    assert "shared_buffers=8589934592" in result.stdout
    # shared_buffers alone is short of the segment, and these facts name no architecture
    # (no huge page size): no pool
    assert "vm.nr_hugepages =" not in result.stdout
    assert "postgresql.huge-page-size-unknown" in result.stdout


@pytest.mark.parametrize(
    "payload",
    [
        "tcp-backlog 99999999999999999999999\n",  # past INT_MAX
        "tcp-backlog -1\n",
        "tcp-backlog 0\n",
        "tcp-backlog ١٢٣\n",  # digits of another script
        "tcp-backlog 12 34\n",
    ],
)
def test_redis_numbers_are_bounded(tmp_path: Path, payload: str) -> None:
    conf = tmp_path / "redis.conf"
    conf.write_text("tcp-backlog 1024\n" + payload)
    settings = read_redis(conf)
    assert "listen_backlog" not in settings.values  # the server would refuse: no figure
    assert settings.error is not None and "tcp-backlog not a number" in settings.error


@pytest.mark.parametrize(
    "payload",
    [
        "max_connections = 262144\n",  # past MAX_BACKENDS
        "max_connections = 1e9\n",
        "shared_buffers = '99999999TB'\n",
        "shared_buffers = 1kB\n",  # below 128 kB
        "shared_buffers = '8 gb'\n",  # units are case-sensitive
    ],
)
def test_postgresql_numbers_are_bounded(tmp_path: Path, payload: str) -> None:
    conf = tmp_path / "postgresql.conf"
    conf.write_text(payload)
    settings = read_postgresql(conf)
    assert settings.values == {}
    assert settings.error is not None


def test_a_config_outside_the_facts_directory_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "redis.conf").write_text(f"tcp-backlog 4096\n# {SECRET}\n")
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "link.conf").symlink_to(outside / "redis.conf")
    for config in (str(outside / "redis.conf"), "../outside/redis.conf", "link.conf"):
        facts = _load(_facts(inner, {"redis": {"config": config}}))
        service = facts.services["redis"]
        assert service.listen_backlog is None, config
        assert service.config_error is not None and "not read" in service.config_error
        assert SECRET not in service.config_error


def test_special_files_and_oversized_files_are_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.conf"
    os.mkfifo(fifo)  # opening it for reading would block: it must never be opened
    facts = _load(_facts(tmp_path, {"redis": {"config": "fifo.conf"}}))
    assert "not a regular file" in (facts.services["redis"].config_error or "")
    (tmp_path / "dir.conf").mkdir()
    facts = _load(_facts(tmp_path, {"postgresql": {"config": "dir.conf"}}))
    assert "directory" in (facts.services["postgresql"].config_error or "")
    big = tmp_path / "big.conf"
    big.write_bytes(b"#" * MAX_CONFIG_BYTES + b"\ntcp-backlog 4096\n")
    facts = _load(_facts(tmp_path, {"redis": {"config": "big.conf"}}))
    assert facts.services["redis"].listen_backlog is None
    assert "larger than" in (facts.services["redis"].config_error or "")


def test_config_text_reaches_the_facts_as_one_escaped_line(tmp_path: Path) -> None:
    conf = tmp_path / "redis.conf"
    # a control character, an escape sequence and a line separator in what is quoted back
    conf.write_bytes(b"include /etc/\x1b[31mred\x07\xe2\x80\xa8x.conf\n" + b"include y\n" * 50)
    facts = _load(_facts(tmp_path, {"redis": {"config": "redis.conf"}}))
    error = facts.services["redis"].config_error or ""
    assert "include not followed" in error and "(and 48 more)" in error
    assert "\x1b" not in error and "\x07" not in error and "\u2028" not in error
    assert "\n" not in error


def test_invalid_utf8_does_not_stop_the_run(tmp_path: Path) -> None:
    conf = tmp_path / "postgresql.conf"
    conf.write_bytes(b"\xff\xfe max_connections = 50\nmax_connections = 40\n")
    assert read_postgresql(conf).values == {"max_connections": 40}


@pytest.mark.parametrize(
    ("service", "field"),
    [
        ({"max_connections": 262144}, "max_connections"),
        ({"max_connections": 0}, "max_connections"),
        ({"shared_buffers": "64 KiB"}, "shared_buffers"),
        ({"shared_buffers": "32 TiB"}, "shared_buffers"),
        ({"listen_backlog": 2**31}, "listen_backlog"),
    ],
)
def test_a_facts_file_with_a_figure_out_of_bounds_is_refused(
    cli: Cli, tmp_path: Path, service: dict[str, object], field: str
) -> None:
    facts = _facts(tmp_path, {"postgresql": service})
    result = cli("recommend", "--facts", str(facts), "-p", "postgresql")
    assert result.exit_code == 2, result.output
    assert field in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output


REFUSAL = ": outside the facts file's directory; not read"
FS_CALLS = ("open", "stat", "lstat", "readlink", "scandir", "listdir", "access")


def _outside_names(tmp_path: Path) -> tuple[Path, list[str]]:
    """Names a hostile facts file gives for a service's config, each outside its directory:
    an existing file, a missing one, a directory, absolute or climbing up with `..`."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.conf").write_text(f"tcp-backlog 4096\n# {SECRET}\n")
    (outside / "a-directory").mkdir()
    names = ["/etc/shadow", "/", ".", "..", "sub/../..", "../facts/../outside/secret.conf"]
    for target in ("secret.conf", "missing.conf", "a-directory"):
        names += [str(outside / target), f"../outside/{target}", f"sub/../../outside/{target}"]
    return outside, names


@pytest.mark.parametrize("service", ["redis", "valkey", "postgresql", "nginx"])
def test_a_config_named_outside_the_facts_directory_is_refused_unlooked_at(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, service: str
) -> None:
    """An absolute name, or one whose `..` leaves the facts file's directory, is refused on
    its text: nothing there is opened or looked at, and the refusal is the same words whether
    the file exists, is missing or is a directory (no oracle for the facts file's author)."""
    outside, names = _outside_names(tmp_path)
    facts_dir = tmp_path / "facts"
    facts_dir.mkdir()
    touched: list[str] = []
    for call in FS_CALLS:
        real = getattr(os, call)

        def spy(path: object = ".", *args: object, _real: object = real, **kw: object) -> object:
            shown = os.fsdecode(path) if isinstance(path, str | bytes | os.PathLike) else ""
            if shown.startswith((str(outside), "/etc/shadow")) or shown in ("/", str(tmp_path)):
                touched.append(shown)
            return _real(path, *args, **kw)  # type: ignore[operator]

        monkeypatch.setattr(os, call, spy)
    for name in names:
        facts = _facts(facts_dir, {service: {"config": name}})
        loaded = facts_from_text(facts, facts.read_text())
        error = with_service_configs(loaded, facts.parent).services[service].config_error
        assert touched == [], name
        assert error == f"{name}{REFUSAL}", (name, error)


@pytest.mark.parametrize("service", ["redis", "postgresql", "nginx"])
def test_a_link_out_of_the_facts_directory_gets_the_same_refusal(
    tmp_path: Path, service: str
) -> None:
    """A name beneath the directory that a link there leads outside of: refused with the same
    words, whatever lies outside (a file, nothing, a directory)."""
    outside, _ = _outside_names(tmp_path)
    facts_dir = tmp_path / "facts"
    facts_dir.mkdir()
    (facts_dir / "out").symlink_to(outside)
    for target in ("secret.conf", "missing.conf", "a-directory"):
        (facts_dir / f"{target}.link").symlink_to(outside / target)
        for name in (f"{target}.link", f"out/{target}"):
            facts = _load(_facts(facts_dir, {service: {"config": name}}))
            error = facts.services[service].config_error
            assert error == f"{name}{REFUSAL}", (name, error)
            assert SECRET not in str(facts)


def test_a_name_that_stays_beneath_the_directory_is_read(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "redis.conf").write_text("tcp-backlog 1024\n")
    for name in ("conf/redis.conf", "./conf//redis.conf", "other/../conf/redis.conf"):
        facts = _load(_facts(tmp_path, {"redis": {"config": name}}))
        assert facts.services["redis"].listen_backlog == 1024, name
        assert facts.services["redis"].config_error is None
