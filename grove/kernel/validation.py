"""Field rules every interface and app shares, below services and selectors alike."""

from __future__ import annotations

import functools
from typing import Any

from grove.kernel.errors import Invalid


def is_storable(value: Any) -> bool:
    """Text PostgreSQL can store and compare — no NUL character, valid Unicode (a JSON
    `\\ud800` escape decodes to a lone surrogate) — in a string or anywhere inside lists
    and objects of them."""
    if isinstance(value, str):
        if "\x00" in value:
            return False
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, list | tuple):
        return all(is_storable(item) for item in value)
    if isinstance(value, dict):
        return all(is_storable(k) and is_storable(v) for k, v in value.items())
    return True


def storable(value: Any) -> Any:
    """`value` with what PostgreSQL cannot store taken out — NUL characters dropped, a
    lone surrogate replaced by U+FFFD — in a string or anywhere inside lists and objects
    of them. For text Grove did not get from a person who can be asked to fix it: a
    model's output."""
    if isinstance(value, str):
        if is_storable(value):
            return value
        text = value.replace("\x00", "")
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    if isinstance(value, list | tuple):
        return [storable(item) for item in value]
    if isinstance(value, dict):
        return {storable(k): storable(v) for k, v in value.items()}
    return value


def storable_text(value: str, *, what: str, code: str) -> str:
    """`value`, if PostgreSQL can store it (`is_storable`); Invalid(code) otherwise."""
    if "\x00" in value:
        raise Invalid(f"{what} contains a NUL character.", code=code)
    if not is_storable(value):
        raise Invalid(f"{what} is not valid Unicode text.", code=code)
    return value


def clean_text(value: Any, *, what: str, max_chars: int, code: str,
               too_long_code: str | None = None, too_long: str | None = None) -> str:
    """A piece of text a caller searches or asks with (a query, a focus): text PostgreSQL
    can store, trimmed, at most `max_chars` (`too_long_code`, `too_long` when given).
    Invalid `code` otherwise. An empty result is the caller's to read as "none"."""
    if not isinstance(value, str):
        raise Invalid(f"{what} must be text.", code=code)
    text = storable_text(value, what=what, code=code).strip()
    if len(text) > max_chars:
        raise Invalid(too_long or f"{what} is longer than {max_chars} characters.",
                      code=too_long_code or code)
    return text


# The rules above as JSON Schema patterns (valid in ECMA-262 and Python `re` alike), for
# the documents that describe the arguments: text PostgreSQL can store (`is_storable`;
# JSON Schema has no way to say "valid Unicode", and a JSON parser yields it anyway),
# and such text with something besides whitespace (the services trim it first).
STORABLE_TEXT = r"^[^\u0000]*$"
# Exactly what `str.strip()` removes (`\s` differs between regex dialects).
_WHITESPACE = r"\t\n\u000b\u000c\r\u001c-\u001f \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029" \
              r"\u202f\u205f\u3000"
NONBLANK_TEXT = rf"^[^\u0000]*[^{_WHITESPACE}\u0000][^\u0000]*$"


def trimmed_at_most(max_chars: int) -> str:
    """A JSON Schema pattern for storable text that is at most `max_chars` long once
    trimmed (what `clean_text`-style cleaners check): whitespace, then up to `max_chars`
    characters that begin and end with something else, then whitespace."""
    inner = f"[^{_WHITESPACE}\\u0000]"
    return (f"^[{_WHITESPACE}]*({inner}([^\\u0000]{{0,{max_chars - 2}}}{inner})?)?"
            f"[{_WHITESPACE}]*$")


TIME_ZONE_MAX_CHARS = 64


def clean_time_zone(value: Any) -> Any:
    """An IANA time zone name (`America/Los_Angeles`, `UTC`) as a `ZoneInfo`; Invalid
    `invalid_time_zone` for anything else. Only names in the zone database count (a
    path such as `../etc` never reaches the file system)."""
    import zoneinfo

    if value is None or value == "":
        return zoneinfo.ZoneInfo("UTC")
    if not isinstance(value, str) or len(value) > TIME_ZONE_MAX_CHARS \
            or value not in zone_names():
        raise Invalid("timeZone must be an IANA time zone name such as UTC or "
                      "America/Los_Angeles.", code="invalid_time_zone")
    return zoneinfo.ZoneInfo(value)


# Files of a zone database that are not places: the machine's own setting, the build's
# placeholder and the POSIX rules template.
NOT_ZONES = frozenset({"localtime", "Factory", "posixrules"})


@functools.cache
def zone_names() -> frozenset[str]:
    """Every IANA zone name this Python knows (the system's zone database, or the
    `tzdata` package)."""
    import zoneinfo

    return frozenset(zoneinfo.available_timezones()) - NOT_ZONES
