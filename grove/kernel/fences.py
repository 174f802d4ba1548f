"""Optimistic concurrency: a change names the version it was made against (SPEC §3).

Every expected-version check goes through `expect_version` (`is_stale` where a batch
reports it per item rather than refusing) — a note's `expectedVersion`,
a conversation's, a connection's `expectedState` — so a stale change is refused the same
way everywhere: a `Conflict` naming what is current, before anything is written.
"""

from __future__ import annotations

from typing import Any

from grove.kernel.errors import Conflict


def is_stale(*, actual: Any, expected: Any) -> bool:
    """Whether a change made against `expected` meets `actual` (None: not fenced)."""
    return expected is not None and expected != actual


def expect_version(*, what: str, actual: Any, expected: Any, code: str = "version_conflict",
                   message: str | None = None, name_current: bool = True,
                   **details: Any) -> None:
    """Refuse the change unless `expected` is None (not fenced) or equals `actual`.

    The Conflict carries `code`, `actual` as `currentVersion` (unless
    `name_current` is false: the caller's details say it their own way) and any other
    `details`; `message` replaces the default "The <what> is at version …"."""
    if not is_stale(actual=actual, expected=expected):
        return
    if name_current:
        details["current_version"] = actual
    raise Conflict(
        message or f"The {what} is at version {actual}, not {expected}; read it again and "
        "retry.", code=code, **details)
