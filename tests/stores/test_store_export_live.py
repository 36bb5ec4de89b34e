"""The Redis store's export and facets, when its scripts are resumed at any budget."""

import pytest

from growth_gevent.stores.base import EXPORT_BATCH_RECORDS
from growth_gevent.stores.redis import reads as redis_reads
from tests.helpers.redis_support import open_store
from tests.helpers.store_export import exported, loaded


@pytest.mark.parametrize("budget", [1, 3, 50])
def test_redis_scripts_resumed_at_any_budget_answer_as_one(fresh, monkeypatch, budget):
    records = [((f"C{n % 7}", f"I{n % 5}", n), n) for n in range(EXPORT_BATCH_RECORDS + 300)]
    loaded(fresh, records)
    whole = (fresh.facets("country"), fresh.facets("indicator"), fresh.facets("indicator", country="C3"),
             exported(fresh))
    monkeypatch.setattr(redis_reads, "SCAN_BUDGET", budget)
    monkeypatch.setattr(redis_reads, "EXPORT_SCAN_BUDGET", budget)
    monkeypatch.setattr(redis_reads, "TALLY_NAMES", budget)
    fresh._reads.forget()  # read again, not the facets kept
    assert (fresh.facets("country"), fresh.facets("indicator"), fresh.facets("indicator", country="C3"),
            exported(fresh)) == whole
    assert whole[3] == sorted(records)


def test_facets_kept_by_a_worker_follow_every_write_of_another(fresh, redis_server):
    other = open_store(redis_server)
    fresh.ping()
    try:
        loaded(fresh, [(("A", "X", 1), 1.0), (("B", "Y", 2), 2.0)])
        assert fresh.facets("country") == [("A", 1, 1, 1), ("B", 1, 2, 2)]
        other.put(("A", "X", 5), 3.0)
        assert fresh.facets("country") == [("A", 2, 1, 5), ("B", 1, 2, 2)]
        other.put(("A", "X", 5), 4.0)  # a value replaced changes no facet, nor the generation
        other.delete(("B", "Y", 2))
        assert fresh.facets("country") == [("A", 2, 1, 5)]
        loaded(other, [(("C", "X", 9), 1.0)])
        assert fresh.facets("indicator") == [("X", 3, 1, 9)]
        assert fresh.facets("country") == [("A", 2, 1, 5), ("C", 1, 9, 9)]
        redis_server.flush()  # data lost, then as many creations as before: the generation alone would match
        for year in (1, 2, 3, 4, 5):
            other.put(("Z", "X", year), 1.0)
        assert fresh.facets("country") == [("Z", 5, 1, 5)]
    finally:
        other.close()


def test_facets_read_again_cost_one_round_trip(fresh, monkeypatch):
    fresh.ping()  # which sets the data marker
    loaded(fresh, [((f"C{n}", "X", n), 1.0) for n in range(50)])
    first = fresh.facets("country")
    commands = []
    call = fresh._shared.call
    monkeypatch.setattr(fresh._shared, "call", lambda *command: commands.append(command[0]) or call(*command))
    assert fresh.facets("country") == first
    assert commands == ["MGET"]
