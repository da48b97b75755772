"""The task store itself (cpersona/server/tasks.py, docs/tasks.md): real threads running real callables,
a settable clock for the kept time. The MCP exchange is tests/server/test_mcp_tasks.py."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from cpersona.core.work import Work
from cpersona.server.tasks import MAX_RUNNING_TASKS, TaskStore, worth_a_task


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def finished(store: TaskStore, owner: str | None, task_id: str) -> dict[str, Any]:
    record = store.get(owner, task_id)
    assert record.thread is not None
    record.thread.join(10)
    return store.view(record)


def ok(work: Work) -> dict[str, Any]:
    work.report(3, 3, "rows")
    return {"ok": True, "counts": 3}


def render(response: dict[str, Any]) -> dict[str, Any]:
    return {"structuredContent": response, "isError": response.get("ok") is False}


def test_a_finished_task_is_kept_for_the_set_time_and_a_running_one_forever() -> None:
    clock = Clock()
    store = TaskStore(keep_seconds=60, clock=clock)
    release = threading.Event()

    def slow(work: Work) -> dict[str, Any]:
        release.wait(10)
        return {"ok": True}

    done = store.start(None, "export_memories", ok, render)
    running = store.start(None, "import_memories", slow, render)
    assert done is not None and running is not None
    view = finished(store, None, done.task_id)
    assert view["status"] == "completed" and view["result"]["structuredContent"]["counts"] == 3
    assert view["_meta"]["cpersona/progress"] == {"done": 3, "total": 3, "unit": "rows"}
    assert view["ttlMs"] == 60_000 and "pollIntervalMs" not in view
    clock.now += 59.9
    assert store.get(None, done.task_id).status == "completed"
    clock.now += 0.1
    with pytest.raises(MCPError) as gone:
        store.get(None, done.task_id)
    assert gone.value.error.code == -32602
    clock.now += 10_000  # a running task is never dropped, however long it runs
    assert store.view(store.get(None, running.task_id))["ttlMs"] >= 10_060_000
    release.set()
    assert finished(store, None, running.task_id)["status"] == "completed"


def test_another_owners_task_is_answered_like_an_unknown_id() -> None:
    store = TaskStore(keep_seconds=60)
    record = store.start("alice", "export_memories", ok, render)
    assert record is not None
    errors = []
    for owner, task_id in (
        ("bob", record.task_id),
        (None, record.task_id),
        ("bob", "x" * len(record.task_id)),
    ):
        with pytest.raises(MCPError) as refused:
            store.get(owner, task_id)
        errors.append((refused.value.error.code, refused.value.error.message.replace(task_id, "ID")))
    assert len(set(errors)) == 1 and errors[0][0] == -32602
    assert finished(store, "alice", record.task_id)["status"] == "completed"


def test_a_fault_outside_the_tool_fails_the_task_with_a_jsonrpc_error() -> None:
    store = TaskStore(keep_seconds=60)

    def broken(work: Work) -> dict[str, Any]:
        raise RuntimeError("disk vanished")

    record = store.start(None, "merge_memories", broken, render)
    assert record is not None
    view = finished(store, None, record.task_id)
    assert view["status"] == "failed" and "result" not in view
    assert view["error"]["code"] == -32603 and "disk vanished" in view["error"]["message"]


def test_a_tool_failure_is_a_completed_task_with_is_error() -> None:
    store = TaskStore(keep_seconds=60)
    record = store.start(None, "import_memories", lambda work: {"ok": False, "error": "no such file"}, render)
    assert record is not None
    view = finished(store, None, record.task_id)
    assert view["status"] == "completed" and view["result"]["isError"] is True
    assert "no such file" in view["statusMessage"]


def test_cancel_stops_at_the_next_checkpoint_and_a_finished_task_stays() -> None:
    store = TaskStore(keep_seconds=60)
    started = threading.Event()

    def batches(work: Work) -> dict[str, Any]:
        from cpersona.errors import Cancelled

        for n in range(1, 1000):
            work.report(n, 1000, "rows")
            started.set()
            try:
                work.checkpoint("import_memories", "the batches before it stay")
            except Cancelled as exc:
                return {
                    "ok": False,
                    "error_code": "cancelled",
                    "error": str(exc),
                    "progress": work.progress(),
                }
            threading.Event().wait(0.005)
        return {"ok": True}

    record = store.start(None, "import_memories", batches, render)
    assert record is not None and started.wait(10)
    store.cancel(None, record.task_id)
    view = finished(store, None, record.task_id)
    assert view["status"] == "cancelled" and "result" not in view
    assert "import_memories was cancelled after" in view["statusMessage"]
    assert '"done_when_cancelled"' in view["statusMessage"]
    store.cancel(None, record.task_id)  # acknowledged; a terminal task does not change
    assert store.view(store.get(None, record.task_id))["status"] == "cancelled"


def test_beyond_the_running_limit_a_call_is_not_made_a_task() -> None:
    store = TaskStore(keep_seconds=60)
    release = threading.Event()
    running = [
        store.start(None, "import_memories", lambda work: (release.wait(10), {"ok": True})[1], render)
        for _ in range(MAX_RUNNING_TASKS)
    ]
    assert all(running)
    assert store.start(None, "import_memories", ok, render) is None
    release.set()
    store.close()
    assert all(store.get(None, r.task_id).terminal for r in running if r is not None)
    assert store.start(None, "import_memories", ok, render) is not None


def test_check_health_is_a_task_only_when_it_repairs() -> None:
    assert worth_a_task("import_memories", None)
    assert worth_a_task("check_health", {"fix": True})
    assert not worth_a_task("check_health", {}) and not worth_a_task("check_health", {"fix": False})
