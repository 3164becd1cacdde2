"""model_base: constraints on a list's items or a mapping's keys bind, and no model writes one
where pydantic cannot read it."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import typing
from typing import Annotated, Any

import pytest

import sysctl_advisor
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.model_base import Constraints, Field, Record, model, validate


@model
class _Listed(Record):
    names: list[Annotated[str, Constraints(pattern=r"^[a-z]+$", max_length=8)]] = Field(
        default_factory=list
    )
    by_key: dict[Annotated[str, Constraints(pattern=r"^k[0-9]$")], int] = Field(
        default_factory=dict
    )


@pytest.mark.parametrize(
    "data",
    [
        {"names": ["ok", "NOT"]},
        {"names": ["a" * 9]},
        {"names": ["x" * 100_000]},
        {"by_key": {"x": 1}},
    ],
)
def test_constraints_bind_on_items_and_keys(data: dict[str, Any]) -> None:
    with pytest.raises(InputError) as caught:
        validate(_Listed, data)
    assert len(str(caught.value)) < 300  # the value refused is never quoted whole
    assert validate(_Listed, {"names": ["ok"], "by_key": {"k1": 1}}).names == ["ok"]


def _dataclass_fields_in_metadata(hint: Any) -> list[Any]:
    """The dataclass Fields standing as Annotated metadata anywhere in `hint`: constraints
    pydantic never reads (a Field binds only as a field of its own)."""
    found = []
    if typing.get_origin(hint) is Annotated:
        found += [m for m in hint.__metadata__ if isinstance(m, dataclasses.Field)]
    for arg in typing.get_args(hint):
        found += _dataclass_fields_in_metadata(arg)
    return found


def _models() -> list[type[Any]]:
    for info in pkgutil.walk_packages(sysctl_advisor.__path__, "sysctl_advisor."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
    seen: list[type[Any]] = []
    todo = list(Record.__subclasses__())
    while todo:
        cls = todo.pop()
        if cls not in seen:
            seen.append(cls)
            todo += cls.__subclasses__()
    return [c for c in seen if c.__module__.startswith("sysctl_advisor.")]


def test_no_model_writes_a_constraint_pydantic_cannot_read() -> None:
    """`list[Annotated[str, Field(pattern=...)]]` looked checked and was not: a helper's
    names and the catalog's known keys took any text."""
    unread = {
        f"{cls.__module__}.{cls.__qualname__}.{name}"
        for cls in _models()
        for name, hint in typing.get_type_hints(cls, include_extras=True).items()
        if _dataclass_fields_in_metadata(hint)
    }
    assert not unread, sorted(unread)
