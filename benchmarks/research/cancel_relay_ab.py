"""The cancel relay of ``run_cancellable``: ended by a cancel scope (round 6) against an event (round 7).

    python benchmarks/research/cancel_relay_ab.py [--calls 3000]

Both versions run a no-op call on a worker thread, alternating per call (A, B, B, A, ...) in one event
loop; reported: the event loop thread's CPU per call (``time.thread_time``), p50 and mean. The round-6
relay is copied here as it was, so the comparison survives the change. No assertion on timings.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread

from cpersona.core.work import Work
from cpersona.server.long_calls import run_cancellable


async def cancel_scope_relay(work: Work, fn: Callable[[], Any], limiter: anyio.CapacityLimiter) -> Any:
    """Round 6's ``run_cancellable``: the relay's scope is cancelled once ``fn`` returned."""

    async def relay() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            work.cancel()

    async with anyio.create_task_group() as tg:
        tg.start_soon(relay)
        try:
            result = await anyio.to_thread.run_sync(fn, limiter=limiter)
        finally:
            tg.cancel_scope.cancel()
    return result


async def event_relay(work: Work, fn: Callable[[], Any], limiter: anyio.CapacityLimiter) -> Any:
    return await run_cancellable(work, fn, limiter=limiter)


async def measure(calls: int) -> dict[str, list[float]]:
    limiter = anyio.CapacityLimiter(8)
    variants = {"cancel scope (round 6)": cancel_scope_relay, "event (round 7)": event_relay}
    samples: dict[str, list[float]] = {name: [] for name in variants}
    names = list(variants)
    for i in range(calls):
        for name in names if i % 2 == 0 else names[::-1]:
            c0 = time.thread_time()
            await variants[name](Work(), lambda: None, limiter)
            samples[name].append(time.thread_time() - c0)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=3000)
    args = parser.parse_args()
    samples = anyio.run(measure, args.calls)
    for name, values in samples.items():
        print(
            f"{name:24s} event-loop thread CPU per call: p50 {statistics.median(values) * 1e3:.3f} ms, "
            f"mean {statistics.mean(values) * 1e3:.3f} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
