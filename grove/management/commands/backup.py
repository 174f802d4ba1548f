"""`grove backup [PATH]`: the database, the settings and the secret key in one checksummed
file, consistent while Grove keeps running (`grove.runtime.backup`).

    grove backup                      # $GROVE_HOME/backups/grove-<UTC time>.tar
    grove backup /mnt/backups/        # that folder, the same file name
    grove backup /mnt/grove.tar       # that file (never over an existing one)
    grove backup --database-url URL   # external PostgreSQL: dump as a role that bypasses RLS
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = ("Write a consistent backup (database dump, grove.toml, secret key) to one file "
            "with a checksum; `grove restore` reads it back.")

    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", nargs="?",
                            help="the file to write, or a folder for the default name "
                                 "(default: $GROVE_HOME/backups/grove-<UTC time>.tar)")
        parser.add_argument("--database-url",
                            help="with DATABASE_URL only: dump as this role, a superuser or one "
                                 "with BYPASSRLS (default: GROVE_MIGRATE_DATABASE_URL's)")

    def handle(self, *args: Any, path: str | None, database_url: str | None,
               **options: Any) -> None:
        from grove.runtime.backup import counted, human_size, take_backup
        from grove.runtime.backup_file import BackupError

        try:
            done = take_backup(path=path, database_url=database_url)
        except BackupError as exc:
            raise CommandError(str(exc)) from None
        manifest = done.manifest
        counts = manifest["counts"]
        self.stdout.write(f"backup written: {done.path} ({human_size(done.size)}; "
                          f"{counted(counts['notes'], 'note')}, "
                          f"{counted(counts['accounts'], 'account')}, "
                          f"{counted(manifest['database']['tables'], 'table')}; "
                          f"{done.seconds:.1f} s)")
        self.stdout.write(f"checksum: {done.sidecar} (check it with `sha256sum -c "
                          f"{done.sidecar.name}` in that folder)")
        if manifest["secret_key"]["stored_in"] == "environment":
            self.stdout.write("the secret key comes from GROVE_SECRET_KEY and is NOT in the "
                              "backup: keep that value with it — a restore needs it")
        else:
            self.stdout.write("it holds the secret key: keep it as safe as the data folder")
        if manifest["environment"]:
            self.stdout.write("settings from the environment (not in the backup; set them "
                              f"again on a new machine): {', '.join(manifest['environment'])}")
