"""`grove mcp-stdio --url URL`: MCP over stdio for clients that launch a command
(Claude Desktop, scripts), forwarding to a Grove server over HTTP with the API key in
`GROVE_API_KEY`. It has no database and no Django: `initialize` and `ping` are answered
here, `tools/list` comes from `GET /v1/tools` and every `tools/call` is
`POST /v1/tools/<name>?format=mcp`, which answers with exactly the tool result `/mcp`
would give — the same tools, grants, texts and errors (codes and details included).
Resources and prompts (`resources/*`, `prompts/*`) are forwarded as they are to
`POST /mcp` in the handshake era, and the answer's result or error is passed back
unchanged, so they too are exactly what `/mcp` serves; the capabilities declared are
`/mcp`'s (`grove.interfaces.mcp_protocol.capabilities`).

The bridge speaks the handshake era only (`initialize`, 2024-11-05 … 2025-11-25): the
2026-07-28 era on stdio is out of scope. A client probing with `server/discover` gets
"method not found", which makes SDK clients in `auto` mode fall back to `initialize`.

Messages are newline-delimited JSON-RPC on stdin/stdout (the MCP stdio transport);
diagnostics go to stderr. An unreachable server or a refused key stops the bridge at
start with one line saying so.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import IO, Any

import httpx

from grove.interfaces.mcp_protocol import (
    HANDSHAKE_VERSIONS,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    capabilities,
    error_result,
    message_kind,
)

# What the bridge forwards to /mcp as is; everything it answers itself is listed in
# `Bridge.handle`.
FORWARDED = ("resources/list", "resources/templates/list", "resources/read",
             "prompts/list", "prompts/get")


class Bridge:
    def __init__(self, url: str, key: str, *, timeout: float = 60) -> None:
        self.url = url.rstrip("/")
        self.http = httpx.Client(base_url=self.url + "/v1", timeout=timeout,
                                 headers={"Authorization": f"Bearer {key}",
                                          "User-Agent": "grove-mcp-stdio"})
        self.tools: list[dict[str, Any]] = []
        self.instructions = ""
        self.server: dict[str, str] = {"name": "grove", "version": "unknown"}

    def connect(self) -> None:
        """Fetch the tool list once; raises SystemExit with a clear line on failure."""
        try:
            response = self.http.get("/tools")
        except httpx.HTTPError as exc:
            fail(f"cannot reach Grove at {self.url} ({exc.__class__.__name__}: {exc})")
        if response.status_code == 401:
            fail(f"Grove at {self.url} refused the API key in GROVE_API_KEY "
                 "(unknown, revoked, or mistyped)")
        if response.status_code != 200 or not _is_envelope(response):
            hint = (" — --url is the server's address, without /mcp"
                    if self.url.endswith("/mcp") else "")
            fail(f"{self.url} did not answer like a Grove server "
                 f"(GET /v1/tools: HTTP {response.status_code}){hint}")
        data = response.json()["data"]
        self.tools, self.instructions = data["tools"], data["instructions"]
        self.server = data.get("server") or self.server

    def handle(self, message: Any) -> dict[str, Any] | None:
        kind, problem = message_kind(message)
        if kind == "invalid":
            return _error(None, INVALID_REQUEST, problem)
        if kind in ("notification", "response"):
            return None  # nothing to answer
        request_id, method = message["id"], message["method"]
        params = message.get("params") or {}
        if not isinstance(params, dict):
            return _error(request_id, INVALID_PARAMS, "params must be an object.")
        if method == "initialize":
            requested = params.get("protocolVersion")
            return _result(request_id, {
                "protocolVersion": requested if requested in HANDSHAKE_VERSIONS
                else HANDSHAKE_VERSIONS[0],
                "capabilities": capabilities(),
                "serverInfo": {"name": "grove", "title": "Grove (stdio bridge)",
                               "version": self.server.get("version", "unknown")},
                "instructions": self.instructions,
            })
        if method == "ping":
            return _result(request_id, {})
        if method == "tools/list":
            return _result(request_id, {"tools": self.tools})
        if method == "tools/call":
            return self._call(request_id, params.get("name"), params.get("arguments") or {})
        if method in FORWARDED:
            return self._forward(request_id, method, params)
        return _error(request_id, METHOD_NOT_FOUND, f"Method not found: {method}.")

    def _forward(self, request_id: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The request as /mcp answers it in the handshake era: its result or its error
        (code, message and data untouched), under this request's id."""
        try:
            response = self.http.post(
                self.url + "/mcp", json={"jsonrpc": "2.0", "id": request_id, "method": method,
                                         "params": params},
                headers={"MCP-Protocol-Version": HANDSHAKE_VERSIONS[0],
                         "Accept": "application/json, text/event-stream"})
        except httpx.HTTPError as exc:
            return _error(request_id, INTERNAL_ERROR, f"Grove at {self.url} is unreachable: "
                                                      f"{exc}")
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if isinstance(answer, dict) and isinstance(answer.get("result"), dict):
            return _result(request_id, answer["result"])
        if isinstance(answer, dict) and isinstance(answer.get("error"), dict):
            return {"jsonrpc": "2.0", "id": request_id, "error": answer["error"]}
        return _error(request_id, INTERNAL_ERROR, f"Grove answered HTTP "
                                                  f"{response.status_code} without a "
                                                  "JSON-RPC answer; try again later.")

    def _call(self, request_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
        if not isinstance(name, str) or not any(t["name"] == name for t in self.tools):
            return _error(request_id, INVALID_PARAMS, f"Unknown tool: {name}.")
        try:
            response = self.http.post(f"/tools/{name}", params={"format": "mcp"},
                                      json=arguments)
        except httpx.HTTPError as exc:
            return _result(request_id, error_result(
                "unavailable", f"Grove at {self.url} is unreachable: {exc}"))
        if not _is_envelope(response):
            return _result(request_id, error_result(
                "unavailable", f"Grove answered HTTP {response.status_code} without a "
                               "result; try again later."))
        body = response.json()
        if body.get("success"):
            return _result(request_id, body["data"])
        # Refused before the tool ran (rate limit, revoked key, …): the envelope's error.
        error = body.get("error") or {}
        details = {**(error.get("details") or {}), "requestId": error.get("requestId")}
        return _result(request_id, error_result(error.get("code", "error"),
                                                error.get("message", "The call failed."),
                                                details))


def _is_envelope(response: httpx.Response) -> bool:
    try:
        return isinstance(response.json(), dict) and "success" in response.json()
    except ValueError:
        return False


def _result(request_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def fail(message: str) -> None:
    print(f"grove mcp-stdio: {message}", file=sys.stderr, flush=True)
    raise SystemExit(1)


def serve(bridge: Bridge, stdin: IO[str], stdout: IO[str]) -> None:
    for line in stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            reply: dict[str, Any] | None = _error(None, PARSE_ERROR, "Not JSON.")
        else:
            if isinstance(message, list):
                reply = _error(None, INVALID_REQUEST, "Batches are not supported.")
            else:
                reply = bridge.handle(message)
        if reply is not None:
            stdout.write(line_of(reply))
            stdout.flush()


def line_of(reply: dict[str, Any]) -> str:
    """One message on stdout: compact JSON, as `/mcp` sends it (a client's context is
    not free), and a newline."""
    return json.dumps(reply, ensure_ascii=False, separators=(",", ":")) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="grove mcp-stdio",
        description="MCP over stdio, forwarded to a Grove server (API key in GROVE_API_KEY).")
    parser.add_argument("--url", required=True,
                        help="the Grove server, e.g. https://notes.example.org")
    args = parser.parse_args(argv)
    key = os.environ.get("GROVE_API_KEY", "").strip()
    if not key:
        fail("set GROVE_API_KEY to an API key (Connections page or `grove key create`)")
    if not args.url.startswith(("http://", "https://")):
        fail(f"--url {args.url!r} is not an http(s) URL")
    bridge = Bridge(args.url, key)
    bridge.connect()
    print(f"grove mcp-stdio: connected to {bridge.url} ({len(bridge.tools)} tools)",
          file=sys.stderr, flush=True)
    serve(bridge, sys.stdin, sys.stdout)
    return 0
