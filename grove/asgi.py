"""ASGI entry point (uvicorn, or any ASGI server in a scale-out deployment)."""

import gc
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

# What the process holds for good (modules, the URL tree with every route and schema) is
# loaded now, then left out of the garbage collector's full passes: with ~180,000 such
# objects a full pass took 165–195 ms of a request on the shared two cores, ~0.5 ms
# without them (docs/benchmarks.md, "HTTP overhead"). Nothing is kept that would
# otherwise be freed: whatever is garbage now is collected first.
from django.urls import get_resolver  # noqa: E402

get_resolver().url_patterns  # noqa: B018 - imports every router and schema now
gc.collect()
gc.freeze()
