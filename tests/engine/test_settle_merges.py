"""What settling a plan costs: the wants are merged again only after runs that can change them.
The rules that read `planned` and set and cap nothing run once at the end; their results join
the plan without a merge of their own (they add no want or cap, so it would come out the
same), and the plan is the same as with one."""

from __future__ import annotations

import pytest

from sysctl_advisor.engine import plan_rules
from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.engine.plan_merge import merge_wants
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from tests.conftest import EXAMPLE_PROFILES, EXAMPLES, load_facts


@pytest.mark.parametrize("host", sorted(EXAMPLE_PROFILES))
def test_the_last_runs_add_results_without_merging_again(
    host: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = KnowledgeBase.load()
    facts, profile = load_facts(EXAMPLES / f"{host}.yaml"), EXAMPLE_PROFILES[host]
    merges: list[int] = []
    passes: list[list[int]] = []
    evaluate = plan_rules.RuleRound.evaluate

    def counting_merge(*args, **kwargs):  # type: ignore[no-untyped-def]
        merges.append(1)
        return merge_wants(*args, **kwargs)

    def recording_evaluate(self, runner, indexes, **kwargs):  # type: ignore[no-untyped-def]
        passes.append(list(indexes) if indexes is not self.later else [])
        return evaluate(self, runner, indexes, **kwargs)

    monkeypatch.setattr(plan_rules, "merge_wants", counting_merge)
    monkeypatch.setattr(plan_rules.RuleRound, "evaluate", recording_evaluate)
    plan = build_plan(kb, facts, profile)
    reruns = [p for p in passes if p]
    # the first merge, then one after each pass of readers that set or cap something
    assert len(merges) == 1 + len(reruns)
    monkeypatch.undo()
    assert plan == build_plan(kb, facts, profile)
