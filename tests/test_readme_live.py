"""What tests/test_readme.py tests, where it takes a process: a server, redis-server or a command line; the
names these tests share with those in process come from tests/test_readme.py."""


import pytest

from growth_gevent.testing import LiveServer
from tests.helpers.support import two_workers_on_redis
from tests.helpers.walkthrough import run_walkthrough


@pytest.fixture(scope="module", params=["memory", "redis, 2 workers"])
def server(request):
    """The walkthrough holds on the default server, and on two workers sharing one Redis."""
    env = {} if request.param == "memory" else two_workers_on_redis(request)
    live = LiveServer(**env).start()
    yield live
    live.stop()


def test_every_walkthrough_command_prints_what_the_readme_shows(server):
    run_walkthrough(server.port)
