"""Where a request comes from: the client's address, believed from a reverse proxy only
when Grove trusts that proxy; and the names of this machine's loopback interface.

A request reaches Grove over a connection from its *peer*. Exposed directly, the peer is
the client. Behind a reverse proxy every peer is the proxy, and the proxy names its own
client in a header — `GROVE_FORWARDED_HEADER`: `X-Forwarded-For` (the default), `X-Real-IP`
or `Forwarded` (RFC 7239). Anyone can send that header, so it is read only when the peer
is one of `GROVE_TRUSTED_PROXIES` (addresses or networks; none by default). The two lists
(`X-Forwarded-For`, `Forwarded`) name every hop, nearest last, each proxy appending the
address it was reached from: the client is the right-most hop that is not itself a
trusted proxy — what lies left of it was written by the client and may be forged. A hop
that is no address (`unknown`, an obfuscated `_name`, garbage) ends the walk at the last
address a trusted proxy vouched for.

`client_address` is the one rule. Every use of the client's address goes through it,
and every per-address limit counts under `limit_key` (an IPv6 client by its /64):
the per-address rate limit and concurrency gate before Django (`grove.interfaces.limits`,
by way of `scope_address`), and through `request_address` sign-in's throttle, OAuth
client registrations, public share pages and wrong `/metrics` tokens
(`grove.kernel.throttle.address_key`). uvicorn's own reading of `X-Forwarded-For` is
turned off (`grove.runtime.serve`), so the ASGI scope's client is always the peer.

Written here rather than taken from a library: uvicorn's proxy-header middleware reads
only `X-Forwarded-For` and would rewrite the scope for every layer, and django-ipware
matches trusted proxies by address prefix, not by network — the rule is short, and it
must be exactly this one in both the ASGI layer and Django.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Iterable, MutableMapping
from typing import TYPE_CHECKING, Any

from django.conf import settings

if TYPE_CHECKING:
    from django.http import HttpRequest

# What a URL or a redirect may name for "this machine" (a loopback listener, RFC 8252).
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")

# The headers a proxy may name its client in (lower case) → Django's META key.
FORWARDED_HEADERS = {"x-forwarded-for": "HTTP_X_FORWARDED_FOR",
                     "x-real-ip": "HTTP_X_REAL_IP", "forwarded": "HTTP_FORWARDED"}
HEADER_NAMES = ("X-Forwarded-For", "X-Real-IP", "Forwarded")

type Address = ipaddress.IPv4Address | ipaddress.IPv6Address
type Network = ipaddress.IPv4Network | ipaddress.IPv6Network

_SEPARATORS = re.compile(r"[\s,]+")


def parse_proxies(raw: str) -> tuple[str, ...]:
    """`GROVE_TRUSTED_PROXIES`: addresses or networks (CIDR) separated by commas or
    spaces, in their normal form ("10.0.0.0/8", "::1/128"). ValueError, saying which and
    why, for one that is neither, or that would trust every address."""
    found = []
    for entry in filter(None, _SEPARATORS.split(raw.strip())):
        try:
            network = ipaddress.ip_network(entry, strict=False)
        except ValueError:
            raise ValueError(f"{entry!r} is not an IP address or network (e.g. 127.0.0.1, "
                             "10.0.0.0/8, fd00::/8)") from None
        if network.prefixlen == 0:
            raise ValueError(f"{entry!r} trusts every address, so any client could choose "
                             "the address Grove sees; name your proxies' addresses or "
                             "network")
        found.append(str(network))
    return tuple(dict.fromkeys(found))


def parse_header(raw: str) -> str:
    """`GROVE_FORWARDED_HEADER`, lower case. ValueError for a header Grove cannot read."""
    name = raw.strip().lower()
    if name not in FORWARDED_HEADERS:
        raise ValueError(f"{raw!r} is not one of {', '.join(HEADER_NAMES)}")
    return name


@functools.lru_cache(maxsize=8)
def _networks(proxies: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(proxy) for proxy in proxies)


def _address(text: str) -> Address | None:
    """The address a hop names: `203.0.113.9`, `203.0.113.9:5678`, `2001:db8::1`,
    `[2001:db8::1]:4711`, quoted or not (Forwarded); None for anything else."""
    text = text.strip().strip('"').strip()
    if text.startswith("["):
        text = text[1:text.find("]")] if "]" in text else ""
    elif text.count(":") == 1:  # an IPv4 address with its port
        text = text.partition(":")[0]
    try:
        found = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(found, ipaddress.IPv6Address) and found.ipv4_mapped is not None:
        return found.ipv4_mapped
    return found


def _hops(header: str, value: str) -> list[str]:
    """The hops a header names, nearest last."""
    if header == "forwarded":
        hops = []
        for element in value.split(","):
            pairs = (pair.partition("=") for pair in element.split(";"))
            hops.append(next((v for k, _, v in pairs if k.strip().lower() == "for"), ""))
        return hops
    if header == "x-real-ip":
        return value.split(",")[-1:]  # one address; if sent twice, the proxy's is last
    return value.split(",")


def client_address(peer: str, forwarded: str | None) -> str:
    """The client's address: the peer's, unless the peer is a trusted proxy and names
    its client in `GROVE_FORWARDED_HEADER` (`forwarded`: that header's value, several
    occurrences joined by commas) — then the right-most hop that is not a trusted proxy
    (see the module docstring)."""
    nearest = _address(peer)
    if nearest is None:
        return peer or "unknown"
    trusted = _networks(tuple(settings.GROVE_TRUSTED_PROXIES))
    if not forwarded or not _trusted(nearest, trusted):
        return str(nearest)
    for hop in reversed(_hops(settings.GROVE_FORWARDED_HEADER, forwarded)):
        named = _address(hop)
        if named is None:
            break
        nearest = named
        if not _trusted(named, trusted):
            break
    return str(nearest)


def _trusted(address: Address, networks: Iterable[Network]) -> bool:
    return any(address in network for network in networks)


# An IPv6 client is held to a limit by its /64: one subscriber's link gets a /64 (or
# more) and picks any address in it at will, so a limit per single address would be no
# limit (RFC 6177, RFC 7421).
IPV6_LIMIT_PREFIX = 64


def limit_key(address: str) -> str:
    """What a per-address limit counts under: an IPv4 address itself, an IPv6 address's
    /64 network (its zone dropped); anything that is no address, as it is."""
    try:
        found = ipaddress.ip_address(address.partition("%")[0])
    except ValueError:
        return address
    if isinstance(found, ipaddress.IPv6Address):
        if found.ipv4_mapped is not None:
            return str(found.ipv4_mapped)
        return str(ipaddress.IPv6Network(f"{found}/{IPV6_LIMIT_PREFIX}", strict=False))
    return str(found)


def request_address(request: HttpRequest) -> str:
    """`client_address` of a Django request."""
    return client_address(request.META.get("REMOTE_ADDR", ""),
                          request.META.get(FORWARDED_HEADERS[settings.GROVE_FORWARDED_HEADER]))


def scope_address(scope: MutableMapping[str, Any]) -> str:
    """`client_address` of an ASGI request (its scope)."""
    name = settings.GROVE_FORWARDED_HEADER.encode()
    values = [value.decode("latin-1") for key, value in scope.get("headers", ())
              if key.lower() == name]
    peer = (scope.get("client") or ("", 0))[0] or ""
    return client_address(peer, ",".join(values) or None)
