"""Network addresses: the names of this machine's loopback interface."""

from __future__ import annotations

# What a URL or a redirect may name for "this machine" (a loopback listener, RFC 8252).
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
