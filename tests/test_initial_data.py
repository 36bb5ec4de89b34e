"""Initial data: the snapshot or the preload file an empty store is given, and the watch that gives it
again to a store that lost its data."""

import json
import logging
import re

import pytest

from growth_gevent.config import Config
from growth_gevent.core.records import InvalidRecord
from growth_gevent.initial_data import PreloadWatch, read_preload, seed_store
from tests.helpers.support import SAMPLE, memory_store


def test_an_empty_store_is_given_the_preload_file_and_one_that_holds_records_is_not(caplog):
    empty, holding = memory_store(), memory_store()
    holding.put(("A", "B", 1), 1)
    config = Config(preload_path=str(SAMPLE))
    with caplog.at_level(logging.INFO, logger="growth_gevent"):
        assert seed_store(empty, config, 0.0) is None
        assert seed_store(holding, config, 0.0) is None
    assert (empty.size(), holding.size()) == (9, 1)
    assert f"GROWTH_PRELOAD {SAMPLE} not read: the store already holds 1 records" in caplog.text


@pytest.mark.parametrize("content, message", [
    ("[{", " is not JSON"), ('[{"Country": "A"}]', ": record 0: Indicator must be a non-empty string")])
def test_a_bad_preload_file_is_refused_naming_the_file(tmp_path, content, message):
    preload = tmp_path / "preload.json"
    preload.write_text(content)
    with pytest.raises(InvalidRecord, match=re.escape(f"GROWTH_PRELOAD {preload}{message}")):
        read_preload(str(preload))


def test_the_watch_logs_the_same_error_once_and_again_at_once_after_a_success(tmp_path, caplog):
    store = memory_store()
    store.needs_initial_data = lambda: True  # as a Redis that lost its data
    preload = tmp_path / "preload.json"
    watch = PreloadWatch(store, str(preload))
    with caplog.at_level(logging.INFO, logger="growth_gevent"):
        for _ in range(3):
            watch.check_and_report()
        preload.write_text(json.dumps([{"Country": "A", "Indicator": "B", "Value": 1, "Year": 1}]))
        watch.check_and_report()
        preload.unlink()
        watch.check_and_report()
    errors = [record.getMessage() for record in caplog.records if record.levelno == logging.ERROR]
    missing = f"initial data not loaded: [Errno 2] No such file or directory: '{preload}'"
    assert errors == [missing, f"{missing} (2 similar lines left out before this one)"]
    assert store.size() == 1


