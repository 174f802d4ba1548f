"""Where a request's time goes inside the web process: Grove's ASGI application
(`grove.asgi.application`, the limits layer in front of Django) driven in-process by a
small ASGI harness, with timers around each layer and every SQL statement.

Used by `bench/http_overhead.py`; the timers are wrappers that measure and call the
original (nothing of Grove is replaced). One request runs at a time, so one stack of
open layers is enough even though a request crosses threads (the event loop, the
request's thread for sync code).

Layers (ms per request; a layer's time includes the layers inside it):

* `asgi` — the whole application call, from the scope to the last body message;
* `limits` — `Limits.address_wait` (the per-address counter);
* `django.read_body`, `django.request_started` (the signal: connection housekeeping),
  `django.response_close` (after the answer is sent: `request_finished`, the connection
  handed back);
* `middleware` — the outermost middleware's call, in the request's thread (with
  Django's own ASGI handler it also holds two crossings to the event loop and back, for
  Django's innermost handler and the view); `handler` — URL resolution, `process_view`
  and the view (Django's innermost handler);
* `ninja` — the operation: `ninja.auth` (`auth.key_lookup` = `connection_authenticate`,
  whose `UPDATE grove_connection` statements are the last-contact writes),
  `ninja.throttle` (the per-connection counter), `ninja.parse` (body → pydantic),
  `service` (the service or selector the route calls), `ninja.render` (response model,
  `json` = the renderer and the HttpResponse);
* `db.connect` / `db.close` — taking a connection from the pool (and readying it) and
  handing it back;
* `sql` — time inside SQL statements, with their count, attributed to the innermost
  open layer (`sql@layer`).

Derived: `django_outside_chain` = `asgi` − `limits` − `middleware`; `hops_and_loop` =
that less the named Django steps (what is left: crossings between the event loop and the
request's thread, the thread's start, the loop's own work); `middleware_own` =
`middleware` − `handler`; `handler_own` = `handler` − `ninja`; `overhead` = `asgi` −
`service`.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any


class Probe:
    def __init__(self) -> None:
        self.stack: list[str] = []
        self.current: dict[str, float] = defaultdict(float)
        self.requests: list[dict[str, float]] = []
        self.undo: list[Callable[[], None]] = []

    def _enter(self, name: str) -> float:
        self.stack.append(name)
        return time.perf_counter()

    def _exit(self, name: str, started: float) -> None:
        self.current[name] += time.perf_counter() - started
        if self.stack and self.stack[-1] == name:
            self.stack.pop()
        elif name in self.stack:
            self.stack.remove(name)

    def wrap(self, owner: Any, attr: str, name: str) -> None:
        original = owner.__dict__[attr] if attr in getattr(owner, "__dict__", {}) \
            else getattr(owner, attr)
        probe = self
        if inspect.iscoroutinefunction(original):
            @functools.wraps(original)
            async def timed_async(*args: Any, **kwargs: Any) -> Any:
                started = probe._enter(name)
                try:
                    return await original(*args, **kwargs)
                finally:
                    probe._exit(name, started)
            replacement: Any = timed_async
        else:
            @functools.wraps(original)
            def timed(*args: Any, **kwargs: Any) -> Any:
                started = probe._enter(name)
                try:
                    return original(*args, **kwargs)
                finally:
                    probe._exit(name, started)
            replacement = timed
        setattr(owner, attr, replacement)
        self.undo.append(lambda: setattr(owner, attr, original))

    def wrap_sql(self) -> None:
        from django.db.backends import utils

        original = utils.CursorWrapper._execute
        probe = self

        def execute(cursor: Any, sql: str, params: Any, *ignored: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(cursor, sql, params, *ignored)
            finally:
                spent = time.perf_counter() - started
                where = probe.stack[-1] if probe.stack else "outside"
                probe.current["sql"] += spent
                probe.current["sql_statements"] += 1
                probe.current[f"sql@{where}"] += spent
                if sql.lstrip().upper().startswith('UPDATE "GROVE_CONNECTION"'):
                    probe.current["last_contact_updates"] += 1

        utils.CursorWrapper._execute = execute  # type: ignore[method-assign]
        self.undo.append(lambda: setattr(utils.CursorWrapper, "_execute", original))

    def start(self) -> None:
        """Forget what ran between requests (the bench's own queries)."""
        self.current = defaultdict(float)
        self.stack = []

    def finish(self) -> dict[str, float]:
        done = dict(self.current)
        self.requests.append(done)
        self.current = defaultdict(float)
        self.stack = []
        return done

    def close(self) -> None:
        while self.undo:
            self.undo.pop()()


def install(probe: Probe) -> None:
    """Wrap every layer named in the module docstring."""
    from django.core import signals
    from django.core.handlers.asgi import ASGIHandler
    from django.core.handlers.base import BaseHandler
    from django.db.backends.base.base import BaseDatabaseWrapper
    from django.http.response import HttpResponseBase
    from ninja.operation import Operation

    import notebooks.api
    import notebooks.services
    from grove.identity import services as identity_services
    from grove.interfaces import limits, middleware
    from grove.interfaces.rest import api
    from notebooks.selectors import recall as recall_module

    probe.wrap(limits.Limits, "__call__", "asgi")
    probe.wrap(limits.Limits, "address_wait", "limits")
    probe.wrap(ASGIHandler, "handle", "django")
    try:  # Grove's handler, where it has one (bench runs on older code too)
        from grove.interfaces.handler import RequestThreadHandler
    except ImportError:
        pass
    else:
        probe.wrap(RequestThreadHandler, "handle", "django")
        probe.wrap(RequestThreadHandler, "respond", "django.respond")
    probe.wrap(ASGIHandler, "read_body", "django.read_body")
    probe.wrap(ASGIHandler, "create_request", "django.create_request")
    probe.wrap(ASGIHandler, "send_response", "django.send_response")
    probe.wrap(signals.request_started, "asend", "django.request_started")
    probe.wrap(signals.request_started, "send", "django.request_started")
    probe.wrap(HttpResponseBase, "close", "django.response_close")
    probe.wrap(middleware.RequestIdMiddleware, "__call__", "middleware")
    probe.wrap(BaseHandler, "_get_response_async", "handler")
    probe.wrap(BaseHandler, "_get_response", "handler")
    probe.wrap(Operation, "run", "ninja")
    probe.wrap(Operation, "_run_authentication", "ninja.auth")
    probe.wrap(identity_services, "connection_authenticate", "auth.key_lookup")
    probe.wrap(Operation, "_check_throttles", "ninja.throttle")
    probe.wrap(Operation, "_get_values", "ninja.parse")
    probe.wrap(Operation, "_result_to_response", "ninja.render")
    probe.wrap(api, "create_response", "json")
    probe.wrap(recall_module, "recall", "service")
    assert notebooks.api.recall_service is recall_module
    probe.wrap(notebooks.services, "note_remember", "service")
    probe.wrap(BaseDatabaseWrapper, "connect", "db.connect")
    probe.wrap(BaseDatabaseWrapper, "close", "db.close")
    probe.wrap_sql()


def derived(layers: dict[str, float]) -> dict[str, float]:
    get = layers.get
    out = dict(layers)
    out["django_outside_chain"] = get("asgi", 0) - get("limits", 0) - get("middleware", 0)
    out["hops_and_loop"] = out["django_outside_chain"] - sum(get(name, 0) for name in (
        "django.read_body", "django.create_request", "django.send_response",
        "django.request_started", "django.response_close"))
    out["middleware_own"] = get("middleware", 0) - get("handler", 0)
    out["handler_own"] = get("handler", 0) - get("ninja", 0)
    out["ninja_glue"] = (get("ninja", 0) - get("ninja.auth", 0) - get("ninja.throttle", 0)
                         - get("ninja.parse", 0) - get("service", 0) - get("ninja.render", 0))
    out["render_model"] = get("ninja.render", 0) - get("json", 0)
    out["overhead"] = get("asgi", 0) - get("service", 0)
    return out


class Harness:
    """Requests to the ASGI application in this process, one at a time, on one event
    loop (as uvicorn would call it, minus the socket and the HTTP parsing)."""

    def __init__(self, host: str, key: str):
        from grove.asgi import application

        self.app = application
        self.host = host.encode()
        self.key = key.encode()
        self.loop = asyncio.new_event_loop()

    def request(self, method: str, path: str, body: bytes = b"",
                authorized: bool = True) -> tuple[int, bytes]:
        return self.loop.run_until_complete(self._request(method, path, body, authorized))

    async def _request(self, method: str, path: str, body: bytes,
                       authorized: bool) -> tuple[int, bytes]:
        headers = [(b"host", self.host), (b"user-agent", b"bench"), (b"accept", b"*/*")]
        if authorized:
            headers.append((b"authorization", b"Bearer " + self.key))
        if body:
            headers += [(b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode())]
        scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"},
                 "http_version": "1.1", "method": method, "scheme": "http", "path": path,
                 "raw_path": path.encode(), "query_string": b"", "root_path": "",
                 "headers": headers, "client": ("127.0.0.1", 50000),
                 "server": ("127.0.0.1", 8000)}
        sent = False
        status = 0
        chunks: list[bytes] = []

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.Future()  # the client stays (Django cancels this listener)
            raise AssertionError("unreachable")

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.app(scope, receive, send)
        return status, b"".join(chunks)

    def close(self) -> None:
        self.loop.close()
