"""Django's ASGI handler, with a request's synchronous work in one trip to one thread.

Every Grove view and middleware is synchronous (the services hold a database
transaction; Python runs one thread at a time anyway). Django's own ASGI handler builds
an async middleware chain and, with sync middleware in it, crosses between the event
loop and a thread five times per request: the `request_started` signal, the middleware
chain, back to the loop for Django's innermost handler, the view, and `response.close()`
after the answer — and it starts a new thread for every request (and another to join
it). On two shared cores each crossing is a wake-up of another thread, measured at
0.3–1 ms each under load (docs/benchmarks.md, "HTTP overhead").

Here the same work runs in one trip: `request_started`, the (synchronous) middleware
chain and view, and — for an ordinary response — `response.close()` (`request_finished`:
the database connection goes back to the pool before the bytes are sent, not after).
A streamed response is closed after its content was sent, as Django does. The thread
is kept for the request after it (a few are kept idle); what Django keeps per thread —
the database connection — is closed at every `request_finished` as before
(`CONN_MAX_AGE = 0`), so nothing passes from one request to the next.

Async views (`POST /v1/ask`) still run on the event loop (Django's sync handler calls
them through `async_to_sync`), and a client that hangs up still cancels them: asgiref
passes the cancellation of the thread's caller on to the task it started on the loop
(`tests/ask/test_ask_disconnect.py`).
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from typing import Any

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.core.handlers.base import BaseHandler
from django.http import FileResponse, HttpRequest
from django.http.response import HttpResponseBase
from django.urls import set_script_prefix

IDLE_THREADS = 32  # threads kept between requests; more are let go


class RequestThreadHandler(ASGIHandler):
    def __init__(self) -> None:
        BaseHandler.__init__(self)
        self.load_middleware(is_async=False)  # one synchronous chain, entered once
        self._idle: list[ThreadPoolExecutor] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        executor = self._idle.pop() if self._idle else ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="grove-request")
        done = False
        try:
            async with ThreadSensitiveContext(executor=executor):
                await self.handle(scope, receive, send)
            done = True
        finally:
            # A cancelled request's thread may still be busy: only an idle one is kept.
            if done and len(self._idle) < IDLE_THREADS:
                self._idle.append(executor)
            else:
                executor.shutdown(wait=False)

    async def handle(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Django's `ASGIHandler.handle` (6.1), with the synchronous steps joined."""
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        with closing(body_file):
            set_script_prefix(get_script_prefix(scope))
            request, error_response = self.create_request(scope, body_file)
            if request is None:
                assert error_response is not None
                await signals.request_started.asend(sender=self.__class__, scope=scope)
                await self.send_response(error_response, send)
                await sync_to_async(error_response.close)()
                return

            class RequestProcessed(Exception):
                pass

            response = None
            try:
                try:
                    async with asyncio.TaskGroup() as tasks:
                        tasks.create_task(self.listen_for_disconnect(receive))
                        response = await sync_to_async(self.respond)(request, scope)
                        await self.send_response(response, send)
                        raise RequestProcessed
                except* (RequestProcessed, RequestAborted):
                    pass
            except BaseExceptionGroup as group:
                if len(group.exceptions) == 1:
                    raise group.exceptions[0] from None
                raise
            if response is None:  # the client left before the answer
                await signals.request_finished.asend(sender=self.__class__)
            elif response.streaming:  # its content was made while it was sent
                await sync_to_async(response.close)()

    def respond(self, request: HttpRequest, scope: dict[str, Any]) -> HttpResponseBase:
        """In the request's thread: everything synchronous a request needs."""
        signals.request_started.send(sender=self.__class__, scope=scope)
        response = self.get_response(request)
        response._handler_class = self.__class__  # type: ignore[attr-defined]
        if isinstance(response, FileResponse):
            response.block_size = self.chunk_size  # the server chunks the bytes itself
        if not response.streaming:
            response.close()  # request_finished: the connection back to the pool now
        return response
