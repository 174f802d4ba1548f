"""`grove restore PATH`: a `grove backup` file into a new or empty data folder
(`grove.runtime.restore`).

The `grove` command runs the restore itself, before it opens the data folder (opening it
creates the folder and a secret key); this command exists so that `grove help` lists it
and `grove help restore` describes it.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = ("Restore a `grove backup` file into a new or empty data folder (GROVE_HOME); "
            "refuses a folder that holds anything.")

    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        from grove.runtime.restore import arguments

        arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        raise CommandError("run it as `grove restore PATH`, with GROVE_HOME naming a new or "
                           "empty data folder: the `grove` command restores before it opens "
                           "a data folder")
