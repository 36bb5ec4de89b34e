"""The explore page as a person reads it, in Chromium against a live server holding the IMF's WEO file loaded by
``growth-gevent load``: names and units, two axes, a log scale and indexed values, the lists to start from, the
tooltip beside its points, the downloads named after what they hold; at 1280 px and on a 390 px phone.

EXPLORE_SCREENSHOTS=docs keeps the screenshots where the README and docs/api.md show them (explore.png,
explore-phone.png)."""

import os
import urllib.parse

import pytest
from playwright.sync_api import expect

from tests.api.test_explore_live import DEADLINE_MS, Tab, load
from tests.cli.test_load_live import run_upload, url_of
from tests.helpers import wide_files
from tests.helpers.support import two_workers_on_redis

TWO = "?country=BRA&indicator=NGDP_R&compare=BRA%2FNGDP_RPCH"
DECADE = {"NGDP_R": [1690.6, 1757.2, 1791.4, 1845.6, 1854.1, 1790.0, 1731.8, 1753.3, 1784.8, 1806.4],
          "NGDP_RPCH": [7.528, 3.974, 1.921, 3.005, 0.504, -3.546, -3.276, 1.323, 1.784, 1.221]}
GDP = "Brazil · Gross domestic product, constant prices"


@pytest.fixture(params=["memory", "redis, 2 workers"])
def weo(request, servers, tmp_path):
    """A live server holding the WEO file as published, its names and units with it."""
    server = servers(**({} if request.param == "memory" else two_workers_on_redis(request)))
    published = tmp_path / "WEOOct2023all.xls"
    published.write_bytes(wide_files.weo_utf16())
    result = run_upload(published, "--url", url_of(server))
    assert result.returncode == 0, result.stderr
    return server


def load_decade(server):
    """A decade more of Brazil's two series, for the screenshots."""
    load(server, [{"Country": "BRA", "Indicator": indicator, "Year": year, "Value": value}
                  for indicator, values in DECADE.items()
                  for year, value in zip(range(2010, 2020), values, strict=True)], {})


def screenshot(page, name, tmp_path):
    folder = os.environ.get("EXPLORE_SCREENSHOTS")
    page.screenshot(path=os.path.join(folder, name) if folder else tmp_path / name, full_page=True)


def boxes(page, selector):
    return page.locator(selector).evaluate_all(
        "elements => elements.map(e => { const r = e.getBoundingClientRect(); "
        "return [r.left, r.top, r.right, r.bottom]; })")


def overlaps(one, other):
    return one[0] < other[2] and other[0] < one[2] and one[1] < other[3] and other[1] < one[3]


def test_names_units_two_axes_and_the_downloads_at_1280_px(chromium, weo, tmp_path):
    explorer = Tab(chromium, weo)
    page = explorer.page
    page.set_viewport_size({"width": 1280, "height": 900})
    explorer.open()

    # Nothing chosen: the countries and indicators, by name, with their records and years, each a way in.
    expect(page.locator("#start")).to_be_visible()
    expect(page.locator("#choices table").first.locator("tbody tr").first).to_have_text("BrazilBRA52020–2022")
    expect(page.locator("#choices h2")).to_have_text(["Countries (2)", "Indicators (2)"])
    page.get_by_role("link", name="Brazil").click()
    explorer.wait_drawn("?country=BRA&indicator=")
    expect(page.locator("#choices h2")).to_have_text(["Indicators with records of Brazil (2)"])
    expect(page.locator("#choices tbody tr").nth(1)).to_have_text(
        "Gross domestic product, constant pricesNGDP_RPCHPercent change32020–2022")

    # "Brazil" finds BRA; two units get an axis each, named by their units; the legend names every series.
    explorer.show([("Brazil", "NGDP_R"), ("brazil", "Gross domestic product, constant prices (Percent change)")])
    explorer.wait_drawn(TWO)
    assert page.get_by_label("Country of series 2").input_value() == "BRA"  # the code, as the URL says
    assert page.get_by_label("Indicator of series 2").input_value() == "NGDP_RPCH"
    expect(page.locator("#legend li")).to_have_text([
        f"{GDP} (National currency, Billions), left axis", f"{GDP} (Percent change), right axis"])
    assert page.locator("#chart text.y-label").all_text_contents() == ["National currency, Billions ←",
                                                                      "Percent change →"]
    assert page.title() == f"Brazil Gross domestic product, constant prices, {page.title().split(', ', 2)[2]}"
    levels, changes = explorer.points(0), explorer.points(1)
    assert [value for _, value, _, _ in levels] == [1873.288, 1964.126]
    assert max(y for *_, y in changes) - min(y for *_, y in changes) > 100  # its own axis: not flat at the bottom

    # The tooltip: beside the cursor, never over the points of its year, at the first year and the last.
    page.locator("#chart").focus()
    for key, year in (("Home", 2020), ("End", 2022)):
        page.keyboard.press(key)
        expect(page.locator("#tooltip")).to_contain_text(str(year))
        tooltip = boxes(page, "#tooltip")[0]
        for point in boxes(page, f"#chart circle.point[data-year='{year}']"):
            assert not overlaps(tooltip, point), (year, tooltip, point)

    # One CSV of the compared series, as the export writes it; the chart as SVG and PNG; each named after it.
    expected_csv = ("Country,Indicator,Value,Year\r\nBRA,NGDP_R,1873.288,2020\r\nBRA,NGDP_R,1964.126,2021\r\n"
                    "BRA,NGDP_RPCH,-3.277,2020\r\nBRA,NGDP_RPCH,4.989,2021\r\nBRA,NGDP_RPCH,2.9,2022\r\n")
    saved = {}
    for name, text in (("csv", "the compared series as CSV"), ("svg", "the chart as SVG"), ("png", "the chart as PNG")):
        with page.expect_download() as download:
            page.get_by_role("link", name=f"Download {text}").click()
        assert download.value.suggested_filename == f"BRA_NGDP_R-BRA_NGDP_RPCH.{name}"
        download.value.save_as(tmp_path / f"saved.{name}")
        saved[name] = (tmp_path / f"saved.{name}").read_bytes()
    assert saved["csv"].decode() == expected_csv
    assert saved["svg"].startswith(b"<svg") and b"Percent change" in saved["svg"]
    assert saved["png"].startswith(b"\x89PNG\r\n\x1a\n")
    # Each series' export, named as the page names it: the server's Content-Disposition agrees.
    with page.expect_download() as download:
        page.get_by_role("link", name="Download BRA NGDP_R as CSV").click()
    assert download.value.suggested_filename == "BRA_NGDP_R.csv"

    # Indexed to the first common year, then a log scale: both in the URL, so a link shows the same.
    page.get_by_label("Values").select_option("index")
    explorer.wait_drawn(TWO + "&show=index")
    assert page.locator("#chart text.y-label").all_text_contents() == ["Index, 2020 = 100"]
    assert [value for _, value, _, _ in explorer.points(0)] == [1873.288, 1964.126]  # the figures, as they are
    page.get_by_label("Values").select_option("change")
    explorer.wait_drawn(TWO + "&show=change")
    assert page.locator("#chart text.y-label").all_text_contents() == ["% change on the year before"]
    assert [year for year, *_ in explorer.points(0)] == [2021]  # 1964.126 / 1873.288: +4.85 %
    page.get_by_label("Values").select_option("")
    page.get_by_label("Log scale").check()
    explorer.wait_drawn(TWO + "&scale=log")
    expect(page.locator("#note")).to_have_text("1 value at or below 0 not drawn on the log scale.")
    assert len(explorer.points(1)) == 2  # -3.277 is not on a log axis

    # The screenshot, over a decade more of Brazil's figures (roughly the WEO's).
    load_decade(weo)
    explorer.open(TWO)
    page.locator("#chart").focus()
    page.keyboard.press("Home")
    for _ in range(5):  # 2010 .. 2015
        page.keyboard.press("ArrowRight")
    expect(page.locator("#tooltip")).to_contain_text("2015")
    screenshot(page, "explore.png", tmp_path)
    explorer.close()


def test_on_a_390_px_phone_the_chart_comes_first_and_its_text_is_readable(chromium, weo, tmp_path):
    explorer = Tab(chromium, weo)
    page = explorer.page
    page.set_viewport_size({"width": 390, "height": 844})
    load_decade(weo)
    explorer.open(TWO)
    chart, form = boxes(page, "#chart")[0], boxes(page, "#choice")[0]
    assert chart[3] <= form[1], (chart, form)  # the chart ends before the form begins
    assert chart[2] <= 390
    sizes = page.locator("#chart text").evaluate_all(
        "texts => texts.map(t => parseFloat(getComputedStyle(t).fontSize) * t.ownerSVGElement.getBoundingClientRect()"
        ".width / t.ownerSVGElement.viewBox.baseVal.width)")
    assert min(sizes) >= 11, sizes
    page.locator("#chart").focus()
    page.keyboard.press("End")
    tooltip = boxes(page, "#tooltip")[0]
    for point in boxes(page, "#chart circle.point[data-year='2022']"):
        assert not overlaps(tooltip, point), (tooltip, point)
    # Under the chart, yet not over the legend: its two series share a name, and only the legend gives their units.
    for item in boxes(page, "#legend li"):
        assert not overlaps(tooltip, item), (tooltip, item)
    screenshot(page, "explore-phone.png", tmp_path)
    explorer.close()


def weo_and_world_bank(servers, tmp_path):
    """A live server holding the WEO file and the World Bank's, as published."""
    server = servers()
    for name, published in (("WEOOct2023all.xls", wide_files.weo_latin1()),
                            ("API_NY.GDP.MKTP.KD.ZG_DS2_en_csv_v2.csv", wide_files.world_bank_csv())):
        (tmp_path / name).write_bytes(published)
        result = run_upload(tmp_path / name, "--url", url_of(server))
        assert result.returncode == 0, result.stderr
    return server


def test_an_indicator_without_units_is_its_axis_by_name(chromium, servers, tmp_path):
    """The World Bank's indicators have their units in their names ("GDP growth (annual %)"): its axis says that
    name, not the code."""
    explorer = Tab(chromium, weo_and_world_bank(servers, tmp_path))
    page = explorer.open("?country=BRA&indicator=NGDP_R&compare=BRA%2FNY.GDP.MKTP.KD.ZG")
    assert page.locator("#chart text.y-label").all_text_contents() == ["National currency, Billions ←",
                                                                      "GDP growth (annual %) →"]
    explorer.close()


def test_on_a_phone_the_lists_to_start_from_fit_its_width(chromium, servers, tmp_path):
    """The World Bank's codes are long (``NY.GDP.MKTP.KD.ZG``): the lists wrap them rather than widen the page."""
    explorer = Tab(chromium, weo_and_world_bank(servers, tmp_path))
    page = explorer.page
    page.set_viewport_size({"width": 390, "height": 844})
    explorer.open()
    expect(page.locator("#choices h2")).to_have_text(["Countries (3)", "Indicators (3)"])
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    explorer.close()


def test_a_url_of_names_unknown_draws_codes_as_before(chromium, servers):
    server = servers()
    status, _ = server.request("POST", "/api/v1/growth", b'[{"Country":"X","Indicator":"Y","Year":2000,"Value":1}]',
                               {"Content-Type": "application/json"})
    assert status == 202
    server.wait_until_complete()
    explorer = Tab(chromium, server)
    page = explorer.open("?" + urllib.parse.urlencode({"country": "X", "indicator": "Y"}))
    expect(page.locator("#legend li")).to_have_text(["X · Y"])
    assert page.locator("#chart text.y-label").all_text_contents() == ["Y"]
    page.set_default_timeout(DEADLINE_MS)
    explorer.close()
