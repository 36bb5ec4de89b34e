"""The fixtures the API's in-process tests share."""

import pytest

from tests.helpers.api import SERIES
from tests.helpers.support import load


@pytest.fixture
def loaded(client, store):
    load(client, store, SERIES)
    return client
