"""`recommend --format tuned`, loaded by tuned's own profile loader.

tuned is not on PyPI. `.ci/run` extracts Debian's package (without installing it, so no daemon
can start) and points SYSCTL_ADVISOR_TUNED_PYTHONPATH at its Python modules; a host with tuned
installed is found at /usr/lib/python3/dist-packages. Elsewhere these tests skip.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.outputs.plan_render import Renderer
from tests.conftest import EXAMPLE_PROFILES, EXAMPLES, load_facts
from tests.namespaces import in_namespace, needs_netns


def _tuned_root() -> Path | None:
    for candidate in (
        os.environ.get("SYSCTL_ADVISOR_TUNED_PYTHONPATH"),
        "/usr/lib/python3/dist-packages",
    ):
        if candidate and (Path(candidate) / "tuned" / "profiles" / "loader.py").exists():
            return Path(candidate)
    return None


TUNED = _tuned_root()
pytestmark = [
    pytest.mark.skipif(
        TUNED is None,
        reason="tuned's Python modules not found (set SYSCTL_ADVISOR_TUNED_PYTHONPATH)",
    ),
    # tuned 2.20's own sources have invalid escapes; not ours to fix
    pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:The .warn. method is deprecated:DeprecationWarning"),
]


@pytest.fixture(scope="module")
def tuned_loader() -> Any:
    assert TUNED is not None
    sys.path.insert(0, str(TUNED))
    try:
        from tuned.profiles.factory import Factory
        from tuned.profiles.loader import Loader
        from tuned.profiles.locator import Locator
        from tuned.profiles.merger import Merger
        from tuned.profiles.variables import Variables
        from tuned.utils.commands import commands
        from tuned.utils.global_config import GlobalConfig
    finally:
        sys.path.remove(str(TUNED))
    shipped = TUNED.parent.parent.parent / "lib" / "tuned"  # <root>/usr/lib/tuned
    main_conf = TUNED.parent.parent.parent.parent / "etc" / "tuned" / "tuned-main.conf"

    def load(directory: Path, names: list[str]) -> Any:
        loader = Loader(
            Locator([str(directory), str(shipped)]),
            Factory(),
            Merger(),
            GlobalConfig(str(main_conf)),
            Variables(),
        )
        return loader.load(names)

    return load, commands().unquote


@pytest.mark.parametrize(("host", "profile"), sorted(EXAMPLE_PROFILES.items()))
def test_tuned_loads_every_value_as_written(
    kb: KnowledgeBase, tuned_loader: Any, tmp_path: Path, host: str, profile: str
) -> None:
    load, unquote = tuned_loader
    plan = build_plan(kb, load_facts(EXAMPLES / f"{host}.yaml"), profile)
    text = Renderer(kb.catalog).render(plan, "tuned", "cmd")
    (tmp_path / "sysctl-advisor").mkdir()
    (tmp_path / "sysctl-advisor" / "tuned.conf").write_text(text)
    loaded = load(tmp_path, ["sysctl-advisor"])
    assert loaded.options["summary"].startswith(f"sysctl-advisor {profile} for ")
    options = dict(loaded.units["sysctl"].options) if plan.settings else {}
    # what tuned's sysctl plugin writes: the value with one pair of quotes removed, and for a
    # capacity written ">N", N unless the value in force is higher
    values = {k: unquote(v).removeprefix(">") for k, v in options.items()}
    assert values == {s.key: s.value for s in plan.settings}
    at_least = {k for k, v in options.items() if unquote(v).startswith(">")}
    assert at_least == {
        s.key
        for s in plan.settings
        if kb.catalog.keys[s.key].merge == "max" and kb.catalog.keys[s.key].length == 1
        and not s.capped_by and not s.caps
    }  # fmt: skip


def test_stacked_on_a_shipped_profile_our_values_win(
    kb: KnowledgeBase, tuned_loader: Any, tmp_path: Path
) -> None:
    load, unquote = tuned_loader
    plan = build_plan(kb, load_facts(EXAMPLES / "ec2-nginx-frontend.yaml"), "frontend-proxy")
    (tmp_path / "sysctl-advisor").mkdir()
    (tmp_path / "sysctl-advisor" / "tuned.conf").write_text(
        Renderer(kb.catalog).render(plan, "tuned", "cmd")
    )
    merged = load(tmp_path, ["throughput-performance", "sysctl-advisor"])
    options = {k: unquote(v) for k, v in merged.units["sysctl"].options.items()}
    # ours, not throughput-performance's ">2048" (plain: the 16-bit backlog cap governs it)
    assert options["net.core.somaxconn"] == "16384"
    assert re.fullmatch(r"\d+", options["vm.swappiness"])  # its own keys are kept


def _plugin_modifiers() -> Any:
    """tuned's own "<"/">" handling (tuned/plugins/base.py, Plugin._process_assignment_modifiers),
    which the sysctl plugin applies to each value against the value in force."""
    assert TUNED is not None
    sys.path.insert(0, str(TUNED))
    try:
        from tuned.plugins.base import Plugin
    finally:
        sys.path.remove(str(TUNED))
    return lambda new, current: Plugin._process_assignment_modifiers(None, new, current)


@pytest.mark.parametrize(("host", "profile"), sorted(EXAMPLE_PROFILES.items()))
def test_capacities_keep_a_higher_value_in_force(
    kb: KnowledgeBase, tuned_loader: Any, tmp_path: Path, host: str, profile: str
) -> None:
    load, unquote = tuned_loader
    modifiers = _plugin_modifiers()
    plan = build_plan(kb, load_facts(EXAMPLES / f"{host}.yaml"), profile)
    (tmp_path / "sysctl-advisor").mkdir()
    (tmp_path / "sysctl-advisor" / "tuned.conf").write_text(
        Renderer(kb.catalog).render(plan, "tuned", "cmd")
    )
    options = dict(load(tmp_path, ["sysctl-advisor"]).units["sysctl"].options)
    for setting in plan.settings:
        raw = unquote(options[setting.key])
        if raw.startswith(">"):
            lower, higher = str(setting.values[0] - 1), str(setting.values[0] + 1)
            assert modifiers(raw, lower) == setting.value  # raised to the plan's value
            assert modifiers(raw, higher) is None  # tuned leaves the higher value alone
        else:  # written as is, whatever is in force
            assert modifiers(raw, setting.value) == setting.value


def test_at_least_on_a_vector_would_reach_the_kernel() -> None:
    """Why vectors are never written ">...": tuned compares with int(), fails, and passes the
    value with its ">" on to the kernel (which refuses it: measured, EINVAL)."""
    modifiers = _plugin_modifiers()
    assert modifiers(">4096 131072 6291456", "4096 87380 6291456") == ">4096 131072 6291456"


@needs_netns
def test_at_least_applied_by_tuned_in_a_network_namespace(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    """tuned's own sysctl reader and writer (plugin_sysctl._read_sysctl/_write_sysctl) with its
    modifiers, on the real kernel, in a private network namespace (per-namespace key only)."""
    plan = build_plan(kb, load_facts(EXAMPLES / "ec2-nginx-frontend.yaml"), "frontend-proxy")
    text = Renderer(kb.catalog).render(plan, "tuned", "cmd")
    # (somaxconn is not ">": this 3.2 kernel's 16-bit backlog cap governs it)
    line = next(x for x in text.splitlines() if x.startswith("net.ipv4.tcp_max_syn_backlog="))
    assert line == "net.ipv4.tcp_max_syn_backlog=>65536"
    script = (
        "import sys\n"
        "import tuned.plugins.plugin_sysctl as ps\n"
        "from tuned.plugins.base import Plugin\n"
        "key, value = sys.argv[1].split('=', 1)\n"
        "for before in sys.argv[2:]:\n"
        "    ps._write_sysctl(key, before)\n"
        "    new = Plugin._process_assignment_modifiers(None, value, ps._read_sysctl(key))\n"
        "    if new is not None:\n"
        "        ps._write_sysctl(key, new)\n"
        "    print(before, ps._read_sysctl(key))\n"
    )
    result = in_namespace(
        'PYTHONPATH="$1" "$2" -W ignore -c "$3" "$4" 100 200000',
        str(TUNED), sys.executable, script, line,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["100 65536", "200000 200000"]
