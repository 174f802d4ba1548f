"""A mixed recall/remember load against a running Grove, as agents make it: each client
is a closed loop of requests over its own keep-alive connection.

Used by `bench/scaleout.py` (two web processes behind a proxy, processes killed mid-run)
and `bench/held_load.py` (ten minutes against `grove serve`). Every save carries an
operation id; a save that fails without an answer (a dropped connection, a 5xx) is
retried with the same id, as a client should, and the log keeps each attempt so the
checks afterwards can hold Grove to "retried operation ids made no duplicates".

    mix: recall 55 %, remember 25 %, get a saved note 12 %, keyword search 8 %.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx

from bench.common import percentile

TOPICS = (
    "compost turning schedule", "tomato seedlings need light", "release checklist for the "
    "API", "database backup rotation", "the kettle descaling routine", "rotating the API "
    "keys", "bike chain lubrication", "the garden irrigation timer", "monthly invoice "
    "review", "replacing the smoke alarm batteries", "sourdough starter feeding",
    "the staging deploy steps", "tax documents to keep", "houseplant watering rules",
)
WORDS = ("quickly", "weekly", "carefully", "before noon", "after rain", "in winter",
         "with gloves", "twice", "on Fridays", "by the window", "for the team", "again")
MIX = (("recall", 55), ("remember", 25), ("get", 12), ("search", 8))
RETRIES = 6


def sentence(rng: random.Random) -> str:
    return (f"{rng.choice(TOPICS).capitalize()}: do it {rng.choice(WORDS)}, "
            f"then {rng.choice(WORDS)} ({rng.randrange(10**6)}).")


@dataclass
class Sample:
    kind: str
    started: float  # monotonic seconds since the load began
    seconds: float
    status: int  # 0: no answer (connection refused, reset, timed out)
    error: str = ""


@dataclass
class Save:
    operation_id: str
    content: str
    attempts: list[int] = field(default_factory=list)  # each attempt's status (0: none)
    note_id: str | None = None


@dataclass
class LoadResult:
    seconds: float
    samples: list[Sample]
    saves: list[Save]

    def summary(self) -> dict[str, Any]:
        ok = [s for s in self.samples if 200 <= s.status < 300]
        errors = [s for s in self.samples if s.status == 0 or s.status >= 500]
        refused = [s for s in self.samples if 400 <= s.status < 500]
        by_kind = {}
        for kind, _ in MIX:
            times = [s.seconds * 1000 for s in ok if s.kind == kind]
            by_kind[kind] = {"n": len(times), "p50_ms": round(percentile(times, 50), 1),
                             "p95_ms": round(percentile(times, 95), 1)}
        all_ms = [s.seconds * 1000 for s in ok]
        return {
            "seconds": round(self.seconds, 1),
            "requests": len(self.samples),
            "requests_per_second": round(len(self.samples) / self.seconds, 1),
            "ok": len(ok),
            "errors": len(errors),
            "error_rate": round(len(errors) / max(1, len(self.samples)), 5),
            "error_kinds": sorted({s.error or str(s.status) for s in errors}),
            "client_errors_4xx": len(refused),
            "p50_ms": round(percentile(all_ms, 50), 1),
            "p95_ms": round(percentile(all_ms, 95), 1),
            "p99_ms": round(percentile(all_ms, 99), 1),
            "by_kind": by_kind,
            "saves": len(self.saves),
            "saves_stored": sum(1 for s in self.saves if s.note_id),
            "saves_retried": sum(1 for s in self.saves if len(s.attempts) > 1),
        }


class Load:
    def __init__(self, base_url: str, keys: list[str], *, clients: int, seconds: float,
                 seed: int = 7, timeout: float = 30, rate: float | None = None):
        """rate: requests per second per client, spaced evenly with a random start (an
        agent between steps); None: each client sends its next request as soon as it
        has the answer (a closed loop: it finds the most the server can do)."""
        self.base_url = base_url
        self.rate = rate
        self.keys = keys
        self.clients = clients
        self.seconds = seconds
        self.seed = seed
        self.timeout = timeout
        self.samples: list[Sample] = []
        self.saves: list[Save] = []
        self.saved_ids: list[str] = []
        self._start = 0.0

    def run(self) -> LoadResult:
        return asyncio.run(self._run())

    async def _run(self) -> LoadResult:
        self._start = time.monotonic()
        deadline = self._start + self.seconds
        await asyncio.gather(*(self._client(i, deadline) for i in range(self.clients)))
        return LoadResult(time.monotonic() - self._start, self.samples, self.saves)

    def _http(self, index: int) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self.base_url, timeout=self.timeout,
            headers={"Authorization": f"Bearer {self.keys[index % len(self.keys)]}"},
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1))

    async def _client(self, index: int, deadline: float) -> None:
        rng = random.Random(self.seed * 1000 + index)  # noqa: S311 - a repeatable mix
        kinds = [kind for kind, weight in MIX for _ in range(weight)]
        http = self._http(index)
        interval = 1 / self.rate if self.rate else 0.0
        due = time.monotonic() + rng.random() * interval
        try:
            while time.monotonic() < deadline:
                scheduled = None
                if interval:
                    # Latency counts from when the request was due, not when it could be
                    # sent: a slow answer delays the next request, and that wait is the
                    # server's too (no coordinated omission). Requests are never dropped.
                    await asyncio.sleep(max(0.0, due - time.monotonic()))
                    scheduled, due = due, due + interval
                kind = rng.choice(kinds)
                if kind == "get" and not self.saved_ids:
                    kind = "recall"
                if kind == "remember":
                    http = await self._remember(http, index, rng, scheduled)
                else:
                    http = await self._once(http, index, kind, rng, scheduled)
        finally:
            await http.aclose()

    async def _request(self, http: httpx.AsyncClient, kind: str, method: str, path: str,
                       scheduled: float | None = None,
                       **kwargs: Any) -> tuple[httpx.AsyncClient, httpx.Response | None]:
        started = time.monotonic()
        if scheduled is not None:  # a paced request counts from when it was due
            started = min(started, scheduled)
        try:
            response = await http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            self.samples.append(Sample(kind, started - self._start, time.monotonic() - started,
                                       0, type(exc).__name__))
            return http, None
        self.samples.append(Sample(kind, started - self._start, time.monotonic() - started,
                                   response.status_code))
        return http, response

    async def _once(self, http: httpx.AsyncClient, index: int, kind: str,
                    rng: random.Random, scheduled: float | None) -> httpx.AsyncClient:
        if kind == "recall":
            http, answer = await self._request(
                http, kind, "POST", "/v1/recall", scheduled,
                json={"query": f"{rng.choice(TOPICS)} {rng.choice(WORDS)}", "limit": 5})
        elif kind == "get":
            http, answer = await self._request(
                http, kind, "GET", f"/v1/notes/{rng.choice(self.saved_ids)}", scheduled)
        else:
            http, answer = await self._request(
                http, kind, "GET", "/v1/notes", scheduled,
                params={"query": rng.choice(TOPICS).split()[0]})
        if answer is None:  # the connection is gone: a new one (another backend)
            await http.aclose()
            return self._http(index)
        return http

    async def _remember(self, http: httpx.AsyncClient, index: int, rng: random.Random,
                        scheduled: float | None) -> httpx.AsyncClient:
        save = Save(operation_id=str(uuid.uuid4()), content=sentence(rng))
        self.saves.append(save)
        body = {"content": save.content, "kind": "fact", "operationId": save.operation_id}
        for attempt in range(RETRIES):
            http, answer = await self._request(http, "remember", "POST", "/v1/notes",
                                               scheduled if attempt == 0 else None, json=body)
            save.attempts.append(0 if answer is None else answer.status_code)
            if answer is not None and answer.status_code in (200, 201):
                save.note_id = answer.json()["data"]["id"]
                self.saved_ids.append(save.note_id)
                return http
            if answer is not None and answer.status_code < 500:
                return http  # refused: retrying the same request changes nothing
            await http.aclose()
            http = self._http(index)
            await asyncio.sleep(0.2 * (attempt + 1))
        return http
