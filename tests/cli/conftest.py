"""The live server the command line's tests load into."""

import pytest

from growth_gevent.testing import LiveServer


@pytest.fixture
def server(request, deployment):
    # One record per chunk: the load takes thousands of hub turns to apply, so an upload that did not
    # wait for it to be applied would print and exit before the store had every record.
    live = LiveServer(GROWTH_BULK_CHUNK_RECORDS="1", **deployment, **getattr(request, "param", {})).start()
    yield live
    live.stop()
