"""Resolve the website caller into an `Actor` once per request (STYLE §2)."""

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from grove.actor import Actor


class ActorMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        request.actor = (  # type: ignore[attr-defined]
            Actor.for_session(user.id) if user is not None and user.is_authenticated else None
        )
        return self.get_response(request)
