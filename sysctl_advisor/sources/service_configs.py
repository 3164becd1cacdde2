"""Fill in what services' own configuration files say, before the engine runs.

The engine is a pure function of facts; reading nginx.conf is I/O, so it happens here, once,
when the facts are loaded. A config that cannot be read does not stop the run: the service
keeps whatever else the facts say and `config_error` tells the rules (and the operator) why.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from sysctl_advisor.model.host_facts import HostFacts, Service
from sysctl_advisor.model.model_base import plain_data, validate


def with_service_configs(
    facts: HostFacts, base: Path | None = None, nginx_conf: Path | None = None
) -> HostFacts:
    """`facts` with each service's `config` parsed. A relative `config` is read relative to
    `base` (the facts file's directory); `nginx_conf` replaces nginx's `config`.

    A facts file comes from the host it describes and may be hostile: the configuration it
    names (and everything that includes) is read only inside the facts file's directory,
    never elsewhere on the machine running the advisor. `--nginx-conf` is the operator's own
    choice and may point anywhere."""
    services = dict(facts.services)
    if nginx_conf is not None:  # the operator's file, read as on this machine: no root a
        # (hostile) facts file names re-roots its absolute includes
        current = services.get("nginx", Service())
        services["nginx"] = replace(current, config=str(nginx_conf), config_root=None)
    nginx = services.get("nginx")
    if nginx is None or nginx.config is None:
        return facts if nginx_conf is None else replace(facts, services=services)

    from sysctl_advisor.sources.nginx_conf import (
        read_nginx,  # crossplane is imported only when needed
    )

    path = Path(nginx.config)
    if not path.is_absolute() and base is not None and nginx_conf is None:
        path = base / path
    root = Path(nginx.config_root) if nginx.config_root else None
    if root is not None and not root.is_absolute() and base is not None:
        root = base / root
    confine = base if base is not None and nginx_conf is None else None
    parsed = read_nginx(path, root, confine)
    # Validated like the facts themselves: the error text quotes the (hostile) config.
    parsed_data = {"listens": plain_data(parsed.listens), "config_error": parsed.error}
    services["nginx"] = validate(Service, plain_data(nginx) | parsed_data)
    return replace(facts, services=services)
