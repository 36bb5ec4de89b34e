"""Redis behind Sentinel: the primary of a service found by asking the Sentinels, verified, and followed
through failovers.

The Sentinels are asked with the store's own :class:`~.connection.Connection` (gevent sockets, TLS as for
the data nodes), not with redis-py's ``Sentinel``, whose blocking connections and non-blocking pool fit
neither the shared pipelined connection nor the cache; what redis-py's ``Sentinel.discover_master`` does
is kept: each Sentinel in turn (the first that answers moves to the front), ``SENTINEL MASTER`` parsed by
redis-py, and its answer trusted only when the Sentinel sees the primary up (no ``s_down``, ``o_down``, nor
a failover in progress). As Redis's guide for Sentinel clients asks, a connection to the address found is
used only once ``ROLE`` says ``master``, and a ``READONLY`` reply, a lost connection, or the Sentinels'
``+odown``, ``+try-failover`` and ``+switch-master`` messages make the store ask again.
"""

import logging
import socket
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gevent
import redis
from redis._parsers.helpers import parse_sentinel_state

from ...core.logs import ThrottledLog
from .connection import LOST, Connection, ask, connect, open_connection

SCHEMES = ("redis+sentinel://", "rediss+sentinel://")
DEFAULT_SENTINEL_PORT = 26379
# Sentinel's messages that mean the primary in use is, or is about to be, no longer the primary.
FAILOVER_CHANNELS = ("+odown", "+try-failover", "+switch-master")
# How long the follower waits before it connects to a Sentinel again, once it lost the one it followed.
RECONNECT_SECONDS = 1.0
# Every request that finds the primary gone gives it up, until the Sentinels see it down: said once a
# primary, then at most once a minute, with the count of the lines left out.
GIVEN_UP_LOG_SECONDS = 60.0

log = logging.getLogger("growth_gevent")


@dataclass(frozen=True)
class SentinelURL:
    """``redis+sentinel://[user:password@]host:port[,host:port...]/SERVICE[/db]`` (``rediss+sentinel://``:
    TLS to the Sentinels and the data nodes). The credentials and the database are the data nodes'."""

    sentinels: tuple[tuple[str, int], ...]
    service: str
    options: dict  # of the data nodes, as redis-py's parse_url() makes them, without host and port

    @classmethod
    def parse(cls, url: str) -> "SentinelURL":
        """The URL's parts; ValueError saying what is wrong with it."""
        scheme, _, rest = url.partition("://")
        if scheme.lower() not in ("redis+sentinel", "rediss+sentinel"):
            raise ValueError(f"a Sentinel URL starts with {' or '.join(SCHEMES)}, got {url!r}")
        location, _, path = rest.partition("/")
        credentials, _, hosts = location.rpartition("@")
        options: dict = {}
        if scheme.lower() == "rediss+sentinel":
            options["connection_class"] = redis.connection.SSLConnection
        if credentials:
            username, has_password, password = credentials.partition(":")
            if username:
                options["username"] = urllib.parse.unquote(username)
            if has_password:
                options["password"] = urllib.parse.unquote(password)
        sentinels = tuple(_address(host, url) for host in hosts.split(","))
        service, _, database = path.partition("/")
        if not service:
            raise ValueError(f"a Sentinel URL names the service after the Sentinels (/SERVICE[/db]), got {url!r}")
        if database.strip("/"):
            if not database.strip("/").isdigit():
                raise ValueError(f"the database of a Sentinel URL is a number (/SERVICE/db), got {url!r}")
            options["db"] = int(database.strip("/"))
        return cls(sentinels, urllib.parse.unquote(service), options)

    def node(self, address: tuple[str, int]) -> dict:
        """The options of a connection to the data node at ``address``."""
        return {**self.options, "host": address[0], "port": address[1]}

    def sentinel(self, address: tuple[str, int]) -> dict:
        """The options of a connection to the Sentinel at ``address``: TLS as for the data nodes, no AUTH."""
        tls = {key: value for key, value in self.options.items() if key == "connection_class"}
        return {**tls, "host": address[0], "port": address[1]}


def _address(text: str, url: str) -> tuple[str, int]:
    host, colon, port = text.strip().rpartition(":")
    if not colon:
        host, port = text.strip(), str(DEFAULT_SENTINEL_PORT)
    host = host.strip("[]")  # an IPv6 address: [::1]:26379
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"a Sentinel URL lists Sentinels as host:port, comma-separated; got {text!r} in {url!r}")
    return host, int(port)


class NoPrimary(redis.ConnectionError):
    """No primary to use now: the Sentinels do not answer, or say that a failover is under way."""


class SentinelPrimary:
    """The primary of a service, as the Sentinels name it: :meth:`connect` makes a connection to it,
    verified; :meth:`suspect` forgets it, so that the next connection asks the Sentinels again. Every
    ``on_change`` callback runs when the primary is forgotten, to close the connections made to it (and
    empty what was read through them)."""

    def __init__(self, url: SentinelURL, timeout: float, verify_tls: bool):
        self._url = url
        self._sentinels = list(url.sentinels)
        self._timeout = timeout
        self._verify_tls = verify_tls
        self._address: tuple[str, int] | None = None  # the primary in use; None until found again
        self._last_address: tuple[str, int] | None = None  # the last one found, to tell a change
        self._finding: gevent.Greenlet | None = None  # the greenlet asking the Sentinels now
        self._missing = False  # no primary could be found, said in the log, not found since
        self._listeners: list[Callable[[], None]] = []
        self._given_up_log = ThrottledLog(1, GIVEN_UP_LOG_SECONDS, log)
        self._follower = gevent.spawn(self._follow)

    def on_change(self, callback: Callable[[], None]) -> None:
        self._listeners.append(callback)

    def address(self) -> tuple[str, int]:
        """The primary's host and port; NoPrimary when the Sentinels name none (their answers say why).
        Callers at the same time share one round of questions, which takes at most the timeout."""
        if self._address is not None:
            return self._address
        if self._finding is None:
            self._finding = gevent.spawn(self._find)
        finding = self._finding
        try:
            found = finding.get()
        finally:
            if self._finding is finding:
                self._finding = None
        if isinstance(found, NoPrimary):
            raise found
        return found

    def connect(self) -> Connection:
        """A connection to the primary, authenticated, on the URL's database, that ``ROLE`` says is the
        primary; NoPrimary or a lost connection's error otherwise (and the primary is asked for again)."""
        address = self.address()
        try:
            connection = open_connection(self._url.node(address), self._timeout, self._verify_tls)
        except LOST as error:
            self.suspect(f"the primary {_name(address)} cannot be reached: {error}")
            raise
        try:
            role = ask(connection, "ROLE")[0]
        except BaseException:
            connection.close()
            raise
        if role != b"master":
            connection.close()
            self.suspect(f"{_name(address)} is a {role.decode()}, not the primary")
            raise NoPrimary(f"{_name(address)}, named the primary of {self._url.service!r}, is a {role.decode()} "
                            "now: a failover is under way")
        return connection

    def suspect(self, why: str) -> None:
        """The primary in use may no longer be the primary: close every connection to it; the next one asks
        the Sentinels."""
        if self._address is None:
            return
        self._given_up_log.log(logging.WARNING, "Redis primary %s of %r given up: %s; asking the Sentinels",
                               _name(self._address), self._url.service, why, key=self._address)
        self._address = None
        for callback in self._listeners:
            callback()

    def close(self) -> None:
        self._follower.kill()
        if self._finding is not None:
            self._finding.kill()

    def _find(self) -> tuple[str, int] | NoPrimary:
        try:
            with gevent.Timeout(self._timeout, NoPrimary(f"no Sentinel answered within {self._timeout} s")):
                address = self._ask_sentinels()
        except NoPrimary as error:
            if not self._missing:
                log.error("no Redis primary for %r, answering 503 until there is one: %s", self._url.service, error)
            self._missing = True
            return error
        if address != self._last_address or self._missing:
            self._given_up_log.reset()  # a primary found again: the next time it is given up is news
        if address != self._last_address:
            if self._last_address is None:
                log.info("Redis primary of %r: %s", self._url.service, _name(address))
            else:
                log.warning("Redis primary of %r changed: %s -> %s", self._url.service,
                            _name(self._last_address), _name(address))
        elif self._missing:
            log.info("Redis primary of %r back: %s", self._url.service, _name(address))
        self._missing = False
        self._address = self._last_address = address
        return address

    def _ask_sentinels(self) -> tuple[str, int]:
        """What redis-py's Sentinel.discover_master does, on the store's own connections."""
        said = []
        for index, sentinel in enumerate(self._sentinels):
            try:
                state = self._master_state(sentinel)
            except (*LOST, redis.ResponseError) as error:
                said.append(f"Sentinel {_name(sentinel)}: {error}")
                continue
            flags = set(state["flags"].split(","))
            if not state["is_master"] or state["is_sdown"] or state["is_odown"] or "failover_in_progress" in flags:
                said.append(f"Sentinel {_name(sentinel)} sees {state['ip']}:{state['port']} as {state['flags']}")
                continue
            self._sentinels.insert(0, self._sentinels.pop(index))
            return state["ip"], int(state["port"])
        raise NoPrimary(f"none of the Sentinels names an available primary of {self._url.service!r}: "
                        + "; ".join(said))

    def _master_state(self, sentinel: tuple[str, int]) -> dict:
        connection = connect(self._url.sentinel(sentinel), self._timeout, self._verify_tls)
        try:
            reply = ask(connection, "SENTINEL", "MASTER", self._url.service)
            return parse_sentinel_state([item.decode(errors="replace") for item in reply])
        finally:
            connection.close()

    def _follow(self) -> None:
        """The greenlet that follows the Sentinels' failover messages on one Sentinel at a time, moving
        to the next when it is lost."""
        lost_all = False
        while True:
            for sentinel in list(self._sentinels):
                try:
                    connection = connect(self._url.sentinel(sentinel), self._timeout, self._verify_tls)
                except LOST:
                    continue
                try:
                    ask(connection, "SUBSCRIBE", *FAILOVER_CHANNELS)
                    connection.settimeout(None)  # messages come when a failover does
                    if lost_all:
                        log.info("following the Sentinels' failover messages again, on %s", _name(sentinel))
                        lost_all = False
                    self._listen(connection)
                except LOST:
                    pass
                finally:
                    connection.close()
            if not lost_all:
                log.warning("no Sentinel of %r answers: a failover would not be followed until one does; the "
                            "primary in use is still used", self._url.service)
                lost_all = True
            gevent.sleep(RECONNECT_SECONDS)

    def _listen(self, connection: Connection) -> None:
        while True:
            for message in connection.receive():
                if message[0] != b"message":
                    continue  # the subscriptions' confirmations
                channel, words = message[1].decode(), message[2].decode(errors="replace").split()
                # "+switch-master <service> ..."; the others "master <service> ..."
                if channel == "+switch-master":  # <service> <old ip> <old port> <new ip> <new port>
                    if words[0] == self._url.service and (words[3], int(words[4])) != self._address:
                        self.suspect(f"Sentinel says {channel} {' '.join(words)}")
                elif words[1:2] == [self._url.service]:  # master <service> <ip> <port> ...
                    self.suspect(f"Sentinel says {channel} {' '.join(words)}")


class PrimaryConnection(redis.Connection):
    """A redis-py connection (of the bulk loads' pool) to the primary that the Sentinels name, found
    again at each connect."""

    def __init__(self, primary: SentinelPrimary, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._primary = primary

    def _connect(self) -> socket.socket:
        self.host, self.port = self._primary.address()
        return super()._connect()


class PrimarySSLConnection(PrimaryConnection, redis.SSLConnection):
    """The same over TLS: its ``_connect`` finds the primary, then ``redis.SSLConnection``'s wraps the socket."""


def _name(address: tuple[str, int]) -> str:
    return f"{address[0]}:{address[1]}"
