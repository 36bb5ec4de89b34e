import logging

from growth_gevent.core.logs import LogfmtFormatter, ThrottledLog, logfmt_value


def test_plain_values_stay_bare_and_others_are_quoted():
    assert logfmt_value("/api/v1/growth/BRZ/NGDP_R/2002") == "/api/v1/growth/BRZ/NGDP_R/2002"
    assert logfmt_value("/api/v1/growth?country=BRZ") == '"/api/v1/growth?country=BRZ"'
    assert logfmt_value(200) == "200"
    assert logfmt_value("listening on x") == '"listening on x"'
    assert logfmt_value('a "b"\n') == '"a \\"b\\"\\n"'
    assert logfmt_value("") == '""'


def test_a_record_with_fields_is_one_logfmt_line():
    record = logging.LogRecord("growth_gevent.access", logging.INFO, __file__, 1, "", None, None)
    record.fields = {"method": "GET", "path": "/ping", "status": "200"}
    line = LogfmtFormatter().format(record)
    assert line.endswith(" level=info logger=growth_gevent.access method=GET path=/ping status=200")
    assert line.startswith("time=")


def test_a_plain_message_becomes_msg():
    record = logging.LogRecord("growth_gevent", logging.WARNING, __file__, 1, "stopped after %ss", (3,), None)
    assert LogfmtFormatter().format(record).endswith(' level=warning logger=growth_gevent msg="stopped after 3s"')


def test_the_process_context_comes_before_the_message():
    record = logging.LogRecord("growth_gevent", logging.INFO, __file__, 1, "stopped", None, None)
    line = LogfmtFormatter({"worker": 2}).format(record)
    assert line.endswith(" level=info logger=growth_gevent worker=2 msg=stopped")


def test_a_throttled_log_says_how_many_lines_it_left_out(caplog):
    now = [0.0]
    throttled = ThrottledLog(lines=2, window=60, logger=logging.getLogger("growth_gevent"), clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="growth_gevent"):
        for number in range(5):
            throttled.log(logging.INFO, "line %d", number)
        now[0] = 59.9
        throttled.log(logging.INFO, "line %d", 5)
        now[0] = 60.0
        throttled.log(logging.INFO, "line %d", 6)
    assert [record.getMessage() for record in caplog.records] == [
        "line 0", "line 1", "line 6 (4 similar lines left out before this one)"]


def test_a_new_key_or_a_reset_is_said_at_once_and_the_same_key_again_waits_for_the_window(caplog):
    now = [0.0]
    throttled = ThrottledLog(lines=1, window=60, logger=logging.getLogger("growth_gevent"), clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="growth_gevent"):
        for key in ("disk full", "disk full", "read-only", "read-only"):
            throttled.log(logging.ERROR, key, key=key)
        throttled.reset()
        throttled.log(logging.ERROR, "read-only", key="read-only")
        throttled.log(logging.ERROR, "read-only", key="read-only")
    assert [record.getMessage() for record in caplog.records] == [
        "disk full", "read-only (1 similar lines left out before this one)",
        "read-only (1 similar lines left out before this one)"]
