"""Who the client is (growth_gevent/http/clients.py): FORWARDED_ALLOW_IPS's routers, the right-most forwarded
address that is not theirs, and IPv6 clients counted by their /64. Against a live server:
tests/api/test_body_budget_live.py and tests/http/test_http_live.py."""

import pytest

from growth_gevent.config import Config, ConfigError
from growth_gevent.http.clients import TrustedRouters, client_key


@pytest.mark.parametrize("allowed, peer, trusted", [
    ("*", "203.0.113.9", True), ("*", "2001:db8::1", True),
    ("10.0.0.0/8, 127.0.0.1", "10.1.2.3", True), ("10.0.0.0/8,127.0.0.1", "127.0.0.1", True),
    ("10.0.0.0/8,127.0.0.1", "127.0.0.2", False), ("10.0.0.0/8", "::ffff:10.0.0.1", True),
    ("2001:db8::/32", "2001:db8:5::1", True), ("2001:db8::/32", "2001:db9::1", False),
    # A router listed as a dual-stack socket shows it (ss, netstat): the same address as its IPv4 form.
    ("::ffff:10.0.0.0/104", "10.1.2.3", True), ("::ffff:10.0.0.0/104", "::ffff:10.1.2.3", True),
    ("::ffff:127.0.0.1", "127.0.0.1", True), ("::ffff:10.0.0.0/104", "11.0.0.1", False),
])
def test_the_routers_whose_header_is_believed(allowed, peer, trusted):
    assert TrustedRouters.parse(allowed).trusts(peer) is trusted


@pytest.mark.parametrize("allowed, forwarded_for, client", [
    ("*", "198.51.100.7", "198.51.100.7"),
    # What a client wrote itself is to the left of what the router appended: never believed.
    ("*", "1.2.3.4, 198.51.100.7", "198.51.100.7"),
    ("10.0.0.0/8", "1.2.3.4,198.51.100.7, 10.0.0.5", "198.51.100.7"),  # two routers: the inner one skipped
    ("*", " 2001:DB8::7 ", "2001:db8::7"), ("*", "[2001:db8::7]", "2001:db8::7"),
    # No address where the client's should be: the router's own, never a key the client chose.
    ("*", "1.2.3.4, not-an-address", "10.0.0.1"), ("*", "", "10.0.0.1"), ("10.0.0.0/8", "10.0.0.9", "10.0.0.1"),
    # Routers that append the address with its port (Azure's, some proxies'): the address is the client.
    ("*", "198.51.100.7:51234", "198.51.100.7"), ("*", "[2001:db8::7]:443", "2001:db8::7"),
    ("10.0.0.0/8", "198.51.100.7:80, 10.0.0.5:8080", "198.51.100.7"),
    # Not a port: the router's own address, as for any other garbage.
    ("*", "198.51.100.7:", "10.0.0.1"), ("*", "198.51.100.7:http", "10.0.0.1"),
    ("*", "198.51.100.7:123456", "10.0.0.1"), ("*", "198.51.100.7:65536", "10.0.0.1"),
    ("*", "[2001:db8::7]:", "10.0.0.1"), ("*", "[2001:db8::7]x", "10.0.0.1"), ("*", "2001:db8::7:99999", "10.0.0.1"),
])
def test_the_client_is_the_right_most_forwarded_address_that_is_not_a_routers(allowed, forwarded_for, client):
    assert TrustedRouters.parse(allowed).client("10.0.0.1", forwarded_for) == client


@pytest.mark.parametrize("address, key", [
    ("198.51.100.7", "198.51.100.7"), ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
    ("2001:db8:1:2::ffff", "2001:db8:1:2::/64"), ("::ffff:198.51.100.7", "198.51.100.7"),
])
def test_an_ipv6_client_is_counted_by_its_64(address, key):
    assert client_key(address) == key


def test_forwarded_allow_ips_is_read_once_and_refuses_what_is_no_address():
    assert Config.from_env({}).forwarded_allow_ips is None  # by default the header is ignored
    assert repr(Config.from_env({"FORWARDED_ALLOW_IPS": "*"}).forwarded_allow_ips) == "*"
    assert repr(Config.from_env({"FORWARDED_ALLOW_IPS": "10.0.0.1/8, ::1"}).forwarded_allow_ips) == "10.0.0.0/8,::1/128"
    with pytest.raises(ConfigError, match="FORWARDED_ALLOW_IPS must be \\* or addresses .* got 'router'"):
        Config.from_env({"FORWARDED_ALLOW_IPS": "10.0.0.1,router"})
