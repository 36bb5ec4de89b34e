"""A journaled memory store as the service starts one, in-process: recovered from the snapshot and the journal."""

import os

from growth_gevent.config import DEFAULT_BULK_QUEUE_RECORDS, DEFAULT_MAX_RECORDS
from growth_gevent.durability.identity import Identity, current_boot_id
from growth_gevent.durability.journal_format import segment_path
from growth_gevent.durability.journaled import JournalLog
from growth_gevent.durability.replay import read_segment
from growth_gevent.durability.snapshot import load_snapshot
from growth_gevent.stores.memory import MemoryStore

KEY = ("A", "B", 1)


def journaled(path, fsync="always", chunk_size=2, queue_records=DEFAULT_BULK_QUEUE_RECORDS,
              max_records=DEFAULT_MAX_RECORDS, boot_id=current_boot_id):
    """A memory store journaled at ``path``, not yet recovered; ``boot_id``: where it reads this boot's id."""
    return MemoryStore(chunk_size=chunk_size, queue_records=queue_records, max_records=max_records,
                       write_log=JournalLog(path, fsync, boot_id))


def opened(path, fsync="always", chunk_size=2, boot_id=current_boot_id):
    """A store recovered from what ``path`` and its segments hold, as the service starts."""
    store = journaled(path, fsync, chunk_size, boot_id=boot_id)
    first, descriptions, identity = 0, None, Identity()
    if os.path.exists(path):
        items, first, descriptions, store_id = load_snapshot(path)
        identity.claim(path, store_id)
        store.submit_bulk(items, initial=True)
        assert store.wait_idle(5)
    store.write_log.recover(first, identity, descriptions)
    return store


def crashed(store):
    """What a process started after a kill -9 of ``store``'s would hold (the store is left as it is)."""
    again = opened(store.write_log.journal.snapshot_path)
    assert again.wait_idle(5)
    return again.copy()


def records_of(store, number=1):
    """The records in segment ``number``, once what the store appended so far is written."""
    store.write_log.journal.flush()
    return read_segment(segment_path(store.write_log.journal.snapshot_path, number)).payloads


def folder_fsyncs(monkeypatch):
    """The folders fsynced from now on, each as ``(folder, the names in it then)``: what a crash of the
    machine right after that fsync finds there."""
    fsyncs = []
    fsync = os.fsync

    def recording(descriptor):
        fsync(descriptor)
        target = os.readlink(f"/proc/self/fd/{descriptor}")
        if os.path.isdir(target):
            fsyncs.append((target, sorted(os.listdir(target))))

    monkeypatch.setattr(os, "fsync", recording)
    return fsyncs
