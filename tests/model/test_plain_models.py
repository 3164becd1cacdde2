"""Issue 19: the plain records a warm run builds its models on behave as the pydantic objects
they were pickled from, for everything such a run does, and refuse everything else."""

from __future__ import annotations

import io
import pickle
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from sysctl_advisor.model import plain_models
from sysctl_advisor.model.plain_models import PlainModelError


class Inner(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    size: int = Field(0, ge=0)


class Outer(Inner):
    model_config = ConfigDict(strict=True)  # merged with the base's: still frozen
    items: list[Inner] = Field(default_factory=list)
    tags: dict[str, str] = Field(default_factory=dict)


class Loose(BaseModel):
    value: int


class PlainInner(plain_models.BaseModel):
    model_config = plain_models.ConfigDict(extra="forbid", frozen=True)
    name: str
    size: int = plain_models.Field(0, ge=0)

    @plain_models.field_validator("name")
    @classmethod
    def _checked(cls, value: str) -> str:
        return value


class PlainOuter(PlainInner):
    model_config = plain_models.ConfigDict(strict=True)
    items: list[PlainInner] = plain_models.Field(default_factory=list)
    tags: dict[str, str] = plain_models.Field(default_factory=dict)


class PlainLoose(plain_models.BaseModel):
    value: int


_PLAIN = {"Inner": PlainInner, "Outer": PlainOuter, "Loose": PlainLoose}


class _IntoPlain(pickle.Unpickler):
    """Unpickles this module's pydantic classes as their plain twins, as a warm run does (there
    the same names resolve to classes built on the plain base)."""

    def find_class(self, module: str, name: str) -> Any:
        if module == __name__ and name in _PLAIN:
            return _PLAIN[name]
        return super().find_class(module, name)


def as_plain(model: BaseModel) -> Any:
    return _IntoPlain(io.BytesIO(pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL))).load()


def _outer() -> Outer:
    return Outer(name="web", size=3, items=[Inner(name="a"), Inner(name="b", size=2)], tags={})


def test_a_pickled_model_reads_the_same_fields_in_the_same_order() -> None:
    model = _outer()
    plain = as_plain(model)
    assert type(plain) is PlainOuter
    assert list(plain.__dict__) == list(model.__dict__) == ["name", "size", "items", "tags"]
    assert (plain.name, plain.size, plain.tags) == ("web", 3, {})
    assert [type(i) for i in plain.items] == [PlainInner, PlainInner]
    assert [(i.name, i.size) for i in plain.items] == [("a", 0), ("b", 2)]
    assert plain_models.BaseModel in type(plain).__mro__


def test_plain_data_walks_plain_models_as_model_dump_does_pydantic_ones() -> None:
    from sysctl_advisor.model.model_base import plain_data

    model = _outer()
    assert plain_data(as_plain(model)) == model.model_dump(mode="python")


def test_equality_and_hashing_follow_pydantic() -> None:
    first, second = as_plain(_outer()), as_plain(_outer())
    assert first == second and first is not second
    with pytest.raises(TypeError):
        hash(first)  # frozen, but a list field: unhashable, as in pydantic
    one, two = as_plain(Inner(name="x", size=1)), as_plain(Inner(name="x", size=1))
    assert hash(one) == hash(two)  # frozen: hashable
    assert len({one, two, as_plain(Inner(name="y"))}) == 2
    assert PlainOuter.__hash__ is not None  # frozen by the config inherited from the base
    assert as_plain(Inner(name="a")) != as_plain(Inner(name="b"))
    assert first != as_plain(Inner(name="web", size=3))  # another class
    loose = as_plain(Loose(value=1))
    with pytest.raises(TypeError):
        hash(loose)  # not frozen: unhashable, as in pydantic
    assert PlainOuter.model_config == {"extra": "forbid", "frozen": True, "strict": True}


def test_model_copy_updates_a_copy_and_frozen_models_refuse_assignment() -> None:
    plain = as_plain(_outer())
    copy = plain.model_copy(update={"size": 9})
    assert (copy.size, plain.size) == (9, 3)
    assert copy.items is plain.items and type(copy) is PlainOuter
    with pytest.raises(PlainModelError, match="frozen"):
        plain.size = 4
    loose = as_plain(Loose(value=1))
    loose.value = 2
    assert loose.value == 2


@pytest.mark.parametrize(
    "attempt",
    [
        lambda: PlainInner(name="x"),
        lambda: PlainInner.model_validate({"name": "x"}),
        lambda: as_plain(Inner(name="x")).model_dump(),
        lambda: as_plain(Inner(name="x")).model_dump_json(),
        lambda: as_plain(Inner(name="x")).model_copy(deep=True),
        lambda: pickle.dumps(as_plain(Inner(name="x"))),
    ],
    ids=["construct", "validate", "dump", "dump_json", "deep copy", "pickle"],
)
def test_what_needs_pydantic_is_refused(attempt: Any) -> None:
    with pytest.raises(PlainModelError):
        attempt()


def test_declarations_keep_defaults_and_validators_as_plain_functions() -> None:
    assert plain_models.Field(5, ge=0) == 5
    assert plain_models.Field(..., min_length=1) is None
    assert PlainInner._checked("x") == "x"
    assert plain_models.ConfigDict(frozen=True) == {"frozen": True}


def test_the_choice_is_made_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once model_base has asked (any model defined), plain models can no longer be chosen:
    the test process, like any process that validated something, stays on pydantic."""
    import sysctl_advisor.model.model_base  # noqa: F401

    assert plain_models.plain_chosen() is False
    assert plain_models.choose_plain() is False
    monkeypatch.setattr(plain_models, "_state", {"plain": False, "chosen": False})
    assert plain_models.choose_plain() is True
    assert plain_models.plain_chosen() is True
    assert plain_models.choose_plain() is True


def test_model_base_offers_the_same_names_from_either_source() -> None:
    import pydantic

    import sysctl_advisor.model.model_base as model_base

    for name in plain_models.__all__:
        assert hasattr(plain_models, name) and hasattr(pydantic, name), name
        assert getattr(model_base, name) is getattr(pydantic, name)  # this process: pydantic


def test_str_repr_and_single_field_hash_are_pydantic_s() -> None:
    class One(BaseModel):
        model_config = ConfigDict(frozen=True)
        value: int

    class PlainOne(plain_models.BaseModel):
        model_config = plain_models.ConfigDict(frozen=True)
        value: int

    model = Inner(name="a", size=2)
    plain = as_plain(model)
    assert (str(plain), repr(plain)) == (str(model), repr(model).replace("Inner", "PlainInner"))
    one = object.__new__(PlainOne)
    one.__setstate__(One(value=7).__getstate__())
    assert hash(one) == hash(One(value=7)) == hash(7)
    with pytest.raises(PlainModelError, match="iterating"):
        dict(plain)
