"""The command line: read the environment once, build the store and the app, serve."""

import logging
import os
import resource
import sys

from .app import create_app
from .config import Config, ConfigError
from .server import make_server, serve
from .store import MemoryStore

log = logging.getLogger("growth_gevent")


def main(environ=os.environ):
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        config = Config.from_env(environ)
    except ConfigError as error:
        log.error("configuration error: %s", error)
        return 2
    _raise_open_file_limit()
    store = MemoryStore(chunk_size=config.bulk_chunk_records)
    try:
        server = make_server(create_app(store, config), config)
        server.init_socket()
    except OSError as error:
        log.error("cannot listen on %s:%s: %s", config.host, config.port, error)
        return 1
    return serve(server, store, config)


def _raise_open_file_limit():
    # Every client connection is a file descriptor; 1024, a common default, is too few.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
