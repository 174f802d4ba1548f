"""REST `/v1` (SPEC §7): the django-ninja API, its envelope, authentication and errors.

Every route is parse → one service or selector call → envelope (STYLE §1, §6):

* success: `{"success": true, "data": …, "meta"?: …}`;
* failure: `{"success": false, "error": {"code", "message", "requestId"}}` with the
  HTTP status of the domain error (`grove.kernel.errors`), mapped once, here.

Callers authenticate with `Authorization: Bearer <API key>`. The few account
administration routes also accept the owner's website session (with CSRF) and refuse
keys with 403 (`session_required`). Feature apps add their routers in `grove.urls`.
"""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any, Literal

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse
from django.http.multipartparser import MultiPartParserError
from django.views.decorators.csrf import csrf_exempt
from ninja import NinjaAPI, Router, Swagger
from ninja.errors import AuthenticationError, HttpError, Throttled, ValidationError
from ninja.security import HttpBearer, SessionAuth
from ninja.throttling import BaseThrottle
from pydantic import BaseModel

from grove.identity import selectors, services
from grove.kernel import throttle
from grove.kernel.actor import Actor
from grove.kernel.errors import GroveError, Invalid, RateLimited
from grove.kernel.schemas import In, ListMeta, Out

logger = logging.getLogger(__name__)

# -- shapes ----------------------------------------------------------------------------------


class Ok[T](Out):
    success: Literal[True] = True
    data: T


class OkList[T](Out):
    success: Literal[True] = True
    data: list[T]
    meta: ListMeta


class ErrorBody(Out):
    code: str
    message: str
    request_id: str
    details: dict[str, Any] | None = None


class ErrorOut(Out):
    success: Literal[False] = False
    error: ErrorBody


def ok(data: Any, *, meta: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"success": True, "data": data}
    if meta is not None:
        body["meta"] = meta
    return body


def listed(items: list[Any], *, available: int | None = None, limit: int | None = None,
           next_cursor: str | None = None) -> dict[str, Any]:
    """A list envelope whose meta tells "everything" from "page one" (SPEC §4)."""
    meta = ListMeta.of(returned=len(items),
                       available=len(items) if available is None else available,
                       limit=len(items) if limit is None else limit, next_cursor=next_cursor)
    return ok(items, meta=meta)


# Statuses every authenticated route may answer with, for the OpenAPI document.
ERRORS: dict[int, type] = {400: ErrorOut, 401: ErrorOut, 403: ErrorOut, 404: ErrorOut,
                           413: ErrorOut, 422: ErrorOut, 429: ErrorOut, 503: ErrorOut}
WRITE_ERRORS: dict[int, type] = {**ERRORS, 409: ErrorOut, 410: ErrorOut}


# -- authentication --------------------------------------------------------------------------


class KeyAuth(HttpBearer):
    """`Authorization: Bearer grv_…`, checked against the database on every request."""

    openapi_description = "An API key created on the Connections page or with `grove key create`."

    def __call__(self, request: HttpRequest) -> Actor | None:
        """No `Authorization` header: not this scheme (the session may answer). One that
        was sent — empty, another scheme, a wrong key — is a failed attempt: 401, even
        beside a signed-in session (the caller meant the header)."""
        if self.header not in request.headers:
            return None
        request.bearer_sent = True  # type: ignore[attr-defined]
        scheme, *token = request.headers[self.header].split(" ")
        if scheme.lower() != self.openapi_scheme or not token:
            raise AuthenticationError()
        return self.authenticate(request, " ".join(token))

    def authenticate(self, request: HttpRequest, token: str) -> Actor | None:
        """The key's actor; an unknown, malformed or revoked key is refused."""
        actor = services.connection_authenticate(token)
        if actor is None:
            raise AuthenticationError()
        # A project the request names is its home for this request (issue 39).
        return selectors.actor_for_project(actor, selectors.project_header(request))


class OwnerSession(SessionAuth):
    """The owner's website session, CSRF-checked (management routes only)."""

    def authenticate(self, request: HttpRequest, key: str | None) -> Actor | None:
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            return Actor.for_session(user.id)
        return None


class ConnectionRateLimit(BaseThrottle):
    """The per-connection limit (`grove.kernel.throttle.connection_wait`, shared with /mcp);
    over it → 429 with `Retry-After`. The owner's website session is not limited here."""

    WINDOW = throttle.WINDOW

    def allow_request(self, request: HttpRequest) -> bool:
        actor = getattr(request, "auth", None)
        if not isinstance(actor, Actor):
            return True
        return throttle.connection_wait(actor.connection_id) is None

    def wait(self) -> float | None:
        """Seconds until the current window ends (no per-request state on the shared
        instance)."""
        return throttle.until_window_ends(self.WINDOW)


KEY = [KeyAuth()]
KEY_OR_SESSION = [KeyAuth(), OwnerSession()]


def actor_of(request: HttpRequest) -> Actor:
    actor = request.auth  # type: ignore[attr-defined]
    assert isinstance(actor, Actor)
    return actor


def operation_id(request: HttpRequest, body_value: uuid.UUID | None) -> uuid.UUID:
    """The mutation's operation id: `Idempotency-Key` header or body `operationId`;
    both and different → 400. Neither → a fresh id (the call is then not retry-safe)."""
    header = request.headers.get("Idempotency-Key")
    from_header: uuid.UUID | None = None
    if header is not None:
        try:
            from_header = uuid.UUID(header.strip())
        except ValueError:
            raise Invalid("Idempotency-Key must be a UUID.", code="invalid_operation_id") from None
    if from_header and body_value and from_header != body_value:
        raise Invalid("Idempotency-Key and operationId differ; send one of them.",
                      code="operation_id_mismatch")
    return from_header or body_value or uuid.uuid4()


def optional_body[M: In](request: HttpRequest, model: type[M]) -> M | None:
    """A JSON body that may be absent altogether (ninja requires one once declared)."""

    import pydantic

    if not request.body.strip():
        return None
    try:
        return model.model_validate(json.loads(request.body))
    except RecursionError:
        raise Invalid(f"The body must be {model.__name__} JSON: it nests too deep.",
                      code="invalid_request") from None
    except (ValueError, pydantic.ValidationError) as exc:
        raise Invalid(f"The body must be {model.__name__} JSON: {exc}".splitlines()[0],
                      code="invalid_request") from None


# -- the API ---------------------------------------------------------------------------------


class ApiRouter(Router):
    """Every route serialises camelCase (the schemas' aliases) — ninja's default is the
    Python names."""

    def add_api_operation(self, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("by_alias") is None:
            kwargs["by_alias"] = True
        super().add_api_operation(*args, **kwargs)


class GroveAPI(NinjaAPI):
    """The API whose OpenAPI document also states the rules an argument model checks
    across its fields (`openapi_rules`: a handoff needs a taskId, a change needs a
    field, …). Only here: MCP clients take tool input schemas with plain properties."""

    def get_openapi_schema(self, *, path_prefix: str | None = None,
                           path_params: dict[str, Any] | None = None) -> Any:
        schema = super().get_openapi_schema(path_prefix=path_prefix, path_params=path_params)
        components = schema.get("components", {}).get("schemas", {})
        for model in _subclasses(In):
            rules = model.__dict__.get("openapi_rules")
            if rules and model.__name__ in components:
                components[model.__name__].update(rules)
        _name_the_tools(schema)
        return schema


def _name_the_tools(schema: dict[str, Any]) -> None:
    """`POST /v1/tools/{tool}` runs the tools `tools/list` declares: the document names
    them (another name is a 404). Their arguments are each tool's `inputSchema` (`GET
    /v1/tools`), which one body schema cannot follow: the body is any object, and
    arguments a tool refuses are 400 `invalid_arguments`."""
    from grove.interfaces.mcp_tools import tools

    operation = schema.get("paths", {}).get("/v1/tools/{tool}", {}).get("post")
    for parameter in (operation or {}).get("parameters", ()):
        if parameter["name"] == "tool":
            parameter["schema"]["enum"] = list(tools())


def _subclasses(cls: type) -> list[type]:
    found: list[type] = []
    subs: list[type] = cls.__subclasses__()
    for sub in subs:
        found += [sub, *_subclasses(sub)]
    return found


api = GroveAPI(
    title="Grove",
    version="1",
    description="Notes and memory for people and their agents. Every response is an envelope "
                "`{success, data, meta?}` or `{success: false, error: {code, message, "
                "requestId}}`; see docs/api.md for the error codes.",
    urls_namespace="v1",
    auth=KEY,
    docs_url="/docs",
    # Swagger UI from ninja's static files with its settings in a JSON block, so it runs
    # under Grove's `script-src 'self'`; no online validator badge (a remote image).
    docs=Swagger(settings={"validatorUrl": None}),
    openapi_url="/openapi.json",
    throttle=[ConnectionRateLimit()],
)


def request_id(request: HttpRequest) -> str:
    value = getattr(request, "request_id", None)
    if not value:
        value = uuid.uuid4().hex
        request.request_id = value  # type: ignore[attr-defined]
    return value


def error_body(request: HttpRequest, code: str, message: str,
               details: dict[str, Any] | None = None) -> dict[str, Any]:
    """The failure envelope, with the request's id: every JSON answer's error shape."""
    body = ErrorOut(error=ErrorBody(code=code, message=message, request_id=request_id(request),
                                    details=details or None))
    return body.model_dump(mode="json", by_alias=True, exclude_none=True)


def _wire(value: Any) -> Any:
    """Shapes inside an envelope as clients read them (camelCase, JSON types); ninja's
    encoder alone would dump a model by its Python names."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if isinstance(value, dict):
        return {key: _wire(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_wire(item) for item in value]
    return value


def envelope_response(request: HttpRequest, status: int, body: dict[str, Any]) -> HttpResponse:
    """An envelope (`ok`, `listed`, `error_body`) as the API renders it, for answers made
    outside a ninja route too — `/v1`'s fallbacks and the public share JSON — so that
    every JSON interface speaks one envelope."""
    return api.create_response(request, _wire(body), status=status)


def error_response(request: HttpRequest, status: int, code: str, message: str,
                   details: dict[str, Any] | None = None) -> HttpResponse:
    response = envelope_response(request, status, error_body(request, code, message, details))
    if status == 401:
        challenge = 'Bearer realm="grove"'
        if getattr(request, "bearer_sent", False):
            challenge += ', error="invalid_token"'
        response["WWW-Authenticate"] = challenge
    return response


@api.exception_handler(GroveError)
def _grove_error(request: HttpRequest, exc: GroveError) -> HttpResponse:
    response = error_response(request, exc.status, exc.code, exc.message, exc.wire_details())
    if isinstance(exc, RateLimited):
        response["Retry-After"] = str(exc.retry_after)
    return response


@api.exception_handler(ValidationError)
def _validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    # ninja locates errors as (source, parameter name, field…): keep the field path.
    problems = [{"in": str(e.get("loc", ("body",))[0]),
                 "field": ".".join(str(p) for p in e.get("loc", ())[2:])
                 or ".".join(str(p) for p in e.get("loc", ())[1:2]),
                 "msg": str(e.get("msg", ""))} for e in exc.errors][:20]
    if problems and all(p["in"] == "path" for p in problems):
        # A path names a resource; one that cannot be an id names none (as Django's own
        # path converters answer).
        return error_response(request, 404, "not_found", "Not found.")
    first = problems[0] if problems else {"field": "", "msg": "invalid request"}
    where = first["field"] or "request"
    return error_response(request, 422, "invalid_request", f"{where}: {first['msg']}",
                          {"problems": problems})


@api.exception_handler(AuthenticationError)
def _unauthenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    if getattr(request, "bearer_sent", False):
        return error_response(request, 401, "invalid_token",
                              "The API key is unknown, malformed or revoked.")
    return error_response(request, 401, "unauthenticated",
                          "Send an API key: Authorization: Bearer grv_…")


@api.exception_handler(Http404)
def _not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return error_response(request, 404, "not_found", "Not found.")


@api.exception_handler(Throttled)
def _throttled(request: HttpRequest, exc: Throttled) -> HttpResponse:
    response = error_response(
        request, 429, "rate_limited",
        f"Too many requests for this connection (limit {settings.GROVE_API_RATE_LIMIT} per "
        "minute); retry after the number of seconds in Retry-After.")
    response["Retry-After"] = str(int(exc.wait or ConnectionRateLimit.WINDOW))
    return response


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    codes = {400: "invalid_json", 403: "forbidden", 405: "method_not_allowed",
             429: "rate_limited"}
    return error_response(request, exc.status_code, codes.get(exc.status_code, "http_error"),
                          exc.message)


@csrf_exempt
def not_found_view(request: HttpRequest, rest: str = "") -> HttpResponse:
    """Any other path under /v1: the envelope, not Django's HTML page."""
    return error_response(request, 404, "not_found", "No such API route.")


@api.exception_handler(MultiPartParserError)
def _malformed_form(request: HttpRequest, exc: MultiPartParserError) -> HttpResponse:
    # Read when a session's CSRF check looks for a form token: a multipart type without
    # its boundary cannot be read at all. The API takes JSON bodies.
    return error_response(request, 400, "invalid_request",
                          "The body could not be read; send JSON (Content-Type: "
                          "application/json).")


@api.exception_handler(RequestDataTooBig)
def _too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    return error_response(request, 413, "payload_too_large",
                          f"Request bodies are limited to {settings.GROVE_API_MAX_BODY:,} bytes.")


@api.exception_handler(OperationalError)
@api.exception_handler(InterfaceError)
def _database_down(request: HttpRequest, exc: DatabaseError) -> HttpResponse:
    logger.warning("database unavailable: %s", exc)
    return error_response(request, 503, "unavailable",
                          "The database is unavailable; nothing was changed. Retry later.")


@api.exception_handler(Exception)
def _unexpected(request: HttpRequest, exc: Exception) -> HttpResponse:
    logger.exception("unhandled error in %s %s", request.method, request.path)
    return error_response(request, 500, "internal_error",
                          "Something went wrong on our side; the request id helps find it.")
