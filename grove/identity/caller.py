"""The website caller: the signed-in owner's session resolved into an `Actor` once per
request (STYLE §2), as keys and OAuth tokens are resolved by their own authentication."""

from collections.abc import Callable

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

from grove.kernel.actor import Actor


class GroveRequest(HttpRequest):
    """What views receive: a request with the resolved caller (None when anonymous)."""

    actor: Actor | None


def session_actor(request: HttpRequest) -> Actor:
    """The signed-in owner's actor (views behind `login_required`)."""
    actor = getattr(request, "actor", None)
    if actor is None:
        raise PermissionDenied("Sign in first.")
    return actor


class ActorMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        request.actor = (  # type: ignore[attr-defined]
            Actor.for_session(user.id) if user is not None and user.is_authenticated else None
        )
        return self.get_response(request)
