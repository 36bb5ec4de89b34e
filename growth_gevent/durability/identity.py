"""Which store a file belongs to, and which boot of the machine wrote it (issue 42).

A store's identity is made when the store is created (a random 128-bit number, in hex) and written in its
snapshot, in every journal segment's link and in the marker ``SNAPSHOT.id`` beside them, as PostgreSQL
stamps its system identifier in ``pg_control`` and every WAL page header: replay and ``check`` refuse a file
that names another store before anything is applied (a restore from the wrong backup). Files written before
identities (snapshot version 1 and 2, segment versions 1 to 3) name none: they are read, with a warning.

The marker also outlives the data it names: a folder that holds it (or the lock file) held a store, so a
missing snapshot with no segment is refused rather than taken for a new, empty store
(:func:`store_gone`); ``growth-gevent check --forget`` removes them to start afresh on purpose.

A segment's link also holds the machine's boot id (Linux's ``/proc/sys/kernel/random/boot_id``, new at every
boot): a record whose every byte is there but whose checksum fails, in a segment written since the machine
last started, cannot be a crash (a killed process leaves a file cut short, never bytes changed), so replay
calls it damage; after a restart it may be a crash, and is dropped with a warning that says it may have been
acknowledged.
"""

import os
import re
import uuid
import zlib

from .journal import fsync_directory_of
from .journal_format import SEGMENT_INFIX, segment_numbers
from .snapshot_lock import LOCK_SUFFIX, replaced_durably

MARKER_SUFFIX = ".id"
BOOT_ID_PATH = "/proc/sys/kernel/random/boot_id"
_MARKER = re.compile(rb"growth-gevent store ([0-9a-f]{32})\ncrc32 ([0-9a-f]{8})\n")
STORE_ID = re.compile(r"[0-9a-f]{32}")
FORGET = "growth-gevent check --forget {path}"


class IdentityError(Exception):
    """A file of another store, a damaged marker, or a store whose files are gone: the message says which."""


def new_store_id() -> str:
    return uuid.uuid4().hex


def current_boot_id() -> str | None:
    """This boot's id, or None where the system has none (not Linux): then no tail is told from a crash."""
    try:
        with open(BOOT_ID_PATH) as boot:
            return boot.read().strip() or None
    except OSError:
        return None


class Identity:
    """The store that the files read so far belong to, and the first file that named it."""

    def __init__(self) -> None:
        self.store: str | None = None
        self.named_by: str | None = None

    def claim(self, path: str, store: str | None) -> None:
        """``path`` names ``store`` (None: it names none, an older file): IdentityError if another store."""
        if store is None:
            return
        if self.store is None:
            self.store, self.named_by = store, path
        elif store != self.store:
            raise IdentityError(f"{path} belongs to another store: it names store {store}, and {self.named_by} "
                                f"names store {self.store}. It was not loaded: restore this store's own file from "
                                "a backup (a backup of another store, or another store's file, was put here)")

    def make(self) -> str:
        """A new identity, for a new store (or files from before identities, which name none)."""
        assert self.store is None, "a store's identity is made once"
        self.store = new_store_id()
        return self.store


def marker_path(snapshot_path: str) -> str:
    return snapshot_path + MARKER_SUFFIX


def read_marker(snapshot_path: str) -> str | None:
    """The store named by the marker beside ``snapshot_path``, None if there is none; IdentityError if damaged."""
    path = marker_path(snapshot_path)
    try:
        with open(path, "rb") as marker:
            data = marker.read()
    except FileNotFoundError:
        return None
    found = _MARKER.fullmatch(data)
    if found is None or int(found.group(2), 16) != zlib.crc32(data[:data.index(b"\n") + 1]):
        raise IdentityError(f"{path} is damaged: it is not the line 'growth-gevent store ID' and its checksum. "
                            "Restore it from a backup, or remove it if the snapshot and journal beside it are this "
                            "store's (they name the store, and the next start writes it again)")
    return found.group(1).decode()


def write_marker(snapshot_path: str, store: str) -> None:
    """Write the marker durably, as the snapshot is written (:func:`.snapshot_lock.replaced_durably`)."""
    line = b"growth-gevent store %s\n" % store.encode()
    with replaced_durably(marker_path(snapshot_path)) as marker:
        marker.write(line + b"crc32 %08x\n" % zlib.crc32(line))


def store_gone(snapshot_path: str, lock_file_found: bool) -> str | None:
    """Why ``snapshot_path`` must not start as a new store: no snapshot and no segment, and the marker, or the
    lock file (``lock_file_found``: it was there before this process), shows that a store lived there; None
    when a file of the store is there, or no sign of one."""
    if os.path.exists(snapshot_path) or segment_numbers(snapshot_path):
        return None
    signs = [path for path, found in ((marker_path(snapshot_path), os.path.exists(marker_path(snapshot_path))),
                                      (snapshot_path + LOCK_SUFFIX, lock_file_found)) if found]
    if not signs:
        return None
    return (f"no snapshot {snapshot_path} and no journal segment {snapshot_path}{SEGMENT_INFIX}N beside it, but "
            f"{' and '.join(signs)} {'shows' if len(signs) == 1 else 'show'} that a store lived here: its files "
            "were removed, or the path is mistyped. Restore the snapshot from a backup; or, to start a new, empty "
            f"store here on purpose, run `{FORGET.format(path=snapshot_path)}`")


def forget(snapshot_path: str) -> list[str]:
    """Remove the marker and the lock file of a store whose snapshot and segments are gone (the caller holds its
    lock and checked :func:`store_gone`); the files removed."""
    removed = []
    for path in (marker_path(snapshot_path), snapshot_path + LOCK_SUFFIX):
        if os.path.exists(path):
            os.unlink(path)
            removed.append(path)
    fsync_directory_of(snapshot_path)
    return removed
