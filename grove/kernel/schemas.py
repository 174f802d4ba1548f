"""The base shapes every app's schemas build on: camelCase on the wire (SPEC §3),
snake_case in Python, and the JSON types arguments must have.

Arguments are **strict** (`In`): JSON's types are the types — a boolean is `true` or
`false`, not `0` or `"yes"`; an integer is a JSON integer, not `true`, `1.5` or `"3"`; a
number is not a boolean. REST bodies and MCP tool arguments validate through the same
models, so both refuse the same things. The few types JSON has no literal for arrive as
text in one canonical spelling each: a UUID (`Uuid`), a time with its zone (`Instant`),
a time with or without one (`Moment`), a calendar day (`Day`). A query string is text
throughout: `QueryIn` reads `true`/`false` and whole numbers there, nothing else, before
the same strict rules apply.

`ListMeta.of` is the one builder of a list's `meta` (SPEC §4)."""

from __future__ import annotations

import json
import re
import types
import uuid
from datetime import date, datetime
from typing import Annotated, Any, Self, Union, get_args, get_origin

from pydantic import (
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    WithJsonSchema,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic.json_schema import SkipJsonSchema

from grove.kernel.errors import Invalid


class In(BaseModel):
    """Arguments (a REST body, an MCP tool's arguments): camelCase on the wire, unknown
    fields refused, JSON types strict (see the module)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid",
                              strict=True)

    @model_validator(mode="before")
    @classmethod
    def _json_values(cls, data: Any) -> Any:
        """Each field's value as JSON means it (`_as_json`), before the strict rules."""
        if not isinstance(data, dict):
            return data
        read = dict(data)
        for name, field in cls.model_fields.items():
            kind, shape = _json_kind(field.annotation)
            if kind is None:
                continue
            for key in {name, field.alias or name}:
                value = read.get(key)
                if shape is list and isinstance(value, list):
                    read[key] = [cls._as_json(kind, item) for item in value]
                elif shape is dict and isinstance(value, dict):
                    read[key] = {k: cls._as_json(kind, item) for k, item in value.items()}
                elif shape is None and key in read:
                    read[key] = cls._as_json(kind, value)
        return read

    @classmethod
    def _as_json(cls, kind: type, value: Any) -> Any:
        """JSON has one kind of number, and JSON Schema calls one without a fraction an
        integer: `3.0` is the integer 3 (a fraction, `true` or `"3"` is not)."""
        if kind is int and isinstance(value, float) and value.is_integer():
            return int(value)
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


# -- the types JSON spells as text ---------------------------------------------------------

_UUID_TEXT = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}"
                        r"-[0-9a-fA-F]{12}")
# Calendar days as patterns, exactly: the days each month has (29 February in leap
# years only), in the years whose every instant stays a date in every zone (a day of
# year 1 or 9999 moved to UTC can leave the calendar Python and the services keep).
_YEAR = r"(000[2-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-8][0-9]{3}|9[0-8][0-9]{2}|99[0-8][0-9]|999[0-8])"
_LEAP = r"([0-9]{2}(0[48]|[2468][048]|[13579][26])|(0[48]|[2468][048]|[13579][26])00)"
_DAY = (rf"({_YEAR}-((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)"
        rf"|02-(0[1-9]|1[0-9]|2[0-8]))|{_LEAP}-02-29)")
_CLOCK = r"[Tt]([01][0-9]|2[0-3]):[0-5][0-9]"
_ZONE = r"([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])"
# RFC 3339 (JSON Schema's `date-time`): seconds and a zone are part of it.
INSTANT_PATTERN = rf"^{_DAY}{_CLOCK}:[0-5][0-9](\.[0-9]+)?{_ZONE}$"
# ISO 8601 as a person writes it: the zone and the seconds may be left out.
MOMENT_PATTERN = rf"^{_DAY}{_CLOCK}(:[0-5][0-9](\.[0-9]+)?)?{_ZONE}?$"
DAY_PATTERN = rf"^{_DAY}$"
# What an `asOf` is (notebooks.selectors.as_of): a day, that day with a time as a person
# writes it (zone and seconds optional), or a month.
AS_OF_PATTERN = rf"^({_DAY}({_CLOCK}(:[0-5][0-9](\.[0-9]+)?)?{_ZONE}?)?|{_YEAR}-(0[1-9]|1[0-2]))$"
AS_OF_MAX_CHARS = 64


def _spelled(pattern: str, what: str) -> Any:
    """A before-validator that lets through only text spelled as `pattern` says (or the
    Python value itself, for callers in Python); pydantic then parses the text."""
    matcher = re.compile(pattern)

    def check(value: Any) -> Any:
        if isinstance(value, str):
            if matcher.match(value) is None:
                raise ValueError(f"Input should be {what}")
            return value
        if isinstance(value, bool | int | float) or value is None:
            # A number is not a time or an id, though lax parsing would read one.
            raise ValueError(f"Input should be {what}, as text")
        return value

    return BeforeValidator(check)


def _uuid_text(value: Any) -> Any:
    if isinstance(value, str):
        if _UUID_TEXT.fullmatch(value) is None:
            raise ValueError("Input should be a UUID: 8-4-4-4-12 hexadecimal digits")
        return uuid.UUID(value)
    return value


# Text parsed by pydantic's own (lax) parser, once the spelling is checked: Strict(False).
Uuid = Annotated[uuid.UUID, BeforeValidator(_uuid_text),
                 WithJsonSchema({"type": "string", "format": "uuid"})]
Instant = Annotated[AwareDatetime, Strict(False),
                    _spelled(INSTANT_PATTERN, "an RFC 3339 time with its zone, e.g. "
                             "2026-12-01T09:30:00Z"),
                    # The pattern too: a validator need not check formats.
                    WithJsonSchema({"type": "string", "format": "date-time",
                                    "pattern": INSTANT_PATTERN})]
Moment = Annotated[datetime, Strict(False),
                   _spelled(MOMENT_PATTERN, "an ISO 8601 time, e.g. 2026-12-01T09:30, "
                            "with or without its zone"),
                   WithJsonSchema({"type": "string", "pattern": MOMENT_PATTERN})]
Day = Annotated[date, Strict(False), _spelled(DAY_PATTERN, "a date, e.g. 2026-12-01"),
                WithJsonSchema({"type": "string", "format": "date", "pattern": DAY_PATTERN})]
# REST's `asOf`, spelled exactly (the tools take text the service reads: the pattern is
# too long for tools/list's byte budget).
AsOf = Annotated[str, _spelled(AS_OF_PATTERN, "a day (2026-05-31), a month (2026-05) or "
                               "an ISO 8601 time"), Field(max_length=AS_OF_MAX_CHARS),
                 WithJsonSchema({"type": "string", "pattern": AS_OF_PATTERN,
                                 "maxLength": AS_OF_MAX_CHARS})]


# -- query strings -------------------------------------------------------------------------

_WHOLE = re.compile(r"-?[0-9]+")


def _json_kind(annotation: Any) -> tuple[type | None, type | None]:
    """`(bool or int, None)` when a field holds that JSON type (optional or not), `(int,
    list)` / `(int, dict)` for a list of them or an object of them; `(None, None)` for
    anything else."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _json_kind(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        kinds = {_json_kind(a) for a in get_args(annotation) if a is not type(None)}
        return kinds.pop() if len(kinds) == 1 else (None, None)
    if origin in (list, dict):
        inner, shape = _json_kind(get_args(annotation)[-1])
        return (inner, origin) if shape is None else (None, None)
    return (annotation, None) if annotation in (bool, int) else (None, None)


class QueryIn(In):
    """Arguments from a query string, where everything is text: `true` and `false` are
    the booleans and `-?[0-9]+` the integers — no `1`, `yes` or `2.0` — and the model's
    strict rules apply to what that reading gives."""

    model_config = ConfigDict(extra="ignore")  # query strings carry auth/trace extras at times

    @classmethod
    def _as_json(cls, kind: type, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        if kind is bool and value in ("true", "false"):
            return value == "true"
        if kind is int and _WHOLE.fullmatch(value):
            return int(value)
        return value


class Out(BaseModel):
    """A result: camelCase on the wire, immutable in Python."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, serialize_by_alias=True, frozen=True
    )

    def to_json(self) -> dict:
        return self.model_dump(mode="json", by_alias=True)

    def to_rest_json(self) -> dict:
        """Exactly what REST sends for this object (django-ninja's encoder: times to
        the millisecond), for a tool whose answer carries the REST record."""
        from ninja.responses import NinjaJSONEncoder

        return json.loads(json.dumps(self.model_dump(by_alias=True), cls=NinjaJSONEncoder))


class ListMeta(Out):
    """What every list-shaped answer says about itself (SPEC §4): how many items it
    holds, how many matched in all (a real count), whether that is fewer
    (`truncated`), the page size asked for, and the cursor of the next page if any."""

    returned: int
    available: int
    truncated: bool
    limit: int
    next_cursor: str | None = None
    # The instant a list read as of (`asOf`: notebooks.selectors.as_of); left out
    # otherwise. Out of MCP's output schemas (tools/list is held to a byte budget); the
    # REST metas that can carry it declare it.
    as_of: SkipJsonSchema[str | None] = Field(default=None, exclude_if=lambda v: v is None)

    @classmethod
    def of(cls, *, returned: int, available: int, limit: int,
           next_cursor: str | None = None, lower_bound: bool = False, **extra: Any) -> Self:
        """The one builder of a list's meta — REST lists, search, recall, activity, the
        MCP list tools and the public share pages all call it (subclasses add their own
        fields through `extra`). `truncated` is true whenever fewer items came back than
        are available, whenever a next page exists, and when `available` is only a lower
        bound (`lower_bound`: more may match than were counted).

        A count and its page are read by separate statements: a row committed between
        them can make the page hold one more than was counted. `available` is then what
        the page itself proves, never less than `returned`."""
        available = max(available, returned)
        return cls(returned=returned, available=available,
                   truncated=returned < available or next_cursor is not None or lower_bound,
                   limit=limit, next_cursor=next_cursor, **extra)
