"""A JournaledStore as the service starts one, in-process: recovered from the snapshot and the journal."""

import os

from growth_gevent.config import DEFAULT_BULK_QUEUE_RECORDS, DEFAULT_MAX_RECORDS
from growth_gevent.durability.journal import segment_path
from growth_gevent.durability.journaled import JournaledStore
from growth_gevent.durability.replay import read_segment
from growth_gevent.durability.snapshot import load_snapshot

KEY = ("A", "B", 1)


def opened(path, fsync="always", chunk_size=2):
    """A store recovered from what ``path`` and its segments hold, as the service starts."""
    store = JournaledStore(path, fsync, chunk_size=chunk_size, queue_records=DEFAULT_BULK_QUEUE_RECORDS,
                           max_records=DEFAULT_MAX_RECORDS)
    first = 0
    if os.path.exists(path):
        items, first = load_snapshot(path)
        store.submit_bulk(items, initial=True)
        assert store.wait_idle(5)
    store.recover(first)
    return store


def crashed(store):
    """What a process started after a kill -9 of ``store``'s would hold (the store is left as it is)."""
    again = opened(store.journal.snapshot_path)
    assert again.wait_idle(5)
    return again.copy()


def records_of(store, number=1):
    """The records in segment ``number``, once what the store appended so far is written."""
    store.journal.flush()
    return read_segment(segment_path(store.journal.snapshot_path, number))[0]


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
