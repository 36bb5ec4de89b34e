"""What the packaging tests share: the local package index, the Redis extra, and the test venv's packages
for a fresh venv."""

import pathlib
import re
import sys

LOCAL_INDEX = "file:///opt/pypi/simple"  # this machine's copy of PyPI: the build backend comes from it
REDIS_CLIENT = {"redis", "hiredis"}


REDIS_EXTRA_HINT = "pip install 'growth-gevent[redis]'"


def link_dependencies(site_packages: pathlib.Path, folder: pathlib.Path, redis: bool = True) -> None:
    """Give the venv of ``site_packages`` the test venv's packages (as --system-site-packages would), through
    links in ``folder`` and a .pth file naming it; without the Redis client's unless ``redis``."""
    folder.mkdir()
    for shared in (pathlib.Path(path) for path in sys.path if path.endswith("site-packages")):
        for entry in shared.iterdir():
            left_out = not redis and re.match(r"(hi)?redis\b", entry.name) is not None
            if not left_out and not (folder / entry.name).exists():
                (folder / entry.name).symlink_to(entry)
    (site_packages / "dependencies.pth").write_text(f"{folder}\n")
