"""Start-up and shutdown as a user meets them: bad settings, snapshots and preload files, real processes."""

import re

import pytest

from growth_gevent import __version__, cli
from growth_gevent.cli import config_from, flag, main, parse_command_line
from growth_gevent.config import DEFAULT_SHUTDOWN_TIMEOUT, SETTINGS
from tests.helpers.support import ROOT


def test_help_lists_the_commands_and_exits_0(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: growth-gevent [-h] [--version] COMMAND ...")
    assert re.search(r"^ +serve +serve the API \(the default\)$", out, re.M)
    assert re.search(r"^ +load +upload bulk files and wait until they are applied$", out, re.M)
    assert re.search(r"^ +check +verify a snapshot and its journal \(read-only unless --repair\)$", out, re.M)


def test_check_without_a_path_says_what_it_needs_and_exits_2(capsys):
    assert main(["check"], environ={}) == 2
    assert capsys.readouterr().out == "cannot check: give the snapshot's path (or set GROWTH_SNAPSHOT)\n"


def test_version_prints_the_packages_version_and_exits_0(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert (exited.value.code, capsys.readouterr().out) == (0, f"growth-gevent {__version__}\n")


def test_serve_has_one_flag_per_setting_with_the_settings_variable_and_help(capsys):
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    flags = re.findall(r"\[(--[a-z-]+) [^]]+\]", out)
    assert flags == [flag(setting) for setting in SETTINGS]
    assert len(set(flags)) == len(SETTINGS)
    assert "--snapshot" in flags and "--port" in flags
    for setting in SETTINGS:
        assert f"({setting.env}; default: " in out


@pytest.mark.parametrize("argv", [["--port", "9000"], ["serve", "--port", "9000"]])
def test_a_flag_overrides_the_environment_which_gives_the_rest(argv):
    config = config_from(parse_command_line(argv), {"PORT": "8000", "GROWTH_ACCESS_LOG": "on"})
    assert (config.port, config.access_log) == (9000, True)
    assert config_from(parse_command_line([]), {"PORT": "8000"}).port == 8000


def test_a_store_flag_reads_redis_url_from_the_environment():
    config = config_from(parse_command_line(["--store", "redis"]), {"REDIS_URL": "redis://h:1/0"})
    assert config.store_url == "redis://h:1/0"


def test_a_bad_flag_value_names_the_setting_and_the_flag_and_serves_nothing(caplog, monkeypatch):
    monkeypatch.setattr(cli, "configure_logging", lambda: None)  # the test's log capture stays in place
    assert main(["--port", "abc", "--access-log", "on"], environ={}) == 2
    assert "configuration error: PORT must be an integer, got 'abc' (given as --port)" in caplog.text


def test_load_is_the_upload_command():
    args = parse_command_line(["load", "data.json", "more.csv", "--url", "http://h:1/"])
    assert (args.command, args.files, args.url, args.timeout) == ("load", ["data.json", "more.csv"], "http://h:1",
                                                                  300.0)
    assert (args.format, args.token, args.concurrency) == (None, None, 4)


def test_load_help_gives_every_exit_code_a_file_loaded_in_part_its_own(capsys):
    with pytest.raises(SystemExit):
        parse_command_line(["load", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert ("Exit 0: every file loaded whole; 1: none; 3: some files loaded whole and the others not at all "
            "(stderr names them); 4: a file loaded in part") in text
    assert "2: a usage error or a file that cannot be read, nothing sent" in text

@pytest.mark.parametrize("command", [["load", "data.json"], ["export"]])
def test_the_clients_read_the_settings_as_the_server_does(command, monkeypatch):
    ran = []
    monkeypatch.setattr(cli.load, "run", ran.append)
    monkeypatch.setattr(cli.export, "run", ran.append)
    main(command, environ={"PORT": "9001", "GROWTH_MAX_BODY_BYTES": "100000"})
    main([*command, "--url", "http://h:1"], environ={"PORT": "9001"})
    assert [args.url for args in ran] == ["http://127.0.0.1:9001", "http://h:1"]
    if command[0] == "load":
        assert [args.max_body for args in ran] == [100000, 8 * 1024 * 1024]


def test_a_client_with_a_bad_setting_says_so(caplog, monkeypatch):
    monkeypatch.setattr(cli, "configure_logging", lambda: None)
    assert main(["export"], environ={"PORT": "abc"}) == 2
    assert "configuration error: PORT must be an integer" in caplog.text


DOCKER_STOP_GRACE_SECONDS = 10  # docker stop's default -t
LAST_SNAPSHOT_SECONDS = 1  # what the last snapshot may take after the requests in flight (42,450 records: 0.1 s)


def test_the_image_stops_on_sigterm_within_docker_stops_default_grace():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^STOPSIGNAL SIGTERM$", dockerfile, re.M)
    assert not re.search(r"^ENV .*GROWTH_SHUTDOWN_TIMEOUT", dockerfile, re.M)
    assert DEFAULT_SHUTDOWN_TIMEOUT + LAST_SNAPSHOT_SECONDS <= DOCKER_STOP_GRACE_SECONDS


# Durability: real processes restarted on the same snapshot file.



