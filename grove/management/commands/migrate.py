"""`migrate` runs as the schema owner role unless told otherwise (SPEC §5)."""

from typing import Any

from django.core.management.commands.migrate import Command as DjangoMigrate


class Command(DjangoMigrate):
    def add_arguments(self, parser: Any) -> None:
        super().add_arguments(parser)
        parser.set_defaults(database="owner")
