"""The entry point, of ``python -m growth_gevent`` and of the ``growth-gevent`` command."""

import sys


def run() -> int:
    # Before anything else is imported: every socket, lock and sleep then cooperates with the event loop.
    from gevent import monkey
    monkey.patch_all()

    from growth_gevent.cli import main
    return main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(run())
