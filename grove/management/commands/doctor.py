"""`grove doctor`: check this Grove's setup, one line per check; exit 1 when anything
needs fixing (`grove.runtime.doctor`)."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Check the database, roles, broker, worker, embeddings, providers and disk."

    requires_system_checks: list[str] = []

    def handle(self, *args: Any, **options: Any) -> None:
        from grove.runtime.doctor import findings

        problems = 0
        for finding in findings():
            if finding.problem is None:
                self.stdout.write(f"ok    {finding.name}" + (f": {finding.detail}"
                                                           if finding.detail else ""))
            else:
                problems += 1
                self.stdout.write(f"FIX   {finding.name}: {finding.problem}")
        self.stdout.write(f"{problems} problem{'s' if problems != 1 else ''} found")
        if problems:
            sys.exit(1)
