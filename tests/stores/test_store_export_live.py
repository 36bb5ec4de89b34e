"""The Redis store's export and facets, when its scripts are resumed at any budget."""

import pytest

from growth_gevent.stores.redis import reads as redis_reads
from tests.stores.test_store_export import EXPORT_BATCH_RECORDS, exported, loaded


@pytest.mark.parametrize("budget", [1, 3, 50])
def test_redis_scripts_resumed_at_any_budget_answer_as_one(fresh, monkeypatch, budget):
    records = [((f"C{n % 7}", f"I{n % 5}", n), n) for n in range(EXPORT_BATCH_RECORDS + 300)]
    loaded(fresh, records)
    whole = (fresh.facets("country"), fresh.facets("indicator", country="C3"), exported(fresh))
    monkeypatch.setattr(redis_reads, "SCAN_BUDGET", budget)
    monkeypatch.setattr(redis_reads, "EXPORT_SCAN_BUDGET", budget)
    assert (fresh.facets("country"), fresh.facets("indicator", country="C3"), exported(fresh)) == whole
    assert whole[2] == sorted(records)

