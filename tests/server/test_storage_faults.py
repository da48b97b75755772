"""Issue 9 defects 4 and 5: a read-only database and a full disk, reproduced for real, over stdio and HTTP.

Read-only: the file gets the immutable flag (``chattr +i``), which even root cannot write through:
SQLite opens it read-only and answers "attempt to write a readonly database", exactly what a 0444
file gives a normal user. Disk full: the database lives on a 1 MiB tmpfs mounted for the test.
Both need root (this sandbox runs tests as root); elsewhere they are skipped with the reason, unless
REQUIRE_FS_FAULTS is set (.ci/run sets it): then they fail (tests/required.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import McpSession, cpersona_executable, full_env, http_server, mcp_session, server_env
from required import unavailable
from test_mcp_http import TOKEN, authed_transport

from cpersona.config import Settings
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.memory import Memory

pytestmark = pytest.mark.slow


@contextmanager
def immutable(path: Path) -> Iterator[None]:
    if shutil.which("chattr") is None:
        unavailable("chattr is not available: cannot make the database read-only for root")
    done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        unavailable(f"cannot set the immutable flag here: {done.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


@contextmanager
def tiny_disk(where: Path, size: str = "1m") -> Iterator[Path]:
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True, text=True
    )
    if done.returncode != 0:
        unavailable(f"cannot mount a small tmpfs here (needs root): {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)


@contextmanager
def served(transport: str, tmp: Path, **env: str) -> Iterator[McpSession]:
    if transport == "stdio":
        from mcp.client.stdio import StdioServerParameters

        # The server's stderr goes to server.log, as http_server does for HTTP.
        target = StdioServerParameters(
            command="bash",
            args=["-c", f"exec '{cpersona_executable()}' serve 2>>'{tmp / 'server.log'}'"],
            env=full_env(server_env(tmp, **env)),
        )
        with mcp_session(target) as session:
            yield session
    else:
        with (
            http_server(tmp, CPERSONA_AUTH_TOKEN=TOKEN, **env) as (url, _p),
            mcp_session(authed_transport(url)) as s,
        ):
            yield s


def server_log(tmp: Path) -> str:
    path = tmp / "server.log"
    return path.read_text(errors="replace") if path.exists() else ""


def stored(session: McpSession, agent: str, content: str) -> dict[str, Any]:
    return session.call("store", {"agent_id": agent, "message": {"content": content}})


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_read_only_database(tmp_path: Path, transport: str) -> None:
    db = tmp_path / "memory.db"
    # Seeded in-process (one server start fewer): the server under test is the one on the read-only file.
    seeding = Settings(db_path=db, embedding_mode="none", update_check=False, auto_fetch_model=False)
    with Memory(seeding, backend=NoEmbeddings(), start_background=False) as memory:
        first = memory.store("ro", "the zebra crossing was repainted")
        assert first["result"] == "stored"
    with immutable(db), served(transport, tmp_path) as session:
        refused = stored(session, "ro", "a new fact that cannot be written")
        assert refused["ok"] is False and refused["error_code"] == "read_only", refused
        assert refused["persisted"] is False and refused["db_path"] == str(db)
        assert "read-only" in refused["error"] and "internal" not in refused["error"]
        profile = session.call("update_profile", {"agent_id": "ro", "profile": "likes zebras"})
        assert profile["error_code"] == "read_only", profile
        recalled = session.call("recall", {"agent_id": "ro", "query": "zebra crossing"})
        assert recalled["ok"] is True and recalled["results"][-1]["id"] == first["id"], recalled
        assert recalled["storage"].startswith("read_only"), recalled
        assert session.call("get_contents", {"agent_id": "ro", "refs": [first["ref"]]})["items"]
    log = server_log(tmp_path)
    assert "is read-only for this process" in log, log
    assert "Traceback" not in log and "internal" not in log, log


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_disk_full(tmp_path: Path, transport: str) -> None:
    with tiny_disk(tmp_path / "disk") as disk:
        env = {"CPERSONA_DB_PATH": str(disk / "memory.db")}
        acknowledged: list[str] = []
        codes: list[str] = []
        with served(transport, tmp_path, **env) as session:
            for i in range(400):
                text = f"note {i}: " + os.urandom(1500).hex()  # incompressible, ~3 KB per row
                response = stored(session, "full", text)
                if response.get("result") == "stored":
                    acknowledged.append(text)
                else:
                    codes.append(response.get("error_code", "?"))
                    assert response["ok"] is False and response["persisted"] is False, response
                    assert str(disk / "memory.db") in response["error"], response
                    if len(codes) >= 5:
                        break
            assert codes and set(codes) == {"storage_full"}, codes
            listed = session.call("list_memories", {"agent_id": "full", "limit": 1000})
            assert listed["total"] == len(acknowledged)
        log = server_log(tmp_path)
        assert "Traceback" not in log, log[-3000:]
        assert log.count("no space left for the database") == 1, log[-3000:]
        # Nothing acknowledged is lost: a fresh server on the same (still full) file has every row.
        with served(transport, tmp_path, **env) as session:
            listed = session.call("list_memories", {"agent_id": "full", "limit": 1000})
            assert sorted(row["content"] for row in listed["items"]) == sorted(acknowledged)
            assert session.call("check_health", {})["ok"] is True
