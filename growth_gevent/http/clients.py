"""Who the client of a request is: the socket's address, or, from a router trusted by ``FORWARDED_ALLOW_IPS``,
the right-most ``X-Forwarded-For`` address that is not a trusted one (each router appends the address it
was connected from; what the client wrote itself is to the left and never believed). And the key that
per-client rules count a client under: an IPv6 client by its /64, which one host holds (RFC 4291's
interface identifier), rather than each of its 2**64 addresses.
"""

import ipaddress
import re

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

# The bits of an IPv6 address that name the network a host is given (a /64).
_IPV6_HOST_BITS = 64
# The bits of ::ffff:0:0/96 before the IPv4 address that an IPv4-mapped IPv6 address holds.
_MAPPED_PREFIX = 96
# ``[IPv6]``, ``[IPv6]:port`` or ``IPv4:port``: the address without its brackets, and the port.
_WITH_PORT = re.compile(r"\[([^\]]*)\](?::([0-9]{1,5}))?|([0-9.]+):([0-9]{1,5})")
_MAX_PORT = 65535


class TrustedRouters:
    """``FORWARDED_ALLOW_IPS``: the addresses (networks) of the routers whose ``X-Forwarded-For`` is
    believed; ``*``: whoever connects (only a router can, as on Heroku)."""

    def __init__(self, networks: tuple[Network, ...], any_peer: bool) -> None:
        self.networks = networks
        self.any_peer = any_peer

    @classmethod
    def parse(cls, raw: str) -> "TrustedRouters":
        """``*``, or addresses and networks separated by commas (``10.0.0.0/8,::1``); a ValueError
        naming the part that is neither."""
        parts = [part.strip() for part in raw.split(",") if part.strip()]
        if parts == ["*"]:
            return cls((), True)
        if not parts:
            raise ValueError("must be * or addresses and networks separated by commas, got nothing")
        networks = []
        for part in parts:
            try:
                networks.append(_unmapped(ipaddress.ip_network(part, strict=False)))
            except ValueError:
                raise ValueError(f"must be * or addresses and networks separated by commas (such as "
                                 f"10.0.0.0/8,127.0.0.1), got {part!r}") from None
        return cls(tuple(networks), False)

    def __repr__(self) -> str:
        return "*" if self.any_peer else ",".join(map(str, self.networks))

    def trusts(self, address: str) -> bool:
        """Whether the router at ``address`` (a socket's peer) is believed."""
        return self.any_peer or self._listed(_address(address))

    def client(self, peer: str, forwarded_for: str) -> str:
        """The client's address behind ``peer`` (trusted): the right-most address of ``forwarded_for`` that
        is not a listed router's; ``peer`` itself when the header holds no address there (garbage, or
        empty), since a key a client could choose would give it as many shares as it likes."""
        for part in reversed(forwarded_for.split(",")):
            address = _address(part.strip())
            if address is None:
                return peer
            if not self._listed(address):
                return str(address)
        return peer

    def _listed(self, address: Address | None) -> bool:
        return address is not None and any(address in network for network in self.networks)


def _address(text: str) -> Address | None:
    """The address of an ``X-Forwarded-For`` element or a socket's peer: ``IPv4``, ``IPv6``, ``[IPv6]``, and with
    a port as some routers append it (``IPv4:port``, ``[IPv6]:port``); None for anything else. An IPv6
    address with a port but no brackets cannot be told from one without: not read."""
    match = _WITH_PORT.fullmatch(text)
    if match is not None:
        bracketed, port, ipv4, ipv4_port = match.groups()
        if int(port or ipv4_port or 0) > _MAX_PORT:
            return None
        text = bracketed if ipv4 is None else ipv4
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _unmapped(network: Network) -> Network:
    """An IPv4-mapped IPv6 network (``::ffff:10.0.0.0/104``, as a dual-stack socket shows a router) as the
    IPv4 one it maps, since addresses are compared in their IPv4 form (:func:`_address`)."""
    mapped = network.network_address.ipv4_mapped if isinstance(network, ipaddress.IPv6Network) else None
    if mapped is None or network.prefixlen < _MAPPED_PREFIX:
        return network
    return ipaddress.IPv4Network((mapped, network.prefixlen - _MAPPED_PREFIX))


def client_key(address: str) -> str:
    """What per-client rules count ``address`` under: an IPv4 address itself, an IPv6 one its /64."""
    if ":" not in address:
        return address
    parsed = _address(address)
    if not isinstance(parsed, ipaddress.IPv6Address):
        return address if parsed is None else str(parsed)
    return str(ipaddress.IPv6Network((int(parsed) >> _IPV6_HOST_BITS << _IPV6_HOST_BITS, _IPV6_HOST_BITS)))
