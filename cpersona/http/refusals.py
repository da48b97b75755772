"""The one shape of an HTTP refusal, for the MCP endpoint and the browser view alike.

A 401 or 403 answered before any tool or page runs carries the same JSON body as a tool's
failure (``{"ok": false, "error", "error_code"}``, docs/tools.md "Errors"), so a client reads one
format whichever front door refused it. A 401 also names the scheme it wants
(``WWW-Authenticate: Bearer``, RFC 6750).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from cpersona.http.asgi import Send, send_response

#: error_code of each refusal status.
REFUSAL_CODES = {401: "unauthorized", 403: "forbidden"}
#: The challenge a 401 carries.
BEARER_CHALLENGE = (b"www-authenticate", b'Bearer realm="cpersona"')


def refusal_body(message: str, code: str) -> bytes:
    """The JSON bytes of a refusal."""
    return json.dumps({"ok": False, "error": message, "error_code": code}).encode()


async def send_refusal(
    send: Send,
    status: int,
    message: str,
    extra_headers: Iterable[tuple[bytes, bytes]] = (),
    challenge: bytes | None = None,
) -> None:
    """Answer ``status`` (401 or 403) with the uniform refusal body; a 401 adds the Bearer challenge
    (``challenge`` when given: an OAuth resource names its metadata and the error, RFC 6750 / 9728)."""
    headers = [(b"content-type", b"application/json"), *extra_headers]
    if challenge is not None:
        headers.append((b"www-authenticate", challenge))
    elif status == 401:
        headers.append(BEARER_CHALLENGE)
    await send_response(send, status, refusal_body(message, REFUSAL_CODES[status]), headers)
