"""The pywsgi internals that growth_gevent/http/handler.py and server.py rely on (its docstring lists them).

A gevent upgrade that renames or reshapes one of them fails here, by name, rather than as a subtle
change of behaviour on the wire.
"""

import inspect

import pytest
from gevent import pywsgi
from gevent.server import StreamServer

from growth_gevent.http.handler import GrowthHandler

HANDLER_METHODS = ["get_environ", "read_requestline", "read_request", "MessageClass", "handle_one_request", "handle",
                   "_handle_client_error", "_send_error_response_if_possible", "_write_with_headers",
                   "_sendall", "_write", "finalize_headers", "start_response", "log_request", "log_error"]
HANDLER_ATTRIBUTES = ["close_connection", "response_length", "status", "time_start", "time_finish",
                      "wsgi_input", "headers_sent", "response_use_chunked", "response_headers",
                      "requestline", "request_version", "command", "path"]
INPUT_SLOTS = ["position", "content_length", "chunked_input", "chunk_length", "_chunked_input_error"]


@pytest.mark.parametrize("name", HANDLER_METHODS)
def test_the_handler_methods_we_override_or_call_exist(name):
    assert callable(getattr(pywsgi.WSGIHandler, name))


def test_the_handler_takes_an_rfile():
    assert list(inspect.signature(pywsgi.WSGIHandler.__init__).parameters) == [
        "self", "sock", "address", "server", "rfile"]


@pytest.mark.parametrize("name", HANDLER_ATTRIBUTES)
def test_the_handler_attributes_we_read_exist(name):
    assert hasattr(pywsgi.WSGIHandler, name)


def test_the_ignored_socket_errors_are_a_tuple_of_errnos():
    assert all(type(code) is int for code in pywsgi.WSGIHandler.ignored_socket_errors)
    assert set(pywsgi.WSGIHandler.ignored_socket_errors) < set(GrowthHandler.ignored_socket_errors)


@pytest.mark.parametrize("name", INPUT_SLOTS)
def test_the_request_body_keeps_its_state_where_we_read_it(name):
    assert name in pywsgi.Input.__slots__


def test_the_headers_class_and_its_status():
    assert pywsgi.OldMessage().status == ""
    assert pywsgi.MAX_REQUEST_LINE == 8192


def test_handle_one_request_still_documents_its_three_results():
    doc = pywsgi.WSGIHandler.handle_one_request.__doc__
    assert "``None``" in doc and "(status, body)" in doc and "``True``" in doc


def test_the_server_accepts_in_do_read():
    assert "do_read" in vars(StreamServer)


def test_the_chunk_size_is_read_by_a_method_a_subclass_can_override():
    assert callable(pywsgi.Input._Input__read_chunk_length)
    assert "wsgi_input = Input(" in inspect.getsource(pywsgi.WSGIHandler.get_environ)
