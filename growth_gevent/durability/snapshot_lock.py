"""One owner of a store at a time, whatever happens to the files beside it (:class:`SnapshotLock`), and the
snapshot's errors.

Two processes on one snapshot would overwrite each other's snapshots, and the journal segments that one
appends to would be removed by the other's snapshot. A lock file alone does not hold: ``rm PATH.lock``
(the usual "stale lock" reflex) let a second process lock a new file of the same name while the first
still ran (issue 42). So the owner locks the snapshot's folder itself, which cannot be removed while it
holds the store's files: an open file description lock (``F_OFD_SETLK``, read: the descriptor is the
folder's, opened ``O_RDONLY | O_DIRECTORY``) on one byte of it, the byte chosen by the snapshot's name, so
that a folder holds several stores. A process that starts on the path asks whether a write lock on that
byte would conflict (``F_OFD_GETLK``): if so, a server owns the store. Starters take turns under a
``flock`` of the folder, held only while they look and lock, so two of them cannot both find the byte free.
No file removed beside the data changes the lock; the kernel releases it when the process ends, however it
ends (kill -9 included), so it is never stale. PostgreSQL re-checks its ``postmaster.pid`` once a minute and
stops when it is gone; this lock cannot be gone while the server runs.

``PATH.lock`` is kept beside the snapshot too: it holds the owner's pid (for the message of a second
process; an OFD lock has no pid), and is ``flock``-ed as well, so that a server of a version before the
folder lock, still running on the path, is seen.
"""

import contextlib
import fcntl
import os
import struct
import time
import zlib
from collections.abc import Iterator
from typing import BinaryIO

from .journal import fsync_directory_of

LOCK_SUFFIX = ".lock"
# How long a starter waits for its turn at the folder's flock: a turn takes two fcntl calls, so only
# something else holding a flock on the folder (a backup tool, an operator's shell) makes it wait this long.
FOLDER_TURN_SECONDS = 10.0
# Linux's struct flock (short type, short whence, off_t start, off_t len, pid_t pid), 64-bit off_t.
_FLOCK = struct.Struct("hhqqi4x")


class SnapshotError(Exception):
    """A snapshot file that cannot be used; the message says why."""


class SnapshotInUse(SnapshotError):
    """Another process owns the snapshot path's folder."""


def temporary_path(path: str) -> str:
    """Where ``path`` is written before it is renamed into place: one name, since one process owns it."""
    directory, name = os.path.split(os.path.abspath(path))
    return os.path.join(directory, f".{name}.tmp")


@contextlib.contextmanager
def replaced_durably(path: str) -> Iterator[BinaryIO]:
    """A file written in ``path``'s place: into its temporary (readable by the service's user only), fsynced,
    renamed over ``path``, then the folder fsynced; the temporary removed if the writing fails. The caller
    owns ``path`` (its :class:`SnapshotLock`), or knows that nothing else writes it."""
    temporary = temporary_path(path)
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with open(descriptor, "wb") as output:
            yield output
            output.flush()
            os.fsync(output.fileno())
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
    fsync_directory_of(path)  # the rename itself is durable only once the folder's entry is


class SnapshotLock:
    """This process's ownership of a snapshot path and its folder, for as long as the process lives."""

    def __init__(self, path: str, turn_seconds: float = FOLDER_TURN_SECONDS) -> None:
        self.path = path
        self.lock_path = path + LOCK_SUFFIX
        self.folder = os.path.dirname(os.path.abspath(path))
        self._folder = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        byte = zlib.crc32(os.path.basename(path).encode())  # this store's byte of the folder
        self._take_turn(turn_seconds)  # starters take turns; a running server holds no flock
        try:
            held = _FLOCK.unpack(fcntl.fcntl(self._folder, fcntl.F_OFD_GETLK,
                                             _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, byte, 1, 0)))[0]
            if held == fcntl.F_UNLCK:
                fcntl.fcntl(self._folder, fcntl.F_OFD_SETLK, _FLOCK.pack(fcntl.F_RDLCK, os.SEEK_SET, byte, 1, 0))
        finally:
            fcntl.flock(self._folder, fcntl.LOCK_UN)
        if held != fcntl.F_UNLCK:
            os.close(self._folder)
            raise self._in_use(_pid_in(self.lock_path), f"which holds the lock on its folder {self.folder}")
        self._lock_file()
        self._remove_stale_temporary()

    def _take_turn(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while True:
            try:
                fcntl.flock(self._folder, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(self._folder)
                    raise SnapshotInUse(
                        f"the folder {self.folder} is locked (flock) by another process for over {seconds:g} s, "
                        f"so GROWTH_SNAPSHOT {self.path} cannot be checked for an owner: find what holds it "
                        f"(lsof {self.folder}) and start again") from None
                time.sleep(0.01)

    def _lock_file(self) -> None:
        self.created = not os.path.exists(self.lock_path)  # so it is no sign that a store lived here
        # Not truncated on opening: the owner's pid is in it, for the message of a second process.
        self._file = open(os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600), "r+")
        try:
            fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # a server of a version before the folder lock
            self.close()
            raise self._in_use(_pid_in(self.lock_path), f"which holds the lock {self.lock_path}") from None
        self._file.truncate(0)
        self._file.write(f"{os.getpid()}\n")
        self._file.flush()

    def abandon(self) -> None:
        """After a start that failed: remove the lock file if this process created it, so that the folder is left
        as it was found (a lock file is a sign that a store lived there: :func:`~.identity.store_gone`). Safe
        under the folder's lock, which is what excludes another owner."""
        if self.created:
            os.unlink(self.lock_path)

    def close(self) -> None:
        """Let go of the path (the process's end does it too)."""
        self._file.close()
        os.close(self._folder)

    def _in_use(self, owner: str | None, holding: str) -> SnapshotInUse:
        return SnapshotInUse(
            f"GROWTH_SNAPSHOT {self.path} is in use by another process{f' (pid {owner})' if owner else ''}, {holding} "
            f"({self.lock_path} names the owner): two processes on one store would overwrite each other's files. "
            "Stop that one first, or give this one another GROWTH_SNAPSHOT")

    def _remove_stale_temporary(self) -> None:
        # Only the owner may: the temporary of a live owner is its snapshot being written.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary_path(self.path))


def _pid_in(lock_path: str) -> str | None:
    """The pid that a lock file holds, if it holds one."""
    try:
        with open(lock_path) as lock:
            owner = lock.read().strip()
    except OSError:
        return None
    return owner if owner.isdigit() else None
