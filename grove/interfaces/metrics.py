"""`/metrics` for Prometheus, and the timing of every request it reports.

`/metrics` answers only with `GROVE_METRICS_TOKEN` set: without it, the same 404 as any
unknown address (nothing advertises it); with it, 401 (`WWW-Authenticate: Bearer`)
unless the request carries `Authorization: Bearer <token>` (compared in constant time),
else the process's registry (`grove.kernel.metrics`, with the job families of
`grove.kernel.job_metrics`) in the exposition format the scraper asks for. Like `/healthz`
and `/readyz` it skips the per-address rate limit and the HTTPS redirect, so a
Prometheus inside the network can scrape each web process directly.

Wrong tokens are limited, the right one never is: each request's token is compared
first (in constant time); the right one is answered, always. A wrong one counts against
`FAILED_ATTEMPTS` a minute per client address (`grove.kernel.throttle.fixed_window`,
counted in `grove_rate_limit_refusals_total{scope="metrics"}`); past it, wrong tokens
from that address are answered 429 with `Retry-After` until the minute ends. So a
Prometheus that shares its address with a guesser (behind one NAT or proxy) keeps
scraping. A 200 after the 429s would tell a guesser it had found the token, but the token
is at least `METRICS_TOKEN_MIN_CHARS` (32) printable characters, so 30 guesses a minute
find nothing in any lifetime; refusing the right one too only locked Prometheus out.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.defaults import page_not_found
from prometheus_client.exposition import choose_encoder

from grove.kernel import metrics, throttle
from grove.kernel.job_metrics import JOBS  # noqa: F401 - registers the job families

FAILED_ATTEMPTS = 30  # wrong tokens a minute from one address before they get 429
WINDOW = 60


@csrf_exempt  # a POST must get the same 404 as at an unknown address, not a CSRF 403
def metrics_view(request: HttpRequest) -> HttpResponse:
    token: str | None = settings.GROVE_METRICS_TOKEN
    if not token:
        return page_not_found(request, Http404())
    if request.method not in ("GET", "HEAD"):
        return HttpResponse(status=405, headers={"Allow": "GET, HEAD"})
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not secrets.compare_digest(
            given.strip().encode(), token.encode()):
        wait = throttle.fixed_window(f"metrics:{throttle.address_key(request)}",
                                     limit=FAILED_ATTEMPTS, window=WINDOW)
        if wait is not None:
            return _too_many(wait)
        return HttpResponse("Send the metrics token: Authorization: Bearer <token>\n",
                            status=401, content_type="text/plain; charset=utf-8",
                            headers={"WWW-Authenticate": "Bearer", "Cache-Control": "no-store"})
    encode, content_type = choose_encoder(request.headers.get("Accept", ""))
    return HttpResponse(encode(metrics.REGISTRY), content_type=content_type,
                        headers={"Cache-Control": "no-store"})


def _too_many(wait: int) -> HttpResponse:
    return HttpResponse(f"Too many wrong metrics tokens from this address (limit "
                        f"{FAILED_ATTEMPTS} a minute); retry after {wait} seconds.\n",
                        status=429, content_type="text/plain; charset=utf-8",
                        headers={"Retry-After": str(wait), "Cache-Control": "no-store"})


class RequestMetricsMiddleware:
    """`grove_http_request_duration_seconds`: the outermost middleware, so the time is
    the whole of Django's work for the request (not reading the body, which Django does
    before any middleware, nor sending a streamed answer). The route is the URL pattern
    that matched (`v1/notes/<note_id>`), `static` for static files, `unmatched` for
    anything else — never the path, whose values are unbounded."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        match = request.resolver_match
        if match is not None:
            route = match.route
        elif request.path.startswith(settings.STATIC_URL or "/static/"):
            route = "static"
        else:
            route = "unmatched"
        metrics.observe_request(request.method or "", route, response.status_code,
                                time.perf_counter() - started)
        return response
