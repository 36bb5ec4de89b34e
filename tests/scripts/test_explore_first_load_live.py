"""scripts/explore_first_load.py, briefly: one load of each kind on the sample, in Chromium, printed as the
report reads it (what it measures is printed, never judged)."""

import json
import re

from scripts import explore_first_load
from tests.helpers.support import SAMPLE


def test_it_prints_the_requests_bytes_and_time_of_a_cold_and_a_warm_load_beside_the_baseline(chromium, capsys):
    explore_first_load.measure(chromium, "sample", json.loads(SAMPLE.read_text()), runs=1)
    lines = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"sample: baseline, a fresh context's navigation to /ping: median [\d.]+ ms", lines[0])
    for line, kind in zip(lines[1:], ("cold \\(fresh context\\)", "warm \\(reload, 304s\\)"), strict=True):
        assert re.fullmatch(rf"sample: {kind}: 7 requests, [\d,]+ B transferred \([\d,]+ B decoded\); drawn chart "
                            r"median [\d.]+ ms \(min [\d.]+, max [\d.]+\), [\d.]+x the baseline", line), line
