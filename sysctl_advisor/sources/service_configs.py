"""Fill in what services' own configuration files say, before the engine runs.

The engine is a pure function of facts; reading nginx.conf (or redis.conf, postgresql.conf:
`app_configs.py`) is I/O, so it happens here, once,
when the facts are loaded. A config that cannot be read does not stop the run: the service
keeps whatever else the facts say and `config_error` tells the rules (and the operator) why.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from sysctl_advisor.model.host_facts import HostFacts, Service
from sysctl_advisor.model.model_base import plain_data, validate
from sysctl_advisor.model.text_escape import as_fact
from sysctl_advisor.sources.app_configs import AppSettings, read_postgresql, read_redis
from sysctl_advisor.sources.tree_paths import OUTSIDE_FACTS_DIRECTORY, named_beneath


def with_service_configs(
    facts: HostFacts,
    base: Path | None = None,
    nginx_conf: Path | None = None,
    *,
    tree: Path | None = None,
    read_at: str | None = None,
) -> HostFacts:
    """`facts` with each service's `config` parsed. A relative `config` is read relative to
    `base` (the facts file's directory); `nginx_conf` replaces nginx's `config`.

    A facts file comes from the host it describes and may be hostile: the configuration it
    names (and everything that includes) is read only inside the facts file's directory,
    never elsewhere on the machine running the advisor. `--nginx-conf` is the operator's own
    choice and may point anywhere. `tree` is the copied tree `facts --root` read: the configs
    found in it (absolute names) are read only inside it.

    A service whose facts say when its config was read (`config_read_at`, written by `facts`)
    keeps what was read then and is not read again: the facts are complete away from the
    host, and the same file gives the same plan wherever it is (`--nginx-conf` is still read).
    With `read_at` (`facts` itself), each service whose config is read here records it."""
    services = dict(facts.services)
    if nginx_conf is not None:  # the operator's file, read as on this machine: no root a
        # (hostile) facts file names re-roots its absolute includes
        current = services.get("nginx", Service())
        services["nginx"] = replace(
            current, config=str(nginx_conf), config_root=None, config_read_at=None
        )
    changed = nginx_conf is not None
    confine = base if base is not None else tree
    for name, service in facts.services.items():
        reader = APP_READERS.get(name)
        if reader is None or service.config is None or service.config_read_at is not None:
            continue
        services[name] = _with_app_settings(service, reader, base, confine, read_at)
        changed = True
    nginx = services.get("nginx")
    if nginx is None or nginx.config is None or nginx.config_read_at is not None:
        return replace(facts, services=services) if changed else facts
    if nginx_conf is not None:
        services["nginx"] = _with_nginx_listens(nginx, None, None, None)
    else:
        services["nginx"] = _with_nginx_listens(nginx, base, confine, read_at)
    return replace(facts, services=services)


def _named(name: str, base: Path | None) -> Path | str:
    """The file a service's `config` (or `config_root`) names: with `base` (a facts file's
    directory), only a file beneath it (tree_paths.named_beneath), else the refusal, one
    line; without (this host's own collector, or the operator's --nginx-conf), as given."""
    if base is None:
        return Path(name)
    named = named_beneath(base, name)
    return named if named is not None else as_fact(f"{name}: {OUTSIDE_FACTS_DIRECTORY}")


def _with_app_settings(
    service: Service,
    reader: Callable[[Path, Path | None], AppSettings],
    base: Path | None,
    confine: Path | None,
    read_at: str | None,
) -> Service:
    """The service with what its config sets over what the facts say (the config is what the
    server reads), and why the rest could not be read."""
    assert service.config is not None
    path = _named(service.config, base)
    settings = AppSettings(problems=[path]) if isinstance(path, str) else reader(path, confine)
    data = plain_data(service) | settings.values | {"config_error": settings.error}
    return validate(Service, data | {"config_read_at": read_at})


def _with_nginx_listens(
    nginx: Service, base: Path | None, confine: Path | None, read_at: str | None
) -> Service:
    """nginx with the listen directives of its config (read only beneath `base`, when
    given, and only inside `confine`, includes too) and why the rest could not be read."""
    from sysctl_advisor.sources.nginx_conf import (
        NginxListens,
        read_nginx,  # crossplane is imported only when needed
    )

    assert nginx.config is not None
    path = _named(nginx.config, base)
    root = _named(nginx.config_root, base) if nginx.config_root else None
    if isinstance(path, str) or isinstance(root, str):
        refusal = path if isinstance(path, str) else str(root)
        parsed = NginxListens([], refusal)
    else:
        parsed = read_nginx(path, root, confine)
    # Validated like the facts themselves: the error text quotes the (hostile) config.
    parsed_data = {
        "listens": plain_data(parsed.listens),
        "config_error": parsed.error,
        "config_read_at": read_at,
    }
    return validate(Service, plain_data(nginx) | parsed_data)


# services whose own config the application profiles read, by the facts' service name
APP_READERS: dict[str, Callable[[Path, Path | None], AppSettings]] = {
    "redis": read_redis,
    "valkey": read_redis,
    "postgresql": read_postgresql,
}
