"""What the store's export tests share: records loaded as a bulk job, and an export read whole."""

from tests.helpers.support import WAIT_SECONDS


def loaded(store, records):
    store.submit_bulk(records)
    assert store.wait_idle(WAIT_SECONDS)
    return store


def exported(store, **filters):
    batches = list(store.export(**filters))
    assert all(batches), "no empty batch"
    return [record for batch in batches for record in batch]
