"""What the advisor's models are built on: pydantic, or the plain records of plain_models.

Every spec and facts model imports its base, Field, validators and ValidationError from here.
The choice is made once per process, when this module is first imported: pydantic, unless the
entry point found that this run only loads objects pydantic validated before (warm_start) and
asked for plain models before any model was defined. Type checkers always see pydantic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sysctl_advisor.model import plain_models
from sysctl_advisor.model.plain_models import plain_chosen

if TYPE_CHECKING or not plain_chosen():
    from pydantic import (  # noqa: I001 - re-exported (`X as X`), as one statement
        AfterValidator as AfterValidator,
        BaseModel as BaseModel,
        BeforeValidator as BeforeValidator,
        ConfigDict as ConfigDict,
        Field as Field,
        JsonValue as JsonValue,
        ValidationError as ValidationError,
        field_validator as field_validator,
        model_validator as model_validator,
    )
else:  # the same names (plain_models.__all__)
    from sysctl_advisor.model.plain_models import *  # noqa: F403


def plain_data(value: Any) -> Any:
    """What model_dump(mode="python") returns for the advisor's models (fields in declaration
    order, containers of the same kind), walked by hand: it works on plain models too, and on
    pydantic ones it spares building the model's serializer, which costs more than the rest of
    a one-shot run (the models have no serializers, aliases or computed fields; tests compare
    the two for facts and catalog keys)."""
    if isinstance(value, BaseModel | plain_models.BaseModel):  # fields in declaration order
        return {name: plain_data(item) for name, item in value.__dict__.items()}
    if isinstance(value, dict):
        return {key: plain_data(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return type(value)(plain_data(item) for item in value)
    return value
