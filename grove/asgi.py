"""ASGI entry point (uvicorn, or any ASGI server in a scale-out deployment)."""

import os
import warnings

from django.core.asgi import get_asgi_application

# WhiteNoise serves static files as a sync iterator, which Django's ASGI handler wraps
# (correctly, with a warning per file). The files are small; keep the console quiet.
warnings.filterwarnings(
    "ignore", message="StreamingHttpResponse must consume synchronous iterators"
)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "grove.settings")

django_application = get_asgi_application()

from grove.interfaces.limits import Limits  # noqa: E402 - after Django is set up

# Body size, requests per address and concurrency are limited before Django sees a request.
application = Limits(django_application)
