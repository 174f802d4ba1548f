"""REST helpers: a JSON client with an API key, and keys with chosen grants."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client

from grove.identity import services
from grove.kernel.actor import Actor
from tests import factories


@dataclass
class Caller:
    """An HTTP caller with an `Authorization: Bearer` key (or none)."""

    client: Client
    key: str | None
    actor: Actor | None = None

    def _headers(self, headers: dict[str, str] | None) -> dict[str, str]:
        out = dict(headers or {})
        if self.key is not None:
            out.setdefault("Authorization", f"Bearer {self.key}")
        return out

    def call(self, method: str, path: str, body: Any = None, *,
             headers: dict[str, str] | None = None, raw: str | bytes | None = None) -> Any:
        data = raw if raw is not None else (None if body is None else json.dumps(body))
        kwargs: dict[str, Any] = {"headers": self._headers(headers)}
        if data is None and method in ("POST", "PATCH", "PUT"):
            data = ""  # no body at all
        if data is not None:
            kwargs.update(data=data, content_type="application/json")
        return getattr(self.client, method.lower())(f"/v1{path}", **kwargs)

    def get(self, path: str, **kw: Any) -> Any:
        return self.call("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw: Any) -> Any:
        return self.call("POST", path, body, **kw)

    def patch(self, path: str, body: Any = None, **kw: Any) -> Any:
        return self.call("PATCH", path, body, **kw)


def new_key(owner: Actor, **grant: Any) -> tuple[str, Actor]:
    """An API key of `owner`'s account (default: everything) and its actor."""
    options: dict[str, Any] = {"personal": True, "all_notebooks": True}
    options.update(grant)
    created = services.connection_create_key(actor=owner, name="test key", **options)
    actor = services.connection_authenticate(created.key)
    assert actor is not None
    return created.key, actor


@pytest.fixture
def owner() -> Actor:
    return factories.owner()


@pytest.fixture
def api(owner: Actor) -> Caller:
    key, actor = new_key(owner)
    return Caller(Client(), key, actor)


@pytest.fixture
def anonymous() -> Caller:
    return Caller(Client(), None)


def data(response: Any) -> Any:
    body = response.json()
    assert body["success"] is True, body
    return body["data"]


def error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, (response.status_code, response.content[:500])
    body = response.json()
    assert body["success"] is False
    assert body["error"]["code"] == code, body
    assert body["error"]["requestId"] == response["X-Request-Id"]
    return body["error"]
