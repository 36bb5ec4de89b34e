import json
import pathlib

import pytest
import webtest

from growth_gevent.app import create_app
from growth_gevent.config import Config
from growth_gevent.store import MemoryStore

ROOT = pathlib.Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample.json"
WAIT_SECONDS = 10


@pytest.fixture
def config():
    return Config(max_body_bytes=64 * 1024)


@pytest.fixture
def store():
    store = MemoryStore(chunk_size=4)
    yield store
    store.close()


@pytest.fixture
def client(store, config):
    return webtest.TestApp(create_app(store, config))


@pytest.fixture
def sample_records():
    return json.loads(SAMPLE.read_text())


def post_records(client, records, status=202):
    return client.post("/api/v1/growth", json.dumps(records), content_type="application/json", status=status, expect_errors=True)


def load(client, store, records):
    """POST records and wait until the background loader has applied them."""
    post_records(client, records)
    assert store.wait_idle(WAIT_SECONDS)
