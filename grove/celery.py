"""The Celery application (workers: `grove worker`, periodic jobs: `grove beat`)."""

import functools
import logging
import os

from celery import Celery
from celery.signals import worker_ready

from grove.runtime import broker

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "grove.settings")
broker.register()  # the embedded default's broker, `grovefs://` (see grove.runtime.broker)

app = Celery("grove")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@functools.cache
def ensure_broker_folders() -> None:
    """The file broker's folders, before a worker or beat starts (a channel also makes
    them as it opens: `grove.runtime.broker`)."""
    broker.ensure_folders(app.conf.broker_transport_options or {})


@worker_ready.connect
def _report_alive(**kwargs: object) -> None:
    """A worker's first heartbeat as it starts, not a beat interval later (/readyz)."""
    from grove.runtime.readiness import heartbeat

    try:
        heartbeat("worker")
    except Exception as exc:  # noqa: BLE001 - readiness reporting must never stop a worker
        # One line: the database may be restarting as the worker starts (beat's next
        # heartbeat records it), and a traceback would read like a crash.
        logging.getLogger(__name__).warning(
            "could not record the worker's heartbeat yet: %s: %s", type(exc).__name__,
            " ".join(str(exc).split())[:200])
