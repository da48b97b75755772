"""OAuth 2.1 access tokens (JWT) as plain Python: verify one, and turn its claims into ACL grants.

The server is a resource server (MCP authorization; docs/oauth.md): an authorization server the
operator runs issues JWT access tokens; this module checks each one against that server's keys
(its JWKS, fetched and cached by PyJWT's ``PyJWKClient``, fetched again when a token names a key
it has not seen: key rotation), and checks the issuer, the audience (this resource, RFC 8707),
the expiry and not-before with a leeway for clock skew, and the algorithm (asymmetric ones only:
``alg: none`` and HMAC are refused, so a public key can never be used as a shared secret).

What the token may do is an ``acl.Client``, the same the ACL file yields, so authorisation
(``server/access.py``) does not know how a client authenticated:

- each scope ``cpersona:<read|write|admin>:<agent>`` grants that level on that agent (``*``: every
  agent);
- the token's client (``client_id``, RFC 9068; else ``azp``; else ``sub``) names a client of the ACL
  file, when one is configured: that client's grants are added.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import jwt

from cpersona.acl import LEVELS, WILDCARD, AccessList, Client, Level

#: Asymmetric signatures only: the keys come from a public JWKS.
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
SCOPE_PREFIX = "cpersona"
#: What the protected-resource metadata advertises (plus the per-agent forms of the same levels).
SCOPES_SUPPORTED = tuple(f"{SCOPE_PREFIX}:{level}:{WILDCARD}" for level in LEVELS)


class TokenRefused(Exception):
    """A token that is not accepted; ``status`` 401 (``invalid_token``) or 403 (``insufficient_scope``)."""

    def __init__(self, description: str, *, status: int = 401) -> None:
        super().__init__(description)
        self.description = description
        self.status = status

    @property
    def error(self) -> str:
        """The RFC 6750 error code of the refusal."""
        return "invalid_token" if self.status == 401 else "insufficient_scope"


@dataclass(frozen=True)
class OAuthConfig:
    """Where the keys come from and what a token must say."""

    issuer: str
    jwks_url: str
    resource: str  # this server's canonical URI: the audience every token must name
    leeway_seconds: int = 60
    jwks_min_refresh_seconds: float = 30.0  # an unknown key id refetches the JWKS at most this often


def looks_like_jwt(token: str) -> bool:
    """A compact JWS has three dot-separated parts; ACL and shared tokens have none."""
    return token.count(".") == 2


def loopback_url(url: str) -> bool:
    """True when ``url`` points at this machine (plain http is tolerated there: tests, local IdPs)."""
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def metadata_url(resource: str) -> str:
    """The RFC 9728 protected-resource metadata URL of ``resource`` (well-known segment before its path)."""
    parts = urlsplit(resource)
    path = parts.path.rstrip("/")
    return f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{path}"


def resource_metadata(config: OAuthConfig) -> dict[str, Any]:
    """The RFC 9728 document: which authorization server issues tokens for this resource, and how."""
    return {
        "resource": config.resource,
        "authorization_servers": [config.issuer],
        "scopes_supported": list(SCOPES_SUPPORTED),
        "bearer_methods_supported": ["header"],
        "resource_name": "CPersona",
    }


class JwtVerifier:
    """Verifies access tokens against one authorization server and maps them to a ``Client``.

    Blocking (the JWKS fetch is a plain HTTPS request): call it from a worker thread.
    """

    def __init__(self, config: OAuthConfig, acl: AccessList | None = None) -> None:
        self.config = config
        self.acl = acl
        self._keys = jwt.PyJWKClient(
            config.jwks_url,
            cache_jwk_set=True,
            lifespan=300,
            timeout=10,
            cooldown_duration=config.jwks_min_refresh_seconds,
        )

    def verify(self, token: str) -> Client:
        """The client ``token`` acts as; raises TokenRefused (with the reason) when it is not accepted."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise TokenRefused(f"not a JWT access token: {exc}") from None
        if header.get("alg") not in ALGORITHMS:
            raise TokenRefused(f"signature algorithm {str(header.get('alg'))[:20]!r} is not accepted")
        try:
            key = self._keys.get_signing_key_from_jwt(token)
        except jwt.PyJWKClientConnectionError as exc:
            raise TokenRefused(f"the authorization server's keys could not be fetched: {exc}") from None
        except jwt.PyJWTError as exc:
            raise TokenRefused(f"no key of the authorization server signed this token: {exc}") from None
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=list(ALGORITHMS),
                audience=self.config.resource,
                issuer=self.config.issuer,
                leeway=self.config.leeway_seconds,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.ExpiredSignatureError:
            raise TokenRefused("the token has expired") from None
        except jwt.InvalidAudienceError:
            raise TokenRefused(f"the token is not for this resource ({self.config.resource})") from None
        except jwt.InvalidIssuerError:
            raise TokenRefused("the token was not issued by the configured authorization server") from None
        except jwt.PyJWTError as exc:
            raise TokenRefused(f"the token is not valid: {exc}") from None
        client = client_for(claims, self.acl)
        if not client.grants:
            raise TokenRefused(
                f"the token grants nothing here: it needs a scope {SCOPE_PREFIX}:<read|write|admin>:<agent>"
                " or a client named in the ACL file",
                status=403,
            )
        return client


def token_subject(claims: Mapping[str, Any]) -> str:
    """Who the token acts for: ``client_id`` (RFC 9068), else ``azp``, else ``sub``."""
    for claim in ("client_id", "azp", "sub"):
        value = claims.get(claim)
        if isinstance(value, str) and value:
            return value
    return ""


def scope_grants(claims: Mapping[str, Any]) -> dict[str, Level]:
    """The grants the token's scopes carry (``scope``: space-separated; ``scp``: a list)."""
    raw = claims.get("scope", claims.get("scp", ""))
    words: list[str] = []
    if isinstance(raw, str):
        words = raw.split()
    elif isinstance(raw, list):  # some servers (Okta) send scp as a list of scopes
        words = [word for word in raw if isinstance(word, str)]
    grants: dict[str, Level] = {}
    for word in words:
        prefix, _, rest = word.partition(":")
        level_name, _, agent = rest.partition(":")
        level = LEVELS.get(level_name)
        if prefix == SCOPE_PREFIX and level is not None and agent:
            grants[agent] = max(level, grants.get(agent, level))
    return grants


def client_for(claims: Mapping[str, Any], acl: AccessList | None) -> Client:
    """The ``Client`` of verified ``claims``: the scopes' grants plus the named ACL client's."""
    subject = token_subject(claims)
    grants = scope_grants(claims)
    named = next((c for c in acl.clients if c.name == subject), None) if acl is not None and subject else None
    if named is not None:
        for agent, level in named.grants.items():
            grants[agent] = max(level, grants.get(agent, level))
    return Client(name=f"oauth:{subject[:64] or '?'}", token_sha256="", grants=grants)
