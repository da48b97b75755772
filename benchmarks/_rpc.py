"""Raw JSON-RPC clients for the reliability benchmark: a ``cpersona serve`` process over stdio, and
streamable HTTP on loopback.

Raw on purpose: the benchmark must send what an agent (or an attacker) could send
— lone surrogate escapes, odd nesting — and must notice a request that gets no
reply, which an SDK client would hide behind its own validation or timeout.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx2

PROTOCOL_VERSION = "2025-06-18"
CLIENT_INFO = {"name": "cpersona-reliability", "version": "1"}


def cpersona_executable() -> str:
    """The console script beside this interpreter (the venv's ``cpersona``)."""
    beside = Path(sys.executable).with_name("cpersona")
    return str(beside) if beside.exists() else "cpersona"


def server_env(db: Path, models_dir: Path | None, **extra: str) -> dict[str, str]:
    """Environment for a server on ``db``: offline, loopback-only, MiniLM when ``models_dir`` is given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CPERSONA_", "EMBEDDING_"))}
    env.update(
        CPERSONA_DB_PATH=str(db),
        CPERSONA_AUTO_FETCH_MODEL="false",
        CPERSONA_UPDATE_CHECK="false",
        CPERSONA_UPDATE_INDEX_URL="http://127.0.0.1:9/pypi",  # never leaves the machine, even if enabled
        CPERSONA_OPERATING_CONTEXT="off",
        CPERSONA_EXPORT_DIR=str(db.parent / "exports"),
        HF_HUB_OFFLINE="1",
        PYTHONUNBUFFERED="1",
    )
    if models_dir is None:
        env.update(CPERSONA_EMBEDDING_MODE="none", CPERSONA_MODELS_DIR=str(db.parent / "models"))
    else:
        env.update(
            CPERSONA_EMBEDDING_MODE="onnx",
            CPERSONA_MODELS_DIR=str(models_dir),
            CPERSONA_EMBEDDING_MODEL="all-minilm-l6-v2",
        )
    env.update(extra)
    return env


def tool_payload(reply: dict[str, Any]) -> dict[str, Any] | None:
    """The tool's JSON object from a tools/call reply (structured content, else the text block)."""
    result = reply.get("result")
    if not isinstance(result, dict):
        return None
    structured = result.get("structuredContent")
    if isinstance(structured, dict):
        return structured
    for block in result.get("content") or ():
        if isinstance(block, dict) and block.get("type") == "text":
            try:
                value = json.loads(block.get("text", ""))
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
    return None


def encode(message: dict[str, Any]) -> bytes:
    """One JSON-RPC message as bytes; lone surrogates go out as \\udXXX escapes, as any JSON encoder sends them."""
    return json.dumps(message, ensure_ascii=True).encode("ascii")


class StdioServer:
    """``cpersona serve`` over stdio, spoken to line by line; replies are collected by id."""

    def __init__(self, env: dict[str, str], stderr_path: Path) -> None:
        self._stderr = open(stderr_path, "wb")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            [cpersona_executable(), "serve"],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )
        self.replies: dict[Any, dict[str, Any]] = {}
        self.null_replies = 0  # answers with id null (they cannot be keyed by id)
        self.unparsable_lines = 0
        self.eof = False
        self._ids = itertools.count(1)
        self._cond = threading.Condition()
        self._write_lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                self.unparsable_lines += 1
                continue
            if isinstance(message, dict) and ("result" in message or "error" in message):
                with self._cond:
                    self.replies[message.get("id")] = message
                    self.null_replies += message.get("id") is None
                    self._cond.notify_all()
        with self._cond:
            self.eof = True
            self._cond.notify_all()

    def next_id(self) -> int:
        return next(self._ids)

    def send(self, data: bytes) -> bool:
        """Write one line; False when the server's stdin is gone (the process died)."""
        assert self.proc.stdin is not None
        try:
            with self._write_lock:
                self.proc.stdin.write(data + b"\n")
                self.proc.stdin.flush()
            return True
        except (BrokenPipeError, OSError, ValueError):
            return False

    def request(self, method: str, params: dict[str, Any] | None = None) -> int:
        """Send a request; returns its id (the reply arrives in ``replies``)."""
        rid = self.next_id()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self.send(encode(message))
        return rid

    def call_tool_message(self, rid: int, name: str, arguments: Any) -> bytes:
        return encode(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "method": "tools/call",
                "params": {"name": name, "arguments": arguments},
            }
        )

    def wait(self, ids: list[int], timeout: float) -> dict[int, dict[str, Any]]:
        """Replies for ``ids`` that arrive within ``timeout`` seconds (fewer when some never come)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                if all(i in self.replies for i in ids) or self.eof:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            return {i: self.replies[i] for i in ids if i in self.replies}

    def count_replies(self) -> int:
        with self._cond:
            return len(self.replies)

    def initialize(self, timeout: float = 60.0) -> None:
        rid = self.request(
            "initialize", {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO}
        )
        if rid not in self.wait([rid], timeout):
            raise RuntimeError(f"server did not answer initialize within {timeout}s")
        self.send(encode({"jsonrpc": "2.0", "method": "notifications/initialized"}))

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.alive():
            self.proc.kill()
        self.proc.wait()
        self._stderr.close()

    def close(self, timeout: float = 30.0) -> int:
        """Close stdin (the client hangs up) and wait for a clean exit; returns the exit code."""
        assert self.proc.stdin is not None
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._stderr.close()
        return code


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class HttpServer:
    """``cpersona serve --transport streamable-http`` on a free loopback port."""

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self._log = open(log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [
                cpersona_executable(),
                "serve",
                "--transport",
                "streamable-http",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
            ],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"HTTP server exited with {self.proc.returncode}; see {log_path}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"HTTP server did not listen within 90s; see {log_path}")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()


class HttpSession:
    """One MCP session over streamable HTTP with a bearer token, spoken raw."""

    def __init__(self, url: str, token: str, timeout: float = 30.0) -> None:
        self.url = url
        self.headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        self.http = httpx2.Client(timeout=httpx2.Timeout(timeout))
        self._ids = itertools.count(1)
        reply = self.post(
            encode(
                {
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": PROTOCOL_VERSION,
                        "capabilities": {},
                        "clientInfo": CLIENT_INFO,
                    },
                }
            ),
            0,
        )
        if reply is None or "result" not in reply:
            raise RuntimeError(f"initialize failed: {reply}")
        self.post(encode({"jsonrpc": "2.0", "method": "notifications/initialized"}), None)

    def next_id(self) -> int:
        return next(self._ids)

    def post(self, body: bytes, rid: Any) -> dict[str, Any] | None:
        """POST one message; returns the JSON-RPC reply with id ``rid`` (None when there is none).

        Raises httpx2 errors on transport failure (connection refused = the server is gone).
        """
        response = self.http.post(self.url, content=body, headers=self.headers)
        session = response.headers.get("mcp-session-id")
        if session:
            self.headers["mcp-session-id"] = session
        if "mcp-session-id" in self.headers and "mcp-protocol-version" not in self.headers:
            self.headers["mcp-protocol-version"] = PROTOCOL_VERSION
        if rid is None:
            return None
        kind = response.headers.get("content-type", "")
        messages: list[Any] = []
        if kind.startswith("text/event-stream"):
            for line in re.split(r"\r\n|\r|\n", response.text):  # not splitlines: U+2028 may be content
                if line.startswith("data:"):
                    try:
                        messages.append(json.loads(line[5:].strip()))
                    except ValueError:
                        continue
        elif kind.startswith("application/json"):
            with contextlib.suppress(ValueError):
                messages.append(response.json())
        for message in messages:
            if isinstance(message, dict) and message.get("id") == rid:
                return message
        if response.status_code >= 400:
            return {"http_status": response.status_code, "body": response.text[:300]}
        return None

    def call_tool(self, name: str, arguments: Any) -> dict[str, Any] | None:
        rid = self.next_id()
        return self.post(
            encode(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "method": "tools/call",
                    "params": {"name": name, "arguments": arguments},
                }
            ),
            rid,
        )

    def close(self) -> None:
        self.http.close()
