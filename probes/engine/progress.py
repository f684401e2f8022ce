"""Progress lines of a long export or preview: the probe, the step it is in, what that step
counts (with its total when known), and the elapsed time.

A probe whose export runs longer than a few seconds would otherwise show nothing until it ends
(issue 30 point 7: a preview ran 10 minutes in silence), and a line that counts something
else misleads (issue 46: "159,744 rows so far" for a query of 1,000 rows, which counted the
WordNet reads after the query). :class:`Heartbeat` prints, to stderr, after ``after`` seconds
and then every ``every`` seconds, one line naming the step it is in (:meth:`Heartbeat.step`):

- while the probe's query runs, the rows it has produced so far (:data:`kg.store.QUERY_ROWS`,
  kept by the store for the query running now): ``query: 4,096 rows so far``;
- in a step that counts its work, done of total: ``provenance lookups: 3 of 12 queries``;
- else the step alone: ``checking 1,000 instances``;

and one closing line when it printed any, with what the block set as its ``result``.

>>> import io, time
>>> out = io.StringIO()
>>> with Heartbeat("export", "t/p", after=0.05, every=10, stream=out) as beat:
...     beat.step("drawing distractors", total=40, unit="targets")
...     beat.tick(12)
...     time.sleep(0.2)
...     beat.result = "12 instances"
>>> lines = out.getvalue().splitlines()
>>> lines[0].startswith("export t/p: drawing distractors: 12 of 40 targets, ")
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

QUERY_STEP = "query"
"""The step that counts the store's rows: the probe's query."""


class Heartbeat:
    """A context manager that prints progress lines while its block runs (see the module)."""

    def __init__(self, what: str, probe: str, after: float = 5.0, every: float = 10.0,
                 stream: TextIO | None = None) -> None:
        self.label = f"{what} {probe}"
        self.after, self.every = after, every
        self.stream = stream if stream is not None else sys.stderr
        self.printed = 0
        self.result = ""
        self._what = QUERY_STEP
        self._total: int | None = None
        self._unit = ""
        self._done = 0
        self._stop = threading.Event()
        self._t0 = 0.0
        self._thread = threading.Thread(target=self._beat, daemon=True, name="kgprobe-progress")

    def step(self, what: str, total: int | None = None, unit: str = "") -> None:
        """Enter the step ``what``: :data:`QUERY_STEP` counts the query's rows; with ``total``
        the lines say ``done of total unit`` (:meth:`tick` sets done)."""
        self._what, self._total, self._unit, self._done = what, total, unit, 0
        if what == QUERY_STEP:
            QUERY_ROWS.rows = 0

    def tick(self, done: int, total: int | None = None) -> None:
        """How much of the step's total is done (and the total, once the step knows it)."""
        self._done = done
        if total is not None:
            self._total = total

    def status(self) -> str:
        """The step and its count, as the next line would say it."""
        if self._what == QUERY_STEP:
            return f"{QUERY_STEP}: {QUERY_ROWS.rows:,} rows so far"
        if self._total is not None:
            return f"{self._what}: {self._done:,} of {self._total:,} {self._unit}".rstrip()
        return self._what

    def _line(self, text: str) -> None:
        print(f"{self.label}: {text}, {time.perf_counter() - self._t0:.0f} s", file=self.stream,
              flush=True)
        self.printed += 1

    def _beat(self) -> None:
        wait = self.after
        while not self._stop.wait(wait):
            self._line(self.status())
            wait = self.every

    def __enter__(self) -> Heartbeat:
        self.step(QUERY_STEP)
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


class Quiet(Heartbeat):
    """A heartbeat that prints nothing (the steps still call :meth:`step` and :meth:`tick`)."""

    def __init__(self) -> None:
        super().__init__("", "", after=float("inf"))

    def __enter__(self) -> Heartbeat:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        return None
