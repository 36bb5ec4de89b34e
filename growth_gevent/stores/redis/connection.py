"""A connection of the store's own to Redis, below redis-py: the socket (TCP, TLS or unix) and the
reader of its replies; the handshake (AUTH, SELECT) apart from the connect, so that a test can speak to
a fake Redis on any socket."""

import contextlib
import socket
from collections.abc import Callable
from typing import Any

import gevent.socket
import gevent.ssl
import hiredis
import redis
from redis._parsers import BaseParser

# What a lost connection raises: the socket's errors (timeouts too), a garbled stream, Redis refusing us
# while loading or at its client limit, or a wrong password (redis.ConnectionError covers the last ones).
LOST = (OSError, hiredis.ProtocolError, redis.ConnectionError)


def command(*arguments: Any) -> bytes:
    """One command in RESP, as Redis reads it (strings in UTF-8), encoded in C: a fifth of the time."""
    return hiredis.pack_command(arguments)


PING = command("PING")


class NotSent(redis.ConnectionError):
    """The command was not written: sending it on a new connection is safe."""


class Connection:
    """A gevent socket, which waits cooperatively whether or not the standard library is patched (the
    tests do not patch it), and the reader of its replies, which turns error replies into redis-py's
    exceptions."""

    def __init__(self, sock: gevent.socket.socket) -> None:
        self.socket = sock
        # Error replies become redis-py's exceptions, mapped as redis-py maps them.
        self._reader = hiredis.Reader(replyError=BaseParser.parse_error)

    def receive(self) -> list:
        """The replies that the next read from the socket completes (maybe none)."""
        data = self.socket.recv(65536)
        if not data:
            raise ConnectionResetError("Redis closed the connection")
        self._reader.feed(data)
        replies = []
        while (reply := self._reader.gets()) is not False:
            replies.append(reply)
        return replies

    def unasked(self) -> redis.RedisError | None:
        """What Redis sent on a connection that has nothing in flight, checked without waiting: None, or
        the error to close it with (its end, which :class:`NotSent` says; or a refusal, such as at its
        client limit)."""
        self.socket.settimeout(0.0)
        try:
            data = self.socket.recv(65536)
        except (BlockingIOError, gevent.ssl.SSLWantReadError):
            return None
        finally:
            self.socket.settimeout(None)
        if not data:
            return NotSent("Redis had closed the connection")
        self._reader.feed(data)
        return unasked_reply_error(self._reader.gets())

    def settimeout(self, seconds: float | None) -> None:
        self.socket.settimeout(seconds)

    def sendall(self, data: bytes) -> None:
        self.socket.sendall(data)

    def close(self) -> None:
        self.socket.close()


# What makes a new connection, authenticated and on the URL's database (see open_connection).
Connect = Callable[[], Connection]


def unasked_reply_error(reply: Any) -> redis.RedisError:
    """The error to close a connection with, on which Redis sent ``reply`` unasked: Redis speaks first only
    to refuse a new connection."""
    return reply if isinstance(reply, redis.RedisError) else redis.ConnectionError(f"Redis sent {reply!r} unasked")


def ask(connection: Connection, *arguments: Any) -> Any:
    """Send one command and wait for its reply, raising an error reply (before pipelining starts)."""
    return ask_all(connection, [arguments])[0]


def ask_all(connection: Connection, commands: list[tuple[Any, ...]]) -> list[Any]:
    """Send ``commands`` in one write and wait for their replies (one round trip), raising the first error
    reply once all are in. Redis that refuses the connection (at its client limit) says why and closes it,
    maybe while the commands are still being sent: its reply, when it came, is the error raised."""
    replies: list[Any] = []  # RESP replies, of any of its types
    try:
        connection.sendall(b"".join(command(*arguments) for arguments in commands))
        while len(replies) < len(commands):
            replies += connection.receive()
    except OSError:
        if not replies:
            with contextlib.suppress(OSError):
                replies = [connection.unasked()]
        if replies and isinstance(replies[0], redis.RedisError) and not isinstance(replies[0], NotSent):
            raise replies[0] from None
        raise
    for reply in replies:
        if isinstance(reply, redis.RedisError):
            raise reply
    return replies


def connect(options: dict, timeout: float, verify_tls: bool) -> Connection:
    """A :class:`Connection` to the Redis of ``options`` (redis-py's parse_url()), TCP, TLS or unix, that
    waits at most ``timeout`` seconds; not yet authenticated (see :func:`handshake`)."""
    if "path" in options:
        sock = gevent.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        sock.connect(options["path"])
        return Connection(sock)
    host = options.get("host", "localhost")
    sock = gevent.socket.create_connection((host, options.get("port", 6379)), timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if options.get("connection_class") is redis.connection.SSLConnection:
        # gevent's context, whose sockets wait cooperatively (create_default_context() makes the
        # standard one).
        context = gevent.ssl.SSLContext(gevent.ssl.PROTOCOL_TLS_CLIENT)
        context.load_default_certs()
        if not verify_tls:
            context.check_hostname = False
            context.verify_mode = gevent.ssl.CERT_NONE
        sock = context.wrap_socket(sock, server_hostname=host)
    return Connection(sock)


def handshake(connection: Connection, options: dict) -> None:
    """AUTH and SELECT as the URL asks, if it does; a refusal is raised (redis-py's exception)."""
    password, username = options.get("password"), options.get("username")
    if password is not None:
        ask(connection, "AUTH", *([username] if username else []), password)
    if options.get("db"):
        ask(connection, "SELECT", options["db"])


def open_connection(options: dict, timeout: float, verify_tls: bool) -> Connection:
    """:func:`connect`, then :func:`handshake`: a connection ready for commands."""
    connection = connect(options, timeout, verify_tls)
    try:
        handshake(connection, options)
    except BaseException:
        connection.close()
        raise
    return connection
