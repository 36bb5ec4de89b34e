"""``growth-gevent check [SNAPSHOT] [--repair | --forget]``: verify a snapshot and its journal without serving,
as ``redis-check-rdb`` and ``redis-check-aof`` do, and say what is damaged and what a repair would drop.

Read-only unless ``--repair``, which cuts torn tails (what start-up would drop with a warning) and never
anything else: damage mid-file is left for a person to look at. A repair takes the snapshot's lock, so it
refuses while a server runs on the snapshot; a read-only check may run beside one.

Exit codes: 0 everything verifies (with ``--repair``: once the torn tail is cut); 1 a torn tail at the end
of the newest segment, which start-up cuts with a warning and ``--repair`` cuts; 2 damage that start-up
refuses (a snapshot that cannot be read or whose checksum does not match, a bad record followed by valid
ones, anything wrong in a segment that has a successor, a segment missing, a journal that does not begin
where the snapshot ends), nothing to check at the path (no snapshot and no segment, a missing folder, a
folder), a store whose files are gone (no snapshot and no segment, and its marker or lock file beside them:
start-up refuses it too), or the snapshot's lock held by a server when repairing.

``--forget`` removes the marker and the lock file of a store whose snapshot and segments are gone, so that the
next start creates a new, empty store there on purpose (exit 0), and nothing else: refused (exit 2) while a
snapshot or segment is there, or a server runs.
"""

import argparse
import os
from collections.abc import Callable

from ..core.descriptions import Description
from ..core.logs import counted
from ..core.records import Key, Number, Record
from .identity import Identity, IdentityError, current_boot_id, forget, marker_path, read_marker, store_gone
from .journal import ALWAYS
from .journal_format import SEGMENT_INFIX, segment_numbers, segment_path
from .replay import JournalDamaged, replay
from .snapshot import SnapshotError, SnapshotLock, load_snapshot
from .snapshot_lock import LOCK_SUFFIX

OK, TORN, DAMAGED = 0, 1, 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``check`` command's arguments, on the command line's ``check`` parser."""
    parser.add_argument("snapshot", nargs="?", metavar="SNAPSHOT",
                        help="the snapshot file, its journal segments SNAPSHOT.journal.N beside it "
                             "(default: GROWTH_SNAPSHOT)")
    actions = parser.add_mutually_exclusive_group()
    actions.add_argument("--repair", action="store_true",
                         help="truncate torn tails, never damage mid-file; not while a server runs on the snapshot")
    actions.add_argument("--forget", action="store_true",
                         help="start afresh on purpose: when the snapshot and its segments are gone, remove the "
                              "store's marker (SNAPSHOT.id) and lock file, so that the next start creates a new, "
                              "empty store")


class _Discard:
    """A store for replay that keeps nothing: the check wants replay's verdict, not its state."""

    def restore(self, key: Key, value: Number | None) -> None:
        pass

    def apply_records(self, records: list[Record]) -> None:
        pass

    def restore_descriptions(self, by: str, descriptions: dict[str, Description]) -> None:
        pass


def check(path: str, repair: bool = False, policy: str = ALWAYS, say: Callable[[str], object] = print,
          forget_store: bool = False) -> int:
    """Verify the snapshot at ``path`` and its journal, ``say`` each finding; return the exit code.
    ``forget_store``: forget a store whose files are gone instead."""
    if forget_store:
        return _forget(path, say)
    nothing = _nothing_at(path)
    if nothing is not None:
        say(f"cannot check: {nothing[0]}")
        return DAMAGED
    if repair:
        try:
            lock = SnapshotLock(path)  # noqa: F841 (held until the repair is done)
        except (SnapshotError, OSError) as error:  # OSError: a lock file it cannot open (a read-only folder)
            say(f"cannot repair: {error}")
            return DAMAGED
    first, status, identity = 0, OK, Identity()
    try:
        identity.claim(marker_path(path), read_marker(path))
    except (IdentityError, OSError) as error:
        say(str(error))
        status = DAMAGED
    if os.path.exists(path):
        try:
            records, first, _, store = load_snapshot(path)
            identity.claim(path, store)
            say(f"{path}: ok: checksum verified, {counted(len(records), 'record')}, "
                f"{f'store {store}' if store else 'no store named (an older snapshot)'}"
                f"{f'; the journal after it begins at segment {first}' if first else ''}")
        except (SnapshotError, IdentityError, OSError) as error:
            say(str(error))
            status = DAMAGED
    else:
        say(f"{path}: no snapshot (a server starts with GROWTH_PRELOAD, or empty)")
    held = [number for number in segment_numbers(path) if number < first]
    if held:
        say(f"segments {held[0]}-{held[-1]}: held by the snapshot, not read (the next snapshot removes them)")
    try:
        recovered = replay(path, first, _Discard(), identity, current_boot_id())
    except (JournalDamaged, IdentityError, OSError) as error:
        say(f"{error}; --repair does not change damage: restore what is damaged or missing from a backup, or "
            "move the first segment named and every one after it away, to start from the history before it")
        return DAMAGED
    torn = {tail.path: tail for tail in recovered.torn}
    for number in recovered.segments:
        segment = segment_path(path, number)
        if number == recovered.next_segment:
            say(f"{segment}: holds no record: created as the server stopped; the next start writes it again")
        elif segment not in torn:
            say(f"{segment}: ok")
    for tail in recovered.torn:
        say(f"{tail.path}: {'torn tail' if not tail.whole else 'tail that fails its checksum'}: "
            f"{tail.dropped(policy)}")
        if not repair or status == DAMAGED:  # --repair does not change damage, nor a tail beside it
            say(f"--repair would truncate {tail.path} to {tail.offset} bytes, dropping {tail.size}"
                f"{', once what is damaged is restored' if status == DAMAGED else ''}")
            status = max(status, TORN)
            continue
        tail.cut()
        say(f"repaired: {tail.path} truncated to {tail.offset} bytes ({tail.size} dropped)")
    return status


def _nothing_at(path: str) -> tuple[str, bool] | None:
    """Why there is nothing to check at ``path`` (a missing folder, a folder, no snapshot and no segment:
    a typo, most likely), and whether the folder shows that a store lived there; or None."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        return f"{path} is a folder; give the snapshot file's path (GROWTH_SNAPSHOT), its segments beside it", False
    if not os.path.isdir(folder):
        return f"the folder {folder} does not exist", False
    try:
        segments = segment_numbers(path)
    except OSError as error:
        return f"cannot read the folder {folder}: {error}", False
    if not os.path.exists(path) and not segments:
        gone = store_gone(path, lock_file_found=os.path.exists(path + LOCK_SUFFIX))
        return gone or f"no snapshot {path} and no journal segment {path}{SEGMENT_INFIX}N beside it", gone is not None
    return None


def _forget(path: str, say: Callable[[str], object]) -> int:
    nothing = _nothing_at(path)
    if nothing is None:
        say(f"cannot forget: the store at {path} has its snapshot or journal segments; move them away first "
            "(`--forget` removes nothing else)")
        return DAMAGED
    why, store_lived_here = nothing
    if not store_lived_here:
        say(f"cannot forget: {why}")
        return DAMAGED
    try:
        lock = SnapshotLock(path)  # noqa: F841 (held until the marker is removed)
    except (SnapshotError, OSError) as error:
        say(f"cannot forget: {error}")
        return DAMAGED
    try:
        removed = forget(path)
    except OSError as error:
        say(f"cannot forget: {error}")
        return DAMAGED
    say(f"forgot the store at {path}: removed {' and '.join(removed)}; the next start creates a new, empty store")
    return OK
