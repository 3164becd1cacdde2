from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

# Compiled-expression and spec caches go to a throwaway directory, never the user's.
os.environ.setdefault("SYSCTL_ADVISOR_CACHE", tempfile.mkdtemp(prefix="sysctl-advisor-test-"))

from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.documents import read_text
from sysctl_advisor.model.host_facts import HostFacts
from sysctl_advisor.sources.facts_file import facts_from_text
from tests.sarif.validate import validate_check_outputs  # noqa: F401  (autouse: every check SARIF/JSON is validated)

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
EXAMPLES = ROOT / "examples"
# A bound on work that must end (a bomb refused, a timeout that fires): a guard against a
# hang, never a speed target. What a test asserts is the behaviour (the error, its one line).
HANG_SECONDS = 120.0

# Which profile each example host is for (golden files and self-checks use these pairs).
EXAMPLE_PROFILES = {
    "dcache-32bit": "gridftp",
    "c1m-server": "c1m-server",
    "ec2-nginx-frontend": "frontend-proxy",
    "dtn-10g": "gridftp",
    "dtn-100g-rhel9": "gridftp",
    "c10m-conntrack-5.15": "c1m-server",
    "haproxy-frontend-rhel7": "frontend-proxy",
}
# Example hosts that run several workloads: their profiles and parameters (golden files).
EXAMPLE_WORKLOADS: dict[str, tuple[list[str], dict[str, str]]] = {
    "app-node": (["frontend-proxy", "redis", "postgresql"], {"frontend-proxy.http3": "true"}),
    "search-node": (["elasticsearch", "kafka"], {}),
}
# Parameters an example is shown with (README, golden files); other tests use the defaults.
EXAMPLE_PARAMS: dict[str, dict[str, str]] = {
    "c10m-conntrack-5.15": {"connections": "10000000"},
}


def load_facts(path: Path) -> HostFacts:
    """A facts file (YAML or JSON) or one host's `ansible -m setup --tree` file, validated
    (commands read theirs through the validated-facts cache)."""
    return facts_from_text(path, read_text(path))


@pytest.fixture(scope="session")
def kb() -> KnowledgeBase:
    return KnowledgeBase.load()


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A fresh empty directory under the system's temporary directory, removed when the test
    ends. It stands in for pytest's own, whose parents are private to the user running the
    tests: a test that hands this directory to another user (nobody, running as an attacker
    would) opens its mode, and that user must be able to reach it through its parent."""
    with tempfile.TemporaryDirectory() as d:
        yield Path(d)


def invoke(*args: str | Path, input: str | None = None) -> Result:
    """The command line run in this process, as a user would type it. For helpers that run
    outside a test function (parametrize lists, Hypothesis strategies); tests take `cli`."""
    from sysctl_advisor.cli import app

    return CliRunner().invoke(app, [str(arg) for arg in args], input=input)


Cli = Callable[..., Result]


@pytest.fixture
def cli() -> Cli:
    """`cli("check", path, "-f", "json")`: the command line's result (exit_code, stdout, stderr
    apart)."""
    return invoke


def assert_one_line_error(code: int, err: str, *fragments: str) -> str:
    """A refusal as the user sees it: exit code 2 and exactly one line on stderr, neither a
    traceback nor an internal error, holding each fragment. Returns that line."""
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, (code, err)
    assert "Traceback" not in err and "internal error" not in err, err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def one_line_message(error: BaseException, *fragments: str) -> str:
    """An error's text as the command line would print it on its one line: no line break,
    nothing unprintable, holding each fragment. Returns the text."""
    text = str(error)
    assert "\n" not in text and "\r" not in text and text.isprintable(), text
    for fragment in fragments:
        assert fragment in text, text
    return text


@pytest.fixture(autouse=True)
def plain_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's NO_COLOR or FORCE_COLOR, or a runner's COLUMNS (pytest-xdist's workers set
    80), must not change what text-output tests see."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("COLUMNS", raising=False)
