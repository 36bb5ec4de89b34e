"""The OpenAPI document is valid and true of the app (its routes: tests/api/test_openapi.py).

Two bounded, deterministic (derandomized) property-based fuzzes run against the in-process app:
schemathesis generates requests from the document itself, valid and invalid, for every operation; a
Hypothesis fuzz sends what the document does not describe (broken %-escapes, unknown and repeated
parameters, any body under any Content-Type, any method on any path). Either way no input may give a
5xx, and every response must have a documented status code, content type and body schema.
"""

import json
import re
from urllib.parse import quote, unquote

import hypothesis
import pytest
import schemathesis
import webtest
from hypothesis import strategies as st
from openapi_schema_validator import OAS30Validator
from openapi_spec_validator import validate
from schemathesis.config import SchemathesisConfig
from schemathesis.generation import GenerationMode

from growth_gevent.api.app import create_app
from growth_gevent.api.cursor import encode_cursor
from growth_gevent.api.params import MAX_OFFSET
from growth_gevent.api.resources import ROOT_METHODS
from growth_gevent.config import Config
from growth_gevent.core.records import has_surrogates
from tests.helpers.openapi import CONVERTER, DOCUMENT, DOCUMENT_PATH, HTTP_METHODS, document_operations
from tests.helpers.support import make_store

# Small, so that generated bodies also reach the 413.
FUZZ_MAX_BODY_BYTES = 4 * 1024
# Per operation for schemathesis (19 operations, plus its coverage cases); the whole file runs in ~20 s.
FUZZ_EXAMPLES = 50
# Records the fuzz finds already stored, so that GETs also reach their 200s (the document's examples).
PRELOADED = [("BRZ", "NGDP_R", year, 100.0 + year / 10) for year in range(1998, 2008)]


def test_the_document_is_valid_openapi():
    validate(DOCUMENT)  # raises on any violation of the OpenAPI 3.0 schema, or an unresolvable $ref
    assert DOCUMENT["openapi"].startswith("3.")


# --- The fuzz -------------------------------------------------------------------------------------

# The configuration is all here: no schemathesis.toml is looked for.
_fuzz_config = SchemathesisConfig.from_dict({
    "generation": {"mode": "all", "max-examples": FUZZ_EXAMPLES, "deterministic": True},
    "checks": {
        # Invalid input must be refused with one of the statuses this API uses for that (a body too
        # large to read is refused before it is looked at, so 413 counts too).
        "negative_data_rejection": {"expected-statuses": ["400", "404", "413", "415", "422"]},
        # Valid input is answered with success, or 404 for what is not stored, or 413 for a valid
        # bulk load over the (deliberately small) body limit; or 304/412 for a conditional header with a
        # made-up ETag (If-None-Match: * on a record, If-Match on none).
        "positive_data_acceptance": {"expected-statuses": ["2xx", "304", "404", "412", "413"]},
    },
})
_CURSOR_PATTERN = re.compile(next(parameter["schema"]["pattern"] for parameter in DOCUMENT["paths"]["/api/v1/growth"]
                                  ["get"]["parameters"] if parameter.get("name") == "cursor"))
_SOME_CURSOR = encode_cursor(PRELOADED[0][:3])


@schemathesis.hook
def map_query(ctx, query):
    """A cursor the schema allows is not always one the service gave, and a cursor excludes an offset,
    which no schema can say: a schema-valid cursor is made a real one, and a schema-valid offset beside
    it 0. Cursors that break the schema stay as generated, so that negative cases stay negative. Nor can a
    schema say that ``from`` comes before ``to`` (else a 400): integers the wrong way round are swapped."""
    first, last = (query or {}).get("from"), (query or {}).get("to")
    if isinstance(first, int) and isinstance(last, int) and first > last:
        query = {**query, "from": last, "to": first}
    cursor = (query or {}).get("cursor")
    if not isinstance(cursor, str) or not cursor or not _CURSOR_PATTERN.search(cursor):
        return query
    query = {**query, "cursor": _SOME_CURSOR}
    if re.fullmatch(r"[0-9]+", str(query.get("offset", ""))) and int(query["offset"]) <= MAX_OFFSET:
        query["offset"] = 0
    return query


@schemathesis.hook
def map_case(ctx, case):
    """A PUT's record must name the URL's record, which no schema can say: a schema-valid Country,
    Indicator or Year in the body is made the path's. Others stay as generated, negative as they were."""
    body, path = case.body, case.path_parameters or {}
    if case.meta is not None and case.meta.generation.mode == GenerationMode.POSITIVE:
        for parameter, value in path.items():
            if parameter in ("country", "indicator") and _REPLACEMENT in str(value):
                path[parameter] = PRELOADED[0][("country", "indicator").index(parameter)]
    operation = case.operation.definition.raw.get("operationId")
    if operation in _DESCRIBING and isinstance(body, dict) and case.meta is not None \
            and case.meta.generation.mode == GenerationMode.POSITIVE:
        # A patch's codes must be Names, which OpenAPI 3.0 cannot say of an object's keys; JSON text with a
        # lone surrogate is no UTF-8 text: a positive patch keeps the codes and texts that are.
        case.body = {code: change for code, change in body.items() if _NAME.is_valid(code)
                     and not has_surrogates(code + json.dumps(change, ensure_ascii=False))}
        return case
    if operation != "putRecord" or not isinstance(body, dict):
        return case
    for field, parameter in (("Country", "country"), ("Indicator", "indicator"), ("Year", "year")):
        named = path.get(parameter)  # percent-encoded by now, a year perhaps as text
        if isinstance(named, str):
            named = int(named) if field == "Year" and re.fullmatch(r"-?[0-9]{1,9}", named) else unquote(named)
        if field in body and named is not None and _RECORD_FIELDS[field].is_valid(body[field]):
            body[field] = named
    return case


# A name with a lone surrogate matches the Name pattern (a pattern that excluded them would exclude astral
# characters in JavaScript's regexes), but no URL can hold it: schemathesis writes it as U+FFFD, which no
# name may be (a PUT of it is 422). A positive case's name with one is made a stored one.
_REPLACEMENT = quote("\ufffd")
_NAME = OAS30Validator(DOCUMENT["components"]["schemas"]["Name"])
_DESCRIBING = ("describeCountries", "describeIndicators")
_RECORD_FIELDS = {field: OAS30Validator(schema)
                  for field, schema in DOCUMENT["components"]["schemas"]["Record"]["properties"].items()}


schema = schemathesis.openapi.from_dict(json.loads(DOCUMENT_PATH.read_text(encoding="utf-8")),
                                        config=_fuzz_config)


class _AppUnderTest:
    """schemathesis is given one WSGI app when this module is imported; the store comes later."""

    app = None

    def __call__(self, environ, start_response):
        # schemathesis's WSGI transport sends requests' default Accept-Encoding (gzip) and does not decode
        # what it asked for; gzip has tests of its own (tests/api/test_compression.py).
        environ.pop("HTTP_ACCEPT_ENCODING", None)
        return self.app(environ, start_response)


schema.app = _AppUnderTest()


def preloaded_app(store_kind, request):
    """An app on a fresh store of ``store_kind``, holding PRELOADED; and its store."""
    store = make_store(store_kind, request)
    app = create_app(store, Config(max_body_bytes=FUZZ_MAX_BODY_BYTES))
    client = webtest.TestApp(app)
    for country, indicator, year, value in PRELOADED:
        client.put_json(f"/api/v1/growth/{country}/{indicator}/{year}", {"value": value}, status=201)
    return app, store


@pytest.fixture(scope="module")
def fuzzed_store(store_kind, request):
    schema.app.app, store = preloaded_app(store_kind, request)
    yield
    store.close()


@schema.parametrize()
@hypothesis.settings(max_examples=FUZZ_EXAMPLES, derandomize=True, deadline=None, database=None,
                     suppress_health_check=list(hypothesis.HealthCheck))
def test_fuzz_conforms_to_the_document(case, fuzzed_store):
    case.call_and_validate()


# --- The raw fuzz ---------------------------------------------------------------------------------
# What schemathesis does not send: path segments with broken or multi-byte %-escapes, '%2F', dots and
# non-canonical integers; query strings with unknown, repeated, blank and very long parameters; bodies
# that are not JSON, or JSON of any shape, under any Content-Type; every method on every path. The
# oracle is the document and falcon's own routing: a request that reaches a documented operation gets
# one of its documented statuses, and a body of the documented type and schema; one that reaches no
# route is a JSON 404; another method is a JSON 405 with Allow; nothing is ever a 5xx.

RAW_EXAMPLES = 1000
RAW_METHODS = ("GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS")
LIST_PARAMETERS = ("country", "indicator", "year", "from", "to", "limit", "offset", "cursor", "format")
_LONG_DIGITS = "1" * 4301  # one digit more than Python's int() reads from a string by default


def _resolved(node):
    """``node`` with every local ``$ref`` of the document replaced by what it points at."""
    if isinstance(node, dict):
        if "$ref" in node:
            target = DOCUMENT
            for part in node["$ref"].removeprefix("#/").split("/"):
                target = target[part]
            return _resolved(target)
        return {key: _resolved(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_resolved(item) for item in node]
    return node


RESOLVED_PATHS = _resolved(DOCUMENT["paths"])


class _RouteRecorder:
    """Middleware that leaves the route falcon matched (or None) and the path it routed in the WSGI environ."""

    def process_response(self, req, resp, resource, req_succeeded):
        req.env["test.uri_template"] = req.uri_template
        req.env["test.path"] = req.path


@pytest.fixture(scope="module")
def raw_client(store_kind, request):
    app, store = preloaded_app(store_kind, request)
    app.add_middleware(_RouteRecorder())
    yield webtest.TestApp(app)
    store.close()


_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=10)
_integer_like = st.one_of(
    st.integers(-3000, 3000).map(str),
    st.integers().map(str),
    st.sampled_from(["", "-0", "00", "+5", " 5", "5 ", "1_000", "2002.0", "1e3", "0x10", "\u0663", "-",
                     _LONG_DIGITS, "9" * 5000]),
)
_segment = st.one_of(
    _text.map(lambda text: quote(text, safe="")),
    st.sampled_from(["BRZ", "brz", "NGDP_R", "post", "status", "size", ".", "..", "%", "%2", "%ZZ", "%FF",
                     "%C3%28", "%ED%A0%80", "%2F", "a%2Fb", "%00", "%20", "%25", "~", ""]),
    _integer_like.map(lambda text: quote(text, safe="")),
)


def _mostly(plausible, anything):
    """``plausible`` three times in four, else ``anything`` (``one_of`` is far from even)."""
    return st.sampled_from([True, True, True, False]).flatmap(lambda yes: plausible if yes else anything)


_path_values = st.fixed_dictionaries({
    "country": _mostly(st.sampled_from(["BRZ", "brz"]), _segment),
    "indicator": _mostly(st.sampled_from(["NGDP_R", "ngdp_r"]), _segment),
    "year": _mostly(st.sampled_from([str(year) for year in range(1996, 2010)]), _segment),
    "asset": _mostly(st.sampled_from(RESOLVED_PATHS["/docs/{asset}"]["parameters"][0]["schema"]["enum"]), _segment),
    "job": _mostly(st.sampled_from(["1", "2", "3"]), _segment),
    "format": _mostly(st.sampled_from(["csv", "ndjson", "json"]), _segment),
})
_random_path = st.lists(_segment, max_size=6).map(lambda parts: "/" + "/".join(parts))
_query_name = st.one_of(st.sampled_from(LIST_PARAMETERS), st.sampled_from(["", "x", "Country", "limit ", "from[]"]),
                        _text)
_query_value = st.one_of(_integer_like, _text, st.sampled_from(["BRZ", "ngdp_r", "%", "%FF", "a&b", "=", "%00"]))
_query = st.one_of(
    st.just(""),
    st.lists(st.tuples(_query_name, _query_value, st.booleans()), max_size=4).map(
        lambda pairs: "&".join(quote(name, safe="") + (f"={quote(value, safe='%')}" if has_value else "")
                               for name, value, has_value in pairs)),
    st.sampled_from(["&&", "=", "%", "limit=1&limit=2", "from=2000&to=1999", f"offset={'9' * 30}"]),
)
_json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | _text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_text, children, max_size=4),
    max_leaves=12)
_record = st.fixed_dictionaries(
    {"Country": st.one_of(st.just("BRZ"), _text, _json_value), "Indicator": st.one_of(st.just("NGDP_R"), _text),
     "Value": st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.integers(), _json_value),
     "Year": st.one_of(st.integers(1995, 2010), st.integers(), _json_value)},
    optional={"Note": _json_value})
_valid_record = st.fixed_dictionaries({
    "Country": st.sampled_from(["BRZ", "brz", "ARG", "\u00e9t\u00e9", "a b", "%"]),
    "Indicator": st.sampled_from(["NGDP_R", "ngdp_r", "X"]),
    "Value": st.floats(allow_nan=False, allow_infinity=False) | st.integers(-10**6, 10**6),
    "Year": st.integers(1995, 2010)})
_body = st.one_of(
    st.none(),
    st.binary(max_size=40),
    _json_value.map(json.dumps),
    st.lists(_record, max_size=4).map(json.dumps),
    st.lists(_valid_record, max_size=4).map(json.dumps),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda value: json.dumps({"value": value})),
    st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.integers(), _json_value).map(
        lambda value: json.dumps({"value": value})),
    st.sampled_from(["NaN", "1e400", "[1e400]", '{"value": 1e400}', '{"value": NaN}', "[" * 3000, "[] x",
                     '{"value": ' + _LONG_DIGITS + "}", '"\\ud800"', "\ufeff[]", "x" * (FUZZ_MAX_BODY_BYTES + 1),
                     "Country,Indicator,Value,Year\r\nbrz,ngdp_r,1.5,2002\r\n", "Year,Value,Country,Indicator\n1,2,a,b",
                     'Country,Indicator,Value,Year\r\n"A,B",x,1e400,1\r\n', 'Country,Indicator,Value,Year\r\n"open',
                     "\ufeffCountry,Indicator,Value,Year\r\nA,B,1,1", "Country,Indicator,Value,Year\r\n" + "," * 3000]),
).map(lambda body: body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body)
_BODIES = {
    "POST": _mostly(st.lists(_valid_record, max_size=4).map(lambda records: json.dumps(records).encode()), _body),
    "PUT": _mostly(st.floats(allow_nan=False, allow_infinity=False).map(
        lambda value: json.dumps({"value": value}).encode()), _body),
}
_json_content_type = st.sampled_from(["application/json", "application/json; charset=utf-8", "APPLICATION/JSON"])
_content_type = st.one_of(_json_content_type, st.sampled_from(
    [None, "application/json;", "text/plain", "application/x-www-form-urlencoded", "application/jsonx", "",
     "text/csv", "text/csv; charset=utf-8"]))
# Mostly a documented operation (its path filled in, mostly plausible values), sometimes anything at all.
_operation_request = st.sampled_from(sorted(document_operations())).flatmap(lambda operation: st.tuples(
    st.just(operation[1]),
    _path_values.map(lambda values: operation[0].format(**values)),
    _query,
    _BODIES.get(operation[1], _mostly(st.none(), _body)),
    _mostly(_json_content_type, _content_type) if operation[1] in ("POST", "PUT") else _content_type,
))
_any_request = st.tuples(st.sampled_from(RAW_METHODS), _random_path, _query, _body, _content_type)
_raw_request = _mostly(_operation_request, _any_request)


def _check_raw_response(method, url, response):
    """The response is what the document promises for the operation falcon routed the request to."""
    status = response.status_int
    request = f"{method} {url[:300]}"
    assert status < 500, (request, response.body)
    template = response.request.environ.get("test.uri_template")
    path = CONVERTER.sub(r"{\1}", template) if template else None
    # A HEAD is answered by its GET's operation, without the body (the document says so once).
    operation = RESOLVED_PATHS.get(path, {}).get("get" if method == "HEAD" else method.lower())
    if method == "HEAD" or status in (204, 304):
        assert response.body == b"", request
    if path is None:
        # "/" is the challenge harness's 400 (resources.root); every other path no route matched is a 404.
        root = response.request.environ["test.path"] == "/" and method in ROOT_METHODS
        assert status == (400 if root else 404), request
    elif operation is None:
        allowed = {m.upper() for m in RESOLVED_PATHS[path] if m in HTTP_METHODS}
        allowed |= {"HEAD"} if "GET" in allowed else set()
        assert set(response.headers["Allow"].replace(" ", "").split(",")) - {"OPTIONS"} == allowed, request
        assert status == (200 if method == "OPTIONS" else 405), request
        if method == "OPTIONS":
            return
    else:
        assert str(status) in operation["responses"], (request, status, response.body)
        documented = operation["responses"][str(status)].get("content")
        if documented is None or method == "HEAD":
            return
        media_type = response.content_type
        assert media_type in documented, (request, status, media_type)
        if media_type != "application/json":
            if media_type.startswith("text/"):
                response.body.decode("utf-8")
            return
        document = json.loads(response.body)
        OAS30Validator(documented[media_type]["schema"]).validate(document)
        _check_semantics(path, status, document)
        return
    if method != "HEAD":
        assert response.content_type == "application/json", request
        document = json.loads(response.body)
        assert set(document) == {"msg"} and isinstance(document["msg"], str), (request, document)


def _check_semantics(path, status, document):
    """What a schema cannot say: order and paging."""
    if status != 200:
        return
    if path == "/api/v1/growth":
        keys = [(item["Country"], item["Indicator"], item["Year"]) for item in document["items"]]
        assert keys == sorted(keys)
        # Where a page after a cursor starts is not in the page: only a page with a next is known full.
        assert len(keys) == document["limit"] if document["next"] else len(keys) <= document["limit"]
        assert len(keys) <= max(0, document["total"] - document["offset"])
    elif path == "/api/v1/growth/{country}/{indicator}":
        years = [value["Year"] for value in document["Values"]]
        assert years == sorted(set(years))


@hypothesis.settings(max_examples=RAW_EXAMPLES, derandomize=True, deadline=None, database=None,
                     suppress_health_check=list(hypothesis.HealthCheck))
@hypothesis.given(_raw_request)
# Integers too long for int() (4,301 digits and more) were a 500; this fuzz found it. Pinned here.
@hypothesis.example(("GET", "/api/v1/growth", f"year={_LONG_DIGITS}", None, None))
@hypothesis.example(("GET", "/api/v1/growth", f"limit={_LONG_DIGITS}", None, None))
@hypothesis.example(("GET", "/api/v1/growth/BRZ/NGDP_R", f"from={_LONG_DIGITS}", None, None))
def test_raw_fuzz_answers_as_documented(raw_client, raw_request):
    method, path, query, body, content_type = raw_request
    params = {"method": method, "expect_errors": True}
    if body is not None:
        params["body"] = body
    if content_type is not None:
        params["content_type"] = content_type
    url = path + ("?" + query if query else "")
    _check_raw_response(method, url, raw_client.request(url, **params))
