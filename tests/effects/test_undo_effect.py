"""The undo file puts back exactly what was there: inside a fresh network namespace, a host's
own tuning is applied (the values in force the facts record), then the plan's file, then the
undo file (`sysctl -p`, as an operator undoes), and every per-namespace key reads back exactly
as the kernel printed it before the plan. The host's own settings do not change."""

from __future__ import annotations

import dataclasses
import platform
import shutil
from pathlib import Path

import pytest

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.engine.undo import undo_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.sysctl_conf import parse_conf_lines
from sysctl_advisor.outputs.plan_render import Renderer
from tests.conftest import EXAMPLES, load_facts
from tests.namespaces import host_sysctls, in_namespace, needs_netns

pytestmark = [
    needs_netns,
    pytest.mark.skipif(shutil.which("sysctl") is None, reason="needs procps sysctl"),
]
# The host's own tuning before the plan: values neither the plan's nor a new namespace's
# (a vector among them). ip_local_reserved_ports is left out of the facts: the undo restores
# its kernel default (none reserved), which a new namespace starts from.
OWN = {
    "net.core.somaxconn": "1000",
    "net.ipv4.tcp_max_syn_backlog": "3000",
    "net.ipv4.ip_local_port_range": "20000 50000",
    "net.ipv4.tcp_tw_reuse": "0",
}
READ = 'for key; do printf "%s=%s\\n" "$key" "$(sysctl -n "$key")"; done\n'
APPLY = (
    'own=$1 plan=$2 undo=$3\nshift 3\nsysctl -q -p "$own"\n'
    + READ.replace('"%s=', '"before %s=')
    + 'sysctl -q -p "$plan"\n'
    + READ.replace('"%s=', '"planned %s=')
    + 'sysctl -q -p "$undo"\n'
    + READ.replace('"%s=', '"after %s=')
)


def _read(lines: str, stage: str) -> dict[str, str]:
    prefix = f"{stage} "
    return dict(
        line.removeprefix(prefix).split("=", 1)
        for line in lines.splitlines()
        if line.startswith(prefix)
    )


def _per_netns(kb: KnowledgeBase, conf: str, version: object) -> dict[str, str]:
    assignments, _, bad = parse_conf_lines(conf)
    assert not bad
    return {
        a.key: a.value
        for a in assignments
        if a.key.startswith("net.") and kb.catalog.is_per_netns(a.key, version)  # type: ignore[arg-type]
    }


def test_the_undo_file_restores_exactly_the_values_in_force(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    own = tmp_path / "own.conf"
    own.write_text("".join(f"{k} = {v}\n" for k, v in OWN.items()))
    # what the kernel holds once the host's own file is applied: the facts' values in force
    first = in_namespace('sysctl -q -p "$1"\nshift\n' + READ, str(own), *OWN)
    assert first.returncode == 0, first.stderr
    in_force = dict(line.split("=", 1) for line in first.stdout.splitlines())
    facts = load_facts(EXAMPLES / "haproxy-frontend-rhel7.yaml")
    facts = dataclasses.replace(facts, kernel=platform.release(), sysctl=in_force)
    version = kb.catalog.kernel_for(facts)[0]
    plan = build_plan(kb, facts, "frontend-proxy")
    renderer = Renderer(kb.catalog)
    planned = _per_netns(kb, renderer.render(plan, "conf", "test"), version)
    undo = undo_plan(plan, kb.catalog)
    restored = _per_netns(kb, renderer.render(undo, "conf", "test --undo", undo=True), version)
    assert len(restored) >= 3 and set(restored) <= set(planned), (planned, restored)
    assert "net.ipv4.ip_local_reserved_ports" in restored  # back to the default: none
    paths = []
    for name, settings in (("plan", planned), ("undo", restored)):
        path = tmp_path / f"{name}.conf"
        path.write_text("".join(f"{k} = {v}\n" for k, v in settings.items()))
        paths.append(str(path))

    host_before = host_sysctls()
    result = in_namespace(APPLY, str(own), *paths, *planned)
    host_after = host_sysctls()

    assert result.returncode == 0, result.stderr
    before, during, after = (_read(result.stdout, s) for s in ("before", "planned", "after"))
    for key, value in planned.items():
        assert during[key].split() == value.split(), (key, value, during[key])
    assert after == before  # byte for byte, as the kernel prints them
    assert {k: after[k] for k in OWN} == in_force
    print(
        f"undo: {len(restored)} per-namespace keys back as they were after "
        f"{len(planned)} planned ({', '.join(sorted(restored))})"
    )
    changed = sorted(
        k for k in host_before.keys() | host_after.keys() if host_before.get(k) != host_after.get(k)
    )
    assert not changed, f"the host changed: {changed}"
