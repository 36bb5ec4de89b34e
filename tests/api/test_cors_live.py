"""What tests/api/test_cors.py tests, where it takes a process: a server, redis-server or a command line; the
names these tests share with those in process come from tests/api/test_cors.py."""


from tests.helpers.api import ORIGIN, RECORD_URL


def test_a_live_server_reads_the_setting_from_its_environment(servers):
    server = servers(GROWTH_CORS_ORIGINS=ORIGIN)
    connection = server.connection()
    try:
        connection.request("OPTIONS", RECORD_URL, headers={"Origin": ORIGIN, "Access-Control-Request-Method": "PUT",
                                                       "Access-Control-Request-Headers": "authorization"})
        response = connection.getresponse()
        response.read()
    finally:
        connection.close()
    assert response.status == 200
    assert response.getheader("Access-Control-Allow-Origin") == ORIGIN
    assert response.getheader("Access-Control-Allow-Headers") == "authorization"
