"""`grove worker`: run a Celery worker for Grove's background jobs."""

from typing import Any

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Run a worker for background jobs (Celery)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--concurrency", type=int, default=2)
        parser.add_argument("--loglevel", default="WARNING")
        parser.add_argument("--with-beat", action="store_true",
                            help="also schedule periodic jobs (one process for small installs)")

    def handle(self, *args: Any, concurrency: int, loglevel: str, with_beat: bool,
               **options: Any) -> None:
        from django.conf import settings

        from grove.celery import app, ensure_broker_folders

        ensure_broker_folders()
        # The job wake-ups' queue and the maintenance queue (settings: CELERY_TASK_ROUTES):
        # consumed in turn, so periodic tasks never wait behind a backlog of wake-ups.
        queues = f"{settings.CELERY_TASK_DEFAULT_QUEUE},{settings.CELERY_MAINTENANCE_QUEUE}"
        argv = ["worker", "--pool=threads", f"--concurrency={concurrency}",
                f"--loglevel={loglevel}", "--without-mingle", "--without-gossip",
                "--without-heartbeat", f"--queues={queues}"]
        if with_beat:
            argv += ["--beat", f"--schedule={settings.CELERY_BEAT_SCHEDULE_FILENAME}"]
        # Threads: jobs wait on the database and the network, and the embedded default
        # must run on two cores next to the web server.
        app.worker_main(argv)
