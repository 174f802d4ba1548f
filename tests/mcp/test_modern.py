"""`/mcp` in the 2026-07-28 era at the HTTP level (Django test client, real database):
routing by `MCP-Protocol-Version`, `server/discover`, the per-request envelope and its
headers, what every result carries, caching hints, status codes — and the checks both
eras share (authentication, Origin, body limit, rate limit, unapproved OAuth clients)."""

from __future__ import annotations

import json

import pytest
from django.conf import settings

from grove.interfaces.mcp import SUPPORTED_VERSIONS, declarations, server_info
from tests import factories
from tests.api.conftest import new_key
from tests.mcp.helpers import ENVELOPE, MODERN, error_of, handshake, modern, post

pytestmark = pytest.mark.django_db

SERVER_INFO = "io.modelcontextprotocol/serverInfo"
HOUR = 3_600_000


@pytest.fixture
def owner():
    return factories.owner()


@pytest.fixture
def key(owner) -> str:
    return new_key(owner)[0]


def ok(response) -> dict:
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/json"
    assert "Mcp-Session-Id" not in response  # stateless: never a session
    return response.json()["result"]


def failed(response, status: int, code: int) -> dict:
    assert response.status_code == status, response.content
    error = response.json()["error"]
    assert error["code"] == code, error
    return error


def test_discover_names_both_eras_the_capabilities_and_how_long_to_keep_them(key):
    result = ok(modern(key, "server/discover"))
    assert result["supportedVersions"] == list(SUPPORTED_VERSIONS)
    assert result["supportedVersions"][0] == MODERN and "2025-11-25" in SUPPORTED_VERSIONS
    assert result["capabilities"] == {"tools": {"listChanged": False},
                                      "resources": {"subscribe": False, "listChanged": False},
                                      "prompts": {"listChanged": False}}
    assert "`brief`" in result["instructions"] and "`whoami`" in result["instructions"]
    assert (result["resultType"], result["ttlMs"], result["cacheScope"]) == (
        "complete", HOUR, "public")
    assert result["_meta"] == {SERVER_INFO: server_info()}
    # The same for every caller: nothing in it depends on who asks.
    other, _ = new_key(factories.owner(), capabilities=["memory:read"])
    assert ok(modern(other, "server/discover")) == result


def test_every_result_is_complete_and_names_the_server_and_lists_say_how_long_to_keep(
        owner, key):
    note = factories.note(owner, "Figs ripen in August.")
    calls = {
        "tools/list": ({}, (HOUR, "public")),
        "tools/call": ({"name": "recall", "arguments": {"query": "figs"}}, None),
        "resources/list": ({}, (0, "private")),
        "resources/templates/list": ({}, (HOUR, "public")),
        "resources/read": ({"uri": f"note://{note.id}"}, (0, "private")),
        "prompts/list": ({}, (HOUR, "public")),
        "prompts/get": ({"name": "end_of_session"}, None),
    }
    for method, (params, hint) in calls.items():
        result = ok(modern(key, method, params))
        assert result["resultType"] == "complete", method
        assert result["_meta"][SERVER_INFO] == server_info(), method
        if hint is None:
            assert "ttlMs" not in result and "cacheScope" not in result, method
        else:
            assert (result["ttlMs"], result["cacheScope"]) == hint, method
    # Tools in declaration order, every time, as the handshake era lists them.
    listed = ok(modern(key, "tools/list"))["tools"]
    assert listed == ok(modern(key, "tools/list"))["tools"] == declarations()
    assert ok(handshake(key, "tools/list"))["tools"] == listed
    called = ok(modern(key, "tools/call", {"name": "recall", "arguments": {"query": "figs"}}))
    assert called["isError"] is False
    assert [hit["content"] for hit in called["structuredContent"]["data"]] == [
        "Figs ripen in August."]


def test_the_handshake_era_results_carry_none_of_the_2026_stamps(key):
    for method in ("tools/list", "resources/list", "prompts/list"):
        result = ok(handshake(key, method))
        assert not {"resultType", "ttlMs", "cacheScope", "_meta"} & set(result), method


def test_the_envelope_must_be_whole_and_agree_with_the_headers(key):
    no_params = post(key, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                     {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"})
    assert "params._meta" in failed(no_params, 400, -32602)["message"]
    no_caps = modern(key, "tools/list", envelope={
        "io.modelcontextprotocol/clientCapabilities": None})
    assert ok(no_caps)  # present (null) is present; the SDK checks presence only
    meta = {k: v for k, v in ENVELOPE.items() if "Capabilities" not in k}
    missing = post(key, {"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                         "params": {"_meta": meta}},
                   {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"})
    assert "clientCapabilities" in failed(missing, 400, -32602)["message"]
    other_version = modern(key, "tools/list", envelope={
        "io.modelcontextprotocol/protocolVersion": "2025-11-25"})
    assert "MCP-Protocol-Version" in failed(other_version, 400, -32020)["message"]
    failed(modern(key, "tools/list", headers={"Mcp-Method": None}), 400, -32020)
    failed(modern(key, "tools/list", headers={"Mcp-Method": "tools/call"}), 400, -32020)
    call = {"name": "recall", "arguments": {}}
    failed(modern(key, "tools/call", call, headers={"Mcp-Name": None}), 400, -32020)
    failed(modern(key, "tools/call", call, headers={"Mcp-Name": "remember"}), 400, -32020)
    failed(modern(key, "prompts/get", {"name": "end_of_session"},
                  headers={"Mcp-Name": None}), 400, -32020)
    failed(modern(key, "resources/read", {"uri": "brief://all"},
                  headers={"Mcp-Name": "brief://personal"}), 400, -32020)
    # The base64 form is read as the value it carries; a malformed one never matches.
    assert ok(modern(key, "resources/read", {"uri": "brief://all"},
                     headers={"Mcp-Name": "=?base64?YnJpZWY6Ly9hbGw=?="}))
    for broken in ("=?base64?YnJpZWY6Ly9hbGw?=", "=?base64?!!!?="):
        failed(modern(key, "resources/read", {"uri": "brief://all"},
                      headers={"Mcp-Name": broken}), 400, -32020)
    # A method without a name field needs no Mcp-Name, and a stray one is ignored.
    assert ok(modern(key, "tools/list", headers={"Mcp-Name": "anything"}))
    # A missing name is the method's own -32602 (nothing for the header to mirror).
    failed(modern(key, "tools/call", {"arguments": {}}), 400, -32602)


def test_methods_of_the_other_era_are_unknown_with_404(key):
    for method in ("initialize", "ping", "logging/setLevel", "completion/complete"):
        error = failed(modern(key, method, {"protocolVersion": "2025-11-25"}), 404, -32601)
        assert error["data"] == method
    assert failed(modern(key, "tools/call", {"name": "launch_rockets", "arguments": {}}),
                  400, -32602)["message"] == "Unknown tool: launch_rockets."


def test_notifications_responses_ids_and_accept(key):
    note = modern(key, "notifications/initialized", id=None)
    assert note.status_code == 202 and note.content == b""
    answer = post(key, {"jsonrpc": "2.0", "id": 3, "result": {}},
                  {"MCP-Protocol-Version": MODERN, "Mcp-Method": "x"})
    failed(answer, 400, -32600)  # a 2026 server asks nothing, so nothing is answered
    assert modern(key, "tools/list", id="req-7").json()["id"] == "req-7"
    assert modern(key, "tools/list", id=0).json()["id"] == 0
    for accept, status in (("text/html", 406), ("application/json", 200), ("*/*", 200),
                           ("", 406)):
        response = modern(key, "tools/list", headers={"Accept": accept})
        assert response.status_code == status, accept
    assert failed(post(key, "{nope", {"MCP-Protocol-Version": MODERN}), 400, -32700)
    batch = post(key, [{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}],
                 {"MCP-Protocol-Version": MODERN})
    failed(batch, 400, -32600)


def test_an_unsupported_version_names_every_version_grove_speaks(key):
    for version in ("2099-01-01", "2025-01-01", "latest"):
        response = post(key, {"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {
            "_meta": {**ENVELOPE, "io.modelcontextprotocol/protocolVersion": version}}},
            {"MCP-Protocol-Version": version, "Mcp-Method": "tools/list"})
        error = failed(response, 400, -32022)
        assert error["data"] == {"supported": list(SUPPORTED_VERSIONS), "requested": version}
        assert response.json()["id"] == 9
    notification = post(key, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                        {"MCP-Protocol-Version": "2099-01-01"})
    assert failed(notification, 400, -32022) and notification.json()["id"] is None


def test_the_shared_checks_hold_in_the_2026_era(key, settings, monkeypatch):
    anonymous = modern(None, "server/discover")
    assert anonymous.status_code == 401 and anonymous.json()["error"]["code"] == -32001
    assert anonymous["WWW-Authenticate"] == (
        f'Bearer resource_metadata="{settings.GROVE_BASE_URL}/.well-known/'
        'oauth-protected-resource/mcp", scope="mcp"')
    wrong = modern("grv_" + "x" * 75, "tools/list")
    assert wrong.status_code == 401 and 'error="invalid_token"' in wrong["WWW-Authenticate"]
    assert modern(key, "tools/list", headers={"Origin": "https://evil.example"}
                  ).status_code == 403
    assert ok(modern(key, "tools/list", headers={"Origin": settings.GROVE_BASE_URL}))
    big = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "remember", "arguments": {"content": "x" * settings.GROVE_API_MAX_BODY}}})
    too_big = post(key, big, {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call",
                              "Mcp-Name": "remember"})
    assert too_big.status_code == 413
    assert too_big.json()["error"]["data"]["code"] == "payload_too_large"
    assert client_get().status_code == 405 and client_get()["Allow"] == "POST"

    from grove.kernel import throttle

    monkeypatch.setattr(throttle, "clock", lambda: 9_000_010.0)
    settings.GROVE_API_RATE_LIMIT = 2
    limited, _ = new_key(factories.owner())
    assert ok(modern(limited, "tools/list"))
    assert ok(handshake(limited, "tools/list"))  # one count across both eras
    refused = modern(limited, "tools/list")
    assert refused.status_code == 429 and refused["Retry-After"] == "50"
    assert refused.json()["error"]["data"]["code"] == "rate_limited"


def client_get():
    from django.test import Client

    return Client().get("/mcp", headers={"MCP-Protocol-Version": MODERN})


def test_an_unapproved_client_sees_declarations_and_is_sent_to_approval(pending_token):
    """Never 401/403 (they restart OAuth or start step-up loops): declarations are
    served, an empty resource list, and everything that reads answers with the
    approval link — in both eras."""
    token = pending_token
    assert ok(modern(token, "server/discover"))["capabilities"]["resources"]
    assert ok(modern(token, "tools/list"))["tools"] == declarations()
    listed = ok(modern(token, "resources/list"))
    assert listed["resources"] == [] and "nextCursor" not in listed
    assert listed["cacheScope"] == "private" and listed["ttlMs"] == 0  # approval changes it
    assert ok(modern(token, "resources/templates/list"))["resourceTemplates"]
    assert ok(modern(token, "prompts/list"))["prompts"]
    tool = ok(modern(token, "tools/call", {"name": "recall", "arguments": {}}))
    assert error_of(tool)["code"] == "connection_required"
    url = error_of(tool)["approvalUrl"]
    assert url.startswith(f"{settings.GROVE_BASE_URL}/connections/")
    for respond in (modern, handshake):
        for method, params in (("resources/read", {"uri": "brief://all"}),
                               ("prompts/get", {"name": "end_of_session"})):
            error = failed(respond(token, method, params), 200, -32003)
            assert error["data"]["code"] == "connection_required", (respond, method)
            assert error["data"]["approvalUrl"] == url  # the same open request
            assert url in error["message"] and "has not approved this app" in error["message"]
        assert ok(respond(token, "resources/list"))["resources"] == []
    # An unknown prompt is unknown whoever asks.
    failed(modern(token, "prompts/get", {"name": "nope"}), 400, -32602)
