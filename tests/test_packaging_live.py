"""What tests/test_packaging.py tests, where it takes a process: a server, redis-server or a command line; the
names these tests share with those in process come from tests/test_packaging.py."""

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from growth_gevent import __version__
from growth_gevent.testing import LISTENING, LiveServer
from tests.helpers.packaging import LOCAL_INDEX, REDIS_CLIENT, REDIS_EXTRA_HINT, link_dependencies
from tests.helpers.support import ROOT


@pytest.fixture(scope="module")
def base_install(tmp_path_factory):
    """``pip install .`` into a fresh venv, without the ``[redis]`` extra: the venv's own ``bin`` and
    ``site-packages``."""
    folder = tmp_path_factory.mktemp("base-install")
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    # The dependencies are the test venv's (as --system-site-packages would give them) but the Redis
    # client's, as the base install leaves them out; the package is built from this checkout by pip, into
    # the fresh venv only.
    site_packages = next(venv.glob("lib/python*/site-packages"))
    link_dependencies(site_packages, folder / "dependencies", redis=False)
    # What an sdist holds, copied: pip builds in the source tree, which would leave build/ in the checkout.
    source = folder / "source"
    shutil.copytree(ROOT / "growth_gevent", source / "growth_gevent", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "--isolated",
                    "install", "--quiet", "--index-url", LOCAL_INDEX, "--no-deps", str(source)],
                   check=True, timeout=120, cwd=folder, capture_output=True)
    return venv / "bin", site_packages


def in_venv(base_install, code):
    """What ``code`` prints, run by the venv's Python."""
    return subprocess.run([str(base_install[0] / "python"), "-c", code], cwd=base_install[1], capture_output=True,
                          text=True, check=True, timeout=30).stdout


def test_pip_install_into_a_fresh_venv_gives_a_growth_gevent_command_that_serves(base_install):
    bin_folder, site_packages = base_install
    where = in_venv(base_install, "import growth_gevent; print(growth_gevent.__file__)")
    assert pathlib.Path(where.strip()).is_relative_to(site_packages)
    command = bin_folder / "growth-gevent"
    version = subprocess.run([str(command), "--version"], capture_output=True, text=True, timeout=30)
    assert (version.returncode, version.stdout) == (0, f"growth-gevent {__version__}\n")

    server = LiveServer(command=[str(command)]).start()
    try:
        assert server.request("GET", "/ping")[:2] == (200, b"pong")
        for path in ("/explore", "/explore/explore.js", "/explore/explore.css"):  # its files are in the wheel
            assert server.request("GET", path)[0] == 200, path
    finally:
        server.terminate()
        assert server.wait_exit(20) == 0
    data_files = [path for pattern in ("*.json", "*.lua", "explore_files/*")
                  for path in (ROOT / "growth_gevent").rglob(pattern)]
    assert data_files  # the OpenAPI document, the Redis store's scripts, the explore page's files
    for path in data_files:
        assert (site_packages / path.relative_to(ROOT)).is_file(), path


def test_the_base_install_has_no_redis_client_and_refuses_the_redis_store_naming_the_extra(base_install):
    assert in_venv(base_install, "import importlib.util as u; print(u.find_spec('redis'), u.find_spec('hiredis'))") \
        == "None None\n"
    result = subprocess.run([str(base_install[0] / "growth-gevent")], env={"GROWTH_STORE": "redis://127.0.0.1:1/0"},
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert "the Redis client (redis, hiredis) is not installed here" in result.stderr
    assert REDIS_EXTRA_HINT in result.stderr
    assert "Traceback" not in result.stderr


def test_the_installed_metadata_has_the_redis_extra_and_the_license(base_install):
    metadata = json.loads(in_venv(base_install, """
import importlib.metadata as m, json
d = m.distribution("growth-gevent")
print(json.dumps({"requires": d.requires, "extras": d.metadata.get_all("Provides-Extra"),
                  "license": d.metadata["License-Expression"], "files": [str(f) for f in d.files]}))"""))
    assert metadata["extras"] == ["redis"]
    extra = [requirement for requirement in metadata["requires"] if "extra ==" in requirement]
    assert sorted(re.match(r"[a-z]+", requirement).group() for requirement in extra) == sorted(REDIS_CLIENT)
    assert all(requirement.endswith('extra == "redis"') for requirement in extra)
    assert metadata["license"] == "MIT"
    assert any(path.endswith(".dist-info/licenses/LICENSE") for path in metadata["files"])


# ./scripts/serve's first run: pip builds the package (setuptools from the local index) and installs it.
INSTALL_SECONDS = 180


def test_serve_installs_the_growth_gevent_command_into_the_venv_so_the_docs_commands_work(tmp_path):
    """``./scripts/serve`` on a checkout whose .venv holds the requirements (as its first run leaves it):
    it serves, and ``.venv/bin/growth-gevent`` is there, running docs/operations.md's commands as written."""
    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT / "growth_gevent", checkout / "growth_gevent", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE", "requirements.txt", "requirements-dev.txt",
                 "scripts/serve", "scripts/setup.sh", "data/sample.json"):
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, checkout / name)
    venv = checkout / ".venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    link_dependencies(next(venv.glob("lib/python*/site-packages")), tmp_path / "dependencies")
    (venv / ".installed-requirements.txt").touch()  # the requirements are there: ensure_venv installs nothing

    server = LiveServer(command=[str(checkout / "scripts" / "serve")], PIP_INDEX_URL=LOCAL_INDEX).launch()
    try:
        server.port = int(server.wait_for_line(LISTENING, INSTALL_SECONDS).group(2))
        environ = {**os.environ, "PATH": f"{venv / 'bin'}:{os.environ['PATH']}"}
        # docs/operations.md: growth-gevent load data/sample.json --url http://127.0.0.1:9000
        loaded = subprocess.run(["growth-gevent", "load", "data/sample.json", "--url",
                                 f"http://127.0.0.1:{server.port}"], cwd=checkout, env=environ,
                                capture_output=True, text=True, timeout=60)
        assert (loaded.returncode, loaded.stdout) == (0, "loaded 9 records (status complete, size 9)\n"), loaded.stderr
        exported = subprocess.run(["growth-gevent", "export", "--format", "csv", "--country", "BRZ", "--url",
                                   f"http://127.0.0.1:{server.port}"], cwd=checkout, env=environ,
                                  capture_output=True, text=True, timeout=60)
        assert exported.stdout.count("BRZ,NGDP_R,") == 9, exported.stderr
    finally:
        server.terminate()
        assert server.wait_exit(20) == 0
    assert (venv / "bin" / "growth-gevent").is_file()
