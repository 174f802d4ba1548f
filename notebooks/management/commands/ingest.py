"""`grove ingest PATH [--notebook N] --user USERNAME`: bring a folder of markdown in, and
keep it in step on every later run (issues 22 and 37, SPEC §13; `notebooks.services.ingest`).

    grove ingest ~/vault --notebook Vault --user alice [--subfolders] [--kind note]
                 [--prune [--remove]]

Each file is one note, whole (kind `note` unless `--kind` names a memory kind).
`--notebook`: a notebook's id, or the name of one at the top level (made if missing);
without it the folder comes in at the account's top level — files into Personal, each
folder a notebook (how a Markdown export goes into a new account).
`--subfolders`: each folder becomes a sub-notebook. `--prune`: notes of files gone from
the folder since the last run are archived (`--remove`: deleted). Prints a progress
line while it works and a summary when done; the exit status is 0 unless a file could
not be ingested.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = "Ingest a folder of markdown and text files into a notebook."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="the folder, a zip of one, or one file")
        parser.add_argument("--notebook", default=None,
                            help="a notebook id, or the name of a top-level notebook "
                                 "(default: the account's top level)")
        parser.add_argument("--user", required=True, help="the account's user name")
        parser.add_argument("--kind", default="note",
                            help="the notes' kind (default note: a document)")
        parser.add_argument("--subfolders", action="store_true",
                            help="each folder becomes a sub-notebook")
        parser.add_argument("--prune", action="store_true",
                            help="archive the notes of files gone from the folder")
        parser.add_argument("--remove", action="store_true",
                            help="with --prune: delete them instead")

    def handle(self, *args: Any, **options: Any) -> None:
        from django.db import DatabaseError

        from grove.identity.hygiene import secret_rules
        from grove.kernel.actor import Actor
        from grove.kernel.errors import GroveError
        from grove.models import Account
        from notebooks.ingest.files import (
            ZIP_ERRORS,
            Found,
            TooManyMembers,
            found_file,
            open_zip,
            walk,
            walk_zip,
        )
        from notebooks.services.ingest import FileOutcome, ingest_file, ingest_prune, ingest_root

        if options["remove"] and not options["prune"]:
            raise CommandError("--remove goes with --prune")
        account = Account.objects.filter(username=options["user"], is_active=True).first()
        if account is None:
            raise CommandError(f"no active account named {options['user']!r}")
        actor = Actor.for_session(account.id)
        folder = Path(options["path"]).expanduser()
        if not folder.exists():
            raise CommandError(f"{folder}: no such file or folder")
        try:
            root = ingest_root(actor, options["notebook"])
        except GroveError as exc:
            raise CommandError(str(exc)) from None

        archive = None
        if folder.is_dir():
            items = list(walk(folder))
        elif zipfile.is_zipfile(folder):
            try:
                archive = open_zip(folder.open("rb"))
            except (TooManyMembers, *ZIP_ERRORS) as exc:
                raise CommandError(f"{folder}: {exc}") from None
            items = list(walk_zip(archive))
        else:
            items = [found_file(folder)]
        found = [item for item in items if isinstance(item, Found)]
        totals = {"created": 0, "updated": 0, "retagged": 0, "unchanged": 0, "folded": 0}
        skipped: dict[str, list[str]] = {}
        for item in items:
            if not isinstance(item, Found):
                skipped.setdefault(item.reason, []).append(str(item.path))
        warnings: list[str] = []
        failed = 0
        made: dict[tuple[str, ...], Any] = {}
        rules = secret_rules(account.id)
        redacted: dict[str, int] = {}
        progress = Progress(len(found), sys.stderr)
        for item in found:
            try:
                outcome = ingest_file(actor=actor, root=root, path=item.path,
                                      raw=item.read(), kind=options["kind"],
                                      subfolders=options["subfolders"], made=made,
                                      rules=rules)
            except (GroveError, DatabaseError, *ZIP_ERRORS) as exc:
                # The file's transaction is rolled back: nothing of it is kept.
                outcome = FileOutcome(path=str(item.path), skipped=f"failed: {exc}")
                failed += 1
            for name in totals:
                totals[name] += getattr(outcome, name)
            if outcome.skipped:
                skipped.setdefault(outcome.skipped, []).append(outcome.path)
            warnings += [f"{outcome.path}: {w}" for w in outcome.warnings]
            for kind, count in outcome.redacted.items():
                redacted[kind] = redacted.get(kind, 0) + count
                warnings.append(f"{outcome.path}: {count} {kind} redacted")
            progress.step(outcome.path)
        progress.done()
        if archive is not None:
            archive.close()

        where = repr(root.name) if root is not None else "the top level"
        self.stdout.write(
            f"{len(found)} files into {where}: {totals['created']} notes created, "
            f"{totals['updated']} updated, {totals['retagged']} retagged, "
            f"{totals['unchanged']} unchanged, {totals['folded']} earlier parts folded")
        if options["prune"] and (folder.is_dir() or archive is not None):
            pruned = ingest_prune(actor=actor, root=root, remove=options["remove"],
                                  present={str(item.path) for item in found})
            what = (f"{pruned.removed} notes deleted" if options["remove"]
                    else f"{pruned.archived} notes archived")
            self.stdout.write(f"{len(pruned.files)} files gone from the folder: {what}")
            for path in pruned.files:
                self.stdout.write(f"  gone: {path}")
        if redacted:
            self.stdout.write("credentials replaced by [redacted: kind] markers: " + ", ".join(
                f"{count} {kind}" for kind, count in sorted(redacted.items())))
        for reason, paths in sorted(skipped.items()):
            self.stdout.write(f"skipped ({reason}): {len(paths)}")
            for path in paths[:10]:
                self.stdout.write(f"  {path}")
            if len(paths) > 10:
                self.stdout.write(f"  … and {len(paths) - 10} more")
        for warning in warnings:
            self.stdout.write(f"warning: {warning}")
        if failed:
            raise CommandError(f"{failed} files could not be ingested")


class Progress:
    """One line on a terminal, rewritten as files are done; nothing when the output is
    not a terminal (a log keeps the summary only)."""

    def __init__(self, total: int, stream: Any):
        self.total, self.done_count, self.stream = total, 0, stream
        self.live = total > 0 and stream.isatty()

    def step(self, path: str) -> None:
        self.done_count += 1
        if self.live:
            filled = 30 * self.done_count // self.total
            self.stream.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] "
                              f"{self.done_count}/{self.total} {path[-40:]:<40}")
            self.stream.flush()

    def done(self) -> None:
        if self.live:
            self.stream.write("\n")
            self.stream.flush()
