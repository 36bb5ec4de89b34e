"""A fake Redis in this process, for the layers below the store: a greenlet per connection, on a
socketpair, reads RESP commands (hiredis parses them, a command being an array of bulk strings) and
answers each as ``reply()`` says, or, while it hangs, once it resumes. In microseconds, no process."""

import gevent
import gevent.socket
import hiredis

from growth_gevent.stores.redis.connection import Connection

NO_REPLY = object()  # what reply() returns for a command left unanswered


class Error(str):
    """An error reply: ``Error("ERR unknown command")``."""


def encode(reply) -> bytes:
    """``reply`` in RESP2: bytes a bulk string, str a simple string, int an integer, None a nil, a list an
    array, :class:`Error` an error."""
    if isinstance(reply, Error):
        return b"-" + reply.encode() + b"\r\n"
    if reply is None:
        return b"$-1\r\n"
    if isinstance(reply, bool) or not isinstance(reply, (int, str, bytes, list, tuple)):
        raise TypeError(f"no RESP for {reply!r}")
    if isinstance(reply, int):
        return b":%d\r\n" % reply
    if isinstance(reply, str):
        return b"+" + reply.encode() + b"\r\n"
    if isinstance(reply, bytes):
        return b"$%d\r\n%s\r\n" % (len(reply), reply)
    return b"*%d\r\n" % len(reply) + b"".join(encode(item) for item in reply)


class FakeRedis:
    """Answers PING, ECHO, CLIENT ID, CLIENT TRACKING and SUBSCRIBE as Redis does (on a subscribed
    connection, PING with a ``pong`` message); GET with ``values``; anything else with an error. Tests
    change ``reply``, or ``hang()`` and ``resume()``; ``commands`` holds every command received, in order."""

    def __init__(self):
        self.commands = []
        self.values = {}
        self.hanging = False
        self._held = []  # (end, reply) of the commands received while hanging
        self.connections = 0  # made so far
        self._ends = []  # the fake's end of each connection still open
        self._greenlets = []

    def connect(self) -> Connection:
        """A new connection, as the store's ``open_connection`` makes one."""
        client, server = gevent.socket.socketpair()
        self.connections += 1
        self._ends.append(server)
        self._greenlets.append(gevent.spawn(self._serve, server))
        return Connection(client)

    def reply(self, command: tuple, subscribed: bool):
        name = command[0].upper()
        if name == b"PING":
            return [b"pong", b""] if subscribed else "PONG"
        if name == b"ECHO":
            return command[1]
        if name == b"GET":
            return self.values.get(command[1])
        if name == b"CLIENT" and command[1].upper() == b"ID":
            return 7
        if name == b"CLIENT" and command[1].upper() == b"TRACKING":
            return "OK"
        if name == b"SUBSCRIBE":
            return [b"subscribe", command[1], 1]
        return Error(f"ERR unknown command '{name.decode()}'")

    def hang(self) -> None:
        """Read commands and answer none of them, as a Redis that stopped (SIGSTOP, a long script)."""
        self.hanging = True

    def resume(self) -> None:
        """Answer the commands held, in order, on the connections still open; answer again."""
        self.hanging = False
        held, self._held = self._held, []
        for end, reply in held:
            try:
                end.sendall(encode(reply))
            except OSError:
                pass  # the client closed it meanwhile

    def push(self, message) -> None:
        """Send ``message`` unasked on the newest connection: an invalidation, or a refusal."""
        self._ends[-1].sendall(encode(message))

    def cut(self) -> None:
        """Close every connection, as a Redis that restarted."""
        for end in self._ends:
            end.close()
        self._ends.clear()

    def close(self) -> None:
        gevent.killall(self._greenlets)
        self.cut()

    def _serve(self, end):
        reader = hiredis.Reader()
        subscribed = False
        try:
            while data := end.recv(65536):
                reader.feed(data)
                replies = []
                while (command := reader.gets()) is not False:
                    command = tuple(command)
                    self.commands.append(command)
                    reply = self.reply(command, subscribed)
                    subscribed = subscribed or command[0].upper() == b"SUBSCRIBE"
                    if reply is NO_REPLY:
                        continue
                    if self.hanging or self._held:
                        self._held.append((end, reply))
                    else:
                        replies.append(encode(reply))
                if replies:
                    end.sendall(b"".join(replies))
        except OSError:
            pass  # cut
        end.close()
