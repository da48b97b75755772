"""Tool calls as cancellable, reporting work: the MCP side of ``cpersona.core.work``.

The SDK (2.x, peer cancel mode "interrupt") applies ``notifications/cancelled`` by cancelling the
handler's scope. The handler is waiting on a worker thread (``anyio.to_thread.run_sync``, which
never abandons its thread), so that cancel alone stopped only the reply: the thread ran to the end.
``run_cancellable`` relays the scope's cancel to the call's ``Work`` from a sibling task, so the
operation stops at its next batch boundary; the SDK then drops the reply, as MCP says it must.

Progress goes the other way: ``work_for`` gives the operation a sink that sends each report as
``notifications/progress`` through the request's own session (``report_progress``, a no-op unless
the request's ``_meta`` carried a ``progressToken``), hopping from the worker thread to the event
loop with ``anyio.from_thread.run``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import anyio.to_thread

from cpersona.core.work import Work

T = TypeVar("T")


def work_for(ctx: Any) -> Work:
    """A ``Work`` for one tools/call: its reports become progress notifications on that request."""
    session = getattr(ctx, "session", None)
    report = getattr(session, "report_progress", None)
    if report is None:  # no request context (in-process callers): nothing to report to
        return Work()

    def send(done: float, total: float | None, message: str | None) -> None:
        anyio.from_thread.run(report, done, total, message)

    return Work(on_progress=send)


async def run_cancellable(
    work: Work, fn: Callable[..., T], *args: Any, limiter: anyio.CapacityLimiter | None = None
) -> T:
    """``fn(*args)`` in a worker thread; a cancel of the calling scope sets ``work``'s flag.

    The thread always runs to its end (a checkpoint of ``work`` makes that end early); the
    caller's cancellation is then raised as usual.
    """

    finished = anyio.Event()

    async def relay() -> None:
        try:
            await finished.wait()
        finally:
            if not finished.is_set():  # cancelled by the caller's scope (a client's cancel)
                work.cancel()

    # The relay ends by an event once fn returns, not by cancelling its scope: anyio's cancel
    # formats repr() of the current task into its reason, a fixed cost on every tools/call.
    async with anyio.create_task_group() as tg:
        tg.start_soon(relay)
        try:
            result = await anyio.to_thread.run_sync(fn, *args, limiter=limiter)
        finally:
            finished.set()
    return result
