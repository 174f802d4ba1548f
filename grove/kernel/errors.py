"""Domain errors. Services raise these; each interface maps them once (STYLE §6).

Every error has a stable machine `code` (part of the public contract) and an HTTP
`status` that REST uses; details travel camelCase, like all JSON (`wire_details`). MCP
reports code and details in a JSON text block of the error result.
"""

from __future__ import annotations

from typing import Any, ClassVar


class GroveError(Exception):
    status: ClassVar[int] = 400
    default_code: ClassVar[str] = "invalid"

    def __init__(self, message: str, *, code: str | None = None, **details: Any):
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        self.details = details

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"

    def wire_details(self) -> dict[str, Any]:
        """The details as clients read them: camelCase keys, no empty values."""
        from pydantic.alias_generators import to_camel

        return {to_camel(k): v for k, v in self.details.items() if v is not None}


class Invalid(GroveError):
    """The input is malformed or out of range. Nothing was changed."""

    status = 400
    default_code = "invalid_argument"


class NotFound(GroveError):
    """Missing, hidden or not yours: the same answer, so ids cannot be probed."""

    status = 404
    default_code = "not_found"


class Forbidden(GroveError):
    """The caller is known but lacks the capability or kind of session."""

    status = 403
    default_code = "forbidden"


class Conflict(GroveError):
    """The request is valid but clashes with the current state."""

    status = 409
    default_code = "conflict"


class Gone(GroveError):
    """The thing an operation refers to existed but has been deleted."""

    status = 410
    default_code = "gone"


class Unavailable(GroveError):
    """A dependency (e.g. the answer provider) failed; nothing was made up or changed."""

    status = 503
    default_code = "unavailable"


class RateLimited(GroveError):
    """Over a limit for now: retry after `retry_after` seconds. Nothing was done. REST
    answers 429 with a `Retry-After` header, MCP an error result naming `retryAfter`,
    the website its page or form with the wait."""

    status = 429
    default_code = "rate_limited"

    def __init__(self, message: str, *, retry_after: int, code: str | None = None,
                 **details: Any):
        super().__init__(message, code=code, retry_after=retry_after, **details)
        self.retry_after = retry_after


class ConfigError(Exception):
    """A configuration problem, phrased as the one line the user will read: found before
    Django starts (`grove.runtime.config`) or at start-up by the part that needs the
    setting (the embedded server, the embedding profile). The CLI prints that line and
    exits non-zero; nothing else should catch it. Not a `GroveError`: no caller's
    request caused it, so no interface answers it."""
