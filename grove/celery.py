"""The Celery application (workers: `grove worker`, periodic jobs: `grove beat`)."""

import functools
import os
from pathlib import Path

from celery import Celery

from grove.runtime import broker

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "grove.settings")
broker.register()  # the embedded default's broker, `grovefs://` (see grove.runtime.broker)

app = Celery("grove")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@functools.cache
def ensure_broker_folders() -> None:
    """The filesystem transport needs its folders to exist before anything is sent."""
    options = app.conf.broker_transport_options or {}
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        if options.get(key):
            Path(options[key]).mkdir(parents=True, exist_ok=True, mode=0o700)
