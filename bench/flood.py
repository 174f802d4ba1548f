"""Floods against a running Grove, and what a real user sees meanwhile.

Two floods, each from its own loopback source address (Linux routes all of 127/8 to
this machine), while one real user — from yet another address, with a valid API key —
reads notebooks and recalls in a loop:

* **bogus keys**: N clients at once, each on its own connection, sending requests with
  made-up, well-formed API keys (each one looked up) as fast as answers come;
* **big bodies**: anonymous POSTs of a large body (Content-Length declared, and chunked
  without one), counting how many bytes the server made its temp folder hold.

    .venv/bin/python bench/flood.py --url http://127.0.0.1:8000 --key grv_… \\
        [--clients 230] [--seconds 20]

The test suite runs the same functions against a real `grove serve`
(tests/grove/interfaces/test_limits.py); docs/benchmarks.md quotes a run of this script.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import statistics
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

FLOOD_ADDRESS = "127.0.0.3"
USER_ADDRESS = "127.0.0.2"
BODY_ADDRESS = "127.0.0.4"


@dataclass
class Outcome:
    flood: Counter[int] = field(default_factory=Counter)
    flood_errors: Counter[str] = field(default_factory=Counter)
    user: Counter[int] = field(default_factory=Counter)
    user_errors: Counter[str] = field(default_factory=Counter)
    user_latencies: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        latencies = sorted(self.user_latencies)

        def quantile(q: float) -> float | None:
            if not latencies:
                return None
            return round(latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000, 1)

        return {
            "flood_statuses": dict(sorted(self.flood.items())),
            "flood_errors": dict(self.flood_errors),
            "user_statuses": dict(sorted(self.user.items())),
            "user_errors": dict(self.user_errors),
            "user_answers": len(latencies),
            "user_median_ms": round(statistics.median(latencies) * 1000, 1) if latencies else None,
            "user_p95_ms": quantile(0.95),
            "user_max_ms": round(latencies[-1] * 1000, 1) if latencies else None,
        }


async def _flooder(client: httpx.AsyncClient, number: int, stop: float,
                   outcome: Outcome) -> None:
    while time.monotonic() < stop:
        # Well-formed (so each one is looked up in the database), and unknown.
        bogus = f"grv_{secrets.token_urlsafe(32)}{uuid.uuid4().hex}"
        try:
            answer = await client.get("/v1/notebooks",
                                      headers={"Authorization": f"Bearer {bogus}"})
            outcome.flood[answer.status_code] += 1
        except httpx.HTTPError as exc:
            outcome.flood_errors[type(exc).__name__] += 1
            await asyncio.sleep(0.05)


def _user(url: str, key: str, stop: float, outcome: Outcome) -> None:
    transport = httpx.HTTPTransport(local_address=USER_ADDRESS)
    with httpx.Client(base_url=url, transport=transport, timeout=60,
                      headers={"Authorization": f"Bearer {key}"}) as client:
        turn = 0
        while time.monotonic() < stop:
            started = time.monotonic()
            try:
                if turn % 2:
                    answer = client.post("/v1/recall", json={"query": "tomatoes"})
                else:
                    answer = client.get("/v1/notebooks")
                outcome.user[answer.status_code] += 1
                if answer.status_code == 200:
                    outcome.user_latencies.append(time.monotonic() - started)
            except httpx.HTTPError as exc:
                outcome.user_errors[type(exc).__name__] += 1
            turn += 1
            time.sleep(0.2)


async def _flood(url: str, clients: int, seconds: float) -> Outcome:
    outcome = Outcome()
    transport = httpx.AsyncHTTPTransport(local_address=FLOOD_ADDRESS, limits=httpx.Limits(
        max_connections=clients, max_keepalive_connections=clients))
    async with httpx.AsyncClient(base_url=url, transport=transport, timeout=60) as flood:
        stop = time.monotonic() + seconds
        await asyncio.gather(*(_flooder(flood, n, stop, outcome) for n in range(clients)))
    return outcome


def _flood_process(url: str, clients: int, seconds: float, results: Any) -> None:
    outcome = asyncio.run(_flood(url, clients, seconds))
    results.put((dict(outcome.flood), dict(outcome.flood_errors)))


def bogus_key_flood(url: str, key: str, *, clients: int = 230, seconds: float = 20) -> Outcome:
    """`clients` requests with made-up keys in flight at once, each on its own connection,
    for `seconds` — from a process of their own, so that the real user's latencies,
    measured here, are the server's and not the flood client's."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    flood = context.Process(target=_flood_process, args=(url, clients, seconds, results))
    flood.start()
    outcome = Outcome()
    time.sleep(1.0)  # the flood is under way before the user starts
    _user(url, key, time.monotonic() + seconds - 1.5, outcome)
    statuses, errors = results.get(timeout=seconds + 120)
    flood.join()
    outcome.flood.update(statuses)
    outcome.flood_errors.update(errors)
    return outcome


def big_body(url: str, path: str, size: int, *, chunked: bool) -> dict[str, Any]:
    """An anonymous POST of `size` bytes to `path`, declared (Content-Length) or streamed
    in 64 KiB chunks: the answer's status (None when the server closed the connection
    without one), how many bytes the server took before it answered, and how long it
    took."""
    chunk = b"x" * 65536
    sent = 0

    def stream():
        nonlocal sent
        while sent < size:
            sent += len(chunk)
            yield chunk

    started = time.monotonic()
    headers = {"Content-Type": "application/json"}
    if not chunked:
        headers["Content-Length"] = str(size)
    transport = httpx.HTTPTransport(local_address=BODY_ADDRESS)
    status = None
    try:
        with httpx.Client(transport=transport, timeout=120) as client:
            status = client.post(url + path, content=stream(), headers=headers).status_code
    except httpx.HTTPError:
        pass
    return {"status": status, "sent_mib": round(sent / 1024 ** 2, 1),
            "seconds": round(time.monotonic() - started, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--key", required=True, help="a valid API key (the real user)")
    parser.add_argument("--clients", type=int, default=230)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results"
                        / "flood.json")
    args = parser.parse_args()
    outcome = bogus_key_flood(args.url, args.key, clients=args.clients, seconds=args.seconds)
    result = {"clients": args.clients, "seconds": args.seconds, **outcome.summary()}
    result["one_gib_anonymous_post"] = {
        "chunked" if chunked else "declared": big_body(args.url, "/v1/notes", 1024 ** 3,
                                                       chunked=chunked)
        for chunked in (False, True)}
    print(json.dumps(result, indent=2))
    args.out.parent.mkdir(exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
