"""One process's ownership of a snapshot path (:class:`SnapshotLock`), and the snapshot's errors: two processes
writing one file would overwrite each other's snapshots, and the one that started second would remove the
other's temporary file as a stale one."""

import fcntl
import os

LOCK_SUFFIX = ".lock"


class SnapshotError(Exception):
    """A snapshot file that cannot be used; the message says why."""


class SnapshotInUse(SnapshotError):
    """Another process owns the snapshot path."""


def temporary_path(path: str) -> str:
    """Where ``path`` is written before it is renamed into place: one name, since one process owns it."""
    directory, name = os.path.split(os.path.abspath(path))
    return os.path.join(directory, f".{name}.tmp")


class SnapshotLock:
    """This process's ownership of a snapshot path, for as long as the process lives.

    An exclusive ``flock`` on ``PATH.lock``, a file beside the snapshot that holds the owner's pid. The
    kernel releases it when the process ends, however it ends (kill -9 included), so it is never stale;
    the file itself is never removed, since a process could otherwise lock a file that another had
    just unlinked while a third locks a new one of the same name.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.lock_path = path + LOCK_SUFFIX
        self.created = not os.path.exists(self.lock_path)  # so it is no sign that a store lived here
        # Not truncated on opening: the owner's pid is in it, for the message of a second process.
        self._file = open(os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600), "r+")
        try:
            fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = self._file.read().strip()
            self._file.close()
            raise SnapshotInUse(
                f"GROWTH_SNAPSHOT {path} is in use by another process"
                f"{f' (pid {owner})' if owner.isdigit() else ''}, which holds the lock {self.lock_path}: two "
                "processes on one snapshot would overwrite each other's. Stop that one first, or give this one "
                "another GROWTH_SNAPSHOT") from None
        self._file.truncate(0)
        self._file.write(f"{os.getpid()}\n")
        self._file.flush()
        self._remove_stale_temporary()

    def abandon(self) -> None:
        """After a start that failed: remove the lock file if this process created it, so that the folder is left
        as it was found (a lock file is a sign that a store lived there: :func:`~.identity.store_gone`)."""
        if self.created:
            os.unlink(self.lock_path)

    def _remove_stale_temporary(self) -> None:
        # Only the owner may: the temporary of a live owner is its snapshot being written.
        try:
            os.unlink(temporary_path(self.path))
        except FileNotFoundError:
            pass
