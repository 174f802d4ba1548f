"""`grove export --user USERNAME [FILE]`: write an account's NDJSON export."""

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = "Export an account's notebooks, notes and revisions as NDJSON."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", required=True, help="the account's user name")
        parser.add_argument("file", nargs="?", default="-",
                            help="where to write (default: standard output)")

    def handle(self, *args: Any, user: str, file: str, **options: Any) -> None:
        from grove.kernel.actor import Actor
        from grove.models import Account
        from notebooks.services.portability import export_records

        account = Account.objects.filter(username=user, is_active=True).first()
        if account is None:
            raise CommandError(f"no active account named {user!r}")
        out = self.stdout if file == "-" else open(file, "w", encoding="utf-8")  # noqa: SIM115
        try:
            for record in export_records(actor=Actor.for_session(account.id)):
                out.write(json.dumps(record, separators=(",", ":")) + ("" if file == "-" else "\n"))
        finally:
            if out is not self.stdout:
                out.close()
