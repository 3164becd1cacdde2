"""What every model the advisor validates is built from: one definition per type.

A model is a standard-library frozen dataclass (`@model`) deriving from `Record` (or a base
that does), so a run that takes validated objects from the caches never imports pydantic.
Pydantic validates at the edge only (`validate`), reading the same classes:

* a field's constraints and description are `Field(...)`: a `dataclasses.field` whose metadata
  is pydantic's Field arguments (`ge`, `le`, `max_length`, `pattern`, `description`, ...);
  pydantic reads them, and the published JSON Schemas come from them;
* a check of one value is `After(function)` or `Before(function)` in `Annotated[...]` (what
  pydantic's AfterValidator and BeforeValidator do, declared without importing pydantic);
* the constraints of a list's items or a mapping's keys are `Constraints(...)` in
  `Annotated[...]`, with Field's arguments (a `Field(...)` there is metadata pydantic ignores);
* a check across fields is the class's `__post_init__` (pydantic runs it after validating the
  fields, and so does a direct construction or `dataclasses.replace`): it raises ValueError;
* unknown fields are refused: `Record.__pydantic_config__` is pydantic's config for the class;
  a knowledge file's models derive from `SpecModel`, which also refuses control characters.

Give a model's data to expressions and outputs with `plain_data`. A JSON document the advisor
writes is a model too (`document_config`): `plain_data` writes it, field by field in declaration
order, leaving out a field marked `Field(exclude=True)` (the engine's own, not the document's)
and one whose `exclude_if` holds; its published schema is generated from the same class.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, TypeVar, overload

from sysctl_advisor.model.documents import validation_error
from sysctl_advisor.model.text_escape import refuse_control_characters

if TYPE_CHECKING:
    from pydantic import GetCoreSchemaHandler, TypeAdapter
    from pydantic_core import CoreSchema

if sys.version_info >= (3, 11):
    from typing import dataclass_transform
else:
    from typing_extensions import dataclass_transform

T = TypeVar("T")


class Record:
    """The base of every model: unknown fields are refused when pydantic validates one."""

    __pydantic_config__: ClassVar[dict[str, Any]] = {"extra": "forbid"}


class SpecModel(Record):
    """The base of every knowledge file's models (rules, check rules, profiles, the catalogs):
    strict (unknown fields refused), immutable, and plain text only: no control, format or
    separator character reaches a terminal or a file from any of its fields (a newline or
    tab of folded YAML text is fine; `OneLine` fields refuse those too). The error names the
    field and its line. A subclass's own __post_init__ calls this one."""

    # Fields holding sample input, not prose (a check rule's example sysctl.conf text): they
    # hold what such input may (a byte order mark), and outputs escape them when shown.
    samples: ClassVar[frozenset[str]] = frozenset()

    def __post_init__(self) -> None:
        for name, value in self.__dict__.items():
            if name not in self.samples:
                refuse_control_characters(value, (name,))


def Field(
    default: Any = dataclasses.MISSING,
    *,
    default_factory: Callable[[], Any] | Any = dataclasses.MISSING,
    compare: bool = True,
    **constraints: Any,
) -> Any:
    """A dataclass field whose metadata pydantic reads as its Field arguments (`compare`: the
    dataclass's own, whether instances compare by it)."""
    return dataclasses.field(
        default=default, default_factory=default_factory, compare=compare, metadata=constraints
    )


@overload
def model(cls: type[T], /) -> type[T]: ...


@overload
def model(*, kw_only: bool = True) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(frozen_default=True, kw_only_default=True, field_specifiers=(Field,))
def model(cls: type[T] | None = None, /, *, kw_only: bool = True) -> Any:
    """Make a Record subclass a model: a frozen, keyword-only dataclass (fields with and
    without defaults may come in any order, as the files list them); `@model(kw_only=False)`
    for one built positionally, its fields in the order its constructor takes them."""

    def make(cls: type[T]) -> type[T]:
        return dataclasses.dataclass(frozen=True, kw_only=kw_only)(cls)

    return make if cls is None else make(cls)


def document_config(
    title: str, schema_id: str | None = None, *, optional: tuple[str, ...] = ()
) -> dict[str, Any]:
    """pydantic's config for a JSON document the advisor writes, or a part of one: unknown
    fields refused, its title (a part's name in the schema's `$defs`) and `$id` in the JSON
    Schema, and every field required but `optional` (one a document may lack: written only at
    times, its `exclude_if`, or absent from documents of an earlier version). A required field
    shows no default: every
    document carries it, and a constructor's default (an empty list, the running version) is
    no part of the contract; a constant's stays."""

    def extra(schema: dict[str, Any]) -> None:
        if schema_id is not None:
            schema["$id"] = schema_id
        properties = schema.get("properties", {})
        required = [name for name in schema.get("required", []) if name not in optional]
        schema["required"] = required
        for name in required:
            if "const" not in properties[name]:
                properties[name].pop("default", None)

    return {
        "extra": "forbid",
        "title": title,
        "json_schema_extra": extra,
        "json_schema_serialization_defaults_required": True,
    }


class _Validator:
    mode: ClassVar[str]

    def __init__(self, function: Callable[[Any], Any]) -> None:
        self.function = function

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        from pydantic_core import core_schema

        build = getattr(core_schema, f"no_info_{self.mode}_validator_function")
        schema: CoreSchema = build(self.function, handler(source))
        return schema


class After(_Validator):
    """Annotated metadata: run `function` on the value pydantic validated (ValueError refuses)."""

    mode = "after"


class Before(_Validator):
    """Annotated metadata: run `function` on the raw value before pydantic validates it."""

    mode = "before"


class Constraints:
    """Annotated metadata: Field's constraints (`pattern`, `max_length`, `ge`, ...) on a type
    that is no field of its own: a list's items, a mapping's keys. There a `Field(...)`, a
    dataclass field, is metadata pydantic does not read, and would bind nothing."""

    def __init__(self, **constraints: Any) -> None:
        self.constraints = constraints

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        from typing import Annotated

        from pydantic import Field as PydanticField

        schema: CoreSchema = handler(Annotated[source, PydanticField(**self.constraints)])
        return schema


def exactly(kind: type[Any]) -> Before:
    """Annotated metadata: refuse any value whose type is not `kind` itself (no 80.0 or "80"
    for an int, no 1 for a bool): pydantic's strict mode for one field."""

    def check(value: Any) -> Any:
        if type(value) is not kind:
            raise ValueError(f"must be {kind.__name__}, not {type(value).__name__}")
        return value

    return Before(check)


class _AnyJson:
    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        from pydantic import JsonValue

        schema: CoreSchema = handler.generate_schema(JsonValue)
        return schema


JsonValue = Annotated[Any, _AnyJson()]
"""Any JSON value (a profile parameter's): pydantic's JsonValue in a schema, named without
importing pydantic."""


_adapters: dict[type[Any], TypeAdapter[Any]] = {}  # one per model, built on first use


def _adapter(model_type: type[Any]) -> TypeAdapter[Any]:
    adapter = _adapters.get(model_type)
    if adapter is None:
        from pydantic import TypeAdapter

        adapter = _adapters[model_type] = TypeAdapter(model_type)
    return adapter


def validate(
    model_type: type[T], data: Any, path: Path | str | None = None, text: str | None = None
) -> T:
    """`data` validated as `model_type` (pydantic, imported now), or an InputError naming the
    file (`path`), its line (from `text`) and the field."""
    from pydantic import ValidationError

    try:
        result: T = _adapter(model_type).validate_python(data)
    except ValidationError as exc:
        raise validation_error(exc, Path(path) if path is not None else None, text) from None
    return result


def plain_data(value: Any) -> Any:
    """A model as plain data: a mapping of its fields (by name, in declaration order, but those
    it excludes: `Field(exclude=True)`, and `exclude_if` where it holds), containers of the
    same kind, recursively (dataclasses.asdict, without its deep copies)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        data = {}
        for name, exclude_if in _shown_fields(type(value)):
            item = getattr(value, name)
            if exclude_if is None or not exclude_if(item):
                data[name] = plain_data(item)
        return data
    if isinstance(value, dict):
        return {key: plain_data(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return type(value)(plain_data(item) for item in value)
    return value


_shown: dict[type[Any], tuple[tuple[str, Callable[[Any], bool] | None], ...]] = {}


def _shown_fields(cls: type[Any]) -> tuple[tuple[str, Callable[[Any], bool] | None], ...]:
    """A dataclass's fields `plain_data` writes, each with its `exclude_if` (None: always)."""
    shown = _shown.get(cls)
    if shown is None:
        shown = _shown[cls] = tuple(
            (field.name, field.metadata.get("exclude_if"))
            for field in dataclasses.fields(cls)
            if not field.metadata.get("exclude")
        )
    return shown
