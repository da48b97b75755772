"""Three real stdio servers share one MiniLM: kill the one holding it, the others keep answering and take over.

Each server is the installed ``cpersona serve`` under a real MCP client, all on one
database and one models directory, meeting in a private runtime directory
(XDG_RUNTIME_DIR) so no other test's servers join. Which process holds the model
is read from /proc/<pid>/maps (only the holder has ONNX Runtime's library mapped).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import McpSession, mcp_session, server_env, stdio_target

pytestmark = pytest.mark.slow

SERVERS = 3
TAKEOVER_SECONDS = 60.0


def server_children() -> set[int]:
    """Pids of this test process's child processes running ``cpersona serve``."""
    me = str(os.getpid())
    found: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        ppid = stat.rsplit(")", 1)[1].split()[1]
        if ppid == me and b"serve" in cmdline and any(part.endswith(b"cpersona") for part in cmdline):
            found.add(int(entry.name))
    return found


def holds_model(pid: int) -> bool:
    """True when ONNX Runtime's shared library is mapped into ``pid``."""
    return "onnxruntime" in Path(f"/proc/{pid}/maps").read_text()


def wait_for_model(session: McpSession, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if session.call("get_queue_status")["model_ready"]:
            return
        time.sleep(0.1)
    pytest.fail("the embedding model did not become ready over MCP")


def vector_recall(session: McpSession, agent: str, target_id: str) -> tuple[bool, dict[str, Any]]:
    """One recall of the paraphrase; (found by its vector, response)."""
    recalled = session.call("recall", {"agent_id": agent, "query": "A kitten is resting on a rug"})
    assert recalled["ok"] is True, recalled
    results = recalled["results"]
    by_vector = (
        bool(results)
        and results[-1]["id"] == target_id
        and results[-1]["match_reason"].get("cosine") is not None
    )
    return by_vector, recalled


def test_killing_the_model_holder_leaves_the_others_answering_and_one_takes_over(
    minilm_models_dir: Path, tmp_path: Path, short_tmp: Path
) -> None:
    env = server_env(
        tmp_path,
        CPERSONA_EMBEDDING_MODE="onnx",
        CPERSONA_EMBEDDING_MODEL="all-minilm-l6-v2",
        CPERSONA_MODELS_DIR=str(minilm_models_dir),
        XDG_RUNTIME_DIR=str(short_tmp / "run"),
    )
    (tmp_path / "run").mkdir(mode=0o700)
    with contextlib.ExitStack() as stack:
        sessions: dict[int, McpSession] = {}
        closers: dict[int, contextlib.ExitStack] = {}
        for _ in range(SERVERS):
            before = server_children()
            own = contextlib.ExitStack()
            session = own.enter_context(mcp_session(stdio_target(env)))
            (pid,) = server_children() - before
            sessions[pid], closers[pid] = session, own
        for pid in sessions:
            stack.callback(lambda p=pid: _close_quietly(closers[p]))
        for session in sessions.values():
            wait_for_model(session)

        holders = [pid for pid in sessions if holds_model(pid)]
        assert len(holders) == 1, f"exactly one process holds the model, got {holders}"
        (host,) = holders

        first = next(iter(sessions.values()))
        agent = "shared"
        target = first.call("store", {"agent_id": agent, "message": {"content": "The cat sits on the mat."}})
        assert target["embedded"] is True, target
        for text in ("Quarterly revenue grew by eight percent.", "The train to Berlin leaves at noon."):
            assert first.call("store", {"agent_id": agent, "message": {"content": text}})["embedded"] is True
        for pid, session in sessions.items():
            by_vector, recalled = vector_recall(session, agent, target["id"])
            assert by_vector, (pid == host, recalled)

        os.kill(host, signal.SIGKILL)
        survivors = {pid: s for pid, s in sessions.items() if pid != host}
        deadline = time.monotonic() + TAKEOVER_SECONDS
        recovered: set[int] = set()
        while recovered != set(survivors) and time.monotonic() < deadline:
            for pid, session in survivors.items():
                # Every request is answered (keyword-only is allowed while the model moves).
                by_vector, _ = vector_recall(session, agent, target["id"])
                stored = session.call(
                    "store", {"agent_id": agent, "message": {"content": f"note from {pid}"}}
                )
                assert stored["ok"] is True and stored["result"] == "stored", stored
                if by_vector:
                    recovered.add(pid)
            time.sleep(0.05)
        assert recovered == set(survivors), "the survivors did not recall with vectors again in time"
        new_holders = [pid for pid in survivors if holds_model(pid)]
        assert len(new_holders) == 1, f"exactly one survivor holds the model now, got {new_holders}"
        for session in survivors.values():
            health = session.call("check_health", {})
            assert health["ok"] is True, health


def _close_quietly(stack: contextlib.ExitStack) -> None:
    # The killed server's client sees a broken pipe on exit; that is the point of the test.
    with contextlib.suppress(BaseException):
        stack.close()
