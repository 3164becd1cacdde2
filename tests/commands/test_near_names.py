"""A mistyped key (`explain`), profile (`-p`) or rule (`rules`) is answered with the one or
few names meant, not with every name the advisor knows."""

from __future__ import annotations

import pytest

from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from tests.conftest import ROOT, Cli, assert_one_line_error

FACTS = str(ROOT / "examples" / "dtn-10g.yaml")


@pytest.mark.parametrize(
    ("argv", "meant"),
    [
        (["explain", "net.core.somaxcon"], "(did you mean net.core.somaxconn?)"),
        (["explain", "somaxcon"], "(did you mean net.core.somaxconn?)"),  # a short name's slip
        (["explain", "tcp_notsent"], "(did you mean net.ipv4.tcp_notsent_lowat?)"),
        (["rules", "check.tw-recycle-enable"], "(did you mean check.tw-recycle-enabled?)"),
        (["recommend", "-p", "gridtfp", "--facts", FACTS], "(did you mean gridftp?)"),
        (["explain", "net.core.rmem_max", "-p", "frontend-prox"], "(did you mean frontend-proxy?)"),
        (["diff", "-p", "gridftp", "-p", "redsi", "--facts", FACTS], "(did you mean redis?)"),
    ],
    ids=lambda a: " ".join(a) if isinstance(a, list) else "",
)
def test_a_typo_names_the_nearest(cli: Cli, kb: KnowledgeBase, argv: list[str], meant: str) -> None:
    result = cli(*argv)
    line = assert_one_line_error(result.exit_code, result.stderr, meant)
    assert len(line) < 200  # the meant name, not the catalog
    assert sum(key in line for key in kb.catalog.keys) <= 1


def test_a_key_alike_several_names_gives_those_only(cli: Cli) -> None:
    result = cli("explain", "tcp_rmen")
    line = assert_one_line_error(result.exit_code, result.stderr, "did you mean")
    assert "net.ipv4.tcp_rmem" in line and "net.ipv4.tcp_mem" in line
    assert "udp" not in line and "somaxconn" not in line


@pytest.mark.parametrize(
    ("argv", "listed"),
    [
        (["explain", "zzzz"], "rules/catalog/keys.yaml lists the keys"),
        (["recommend", "-p", "nope", "--facts", FACTS], "`sysctl-advisor profiles` lists them"),
        (["rules", "zzzz"], "`sysctl-advisor rules` lists them"),
    ],
)
def test_nothing_close_says_where_the_names_are(
    cli: Cli, kb: KnowledgeBase, argv: list[str], listed: str
) -> None:
    result = cli(*argv)
    line = assert_one_line_error(result.exit_code, result.stderr, "none is close", listed)
    assert not any(name in line for name in kb.profiles) and "net." not in line
