"""Progress of long CLI runs on stderr: a tqdm bar on a terminal, short log lines elsewhere.

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
from typing import TextIO

from tqdm import tqdm


class ProgressBar:
    """A ``progress(done, total)`` callback.

    On a terminal it drives a :class:`tqdm.tqdm` bar (redrawn in place, with the rate);
    elsewhere — a log file, a CI job — a carriage-return bar would be one unreadable
    line, so it prints one line at every tenth of the work instead.

    Parameters
    ----------
    label : str
        What is counted, shown before the bar.
    stream : file, optional
        Where to write; standard error by default.
    tty : bool, optional
        Whether ``stream`` is a terminal; asked of the stream by default.
    """

    def __init__(self, label: str, *, stream: TextIO | None = None, tty: bool | None = None):
        self.label = label
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self._bar: tqdm | None = None
        self._last_tenth = -1

    def __call__(self, done: int, total: int) -> None:
        if total <= 0:
            return
        if self.tty:
            if self._bar is None:
                self._bar = tqdm(total=total, desc=self.label, file=self.stream, unit="case")
            self._bar.update(done - self._bar.n)
            return
        tenth = int(done / total * 10)
        if tenth > self._last_tenth:
            self._last_tenth = tenth
            self.stream.write(f"{self.label}: {done}/{total} ({done / total:.0%})\n")
            self.stream.flush()

    def close(self) -> None:
        """End the bar (a terminal bar keeps its last state on its own line)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
