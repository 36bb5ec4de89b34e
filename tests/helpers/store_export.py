"""What the store's export tests share: records loaded as a bulk job, an export read whole, random writes, and
the facets counted from records."""

from tests.helpers.support import WAIT_SECONDS


def loaded(store, records):
    store.submit_bulk(records)
    assert store.wait_idle(WAIT_SECONDS)
    return store


def exported(store, **filters):
    batches = list(store.export(**filters))
    assert all(batches), "no empty batch"
    return [record for batch in batches for record in batch]


def churn(stores, keys, rng, steps):
    """Random creations, replacements, removals and bulk loads of ``keys``, each by one of ``stores``."""
    for _ in range(steps):
        store, action = rng.choice(stores), rng.random()
        if action < 0.45:
            store.put(rng.choice(keys), rng.randrange(9))
        elif action < 0.9:
            store.delete(rng.choice(keys))
        else:
            loaded(store, [(key, 1) for key in rng.sample(keys, rng.randrange(1, 12))])


def facets_of_every_kind(store, records=None):
    """Each facet, unfiltered and filtered by each name: from the store, or (``records`` given) counted from
    those records."""
    def count(by, country=None, indicator=None):
        if records is None:
            return store.facets(by, country=country, indicator=indicator)
        totals = {}
        for (record_country, record_indicator, year), _ in records:
            if country in (None, record_country) and indicator in (None, record_indicator):
                name = record_country if by == "country" else record_indicator
                records_, first, last = totals.get(name, (0, year, year))
                totals[name] = (records_ + 1, min(first, year), max(last, year))
        return [(name, *counts) for name, counts in sorted(totals.items())]
    return ([count("country"), count("indicator")] + [count("country", indicator=name) for name in "WXYZ"]
            + [count("indicator", country=name) for name in "ABCD"])
