"""`cpersona stats | head -3`: a reader that closes the pipe early must not produce a traceback.

The reader's end is closed before the command writes (what `head` does after its lines, made
deterministic), so the write meets EPIPE every time.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from test_cli_commands import executable, run

from cpersona.cli.main import EXIT_BROKEN_PIPE

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("args", [("stats",), ("stats", "--json"), ("recall", "pipe-agent", "zebra")])
def test_closed_stdout_exits_quietly(tmp_path: Path, args: tuple[str, ...]) -> None:
    assert run(tmp_path, "store", "pipe-agent", "a zebra note so every command has output").returncode == 0
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CPERSONA_", "EMBEDDING_"))}
    env.update(
        CPERSONA_DB_PATH=str(tmp_path / "memory.db"),
        CPERSONA_EMBEDDING_MODE="none",
        CPERSONA_UPDATE_CHECK="false",
        CPERSONA_AUTO_FETCH_MODEL="false",
        CPERSONA_OPERATING_CONTEXT="off",
        CPERSONA_MODELS_DIR=str(tmp_path / "models"),
    )
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte, as `head` is after its lines
    try:
        done = subprocess.run(
            [executable(), *args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
    assert done.returncode == EXIT_BROKEN_PIPE, done.stderr
