"""Progress lines of a long export or preview: probe, rows so far, elapsed time.

A probe whose query runs longer than a few seconds would otherwise show nothing until it ends
(issue 30 point 7: a preview ran 10 minutes in silence). :class:`Heartbeat` prints, to stderr,
after ``after`` seconds and then every ``every`` seconds, one line: the probe, the rows the
store's query now running has produced so far (:data:`kg.store.QUERY_ROWS`: the probe's query,
then the WordNet reads of ``[DET]``, each from 0) and the time since the probe started; and one
closing line when it printed any, with what the block set as its ``result``.

>>> import io, time
>>> out = io.StringIO()
>>> with Heartbeat("export", "t/p", after=0.05, every=10, stream=out) as beat:
...     time.sleep(0.2)
...     beat.result = "12 instances"
>>> lines = out.getvalue().splitlines()
>>> lines[0].startswith("export t/p: 0 rows so far, ")
True
>>> lines[-1].startswith("export t/p: done, 12 instances, ")
True
"""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType
from typing import TextIO

from kg.store import QUERY_ROWS


class Heartbeat:
    """A context manager that prints progress lines while its block runs (see the module)."""

    def __init__(self, what: str, probe: str, after: float = 5.0, every: float = 10.0,
                 stream: TextIO | None = None) -> None:
        self.label = f"{what} {probe}"
        self.after, self.every = after, every
        self.stream = stream if stream is not None else sys.stderr
        self.printed = 0
        self.result = ""
        self._stop = threading.Event()
        self._t0 = 0.0
        self._thread = threading.Thread(target=self._beat, daemon=True, name="kgprobe-progress")

    def _line(self, text: str) -> None:
        print(f"{self.label}: {text}, {time.perf_counter() - self._t0:.0f} s", file=self.stream,
              flush=True)
        self.printed += 1

    def _beat(self) -> None:
        wait = self.after
        while not self._stop.wait(wait):
            self._line(f"{QUERY_ROWS.rows:,} rows so far")
            wait = self.every

    def __enter__(self) -> Heartbeat:
        QUERY_ROWS.rows = 0
        self._t0 = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()
        if self.printed:
            self._line(f"done, {self.result}" if kind is None and self.result
                       else "done" if kind is None else "stopped")
