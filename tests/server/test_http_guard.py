"""Issue 9 defect 6: Host/Origin checks on every bind, a warning beyond loopback, bearer parsing, token length.

Real server processes; requests only ever go to 127.0.0.1, even when the server binds 0.0.0.0.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx2
import pytest
from mcp_helpers import cpersona_executable, full_env, http_server, server_env
from raw_wire import INITIALIZE, PROTOCOL, one_connection_per_request

from cpersona.config import Settings
from cpersona.core.limits import MIN_TOKEN_CHARS
from cpersona.http.addresses import is_loopback
from cpersona.server.http_guard import bind_warning, transport_security

pytestmark = pytest.mark.slow

TOKEN = "a-sixteen-char-token-and-more"
BASE = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": PROTOCOL,
}


_HTTP = one_connection_per_request()


def initialize(url: str, **headers: str) -> httpx2.Response:
    sent = {**BASE, "Authorization": f"Bearer {TOKEN}", **headers}
    return _HTTP.post(url, content=json.dumps(INITIALIZE).encode(), headers=sent, timeout=30)


def port_of(url: str) -> int:
    return int(url.split(":")[2].split("/")[0])


@pytest.mark.parametrize("bind", ["0.0.0.0", "127.0.0.1"])
def test_host_and_origin_checked_on_every_bind(tmp_path: Path, bind: str) -> None:
    extra = {
        "CPERSONA_HTTP_ALLOWED_HOSTS": "memory.lan:*",
        "CPERSONA_HTTP_ALLOWED_ORIGINS": "https://app.example",
    }
    with http_server(tmp_path, bind, CPERSONA_AUTH_TOKEN=TOKEN, **extra) as (url, _proc):
        port = port_of(url)
        assert initialize(url, Host="evil.com").status_code == 421
        assert initialize(url, Host=f"evil.com:{port}").status_code == 421
        assert initialize(url, Origin="http://evil.com").status_code == 403
        assert initialize(url, Origin=f"http://evil.com:{port}").status_code == 403
        assert initialize(url).status_code == 200
        assert initialize(url, Host=f"localhost:{port}", Origin=f"http://localhost:{port}").status_code == 200
        assert initialize(url, Host=f"memory.lan:{port}").status_code == 200
        assert initialize(url, Origin="https://app.example").status_code == 200
    log = (tmp_path / "server.log").read_text(errors="replace")
    warned = "reachable beyond this machine" in log
    assert warned == (bind == "0.0.0.0"), log


def test_bearer_scheme_is_case_insensitive(tmp_path: Path) -> None:
    with http_server(tmp_path, CPERSONA_AUTH_TOKEN=TOKEN) as (url, _proc):
        for scheme in ("bearer", "BEARER", "Bearer", "bEaReR"):
            assert initialize(url, Authorization=f"{scheme} {TOKEN}").status_code == 200, scheme
            assert initialize(url, Authorization=f"{scheme}  {TOKEN}").status_code == 200, scheme
            for wrong in (f"{scheme} {TOKEN}x", f"Basic {TOKEN}", f"{scheme}{TOKEN}", scheme, TOKEN):
                assert initialize(url, Authorization=wrong).status_code == 401, wrong


@pytest.mark.parametrize("token", ["Zq9", "fifteen-chars!!"])
def test_short_tokens_refused_at_start(tmp_path: Path, token: str) -> None:
    assert len(token) < MIN_TOKEN_CHARS
    done = subprocess.run(
        [cpersona_executable(), "serve", "--transport", "streamable-http", "--port", "1"],
        env=full_env(server_env(tmp_path, CPERSONA_AUTH_TOKEN=token)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert f"at least {MIN_TOKEN_CHARS}" in done.stderr and "Traceback" not in done.stderr
    assert token not in done.stderr.replace("CPERSONA_AUTH_TOKEN", "")  # never echo the secret
    assert not (tmp_path / "memory.db").exists()


def test_sixteen_characters_are_enough(tmp_path: Path) -> None:
    with http_server(tmp_path, CPERSONA_AUTH_TOKEN="y" * MIN_TOKEN_CHARS) as (url, _proc):
        response = initialize(url, Authorization="Bearer " + "y" * MIN_TOKEN_CHARS)
        assert response.status_code == 200


def test_allow_lists_and_warning_rules() -> None:
    assert (
        is_loopback("127.0.0.1")
        and is_loopback("::1")
        and is_loopback("localhost")
        and is_loopback("127.1.2.3")
    )
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4") and not is_loopback("::")
    wide = Settings(http_host="0.0.0.0", http_allowed_hosts=("memory.lan",))
    security = transport_security(wide)
    assert security.enable_dns_rebinding_protection
    assert "0.0.0.0:*" not in security.allowed_hosts and "memory.lan" in security.allowed_hosts
    assert "localhost:*" in security.allowed_hosts and "http://127.0.0.1:*" in security.allowed_origins
    lan = transport_security(Settings(http_host="192.168.1.4"))
    assert "192.168.1.4:*" in lan.allowed_hosts and "http://192.168.1.4:*" in lan.allowed_origins
    v6 = transport_security(Settings(http_host="fd00::1"))
    assert "[fd00::1]:*" in v6.allowed_hosts
    assert bind_warning(Settings(http_host="127.0.0.1")) is None
    warning = bind_warning(wide)
    assert warning is not None and "0.0.0.0" in warning and "memory.lan" in warning
