"""The explore page in a real browser: Debian's Chromium, headless, driven by Playwright, against a live server,
with every request that is not to the loopback server refused and counted (none may be tried). It picks a
series and compares what the chart and the table show with the API's own numbers; reloads, goes back and
forward; downloads the CSV; compares two series; on one process, and on two workers over Redis with tokens
set. An empty store shows the curl line that loads the sample, and that line, run, loads it.

tests/api/test_explore_names_live.py takes the screenshots in docs/.
"""

import json
import shlex
import subprocess
import urllib.parse

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

from growth_gevent.testing.polling import holds_for, wait_for
from tests.helpers.support import ROOT, SAMPLE, two_workers_on_redis

TOKEN = "explore-test-token-0123456789"
SERIES = "/api/v1/growth/{}/{}"
# Argentina's NGDP_R has no 2005: a gap in its line. USA has PPPPC only: the facets filter each other.
ARG = [{"Country": "ARG", "Indicator": "NGDP_R", "Year": year, "Value": round(90 + year % 9 * 4.25, 3)}
       for year in range(1999, 2012) if year != 2005]
OTHERS = [{"Country": "USA", "Indicator": "PPPPC", "Year": 2004, "Value": 41.5},
          {"Country": "ARG", "Indicator": "PPPPC", "Year": 2004, "Value": 11.25}]
# Type-ahead over thousands of names: a country each, every one of them offered until an indicator is chosen.
MANY = [{"Country": f"Z{number:04}", "Indicator": "LP", "Year": 2000, "Value": number} for number in range(2000)]
# Generous on a loaded machine: every wait polls until this deadline, none is a pause.
DEADLINE_MS = 30_000
expect.set_options(timeout=DEADLINE_MS)


class Tab:
    """A page of a fresh browser context on ``server``, every request off the loopback server refused and
    kept in ``refused``; the page's errors and its CSP violations kept in ``problems``."""

    def __init__(self, chromium, server):
        self.origin = f"http://127.0.0.1:{server.port}"
        self.context = chromium.new_context(accept_downloads=True, viewport={"width": 1100, "height": 900})
        self.refused, self.problems = [], []
        self.context.set_default_timeout(DEADLINE_MS)
        self.context.route("**/*", self._only_the_server)
        self.context.add_init_script("document.addEventListener('securitypolicyviolation', (event) => "
                                     "console.error('CSP violation: ' + event.violatedDirective));")
        self.page = self.context.new_page()
        self.page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))
        # The console's errors also hold each 404 the page expects (a series that does not exist): the CSP's only.
        self.page.on("console", lambda message: "CSP violation" in message.text and self.problems.append(message.text))

    def _only_the_server(self, route):
        if route.request.url.startswith(self.origin + "/"):
            route.continue_()
        else:
            self.refused.append(route.request.url)
            route.abort("internetdisconnected")

    def open(self, query=""):
        self.page.goto(f"{self.origin}/explore{query}")
        return self.wait_drawn(query) if query else self.page

    def wait_drawn(self, query):
        expect(self.page.locator("body")).to_have_attribute("data-drawn", query)
        return self.page

    def show(self, rows, years=("", "")):
        """Fill the form's rows (adding rows as needed) and the years, and press Enter."""
        page = self.page
        while page.locator("#rows li").count() < len(rows):
            page.get_by_role("button", name="Add a series to compare").click()
        for index, (country, indicator) in enumerate(rows, 1):
            page.get_by_label(f"Country of series {index}").fill(country)
            page.get_by_label(f"Indicator of series {index}").fill(indicator)
        page.get_by_label("From year").fill(years[0])
        page.get_by_label("To year").fill(years[1])
        page.get_by_label("To year").press("Enter")

    def points(self, series):
        """The chart's points of series number ``series``: [(year, value, x, y)], as drawn (a value as a float:
        JavaScript writes 1e17 + 16 as 100000000000000020, which Playwright would hand over as that int)."""
        points = self.page.locator(f"#chart circle.point[data-series='{series}']").evaluate_all(
            "points => points.map(p => [Number(p.dataset.year), Number(p.dataset.value), "
            "p.cx.baseVal.value, p.cy.baseVal.value])")
        return [(year, float(value), x, y) for year, value, x, y in points]

    def table(self):
        """The table: its header row, then each row's cells as text."""
        return self.page.locator("#table tr").evaluate_all(
            "rows => rows.map(row => [...row.cells].map(cell => cell.textContent))")

    def close(self):
        self.context.close()
        assert self.refused == [], "requests off the loopback server were tried"
        assert self.problems == []


@pytest.fixture
def tab(chromium):
    opened = []

    def open_tab(server):
        opened.append(Tab(chromium, server))
        return opened[-1]

    yield open_tab
    for each in opened:
        each.close()


def load(server, records, headers):
    status, _ = server.request("POST", "/api/v1/growth", json.dumps(records).encode(),
                               {"Content-Type": "application/json", **headers})
    assert status == 202
    server.wait_until_complete()


def api_values(server, country, indicator, query=""):
    status, body = server.request_json("GET", SERIES.format(country, indicator) + query)
    assert status == 200
    return [(item["Year"], item["Value"]) for item in body["Values"]]


def check_drawn(tab, server, series, query=""):
    """Each series' points are the API's figures, left to right by year and higher for a larger value, and the
    table holds the same figures, a dash where a series has no value for a year."""
    expected = [dict(api_values(server, country, indicator, query)) for country, indicator in series]
    years = sorted(set().union(*expected))
    for index, values in enumerate(expected):
        points = tab.points(index)
        assert [(year, value) for year, value, _, _ in points] == sorted(values.items())
        assert [x for _, _, x, _ in points] == sorted(x for _, _, x, _ in points)
        by_value = sorted(points, key=lambda point: point[1])
        assert [y for *_, y in by_value] == sorted((y for *_, y in by_value), reverse=True)
    header, *rows = tab.table()
    assert header == ["Year", *(f"{country} · {indicator}" for country, indicator in series)]
    assert [row[0] for row in rows] == [str(year) for year in years]
    for row, year in zip(rows, years, strict=True):
        for cell, values in zip(row[1:], expected, strict=True):
            assert (float(cell) if cell != "—" else None) == values.get(year), (year, row)


@pytest.fixture(params=["memory", "redis, 2 workers, tokens"])
def loaded(request, servers):
    """A live server holding the sample, ARG, the others and the many, on each deployment."""
    env, headers = {}, {}
    if request.param != "memory":
        env = {**two_workers_on_redis(request), "GROWTH_API_TOKENS": TOKEN}
        headers = {"Authorization": f"Bearer {TOKEN}"}
    server = servers(**env)
    load(server, json.loads(SAMPLE.read_text()) + ARG + OTHERS + MANY, headers)
    return server


def test_a_series_is_chosen_drawn_downloaded_compared_and_its_url_reloaded(loaded, tab, tmp_path):
    server = loaded
    explorer = tab(server)
    page = explorer.open()
    expect(page.locator("#dataset")).to_contain_text("2,023 records · 2,003 countries · 3 indicators · years "
                                                     "1999–2011")
    assert page.locator("#result").is_hidden()

    # The facets: every name, thousands of them, until the other field names one that exists.
    countries = page.locator("#rows li").first.locator("datalist.countries option")
    page.get_by_label("Country of series 1").focus()
    expect(countries).to_have_count(2003)
    page.get_by_label("Indicator of series 1").fill("ngdp_r")
    expect(countries).to_have_count(2)
    assert countries.evaluate_all("options => options.map(o => [o.value, o.label])") == [
        ["ARG", "12 records, 1999–2011"], ["BRZ", "9 records, 2002–2010"]]
    page.get_by_label("Country of series 1").fill("usa")
    page.get_by_label("Indicator of series 1").focus()
    expect(page.locator("#rows li").first.locator("datalist.indicators option")).to_have_count(1)

    # One series, chosen with the keyboard; names in any case, as the API takes them.
    explorer.show([("brz", "ngdp_r")], ("2003", ""))
    one = "?country=BRZ&indicator=NGDP_R&from=2003"
    explorer.wait_drawn(one)
    assert page.url == f"{explorer.origin}/explore{one}"
    check_drawn(explorer, server, [("BRZ", "NGDP_R")], "?from=2003")
    expect(page.locator("#chart")).to_have_attribute("aria-label", "Line chart of BRZ NGDP_R by year, 2003 to 2010")
    assert page.locator("#chart text.x-label").text_content() == "Year"
    assert page.locator("#chart text.y-label").text_content() == "NGDP_R"

    # Every control has a name a screen reader says; the chart is the next stop after Show, by the keyboard.
    unnamed = page.locator("input, button, a, svg[tabindex]").evaluate_all(
        "controls => controls.filter(c => !(c.labels && c.labels.length) && !c.getAttribute('aria-label') && "
        "!c.textContent.trim()).map(c => c.outerHTML)")
    assert unnamed == []

    # The tooltip: the exact value of the year under the cursor, moved with the keys.
    page.get_by_role("button", name="Show").focus()
    page.keyboard.press("Tab")
    expect(page.locator("#chart")).to_be_focused()
    expect(page.locator("#tooltip")).to_have_text("2003BRZ NGDP_R: 198.274")
    page.keyboard.press("End")
    expect(page.locator("#tooltip")).to_have_text("2010BRZ NGDP_R: 251.671")
    page.locator("#chart").hover(position={"x": 5, "y": 100})
    expect(page.locator("#tooltip")).to_have_text("2003BRZ NGDP_R: 198.274")

    # The CSV download is the export's own URL, and what it saves is what the export sends.
    csv_url = "/api/v1/growth/export?" + urllib.parse.urlencode(
        {"country": "BRZ", "indicator": "NGDP_R", "format": "csv", "from": "2003"})
    link = page.get_by_role("link", name="Download BRZ NGDP_R as CSV")
    assert link.get_attribute("href") == csv_url
    with page.expect_download() as download:
        link.click()
    saved = tmp_path / "saved.csv"
    download.value.save_as(saved)
    assert saved.read_bytes() == server.request("GET", csv_url)[1]
    assert saved.read_bytes().startswith(b"Country,Indicator,Value,Year\r\nBRZ,NGDP_R,198.274,2003\r\n")
    json_link = page.get_by_role("link", name="Download BRZ NGDP_R as JSON")
    assert json.loads(server.request("GET", json_link.get_attribute("href"))[1])[0]["Year"] == 2003

    # Two series compared: ARG's 2005 is a gap in its line and a dash in the table.
    explorer.show([("BRZ", "NGDP_R"), ("ARG", "NGDP_R")])
    two = "?country=BRZ&indicator=NGDP_R&compare=ARG%2FNGDP_R"
    explorer.wait_drawn(two)
    check_drawn(explorer, server, [("BRZ", "NGDP_R"), ("ARG", "NGDP_R")])
    assert page.title() == "BRZ NGDP_R, ARG NGDP_R · Explore · growth-gevent"
    assert page.locator("#chart path.line.s1").get_attribute("d").count("M") == 2
    assert page.locator("#chart path.line.s0").get_attribute("d").count("M") == 1
    page.locator("#chart").focus()
    for _ in range(6):  # 1999 .. 2005
        page.keyboard.press("ArrowRight")
    expect(page.locator("#tooltip")).to_have_text("2005BRZ NGDP_R: 199.576ARG NGDP_R: no value")

    # Back and forward walk the choices; a reload shows the same.
    page.go_back()
    explorer.wait_drawn(one)
    assert page.get_by_label("From year").input_value() == "2003"
    assert page.locator("#rows li").count() == 1
    check_drawn(explorer, server, [("BRZ", "NGDP_R")], "?from=2003")
    page.go_forward()
    explorer.wait_drawn(two)
    page.reload()
    explorer.wait_drawn(two)
    check_drawn(explorer, server, [("BRZ", "NGDP_R"), ("ARG", "NGDP_R")])
    assert page.get_by_label("Country of series 2").input_value() == "ARG"

    # A series that does not exist says so, and the others are still drawn.
    explorer.show([("BRZ", "NGDP_R"), ("XXX", "NGDP_R")])
    explorer.wait_drawn("?country=BRZ&indicator=NGDP_R&compare=XXX%2FNGDP_R")
    expect(page.locator("#message")).to_have_text("No records for XXX / NGDP_R.")
    check_drawn(explorer, server, [("BRZ", "NGDP_R")])


def test_names_typed_in_lower_case_show_as_the_url_says_them_and_from_after_to_shows_the_apis_400(servers, tab):
    """The URL and the inputs say the names upper-case, as the API does; years the wrong way round are the
    API's 400, its message shown, where the page said "No records"."""
    server = servers()
    load(server, json.loads(SAMPLE.read_text()), {})
    browser = tab(server)
    page = browser.open()
    browser.show([("brz", " ngdp_r")])
    browser.wait_drawn("?country=BRZ&indicator=NGDP_R")
    expect(page.get_by_label("Country of series 1")).to_have_value("BRZ")
    expect(page.get_by_label("Indicator of series 1")).to_have_value("NGDP_R")

    browser.show([("BRZ", "NGDP_R")], ("2010", "2000"))
    expect(page.locator("#message")).to_have_text("from (2010) is after to (2000)")
    expect(page.locator("#result")).to_be_hidden()

def test_an_empty_store_shows_the_curl_line_that_loads_the_sample_and_it_does(servers, tab):
    server = servers()
    explorer = tab(server)
    page = explorer.open("")
    expect(page.locator("#empty")).to_be_visible()
    expect(page.locator("#dataset")).to_have_text("0 records.")
    command = page.locator("#load-command").text_content()
    assert command == ("curl -s -X POST -H 'Content-Type: application/json' --data-binary @data/sample.json "
                       f"{explorer.origin}/api/v1/growth")
    subprocess.run(shlex.split(command), cwd=ROOT, check=True, capture_output=True, timeout=30)
    wait_for(lambda: server.request_json("GET", "/api/v1/growth/size")[1]["size"] == 9, 30)
    explorer.open("?country=BRZ&indicator=NGDP_R")
    expect(page.locator("#empty")).to_be_hidden()
    check_drawn(explorer, server, [("BRZ", "NGDP_R")])


@pytest.mark.parametrize("values", [[1e308, -1.7e308, 0], [1e17, 1e17 + 16], [5e-324], [0, 0], [-3.5]])
def test_any_finite_values_are_drawn_inside_the_chart(servers, tab, values):
    server = servers()
    load(server, [{"Country": "X", "Indicator": "V", "Year": 2000 + index, "Value": value}
                  for index, value in enumerate(values)], {})
    explorer = tab(server)
    explorer.open("?country=X&indicator=V")
    points = explorer.points(0)
    assert [value for _, value, _, _ in points] == values
    for _, _, x, y in points:
        assert 0 <= x <= 800 and 0 <= y <= 360, points


def test_the_network_is_cut_off_a_request_elsewhere_is_refused_and_counted(chromium, servers):
    explorer = Tab(chromium, servers())
    with pytest.raises(PlaywrightError, match="ERR_INTERNET_DISCONNECTED"):
        explorer.page.goto("http://192.0.2.1/explore")  # TEST-NET-1: no such host, whatever the network
    assert explorer.refused == ["http://192.0.2.1/explore"]
    explorer.refused.clear()
    explorer.close()


def test_the_docs_page_renders_offline_under_the_same_policy(chromium, servers):
    explorer = Tab(chromium, servers())
    explorer.page.goto(f"{explorer.origin}/docs")
    expect(explorer.page.locator(".swagger-ui .info .title")).to_contain_text("growth")
    expect(explorer.page.locator(".opblock-summary-path").first).to_be_visible()
    explorer.close()  # nothing tried off the loopback server, no CSP violation


def test_an_answer_that_comes_after_a_later_choice_draws_nothing(servers, tab):
    server = servers()
    load(server, json.loads(SAMPLE.read_text()) + ARG, {})
    explorer = tab(server)
    page = explorer.page
    held = []
    page.route("**/api/v1/growth/BRZ/NGDP_R*", lambda route: held.append(route))  # answered when the test says
    explorer.open("?country=ARG&indicator=NGDP_R&to=2000")
    with page.expect_request(lambda request: "/BRZ/NGDP_R" in request.url):
        explorer.show([("BRZ", "NGDP_R")])
    explorer.show([("ARG", "NGDP_R")])
    later = "?country=ARG&indicator=NGDP_R"
    explorer.wait_drawn(later)
    held.pop().continue_()
    page.wait_for_function("() => performance.getEntriesByType('resource').some(e => e.name.includes('/BRZ/NGDP_R'))")
    holds_for(lambda: page.locator("body").get_attribute("data-drawn") == later, 1)
    assert page.title().startswith("ARG NGDP_R ·")
