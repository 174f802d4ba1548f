"""The base shapes every app's schemas build on: camelCase on the wire (SPEC §3),
snake_case in Python."""

from __future__ import annotations

import types
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator
from pydantic.alias_generators import to_camel

from grove.kernel.errors import Invalid


class In(BaseModel):
    """Arguments (a REST body, an MCP tool's arguments): camelCase on the wire, unknown
    fields refused."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    @field_validator("*", mode="before")
    @classmethod
    def _numbers_are_not_booleans(cls, value: Any, info: ValidationInfo) -> Any:
        """`true` is not 1: pydantic's lax int reads it so, and a version fence of `true`
        sent by a confused model must not pass for "the version I read"."""
        if isinstance(value, bool) and info.field_name is not None \
                and _numeric(cls.model_fields[info.field_name].annotation):
            raise ValueError("Input should be a number, not true or false")
        return value

    def given(self, *names: str) -> dict[str, Any]:
        """The named fields the caller actually sent (omitted ≠ null)."""
        return {n: getattr(self, n) for n in names if n in self.model_fields_set}

    def not_null(self, *names: str) -> dict[str, Any]:
        """Sent fields, refusing null where the service has no null meaning."""

        given = self.given(*names)
        for name, value in given.items():
            if value is None:
                raise Invalid(f"{name} cannot be null.", code="invalid_argument")
        return given


def _numeric(annotation: Any) -> bool:
    """An int or float field (optional or not), which a boolean must not fill."""
    if get_origin(annotation) in (Union, types.UnionType):
        options = [a for a in get_args(annotation) if a is not type(None)]
        return bool(options) and all(_numeric(a) for a in options)
    return annotation in (int, float)


class Out(BaseModel):
    """A result: camelCase on the wire, immutable in Python."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, serialize_by_alias=True, frozen=True
    )

    def to_json(self) -> dict:
        return self.model_dump(mode="json", by_alias=True)


class ListMeta(Out):
    returned: int
    available: int
    truncated: bool
    limit: int
    next_cursor: str | None = None
