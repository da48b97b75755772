"""Long tools as MCP tasks: the tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663) of protocol
2026-07-28 (docs/tasks.md).

A client that lists the extension in its request's capabilities gets, for a long tool (import,
export, merge, calibration, ``check_health`` with ``fix``), a task handle at once instead of the
answer: ``tasks/get`` shows the status, the progress (``statusMessage`` and
``_meta["cpersona/progress"]``) and, once finished, the tool's ordinary result; ``tasks/cancel``
stops it at the next batch boundary (``cpersona.core.work``). Everyone else is answered synchronously,
as before. The server decides (the extension says so); the client only says it can take a task.

Tasks live in this process (``TaskStore``): a finished task's result is kept
``CPERSONA_TASK_RESULT_TTL_SECONDS`` after it finished, then forgotten; a running task is never
dropped. Each task belongs to the ACL client that started it (HTTP with an ACL or OAuth): another
client's ``tasks/get`` is answered exactly like an unknown id, so not even a task's existence leaks.
Task ids are 192 random bits, as the extension asks of ids that act as bearer handles.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any

import mcp.types as types
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field

from cpersona.core.work import Work

log = logging.getLogger("cpersona.server")

#: The extension's identifier, in the client's and the server's ``capabilities.extensions``.
EXTENSION = "io.modelcontextprotocol/tasks"
#: The methods the extension adds (``tasks/result`` and ``tasks/list`` of 2025-11-25 are gone).
METHODS = ("tasks/get", "tasks/update", "tasks/cancel")
#: How often a client is asked to poll: long tools report per batch, about once a second.
POLL_INTERVAL_MS = 1000
#: Tasks running at once; a long call beyond this is answered synchronously, as without tasks.
MAX_RUNNING_TASKS = 4
#: ``_meta`` key of a task's last progress report ({done, total, unit}).
PROGRESS_META_KEY = "cpersona/progress"
#: How long ``close`` waits for a cancelled task to reach its batch boundary.
CLOSE_WAIT_SECONDS = 10.0

#: A task's whole run, in its own thread: the tool's response dict for a ``Work``.
Runner = Callable[[Work], dict[str, Any]]
#: The tool's response dict as the wire ``CallToolResult`` (the task's ``result``).
Renderer = Callable[[dict[str, Any]], dict[str, Any]]


def worth_a_task(name: str, arguments: dict[str, Any] | None) -> bool:
    """Whether a long tool's call is long enough for a task: ``check_health`` only when it repairs."""
    return name != "check_health" or (arguments or {}).get("fix") is True


def cancelled_summary(response: dict[str, Any]) -> str:
    """One line for a cancelled call: its message and the counts of what it committed."""
    shown = {k: v for k, v in response.items() if k not in {"ok", "error", "error_code", "errors"}}
    return f"{response.get('error')} {json.dumps(shown, ensure_ascii=False, sort_keys=True)}"


def wants_task(ctx: Any) -> bool:
    """True when this request's client can take a task: the 2026-07-28 wire, and the extension
    listed in the capabilities the request carries (``_meta`` per request, per the revision)."""
    if getattr(ctx, "protocol_version", None) not in MODERN_PROTOCOL_VERSIONS:
        return False  # the handshake revisions cannot carry a resultType "task" answer
    capabilities = getattr(getattr(ctx, "session", None), "client_capabilities", None)
    extensions = getattr(capabilities, "extensions", None)
    return isinstance(extensions, dict) and EXTENSION in extensions


def missing_capability() -> MCPError:
    """The error for ``tasks/*`` from a client that did not list the extension (-32021)."""
    return MCPError(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"Missing required client capability: the {EXTENSION} extension",
        {"requiredCapabilities": {"extensions": {EXTENSION: {}}}},
    )


def unknown_task(task_id: str) -> MCPError:
    """The error for an id that is not (or no longer, or not this client's) a task: -32602."""
    shown = task_id if len(task_id) <= 80 else task_id[:80] + "…"
    return MCPError(
        INVALID_PARAMS,
        f"Failed to retrieve task: no task {shown!r} (unknown, expired or not yours)",
    )


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class TaskRecord:
    """One task: who owns it, where it is, and what it ended with."""

    task_id: str
    owner: str | None
    tool: str
    work: Work
    created: datetime
    started: float  # monotonic
    status: str = "working"
    message: str = ""
    updated: datetime = field(default_factory=lambda: datetime.now(UTC))
    finished: float | None = None  # monotonic, once terminal
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    thread: threading.Thread | None = None

    @property
    def terminal(self) -> bool:
        return self.status in {"completed", "failed", "cancelled"}


class TaskStore:
    """This server's tasks: start, look up (per owner), cancel, forget after the kept time."""

    def __init__(self, keep_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.keep_seconds = keep_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._tasks: dict[str, TaskRecord] = {}

    def start(self, owner: str | None, tool: str, run: Runner, render: Renderer) -> TaskRecord | None:
        """Start ``run`` in a thread as a new task; None when ``MAX_RUNNING_TASKS`` already run
        (the caller then answers synchronously)."""
        with self._lock:
            self._purge()
            if sum(not t.terminal for t in self._tasks.values()) >= MAX_RUNNING_TASKS:
                return None
            record = TaskRecord(
                task_id=secrets.token_urlsafe(24),
                owner=owner,
                tool=tool,
                work=Work(),  # replaced at once by one whose reports land on this record
                created=datetime.now(UTC),
                started=self._clock(),
                message=f"{tool} is running",
            )
            record.work = Work(on_progress=lambda done, total, message: self._progress(record, message))
            self._tasks[record.task_id] = record
        record.thread = threading.Thread(
            target=self._run, args=(record, run, render), name=f"cpersona-task-{tool}", daemon=True
        )
        record.thread.start()
        return record

    def get(self, owner: str | None, task_id: str) -> TaskRecord:
        """The caller's task ``task_id``; raises the -32602 error for any other id."""
        with self._lock:
            self._purge()
            record = self._tasks.get(task_id)
        if record is None or record.owner != owner:
            raise unknown_task(task_id)
        return record

    def cancel(self, owner: str | None, task_id: str) -> TaskRecord:
        """Ask the caller's task to stop at its next batch boundary (a finished one stays as it is)."""
        record = self.get(owner, task_id)
        if not record.terminal:
            record.work.cancel()
            with self._lock:
                if not record.terminal:
                    record.message = f"{record.tool}: cancelling at the next batch boundary"
                    record.updated = datetime.now(UTC)
        return record

    def view(self, record: TaskRecord) -> dict[str, Any]:
        """The task as the wire's ``DetailedTask`` (``tasks/get``): status, times, and by status the
        ``result`` (completed) or ``error`` (failed)."""
        with self._lock:
            end = record.finished if record.finished is not None else self._clock()
            out: dict[str, Any] = {
                "taskId": record.task_id,
                "status": record.status,
                "statusMessage": record.message,
                "createdAt": _iso(record.created),
                "lastUpdatedAt": _iso(record.updated),
                # From creation to when it will be forgotten: grows while it runs (the revision lets it).
                "ttlMs": int((end - record.started + self.keep_seconds) * 1000),
                "_meta": {PROGRESS_META_KEY: record.work.progress()},
            }
            if not record.terminal:
                out["pollIntervalMs"] = POLL_INTERVAL_MS
            if record.status == "completed" and record.result is not None:
                out["result"] = record.result
            if record.status == "failed" and record.error is not None:
                out["error"] = record.error
        return out

    def created(self, record: TaskRecord) -> dict[str, Any]:
        """The ``CreateTaskResult`` answering the ``tools/call``: the task's seed state, flat."""
        seed = self.view(record)
        seed.pop("result", None)
        seed.pop("error", None)
        return {"resultType": "task", **seed}

    def close(self, wait: float = CLOSE_WAIT_SECONDS) -> None:
        """Cancel every running task and wait (at most ``wait`` s in all) for them to stop, so the
        database is not closed under a batch being written."""
        with self._lock:
            running = [t for t in self._tasks.values() if not t.terminal]
        for record in running:
            record.work.cancel()
        deadline = time.monotonic() + wait
        for record in running:
            if record.thread is not None:
                record.thread.join(max(0.0, deadline - time.monotonic()))

    def _progress(self, record: TaskRecord, message: str | None) -> None:
        work = record.work
        total = "" if work.total is None else f" of {work.total:,}"
        with self._lock:
            record.message = message or f"{record.tool}: {work.done:,}{total} {work.unit}".rstrip()
            record.updated = datetime.now(UTC)

    def _run(self, record: TaskRecord, run: Runner, render: Renderer) -> None:
        try:
            response = run(record.work)
            outcome: dict[str, Any] = {"result": render(response)}
            if response.get("error_code") == "cancelled" and record.work.cancelled:
                status, message = "cancelled", cancelled_summary(response)
            else:
                ok = response.get("ok") is not False
                status = "completed"
                message = (
                    f"{record.tool} finished" if ok else f"{record.tool} failed: {response.get('error')}"
                )
        except (
            Exception
        ) as exc:  # a fault outside the tool's own answers: a JSON-RPC error, per the extension
            log.exception("task %s (%s) failed", record.task_id, record.tool)
            status, message = "failed", f"{record.tool} failed: {exc}"
            outcome = {"error": {"code": INTERNAL_ERROR, "message": f"{type(exc).__name__}: {exc}"}}
        with self._lock:
            record.status = status
            record.message = message
            record.result = outcome.get("result") if status == "completed" else None
            record.error = outcome.get("error")
            record.finished = self._clock()
            record.updated = datetime.now(UTC)
        if status == "cancelled":
            log.info("task %s: %s", record.task_id, message)

    def _purge(self) -> None:
        """Forget finished tasks past the kept time (call with the lock held)."""
        now = self._clock()
        gone = [
            task_id
            for task_id, t in self._tasks.items()
            if t.finished is not None and now - t.finished >= self.keep_seconds
        ]
        for task_id in gone:
            del self._tasks[task_id]


class TaskIdParams(types.RequestParams):
    """``tasks/get`` and ``tasks/cancel`` params."""

    task_id: Annotated[str, Field(alias="taskId", max_length=200)]


class UpdateTaskParams(TaskIdParams):
    """``tasks/update`` params: answers to a task's ``inputRequests``."""

    input_responses: Annotated[dict[str, Any] | None, Field(alias="inputResponses")] = None


def register(server: Any, store: TaskStore, owner_of: Callable[[Any], str | None]) -> None:
    """Serve ``tasks/get``, ``tasks/update`` and ``tasks/cancel`` on ``server`` and advertise the extension.

    Each answers -32021 to a request whose client did not list the extension, and -32602 for a task
    id that is unknown, expired or another client's. No task of ours ever waits for input (a
    confirmation is asked before the task starts), so ``tasks/update`` only acknowledges.
    """

    async def get(ctx: Any, params: TaskIdParams) -> dict[str, Any]:
        if not wants_task(ctx):
            raise missing_capability()
        return store.view(store.get(owner_of(ctx), params.task_id))

    async def update(ctx: Any, params: UpdateTaskParams) -> dict[str, Any]:
        if not wants_task(ctx):
            raise missing_capability()
        store.get(owner_of(ctx), params.task_id)
        return {}

    async def cancel(ctx: Any, params: TaskIdParams) -> dict[str, Any]:
        if not wants_task(ctx):
            raise missing_capability()
        store.cancel(owner_of(ctx), params.task_id)
        return {}

    server.add_request_handler("tasks/get", TaskIdParams, get)
    server.add_request_handler("tasks/update", UpdateTaskParams, update)
    server.add_request_handler("tasks/cancel", TaskIdParams, cancel)
    server.extensions[EXTENSION] = {}
