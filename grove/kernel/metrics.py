"""What this process measures for Prometheus (`/metrics`, issue 23 item 4).

One registry per process, not prometheus_client's global one, so `/metrics` shows
exactly Grove's families (and the process's own: CPU, memory, open files). The
instruments are module-level objects, as prometheus_client intends: each is a
thread-safe set of numbers, not a client or a model; every floor and app records into
them, and `grove.interfaces.metrics` exposes the registry.

* `grove_http_request_duration_seconds{method, route, status}` — a request's time in
  Django (`grove.interfaces.metrics.RequestMetricsMiddleware`); `route` is the URL
  pattern, never the path, so its values are as few as the routes.
* `grove_recall_arm_duration_seconds{arm}` — each stage of a recall (`timed`, `stage`;
  the stages are named in `notebooks.selectors.recall`).
* `grove_rate_limit_refusals_total{scope}` — every refusal of a rate limit
  (`grove.kernel.throttle`, which every 429 of a limit goes through; `metrics`: wrong
  `/metrics` tokens, `grove.interfaces.metrics`).

The job families are read from the database at scrape time (`grove.kernel.job_metrics`).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from prometheus_client import CollectorRegistry, Counter, Histogram, ProcessCollector

REGISTRY = CollectorRegistry()
ProcessCollector(registry=REGISTRY)

HTTP_REQUEST_SECONDS = Histogram(
    "grove_http_request_duration_seconds",
    "Time from Django receiving a request to its response, by URL pattern "
    "('refused': answered by the limits before Django).",
    ("method", "route", "status"), registry=REGISTRY)

# Recall's stages take milliseconds: finer buckets at the bottom than the default's 5 ms.
RECALL_STAGE_SECONDS = Histogram(
    "grove_recall_arm_duration_seconds",
    "Time of each stage of recall (the lexical and semantic arms and their fusion run as "
    "one statement: 'search').",
    ("arm",), registry=REGISTRY,
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
             float("inf")))

RATE_LIMIT_REFUSALS = Counter(
    "grove_rate_limit_refusals",
    "Requests refused by a rate limit (429), by limit.",
    ("scope",), registry=REGISTRY)

# The rate limits, by the prefix of their counter's name (`grove.kernel.throttle`) — a
# fixed set, so a label value can never come from a request.
REFUSAL_SCOPES = {"addr": "address", "rate": "connection", "register": "registration",
                  "preview": "preview", "public": "public", "login": "login",
                  "metrics": "metrics", "model": "model", "client": "client_auth"}

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def refused(counter_name: str) -> None:
    """Count one refusal of the limit whose counter is `counter_name` (`addr:…`)."""
    scope = REFUSAL_SCOPES.get(counter_name.split(":", 1)[0], "other")
    RATE_LIMIT_REFUSALS.labels(scope=scope).inc()


def observe_request(method: str, route: str, status: int, seconds: float) -> None:
    """Record one answered request. A method outside the standard ones counts as
    `other`: the label must not take whatever a client sends."""
    HTTP_REQUEST_SECONDS.labels(method=method if method in METHODS else "other",
                                route=route, status=f"{status // 100}xx").observe(seconds)


class Stopwatch:
    """Seconds per named stage of one call; each stage is also observed in `histogram`."""

    def __init__(self, histogram: Histogram):
        self.histogram = histogram
        self.seconds: dict[str, float] = {}

    @contextmanager
    def lap(self, name: str) -> Iterator[None]:
        """Time the block as stage `name` (a stage that raised is not recorded)."""
        started = time.perf_counter()
        yield
        elapsed = time.perf_counter() - started
        self.seconds[name] = self.seconds.get(name, 0.0) + elapsed
        self.histogram.labels(name).observe(elapsed)

    def milliseconds(self) -> dict[str, float]:
        return {name: round(seconds * 1000, 3) for name, seconds in self.seconds.items()}


_running: ContextVar[Stopwatch | None] = ContextVar("grove_stopwatch", default=None)


@contextmanager
def stopwatch(histogram: Histogram) -> Iterator[Stopwatch]:
    """A stopwatch for one call, its whole time the stage `total`; the `stage` blocks
    run inside it (in this thread or task) are its other stages."""
    watch = Stopwatch(histogram)
    token = _running.set(watch)
    try:
        with watch.lap("total"):
            yield watch
    finally:
        _running.reset(token)


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Time the block as stage `name` of the running `stopwatch` (none: not timed)."""
    watch = _running.get()
    if watch is None:
        yield
        return
    with watch.lap(name):
        yield


def timed[**P, R](histogram: Histogram, *, report: Callable[[R, dict[str, float]], R]
                  ) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Run each call of the decorated function under a `stopwatch` of `histogram`; a
    call made with `timings=True` returns `report(result, milliseconds per stage)`."""

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(function)
        def measured(*args: P.args, **kwargs: P.kwargs) -> R:
            with stopwatch(histogram) as watch:
                result = function(*args, **kwargs)
            return report(result, watch.milliseconds()) if kwargs.get("timings") else result

        return measured

    return decorate
