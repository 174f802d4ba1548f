"""`/healthz`: whether this process can serve (the database answers). `/readyz`:
whether this Grove can do its work — database, migrations, broker, a live worker
(`grove.runtime.readiness`). The runtime's own endpoints, beside the checks they
report, for the probes of a load balancer, compose or a service manager."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse

from grove.runtime.readiness import database, readiness


def healthz(request: HttpRequest) -> HttpResponse:
    """Liveness and database reachability, for load balancers and compose."""
    if database() is not None:
        return HttpResponse("database unavailable\n", status=503, content_type="text/plain")
    return HttpResponse("ok\n", content_type="text/plain")


def readyz(request: HttpRequest) -> HttpResponse:
    """200 with every check "ok", or 503 naming what is wrong and what to do."""
    found = readiness()
    ready = all(problem is None for problem in found.values())
    return JsonResponse({"ready": ready, "checks": {
        name: problem or "ok" for name, problem in found.items()}},
        status=200 if ready else 503, headers={"Cache-Control": "no-store"})
