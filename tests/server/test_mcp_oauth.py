"""OAuth 2.1 over streamable HTTP (docs/oauth.md): real keys, real signatures, a JWKS served on loopback by
this test, a real server process and a real MCP client.

A token reaches only the agents its scopes (and the ACL client it names) grant; every bad token is
refused with the right status and a ``WWW-Authenticate`` naming the protected-resource metadata.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp_helpers import http_server, mcp_session
from raw_wire import INITIALIZE
from test_mcp_acl import transport

from cpersona.acl import Level, add_client
from cpersona.server.oauth import client_for, metadata_url, scope_grants

pytestmark = pytest.mark.slow

ISSUER = "https://id.example.test"
RESOURCE = "https://memory.example.test/mcp"


@dataclass
class Jwks:
    """A JWKS endpoint on loopback whose key set the test swaps (rotation); counts its fetches."""

    keys: dict[str, Any] = field(default_factory=dict)  # kid -> private key
    published: list[str] = field(default_factory=list)  # the kids it serves
    fetches: int = 0
    url: str = ""

    def new_key(self, kid: str) -> None:
        self.keys[kid] = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def document(self) -> bytes:
        self.fetches += 1
        keys = []
        for kid in self.published:
            jwk = jwt.algorithms.RSAAlgorithm.to_jwk(self.keys[kid].public_key(), as_dict=True)
            keys.append({**jwk, "kid": kid, "alg": "RS256", "use": "sig"})
        return json.dumps({"keys": keys}).encode()

    def token(self, kid: str = "k1", **claims: Any) -> str:
        now = int(time.time())
        body = {"iss": ISSUER, "aud": RESOURCE, "sub": "user-1", "iat": now, "exp": now + 600, **claims}
        body = {k: v for k, v in body.items() if v is not None}
        return jwt.encode(body, self.keys[kid], algorithm="RS256", headers={"kid": kid})


@pytest.fixture(scope="module")
def jwks() -> Iterator[Jwks]:
    state = Jwks()
    state.new_key("k1")
    state.new_key("k2")
    state.published = ["k1"]

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            body = state.document()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/jwks.json"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    server.shutdown()


@dataclass
class OAuthServer:
    url: str
    acl_token: str


@pytest.fixture(scope="module")
def oauth_server(tmp_path_factory: pytest.TempPathFactory, jwks: Jwks) -> Iterator[OAuthServer]:
    tmp = tmp_path_factory.mktemp("oauth")
    acl = tmp / "acl.toml"
    acl_token = add_client(acl, "team-bot", {"agent-c": Level.WRITE})
    env = {
        "CPERSONA_OAUTH_ISSUER": ISSUER,
        "CPERSONA_OAUTH_JWKS_URL": jwks.url,
        "CPERSONA_OAUTH_RESOURCE": RESOURCE,
        "CPERSONA_OAUTH_LEEWAY_SECONDS": "60",
        "CPERSONA_OAUTH_JWKS_MIN_REFRESH_SECONDS": "0",
        "CPERSONA_ACL_FILE": str(acl),
    }
    with http_server(tmp, **env) as (url, _proc):
        admin = jwks.token(scope="cpersona:admin:*")
        with mcp_session(transport(url, admin)) as session:
            for agent in ("agent-a", "agent-b"):
                stored = session.call("store", {"agent_id": agent, "message": {"content": f"{agent} heron"}})
                assert stored["result"] == "stored", stored
        yield OAuthServer(url, acl_token)
    log = (tmp / "server.log").read_text(errors="replace")
    assert "Traceback" not in log, log[-3000:]


def post(url: str, token: str | None) -> httpx2.Response:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx2.post(url, content=json.dumps(INITIALIZE).encode(), headers=headers, timeout=30)


def hmac_token(claims: dict[str, Any], secret: bytes) -> str:
    """The algorithm-confusion attack: HS256 "signed" with the public key (PyJWT refuses to make one)."""

    def part(value: Any) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    signing_input = f"{part({'alg': 'HS256', 'typ': 'JWT', 'kid': 'k1'})}.{part(claims)}"
    signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{base64.urlsafe_b64encode(signature).rstrip(b'=').decode()}"


def challenge(response: httpx2.Response) -> str:
    return response.headers.get("www-authenticate", "")


def test_scopes_map_to_grants_and_the_subject_to_an_acl_client() -> None:
    claims = {"scope": "cpersona:read:a cpersona:write:a cpersona:admin:* other cpersona:bogus:x", "sub": "s"}
    assert scope_grants(claims) == {"a": Level.WRITE, "*": Level.ADMIN}
    assert scope_grants({"scp": ["cpersona:read:b"]}) == {"b": Level.READ}
    assert client_for({"sub": "nobody"}, None).grants == {}
    assert metadata_url(RESOURCE) == "https://memory.example.test/.well-known/oauth-protected-resource/mcp"


def test_the_metadata_names_the_authorization_server(oauth_server: OAuthServer) -> None:
    base = oauth_server.url.removesuffix("/mcp")
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        response = httpx2.get(base + path, timeout=30)
        assert response.status_code == 200, response.text
        document = response.json()
        assert document["resource"] == RESOURCE and document["authorization_servers"] == [ISSUER]
        assert "cpersona:read:*" in document["scopes_supported"]


def test_a_token_reaches_only_the_agents_its_scopes_grant(oauth_server: OAuthServer, jwks: Jwks) -> None:
    reader = jwks.token(scope="cpersona:read:agent-a")
    with mcp_session(transport(oauth_server.url, reader)) as session:
        found = session.call("recall", {"agent_id": "agent-a", "query": "heron"})
        assert [row["content"] for row in found["results"]] == ["agent-a heron"]
        refused = session.call("recall", {"agent_id": "agent-b", "query": "heron"})
        assert refused["ok"] is False and refused["error_code"] == "forbidden"
        write = session.call("store", {"agent_id": "agent-a", "message": {"content": "no"}})
        assert write["error_code"] == "forbidden"
        listed = session.call("list_memories", {})  # unscoped: narrowed to the granted agent
        assert {row["agent_id"] for row in listed["items"]} == {"agent-a"}


def test_the_client_id_names_an_acl_client_and_acl_tokens_keep_working(
    oauth_server: OAuthServer, jwks: Jwks
) -> None:
    bot = jwks.token(client_id="team-bot", scope="openid")
    with mcp_session(transport(oauth_server.url, bot)) as session:
        assert (
            session.call("store", {"agent_id": "agent-c", "message": {"content": "c"}})["result"] == "stored"
        )
        assert session.call("recall", {"agent_id": "agent-a"})["error_code"] == "forbidden"
    with mcp_session(transport(oauth_server.url, oauth_server.acl_token)) as session:
        assert session.call("list_memories", {"agent_id": "agent-c"})["total"] == 1


def test_bad_tokens_are_refused_with_the_metadata_url(oauth_server: OAuthServer, jwks: Jwks) -> None:
    where = f'resource_metadata="{metadata_url(RESOURCE)}"'
    bare = post(oauth_server.url, None)
    assert bare.status_code == 401 and where in challenge(bare) and "error=" not in challenge(bare)
    assert bare.json()["error_code"] == "unauthorized"
    now = int(time.time())
    public_pem = (
        jwks.keys["k1"]
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    bad = {
        "expired": jwks.token(exp=now - 3600, scope="cpersona:admin:*"),
        "not for this resource": jwks.token(aud="https://other.example.test/mcp", scope="cpersona:admin:*"),
        "not issued by": jwks.token(iss="https://evil.example.test", scope="cpersona:admin:*"),
        "no exp": jwks.token(exp=None, scope="cpersona:admin:*"),
        "alg none": jwt.encode({"iss": ISSUER, "aud": RESOURCE, "exp": now + 600}, None, algorithm="none"),
        "hmac with the public key": hmac_token(
            {"iss": ISSUER, "aud": RESOURCE, "exp": now + 600, "scope": "cpersona:admin:*"}, public_pem
        ),
        "unknown key": jwks.token(kid="k2", scope="cpersona:admin:*"),
        "tampered": jwks.token(scope="cpersona:read:agent-a")[:-6] + "AAAAAA",
        "garbage": "a.b.c",
        "unknown opaque token": "not-a-token-of-this-server-0123456789",
    }
    for case, token in bad.items():
        response = post(oauth_server.url, token)
        assert response.status_code == 401, (case, response.status_code, response.text)
        assert where in challenge(response) and 'error="invalid_token"' in challenge(response), case
    nothing = post(oauth_server.url, jwks.token(scope="openid profile"))
    assert nothing.status_code == 403 and 'error="insufficient_scope"' in challenge(nothing)
    # Clock skew: expired 10 s ago is within the 60 s leeway.
    assert post(oauth_server.url, jwks.token(exp=now - 10, scope="cpersona:read:*")).status_code == 200


def test_a_rotated_key_is_fetched_and_the_retired_one_refused(oauth_server: OAuthServer, jwks: Jwks) -> None:
    old = jwks.token(kid="k1", scope="cpersona:read:*")
    assert post(oauth_server.url, old).status_code == 200
    before = jwks.fetches
    jwks.published = ["k2"]  # the authorization server rotates its signing key
    try:
        new = jwks.token(kid="k2", scope="cpersona:read:*")
        assert post(oauth_server.url, new).status_code == 200
        assert jwks.fetches > before  # the unknown kid made the server fetch the key set again
        assert post(oauth_server.url, old).status_code == 401
        with mcp_session(transport(oauth_server.url, new)) as session:
            assert session.call("recall", {"agent_id": "agent-b", "query": "heron"})["count"] == 1
    finally:
        jwks.published = ["k1"]
