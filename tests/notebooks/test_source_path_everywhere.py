"""An ingested file's note says where it came from the same way on every interface
(issue 37 items 5–6): REST's note (`sourcePath`), its list row, the `get_note` tool's
record over MCP, the note's page on the website (its File fact), and the Markdown
export, which writes it back to that path — compared field by field. A note written
anywhere else has no source path on any of them."""

from __future__ import annotations

import html
import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from grove.kernel.tenancy import tenant
from grove.models import Account
from notebooks.models import Note
from tests import factories
from tests.api.conftest import Caller, data, new_key
from tests.mcp.helpers import modern
from tests.notebooks.test_markdown_export import export_files

pytestmark = pytest.mark.django_db

PLAN = "---\naliases: [beds]\n---\n# Garden plan\n\nBeds by the wall. See [[Seeds]].\n"


def _file_fact(page: str) -> str | None:
    """The File fact of a note's page, as a reader sees it; None when there is none."""
    found = re.search(r'<dt>File</dt><dd><code class="source-path">([^<]*)</code>', page)
    return html.unescape(found.group(1)) if found else None


def test_the_source_path_is_the_same_on_rest_the_tool_the_page_and_the_export(tmp_path,
                                                                            embedder):
    owner = factories.owner("alice")
    (tmp_path / "Gärten & Beete").mkdir()
    (tmp_path / "Gärten & Beete" / "plan 2026.md").write_text(PLAN)
    call_command("ingest", str(tmp_path), "--user", "alice", stdout=StringIO())
    with tenant(owner):
        ingested = Note.objects.get(source_path__endswith="plan 2026.md")
    written = factories.note(owner, "# Seeds\n\nSow in March.", kind="note")
    key, _ = new_key(owner)
    api = Caller(Client(), key)
    web = Client()
    web.force_login(Account.objects.get(id=owner.account_id))
    path = "Gärten & Beete/plan 2026.md"

    for note, expected in ((ingested, path), (written, None)):
        rest = data(api.get(f"/notes/{note.id}"))
        assert rest.get("sourcePath") == expected
        row = next(r["note"] for r in data(api.get("/notes?limit=50"))
                   if r["note"]["id"] == str(note.id))
        assert row.get("sourcePath") == expected
        tool = modern(key, "tools/call", {"name": "get_note", "arguments": {
            "noteId": str(note.id)}}).json()["result"]
        assert not tool.get("isError")
        record = tool["structuredContent"]["record"]
        assert record.get("sourcePath") == expected
        assert {k: record[k] for k in ("id", "version", "content")} == \
            {k: rest[k] for k in ("id", "version", "content")}
        page = web.get(f"/notes/{note.id}/")
        assert page.status_code == 200
        assert _file_fact(page.content.decode()) == expected

    response = web.get("/v1/export/markdown")
    files = export_files(b"".join(response.streaming_content))
    # The ingested note goes back to its source path, byte for byte; the other note by
    # its title, at the top level (Personal).
    assert files[path] == PLAN.encode()
    assert files["Seeds.md"].endswith(b"# Seeds\n\nSow in March.\n")
