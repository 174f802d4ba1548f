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

# Bytes of the whole answer, in every era: 28,000 until issue 38 — the `related` tool
# (~1,100 bytes), `ask` sources that say they were reached through a link and the
# `relink` flags of update_memory and move_notes (~250) — and 30,000 since, again a
# little room for the next tool; 33,500 while issue 39 adds its tools and arguments
# (edit_note ~1,600 bytes; remember's items and supersedes, project on four tools ~1,300),
# whose last item brings every era back within issue 36's 28,000.
BOUND = 33_500


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
