"""ASGI entry point (uvicorn, or any ASGI server in a scale-out deployment)."""

import os
import warnings

import django

# WhiteNoise serves static files as a sync iterator, which Django's ASGI handler wraps
# (correctly, with a warning per file). The files are small; keep the console quiet.
warnings.filterwarnings(
    "ignore", message="StreamingHttpResponse must consume synchronous iterators"
)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "grove.settings")

django.setup(set_prefix=False)

from grove.interfaces.handler import RequestThreadHandler  # noqa: E402 - after Django is set up
from grove.interfaces.limits import Limits  # noqa: E402

# Django's ASGI handler with a request's synchronous work in one trip to one thread.
django_application = RequestThreadHandler()

# Body size, requests per address and concurrency are limited before Django sees a request.
application = Limits(django_application)
