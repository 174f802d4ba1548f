"""The base shapes every app's schemas build on: camelCase on the wire (SPEC §3),
snake_case in Python."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from grove.kernel.errors import Invalid


class In(BaseModel):
    """Arguments (a REST body, an MCP tool's arguments): camelCase on the wire, unknown
    fields refused."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

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
