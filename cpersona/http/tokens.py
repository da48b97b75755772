"""Bearer tokens: reading ``Authorization: Bearer <token>``, comparing in constant time, the minimum length."""

from __future__ import annotations

import hmac

from cpersona.core.limits import MIN_TOKEN_CHARS
from cpersona.http.asgi import Scope


def bearer_token(scope: Scope) -> str | None:
    """The token of the first ``Authorization`` header when its scheme is ``Bearer``, else None.

    The scheme is case-insensitive (RFC 9110 §11.1). The value is read as UTF-8 with the bytes
    that are not UTF-8 kept as escapes, so ``token_bytes`` gives back exactly what was sent.
    """
    for key, value in scope.get("headers") or ():
        if key.lower() == b"authorization":
            scheme, _, token = bytes(value).strip().partition(b" ")
            token = token.strip()
            if scheme.lower() != b"bearer" or not token:
                return None
            return token.decode("utf-8", "surrogateescape")
    return None


def token_bytes(token: str) -> bytes:
    """The bytes a token stands for (the inverse of ``bearer_token``'s reading; any str is accepted)."""
    try:
        return token.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no header reading produces: still compare, never raise
        return token.encode("utf-8", "surrogatepass")


def tokens_match(supplied: str | None, expected: str) -> bool:
    """Constant-time comparison, so the time taken does not reveal how much of a guess was right."""
    return hmac.compare_digest(token_bytes(supplied or ""), token_bytes(expected)) and supplied is not None


def weak_token(token: str | None) -> str | None:
    """Why ``token`` (CPERSONA_AUTH_TOKEN) is too short to guard anything, or None (also for no token)."""
    if token is None or len(token) >= MIN_TOKEN_CHARS:
        return None
    return (
        f"CPERSONA_AUTH_TOKEN is {len(token)} characters; at least {MIN_TOKEN_CHARS} are required "
        '(generate one with `openssl rand -hex 24` or `python -c "import secrets; print(secrets.token_hex(24))"`)'
    )
