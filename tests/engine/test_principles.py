"""The three principles of the advice, as properties over arbitrary hosts.

1. No move in the wrong direction without evidence: an element of a value in force only rises
   when a rule wants at least the new value, and only falls when a safety cap (or the kernel's
   ordering and bounds) says so. Elements no rule is about, and ranges, therefore stay.
2. Model error never creates drift: values in force within the catalog's tolerance of the
   modelled default produce no setting the default itself would not.
3. `base` sets nothing without evidence or a hard kernel fact.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sysctl_advisor.engine.diff import build_diff
from sysctl_advisor.engine.plan_builder import build_plan, host_defaults
from sysctl_advisor.knowledge.catalog import parse_ports
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.knowledge.values import parse_current
from sysctl_advisor.model.current_config import from_values
from sysctl_advisor.model.host_facts import facts_from_data
from tests.conftest import ROOT
from tests.test_properties import PROFILE_PARAMS, hosts, profile_and_params

SETTINGS = settings(
    # HYPOTHESIS_EXAMPLES=2000 for a deeper search than the suite's default
    max_examples=int(os.environ.get("HYPOTHESIS_EXAMPLES", "80")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
ADJUSTED = ("so the values stay in order", "Clamped to the kernel's accepted range")


def _in_force(data: st.DataObject, kb: KnowledgeBase) -> dict[str, str]:
    """Arbitrary values in force for a random subset of the catalog's keys."""
    values: dict[str, str] = {}
    for name, spec in kb.catalog.keys.items():
        if not data.draw(st.booleans(), label=f"has {name}"):
            continue
        if spec.is_text:
            values[name] = data.draw(text_values(spec), label=name)
            continue
        high = min(spec.max, 2**40)
        numbers = data.draw(
            st.lists(st.integers(spec.min, high), min_size=spec.length, max_size=spec.length),
            label=name,
        )
        if spec.ordered:
            numbers.sort()
        values[name] = " ".join(str(n) for n in numbers)
    return values


def text_values(spec: Any) -> st.SearchStrategy[str]:
    """Values a text key may hold: kernel names, or port sets in any order."""
    if spec.unit == "name":
        return st.sampled_from(["pfifo_fast", "fq", "fq_codel", "cubic", "bbr", "reno", "htcp"])
    ranges = st.tuples(st.integers(spec.min, spec.max), st.integers(0, 50)).map(
        lambda r: f"{r[0]}" if r[1] == 0 else f"{r[0]}-{min(r[0] + r[1], spec.max)}"
    )
    return st.lists(ranges, max_size=5).map(",".join)


def _plan(kb: KnowledgeBase, host: dict[str, Any], pp: tuple[str, dict[str, Any]]) -> Any:
    profile, params = pp
    facts = facts_from_data(host)
    return facts, build_plan(kb, facts, profile, {k: str(v) for k, v in params.items()})


def test_a_cap_judges_the_kernels_own_value_by_the_model(kb: KnowledgeBase) -> None:
    """Hypothesis found it: a cap (buffer_bytes 16063) 2% under the modelled tcp_wmem[1]
    (16384) leaves the model's figure alone, so the kernel's own value 1.6% above the model
    (16640) must be left alone too: judged against the cap, it would be 3.6% above."""
    host = {"memory": {"total": 268435456}, "kernel": "2.6.32-642.el6.i686"}
    pp = ("c1m-server", {"buffer_bytes": 16063})
    _, reference = _plan(kb, host, pp)
    assert "net.ipv4.tcp_wmem" not in {s.key for s in reference.settings}
    in_force = {"net.ipv4.tcp_wmem": "4160 16640 1064960"}  # the model's 4096 16384 1048576
    _, plan = _plan(kb, {**host, "sysctl": in_force}, pp)
    assert "net.ipv4.tcp_wmem" not in {s.key for s in plan.settings}
    beyond = {"net.ipv4.tcp_wmem": "4096 17000 1048576"}  # 3.8% above the model: not its own
    _, capped = _plan(kb, {**host, "sysctl": beyond}, pp)
    assert next(s for s in capped.settings if s.key == "net.ipv4.tcp_wmem").values[1] == 16063


@SETTINGS
@given(host=hosts, pp=profile_and_params, data=st.data())
def test_values_in_force_move_only_with_a_reason(
    kb: KnowledgeBase, host: dict[str, Any], pp: tuple[str, dict[str, Any]], data: st.DataObject
) -> None:
    host = {**host, "sysctl": _in_force(data, kb)}
    facts, plan = _plan(kb, host, pp)
    for s in plan.settings:
        spec = kb.catalog.keys[s.key]
        text = facts.sysctl.get(s.key)
        held = parse_current(text, spec) if text is not None else None
        if held is None:
            continue
        if spec.is_text:  # a port set only grows; a name changes only where a rule wants it
            if spec.merge == "union":
                assert _covers(str(held), s.value), (s.key, held, s.value)
            continue
        held_list = held if isinstance(held, list) else [held]
        assert s.wanted is not None
        for i, policy in enumerate(spec.policies()):
            if policy == "choice":
                continue
            up = 1 if policy == "max" else -1
            moved = (s.values[i] - held_list[i]) * up
            if moved > 0:  # raised (for a `min` element: lowered): a want asked for it, or
                # the capacity's floor did (the least the host works with: the plan never
                # writes less, whatever was in force)
                floor = spec.floor.value if spec.floor is not None else None
                assert (s.wanted[i] - s.values[i]) * up >= 0 or s.values[i] == floor, (
                    s.key,
                    i,
                    s.rationale,
                )
            elif moved < 0:  # a capacity lowered (a safety setting raised): a cap said so
                assert s.capped_by or any(a in s.rationale for a in ADJUSTED), (
                    s.key,
                    i,
                    held_list,
                    s.values,
                    s.rationale,
                )


def _covers(held: str, final: str) -> bool:
    """Every port of `held` is in `final`."""
    kept = parse_ports(final)
    return all(any(a <= lo and hi <= b for a, b in kept) for lo, hi in parse_ports(held))


@SETTINGS
@given(host=hosts, pp=profile_and_params, data=st.data())
def test_model_error_is_not_drift(
    kb: KnowledgeBase, host: dict[str, Any], pp: tuple[str, dict[str, Any]], data: st.DataObject
) -> None:
    _assert_model_error_is_not_drift(
        kb, host, pp, lambda tolerance: data.draw(st.floats(-tolerance, tolerance))
    )


# Hypothesis found these: a want capped at a limit equal to the modelled default moved the
# kernel's own value 2% from it (2.6.32 on i686, 192 MiB of lowmem: tcp_wmem/tcp_rmem max
# 589824 = tcp_mem[1] x 32 bytes, and lowmem.buffer-budget's share of 24 MiB over 40 sockets,
# 576 KiB), and a want within the tolerance above the modelled default (6.18, 3.69 GiB:
# tcp_rmem max 30828160 = nr_free_buffer_pages/128 x 4 KiB, tcp-buffers.bdp's 30 MiB)
# raised a kernel's own value just below the model's figure.
MODEL_ERROR_HOSTS = {
    "i686-2.6.32-lowmem-192MiB": {
        "memory": {"total": 640 * 2**20, "lowmem": 192 * 2**20},
        "arch": "i686",
        "kernel": "2.6.32-642.el6.i686",
    },
    "x86_64-6.18-3.69GiB": {"memory": {"total": 3965837312}, "kernel": "6.18.44"},
}


@pytest.mark.parametrize("share", [-1.0, -0.5, 0.5, 1.0])
@pytest.mark.parametrize("host", list(MODEL_ERROR_HOSTS.values()), ids=list(MODEL_ERROR_HOSTS))
def test_model_error_is_not_drift_where_hypothesis_found_it(
    kb: KnowledgeBase, host: dict[str, Any], share: float
) -> None:
    _assert_model_error_is_not_drift(kb, host, ("gridftp", {}), lambda tolerance: share * tolerance)


def test_an_element_left_as_modelled_keeps_the_kernels_own_value(kb: KnowledgeBase) -> None:
    """tcp_wmem is planned for its start (tcp-buffers.small-defaults, a c1m-server beside the
    DTN: 4 KiB), and its max is the kernel's own, 1.5% under the model's 3097376 (6.6, 380 MiB:
    nr_free_buffer_pages/128 x 4 KiB). tcp-buffers.bdp's 3 MiB lies within the tolerance above
    the model's figure, which the plan would leave as it is: the max in force stays too."""
    host = {"memory": {"total": 380 * 2**20}, "kernel": "6.6.30"}
    facts = facts_from_data(host)
    profiles, params = ["gridftp", "c1m-server"], {"rtt_ms": "118", "bandwidth_mbps": "100"}
    reference = build_plan(kb, facts, profiles, params)
    planned = {s.key: s.values for s in reference.settings}
    assert planned["net.ipv4.tcp_wmem"] == [4096, 4096, 3097376]
    in_force = {"net.ipv4.tcp_wmem": "4096 16384 3050915"}
    plan = build_plan(kb, facts_from_data({**host, "sysctl": in_force}), profiles, params)
    wmem = next(s for s in plan.settings if s.key == "net.ipv4.tcp_wmem")
    assert wmem.values == [4096, 4096, 3050915]


def _assert_model_error_is_not_drift(
    kb: KnowledgeBase,
    host: dict[str, Any],
    pp: tuple[str, dict[str, Any]],
    share_of: Callable[[float], float],
) -> None:
    """The values in force are the modelled defaults, each key's moved by `share_of(its
    tolerance)` of it: the plan sets no key, and `diff` changes none, that it would not
    against the modelled defaults."""
    # Model error alone: no observed peaks either. Evidence is judged against the value in
    # force, and rightly so: a tcp_mem peak of 1,287 pages is 84% of the modelled max (1,524)
    # but 90% of a max 6% lower that the kernel really holds, and only the latter is close
    # enough to the limit to ask for more (hypothesis found this host).
    host = {k: v for k, v in host.items() if k not in ("sysctl", "observed")}
    facts, reference = _plan(kb, host, pp)
    in_force: dict[str, str] = {}
    for name, text in host_defaults(kb, facts).items():
        if text is None:
            continue
        spec = kb.catalog.keys[name]
        if spec.module:
            continue  # its presence is a fact (the module is loaded), not model error
        if spec.is_text:  # names and port sets have no tolerance: the model's text itself
            in_force[name] = text
            continue
        numbers = [int(n) for n in text.split()]
        if spec.default_tolerance:
            share = share_of(spec.default_tolerance)
            # |change| <= tolerance x model, rounded toward the model
            numbers = [
                min(max(n + (1 if share > 0 else -1) * int(n * abs(share)), spec.min), spec.max)
                for n in numbers
            ]
            # the change is monotone, so an ordered default stays ordered; one the kernel
            # itself holds out of order stays so (tcp_wmem before 4.10 on 64 KiB pages:
            # [0] = PAGE_SIZE above [1] = 16 KiB, tcp_init())
        in_force[name] = " ".join(str(n) for n in numbers)
    _, plan = _plan(kb, {**host, "sysctl": in_force}, pp)
    expected = {s.key for s in reference.settings}
    assert {s.key for s in plan.settings} <= expected, plan.notes
    version = kb.catalog.kernel_for(facts)[0]
    current = from_values(in_force, "facts", "test", "facts")
    report = build_diff(plan, current, kb.catalog, version)
    assert {e.key for e in report.entries if e.status == "change"} <= expected


@SETTINGS
@given(host=hosts)
def test_base_acts_only_on_evidence_or_hard_facts(kb: KnowledgeBase, host: dict[str, Any]) -> None:
    host = {k: v for k, v in host.items() if k not in ("sysctl", "observed", "services")}
    _, plan = _plan(kb, host, ("base", {}))
    for s in plan.settings:
        # A cap is a hard fact about the host (RAM, lowmem, the 16-bit backlog); syncookies on
        # is the kernel's own default from 2.6.33 on.
        assert s.capped_by or s.key == "net.ipv4.tcp_syncookies", (s.key, s.rationale)


def test_profiles_covered() -> None:
    assert set(PROFILE_PARAMS) == {"base", "frontend-proxy", "gridftp", "c1m-server"}


MODEL = yaml.safe_load((ROOT / "rules" / "catalog" / "kernel-model.yaml").read_text())
HEADROOM = MODEL["quantities"]["evidence_headroom"]["eras"][0]["value"]

# Counters and peaks as a host reports them: drops with and without the packets processed and
# a monitoring window, and TCP memory peaks up to all of RAM.
observed_evidence = st.fixed_dictionaries(
    {},
    optional={
        "softnet_dropped": st.integers(1, 10**7),
        "softnet": st.lists(
            st.fixed_dictionaries(
                {
                    "cpu": st.integers(0, 63),
                    "processed": st.integers(0, 10**9),
                    "dropped": st.integers(0, 10**6),
                    "time_squeeze": st.integers(0, 10**5),
                }
            ),
            max_size=4,
            unique_by=lambda c: c["cpu"],
        ),
        "period": st.sampled_from(
            [
                {"kind": "snapshot", "source": "/proc", "at": "2026-11-27T00:00:00Z"},
                {
                    "kind": "history",
                    "source": "http://prometheus:9090",
                    "at": "2026-11-27T00:00:00Z",
                    "window_seconds": 86400,
                },
            ]
        ),
        "tcp_mem_pages_peak": st.integers(0, 2**29),
        "orphans_peak": st.integers(0, 10**6),
        "time_wait_peak": st.integers(0, 10**6),
        "connections_peak": st.integers(0, 10**7),
        "listen_overflows": st.integers(0, 10**6),
        "rx_overruns": st.integers(0, 10**6),
    },
)


@SETTINGS
@given(host=hosts, pp=profile_and_params, observed=observed_evidence, data=st.data())
def test_no_cap_goes_below_observed_use_with_headroom(
    kb: KnowledgeBase,
    host: dict[str, Any],
    pp: tuple[str, dict[str, Any]],
    observed: dict[str, Any],
    data: st.DataObject,
) -> None:
    """A cap (half of RAM, the 32-bit lowmem share) never takes tcp_mem max
    below the TCP memory the host was seen using with headroom, unless the value in force was
    already lower (a cap never raises). tcp_mem is the one key a cap holds that an observed
    peak measures: the other caps (the 16-bit backlog, per-socket buffer shares) bound a
    single socket, which no observed figure reports."""
    host = {**host, "sysctl": _in_force(data, kb), "observed": observed}
    facts, plan = _plan(kb, host, pp)
    peak = observed.get("tcp_mem_pages_peak")
    settings = {s.key: s for s in plan.settings}
    if not peak or "net.ipv4.tcp_mem" not in settings:
        return
    headroom = HEADROOM
    spec = kb.catalog.keys["net.ipv4.tcp_mem"]
    text = facts.sysctl.get("net.ipv4.tcp_mem")
    held = parse_current(text, spec) if text is not None else None
    if not isinstance(held, list):
        held = [int(n) for n in (host_defaults(kb, facts)["net.ipv4.tcp_mem"] or "0 0 0").split()]
    needed = math.ceil(peak * headroom)
    got = settings["net.ipv4.tcp_mem"].values[2]
    # a max beyond all of RAM (lowmem on 32-bit) is no use, whatever the peak
    memory = (facts.lowmem if facts.bits == 32 else facts.memory.total) // facts.page_size
    assert got >= min(held[2], needed, memory, spec.max), (held, peak, got, plan.findings)


@SETTINGS
@given(host=hosts, pp=profile_and_params, observed=observed_evidence, data=st.data())
def test_the_advice_applied_asks_for_nothing_more(
    kb: KnowledgeBase,
    host: dict[str, Any],
    pp: tuple[str, dict[str, Any]],
    observed: dict[str, Any],
    data: st.DataObject,
) -> None:
    """The fixed point: facts whose values in force are the plan's own values, with
    the same counters, give the same plan, and `diff` finds nothing to change. Evidence from
    cumulative counters is never applied again to a value already raised for it."""
    host = {**host, "sysctl": _in_force(data, kb), "observed": observed}
    _, first = _plan(kb, host, pp)
    applied = {**host["sysctl"], **{s.key: s.value for s in first.settings}}
    again_facts, again = _plan(kb, {**host, "sysctl": applied}, pp)
    before = {s.key: s.value for s in first.settings}
    after = {s.key: s.value for s in again.settings}
    # a key the plan restated may drop out once in force (nothing left to say); none moves
    moved = {k: (before.get(k), v) for k, v in after.items() if before.get(k, v) != v}
    assert not moved, moved
    version = kb.catalog.kernel_for(again_facts)[0]
    current = from_values(applied, "facts", "test", "facts")
    report = build_diff(again, current, kb.catalog, version)
    assert not [e.key for e in report.entries if e.status in ("change", "missing")]
