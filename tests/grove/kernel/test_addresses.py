"""The client's address (grove/kernel/addresses.py, issue 36 item 2.7): a forwarded header
is believed only from a trusted proxy, and then the client is the right-most hop that is
not a trusted proxy — in X-Forwarded-For, X-Real-IP and Forwarded alike."""

from __future__ import annotations

import pytest
from django.test import RequestFactory

from grove.kernel.addresses import (
    client_address,
    parse_header,
    parse_proxies,
    request_address,
    scope_address,
)

PROXIES = ("10.0.0.0/8", "::1/128")


@pytest.fixture
def behind(settings):
    settings.GROVE_TRUSTED_PROXIES = PROXIES
    settings.GROVE_FORWARDED_HEADER = "x-forwarded-for"
    return settings


def test_without_trusted_proxies_the_header_is_never_read(settings):
    settings.GROVE_TRUSTED_PROXIES = ()
    assert client_address("10.0.0.1", "203.0.113.9") == "10.0.0.1"
    assert client_address("127.0.0.1", "203.0.113.9") == "127.0.0.1"


def test_an_untrusted_peer_cannot_choose_its_address(behind):
    assert client_address("198.51.100.4", "203.0.113.9") == "198.51.100.4"
    assert client_address("198.51.100.4", "10.0.0.3") == "198.51.100.4"


def test_behind_trusted_proxies_the_right_most_untrusted_hop_is_the_client(behind):
    assert client_address("10.0.0.1", "203.0.113.9") == "203.0.113.9"
    # What the client wrote itself stands left of what the proxy appended.
    assert client_address("10.0.0.1", "6.6.6.6, 203.0.113.9") == "203.0.113.9"
    # Two proxies: the inner one appended the outer one's address.
    assert client_address("10.0.0.1", "6.6.6.6, 203.0.113.9, 10.2.0.5") == "203.0.113.9"
    # Every hop a trusted proxy: the client is inside, the left-most one.
    assert client_address("10.0.0.1", "10.9.9.9, 10.2.0.5") == "10.9.9.9"
    # A hop that is no address ends the walk at the last one a proxy vouched for.
    assert client_address("10.0.0.1", "unknown, 10.2.0.5") == "10.2.0.5"
    assert client_address("10.0.0.1", "  ") == "10.0.0.1"
    # Ports, IPv6 and IPv4-mapped forms name the same address.
    assert client_address("10.0.0.1", "203.0.113.9:5678") == "203.0.113.9"
    assert client_address("::1", "[2001:db8::7]:443") == "2001:db8::7"
    assert client_address("::ffff:10.0.0.1", "::ffff:203.0.113.9") == "203.0.113.9"


def test_x_real_ip_and_forwarded(behind):
    behind.GROVE_FORWARDED_HEADER = "x-real-ip"
    assert client_address("10.0.0.1", "203.0.113.9") == "203.0.113.9"
    assert client_address("198.51.100.4", "203.0.113.9") == "198.51.100.4"
    behind.GROVE_FORWARDED_HEADER = "forwarded"
    value = 'for=6.6.6.6, for=192.0.2.60;proto=https;by=10.0.0.1, for="[2001:db8:cafe::17]:4711"'
    assert client_address("10.0.0.1", value) == "2001:db8:cafe::17"
    assert client_address("10.0.0.1", "for=192.0.2.60;proto=https, for=10.2.0.5") \
        == "192.0.2.60"
    assert client_address("10.0.0.1", "for=_hidden, for=10.2.0.5") == "10.2.0.5"


def test_django_and_asgi_read_the_configured_header(behind):
    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.1",
                                   HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.9",
                                   HTTP_X_REAL_IP="192.0.2.1")
    scope = {"client": ("10.0.0.1", 5555), "headers": [
        (b"x-forwarded-for", b"6.6.6.6"), (b"X-Forwarded-For", b"203.0.113.9"),
        (b"x-real-ip", b"192.0.2.1")]}
    assert request_address(request) == scope_address(scope) == "203.0.113.9"
    behind.GROVE_FORWARDED_HEADER = "x-real-ip"
    assert request_address(request) == scope_address(scope) == "192.0.2.1"
    assert scope_address({"client": None, "headers": []}) == "unknown"


def test_the_settings_are_checked():
    assert parse_proxies(" 127.0.0.1, 10.1.2.3/8  fd00::/8,127.0.0.1") == (
        "127.0.0.1/32", "10.0.0.0/8", "fd00::/8")
    assert parse_proxies("") == ()
    with pytest.raises(ValueError, match="'proxy.example.org' is not an IP address"):
        parse_proxies("127.0.0.1, proxy.example.org")
    with pytest.raises(ValueError, match="trusts every address"):
        parse_proxies("::/0")
    assert parse_header("X-Real-IP") == "x-real-ip"
    with pytest.raises(ValueError, match="not one of X-Forwarded-For, X-Real-IP, Forwarded"):
        parse_header("X-Client-IP")


@pytest.mark.parametrize(("address", "key"), [
    ("203.0.113.9", "203.0.113.9"),
    ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
    ("2001:db8:1:2:ffff:ffff:ffff:fffe", "2001:db8:1:2::/64"),  # the same subscriber
    ("2001:db8:1:3::1", "2001:db8:1:3::/64"),  # the next /64: someone else
    ("fe80::1%eth0", "fe80::/64"),  # a zone is no part of who it is
    ("::ffff:198.51.100.4", "198.51.100.4"),
    ("unknown", "unknown"),
])
def test_a_limit_counts_an_ipv6_client_by_its_64(address, key):
    from grove.kernel.addresses import limit_key

    assert limit_key(address) == key
