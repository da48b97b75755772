"""The handshake never waits for the embedding model (loading never blocks initialize: docs/models.md#embedding-health-and-the-recall-advisory)."""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from pathlib import Path

import pytest
from mcp_helpers import ALL_TOOL_NAMES, full_env, mcp_session, server_env, stdio_target

from cpersona.server.tools import tool_names

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
            assert sorted(t.name for t in session.list_tools().tools) == sorted(ALL_TOOL_NAMES)
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


# The real `cpersona serve`, with the import of cpersona.memory (numpy, SQLite, the model
# runtime) held until the test opens a gate. The moment the gate opens, the server writes
# down which heavy modules it had imported: those the handshake and tools/list needed.
_HELD_SERVE = """
import importlib.abc, importlib.machinery, json, sys, time
from pathlib import Path

gate, out = Path(sys.argv[1]), Path(sys.argv[2])
HEAVY = ("numpy", "jsonschema", "onnxruntime", "tokenizers", "huggingface_hub")


class HoldMemoryImport:
    # find_spec runs under the global import lock: wait in exec_module instead (module lock only).
    def find_spec(self, name, path=None, target=None):
        if name != "cpersona.memory":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        real = spec.loader

        class Held(importlib.abc.Loader):
            def create_module(self, spec):
                return real.create_module(spec)

            def exec_module(self, module):
                while not gate.exists():
                    time.sleep(0.01)
                out.write_text(json.dumps(sorted(m for m in HEAVY if m in sys.modules)))
                real.exec_module(module)

        spec.loader = Held()
        return spec


sys.meta_path.insert(0, HoldMemoryImport())
from cpersona.cli.main import main

sys.exit(main(["serve"]))
"""


def test_the_handshake_waits_on_no_heavy_import(tmp_path: Path) -> None:
    from mcp.client.stdio import StdioServerParameters

    gate, out = tmp_path / "gate", tmp_path / "imported.json"
    target = StdioServerParameters(
        command=sys.executable,
        args=["-c", _HELD_SERVE, str(gate), str(out)],
        env=full_env(server_env(tmp_path)),
    )
    with mcp_session(target) as session:
        # Answered while Memory's import is held: nothing below may need it.
        assert len(session.list_tools().tools) == len(tool_names())
        assert not out.exists()
        gate.touch()
        deadline = time.monotonic() + 30
        while not out.exists() and time.monotonic() < deadline:  # the snapshot precedes any tools/call
            time.sleep(0.01)
        stored = session.call("store", {"agent_id": "a", "message": {"content": "after the gate"}})
        assert stored["ok"] is True
    assert json.loads(out.read_text()) == []  # no numpy, jsonschema, model runtime before the handshake
