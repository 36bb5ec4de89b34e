"""The README's configuration table and the settings the code declares stay in step (datasette's
test_docs does the same for its settings)."""

import re

from growth_gevent.config import SETTINGS
from scripts.settings_doc import render

from support import ROOT

README = (ROOT / "README.md").read_text()
CONFIGURATION = re.search(r"^## Configuration\n(.*?)^## ", README, re.S | re.M).group(1)
ROWS = re.findall(r"^\| `([A-Z_]+)` \| (.*?) \| (.*) \|$", CONFIGURATION, re.M)


def test_the_table_lists_exactly_the_declared_settings_in_their_order():
    assert [name for name, _, _ in ROWS] == [setting.env for setting in SETTINGS]


def test_each_row_shows_the_declared_default_and_help():
    for (name, default, meaning), setting in zip(ROWS, SETTINGS, strict=True):
        if setting.default is None:
            expected = "`memory`" if setting.env == "GROWTH_STORE" else "unset"
        elif isinstance(setting.default, bool):
            expected = "`on`" if setting.default else "`off`"
        elif isinstance(setting.default, float):
            expected = f"`{setting.default:g}`"
        else:
            expected = f"`{setting.default}`"
        assert default.split(" (")[0] == expected, name
        assert meaning == setting.help, name


def test_every_link_to_a_section_or_file_exists():
    anchors = {re.sub(r"[^a-z0-9 -]", "", title.lower()).replace(" ", "-")
               for title in re.findall(r"^#+ (.*)$", README, re.M)}
    for target in re.findall(r"\]\(([^)]+)\)", README):
        if target.startswith("#"):
            assert target[1:] in anchors, target
        elif "://" not in target:
            assert (ROOT / target).exists(), target


def test_the_configuration_page_is_what_the_settings_generate():
    assert (ROOT / "docs" / "configuration.md").read_text() == render(), "run: python -m scripts.settings_doc"
