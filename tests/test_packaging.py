"""pyproject.toml as a user meets it: ``pip install .`` into a fresh venv gives a working ``growth-gevent``, and
``pip install '.[redis]'`` adds the Redis client; requirements.txt pins both for deploys."""

import importlib.util
import re
import tomllib

import pytest

from growth_gevent.config import Config, ConfigError
from tests.helpers.packaging import REDIS_CLIENT, REDIS_EXTRA_HINT
from tests.helpers.support import ROOT

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def pinned(requirements):
    return dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)$", requirements, re.M))


def ranges(specs):
    return dict(re.match(r"([A-Za-z0-9_.-]+)(.*)", spec).groups() for spec in specs)


def test_the_base_install_has_no_redis_client_and_the_redis_extra_is_it():
    assert not REDIS_CLIENT & set(ranges(PROJECT["dependencies"]))
    assert set(ranges(PROJECT["optional-dependencies"]["redis"])) == REDIS_CLIENT


def test_the_deploy_pins_are_the_dependencies_and_the_redis_extra_each_pin_in_its_range():
    # requirements.txt is what Heroku and the Dockerfile install: Redis included (the image's default target
    # leaves it out itself).
    wanted = ranges(PROJECT["dependencies"] + PROJECT["optional-dependencies"]["redis"])
    pins = pinned((ROOT / "requirements.txt").read_text())
    assert sorted(wanted) == sorted(pins)
    for name, version in pins.items():
        lowest = re.search(r">=([\d.]+)", wanted[name]).group(1)
        below = re.search(r"<([\d.]+)", wanted[name])
        as_tuple = [int(part) for part in version.split(".")]
        assert as_tuple >= [int(part) for part in lowest.split(".")], name
        assert below is None or as_tuple < [int(part) for part in below.group(1).split(".")], name


def test_gevent_is_a_range_the_http_layer_was_run_on_not_the_deploy_pin():
    # The HTTP layer touches only gevent's public names (tests/http/test_server_internals.py), so installs may
    # take any gevent from the oldest one its tests were run on (docs/http.md#why-the-connection-is-ours).
    gevent = ranges(PROJECT["dependencies"])["gevent"]
    lowest = re.search(r">=([\d.]+)", gevent).group(1)
    deployed = pinned((ROOT / "requirements.txt").read_text())["gevent"]
    assert int(lowest.split(".")[0]) < int(deployed.split(".")[0]), (lowest, deployed)
    assert re.search(r"<\d", gevent)


def test_the_license_is_declared_and_shipped():
    assert PROJECT["license"] == "MIT"
    assert PROJECT["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License\n")


@pytest.mark.parametrize("missing", ["redis", "hiredis"])
def test_the_redis_store_without_its_client_names_the_extra_that_installs_it(monkeypatch, missing):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if name == missing else find_spec(name))
    with pytest.raises(ConfigError) as refused:
        Config.from_env({"GROWTH_STORE": "redis://h"})
    assert f"the Redis client ({missing}) is not installed here" in str(refused.value)
    assert REDIS_EXTRA_HINT in str(refused.value)
