"""Print a real brief from a small, realistic library (the example in docs/agents.md).

Builds the library on a fresh private embedded PostgreSQL (/tmp/grove-bench-example,
as the benchmarks do): an owner, two agents (an API key each), notebooks with visions,
notes of every kind saved by the agents and the owner, embedded with the local model.
Then prints what the agent "Claude Code" reads first for its notebook, with a focus, a
budget that pushes some notes to the index, and Los Angeles time.

    .venv/bin/python scripts/example_brief.py [--budget 1200] [--format markdown|json]
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import Env  # noqa: E402

LIBRARY = [
    # (notebook, kind, content, options)
    (None, "preference", "Answer in short paragraphs; no emoji, no filler.", {"pinned": True}),
    (None, "preference", "Prefer PostgreSQL features over new services.", {}),
    ("Grove repo", "decision", "Tokens in briefs are counted with the tokenizer Grove ships "
     "(all-MiniLM-L6-v2's WordPiece): no network at run time.", {"importance": 0.9}),
    ("Grove repo", "decision", "Tests run on real PostgreSQL with pgvector, never SQLite.",
     {"pinned": True}),
    ("Grove repo", "fact", "The staging database is db-stage-2; it is rebuilt every Sunday "
     "night at 02:00 UTC.", {}),
    ("Grove repo", "fact", "CI runs `.ci/run` on a clean clone; the whole suite must finish "
     "within about 20 minutes.", {}),
    ("Grove repo", "solution", "When the embed queue stalls after a restart, run "
     "`grove worker` once: `grove.recover` re-wakes lost jobs within 30 seconds.", {}),
    ("Grove repo", "fact", "Release notes live in docs/changelog.md; one line per "
     "user-visible change, newest first.", {"importance": 0.3}),
    ("Grove repo", "handoff", "**Status**: the REST route and the MCP tool are done and "
     "tested. **Next**: the website page, then the docs. **Open**: should the index "
     "tier show the note's kind?", {"task_id": "brief-endpoint"}),
    ("Garden", "fact", "Tomatoes need eight hours of sun; beds 3 and 4 get six.", {}),
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--budget", type=int, default=1200)
    parser.add_argument("--format", default="markdown", choices=("markdown", "json"))
    args = parser.parse_args()
    env = Env.fresh("example", username="alice")

    from grove.identity import services as identity
    from grove.kernel import jobs
    from grove.kernel.tenancy import tenant
    from grove.models import Connection
    from notebooks import selectors, services
    from notebooks.services.indexing import EMBED

    owner = env.actor
    books = {name: services.notebook_create(actor=owner, operation_id=uuid.uuid4(),
                                            name=name).id
             for name in ("Grove repo", "Garden")}
    services.vision_update(actor=owner, operation_id=uuid.uuid4(), content=(
        "Grove is the memory my agents share: calm, self-hosted, honest about what it "
        "knows and what it left out."))
    services.vision_update(actor=owner, operation_id=uuid.uuid4(),
                           notebook_id=books["Grove repo"], content=(
        "Ship the agent's first read before the ground-truth work. Every change keeps "
        "`main` green; a feature is done when a stranger can use it from the README."))

    def agent(name: str, notebooks: list[uuid.UUID]) -> object:
        created = identity.connection_create_key(actor=owner, name=name, personal=True,
                                                 notebooks=notebooks)
        actor = identity.connection_authenticate(created.key)
        assert actor is not None
        return actor

    claude = agent("Claude Code", [books["Grove repo"]])
    cursor = agent("Cursor", [books["Grove repo"], books["Garden"]])
    writers = [owner, claude, cursor]
    for i, (book, kind, content, options) in enumerate(LIBRARY):
        writer = writers[i % 3] if book != "Garden" else owner
        if book is None:
            writer = owner
        services.note_remember(actor=writer, operation_id=uuid.uuid4(), content=content,
                               kind=kind, notebook_id=books[book] if book else None,
                               **options)
    while jobs.run_batch(account_id=env.account_id, kind=EMBED):
        pass
    with tenant(owner):
        assert Connection.objects.count() == 2
    brief = selectors.brief_get(actor=claude, notebook_id=books["Grove repo"],
                                focus="the embed queue is stuck after a deploy",
                                time_zone="America/Los_Angeles", budget_tokens=args.budget,
                                format=args.format)
    if args.format == "markdown":
        print(brief.markdown)
    else:
        print(json.dumps(brief.to_json(), indent=2, default=str))
    env.close()


if __name__ == "__main__":
    main()
