"""Access control: writes need a bearer token when tokens are configured; reads stay public."""

import hmac
import logging

import pytest

from growth_gevent.api import auth
from growth_gevent.api.auth import RequireToken, is_loopback, warn_if_open
from growth_gevent.config import Config, ConfigError
from tests.helpers.api import MISSING, RECORD_URL, TOKEN, bearer
from tests.helpers.shared_app import SharedApp

OTHER_TOKEN = "another-token-0123456789"
RECORD = {"Country": "BRZ", "Indicator": "NGDP_R", "Value": 1.5, "Year": 2002}
INVALID = 'Bearer realm="growth", error="invalid_token"'


@pytest.fixture(scope="module")
def guarded_app():
    return SharedApp(Config(api_tokens=(TOKEN, OTHER_TOKEN)))


@pytest.fixture
def guarded(store, guarded_app):
    with guarded_app.client(store) as client:
        yield client


WRITES = [
    pytest.param(lambda app, headers: app.put_json(RECORD_URL, {"value": 2.5}, headers=headers, expect_errors=True),
                 id="PUT"),
    pytest.param(lambda app, headers: app.delete(RECORD_URL, headers=headers, expect_errors=True), id="DELETE"),
    pytest.param(lambda app, headers: app.post_json("/api/v1/growth", [RECORD], headers=headers, expect_errors=True),
                 id="bulk POST"),
    pytest.param(lambda app, headers: app.patch_json("/api/v1/growth/countries", {"BRZ": {"name": "Brazil"}},
                                                     headers=headers, expect_errors=True), id="PATCH names"),
]


@pytest.mark.parametrize("write", WRITES)
@pytest.mark.parametrize("headers, challenge, message", [
    ({}, MISSING, "this write needs a token: Authorization: Bearer <token>"),
    ({"Authorization": f"Basic {TOKEN}"}, MISSING, "this write needs a token: Authorization: Bearer <token>"),
    (bearer("wrong-token-of-some-length"), INVALID, "the bearer token is not valid"),
    (bearer(TOKEN[:-1]), INVALID, "the bearer token is not valid"),
    ({"Authorization": "Bearer"}, MISSING, "this write needs a token: Authorization: Bearer <token>"),
    (bearer(""), INVALID, "the bearer token is not valid"),
], ids=["none", "basic", "wrong", "prefix", "scheme-only", "empty"])
def test_a_write_without_a_good_token_is_401_with_the_challenge_and_changes_nothing(
        guarded, store, write, headers, challenge, message):
    store.put(("BRZ", "NGDP_R", 2002), 1.5)
    response = write(guarded, headers)
    assert response.status_int == 401
    assert response.headers["WWW-Authenticate"] == challenge
    assert response.json == {"msg": message}
    assert store.get(("BRZ", "NGDP_R", 2002)) == 1.5
    assert store.bulk_status().jobs_accepted == 0
    assert store.descriptions("country") == {}


@pytest.mark.parametrize("token", [TOKEN, OTHER_TOKEN])
def test_every_configured_token_may_write(guarded, store, token):
    assert guarded.put_json(RECORD_URL, {"value": 2.5}, headers=bearer(token)).status_int == 201
    assert guarded.post_json("/api/v1/growth", [RECORD], headers=bearer(token)).status_int == 202
    assert store.wait_idle(10)
    assert guarded.get(RECORD_URL).json["Value"] == 1.5
    assert guarded.delete(RECORD_URL, headers=bearer(token)).status_int == 204


def test_the_scheme_is_case_insensitive(guarded):
    assert guarded.put_json(RECORD_URL, {"value": 2.5}, headers={"Authorization": f"bearer {TOKEN}"}).status_int == 201


@pytest.mark.parametrize("path", [RECORD_URL, "/api/v1/growth", "/api/v1/growth/size", "/api/v1/growth/post/status",
                                  "/api/v1/growth/BRZ/NGDP_R", "/ping", "/openapi.json", "/metrics"])
def test_reads_stay_public(guarded, store, path):
    store.put(("BRZ", "NGDP_R", 2002), 1.5)
    assert guarded.get(path).status_int == 200
    assert guarded.head(path).status_int == 200


def test_an_unknown_path_stays_404_and_a_missing_method_405(guarded):
    assert guarded.post("/api/v1/nothing", expect_errors=True).status_int == 404
    assert guarded.put("/api/v1/growth/size", expect_errors=True).status_int == 405
    assert guarded.delete("/api/v1/growth", expect_errors=True).status_int == 405


def test_without_tokens_anyone_may_write(client):
    assert client.put_json(RECORD_URL, {"value": 2.5}).status_int == 201


def test_a_token_is_compared_with_every_configured_one_without_stopping_at_a_match(monkeypatch):
    compared = []
    real_compare_digest = hmac.compare_digest

    def compare_digest(a, b):
        compared.append(a)
        return real_compare_digest(a, b)
    monkeypatch.setattr(auth.hmac, "compare_digest", compare_digest)
    guard = RequireToken(("first-token-0123456789", "second-token-0123456789", "third-token-0123456789"))
    assert guard.accepts(b"first-token-0123456789")
    assert len(compared) == 3
    assert not guard.accepts(b"first-token-012345678")
    assert len(compared) == 6


class TestSettings:
    def test_tokens_are_comma_separated_and_trimmed(self):
        config = Config.from_env({"GROWTH_API_TOKENS": f" {TOKEN} ,{OTHER_TOKEN},"})
        assert auth.configured_tokens(config) == (TOKEN, OTHER_TOKEN)

    def test_a_tokens_file_holds_one_a_line(self, tmp_path):
        path = tmp_path / "tokens"
        path.write_text(f"{TOKEN}\n\n{OTHER_TOKEN}\n")
        assert auth.configured_tokens(Config.from_env({"GROWTH_API_TOKENS_FILE": str(path)})) == (TOKEN, OTHER_TOKEN)

    def test_no_tokens_by_default(self):
        assert auth.configured_tokens(Config.from_env({})) == ()

    def test_both_settings_are_an_error_naming_both(self, tmp_path):
        path = tmp_path / "tokens"
        path.write_text(TOKEN)
        with pytest.raises(ConfigError, match="GROWTH_API_TOKENS_FILE and GROWTH_API_TOKENS are both set"):
            Config.from_env({"GROWTH_API_TOKENS": TOKEN, "GROWTH_API_TOKENS_FILE": str(path)})

    @pytest.mark.parametrize("environ, message", [
        ({"GROWTH_API_TOKENS": "short"}, "GROWTH_API_TOKENS tokens must be at least 16 characters long, one is 5"),
        ({"GROWTH_API_TOKENS": "with a space in the middle"}, "GROWTH_API_TOKENS tokens must be printable ASCII"),
        ({"GROWTH_API_TOKENS": ",,"}, "GROWTH_API_TOKENS holds no token"),
        ({"GROWTH_API_TOKENS_FILE": "/nonexistent/tokens"}, "GROWTH_API_TOKENS_FILE cannot be read"),
    ])
    def test_a_bad_token_setting_names_the_variable(self, environ, message):
        with pytest.raises(ConfigError, match=message):
            Config.from_env(environ)

    def test_an_empty_tokens_file_is_an_error(self, tmp_path):
        path = tmp_path / "tokens"
        path.write_text("\n")
        with pytest.raises(ConfigError, match="GROWTH_API_TOKENS_FILE holds no token"):
            Config.from_env({"GROWTH_API_TOKENS_FILE": str(path)})


@pytest.mark.parametrize("host, loopback", [("127.0.0.1", True), ("127.1.2.3", True), ("::1", True),
                                            ("localhost", True), ("0.0.0.0", False), ("::", False),
                                            ("", False), ("10.0.0.5", False), ("example.com", False)])
def test_loopback_addresses(host, loopback):
    assert is_loopback(host) is loopback


@pytest.mark.parametrize("environ, warned", [({"HOST": "0.0.0.0"}, True), ({"HOST": "127.0.0.1"}, False),
                                             ({"HOST": "0.0.0.0", "GROWTH_API_TOKENS": TOKEN}, False)])
def test_an_open_write_api_on_a_public_address_is_warned_about(caplog, environ, warned):
    with caplog.at_level(logging.WARNING, logger="growth_gevent"):
        warn_if_open(Config.from_env(environ))
    assert any("GROWTH_API_TOKENS is not set" in record.message for record in caplog.records) is warned


# --- A live server with tokens ---------------------------------------------------------------------


