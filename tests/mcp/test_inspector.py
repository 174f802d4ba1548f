"""The MCP Inspector CLI (`npx @modelcontextprotocol/inspector --cli`), a client Grove
does not control, lists Grove's tools over HTTP with an API key."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests import factories
from tests.api.conftest import new_key
from tests.conftest import require_program

pytestmark = pytest.mark.slow


def test_inspector_cli_lists_the_tools(site_url, committed):
    npx = require_program("npx")
    key, _ = new_key(factories.owner())
    result = subprocess.run(
        [npx, "-y", "@modelcontextprotocol/inspector@2", "--cli", f"{site_url}/mcp",
         "--transport", "http", "--header", f"Authorization: Bearer {key}",
         "--method", "tools/list"],
        capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    listed = json.loads(result.stdout[result.stdout.index("{"):])
    names = {tool["name"] for tool in listed["tools"]}
    assert {"remember", "recall", "forget", "list_notebooks"} <= names
    assert all(tool["annotations"]["openWorldHint"] is False for tool in listed["tools"])
