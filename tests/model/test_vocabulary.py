"""The validation vocabulary, each word defined once (model/vocabulary.py): a sysctl key's name,
one line of text, the base of every knowledge file; and when the values in force were read,
said once by the facts."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import sysctl_advisor.knowledge
from sysctl_advisor.model.host_facts import facts_from_data
from sysctl_advisor.model.model_base import Record, SpecModel, validate
from sysctl_advisor.model.vocabulary import OneLine, SysctlKey, SysctlKeyGlob

PACKAGE = Path(sysctl_advisor.knowledge.__file__).parent.parent
VOCABULARY = PACKAGE / "model" / "vocabulary.py"


@dataclasses.dataclass(frozen=True)
class _Keys(Record):
    names: list[SysctlKey]


@dataclasses.dataclass(frozen=True)
class _Globs(Record):
    names: list[SysctlKeyGlob]


@dataclasses.dataclass(frozen=True)
class _Lines(Record):
    text: OneLine = dataclasses.field(metadata={"max_length": 20})


NAMES = [
    "net.ipv4.tcp_mem",
    "vm.min_free_kbytes",
    "net.ipv4.conf.eth0/100.rp_filter",  # interface eth0.100, as sysctl(8) writes it
    "net.ipv6.conf.Wlan-0.accept_ra",
    "fs.binfmt_misc.status",
]
NOT_NAMES = ["net", "net.", ".net.core", "net..core", "net.core.some maxconn", "net.core=1"]


@pytest.mark.parametrize("name", NAMES)
def test_a_key_name_is_one_type_for_facts_and_knowledge(name: str) -> None:
    assert validate(_Keys, {"names": [name]}).names == [name]
    assert validate(_Globs, {"names": [name]}).names == [name]
    facts = facts_from_data({"memory": {"total": "1 GiB"}, "sysctl": {name: "1"}})
    assert name in facts.sysctl


@pytest.mark.parametrize("name", [*NOT_NAMES, "net.ipv4.conf.*.rp_filter", "a." + "b" * 256])
def test_what_is_no_key_name_is_refused_naming_the_field(name: str) -> None:
    with pytest.raises(Exception, match=r"names\.0") as caught:
        validate(_Keys, {"names": [name]}, "x.yaml")
    assert "sysctl key" in str(caught.value)


def test_a_glob_of_names_is_named_for_what_it_is() -> None:
    assert validate(_Globs, {"names": ["net.ipv4.conf.*.rp_filter"]}).names
    for name in NOT_NAMES:
        with pytest.raises(Exception, match="sysctl key"):
            validate(_Globs, {"names": [name]})


@pytest.mark.parametrize("text", ["a\x1b[31m", "a\nb", "a\tb", "a\u202eb", "a\u2028b", "x" * 21])
def test_one_line_refuses_escapes_and_breaks_and_is_bounded_by_its_field(text: str) -> None:
    with pytest.raises(Exception, match="text"):
        validate(_Lines, {"text": text}, "x.yaml")
    assert validate(_Lines, {"text": "plain words, 20 char"}).text


def test_the_facts_say_when_the_values_in_force_were_read() -> None:
    base = {"memory": {"total": "1 GiB"}}
    at = "2026-01-02T03:04:05Z"
    snapshot = {"kind": "snapshot", "source": "/proc", "at": at}
    history = {"kind": "history", "source": "prometheus", "at": at, "window_seconds": 3600}
    assert facts_from_data(base).values_read_at is None
    read = facts_from_data({**base, "observed": {"period": snapshot}}).values_read_at
    assert read is not None and read.startswith("2026-01-02")
    assert facts_from_data({**base, "observed": {"period": history}}).values_read_at is None


def test_every_knowledge_file_model_is_on_the_one_base() -> None:
    """Rules, check rules, profiles, catalogs, message families, sources...: every model of
    the knowledge stage refuses control characters the same way. The fleet's profile map is
    an inventory's configuration, read by its own rules (host patterns)."""
    others = []
    for module in pkgutil.iter_modules([str(PACKAGE / "knowledge")]):
        loaded = importlib.import_module(f"sysctl_advisor.knowledge.{module.name}")
        for value in vars(loaded).values():
            if (
                isinstance(value, type)
                and issubclass(value, Record)
                and value.__module__ == loaded.__name__
                and not issubclass(value, SpecModel)
            ):
                others.append(f"{module.name}.{value.__name__}")
    assert others == ["profile_map.MapEntry"]


# A regular expression for a key's name: a character class of name characters, then a group
# that repeats `.NAME` (or `[./]NAME`); or a pattern constant named for keys or sysctls.
_KEY_PATTERN = re.compile(
    r"\[[^\]\n]*a-z0-9_[^\]\n]*\][+*]?\((?:\?:)?(?:\\\\?\.|\[\./\])"
    r"|^\s*_?\w*(?:SYSCTL|KEY)\w*\s*(?::[^=]*)?=\s*(?:re\.compile\()?r[\"']",
    re.MULTILINE,
)
# A text type or one-line helper of its own: the vocabulary has the one.
_TEXT_TYPE = re.compile(
    r"^(?:Text|OneLine)\s*=|Annotated\[str, After\((?:plain_line|_printable)\)"
    r"|^def _one_line\b",
    re.MULTILINE,
)
# Files another change is still moving onto the vocabulary; empty it as they are.
_PENDING: set[str] = set()


def test_no_second_key_name_pattern_or_text_type_in_the_package() -> None:
    strays = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if path == VOCABULARY or name in _PENDING:
            continue
        text = path.read_text()
        strays += [f"{name}: {m.group().strip()}" for m in _KEY_PATTERN.finditer(text)]
        strays += [f"{name}: {m.group().strip()}" for m in _TEXT_TYPE.finditer(text)]
    assert strays == [], "use SysctlKey, SysctlKeyGlob or OneLine of model/vocabulary.py"


def test_the_stray_detectors_detect() -> None:
    """The patterns above find each form the package held before the vocabulary."""
    for stray in (
        '_KEY = re.compile(r"^[a-z0-9_]+(?:\\.[a-z0-9_-]+)+$")',
        '_SYSCTL = r"^[a-z0-9_]+(\\.[a-z0-9_-]+)+$"',
        'WRITTEN_KEY = r"^[a-z0-9_]+(?:\\.[a-z0-9_*-]+)+$"',
        '_SYSCTL_KEY = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.*/:-]{0,255}$")',
        'Constraints(pattern=r"^[a-z0-9_-]+(\\.([a-z0-9_-]+|\\*))+$", max_length=200)',
    ):
        assert _KEY_PATTERN.search(stray), stray
    for stray in (
        "Text = Annotated[str, After(plain_line)]",
        "OneLine = Annotated[str, After(_short_line)]",
        "def _one_line(value: str) -> str:",
    ):
        assert _TEXT_TYPE.search(stray), stray
