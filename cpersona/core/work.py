"""A long operation's link to whoever started it: a cancel flag, polled at batch boundaries, and progress.

Import, export, merge, calibration, re-embedding and ``check_health`` take an optional ``work``.
The MCP server makes one per tool call (``notifications/cancelled`` sets the flag; reports become
``notifications/progress`` when the request carried a ``progressToken``); the CLI makes one for
its progress bars. Without one nothing changes: the plain API runs to the end and reports nowhere.

An operation takes ``work or Work()`` (a ``Work`` without a sink is a no-op), calls ``report`` after
each batch it commits and ``checkpoint`` before the next: once cancelled it raises ``Cancelled`` there, so it never starts a batch it was asked not to,
and what it committed before stays (whole records only). Everything here is thread-safe: the
server cancels from its event loop while the operation runs in a worker thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from cpersona.errors import Cancelled

log = logging.getLogger("cpersona.work")

#: ``sink(done, total, message)``: one progress report (total None when unknown).
ProgressSink = Callable[[float, float | None, str | None], None]


class Work:
    """One long operation's cancel flag and progress sink (both optional)."""

    def __init__(self, on_progress: ProgressSink | None = None) -> None:
        self._cancel = threading.Event()
        self._sink = on_progress
        self.done = 0
        self.total: int | None = None
        self.unit = ""
        self.done_when_cancelled: int | None = None  # how far it had got when the cancel came

    @property
    def cancelled(self) -> bool:
        """True once ``cancel`` was called."""
        return self._cancel.is_set()

    def cancel(self) -> None:
        """Ask the operation to stop at its next batch boundary (from any thread)."""
        if not self._cancel.is_set():
            self.done_when_cancelled = self.done
            self._cancel.set()

    def report(self, done: int, total: int | None, unit: str, message: str | None = None) -> None:
        """Record how far the operation got and pass it to the sink; a failing sink never stops the work."""
        self.done, self.total, self.unit = done, total, unit
        if self._sink is None or self.cancelled:  # nobody listens to a cancelled call's progress
            return
        try:
            self._sink(float(done), None if total is None else float(total), message)
        except Exception as exc:  # a client that went away must not fail the operation
            log.debug("progress report dropped: %s", exc)

    def progress(self) -> dict[str, Any]:
        """The last report as ``{done, total, unit}``, plus ``done_when_cancelled`` once cancelled."""
        out: dict[str, Any] = {"done": self.done, "total": self.total, "unit": self.unit}
        if self.done_when_cancelled is not None:
            out["done_when_cancelled"] = self.done_when_cancelled
        return out

    def checkpoint(
        self, operation: str, kept: str, committed: Callable[[], Mapping[str, object]] | None = None
    ) -> None:
        """Raise ``Cancelled`` when cancelled (else return at once).

        ``kept`` says in words what stays ("nothing was written"); ``committed`` builds the
        operation's counts of what stays, only when it is needed.
        """
        if not self.cancelled:
            return
        total = "" if self.total is None else f" of {self.total:,}"
        raise Cancelled(
            f"{operation} was cancelled after {self.done:,}{total} {self.unit}; {kept}",
            self.progress(),
            {} if committed is None else dict(committed()),
        )
