"""Raw JSON-RPC clients for wire-level tests: lines on a server's stdin, bodies POSTed over HTTP.

A real MCP client never sends a malformed line, so these speak the protocol by hand.
"""

from __future__ import annotations

import contextlib
import json
import queue
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
from mcp_helpers import cpersona_executable, full_env, server_env

PROTOCOL = "2025-06-18"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": PROTOCOL,
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def one_connection_per_request() -> httpx2.Client:
    """An HTTP client that opens a new connection for every request and closes it after the answer,
    as ``httpx2.post`` does, without building a new client (its TLS context costs ~75 ms) each time."""
    return httpx2.Client(limits=httpx2.Limits(max_keepalive_connections=0), timeout=30)


def tool_call(request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


class RawStdio:
    """``cpersona serve`` over pipes; replies collected by id by a reader thread."""

    def __init__(self, tmp: Path, **env: str) -> None:
        self.stderr_path = tmp / "stderr.log"
        self._stderr = open(self.stderr_path, "wb")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            [cpersona_executable(), "serve"],
            env=full_env(server_env(tmp, **env)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )
        self.replies: dict[Any, dict[str, Any]] = {}
        self.null_replies: list[dict[str, Any]] = []
        self.garbage: list[bytes] = []
        self._lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)

    def send_line(self, line: str | bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(
            (line.encode("utf-8", "surrogatepass") if isinstance(line, str) else line) + b"\n"
        )
        self.proc.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.send_line(json.dumps(message))

    def handshake(self) -> None:
        self.send(INITIALIZE)
        self.wait_for([1])
        self.send(INITIALIZED)

    def wait_for(self, ids: list[Any], nulls: int = 0, timeout: float = 30.0) -> None:
        """Collect replies until every id in ``ids`` and ``nulls`` id-null errors arrived, or fail."""
        deadline = time.monotonic() + timeout
        while not (all(i in self.replies for i in ids) and len(self.null_replies) >= nulls):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(
                    f"no reply for {[i for i in ids if i not in self.replies]} / {nulls - len(self.null_replies)} "
                    f"null-id errors within {timeout}s; got {sorted(map(str, self.replies))}; stderr:\n"
                    + self.stderr_path.read_text(errors="replace")[-3000:]
                )
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                continue
            try:
                reply = json.loads(line)
            except ValueError:
                self.garbage.append(line)
                continue
            if reply.get("id") is None:
                self.null_replies.append(reply)
            else:
                self.replies[reply["id"]] = reply

    def call(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send one request and return its reply."""
        self.send(message)
        self.wait_for([message["id"]])
        return self.replies.pop(message["id"])

    def close(self) -> str:
        """Close stdin, wait for exit; returns stderr."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._stderr.close()
        return self.stderr_path.read_text(errors="replace")


@contextlib.contextmanager
def stdio_caller(tmp: Path) -> Iterator[RawStdio]:
    """A handshaken raw stdio server; on exit it is closed and must not have logged a traceback."""
    raw = RawStdio(tmp)
    raw.handshake()
    try:
        yield raw
    finally:
        stderr = raw.close()
        assert "Traceback" not in stderr, stderr[-3000:]


class RawHttp:
    """POSTs JSON-RPC bodies to a running streamable-HTTP server inside one MCP session."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self.headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": PROTOCOL,
        }
        self.http = one_connection_per_request()

    def handshake(self) -> None:
        response = self.post(json.dumps(INITIALIZE).encode())
        assert response.status_code == 200, response.text
        self.headers["mcp-session-id"] = response.headers["mcp-session-id"]
        assert self.post(json.dumps(INITIALIZED).encode()).status_code == 202

    def post(self, body: bytes, **headers: str) -> httpx2.Response:
        return self.http.post(self.url, content=body, headers={**self.headers, **headers}, timeout=30)

    @staticmethod
    def reply(response: httpx2.Response) -> dict[str, Any]:
        """The JSON-RPC message in a response (plain JSON or one SSE ``data:`` event)."""
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            # SSE lines end in \r\n, \r or \n only: str.splitlines would also cut at \x85 or \u2028,
            # which fuzzed memory content may carry inside the JSON.
            for line in re.split(r"\r\n|\r|\n", response.text):
                if line.startswith("data:") and line[5:].strip():
                    return dict(json.loads(line[5:]))
            raise AssertionError(f"no data event in {response.text!r}")
        return dict(response.json())
