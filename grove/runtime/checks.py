"""Grove's own warnings of `grove check --deploy` (Django's system checks)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core import checks


def trusted_proxies_check(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """An https base URL means a reverse proxy terminates TLS in front of Grove: unless
    Grove trusts it, every visitor has the proxy's address, and one visitor's wrong
    passwords or flood refuse everyone (grove.kernel.addresses)."""
    if not settings.HTTPS or settings.GROVE_TRUSTED_PROXIES:
        return []
    return [checks.Warning(
        "GROVE_TRUSTED_PROXIES is not set, so behind the reverse proxy every visitor has "
        "the proxy's address: one visitor's wrong passwords or requests would refuse "
        "everyone.",
        hint="Set GROVE_TRUSTED_PROXIES to the proxy's address or network (e.g. 127.0.0.1 "
             "for a proxy on this machine) and GROVE_FORWARDED_HEADER if it does not send "
             "X-Forwarded-For (README, \"Running on the internet\").",
        id="grove.W001")]
