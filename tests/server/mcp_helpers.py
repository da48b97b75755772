"""Helpers for the MCP layer tests: real server processes, real MCP clients, real Memory.

Nothing is mocked. Process-level tests launch the installed ``cpersona``
console script; a blocking portal lets plain (sync) tests drive one async MCP
client session that lives for the whole module.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import start_blocking_portal

#: The 30 tools of the specification (docs/tools.md), written out from it (not derived from the registry), in its
#: order.
SPEC_TOOL_NAMES = (
    "store",
    "recall",
    "recall_with_context",
    "get_contents",
    "archive_episode",
    "update_memory",
    "get_profile",
    "update_profile",
    "get_operating_context",
    "list_memories",
    "list_episodes",
    "get_queue_status",
    "lock_memory",
    "unlock_memory",
    "delete_memory",
    "delete_episode",
    "delete_agent_data",
    "calibrate_threshold",
    "set_recall_precision",
    "get_recall_precision",
    "export_memories",
    "import_memories",
    "merge_memories",
    "migrate_channel_axis",
    "check_health",
    "deep_check",
    "pause_persistence",
    "resume_persistence",
    "persistence_status",
    "check_update",
)
#: Tools added beyond the spec's 30 (issue 22: get_history, declare_associations, traverse, reconstruct):
#: read from docs/tools.md's `## \`name\`` sections, written by hand, not from the registry - so a new tool's
#: doc section is what admits it here, and a tool registered without one fails every tools/list test.
ISSUE_TOOL_NAMES = tuple(
    name
    for name in re.findall(
        r"^## `([a-z_]+)`",
        (Path(__file__).resolve().parents[2] / "docs" / "tools.md").read_text("utf-8"),
        re.M,
    )
    if name not in SPEC_TOOL_NAMES
)
#: Every tool the server must list.
ALL_TOOL_NAMES = SPEC_TOOL_NAMES + ISSUE_TOOL_NAMES


def cpersona_executable() -> str:
    """The installed console script (beside this interpreter), as a host would launch it."""
    beside = Path(sys.executable).with_name("cpersona")
    if beside.exists():
        return str(beside)
    found = shutil.which("cpersona")
    if found is None:
        pytest.fail("the cpersona console script is not installed (pip install -e .)")
    return found


def server_env(tmp: Path, **extra: str) -> dict[str, str]:
    """Environment for a server on its own DB in ``tmp``: keyword-only, offline, no side files."""
    env = {
        "CPERSONA_DB_PATH": str(tmp / "memory.db"),
        "CPERSONA_MODELS_DIR": str(tmp / "models"),
        "CPERSONA_EMBEDDING_MODE": "none",
        "CPERSONA_AUTO_FETCH_MODEL": "false",
        "CPERSONA_UPDATE_CHECK": "false",
        "CPERSONA_OPERATING_CONTEXT": "off",
        "HF_HUB_OFFLINE": "1",
        "PYTHONUNBUFFERED": "1",
    }
    # The test's own user config dir (conftest's _own_settings_file): the MCP SDK starts a stdio server
    # with only HOME, PATH and a few more of our variables, so without this it would read the settings
    # file in the real HOME, where a `cpersona fetch-model` run by hand may have chosen a model.
    if "XDG_CONFIG_HOME" in os.environ:
        env["XDG_CONFIG_HOME"] = os.environ["XDG_CONFIG_HOME"]
    env.update(extra)
    return env


def full_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` over the current environment minus any CPERSONA_ settings of the developer's shell."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CPERSONA_", "EMBEDDING_"))}
    base.update(env)
    return base


class McpSession:
    """A sync facade over one async ``mcp.Client`` running in a blocking portal.

    Every ``call`` checks the answer against the tool's advertised ``outputSchema`` (from
    tools/list), failures included, so each wire test is also a contract test of the schemas.
    """

    def __init__(self, portal: Any, client: Any) -> None:
        self.portal = portal
        self.client = client
        self._output_validators: dict[str, Any] | None = None

    def call_raw(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        """The CallToolResult as the MCP client received it."""
        return self.portal.call(self.client.call_tool, name, arguments or {})

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """Call a tool; returns the JSON object after checking text and structured content agree."""
        result = self.call_raw(name, arguments)
        # The JSON text first; recall and reconstruct add one resource_link per row after it.
        assert result.content[0].type == "text"
        assert all(block.type == "resource_link" for block in result.content[1:])
        payload = json.loads(result.content[0].text)
        assert payload == result.structured_content
        assert bool(result.is_error) == (payload.get("ok") is False)
        self.check_output(name, payload)
        return payload

    def check_output(self, name: str, payload: dict[str, Any]) -> None:
        """``payload`` validates against tool ``name``'s ``outputSchema``; a listed tool must have one.

        A tool the server does not list (an unknown name) can only answer a failure.
        """
        if self._output_validators is None:
            from jsonschema import Draft202012Validator

            self._output_validators = {}
            for tool in self.list_tools().tools:
                assert tool.output_schema is not None, f"tool {tool.name} declares no outputSchema"
                self._output_validators[tool.name] = Draft202012Validator(tool.output_schema)
        validator = self._output_validators.get(name)
        if validator is None:
            assert payload.get("ok") is False, f"an unlisted tool {name!r} answered success"
            return
        from jsonschema.exceptions import best_match

        error = best_match(validator.iter_errors(payload))
        where = "/".join(str(part) for part in error.absolute_path) if error is not None else ""
        assert error is None, (
            f"{name} answer does not match its outputSchema at {where!r}: {error.message:.300}"
        )

    def list_tools(self) -> Any:
        return self.portal.call(self.client.list_tools)


@contextmanager
def mcp_session(target: Any) -> Iterator[McpSession]:
    """Open an MCP client on ``target`` (StdioServerParameters, Transport or URL) in a portal thread."""
    from mcp import Client

    with start_blocking_portal() as portal:
        client = Client(target, read_timeout_seconds=60)
        with portal.wrap_async_context_manager(client) as entered:
            yield McpSession(portal, entered)


def stdio_target(env: dict[str, str]) -> Any:
    """StdioServerParameters launching ``cpersona serve`` with ``env``."""
    from mcp.client.stdio import StdioServerParameters

    return StdioServerParameters(command=cpersona_executable(), args=["serve"], env=env)


def free_port() -> int:
    """A currently free loopback port (the server binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def http_server(
    tmp: Path, bind: str = "127.0.0.1", **env_extra: str
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """Run ``cpersona serve --transport streamable-http`` on a free port; yield (url, process).

    ``bind`` is the address served on; requests always go to 127.0.0.1 (never beyond loopback).
    """
    port = free_port()
    env = full_env(server_env(tmp, **env_extra))
    log_path = tmp / "server.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [
                cpersona_executable(),
                "serve",
                "--transport",
                "streamable-http",
                "--host",
                bind,
                "--port",
                str(port),
            ],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            _wait_for_port(port, proc, log_path)
            yield f"http://127.0.0.1:{port}/mcp", proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], log_path: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"server exited with {proc.returncode}: {log_path.read_text(errors='replace')}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    pytest.fail(f"server did not listen on {port} within {timeout}s: {log_path.read_text(errors='replace')}")


def unique(prefix: str) -> Callable[[], str]:
    """A generator of distinct agent ids so tests sharing one server never see each other's rows."""
    counter = iter(range(1_000_000))
    return lambda: f"{prefix}-{next(counter)}"


@contextmanager
def transport_session(transport: str, tmp: Path, **env_extra: str) -> Iterator[McpSession]:
    """One real server on the data folder ``tmp``, reached over ``transport``: "stdio", or "http"
    (streamable HTTP with a bearer token, as the HTTP tests use); ``env_extra``: more settings."""
    if transport == "stdio":
        with mcp_session(stdio_target(server_env(tmp, **env_extra))) as session:
            yield session
        return
    from test_mcp_http import TOKEN, authed_transport  # the HTTP tests' token and transport

    with (
        http_server(tmp, CPERSONA_AUTH_TOKEN=TOKEN, **env_extra) as (url, _proc),
        mcp_session(authed_transport(url)) as session,
    ):
        yield session


def refused_connect(url: str, token: str) -> tuple[BaseException, list[int]]:
    """Open an MCP session over streamable HTTP with ``token``, expecting a refusal; returns what
    the client raised and the HTTP status of every response it received. The SDK turns a 401 into a
    generic ``-32603`` error, so the statuses (recorded by an httpx event hook) are what a test
    asserts: a refusal checked by its code, not by "anything raised"."""
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    statuses: list[int] = []

    async def record(response: httpx2.Response) -> None:
        statuses.append(response.status_code)

    async def connect() -> None:
        http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {token}"},
            timeout=httpx2.Timeout(30, read=60),
            event_hooks={"response": [record]},
        )
        async with Client(streamable_http_client(url, http_client=http), read_timeout_seconds=10):
            pass

    try:
        anyio.run(connect)
    except BaseException as exc:  # the SDK's error group; returned for the caller to inspect
        return exc, statuses
    raise AssertionError(f"a session opened with token {token[:4]}…; statuses {statuses}")
