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


