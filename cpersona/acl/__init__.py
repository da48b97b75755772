"""The ACL (``CPERSONA_ACL_FILE``, docs/architecture.md#access-control-http-with-an-acl-file): named HTTP
clients, token hashes, per-agent grants. Plain Python (no MCP, no HTTP), so the server and the browser
view both use it: ``policy`` (clients, levels, lookup by token), ``file`` (our TOML file: reading and the
``add-client`` edit), ``original`` (the original CPersona's JSON file, read as ours)."""

from cpersona.acl.file import add_client, format_client, load_acl, merge_grants, parse_acl
from cpersona.acl.policy import (
    CLIENT_NAME,
    LEVELS,
    TOKEN_BYTES,
    WILDCARD,
    AccessList,
    AclError,
    Client,
    Level,
    hash_token,
    new_token,
)

__all__ = [
    "CLIENT_NAME",
    "LEVELS",
    "TOKEN_BYTES",
    "WILDCARD",
    "AccessList",
    "AclError",
    "Client",
    "Level",
    "add_client",
    "format_client",
    "hash_token",
    "load_acl",
    "merge_grants",
    "new_token",
    "parse_acl",
]
