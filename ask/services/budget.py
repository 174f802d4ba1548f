"""The model-call budget (issue 36 item 2.3): how many calls to the answer model a
connection and an account may cause a minute, counted **before** a call is made.

The one place that decides, for every path that calls a model: a stateless ask
(`POST /v1/ask`, `/v1/tools/ask`, the `ask` MCP tool), a conversation turn when it is
asked, re-asked or retried (the website's Ask and REST) — tidy-ups included —, the
check of an agent's write against ground truth, and the verdict on a held change.

* **Per connection** `GROVE_MODEL_CALLS_PER_CONNECTION` (default 10) and **per account**
  `GROVE_MODEL_CALLS_PER_ACCOUNT` (default 30) calls a minute; 0 turns one off. The
  owner's website session counts against the account only. A connection over its own
  limit is refused before the account is counted, so one flooding key does not spend
  the others' share.
* Counted in fixed one-minute windows by `grove.kernel.throttle.fixed_window`: atomic
  in the cache (Redis when configured, shared by every process; else each process's
  memory — the web process counts asks, turns and write checks, the worker the
  verdicts on held changes). A refused attempt counts too, as with every fixed window.
* Over either limit → `RateLimited` (429 `model_budget_exceeded`, `Retry-After`: the
  seconds until the window ends); nothing is called, queued or stored.
* A turn is counted when it is accepted, as the calls it will make: its answer, and for
  a follow-up (a turn after the first, without `only` or tidy) the rewrite of the
  question into a standalone one. Grove's own re-runs of a job (after a worker died)
  are not counted again.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from ask import providers
from grove.kernel import throttle
from grove.kernel.actor import Actor
from grove.kernel.errors import RateLimited

WINDOW = 60  # seconds: the budgets are calls a minute
CODE = "model_budget_exceeded"


def _over(key: str, *, limit: int, calls: int) -> int | None:
    """Count `calls` under `key`; the seconds to wait when that goes over `limit`."""
    wait = None
    for _ in range(calls):
        wait = throttle.fixed_window(key, limit=limit, window=WINDOW) or wait
    return wait


def model_calls_charge(*, actor: Actor, calls: int = 1) -> None:
    """Count `calls` model calls the caller is about to cause, before any is made.
    Raises RateLimited (429 `model_budget_exceeded`, with `retry_after`) when they go
    over the connection's or the account's budget this minute; then nothing may call
    the model."""
    if calls <= 0:
        return
    per_connection = settings.GROVE_MODEL_CALLS_PER_CONNECTION
    if per_connection and actor.connection_id is not None:
        wait = _over(f"model:c:{actor.connection_id}", limit=per_connection, calls=calls)
        if wait is not None:
            raise _refused("this connection", per_connection, wait)
    per_account = settings.GROVE_MODEL_CALLS_PER_ACCOUNT
    if per_account:
        wait = _over(f"model:a:{actor.account_id}", limit=per_account, calls=calls)
        if wait is not None:
            raise _refused("this account", per_account, wait)


def turn_model_calls(*, position: int, context: dict[str, Any] | None,
                     tidy: dict[str, Any] | None) -> int:
    """The model calls the turn at `position` will make (`ask.generation`): none without
    a model; its answer; and for a follow-up — a later turn that may use the earlier
    ones, so not strict (`only`) and not a tidy-up — the standalone rewrite first."""
    if not providers.configured():
        return 0
    follow_up = position > 1 and not tidy and not (context and context.get("only"))
    return 2 if follow_up else 1


def _refused(whose: str, limit: int, wait: int) -> RateLimited:
    return RateLimited(
        f"The answer model's budget for {whose} ({limit} call{'s' if limit != 1 else ''} "
        f"a minute) is spent; nothing was asked or saved. Try again in {wait} "
        f"second{'s' if wait != 1 else ''}.",
        retry_after=wait, code=CODE, limit=limit)
