"""The handshake never waits for the embedding model (SPEC §7: loading never blocks initialize)."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest
from mcp_helpers import SPEC_TOOL_NAMES, mcp_session, server_env, stdio_target

pytestmark = pytest.mark.slow


def test_initialize_and_recall_answer_while_the_model_is_still_loading(tmp_path: Path) -> None:
    # An /embed endpoint that accepts connections and never answers: the backend's load()
    # blocks on it for the whole timeout, which is "a model that is still loading".
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        silent.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(silent.accept()[0])
            except OSError:
                continue

    threading.Thread(target=accept, daemon=True).start()
    port = silent.getsockname()[1]
    env = server_env(
        tmp_path,
        CPERSONA_EMBEDDING_MODE="http",
        CPERSONA_EMBEDDING_URL=f"http://127.0.0.1:{port}/embed",
        CPERSONA_EMBEDDING_TIMEOUT="60",
    )
    try:
        started = time.monotonic()
        with mcp_session(stdio_target(env)) as session:
            initialized = time.monotonic() - started
            assert sorted(t.name for t in session.list_tools().tools) == sorted(SPEC_TOOL_NAMES)
            stored = session.call("store", {"agent_id": "a", "message": {"content": "stored while loading"}})
            assert stored["result"] == "stored" and stored["embedded"] is False
            recalled = session.call("recall", {"agent_id": "a", "query": "while loading"})
            # The load is still blocked (it can only end after 60 s), yet everything answered.
            assert time.monotonic() - started < 60
            assert recalled["advisory"]["state"] == "unknown"
            assert recalled["results"][-1]["id"] == stored["id"]
            assert accepted, "the backend never tried to reach the endpoint"
            print(f"initialize answered after {initialized:.2f} s while the model was loading")
    finally:
        stop.set()
        silent.close()
        for conn in accepted:
            conn.close()
