"""The command line: ``serve`` (the default: read the settings once, build the store and the app, serve),
``load`` (upload bulk files) and ``check`` (verify a snapshot and its journal). The environment is the
one source of settings; each of them has a ``serve`` flag too, made from ``config.SETTINGS``, which
overrides it."""

import argparse
import logging
import os
import re
import resource
import time
from collections.abc import Mapping, Sequence

import gevent

from . import __version__, upload
from .api.app import create_app
from .api.auth import warn_if_open
from .config import SETTINGS, Config, ConfigError, Setting
from .core.logs import configure_logging
from .core.records import InvalidRecord
from .durability import check
from .durability.journal import ALWAYS, FSYNC_POLICIES
from .durability.journaled import JournaledStore
from .durability.replay import JournalDamaged
from .durability.snapshot import SnapshotError, SnapshotLock, Snapshotter
from .http.server import listen, make_server
from .initial_data import PreloadWatch, recover_journaled, seed_store
from .ops.lifecycle import serve
from .ops.workers import run_workers
from .stores.base import Store, StoreUnavailable
from .stores.memory import MemoryStore

log = logging.getLogger("growth_gevent")


PROG = "growth-gevent"
COMMANDS = ("serve", "load", "check")
_METAVARS = {int: "N", float: "SECONDS", bool: "on/off"}


def main(argv: Sequence[str] = (), environ: Mapping[str, str] = os.environ) -> int:
    """Run the command ``argv`` asks for; return the exit code."""
    args = parse_command_line(argv)
    if args.command == "load":
        return upload.run(args)
    configure_logging()
    if args.command == "check":
        return _check(args, environ)
    try:
        config = config_from(args, environ)
    except ConfigError as error:
        log.error("configuration error: %s", error)
        return 2
    return serve_with(config)


def parse_command_line(argv: Sequence[str]) -> argparse.Namespace:
    """``argv`` parsed, ``serve`` when it names no command; ``--help`` and ``--version`` exit here."""
    return command_line().parse_args(_with_command(list(argv)))


def command_line() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="The growth figures REST service, on gevent + falcon + ujson.",
        epilog="Without a command it serves. Settings are read from the environment (the README's "
               f"Configuration); `{PROG} serve --help` lists the flags that override them.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve_parser = commands.add_parser(
        "serve", help="serve the API (the default)",
        description="Serve the API. Every setting is read from its environment variable; a flag overrides it.")
    for setting in SETTINGS:
        serve_parser.add_argument(flag(setting), dest=setting.env, metavar=_METAVARS.get(setting.type, "VALUE"),
                                  help=_flag_help(setting))
    upload.add_arguments(commands.add_parser(
        "load", help="upload bulk files and wait until they are applied",
        description="Upload bulk files, JSON or CSV, several at once, and wait until each is applied. Exit 0: "
                    "every file loaded; 1: none; 3: some (stderr names the others); 2: a usage error or a file "
                    "that cannot be read, nothing sent."))
    check.add_arguments(commands.add_parser(
        "check", help="verify a snapshot and its journal (read-only unless --repair)",
        description="Verify a snapshot and its journal segments, as redis-check-rdb and redis-check-aof do: say "
                    "what is damaged and what a repair would drop. Exit 0: all verified (or repaired); 1: a torn "
                    "tail, which start-up would drop and --repair truncates; 2: damage, which start-up refuses and "
                    "--repair leaves as it is."))
    return parser


def flag(setting: Setting) -> str:
    """``--port`` for PORT, ``--snapshot`` for GROWTH_SNAPSHOT: the variable, without the service's prefix."""
    return "--" + setting.env.removeprefix("GROWTH_").lower().replace("_", "-")


def _flag_help(setting: Setting) -> str:
    # The README's Markdown as terminal text, and % as argparse wants it.
    text = re.sub(r"\[([^]]+)\]\([^)]+\)", r"\1", setting.help).replace("`", "").replace("%", "%%")
    default = setting.default
    if isinstance(default, bool):
        shown = "on" if default else "off"
    elif isinstance(default, float):
        shown = f"{default:g}"
    else:
        shown = "unset" if default is None else str(default)
    return f"{text} ({setting.env}; default: {shown})"


def _with_command(argv: list[str]) -> list[str]:
    """``serve`` is the default command: ``growth-gevent --port 9000`` serves."""
    if argv and (argv[0] in COMMANDS or argv[0] in ("-h", "--help", "--version")):
        return argv
    return ["serve", *argv]


def config_from(args: argparse.Namespace, environ: Mapping[str, str]) -> Config:
    """The environment's config, with the flags given in ``args`` over it; a ConfigError names the flag of a
    bad value given as one."""
    flags = {setting.env: getattr(args, setting.env) for setting in SETTINGS
             if getattr(args, setting.env) is not None}
    try:
        return Config.from_env({**environ, **flags})
    except ConfigError as error:
        variable = re.split(r"[^A-Z_]", str(error), maxsplit=1)[0]  # messages start with it
        if variable in flags:
            given = next(setting for setting in SETTINGS if setting.env == variable)
            raise ConfigError(f"{error} (given as {flag(given)})") from None
        raise


def _check(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    path = args.snapshot or environ.get("GROWTH_SNAPSHOT")
    policy = environ.get("GROWTH_FSYNC", ALWAYS)
    if not path or policy not in FSYNC_POLICIES:
        log.error("check: give the snapshot's path (or GROWTH_SNAPSHOT); GROWTH_FSYNC, if set, is one of %s",
                  ", ".join(FSYNC_POLICIES))
        return 2
    return check.check(path, args.repair, policy)


def serve_with(config: Config) -> int:
    """Serve until stopped, as ``config`` says; return the exit code."""
    warn_if_open(config)
    _raise_open_file_limit()
    started = time.perf_counter()
    try:
        snapshot_lock = _own_snapshot(config.snapshot_path) if config.snapshot_path else None
        store = open_store(config)
        deferred = None
        if isinstance(store, JournaledStore):
            recover_journaled(store, config, snapshot_lock, started)
        else:
            deferred = seed_store(store, config, snapshot_lock, started)
    except (SnapshotError, JournalDamaged, InvalidRecord, OSError, ValueError) as error:
        log.error("cannot start: %s", error)
        return 2
    try:
        listener = listen(config)
    except OSError as error:
        log.error("cannot listen on %s:%s: %s", config.host, config.port, error)
        return 1
    if config.workers == 1:
        return _serve(listener, store, config, deferred=deferred, snapshot_lock=snapshot_lock)
    store.close()  # each worker opens its own connections

    def serve_worker(index, stop):
        configure_logging({"worker": index})
        return _serve(listener, open_store(config), config, stop, deferred)

    return run_workers(config.workers, serve_worker, listener, config.shutdown_timeout)


def open_store(config: Config) -> Store:
    """The store ``config`` describes, given its settings: the in-memory one, or Redis when GROWTH_STORE
    names one (a bad URL is a ValueError)."""
    if config.store_url is None and config.snapshot_path:
        return JournaledStore(config.snapshot_path, config.fsync, chunk_size=config.bulk_chunk_records,
                              queue_records=config.bulk_queue_records, max_records=config.max_records)
    if config.store_url is None:
        return MemoryStore(chunk_size=config.bulk_chunk_records, queue_records=config.bulk_queue_records,
                           max_records=config.max_records)
    from .stores.redis import RedisStore  # here: importing redis-py costs memory the default does not need
    store = RedisStore(config.store_url, pool_size=config.redis_pool_size, timeout=config.redis_timeout,
                       chunk_size=config.bulk_chunk_records, verify_tls=config.redis_tls_verify,
                       queue_records=config.bulk_queue_records, max_records=config.max_records,
                       cache_stale_seconds=config.redis_cache_stale_seconds,
                       min_replicas=config.redis_min_replicas, replica_timeout=config.redis_replica_timeout)
    try:
        store.ping()
    except StoreUnavailable as error:
        log.warning("store unreachable, answering 503 until it is back: %s", error)
    return store


def _serve(listener, store, config, stop=None, deferred=None, snapshot_lock=None):
    """Serve until stopped; ``deferred`` is initial data still to load, once the store is reachable."""
    if config.store_url is not None and config.preload_path:
        gevent.spawn(PreloadWatch(store, config.preload_path, deferred).run)
    snapshotter = None
    if snapshot_lock is not None:
        snapshotter = Snapshotter(store, snapshot_lock, config.snapshot_interval,
                                  config.stop_writes_on_snapshot_error)
    return serve(make_server(create_app(store, config), config, listener), store, config, snapshotter, stop)


def _own_snapshot(path):
    """The lock that makes this process the snapshot's only writer (SnapshotInUse if another is)."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.access(directory, os.W_OK):
        raise OSError(f"GROWTH_SNAPSHOT {path}: cannot write in {directory}")
    return SnapshotLock(path)


def _raise_open_file_limit():
    # Every client connection is a file descriptor; 1024, a common default, is too few.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
