"""Helpers for the browser-view tests: a real ``cpersona ui`` process on a free loopback port."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest


def free_port() -> int:
    """A currently free loopback port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpersona_executable() -> str:
    """The installed console script beside this interpreter."""
    beside = Path(sys.executable).with_name("cpersona")
    found = str(beside) if beside.exists() else shutil.which("cpersona")
    if found is None:
        pytest.fail("the cpersona console script is not installed (pip install -e .)")
    return found


def ui_env(tmp: Path, **extra: str) -> dict[str, str]:
    """The process environment: the developer's shell minus CPERSONA_ settings, plus a keyword-only store."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CPERSONA_", "EMBEDDING_"))}
    env.update(
        {
            "CPERSONA_DB_PATH": str(tmp / "memory.db"),
            "CPERSONA_MODELS_DIR": str(tmp / "models"),
            "CPERSONA_EMBEDDING_MODE": "none",
            "CPERSONA_AUTO_FETCH_MODEL": "false",
            "CPERSONA_UPDATE_CHECK": "false",
            "CPERSONA_OPERATING_CONTEXT": "off",
            "HF_HUB_OFFLINE": "1",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(extra)
    return env


@dataclass
class UiServer:
    """A running view."""

    base: str
    port: int
    proc: subprocess.Popen[bytes]
    log: Path


@contextmanager
def ui_server(tmp: Path, *args: str, **env_extra: str) -> Iterator[UiServer]:
    """Run ``cpersona ui --port N [args]`` until the block ends."""
    port = free_port()
    log_path = tmp / f"ui-{port}.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [cpersona_executable(), "ui", "--port", str(port), *args],
            env=ui_env(tmp, **env_extra),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                if proc.poll() is not None:
                    pytest.fail(
                        f"cpersona ui exited with {proc.returncode}: {log_path.read_text(errors='replace')}"
                    )
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                        break
                except OSError:
                    if time.monotonic() > deadline:
                        pytest.fail(f"cpersona ui did not listen: {log_path.read_text(errors='replace')}")
                    time.sleep(0.1)
            yield UiServer(f"http://127.0.0.1:{port}", port, proc, log_path)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
