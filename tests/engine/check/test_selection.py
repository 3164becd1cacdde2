"""engine.check.selection and engine.check.directives: rule selectors (ids and prefixes at a
boundary) and the strict reading of suppression comments."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sysctl_advisor.engine.check.directives import Directive, parse_directive, with_targets
from sysctl_advisor.engine.check.selection import tuning
from sysctl_advisor.model.errors import InputError

IDS = ["check.glob", "check.glob-unclosed", "check.glob-unrelated", "check.tw-recycle-enabled"]


@pytest.mark.parametrize(
    ("selector", "named"),
    [
        ("check.glob", {"check.glob", "check.glob-unclosed", "check.glob-unrelated"}),
        ("check.glob-", {"check.glob-unclosed", "check.glob-unrelated"}),
        ("check.glob-unclosed", {"check.glob-unclosed"}),
        ("check.*", set(IDS)),
        ("check", set(IDS)),
        ("check.tw", {"check.tw-recycle-enabled"}),
    ],
)
def test_a_selector_names_ids_at_a_boundary(selector: str, named: set[str]) -> None:
    assert tuning(IDS, select=[selector]).selected == named
    assert tuning(IDS, ignore=[selector]).selected == set(IDS) - named


@pytest.mark.parametrize("selector", ["check.glo", "check.glob-un", "net", "Check.glob", "a b"])
def test_a_selector_of_no_rule_is_refused(selector: str) -> None:
    with pytest.raises(InputError):
        tuning(IDS, select=[selector])


def test_severities_and_their_conflict() -> None:
    assert tuning(IDS, warn=["check.glob-"]).severities == {
        "check.glob-unclosed": "warning",
        "check.glob-unrelated": "warning",
    }
    with pytest.raises(InputError):
        tuning(IDS, warn=["check.glob"], error=["check.glob-unclosed"])


def test_a_directive_is_read_strictly() -> None:
    found = parse_directive(3, "#  sysctl-advisor: ignore[ check.glob ,check.glob ] why not", IDS)
    assert isinstance(found, Directive)
    assert found.ids == ("check.glob",) and found.reason == "why not" and not found.whole_file
    whole = parse_directive(1, ";sysctl-advisor:ignore-file[check.glob] x", IDS)
    assert isinstance(whole, Directive) and whole.whole_file
    for text in (
        "# sysctl-advisor: ignore[check.glob]",
        "# sysctl-advisor: ignore[check.nope] x",
        "# sysctl-advisor: ignore[check.glob] " + "x" * 201,
        "# sysctl-advisor: ignore[check.glob] a\u202eb",
        "# sysctl-advisor: ignore(check.glob) x",
        "# sysctl-advisor: ignore[] x",
    ):
        assert isinstance(parse_directive(1, text, IDS), str), text


def test_an_ignore_points_at_the_next_assignment_line() -> None:
    directives = [
        Directive(1, False, ("check.glob",), "r"),
        Directive(9, False, ("check.glob",), "r"),
    ]
    assert [d.target for d in with_targets(directives, [2, 5, 8])] == [2, None]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="# ;sysctl-advisor:ignore-file[]check.,glob \t\x07é", max_size=300))
def test_any_comment_is_a_directive_or_one_reason(text: str) -> None:
    found = parse_directive(1, text, IDS)
    if isinstance(found, Directive):  # a well-formed one: known ids and a printable reason
        assert found.ids and set(found.ids) <= set(IDS), text
        assert found.reason.isprintable() and 0 < len(found.reason) <= 200, text
    else:  # or one reason on one line for check.suppression-malformed
        assert isinstance(found, str) and "\n" not in found, text
