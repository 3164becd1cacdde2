"""The effect tests' session hook: the port-range runs, which must last one whole 60 s
TIME_WAIT period, start as soon as collection ends and run beside the other tests, so the suite
does not wait a minute for them (tests/effects/test_port_range_effect.py collects the results)."""

from __future__ import annotations

import shutil

import pytest

from tests.namespaces import namespace_problem

PORT_RANGE = "tests.effects.test_port_range_effect"


def pytest_collection_finish(session: pytest.Session) -> None:
    wanted = any(
        getattr(getattr(item, "module", None), "__name__", "") == PORT_RANGE
        and "rates" in getattr(item, "fixturenames", ())
        for item in session.items
    )
    if not wanted or session.config.option.collectonly:
        return
    if namespace_problem() is not None or shutil.which("ip") is None:
        return  # the tests skip, with the reason
    from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
    from tests.effects import test_port_range_effect as module

    module.EARLY.append(module.start_timed_runs(module.advice_for(KnowledgeBase.load())))
