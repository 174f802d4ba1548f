"""`grove export --user USERNAME [--markdown | --archive] [FILE]`: write an account's export.

Without a flag: the NDJSON export (notebooks, notes, revisions, visions). `--markdown`: a
zip of Markdown files, one per note with YAML front matter, notebooks as folders
(`notebooks.services.markdown_export`), which `grove ingest` takes back. `--archive`:
the lossless account archive (`grove.identity.archive`) that `grove import --archive`
loads on another instance."""

import json
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = "Export an account's notebooks, notes and revisions (NDJSON, or Markdown in a zip)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", required=True, help="the account's user name")
        formats = parser.add_mutually_exclusive_group()
        formats.add_argument("--markdown", action="store_true",
                             help="a zip of Markdown files, one per note")
        formats.add_argument("--archive", action="store_true",
                             help="everything the account holds, to move it to another Grove")
        parser.add_argument("file", nargs="?", default="-",
                            help="where to write (default: standard output)")

    def handle(self, *args: Any, user: str, file: str, **options: Any) -> None:
        from grove.kernel.actor import Actor
        from grove.models import Account
        from notebooks.services.markdown_export import markdown_export
        from notebooks.services.portability import export_records

        account = Account.objects.filter(username=user, is_active=True).first()
        if account is None:
            raise CommandError(f"no active account named {user!r}")
        actor = Actor.for_session(account.id)
        if options["markdown"]:
            if file == "-" and sys.stdout.isatty():
                raise CommandError("a zip is not for a terminal: name a file, or redirect")
            binary = sys.stdout.buffer if file == "-" else open(file, "wb")  # noqa: SIM115
            try:
                done = markdown_export(actor=actor, out=binary)
            finally:
                if binary is not sys.stdout.buffer:
                    binary.close()
            if file != "-":
                self.stderr.write(f"{done.notes} notes in {done.notebooks} notebooks "
                                  f"written to {file}")
            return
        from grove.identity.archive import account_archive

        records = account_archive(actor=actor) if options["archive"] else export_records(
            actor=actor)
        out = self.stdout if file == "-" else open(file, "w", encoding="utf-8")  # noqa: SIM115
        try:
            for record in records:
                out.write(json.dumps(record, separators=(",", ":")) + ("" if file == "-" else "\n"))
        finally:
            if out is not self.stdout:
                out.close()
