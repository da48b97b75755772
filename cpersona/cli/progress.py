"""Long CLI commands (import, export, reembed, calibrate, checkup --fix): a progress bar, and Ctrl-C.

``long_work`` gives the operation a ``Work`` (cpersona/core/work.py) whose reports drive a tqdm bar on
stderr, in whole numbers, shown only once the work has run for half a second (so a command that
fails at once prints its error without an empty bar before it). While it runs, the first Ctrl-C
asks the operation to stop at its next batch boundary — what it committed stays — and the
operation raises ``Cancelled`` saying how far it got; ``main`` prints that, says that running the
same command again finishes the job, and exits 130. A second Ctrl-C stops at once (Python's
KeyboardInterrupt; a transaction in flight is rolled back).
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from cpersona.core.work import Work

#: What every interrupted long command says last: the operations are idempotent or resumable.
RUN_AGAIN = "running the same command again finishes the job (what is done is not done twice)"
#: Seconds before a bar appears: a quick command, or one that fails at once, shows none.
BAR_DELAY = 0.5


@contextmanager
def long_work(unit: str, *, bar: bool = True) -> Iterator[Work]:
    """A ``Work`` for one long command: its progress on a bar (unless ``bar`` is False), Ctrl-C as cancel."""
    progress = _bar(unit) if bar else None

    def update(done: float, total: float | None, message: str | None) -> None:
        if progress is None:
            return
        if total is not None and progress.total != int(total):
            progress.total = int(total)
            progress.refresh()
        progress.update(int(done) - progress.n)

    work = Work(on_progress=update)
    try:
        with _ctrl_c_cancels(work):
            yield work
    except KeyboardInterrupt:  # the second Ctrl-C: stopped mid-batch, which is rolled back
        if progress is not None:
            progress.close()
            progress = None
        total = "" if work.total is None else f" of {work.total:,}"
        print(
            f"cpersona: interrupted; {work.done:,}{total} {work.unit or unit} were done and committed before "
            f"the batch in flight, which was rolled back; {RUN_AGAIN}",
            file=sys.stderr,
            flush=True,
        )
        raise
    finally:
        if progress is not None:
            progress.close()


def _bar(unit: str) -> Any:
    from tqdm import tqdm  # type: ignore[import-untyped]

    # total=None until the operation reports one; whole numbers (unit_scale off), on stderr.
    return tqdm(
        total=None, unit=f" {unit}", file=sys.stderr, dynamic_ncols=True, leave=False, delay=BAR_DELAY
    )


@contextmanager
def _ctrl_c_cancels(work: Work) -> Iterator[None]:
    """While the block runs, SIGINT cancels ``work`` (once); the next SIGINT interrupts as usual."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signals belong to the main thread (an in-process caller on another thread)
        return

    def on_interrupt(signum: int, frame: Any) -> None:
        if work.cancelled:
            raise KeyboardInterrupt
        work.cancel()
        print(
            "\ncpersona: stopping after the current batch (what is committed stays); Ctrl-C again to stop now",
            file=sys.stderr,
            flush=True,
        )

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
