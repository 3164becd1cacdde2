"""Plain records standing in for pydantic in a run that only loads objects validated before.

A warm one-shot run (`recommend`, `diff` or `check` whose knowledge files and facts file all
sit in the caches, validated by pydantic in an earlier run) validates nothing: it unpickles the
specs and facts and reads their attributes. Importing pydantic's model machinery and building
the ~40 model classes on it costs more than the rest of such a run, so that run builds the same
classes on the plain base below instead (see `sysctl_advisor.model.model_base`, which chooses
once per process, before any model is defined, and `sysctl_advisor.knowledge.warm_start`, which
decides whether a run is such a run).

What the plain base supports is exactly what those runs use of a validated model: unpickling
an object pydantic pickled, reading its fields, `model_copy(update=...)`, equality, str() and
repr(), and (for frozen models) hashing, each as pydantic defines them. Everything that would
validate, serialize or iterate refuses with PlainModelError: a run that reached it was wrongly
judged warm, and must not go on as if it had validated something.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

# What model_base takes from here in place of pydantic's names.
__all__ = [
    "AfterValidator",
    "BaseModel",
    "BeforeValidator",
    "ConfigDict",
    "Field",
    "JsonValue",
    "ValidationError",
    "field_validator",
    "model_validator",
]

_state = {"plain": False, "chosen": False}


def choose_plain() -> bool:
    """Ask for plain models in this process; True when granted (no model defined yet)."""
    if not _state["chosen"]:
        _state["plain"] = True
    return _state["plain"]


def plain_chosen() -> bool:
    """Whether models are plain in this process; fixes the choice (model_base asks once)."""
    _state["chosen"] = True
    return _state["plain"]


class PlainModelError(RuntimeError):
    """A plain model was asked to validate or serialize: only pydantic does that."""


class ValidationError(ValueError):
    """Never raised: plain models validate nothing (they refuse instead)."""


def ConfigDict(**settings: Any) -> dict[str, Any]:
    return settings


def Field(default: Any = None, *args: Any, **constraints: Any) -> Any:
    """A field's declaration: its default as a class attribute (the instance's own value,
    from the pickle, is what is read)."""
    return None if default is ... else default


class _Annotation:
    """AfterValidator, BeforeValidator: metadata in Annotated types, unused without pydantic."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass


AfterValidator = BeforeValidator = _Annotation
JsonValue = Any


def field_validator(*args: Any, **kwargs: Any) -> Callable[[Any], Any]:
    return lambda function: function


def model_validator(*args: Any, **kwargs: Any) -> Callable[[Any], Any]:
    return lambda function: function


class BaseModel:
    """A record whose fields are its __dict__, in declaration order (as pydantic keeps them)."""

    model_config: ClassVar[dict[str, Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        merged: dict[str, Any] = {}
        for klass in reversed(cls.__mro__[1:]):  # pydantic merges the bases' configs
            merged.update(getattr(klass, "model_config", {}) or {})
        merged.update(cls.__dict__.get("model_config", {}) or {})
        cls.model_config = merged
        if merged.get("frozen"):
            cls.__hash__ = BaseModel._frozen_hash  # type: ignore[method-assign,assignment]

    def __init__(self, **data: Any) -> None:
        raise PlainModelError(f"{type(self).__name__} cannot be validated without pydantic")

    def __setstate__(self, state: dict[str, Any]) -> None:
        object.__setattr__(self, "__dict__", dict(state["__dict__"]))

    def __setattr__(self, name: str, value: Any) -> None:
        if self.model_config.get("frozen"):
            raise PlainModelError(f"{type(self).__name__} is frozen")
        object.__setattr__(self, name, value)

    def __eq__(self, other: object) -> bool:
        if type(self) is not type(other):
            return NotImplemented
        return self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]  # as pydantic: only frozen models hash

    def _frozen_hash(self) -> int:  # as pydantic: hash(itemgetter(*fields)(__dict__))
        values = tuple(self.__dict__.values())
        return hash(values[0] if len(values) == 1 else values) if values else 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.__repr_fields(', ')})"

    def __str__(self) -> str:
        return self.__repr_fields(" ")

    def __repr_fields(self, separator: str) -> str:
        return separator.join(f"{name}={value!r}" for name, value in self.__dict__.items())

    def __iter__(self) -> Any:
        raise PlainModelError(f"{type(self).__name__}: iterating a model needs pydantic")

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> Any:
        if deep:
            raise PlainModelError("a deep copy is not needed by any warm run")
        copy = object.__new__(type(self))
        object.__setattr__(copy, "__dict__", {**self.__dict__, **(update or {})})
        return copy

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise PlainModelError("plain models are never pickled (the caches hold pydantic's)")

    @classmethod
    def model_validate(cls, *args: Any, **kwargs: Any) -> Any:
        raise PlainModelError(f"{cls.__name__} cannot be validated without pydantic")

    def model_dump(self, *args: Any, **kwargs: Any) -> Any:
        raise PlainModelError(f"{type(self).__name__}: model_dump needs pydantic")

    def model_dump_json(self, *args: Any, **kwargs: Any) -> Any:
        raise PlainModelError(f"{type(self).__name__}: model_dump_json needs pydantic")
