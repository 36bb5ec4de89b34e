"""The command line: ``serve`` (the default: read the settings once, then :func:`growth_gevent.service.build`
and run the service), ``load`` (upload bulk files), ``export`` (download every record) and ``check`` (verify a
snapshot and its journal). It parses and calls; the environment is the one source of settings, read into a
``Config`` by every command; each setting has a ``serve`` flag too, made from ``config.SETTINGS``, which
overrides it."""

import argparse
import logging
import os
import re
from collections.abc import Mapping, Sequence

from .. import __version__
from ..config import SETTINGS, Config, ConfigError, Setting
from ..core.logs import configure_logging
from ..durability import check
from ..service import StartError, build
from . import export, load

log = logging.getLogger("growth_gevent")


PROG = "growth-gevent"
COMMANDS = ("serve", "load", "export", "check")
_METAVARS = {int: "N", float: "SECONDS", bool: "on/off"}


def main(argv: Sequence[str] = (), environ: Mapping[str, str] = os.environ) -> int:
    """Run the command ``argv`` asks for; return the exit code."""
    args = parse_command_line(argv)
    configure_logging()
    try:
        config = config_from(args, environ) if args.command == "serve" else Config.from_env(environ)
    except ConfigError as error:
        log.error("configuration error: %s", error)
        return 2
    if args.command == "load":
        return load.run(load.with_settings(args, config))
    if args.command == "export":
        return export.run(load.with_url(args, config))
    if args.command == "check":
        return _check(args, config)
    return serve_with(config)


def parse_command_line(argv: Sequence[str]) -> argparse.Namespace:
    """``argv`` parsed, ``serve`` when it names no command; ``--help`` and ``--version`` exit here."""
    parser = command_line()
    if argv and not argv[0].startswith("-") and argv[0] not in COMMANDS:  # serve takes no words
        parser.error(f"unknown command {argv[0]!r} (commands: {', '.join(COMMANDS)})")
    return parser.parse_args(_with_command(list(argv)))


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
    load.add_arguments(commands.add_parser(
        "load", help="upload bulk files and wait until they are applied",
        description="Upload bulk files, JSON, NDJSON, CSV or wide tables such as the IMF's WEO and the World "
                    "Bank's files (- for stdin), several at once, and wait until each is applied; a file past the "
                    "body limit goes in several POSTs, each all-or-nothing. Exit 0: "
                    "every file loaded whole; 1: none; 3: some files loaded whole and the others not at all (stderr "
                    "names them); 4: a file loaded in part (a part after the first refused: stderr says up to "
                    "where, stdout how many of its records); 2: a usage error or a file that cannot be read, "
                    "nothing sent."))
    export.add_arguments(commands.add_parser(
        "export", help="write every record the filters match to stdout, as it arrives",
        description="Write every record the filters match to stdout (growth-gevent export > FILE), streamed, with a "
                    "progress bar on stderr when it is a terminal. Exit 0: all written; 1: an error (stderr says "
                    "which; what was written is partial); 141: stdout closed early (| head)."))
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


def _check(args: argparse.Namespace, config: Config) -> int:
    path = args.snapshot or config.snapshot_path
    if not path:
        print("cannot check: give the snapshot's path (or set GROWTH_SNAPSHOT)")  # as check's own messages
        return 2
    return check.check(path, args.repair, config.fsync, forget_store=args.forget)


def serve_with(config: Config) -> int:
    """Build the service ``config`` describes and serve it until stopped; return the exit code."""
    try:
        service = build(config)
    except StartError as error:
        log.error("cannot start: %s", error)
        return 2
    except OSError as error:
        log.error("%s", error)
        return 1
    return service.run()
