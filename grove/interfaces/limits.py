"""Limits that apply before any work: an ASGI layer in front of Django.

Django's ASGI handler reads (and spools to disk) the whole request body before any
middleware or view runs, and every request it runs holds a thread and, once it queries,
a database connection. So, before Django sees a request:

1. **Body size.** A `Content-Length` over the limit is answered 413 at once; a body sent
   without one (chunked) is counted as it streams and answered 413 the moment it passes
   the limit — Django is told the client left and never reads on. The limit is
   `GROVE_API_MAX_BODY` everywhere, except the uploads (an export or archive to import,
   a folder or zip to ingest), which may be `GROVE_IMPORT_MAX_BODY` for a signed-in session
   (checked here, so an anonymous upload is held to the small limit too).
2. **Requests per client address.** `GROVE_ADDRESS_RATE_LIMIT` requests a minute per
   address — the client's: the peer's, or behind a trusted proxy the one it names
   (`grove.kernel.addresses`) — static files and the health check aside, counted before
   any credential is looked up; over it → 429 with `Retry-After`, answered after a
   second's pause so that a flood retrying at once cannot keep the server busy refusing
   it. The per-connection limit (`grove.kernel.throttle.connection_wait`) applies after
   authentication on top of it.
3. **Concurrency.** At most `GROVE_MAX_CONCURRENT_REQUESTS` requests run inside Django at
   once, and at most half of them from any one address (static files and the health
   check aside); the rest wait their turn here (a coroutine each, no thread, no
   connection). More would not answer faster — Python runs one thread at a time — and
   the per-address half keeps a flood from one address from taking every slot, while
   one address (the owner's browser and agents on one machine) still has room for slow
   requests such as an Ask. A flood from one address therefore
   queues behind itself while everyone else still finds a free slot, and never exhausts
   the database's connections: the pool (settings `DATABASES`) is sized below the
   server's limit and waits rather than fails.

Answers are the caller's dialect: the `/v1` error envelope, a JSON-RPC error for `/mcp`,
plain text elsewhere. Each refusal is counted in `grove_http_request_duration_seconds`
with the route `refused` (Django, which would name the route, never sees it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings

from grove.kernel import metrics, throttle
from grove.kernel.addresses import limit_key, scope_address

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[..., Awaitable[None]]

UPLOAD_PATHS = ("/settings/import", "/settings/import-archive", "/ingest/")
EXEMPT_PREFIXES = ("/static/",)
EXEMPT_PATHS = ("/healthz", "/readyz", "/metrics", "/favicon.ico")
WINDOW = 60
REFUSAL_DELAY = 1.0  # seconds an over-the-limit address waits for its 429


def _headers(scope: Scope) -> dict[str, str]:
    return {name.decode("latin-1").lower(): value.decode("latin-1")
            for name, value in scope.get("headers", [])}


def refusal(path: str, status: int, code: str, message: str,
            extra: dict[str, str] | None = None) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """(headers, body) of an answer given before Django: in the caller's dialect."""
    request_id = uuid.uuid4().hex
    if path.startswith("/v1/") or path == "/v1":
        body = json.dumps({"success": False, "error": {
            "code": code, "message": message, "requestId": request_id}}).encode()
        kind = b"application/json"
    elif path == "/mcp":
        body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {
            "code": -32600, "message": message, "data": {"code": code}}}).encode()
        kind = b"application/json"
    else:
        body = f"{message}\n".encode()
        kind = b"text/plain; charset=utf-8"
    headers = [(b"content-type", kind), (b"content-length", str(len(body)).encode()),
               (b"x-request-id", request_id.encode()), (b"connection", b"close")]
    headers += [(name.encode(), value.encode()) for name, value in (extra or {}).items()]
    return headers, body


async def _answer(send: Send, path: str, status: int, code: str, message: str,
                  extra: dict[str, str] | None = None) -> None:
    headers, body = refusal(path, status, code, message, extra)
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _signed_in(cookie_header: str) -> bool:
    """Whether the request's session cookie names a signed-in session (run in a thread:
    it reads the session store)."""
    from importlib import import_module

    from django.contrib.auth import SESSION_KEY
    from django.db import connections
    from django.http.cookie import parse_cookie

    key = parse_cookie(cookie_header).get(settings.SESSION_COOKIE_NAME)
    if not key:
        return False
    try:
        store = import_module(settings.SESSION_ENGINE).SessionStore(key)
        return SESSION_KEY in store.load()
    finally:
        connections.close_all()


class Gate:
    """`total` requests at once, at most `per_address` of them from one address; waiting
    requests queue per address (the queue of an address is forgotten when it empties)."""

    def __init__(self, total: int, per_address: int):
        self.total = asyncio.Semaphore(total)
        self.per_address = per_address
        self.queues: dict[str, tuple[asyncio.Semaphore, list[int]]] = {}

    @contextlib.asynccontextmanager
    async def enter(self, address: str) -> AsyncIterator[None]:
        own, users = self.queues.setdefault(
            address, (asyncio.Semaphore(self.per_address), [0]))
        users[0] += 1
        try:
            async with own, self.total:
                yield
        finally:
            users[0] -= 1
            if not users[0]:
                del self.queues[address]


class Limits:
    """The ASGI application in front of Django (see the module docstring)."""

    def __init__(self, app: ASGIApp):
        self.app = app
        self._gate: Gate | None = None

    def gate(self) -> Gate:
        if self._gate is None:  # made inside the server's event loop
            total = max(1, settings.GROVE_MAX_CONCURRENT_REQUESTS)
            self._gate = Gate(total, max(1, total // 2))
        return self._gate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        path: str = scope.get("path", "")
        headers = _headers(scope)
        address = limit_key(scope_address(scope))
        if not (path.startswith(EXEMPT_PREFIXES) or path in EXEMPT_PATHS):
            wait = await self.address_wait(address)
            if wait is not None:
                # Over the limit the answer takes a moment: a client that retries at once
                # (a flood does) costs the server a sleeping coroutine, not a busy loop.
                await asyncio.sleep(REFUSAL_DELAY)
                await _answer(send, path, 429, "rate_limited",
                              f"Too many requests from this address (limit "
                              f"{settings.GROVE_ADDRESS_RATE_LIMIT} per minute); retry after "
                              "the number of seconds in Retry-After.",
                              {"retry-after": str(wait)})
                _observe_refusal(scope, 429, started)
                return
        limit = await self.body_limit(path, headers)
        length = headers.get("content-length", "")
        if length.strip().isdigit() and int(length) > limit:
            await _answer(send, path, 413, "payload_too_large",
                          f"Request bodies are limited to {limit:,} bytes here.")
            _observe_refusal(scope, 413, started)
            return
        guarded = _Guarded(send, scope, started)
        # Outside the gate: probes and scrapes must answer when every slot is taken.
        if path.startswith(EXEMPT_PREFIXES) or path in EXEMPT_PATHS:
            await self.app(scope, _Counted(receive, guarded, path, limit), guarded)
            return
        async with self.gate().enter(address):
            await self.app(scope, _Counted(receive, guarded, path, limit), guarded)

    async def address_wait(self, address: str) -> int | None:
        """Seconds to wait when this address is over its limit this minute (the request
        is counted either way), else None."""
        limit = settings.GROVE_ADDRESS_RATE_LIMIT
        if not limit:
            return None
        return await throttle.fixed_window_async(f"addr:{throttle.hashed(address)}",
                                                 limit=limit, window=WINDOW)

    async def body_limit(self, path: str, headers: dict[str, str]) -> int:
        small: int = settings.GROVE_API_MAX_BODY
        if path not in UPLOAD_PATHS or headers.get("content-length", "").strip() in ("0",):
            return small
        length = headers.get("content-length", "")
        if length.strip().isdigit() and int(length) <= small:
            return small
        cookies = headers.get("cookie", "")
        if cookies and await sync_to_async(_signed_in, thread_sensitive=False)(cookies):
            return int(settings.GROVE_IMPORT_MAX_BODY)
        return small


def _observe_refusal(scope: Scope, status: int, started: float) -> None:
    metrics.observe_request(scope.get("method", ""), "refused", status,
                            time.perf_counter() - started)


class _Guarded:
    """Django's `send`, silenced once this layer has answered for it."""

    def __init__(self, send: Send, scope: Scope, started: float):
        self.send, self.scope, self.started = send, scope, started
        self.answered = False

    async def __call__(self, message: Message) -> None:
        if not self.answered:
            await self.send(message)

    async def refuse(self, path: str, status: int, code: str, message: str) -> None:
        self.answered = True
        await _answer(self.send, path, status, code, message)
        _observe_refusal(self.scope, status, self.started)


class _Counted:
    """Django's `receive`: counts body bytes; past the limit it answers 413 itself and
    tells Django the client has gone (Django then stops reading and answers nothing)."""

    def __init__(self, receive: Receive, send: _Guarded, path: str, limit: int):
        self.receive, self.send, self.path, self.limit = receive, send, path, limit
        self.seen = 0
        self.refused = False

    async def __call__(self) -> Message:
        if self.refused:
            return {"type": "http.disconnect"}
        message = await self.receive()
        if message["type"] == "http.request":
            self.seen += len(message.get("body", b""))
            if self.seen > self.limit:
                self.refused = True
                await self.send.refuse(self.path, 413, "payload_too_large",
                                       f"Request bodies are limited to {self.limit:,} bytes "
                                       "here.")
                return {"type": "http.disconnect"}
        return message
