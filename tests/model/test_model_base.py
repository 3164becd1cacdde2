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
from sysctl_advisor.model.model_base import (
    Constraints,
    Field,
    Record,
    document_config,
    model,
    plain_data,
    validate,
)


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


def all_models() -> list[type[Any]]:
    """Every model of the package (each module imported)."""
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
        for cls in all_models()
        for name, hint in typing.get_type_hints(cls, include_extras=True).items()
        if _dataclass_fields_in_metadata(hint)
    }
    assert not unread, sorted(unread)


def _absent(value: Any) -> bool:
    return value is None


@model(kw_only=False)
class _Written(Record):
    __pydantic_config__ = document_config("WrittenPart", optional=("at_times",))

    shown: int
    own: list[int] = Field(default_factory=list, compare=False, exclude=True)
    at_times: str | None = Field(default=None, exclude_if=_absent)
    always: str | None = Field(default=None, description="written, null or not")


def test_a_document_model_writes_what_its_schema_publishes() -> None:
    """One definition for both: a field the engine keeps for itself (exclude=True) is in
    neither the JSON nor the schema; one written only at times (exclude_if) is optional in
    the schema; every other is required, with no constructor default shown."""
    from pydantic import TypeAdapter

    assert plain_data(_Written(1, [2])) == {"shown": 1, "always": None}
    assert list(plain_data(_Written(1, at_times="x"))) == ["shown", "at_times", "always"]
    assert _Written(1, [2]) == _Written(1, [3])  # compare=False: not part of its value
    schema = TypeAdapter(_Written).json_schema(mode="serialization")
    assert schema["title"] == "WrittenPart"
    assert list(schema["properties"]) == ["shown", "at_times", "always"]
    assert schema["required"] == ["shown", "always"]
    assert "default" not in schema["properties"]["always"]
