"""The Docker image, built and run for real: the challenge's own build command, the README walkthrough
against the container, its HEALTHCHECK, ``docker stop`` as a graceful exit 0, and what the image holds.

It needs a Docker daemon and the base image. When either is missing, ``../shared/docker/stand-in-base.sh``
(beside the repository, as on the project's machines and in CI) starts dockerd and makes a local stand-in
for ``python:3.11-slim``; dockerd is left running for the next run, like a system service. When no daemon
answers even then (no Docker installed, no right to start dockerd), the tests skip, saying why. The images
are tagged ``growth-gevent-test:*``, never the user's own ``growth/python`` tags. Marked ``docker`` and
``live``: the fast loop (``-m "not live"``) leaves it out; the whole suite, CI's, runs it.
"""

import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import pytest

from growth_gevent.api.swagger_ui import BUNDLE_ASSETS
from growth_gevent.testing import RedisServer, free_port, wait_for
from tests.helpers.support import ROOT
from tests.helpers.walkthrough import run_walkthrough

pytestmark = [pytest.mark.docker, pytest.mark.serial]  # serial: a build, and docker stop's seconds

# Beside the repository on the project's machines; a clean clone made elsewhere on one finds it at /work.
STAND_IN_CANDIDATES = (ROOT.parent / "shared" / "docker" / "stand-in-base.sh",
                       pathlib.Path("/work/shared/docker/stand-in-base.sh"))
STAND_IN_BASE = next((path for path in STAND_IN_CANDIDATES if path.exists()), STAND_IN_CANDIDATES[0])
BASE_IMAGE = "python:3.11-slim"
# The suite's own tags: the challenge's command tags growth/python:latest, which may be the user's image.
TAG = "growth-gevent-test"
USERS_TAGS = ("growth/python:latest", "growth/python:redis")
# The stand-in takes some 2.5 min (debootstrap); the build some 40 s, most of it pip and apt-get.
STAND_IN_SECONDS = 900
BUILD_SECONDS = 600
START_SECONDS = 30
# The image's HEALTHCHECK probes every 10 s, the first 10 s after the start.
HEALTHY_SECONDS = 40
# docker stop's default: SIGTERM, then SIGKILL after 10 s.
STOP_TIMEOUT = 10
# What a running image needs none of.
NOT_SHIPPED = ("__pycache__", "tests", "testing", "include", "pip", "setuptools", "wheel", "jinja2", "markupsafe")

# What a container sees of its own /app: every name, the packages installed beside ours (on PYTHONPATH),
# and whether the Redis client imports.
INSPECT_APP = """
import importlib.util, json, os
names = {name for _, folders, files in os.walk("/app") for name in folders + files}
installed = {name for folder in os.environ["PYTHONPATH"].split(":") for name in os.listdir(folder)}
print(json.dumps({"names": sorted(names), "installed": sorted(installed),
                  "redis": importlib.util.find_spec("redis") is not None}))
"""


def docker(*args, timeout=60, check=True):
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=check)


def _answers(*command):
    try:
        return subprocess.run(command, check=False, capture_output=True, timeout=60).returncode == 0
    except FileNotFoundError:
        return False


def _image_ids(tags):
    """The image id of each tag, None for a tag no image has."""
    return {tag: (docker("image", "inspect", "--format", "{{.Id}}", tag, check=False).stdout.strip() or None)
            for tag in tags}


@pytest.fixture(scope="module")
def daemon():
    """A Docker daemon that answers, with the base image (the stand-in, when no registry is reachable); a skip
    saying why when no daemon can run here."""
    if _answers("docker", "info") and _answers("docker", "image", "inspect", BASE_IMAGE):
        return
    if not STAND_IN_BASE.exists():
        tried = f"there is no {STAND_IN_BASE} to start one"
    else:
        try:
            made = subprocess.run(["bash", str(STAND_IN_BASE), BASE_IMAGE], check=False, capture_output=True,
                                  text=True, timeout=STAND_IN_SECONDS)
            tried = f"{STAND_IN_BASE} exited {made.returncode}: {(made.stderr or made.stdout).strip()[-300:]}"
        except OSError as error:
            tried = f"{STAND_IN_BASE} could not run: {error}"
    if not _answers("docker", "info"):
        pytest.skip(f"these tests need Docker: no Docker daemon answers `docker info`, and {tried}")
    # A daemon without the base image: the build pulls it, or fails saying why.


@pytest.fixture(scope="module")
def users_images(daemon):
    """The images the user's own tags name before the suite builds anything."""
    return _image_ids(USERS_TAGS)


def build(*options, tag):
    """Build the repository's Dockerfile; the image's id (containers run by id: another build may take the tag)."""
    with tempfile.TemporaryDirectory() as folder:
        id_file = pathlib.Path(folder) / "image.id"
        subprocess.run(["docker", "build", *options, "--iidfile", str(id_file), "-f", "Dockerfile", "-t", tag, "."],
                       cwd=ROOT, check=True, timeout=BUILD_SECONDS)
        return id_file.read_text().strip()


@pytest.fixture(scope="module")
def image(users_images):
    """The image, built with the challenge's own command, ``docker build --no-cache -f Dockerfile -t
    growth/python:latest .``, but the suite's own tag."""
    return build("--no-cache", tag=f"{TAG}:latest")


@pytest.fixture(scope="module")
def redis_image(image):
    """The ``redis`` target: the same layers (from the cache of the build above) and the Redis client's."""
    return build("--target", "redis", tag=f"{TAG}:redis")


@pytest.fixture
def containers():
    """``run(image, *options, env=...)`` starts a detached container; every one is removed after the test."""
    started = []

    def run(image, *options, env=None):
        flags = [f"--env={name}={value}" for name, value in (env or {}).items()]
        started.append(docker("run", "--detach", *flags, *options, image).stdout.strip())
        return started[-1]

    yield run
    for container in started:
        docker("rm", "--force", "--volumes", container, check=False)


def published(containers, image, **env):
    """A container of ``image`` on a free loopback port, as the challenge runs it (``-p ...:8080``); its port."""
    port = free_port()
    container = containers(image, f"--publish=127.0.0.1:{port}:8080", env=env)
    wait_for(lambda: answers_ping(port), START_SECONDS, interval=0.1)
    return container, port


def answers_ping(port):
    try:
        answer = subprocess.run(["curl", "-sf", f"127.0.0.1:{port}/ping"], check=False, capture_output=True, timeout=5)
    except subprocess.TimeoutExpired:
        return False
    return answer.stdout == b"pong"


def state(container):
    return json.loads(docker("inspect", "--format", "{{json .State}}", container).stdout)


def health(container):
    return state(container)["Health"]["Status"]


def curl(port, *arguments):
    """The body curl prints for ``curl [options...] URL``, the URL's path last."""
    *options, path = arguments
    return subprocess.run(["curl", "-s", *options, f"127.0.0.1:{port}{path}"], capture_output=True, text=True,
                          timeout=10).stdout


def ready(port):
    return subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", f"127.0.0.1:{port}/ready"],
                          check=False, capture_output=True, text=True, timeout=10).stdout


def stop(container):
    """``docker stop`` with its default timeout; the seconds it took."""
    started = time.monotonic()
    docker("stop", "--time", str(STOP_TIMEOUT), container, timeout=STOP_TIMEOUT + 30)
    return time.monotonic() - started


def inspect_app(image):
    return json.loads(docker("run", "--rm", image, "python", "-c", INSPECT_APP).stdout)


def test_the_users_own_images_are_left_as_they_were(image, redis_image, users_images):
    assert _image_ids(USERS_TAGS) == users_images


def test_without_docker_the_tests_skip_saying_why(tmp_path):
    """Run as a user without Docker runs them: no docker, dockerd nor bash on the PATH."""
    empty = tmp_path / "bin"
    empty.mkdir()
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-rs",
                          "-q", __file__, "-k", "walkthrough or image_holds"],
                         cwd=ROOT, env={**os.environ, "PATH": str(empty)}, capture_output=True, text=True,
                         timeout=120, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 skipped" in run.stdout, run.stdout
    assert "these tests need Docker: no Docker daemon answers `docker info`" in run.stdout


def test_the_image_holds_only_what_runs(image, redis_image):
    """No pip, setuptools, test suites or bytecode caches in our layers; the Redis client only in ``redis``."""
    memory, redis = inspect_app(image), inspect_app(redis_image)
    for held in (memory, redis):
        assert sorted(set(NOT_SHIPPED) & set(held["names"])) == []
        assert not [name for name in held["names"] if name.endswith((".pyc", ".c", ".pyx", ".pyi", ".map"))]
        assert set(BUNDLE_ASSETS) <= set(held["names"])
        assert {"growth_gevent", "openapi.json", "gevent", "falcon"} <= set(held["names"])
    assert (memory["redis"], redis["redis"]) == (False, True)
    assert {"redis", "hiredis"} & set(memory["installed"]) == set()
    assert {"redis", "hiredis"} <= set(redis["installed"])


def test_the_walkthrough_holds_against_the_container_and_it_turns_healthy(image, containers):
    container, port = published(containers, image)
    run_walkthrough(port)
    for path in ["/docs", *(f"/docs/{asset}" for asset in BUNDLE_ASSETS)]:  # what the page loads
        assert subprocess.run(["curl", "-sf", "-o", "/dev/null", f"127.0.0.1:{port}{path}"], timeout=10).returncode == 0
    assert wait_for(lambda: health(container) == "healthy", HEALTHY_SECONDS, interval=0.5)


def test_docker_stop_is_a_graceful_exit_0_well_within_its_timeout(image, containers):
    container, port = published(containers, image)
    assert ready(port) == "200"
    assert stop(container) < STOP_TIMEOUT  # else docker stop's SIGKILL ended it
    assert state(container)["ExitCode"] == 0
    assert "msg=stopped" in docker("logs", container).stderr


def test_the_default_image_refuses_redis_with_a_clear_message(image, containers):
    """Detached, so that a container that does not exit is still removed after the test."""
    container = containers(image, env={"GROWTH_STORE": "redis://127.0.0.1:6379/0"})
    assert docker("wait", container, timeout=START_SECONDS).stdout.strip() == "2"
    assert "the Docker image's default target is the in-memory store only, build it with --target redis" \
        in docker("logs", container).stderr


def test_the_redis_image_on_two_workers_is_ready_while_redis_answers(redis_image, containers):
    """The host's network, so that the container reaches a redis-server of the test's on loopback. The
    probe's timing is shortened (its command is the image's), so that unhealthy shows within seconds."""
    redis_server = RedisServer().start()
    try:
        port = free_port()
        container = containers(redis_image, "--network=host", "--health-interval=1s", "--health-retries=1",
                               env={"PORT": port, "GROWTH_STORE": redis_server.url, "WEB_CONCURRENCY": 2})
        wait_for(lambda: answers_ping(port), START_SECONDS, interval=0.1)
        # The walkthrough's status step races the background load on a loaded machine: a write and its
        # read instead, each on a new connection (either worker), through Redis.
        record = '{"Country":"BRZ","Indicator":"NGDP_R","Value":1.5,"Year":2030}'
        assert curl(port, "-X", "PUT", "-H", "Content-Type: application/json", "-d", '{"value": 1.5}',
                    "/api/v1/growth/BRZ/NGDP_R/2030") == record
        assert curl(port, "/api/v1/growth/BRZ/NGDP_R/2030") == record
        assert curl(port, "/api/v1/growth/size") == '{"size":1}'
        assert wait_for(lambda: health(container) == "healthy", HEALTHY_SECONDS, interval=0.2)
        redis_server.stop()
        assert ready(port) == "503"
        assert answers_ping(port)  # liveness: the workers themselves are fine
        assert wait_for(lambda: health(container) == "unhealthy", HEALTHY_SECONDS, interval=0.2)
        redis_server.start()
        assert wait_for(lambda: health(container) == "healthy", HEALTHY_SECONDS, interval=0.2)
        assert stop(container) < STOP_TIMEOUT
        assert state(container)["ExitCode"] == 0
    finally:
        redis_server.stop()
