"""A dependency-free progress bar on stderr for long CLI runs.

>>> import io
>>> out = io.StringIO()
>>> bar = ProgressBar("cases", stream=out, tty=False)
>>> for i in range(1, 11):
...     bar(i, 10)
>>> bar.close()
>>> out.getvalue().splitlines()[-1]
'cases: 10/10 (100%)'
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressBar:
    """Call with ``(done, total)``. Redraws in place on a terminal; elsewhere prints a
    line at every tenth of the work so logs stay short."""

    def __init__(
        self, label: str, *, stream: TextIO | None = None, tty: bool | None = None, width: int = 30
    ) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.width = width
        self.started = time.perf_counter()
        self._last_tenth = -1
        self._last_draw = 0.0
        self._drawn = False

    def __call__(self, done: int, total: int) -> None:
        if total <= 0:
            return
        frac = done / total
        if self.tty:
            now = time.perf_counter()
            if done < total and now - self._last_draw < 0.05:
                return
            self._last_draw = now
            fill = int(frac * self.width)
            rate = done / max(now - self.started, 1e-9)
            self.stream.write(
                f"\r{self.label} [{'#' * fill}{'.' * (self.width - fill)}] {done}/{total}"
                f" {frac:4.0%} {rate:,.0f}/s"
            )
            self._drawn = True
        else:
            tenth = int(frac * 10)
            if tenth > self._last_tenth:
                self._last_tenth = tenth
                self.stream.write(f"{self.label}: {done}/{total} ({frac:.0%})\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
