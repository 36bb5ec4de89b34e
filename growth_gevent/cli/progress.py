"""The progress bar of ``load`` and ``export`` on stderr: ``[#####.....] 2100/4245 records``."""

from typing import TextIO

BAR_WIDTH = 30
PLAIN_STEPS = 4  # without a terminal the bar is one line per quarter of the load, not one per poll


class ProgressBar:
    """``[#####.....] 2100/4245 records`` on ``stream``, after the label if any: redrawn in place on a terminal,
    else a few lines, the last of them where it ended."""

    def __init__(self, stream: TextIO, total: int, label: str = "") -> None:
        self._stream = stream
        self.total = total
        self._prefix = f"{label}: " if label else ""
        # Several files' bars share the stream: labelled lines then, not one line redrawn in place.
        self._in_place = stream.isatty() and not label
        self._last_mark: int | None = None
        self._done: int | None = None  # the last shown
        self._drawn: int | None = None  # the last drawn

    def show(self, done: int) -> None:
        self._done = done
        fraction = done / self.total if self.total else 1.0
        mark = done if self._in_place else int(fraction * PLAIN_STEPS)
        if mark == self._last_mark:
            return
        self._last_mark = mark
        self._draw(done)

    def end(self) -> None:
        """Draw where the bar ended if the lines left it out; leave a terminal's cursor on a fresh line."""
        if self._done is not None and self._done != self._drawn:
            self._draw(self._done)
        if self._in_place and self._last_mark is not None:
            self._stream.write("\n")
            self._stream.flush()

    def _draw(self, done: int) -> None:
        self._drawn = done
        fraction = done / self.total if self.total else 1.0
        filled = int(fraction * BAR_WIDTH)
        line = f"{self._prefix}[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done}/{self.total} records"
        self._stream.write(f"\r{line}" if self._in_place else f"{line}\n")
        self._stream.flush()
