"""`grove beat`: schedule Grove's periodic jobs (Celery beat)."""

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Schedule periodic jobs such as retention (Celery beat)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--loglevel", default="INFO")

    def handle(self, *args: Any, loglevel: str, **options: Any) -> None:
        from grove.celery import app, ensure_broker_folders

        ensure_broker_folders()
        Path(settings.CELERY_BEAT_SCHEDULE_FILENAME).parent.mkdir(parents=True, exist_ok=True,
                                                                  mode=0o700)
        app.start(["beat", f"--loglevel={loglevel}",
                   f"--schedule={settings.CELERY_BEAT_SCHEDULE_FILENAME}"])
