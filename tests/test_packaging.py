"""pyproject.toml as a user meets it: ``pip install .`` into a fresh venv gives a working ``growth-gevent``."""

import re
import tomllib

from support import ROOT

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
LOCAL_INDEX = "file:///opt/pypi/simple"  # this machine's copy of PyPI: the build backend comes from it


def pinned(requirements):
    return dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)$", requirements, re.M))


def test_the_dependencies_are_the_deploy_pins_packages_each_pin_in_its_range():
    ranges = dict(re.match(r"([A-Za-z0-9_.-]+)(.*)", spec).groups() for spec in PROJECT["dependencies"])
    pins = pinned((ROOT / "requirements.txt").read_text())
    assert sorted(ranges) == sorted(pins)
    for name, version in pins.items():
        lowest = re.search(r">=([\d.]+)", ranges[name]).group(1)
        below = re.search(r"<([\d.]+)", ranges[name])
        as_tuple = [int(part) for part in version.split(".")]
        assert as_tuple >= [int(part) for part in lowest.split(".")], name
        assert below is None or as_tuple < [int(part) for part in below.group(1).split(".")], name




def test_gevent_is_a_range_the_http_layer_was_run_on_not_the_deploy_pin():
    # The HTTP layer touches only gevent's public names (tests/test_server_internals.py), so installs may
    # take any gevent from the oldest one its tests were run on (docs/design.md, The HTTP layer).
    ranges = dict(re.match(r"([A-Za-z0-9_.-]+)(.*)", spec).groups() for spec in PROJECT["dependencies"])
    lowest = re.search(r">=([\d.]+)", ranges["gevent"]).group(1)
    deployed = pinned((ROOT / "requirements.txt").read_text())["gevent"]
    assert int(lowest.split(".")[0]) < int(deployed.split(".")[0]), (lowest, deployed)
    assert re.search(r"<\d", ranges["gevent"])
