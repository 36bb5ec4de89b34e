import json

import pytest

from scripts.generate_data import generate


def test_the_3mb_class_file_has_42450_unique_records_starting_like_the_challenge():
    records = generate(42450, seed=2002)
    assert len(records) == 42450
    assert len({(r["Country"], r["Indicator"], r["Year"]) for r in records}) == 42450
    assert records[0] == {"Country": "BRZ", "Indicator": "NGDP_R", "Value": 183.26, "Year": 2002}
    assert 2_900_000 < len(json.dumps(records)) < 3_400_000


def test_the_same_seed_gives_the_same_records_and_another_seed_does_not():
    assert generate(1000, seed=1) == generate(1000, seed=1)
    assert generate(1000, seed=1) != generate(1000, seed=2)




def test_every_record_there_is_can_be_asked_for_and_one_more_is_refused_saying_how_many():
    every = 81857  # the series' years from their first to LAST_YEAR, all of them: generated to be counted
    with pytest.raises(SystemExit, match=f"^at most {every} records can be generated, asked for {every + 1}$"):
        generate(every + 1, seed=2002)
