"""`tools/list` is what every MCP client puts in its model's context before the first
word: its size is held to a bound in each way a client reads it — the handshake era and
the 2026-07-28 era of `/mcp`, and the stdio bridge (`grove mcp-stdio`), whose list comes
from `GET /v1/tools`. The bound leaves room for the next tools; docs/benchmarks.md
("Tool results") gives the measured bytes and tokens."""

from __future__ import annotations

import io
import json

import pytest
from django.test import Client

from grove.embeddings.tokens import count_tokens
from grove.runtime.bridge import Bridge, serve
from tests import factories
from tests.api.conftest import Caller, data, new_key
from tests.mcp.helpers import handshake, modern

pytestmark = pytest.mark.django_db

# Bytes of the whole answer, in every era: issue 36's budget. Issues 38 and 39 added
# tools and arguments (related, edit_note, remember's items and supersedes, project and
# asOf) and brought the list past it; results now declare their fields and each
# field's JSON type (`declared_output_schema`: the nested shapes cost 7 KB), and
# read-only tools no destructiveHint (MCP gives it no meaning there) — 25.8 KB, room
# for the next tools.
BOUND = 28_000


def _over_stdio(key: str) -> bytes:
    """The bridge's own `tools/list` line, from the list `GET /v1/tools` gives it."""
    listed = data(Caller(Client(), key).get("/tools"))
    bridge = Bridge("http://grove.invalid", key)
    bridge.tools, bridge.instructions = listed["tools"], listed["instructions"]
    out = io.StringIO()
    serve(bridge, io.StringIO(json.dumps({"jsonrpc": "2.0", "id": 1,
                                          "method": "tools/list"}) + "\n"), out)
    return out.getvalue().encode()


def test_tools_list_stays_within_its_bound_in_every_era():
    key, _ = new_key(factories.owner())
    answers = {"handshake": handshake(key, "tools/list").content,
               "2026-07-28": modern(key, "tools/list").content,
               "stdio": _over_stdio(key)}
    tools = {era: json.loads(body)["result"]["tools"] for era, body in answers.items()}
    assert tools["stdio"] == tools["handshake"] == tools["2026-07-28"]
    for era, body in answers.items():
        print(f"tools/list {era}: {len(body):,} bytes, {count_tokens(body.decode()):,} "
              "tokens")
        assert len(body) <= BOUND, (era, len(body))
