"""How long the move to passages takes on an existing library (issue 37, item 8).

A fresh embedded PostgreSQL is migrated to the schema before passages (notebooks 0031),
filled with N notes of one account — memory records of SciFact-like length, each with
its 384-dimension vector as the old `notebooks_noteembedding` held it — and then
migrated forward: notebooks 0032 (document notes) and passages 0001–0002 (one passage
per note, its vector copied, the HNSW index over passage vectors, the lexical arm over
passages). Reports the time of each step, and checks nothing was embedded again and
nothing lost: every note has one passage whose text is its content, every vector was
carried over unchanged, and recall's term statistics still equal a recount.

    .venv/bin/python bench/passages_migration.py --notes 100000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import RESULTS, _stop_stale, machine, wait_for_quiet  # noqa: E402

WORDS = ("cell protein gene expression receptor pathway tumor mouse patient clinical "
         "trial dose risk cohort signal membrane kinase binding mutation sequence "
         "virus immune response therapy outcome model sample analysis effect level").split()


def fill(cursor, account_id: uuid.UUID, notes: int) -> None:
    """N notes and their vectors, as the release before passages stored them."""
    tables = ("notebooks_note", "notebooks_noteembedding", "notebooks_revision",
              "notebooks_notecount", "notebooks_termdelta")
    for table in tables:
        cursor.execute(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY")
    words = "ARRAY[" + ",".join(f"'{w}'" for w in WORDS) + "]"
    for start in range(0, notes, 10_000):
        count = min(10_000, notes - start)
        cursor.execute(
            "INSERT INTO notebooks_note (id, account_id, content, kind, capture, pinned, tags, "  # noqa: S608
            "importance, status, version, created_at, updated_at, content_hash, indexing, "
            "stated_dates) "
            "SELECT gen_random_uuid(), %s, t.content, 'fact', 'explicit', false, '{}', 0.5, "
            "'active', 1, now(), now(), encode(sha256(convert_to(t.content, 'UTF8')), 'hex'), "
            "'ready', '{}' FROM (SELECT g, 'Note ' || g || ': ' || array_to_string(ARRAY("
            f"SELECT ({words})[1 + floor(random() * {len(WORDS)})::int] || (g %% 97)::text "
            "FROM generate_series(1, 150 + (g %% 100)) WHERE g > -1), ' ') || '.' AS content "
            "FROM generate_series(%s, %s) g) t",
            [account_id, start, start + count - 1])
    cursor.execute(
        "INSERT INTO notebooks_revision (id, account_id, note_id, version, reason, content, "
        "kind, capture, pinned, tags, importance, status, created_at) "
        "SELECT gen_random_uuid(), account_id, id, 1, 'create', content, kind, capture, "
        "pinned, tags, importance, status, created_at FROM notebooks_note")
    cursor.execute(
        "INSERT INTO notebooks_noteembedding (account_id, note_id, profile, dimension, "
        "content_hash, embedding, created_at) "
        "SELECT n.account_id, n.id, 'local-minilm/384', 384, n.content_hash, "
        "(SELECT array_agg(random() - 0.5 + 0 * d + (n.version - 1)) "
        "FROM generate_series(1, 384) d)"
        "::vector, now() FROM notebooks_note n")
    for table in tables:
        cursor.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=100_000)
    args = parser.parse_args()
    quiet = wait_for_quiet()
    home = Path("/tmp/grove-bench-passages-migration")  # noqa: S108 - private scratch
    if home.exists():
        _stop_stale(home)
        shutil.rmtree(home)
    home.mkdir(mode=0o711)
    os.environ["GROVE_HOME"] = str(home)
    os.environ["DJANGO_SETTINGS_MODULE"] = "grove.settings"
    os.environ.pop("REDIS_URL", None)
    from grove.runtime.embedded import EmbeddedPostgres

    server = EmbeddedPostgres(home)
    server.ensure_running()
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connections

    timings: dict[str, float] = {}
    for app in ("grove", "ask", "sharing"):
        call_command("migrate", app, database="owner", verbosity=0)
    call_command("migrate", "notebooks", "0031_search_words", database="owner", verbosity=0)
    from grove.models import Account

    account = Account.objects.create_user(username="bench", password=uuid.uuid4().hex)  # noqa: S106
    started = time.perf_counter()
    with connections["owner"].cursor() as cursor:
        fill(cursor, account.id, args.notes)
        cursor.execute("VACUUM ANALYZE notebooks_note")
        cursor.execute("VACUUM ANALYZE notebooks_noteembedding")
    timings["fill_seconds"] = round(time.perf_counter() - started, 1)

    for target, label in ((("notebooks", "0032_document_notes"), "notebooks_0032_seconds"),
                          (("passages", "0001_initial"), "passages_0001_seconds"),
                          (("passages", "0002_lexical_passages"), "passages_0002_seconds")):
        started = time.perf_counter()
        call_command("migrate", *target, database="owner", verbosity=0)
        timings[label] = round(time.perf_counter() - started, 1)
    started = time.perf_counter()
    call_command("migrate", database="owner", verbosity=0)
    timings["rest_seconds"] = round(time.perf_counter() - started, 1)

    with connections["owner"].cursor() as cursor:
        for table in ("notebooks_note", "notebooks_noteembedding", "passages_passage",
                      "passages_passagevector", "notebooks_termstat", "notebooks_termdelta"):
            cursor.execute(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY")
        cursor.execute("SELECT count(*) FROM notebooks_note")
        notes = cursor.fetchone()[0]
        cursor.execute("SELECT count(*), count(*) FILTER (WHERE p.text = n.content AND "
                       "p.start = 0 AND p.\"end\" = length(n.content) AND p.position = 1) "
                       "FROM passages_passage p JOIN notebooks_note n ON n.id = p.note_id")
        passages, exact = cursor.fetchone()
        cursor.execute("SELECT count(*), count(*) FILTER (WHERE v.embedding = e.embedding) "
                       "FROM passages_passagevector v JOIN notebooks_noteembedding e "
                       "ON e.note_id = v.note_id AND e.profile = v.profile")
        vectors, same = cursor.fetchone()
        cursor.execute("SELECT count(*) FROM notebooks_note WHERE passages_hash <> content_hash")
        stale = cursor.fetchone()[0]
        cursor.execute("SELECT pg_total_relation_size('passages_passage'), "
                       "pg_total_relation_size('passages_passagevector'), "
                       "pg_total_relation_size('notebooks_note'), "
                       "pg_total_relation_size('notebooks_noteembedding')")
        sizes = dict(zip(("passages_mb", "passage_vectors_mb", "notes_mb", "old_vectors_mb"),
                         (round(v / 2**20, 1) for v in cursor.fetchone()), strict=True))
    result = {"notes": notes, "passages": passages, "passages_equal_to_their_note": exact,
              "vectors_carried": vectors, "vectors_unchanged": same,
              "notes_with_stale_passages": stale, **timings, **sizes,
              "machine": machine(), "quiet": quiet}
    print(json.dumps(result, indent=2))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"passages_migration_{args.notes}.json").write_text(json.dumps(result, indent=2))
    connections.close_all()
    server.release()


if __name__ == "__main__":
    main()
