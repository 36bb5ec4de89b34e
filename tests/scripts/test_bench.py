"""The bench's own parts (scripts/benchmark/), so that the bench cannot rot between its runs: what it reads from ab and
from /proc, and that its tables, projection and targets format every row it measures."""


from scripts.benchmark import facets, hosts, http_cost, report, scenarios


def fake_figures(scenario, index):
    """Figures of the shape that ``scenario`` measures, distinct per row."""
    figures = {"rps": 1000.0 + index, "requests": 5000, "server_cpu_us": 50.0 + index, "server_cpu_share": 0.9,
               "redis_cpu_us": 5.0, "redis_cpu_share": 0.1, "p50_us": 1000.0, "p90_us": 2000.0, "p99_us": 3000.0,
               "max_us": 4000.0, "errors": 0, "non_2xx": 0, "failed": 0}
    figures.update({ratio: 0.9 for ratio, _ in scenario.ratios})  # a row has only the ratios it measures
    if isinstance(scenario, scenarios.K6):
        figures.update({"failed_rate": 0.0, "runs_crossed": 0, **{f"http_req_duration {stat}": 1.0
                                                                  for stat in ("med", "p(95)", "p(99)", "max")}})
    return figures


def fake_results():
    rows = [*scenarios.HTTP_SCENARIOS, *scenarios.BULK_SCENARIOS]
    measured = {scenario.name: fake_figures(scenario, index) for index, scenario in enumerate(rows)}
    reads = {"p99_us": 3000.0, "max_us": 4000.0, "rps": 900.0, "errors": 0}
    return {
        "http": {s.name: measured[s.name] for s in rows if not isinstance(s, scenarios.K6)},
        "k6": {s.name: measured[s.name] for s in rows if isinstance(s, scenarios.K6)},
        "bulk": {label: {"median_ms": 50.0, "min_ms": 40.0, "max_ms": 60.0, "loads": 5}
                 for label in (scenarios.MEMORY, *scenarios.REDIS)},
        "reads_during_loads": {**reads, "loads_applied": 10},
        "snapshots": {**reads, "snapshots_written": 5, "snapshot_write_ms_median": 60.0, "snapshot_load_ms": 50.0},
        "rss_after_three_loads_bytes": 60 * 2 ** 20, "flood_seconds": 15,
        "post_flood": {**reads, "posts": 100, "answered_202": 10, "answered_503": 90, "answered_otherwise": 0,
                       "share_503": 0.9, "rss_before_bytes": 2 ** 25, "rss_peak_bytes": 2 ** 27},
        "large_post": {**reads, "body_bytes": 2 ** 23, "loads_applied": 5, "load_ms_median": 300.0,
                       "rss_peak_bytes": 2 ** 27},
        "paging": {"refused_status": 400, "refused_msg": "offset is at most 10000",
                   **{f"{page}_{figure}": 1.0 for page in ("first", "page_42", "page_43", "offset_10000")
                      for figure in ("rps", "p50_us", "ratio_to_first")}},
    }


def test_every_measured_row_is_in_the_tables_and_every_target_is_judged():
    results = fake_results()
    lines = [*report.http_table(results["http"]), *report.k6_table(results["k6"], 3), *report.figure_lines(results)]
    for name in [*results["http"], *results["k6"]]:
        assert any(line.startswith(name) for line in lines), name
    targets = report.targets_table(results)
    assert len(targets) == 2 + len(report.TARGETS)
    assert all(row.endswith(("| yes |", "| no |", "| — |")) for row in targets[2:])


def test_the_projection_adds_worker_cores_until_redis_is_full():
    results = fake_results()
    redis_get = results["http"][f"{scenarios.REDIS[0]}: {scenarios.GET_BASELINE}"]
    redis_get.update(server_cpu_us=100.0, redis_cpu_us=25.0)  # 10,000 req/s a worker core, Redis full at 40,000
    line = next(line for line in report.projection_lines(results) if line.startswith("GET one record (wrk), Redis"))
    assert line.split()[-6:] == ["10000", "20000", "40000", "40000", "4", "cores"]


def test_the_projection_holds_a_redis_row_that_spent_less_than_a_clock_tick():
    """A short run (--seconds 1) can see redis-server spend no tick at all on the cached rows."""
    results = fake_results()
    results["http"][f"{scenarios.REDIS[0]}: {scenarios.GET_BASELINE}"].update(server_cpu_us=100.0, redis_cpu_us=0.0)
    line = next(line for line in report.projection_lines(results) if line.startswith("GET one record (wrk), Redis"))
    assert line.split()[-6:] == ["10000", "20000", "40000", "80000", "inf", "cores"]


def test_the_falcon_floor_answers_the_ceilings_body_through_falcon():
    import falcon.testing

    from scripts import ceiling

    floor = falcon.testing.TestClient(ceiling.falcon_floor_app())
    answer = floor.simulate_get("/api/v1/growth/BRZ/NGDP_R/2002")
    assert (answer.status_code, answer.content) == (200, ceiling.BODY)
    assert dict(ceiling.HEADERS)["Content-Type"] == answer.headers["Content-Type"]


def test_the_http_cost_report_gives_the_falcon_floor_of_this_tree_alone():
    def run(rps):
        return {"rps": rps, "p99_us": 1000.0, "cpu_us": 1e6 / rps}

    rows = {http_cost.CEILING: 20000, http_cost.FLOOR: 15000, http_cost.GET: 12000, http_cost.PUT_MEMORY: 10000,
            http_cost.PUT_ALWAYS: 9000}
    figures = {"base": {row: [run(rps)] for row, rps in rows.items() if row != http_cost.FLOOR},
               http_cost.THIS: {row: [run(rps)] for row, rps in rows.items()}}
    lines = http_cost.report(figures)
    assert [line.split()[:3] for line in lines if line.startswith(http_cost.FLOOR)] == [
        ["falcon", "floor", "this"], ["falcon", "floor", "/"]]
    assert "this 0.75 (by CPU 0.75, 1.33×)" in next(line for line in lines if line.startswith("falcon floor / ceiling"))
    assert "this 0.80 (by CPU 0.80, 1.25×)" in next(line for line in lines if line.startswith("GET / falcon floor"))
    assert "this 0.67 (by CPU 0.67, 1.50×)" in next(line for line in lines
                                                    if line.startswith("PUT memory / falcon floor"))
    assert "base 0.60" in next(line for line in lines if line.startswith("GET / ceiling"))


def test_the_facet_bench_shapes_are_those_it_names():
    single = facets.single_record_series(1500)
    assert len({(row["Country"], row["Indicator"]) for row in single}) == 1500  # a series a record
    assert len({row["Indicator"] for row in single}) == 500
    series = facets.generated_shape(100)
    assert len(series) == 100 and len({(row["Country"], row["Indicator"], row["Year"]) for row in series}) == 100
    assert [row["Year"] for row in series[:41]] == list(range(1980, 2021))


def test_the_facet_bench_line_says_both_clients_figures():
    size = {"rps": 1234.4, "p99_us": 5678}
    assert facets.line("beside /countries", size, [0.002, 0.004, 0.009]) == (
        "  beside /countries              GET /size     1234 req/s, p99     5.68 ms; "
        "the looping client 3 answers, median 4.0 ms")


def test_the_hosts_report_gives_each_hosts_cpu_per_request_against_granians_by_round():
    def run(cpu_us):
        return {"rps": 1e6 / cpu_us, "p99_us": 2000.0, "cpu_us": cpu_us}

    figures = {hosts.GRANIAN: [run(20.0), run(40.0)], hosts.OURS: [run(60.0), run(60.0)],
               hosts.STREAM: [run(18.0), run(36.0)]}
    lines = hosts.report(figures)
    assert [line.split()[-1] for line in lines[1:]] == ["1.00×", "2.25×", "0.90×"]  # medians of 3.00 and 1.50


def test_the_stream_floor_answers_what_the_ceiling_answers_without_a_server():
    import http.client
    import io

    from scripts import ceiling

    class Answer(io.BytesIO):
        def makefile(self, mode):
            return self

    answer = http.client.HTTPResponse(Answer(ceiling.RESPONSE))
    answer.begin()
    assert (answer.status, answer.read()) == (200, ceiling.BODY)
    assert answer.getheader("Content-Type") == dict(ceiling.HEADERS)["Content-Type"]
