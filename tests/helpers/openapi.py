"""The OpenAPI document as the tests read it: its operations, and the route table's, to hold one to the other."""

import json
import re

from growth_gevent.api.routes import ROUTES
from tests.helpers.support import ROOT

DOCUMENT_PATH = ROOT / "growth_gevent" / "api" / "openapi.json"
DOCUMENT = json.loads(DOCUMENT_PATH.read_text(encoding="utf-8"))
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
CONVERTER = re.compile(r"\{(\w+):[^}]*\}")


def document_operations():
    """(path template, method) of every operation the document describes: HEAD wherever GET, as it says."""
    described = {(template, method.upper())
                 for template, item in DOCUMENT["paths"].items()
                 for method in item if method in HTTP_METHODS}
    return described | {(template, "HEAD") for template, method in described if method == "GET"}


def table_operations():
    """(path template, method) of every route of the route table, as OpenAPI writes its path."""
    return {(route.template, method) for route in ROUTES for method in route.methods}
