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

from advisor.engine import build_plan
from advisor.facts import load_facts
from advisor.knowledge import KnowledgeBase
from advisor.render import Renderer
from tests.conftest import EXAMPLE_PROFILES, EXAMPLES


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
    kb: KnowledgeBase, tuned_loader: Any, workdir: Path, host: str, profile: str
) -> None:
    load, unquote = tuned_loader
    plan = build_plan(kb, load_facts(EXAMPLES / f"{host}.yaml"), profile)
    text = Renderer(kb.catalog).render(plan, "tuned", "cmd")
    (workdir / "sysctl-advisor").mkdir()
    (workdir / "sysctl-advisor" / "tuned.conf").write_text(text)
    loaded = load(workdir, ["sysctl-advisor"])
    assert loaded.options["summary"].startswith(f"sysctl-advisor {profile} for ")
    options = dict(loaded.units["sysctl"].options) if plan.settings else {}
    # what tuned's sysctl plugin writes: the value with one pair of quotes removed
    assert {k: unquote(v) for k, v in options.items()} == {s.key: s.value for s in plan.settings}


def test_stacked_on_a_shipped_profile_our_values_win(
    kb: KnowledgeBase, tuned_loader: Any, workdir: Path
) -> None:
    load, unquote = tuned_loader
    plan = build_plan(kb, load_facts(EXAMPLES / "ec2-nginx-frontend.yaml"), "frontend-proxy")
    (workdir / "sysctl-advisor").mkdir()
    (workdir / "sysctl-advisor" / "tuned.conf").write_text(
        Renderer(kb.catalog).render(plan, "tuned", "cmd")
    )
    merged = load(workdir, ["throughput-performance", "sysctl-advisor"])
    options = {k: unquote(v) for k, v in merged.units["sysctl"].options.items()}
    assert options["net.core.somaxconn"] == "16384"  # not throughput-performance's ">2048"
    assert re.fullmatch(r"\d+", options["vm.swappiness"])  # its own keys are kept
