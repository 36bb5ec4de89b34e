"""What tests/test_packaging.py tests, where it takes a process: a server, redis-server or a command line; the
names these tests share with those in process come from tests/test_packaging.py."""

import pathlib
import shutil
import subprocess
import sys

from growth_gevent import __version__
from growth_gevent.testing import LiveServer
from tests.test_packaging import LOCAL_INDEX

from support import ROOT


def test_pip_install_into_a_fresh_venv_gives_a_growth_gevent_command_that_serves(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    # The dependencies are the test venv's (as --system-site-packages would give them); the package is
    # built from this checkout by pip, into the fresh venv only.
    site_packages = next(venv.glob("lib/python*/site-packages"))
    shared = [path for path in sys.path if path.endswith("site-packages")]
    (site_packages / "dependencies.pth").write_text("\n".join(shared) + "\n")
    # What an sdist holds, copied: pip builds in the source tree, which would leave build/ in the checkout.
    source = tmp_path / "source"
    shutil.copytree(ROOT / "growth_gevent", source / "growth_gevent", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "--isolated",
                    "install", "--quiet", "--index-url", LOCAL_INDEX, "--no-deps", str(source)],
                   check=True, timeout=120, cwd=tmp_path, capture_output=True)
    command = venv / "bin" / "growth-gevent"
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import growth_gevent; print(growth_gevent.__file__)"],
                           cwd=tmp_path, capture_output=True, text=True, check=True, timeout=30).stdout
    assert pathlib.Path(where.strip()).is_relative_to(site_packages)
    version = subprocess.run([str(command), "--version"], capture_output=True, text=True, timeout=30)
    assert (version.returncode, version.stdout) == (0, f"growth-gevent {__version__}\n")

    server = LiveServer(command=[str(command)]).start()
    try:
        assert server.request("GET", "/ping")[:2] == (200, b"pong")
    finally:
        server.terminate()
        assert server.wait_exit(20) == 0
    data_files = [path for pattern in ("*.json", "*.lua") for path in (ROOT / "growth_gevent").rglob(pattern)]
    assert data_files  # the OpenAPI document and the Redis store's scripts
    for path in data_files:
        assert (site_packages / path.relative_to(ROOT)).is_file(), path
