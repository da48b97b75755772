"""One refusal shape: the MCP endpoint's and the browser view's 401 / 403 carry the same JSON body.

Both front doors' real middleware run in front of a stand-in app under Starlette's test client (the
end-to-end runs of each are tests/server/test_mcp_http.py, test_mcp_acl.py and tests/ui).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from cpersona.acl import load_acl
from cpersona.http import asgi
from cpersona.server.client_auth import AclMiddleware
from cpersona.server.transport import BearerTokenMiddleware
from cpersona.ui.security import Guard, GuardMiddleware

TOKEN = "s" * 24


def inner() -> Starlette:
    return Starlette(routes=[Route("/", lambda r: PlainTextResponse("in"), methods=["GET", "POST"])])


def assert_refusal(response: Any, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"ok", "error", "error_code"} and body["ok"] is False
    assert body["error_code"] == code and body["error"].startswith(code)
    assert ("www-authenticate" in response.headers) is (status == 401)


def test_the_mcp_single_token_and_acl_refusals(tmp_path: Path) -> None:
    token_app = TestClient(BearerTokenMiddleware(inner(), TOKEN))
    assert_refusal(token_app.get("/"), 401, "unauthorized")
    assert_refusal(
        token_app.get("/", headers={"Authorization": "Bearer wrong-token-wrong"}), 401, "unauthorized"
    )
    assert token_app.get("/", headers={"Authorization": "bearer " + TOKEN}).text == "in"
    acl_file = tmp_path / "acl.toml"
    digest = hashlib.sha256(TOKEN.encode()).hexdigest()
    acl_file.write_text(f'[clients.ana]\ntoken_sha256 = "{digest}"\ngrants = {{ ana = "read" }}\n')
    acl_app = TestClient(AclMiddleware(inner(), load_acl(acl_file)))
    assert_refusal(acl_app.get("/"), 401, "unauthorized")
    assert acl_app.get("/", headers={"Authorization": "Bearer " + TOKEN}).text == "in"


def test_the_browser_view_refusals_have_the_same_shape() -> None:
    view = TestClient(
        GuardMiddleware(inner(), Guard("127.0.0.1", 8403, TOKEN)), base_url="http://127.0.0.1:8403"
    )
    assert_refusal(view.post("/"), 401, "unauthorized")
    assert_refusal(view.get("/", headers={"Host": "evil.example:8403"}), 403, "forbidden")
    assert_refusal(view.get("/", headers={"Origin": "http://evil.example"}), 403, "forbidden")
    assert_refusal(view.get("/", headers={"Sec-Fetch-Site": "cross-site"}), 403, "forbidden")
    # The view reads the bearer header with the same parser as the MCP endpoint (scheme case-insensitive).
    assert view.post("/", headers={"Authorization": "BEARER " + TOKEN}).text == "in"


def test_the_asgi_aliases_are_starlettes() -> None:
    import starlette.types

    for name in ("ASGIApp", "Message", "Receive", "Scope", "Send"):
        assert getattr(asgi, name) is getattr(starlette.types, name)
