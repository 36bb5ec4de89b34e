"""``python -m growth_gevent load FILE``: a real upload process against a real server process."""

import io

from growth_gevent.upload import PLAIN_STEPS, ProgressBar

RECORDS = 5000


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_on_a_terminal_the_bar_is_redrawn_in_place():
    terminal = Terminal()
    bar = ProgressBar(terminal, 200)
    for done in range(0, 201, 50):
        bar.show(done)
    bar.end()
    assert terminal.getvalue() == "".join(
        f"\r[{'#' * filled}{'.' * (30 - filled)}] {done}/200 records"
        for filled, done in ((0, 0), (7, 50), (15, 100), (22, 150), (30, 200))) + "\n"


def test_without_a_terminal_the_bar_is_a_few_lines_however_often_it_is_shown():
    stream = io.StringIO()
    bar = ProgressBar(stream, 42450)
    for done in range(42451):
        bar.show(done)
    bar.end()
    lines = stream.getvalue().splitlines()
    assert len(lines) == PLAIN_STEPS + 1
    assert lines[0] == f"[{'.' * 30}] 0/42450 records"
    assert lines[-1] == f"[{'#' * 30}] 42450/42450 records"
