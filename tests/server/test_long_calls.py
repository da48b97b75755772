"""The server side of cancellation in-process: the dispatcher's cancelled failure, and the relay from a
cancelled scope to the worker thread's ``Work`` (issue 17 defect 9; the wire test is test_mcp_cancel.py)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from cpersona.core.work import Work
from cpersona.server.app import cancelled_summary
from cpersona.server.dispatch import WORK_HANDLERS, dispatch_tool
from cpersona.server.long_calls import run_cancellable, work_for

#: The long tools docs/tools.md lists under "Long tools".
LONG_TOOLS = {"import_memories", "export_memories", "merge_memories", "calibrate_threshold", "check_health"}


def test_the_long_tools_are_the_ones_that_get_a_work() -> None:
    assert set(WORK_HANDLERS) == LONG_TOOLS


def test_a_cancelled_tool_answers_the_cancelled_failure(tool_memory: Any, tmp_path: Path) -> None:
    memory, settings = tool_memory
    exports = settings.db_path.parent / "exports"
    exports.mkdir()
    head = {"type": "header", "format": "cpersona-export", "version": 1, "counts": {}}
    lines = [json.dumps(head)] + [
        json.dumps({"type": "memory", "agent_id": "c", "content": f"row {i}"}) for i in range(1200)
    ]
    (exports / "rows.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    work = Work(on_progress=lambda done, total, message: work.cancel())
    response = dispatch_tool(memory, settings, "import_memories", {"input_path": "rows.jsonl"}, work=work)
    assert response["ok"] is False and response["error_code"] == "cancelled" and response["cancelled"] is True
    assert response["counts"]["memories"]["inserted"] == 500
    assert response["progress"] == {"done": 500, "total": None, "unit": "records", "done_when_cancelled": 500}
    line = cancelled_summary(response)
    assert line.startswith("import_memories was cancelled after 500 records;") and '"inserted": 500' in line


def test_a_short_tool_ignores_the_work(tool_memory: Any) -> None:
    memory, settings = tool_memory
    work = Work()
    work.cancel()
    stored = dispatch_tool(
        memory, settings, "store", {"agent_id": "s", "message": {"content": "x"}}, work=work
    )
    assert stored["ok"] is True


def test_a_cancelled_scope_sets_the_flag_the_thread_polls() -> None:
    """The caller's cancel reaches the thread (which then ends early) and is still raised afterwards."""
    work = Work()
    started = threading.Event()
    rounds: list[int] = []

    def long_job() -> str:
        started.set()
        for n in range(500):  # 500 × 10 ms: far longer than the test waits
            if work.cancelled:
                rounds.append(n)
                return "stopped"
            time.sleep(0.01)
        return "finished"

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(run_cancellable, work, long_job)
            await anyio.to_thread.run_sync(started.wait)
            await anyio.sleep(0.05)
            tg.cancel_scope.cancel()

    began = time.monotonic()
    anyio.run(main)
    assert work.cancelled and rounds and rounds[0] < 100
    assert time.monotonic() - began < 3


def test_a_finished_call_returns_its_result() -> None:
    work = Work()
    result = anyio.run(run_cancellable, work, lambda: 42)
    assert result == 42


def test_a_finished_call_is_not_cancelled() -> None:
    # Ending the relay by cancelling its scope cost every tools/call a repr() of the current task
    # (anyio names the canceller in the reason): a finished call must end it without a cancel.
    work = Work()
    assert anyio.run(run_cancellable, work, lambda: "done") == "done"
    assert not work.cancelled


def test_a_failed_call_raises_its_error_uncancelled() -> None:
    work = Work()

    def fail() -> None:
        raise ValueError("boom")

    with pytest.raises(ExceptionGroup) as raised:  # raised inside the relay's task group, as before
        anyio.run(run_cancellable, work, fail)
    assert raised.group_contains(ValueError, match="boom")
    assert not work.cancelled


def test_no_request_context_gives_a_silent_work() -> None:
    work = work_for(object())
    work.report(1, 2, "rows")  # nowhere to send: no error
    assert work.progress() == {"done": 1, "total": 2, "unit": "rows"}


@pytest.mark.parametrize("total", [None, 10])
def test_the_cancelled_message_names_how_far(total: int | None) -> None:
    work = Work()
    work.report(4, total, "rows")
    work.cancel()
    with pytest.raises(Exception, match="cancelled after 4") as caught:
        work.checkpoint("x", "nothing was written")
    assert ("of 10" in str(caught.value)) is (total is not None)
