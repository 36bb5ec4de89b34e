"""The documentation holds to the code, as datasette's test_docs does: the README is a newcomer's page
(small, with its contents listed, its endpoint table exactly the app's routes); every link of README.md
and docs/*.md resolves; every GROWTH_ variable named is declared; docs/configuration.md is what the
settings generate; and every command line of ours in a ```sh block parses as the command line parses it.

The pages stay short where a newcomer starts (architecture.md, performance.md), and every reference of the
code to a page (``docs/performance.md#gzip-level`` in a comment) names a page and a heading that exist.

The ```sh commands are checked, not run: each ``growth-gevent`` (or ``python -m growth_gevent``) line is
parsed by the CLI's own argparse and, for ``serve``, its flags turned into a Config, so an unknown command,
flag or value fails here; each script a block runs must exist. Running them would need a server, a
snapshot, Docker or Heroku; the walkthrough, which needs only a server, is run by tests/test_readme_live.py.
"""

import re
import shlex
from pathlib import Path

import pytest

from growth_gevent.cli import config_from, parse_command_line
from growth_gevent.cli.client import TOKEN_VARIABLE
from growth_gevent.config import SETTINGS
from growth_gevent.stores.redis.persistence import loss_table
from scripts.settings_doc import default_text, render
from tests.helpers.openapi import table_operations
from tests.helpers.support import ROOT

README_PATH = ROOT / "README.md"
DOCS = ROOT / "docs"
# The pages by topic, and docs/notes/: the dated rounds and history they link to.
PAGE_PATHS = [README_PATH, *sorted(DOCS.glob("*.md")), *sorted((DOCS / "notes").glob("*.md"))]
# What the clients of the service (load, the k6 scripts, the locustfile) read: not a setting of the server.
CLIENT_VARIABLES = {TOKEN_VARIABLE}
# Pages whose opening others write (the lead the changelog's).
OPENED_BY_OTHERS = {"docs/CHANGELOG.md"}
# Pages a newcomer reads first, and their bounds in bytes: reference, not a lab notebook.
SHORT_PAGES = {"docs/architecture.md": 10_000, "docs/performance.md": 16_000}
# Where the code names a page: a comment's ``docs/performance.md#gzip-level``, a message's ``docs/durability.md``.
CODE_DIRS = ("growth_gevent", "scripts", "tests")
_PAGE_REFERENCE = re.compile(r"\bdocs/([\w/-]+\.md)(?:#([\w-]+))?")
_FENCED = re.compile(r"^```.*?^```", re.S | re.M)
_CODE_SPAN = re.compile(r"`[^`\n]*`")


def prose(text):
    """``text`` without its code blocks and code spans: a ``# comment`` there is no heading, nor a link."""
    return _CODE_SPAN.sub("", _FENCED.sub("", text))


def anchor(title):
    """The anchor GitHub makes of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", title.replace("`", "").lower()).replace(" ", "-")


def headings(text, level="#+"):
    return re.findall(rf"^{level} (.*)$", _FENCED.sub("", text), re.M)


def section(text, title):
    return re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.S | re.M).group(1)


def sh_lines(text):
    """Each command line of the ```sh blocks, continuation lines joined, comments dropped."""
    for block in re.findall(r"^```sh\n(.*?)^```", text, re.S | re.M):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"(^|\s)#.*", "", line).strip()
            if line:
                yield line


def our_arguments(words):
    """The arguments of a ``growth-gevent`` or ``python -m growth_gevent`` command, up to a redirection or
    pipe; None for another."""
    words = words[:next((at for at, word in enumerate(words) if word in ("|", ">", "<", "&&")), len(words))]
    if words[:1] == ["growth-gevent"]:
        return words[1:]
    if words[:1] and words[0].endswith("python") and words[1:3] == ["-m", "growth_gevent"]:
        return words[3:]
    return None


README = README_PATH.read_text()
PAGES = {path.relative_to(ROOT).as_posix(): path.read_text() for path in PAGE_PATHS}
CONFIGURATION = (ROOT / "docs" / "configuration.md").read_text()
ROWS = re.findall(r"^\| `([A-Z_]+)` \| (.*?) \| (.*) \|$", CONFIGURATION, re.M)


class TestReadme:
    def test_its_contents_list_its_sections_in_order(self):
        contents = re.findall(r"^- \[(.+)\]\(#(.+)\)$", section(README, "Contents"), re.M)
        sections = [title for title in headings(README, "##") if title != "Contents"]
        assert [title for title, _ in contents] == sections
        assert [target for _, target in contents] == [anchor(title) for title in sections]

    def test_it_says_the_two_commands(self):
        assert list(sh_lines(section(README, "Two commands"))) == ["./scripts/serve", "./scripts/test"]

    def test_its_endpoint_table_lists_exactly_the_routes_of_the_app(self):
        rows = re.findall(r"^\| `([A-Z]+)` \| `([^`]+)` \|", section(README, "Endpoints"), re.M)
        assert len(rows) == len(set(rows)), "a route listed twice"
        # Every GET answers HEAD too, which the page says once.
        routes = {(path, method) for path, method in table_operations() if method != "HEAD"}
        assert {(path, method) for method, path in rows} == routes


@pytest.mark.parametrize("name", PAGES)
def test_every_link_to_a_file_or_heading_exists(name):
    here = (ROOT / name).parent
    for target in re.findall(r"\]\(([^)\s]+)\)", prose(PAGES[name])):
        if "://" in target or target.startswith("mailto:"):
            continue
        path, _, fragment = target.partition("#")
        file = (here / path).resolve() if path else ROOT / name
        assert file.exists(), target
        if fragment:
            assert file.suffix == ".md", target
            assert fragment in {anchor(title) for title in headings(file.read_text())}, target


@pytest.mark.parametrize("name", [name for name in PAGES if name.startswith("docs/") and name not in OPENED_BY_OTHERS])
def test_every_page_says_what_it_covers_and_links_back_to_the_readme(name):
    title, summary = PAGES[name].split("\n\n")[:2]
    assert title.startswith("# ") and "\n" not in title, name
    back = "../" * (len(Path(name).parts) - 1)
    assert f"]({back}README.md)" in summary, name


@pytest.mark.parametrize("name", SHORT_PAGES)
def test_the_pages_a_newcomer_reads_first_stay_short(name):
    assert name in PAGES, f"{name} is missing"
    assert len(PAGES[name].encode()) < SHORT_PAGES[name], f"{name}: move rounds and history to docs/notes/"


def code_references():
    """``(file, line, page, heading or None)`` of every ``docs/...md`` the code names."""
    for folder in CODE_DIRS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                for page, heading in _PAGE_REFERENCE.findall(line):
                    yield f"{path.relative_to(ROOT)}:{number}", f"docs/{page}", heading or None


def test_every_page_the_code_names_exists_with_its_heading():
    references = list(code_references())
    assert references, "the search finds no reference: is the pattern right?"
    for where, page, heading in references:
        assert page in PAGES, f"{where}: {page} does not exist"
        if heading:
            assert heading in {anchor(title) for title in headings(PAGES[page])}, f"{where}: no heading #{heading}"


def test_the_figures_the_code_cites_are_each_named_by_their_heading():
    """A comment of the package that points at a measured figure says which one: performance.md#its-heading."""
    for where, page, heading in code_references():
        if where.startswith("growth_gevent/") and page == "docs/performance.md":
            assert heading, f"{where}: name the figure's heading, docs/performance.md#..."


def test_every_growth_variable_named_is_a_setting():
    declared = {setting.env for setting in SETTINGS} | CLIENT_VARIABLES
    for name, text in PAGES.items():
        named = set(re.findall(r"\bGROWTH_[A-Z0-9_]*[A-Z0-9]", text))
        assert sorted(named - declared) == [], name


@pytest.mark.parametrize("name", PAGES)
def test_every_command_line_of_ours_parses(name):
    for line in sh_lines(PAGES[name]):
        words = shlex.split(line)
        while words and re.fullmatch(r"[A-Z_]+=.*", words[0]):  # the environment it is given
            words.pop(0)
        argv = our_arguments(words)
        if argv is not None:
            try:
                args = parse_command_line(argv)
            except SystemExit as exit:  # --help and --version exit 0, a usage error 2
                assert exit.code == 0, line
                continue
            if args.command == "serve":
                config_from(args, {})
        for word in words:  # a script it runs or a file it reads: ours, so it must be there
            if re.fullmatch(r"(\./)?(scripts|data)/[\w./-]+", word):
                assert (ROOT / word).exists(), line
            elif re.fullmatch(r"scripts\.\w+", word):
                assert (ROOT / f"{word.replace('.', '/')}.py").exists(), line


def test_the_readme_links_to_every_page():
    for name in PAGES:
        if Path(name).parent.as_posix() == "docs":
            assert f"]({name})" in README, name


def test_every_note_is_linked_from_a_page():
    """docs/notes/ holds what the pages left out (dated rounds, history): each reached from one of them."""
    for name in PAGES:
        if name.startswith("docs/notes/"):
            note = Path(name).name
            pages = [page for page in PAGES if Path(page).parent.as_posix() == "docs"]
            assert any(f"](notes/{note}" in PAGES[page] for page in pages), name


class TestConfigurationPage:
    def test_it_lists_exactly_the_declared_settings_in_their_order(self):
        assert [name for name, _, _ in ROWS] == [setting.env for setting in SETTINGS]

    def test_each_row_shows_the_declared_default_and_help(self):
        for (name, default, meaning), setting in zip(ROWS, SETTINGS, strict=True):
            assert default == default_text(setting), name
            assert meaning == setting.help, name

    def test_it_is_what_the_settings_generate(self):
        assert CONFIGURATION == render(), "run: python -m scripts.settings_doc"


def test_the_durability_page_shows_the_loss_table_the_start_up_log_gives():
    """The log's table (stores/redis/persistence.py) as Markdown rows, the setup's marks aside."""
    logged = [[cell.strip() for cell in line.split("|")] for line in loss_table(0, None).splitlines()]
    shown = re.findall(r"^\| (.*) \|$", section(PAGES["docs/durability.md"], "Redis"), re.M)
    rows = [[cell.strip().strip("`") for cell in row.split(" | ")] for row in shown if not row.startswith("---")]
    assert [row for row in rows if len(row) == len(logged[0])][-len(logged):] == logged
