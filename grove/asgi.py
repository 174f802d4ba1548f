"""ASGI entry point (uvicorn, or any ASGI server in a scale-out deployment)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "grove.settings")

application = get_asgi_application()
