"""`grove worker`: run a Celery worker for Grove's background jobs."""

from typing import Any

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Run a worker for background jobs (Celery)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--concurrency", type=int, default=2)
        parser.add_argument("--loglevel", default="INFO")

    def handle(self, *args: Any, concurrency: int, loglevel: str, **options: Any) -> None:
        from grove.celery import app, ensure_broker_folders

        ensure_broker_folders()
        # Threads: jobs wait on the database and the network, and the embedded default
        # must run on two cores next to the web server.
        app.worker_main(["worker", "--pool=threads", f"--concurrency={concurrency}",
                         f"--loglevel={loglevel}", "--without-mingle", "--without-gossip"])
