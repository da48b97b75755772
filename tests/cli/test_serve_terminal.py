"""`cpersona serve` explains itself when a person starts it from a terminal, and stays quiet under a host."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

HINT = "waiting for an MCP host"


def _cpersona() -> str:
    return str(Path(sys.executable).with_name("cpersona"))


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CPERSONA_", "EMBEDDING_"))}
    env.update(
        CPERSONA_DB_PATH=str(tmp / "memory.db"),
        CPERSONA_EMBEDDING_MODE="none",
        CPERSONA_UPDATE_CHECK="false",
        CPERSONA_OPERATING_CONTEXT="off",
        PYTHONUNBUFFERED="1",
        PYTHONFAULTHANDLER="1",  # a server that does not stop dumps its threads (``_stopped``)
    )
    return env


@pytest.mark.slow
def test_serve_from_a_terminal_says_what_it_is_and_stops_on_ctrl_d(tmp_path: Path) -> None:
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        [_cpersona(), "serve"],
        env=_env(tmp_path),
        stdin=secondary,
        stdout=secondary,
        stderr=subprocess.PIPE,
        close_fds=True,
    )
    os.close(secondary)
    try:
        assert proc.stderr is not None
        said = b""
        deadline = time.monotonic() + 60
        while HINT.encode() not in said or b"Ctrl-D" not in said:
            assert time.monotonic() < deadline, f"no explanation on stderr: {said!r}"
            ready, _, _ = select.select([proc.stderr], [], [], 0.5)
            if ready:
                chunk = os.read(proc.stderr.fileno(), 65536)
                assert chunk, f"serve exited early: {said!r}"
                said += chunk
        text = said.decode()
        assert "claude mcp add cpersona --" in text and "Ctrl-C" in text and "cpersona ui" in text
        assert "cpersona register claude-desktop" in text  # the one command that writes the entry
        os.write(primary, b"\x04")  # Ctrl-D at the start of a line: end of input, as the paragraph promises
        assert proc.wait(timeout=30) == 0
    finally:
        _reap(proc)
        os.close(primary)


@pytest.mark.slow
def test_serve_under_a_host_pipe_prints_no_explanation(tmp_path: Path) -> None:
    done = subprocess.run(
        [_cpersona(), "serve"], env=_env(tmp_path), input=b"", capture_output=True, timeout=60
    )
    assert done.returncode == 0
    assert HINT.encode() not in done.stderr and done.stdout == b""


def _in_terminal(argv: list[str], env: dict[str, str]) -> tuple[int, subprocess.Popen[bytes]]:
    """``argv`` with a fresh pseudo-terminal as stdin, stdout and controlling terminal (so a typed
    Ctrl-C reaches it as SIGINT, as in a shell); stderr is a pipe. Returns (the terminal's primary
    side, the process)."""
    import fcntl
    import termios

    primary, secondary = pty.openpty()

    def own_the_terminal() -> None:  # in the child, after setsid: the pty becomes its terminal
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        # A person's interactive shell starts it with Ctrl-C at its default, whatever the test runner
        # inherited (pytest started as a background job of a script ignores SIGINT).
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    proc = subprocess.Popen(
        argv,
        env=env,
        stdin=secondary,
        stdout=secondary,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=own_the_terminal,
        close_fds=True,
    )
    os.close(secondary)
    return primary, proc


def _read_until(proc: subprocess.Popen[bytes], marker: bytes, timeout: float = 60) -> bytes:
    assert proc.stderr is not None
    said = b""
    deadline = time.monotonic() + timeout
    while marker not in said:
        assert time.monotonic() < deadline, f"never said {marker!r}: {said!r}"
        ready, _, _ = select.select([proc.stderr], [], [], 0.5)
        if ready:
            chunk = os.read(proc.stderr.fileno(), 65536)
            assert chunk, f"serve exited early: {said!r}"
            said += chunk
    return said


#: How long a stop may take here. The promise is 2 s; a loaded CI machine gets some slack, while a
#: server that ignores the first Ctrl-C (the bug: it waited for the next key press) never stops at all.
STOP_BOUND_SECONDS = 5


def _reap(proc: subprocess.Popen[bytes]) -> None:
    """Kill a server a failed test left running, and wait for it."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def _stopped(proc: subprocess.Popen[bytes]) -> tuple[int, bytes]:
    """(exit status, stderr) of a server asked to stop; one still running after ``STOP_BOUND_SECONDS``
    is aborted, and the test fails with its threads' stacks (faulthandler), which say what it waited on."""

    assert proc.stderr is not None
    try:
        status = proc.wait(timeout=STOP_BOUND_SECONDS)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        said = proc.stderr.read()
        pytest.fail(
            f"serve did not stop in {STOP_BOUND_SECONDS} s; its stderr:\n{said.decode(errors='replace')}"
        )
    return status, proc.stderr.read()


SERVE_ARGV = {
    "stdio": (["serve"], HINT.encode()),
    "http": (["serve", "--transport", "streamable-http", "--port", "0"], b"serving MCP over streamable HTTP"),
}


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_one_ctrl_c_in_a_terminal_stops_serve(tmp_path: Path, transport: str) -> None:
    args, ready = SERVE_ARGV[transport]
    env = _env(tmp_path) | {"CPERSONA_ALLOW_UNAUTHENTICATED_HTTP": "true"}
    primary, proc = _in_terminal([_cpersona(), *args], env)
    try:
        _read_until(proc, ready)
        os.write(primary, b"\x03")  # one Ctrl-C typed at the terminal: the line discipline sends SIGINT
        status, said = _stopped(proc)
        assert status == 130 and b"cpersona: stopped (SIGINT)" in said, said
    finally:
        _reap(proc)
        os.close(primary)


@pytest.mark.slow
def test_ctrl_c_in_an_http_servers_first_moments_stops_it(tmp_path: Path) -> None:
    # Typed as soon as the server says it is starting (before uvicorn takes SIGINT over, while modules
    # still load). Python's own KeyboardInterrupt used to land wherever the main thread was: most
    # often before the stop path, so the server exited without its orderly stop; about one start in
    # six inside an import lock's callback, reported as "Exception ignored", and the server went on
    # serving. Four starts, each must stop as from a later Ctrl-C (this test failed 5 runs of 5 then).
    env = _env(tmp_path) | {"CPERSONA_ALLOW_UNAUTHENTICATED_HTTP": "true"}
    for _ in range(4):
        primary, proc = _in_terminal([_cpersona(), *SERVE_ARGV["http"][0]], env)
        try:
            _read_until(proc, b"serving MCP over streamable-http")
            os.write(primary, b"\x03")
            status, said = _stopped(proc)
            assert status == 130 and b"cpersona: stopped (SIGINT)" in said, said
            assert b"Exception ignored" not in said and b"Traceback" not in said, said
        finally:
            _reap(proc)
            os.close(primary)


def _rpc(proc: subprocess.Popen[bytes], message: dict[str, object]) -> dict[str, object]:
    import json

    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()
    if "id" not in message:
        return {}
    reply: dict[str, object] = json.loads(proc.stdout.readline())
    return reply


def _handshake(proc: subprocess.Popen[bytes]) -> None:
    """MCP's initialize over the server's pipes: once answered, it is serving (signals are its own)."""
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    assert "result" in _rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
    _rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})


@pytest.mark.slow
def test_sigterm_stops_a_stdio_server_mid_session_and_closes_the_database(tmp_path: Path) -> None:
    """A host's pipes, a session in progress, a write committed: SIGTERM takes Ctrl-C's path, so the
    Memory is closed (the last connection gone, SQLite removes the WAL file) and the row is kept."""
    import sqlite3

    proc = subprocess.Popen(
        [_cpersona(), "serve"],
        env=_env(tmp_path),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        _handshake(proc)
        message = {"content": "Ana prefers short commit messages"}
        stored = _rpc(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "store", "arguments": {"agent_id": "ana", "message": message}},
            },
        )
        assert '"stored"' in str(stored), stored
        assert (tmp_path / "memory.db-wal").exists()  # the session holds the database open
        proc.send_signal(15)
        status, said = _stopped(proc)
        assert status == 143 and b"cpersona: stopped (SIGTERM)" in said, said
    finally:
        _reap(proc)
    assert not (tmp_path / "memory.db-wal").exists()  # closed, not killed
    with sqlite3.connect(tmp_path / "memory.db") as db:
        assert db.execute("SELECT content FROM memories").fetchall() == [
            ("Ana prefers short commit messages",)
        ]


@pytest.mark.slow
def test_sigterm_stops_an_http_server(tmp_path: Path) -> None:
    env = _env(tmp_path) | {"CPERSONA_ALLOW_UNAUTHENTICATED_HTTP": "true"}
    args, ready = SERVE_ARGV["http"]
    proc = subprocess.Popen([_cpersona(), *args], env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _read_until(proc, ready)
        proc.send_signal(15)
        status, said = _stopped(proc)
        assert status == 143 and b"cpersona: stopped (SIGTERM)" in said, said
    finally:
        _reap(proc)


def _ignore_ctrl_c() -> None:
    """In the child: what a script's shell does to a job it starts in the background (``nohup … &``)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_server_whose_parent_ignored_ctrl_c_stops_on_either_signal(
    tmp_path: Path, transport: str, signum: signal.Signals, status: int
) -> None:
    """Gracefully, with its usual status and words, on both transports. Before, on stdio, SIGINT was
    ignored and SIGTERM (re-raised as SIGINT) too: the server ran on. The signal comes right after the
    handshake, while the reader may still hold a message for the session: that once exited 1."""
    env = _env(tmp_path) | {"CPERSONA_ALLOW_UNAUTHENTICATED_HTTP": "true"}
    args, ready = SERVE_ARGV[transport]
    proc = subprocess.Popen(
        [_cpersona(), *args],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE if transport == "stdio" else subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=_ignore_ctrl_c,
    )
    try:
        if transport == "stdio":  # a pipe, not a terminal: serving once it answers the handshake
            _handshake(proc)
        else:
            _read_until(proc, ready)
        proc.send_signal(signum)
        stopped, said = _stopped(proc)
        assert stopped == status, said
        assert f"cpersona: stopped ({signum.name})".encode() in said, said
    finally:
        _reap(proc)
        if proc.stdin is not None:
            proc.stdin.close()
