"""What an agent pays to read Grove's tools: the text of tool results and `tools/list`.

The issue's case: eight short notes (two pinned preferences, a fact, five decisions),
recalled without a query (the profile) and with one; the same recall results rendered the
way the tools did before (the whole REST record of every hit as JSON, which is still what
`POST /v1/recall` returns) and the way they do now (the compact tool text), from the same
data in one run. `tools/list` is measured as the bytes `/mcp` sends.

    .venv/bin/python bench/tool_results.py            # → bench/results/tool_results.json
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import Env, table, write_result  # noqa: E402

# tools/list of commit 0cf1502 (before issue 14), measured with this file's rule then
# (json.dumps of the declarations with default separators, what JsonResponse sent then).
TOOLS_LIST_BEFORE = 39_423
# tools/list in each way a client reads it, at commit e5b9589 (before issue 36, 19
# tools): the bytes of the answer and its tokens (all-MiniLM-L6-v2's WordPiece).
TOOLS_LIST_ISSUE_36 = {"handshake": (34_147, 14_660), "2026-07-28": (34_307, 14_740),
                       "stdio": (36_721, 14_660)}

NOTES = [  # (content, kind, pinned)
    ("Prefers tea over coffee.", "preference", True),
    ("Writes in British English.", "preference", True),
    ("The office is in Leeds.", "fact", False),
    ("Decided: ship on Tuesdays.", "decision", False),
    ("Decided: Postgres for jobs.", "decision", False),
    ("Decided: no Friday deploys.", "decision", False),
    ("Decided: squash merges only.", "decision", False),
    ("Decided: weekly release notes.", "decision", False),
]


def main() -> None:
    started = time.perf_counter()
    env = Env.fresh("tools")
    from grove.interfaces import mcp
    from notebooks import services
    from notebooks.selectors import recall
    from tests.factories import op

    for content, kind, pinned in NOTES:
        services.note_remember(actor=env.actor, operation_id=op(), content=content, kind=kind,
                               pinned=pinned)
    env.drain_jobs()
    rows, cases = [], {}
    for name, arguments in (("profile (no query)", {}), ("query", {"query": "decided"})):
        before = recall.recall(actor=env.actor, **arguments)
        # Before: the tool's text was the JSON of the REST result, every field of every hit.
        old_text = json.dumps(before.model_dump(mode="json", by_alias=True),
                              ensure_ascii=False)
        result = mcp.tool_result(mcp.run_tool(env.actor, "recall", arguments))
        new_text = result["content"][0]["text"]
        items = result["structuredContent"]["data"]
        content = sum(len(item["content"]) for item in items)
        cases[name] = {"items": len(items), "content_chars": content,
                       "text_chars_before": len(old_text), "text_chars_after": len(new_text),
                       "overhead_per_item_before": round((len(old_text) - content) / len(items), 1),
                       "overhead_per_item_after": round((len(new_text) - content) / len(items), 1),
                       "structured_chars_after": len(json.dumps(result["structuredContent"],
                                                                ensure_ascii=False,
                                                                separators=(",", ":")))}
        rows.append([name, len(items), content, len(old_text), len(new_text),
                     cases[name]["overhead_per_item_before"],
                     cases[name]["overhead_per_item_after"],
                     f"{len(old_text) / len(new_text):.1f}×"])
    listed = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": mcp.declarations()}},
                        ensure_ascii=False, separators=(",", ":")).encode()
    eras = tools_list_by_era(env)
    print(table(["recall", "items", "content", "text before", "text after",
                 "per item before", "per item after", "smaller"], rows))
    print(f"\ntools/list: {TOOLS_LIST_BEFORE:,} bytes before → {len(listed):,} bytes now "
          f"({TOOLS_LIST_BEFORE / len(listed):.1f}× smaller)")
    print(table(["tools/list", "bytes before (issue 36)", "bytes now", "tokens before",
                 "tokens now"],
                [[era, f"{TOOLS_LIST_ISSUE_36[era][0]:,}", f"{size:,}",
                  f"{TOOLS_LIST_ISSUE_36[era][1]:,}", f"{tokens:,}"]
                 for era, (size, tokens) in eras.items()]))
    write_result("tool_results", {
        "recall": cases, "tools_list_bytes_before": TOOLS_LIST_BEFORE,
        "tools_list_bytes_after": len(listed),
        "tools_list_by_era": {era: {"bytes": size, "tokens": tokens,
                                    "bytes_before": TOOLS_LIST_ISSUE_36[era][0],
                                    "tokens_before": TOOLS_LIST_ISSUE_36[era][1]}
                              for era, (size, tokens) in eras.items()},
        "seconds": round(time.perf_counter() - started, 1)}, env)
    env.close()


def tools_list_by_era(env: Env) -> dict[str, tuple[int, int]]:
    """(bytes, tokens) of the `tools/list` answer as each kind of client reads it: `/mcp`
    in the handshake era and in 2026-07-28 (Django's test client on the real view, with
    an API key), and the stdio bridge's line (its list from `GET /v1/tools`)."""
    import io

    from django.test import Client

    from grove.embeddings.tokens import count_tokens
    from grove.identity import services as identity
    from grove.runtime.bridge import Bridge, serve

    key = identity.connection_create_key(actor=env.actor, name="bench", personal=True,
                                         all_notebooks=True).key
    web = Client(headers={"Authorization": f"Bearer {key}", "Host": "127.0.0.1",
                          "Accept": "application/json, text/event-stream"})
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}
    bodies = {
        "handshake": web.post("/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                              content_type="application/json",
                              headers={"MCP-Protocol-Version": "2025-11-25"}).content,
        "2026-07-28": web.post("/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                                        "params": {"_meta": meta}},
                               content_type="application/json",
                               headers={"MCP-Protocol-Version": "2026-07-28",
                                        "Mcp-Method": "tools/list"}).content}
    listed = web.get("/v1/tools").json()["data"]
    bridge = Bridge("http://grove.invalid", key)
    bridge.tools, bridge.instructions = listed["tools"], listed["instructions"]
    out = io.StringIO()
    serve(bridge, io.StringIO('{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n'), out)
    bodies["stdio"] = out.getvalue().encode()
    for era, body in bodies.items():
        assert b'"tools"' in body, (era, body[:200])
    return {era: (len(body), count_tokens(body.decode())) for era, body in bodies.items()}


if __name__ == "__main__":
    main()
