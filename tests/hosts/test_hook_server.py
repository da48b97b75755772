"""The hook command against a running `cpersona serve` (real model, real socket): the fast path."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cpersona.config import Settings
from cpersona.hooks.endpoint import socket_path
from cpersona.memory import Memory
from tests.hosts.hook_helpers import claude_input, hook_argv, injected, run_hook

pytestmark = pytest.mark.slow


def _serve(db: Path, runtime: Path, models: Path, log: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CPERSONA_")}
    env.update(
        CPERSONA_DB_PATH=str(db),
        CPERSONA_EMBEDDING_MODEL="all-minilm-l6-v2",
        CPERSONA_MODELS_DIR=str(models),
        CPERSONA_UPDATE_CHECK="false",
        CPERSONA_AUTO_FETCH_MODEL="false",
        XDG_RUNTIME_DIR=str(runtime.parent),
    )
    return subprocess.Popen(
        [sys.executable, "-m", "cpersona", "serve"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=log.open("wb"),
    )


def _wait_for(path: Path, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


@pytest.fixture
def served(
    tmp_path: Path, short_tmp: Path, minilm_models_dir: Path
) -> Iterator[tuple[Path, Path, subprocess.Popen[bytes]]]:
    db = tmp_path / "memory.db"
    # What the server derives from XDG_RUNTIME_DIR; a short path, as the socket goes in it (short_tmp).
    runtime = short_tmp / "xdg" / "cpersona"
    runtime.parent.mkdir(mode=0o700)
    settings = Settings(
        db_path=db,
        embedding_model="all-minilm-l6-v2",
        models_dir=minilm_models_dir,
        update_check=False,
        auto_fetch_model=False,
        runtime_dir=short_tmp / "other-run",
    )
    with Memory(settings) as memory:
        memory.wait_until_ready(60)
        memory.store("alice", "We chose PostgreSQL 16 for the billing service after the load test.")
        memory.store("alice", "Staging deploys happen on Tuesdays and Thursdays only.")
        memory.store("alice", "Alice prefers pytest fixtures over setUp methods.")
        memory.drain_queue()
    server = _serve(db, runtime, minilm_models_dir, tmp_path / "serve.log")
    try:
        _wait_for(socket_path(runtime, str(db)))
        yield db, runtime, server
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(30)


def test_prompt_is_answered_by_the_running_server(
    served: tuple[Path, Path, subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    db, runtime, _ = served
    log = tmp_path / "hooks.log"
    argv = hook_argv("prompt", db=db, runtime=runtime, extra=("--log", str(log)))
    done = run_hook(argv, claude_input("prompt", prompt="what database does the billing service use?"))
    assert done.returncode == 0
    text = injected(done)
    assert text is not None and text.splitlines()[-1].endswith("for the billing service after the load test.")
    assert not log.exists()  # the fast path logs nothing
    start = run_hook(hook_argv("session-start", db=db, runtime=runtime), claude_input("session-start"))
    assert 'agent_id is "alice"' in (injected(start) or "")


def test_socket_goes_with_the_server_and_a_second_server_takes_over(
    served: tuple[Path, Path, subprocess.Popen[bytes]], tmp_path: Path, minilm_models_dir: Path
) -> None:
    db, runtime, first = served
    path = socket_path(runtime, str(db))
    second = _serve(db, runtime, minilm_models_dir, tmp_path / "second.log")
    try:
        time.sleep(1.0)
        assert second.poll() is None  # losing the election is not an error
        assert first.stdin is not None
        first.stdin.close()
        first.wait(30)
        _wait_for(path, 30)  # the second server retries the lock and listens
        done = run_hook(
            hook_argv("prompt", db=db, runtime=runtime), claude_input("prompt", prompt="staging deploys")
        )
        assert "Tuesdays" in (injected(done) or "")
    finally:
        if second.stdin is not None:
            second.stdin.close()
        second.wait(30)
    assert not path.exists()
