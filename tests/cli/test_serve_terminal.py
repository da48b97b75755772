"""`cpersona serve` explains itself when a person starts it from a terminal, and stays quiet under a host."""

from __future__ import annotations

import os
import pty
import select
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
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(primary)


@pytest.mark.slow
def test_serve_under_a_host_pipe_prints_no_explanation(tmp_path: Path) -> None:
    done = subprocess.run(
        [_cpersona(), "serve"], env=_env(tmp_path), input=b"", capture_output=True, timeout=60
    )
    assert done.returncode == 0
    assert HINT.encode() not in done.stderr and done.stdout == b""
