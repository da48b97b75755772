"""The server entry a host config gets: this installation's executable, ``serve``, and the env in force.

The host starts the server itself, with its own (usually nearly empty) environment and an
undefined working directory, so the entry carries everything the server needs as absolute
values: the database, the embedding model, the models folder when it is not the default, and
every other CPERSONA_* variable set here, except those that only the HTTP transport or
``cpersona ui`` read (a host talks stdio; CPERSONA_TRANSPORT=streamable-http would even stop
it from working).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from cpersona.config import Settings, settings_table

#: CPERSONA_* variables a stdio server never reads, and why they are left out of the entry.
NOT_FOR_STDIO = {
    "CPERSONA_TRANSPORT": "the host talks to the server over stdio",
    "CPERSONA_HTTP_HOST": "HTTP transport only",
    "CPERSONA_HTTP_PORT": "HTTP transport only",
    "CPERSONA_AUTH_TOKEN": "HTTP transport only",
    "CPERSONA_ALLOW_UNAUTHENTICATED_HTTP": "HTTP transport only",
    "CPERSONA_HTTP_ALLOWED_HOSTS": "HTTP transport only",
    "CPERSONA_HTTP_ALLOWED_ORIGINS": "HTTP transport only",
    "CPERSONA_ACL_FILE": "ACLs apply over HTTP, not stdio",
    "CPERSONA_OAUTH_ISSUER": "OAuth applies over HTTP, not stdio",
    "CPERSONA_OAUTH_JWKS_URL": "OAuth applies over HTTP, not stdio",
    "CPERSONA_OAUTH_RESOURCE": "OAuth applies over HTTP, not stdio",
    "CPERSONA_OAUTH_LEEWAY_SECONDS": "OAuth applies over HTTP, not stdio",
    "CPERSONA_OAUTH_JWKS_MIN_REFRESH_SECONDS": "OAuth applies over HTTP, not stdio",
    "CPERSONA_UI_HOST": "`cpersona ui` only",
    "CPERSONA_UI_PORT": "`cpersona ui` only",
}
#: Variables holding a path (from the settings table): written absolute, because the host's
#: working directory is unknown.
PATH_VARIABLES = tuple(row.var.name for row in settings_table() if row.kind is Path)


@dataclass(frozen=True)
class ServerEntry:
    """One ``mcpServers`` entry plus what the person should know about it."""

    command: str
    args: list[str]
    env: dict[str, str]
    left_out: dict[str, str] = field(default_factory=dict)  # variable -> why it is not in the entry
    secrets: list[str] = field(default_factory=list)  # variables whose value holds a credential

    def as_json(self) -> dict[str, Any]:
        """The entry as the hosts' JSON has it: ``{"command", "args", "env"}``."""
        return {"command": self.command, "args": list(self.args), "env": dict(self.env)}


def installation_command() -> tuple[str, list[str]]:
    """The absolute command (and its arguments) that runs this installation's ``cpersona serve``.

    The console script this process was started as, else the one beside this interpreter (a
    virtual environment's ``bin``), else this interpreter with ``-m cpersona``; never one found
    on PATH, which may belong to another installation.
    """
    script = "cpersona.exe" if os.name == "nt" else "cpersona"
    started_as = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if started_as is not None and started_as.name in (script, "cpersona") and started_as.is_file():
        return str(started_as.absolute()), ["serve"]
    beside = Path(sys.executable).parent / script
    if beside.is_file():
        return str(beside), ["serve"]
    return sys.executable, ["-m", "cpersona", "serve"]


def _absolute(value: str) -> str:
    return str(Path(value).expanduser().absolute())


#: Words (of a variable name, a URL query parameter or a libpq ``key=value`` key, split at ``_``, ``-``,
#: ``.``) that mark a credential: whole words, or words ending so (``sslpassword``, ``api_key``).
_SECRET_WORDS = frozenset({"pass", "pwd", "auth", "sig", "signature", "credential", "credentials", "apikey"})
_SECRET_ENDINGS = ("password", "passwd", "token", "secret", "key")
#: A libpq connection string's keys (``host=db password=…``) outside a URL.
_DSN_KEY = re.compile(r"(?:^|\s)([A-Za-z_]+)\s*=", re.ASCII)


def _secret_name(name: str) -> bool:
    words = re.split(r"[^a-z0-9]+", name.lower())
    return any(w in _SECRET_WORDS or (w and w.endswith(_SECRET_ENDINGS)) for w in words)


def holds_credential(name: str, value: str) -> bool:
    """Whether a ``CPERSONA_*`` variable's value carries a credential: its name says so (…TOKEN,
    …PASSWORD, …KEY), a URL in it has user-info (``user:pw@``, or a bare token as user) or a
    secret-named query parameter (``?password=``, ``api_key=``, ``sslpassword=``), or a libpq
    ``key=value`` string has a secret-named key."""
    if _secret_name(name.removeprefix("CPERSONA_")):
        return True
    try:
        parts = urlsplit(value)
        if parts.scheme and parts.netloc and (parts.username or parts.password):
            return True
        query = parse_qsl(parts.query, keep_blank_values=True) + parse_qsl(
            parts.fragment, keep_blank_values=True
        )
    except ValueError:  # not a URL at all: judge it as text below
        query = []
    if any(_secret_name(key) and item for key, item in query):
        return True
    return any(_secret_name(key) for key in _DSN_KEY.findall(value))


def server_env(
    settings: Settings, environ: Mapping[str, str] | None = None
) -> tuple[dict[str, str], dict[str, str]]:
    """(env for the entry, left-out variables with the reason) from ``settings`` and ``environ``."""
    source = os.environ if environ is None else environ
    env = {k: v.strip() for k, v in source.items() if k.startswith("CPERSONA_") and v.strip()}
    left_out = {k: NOT_FOR_STDIO[k] for k in sorted(env) if k in NOT_FOR_STDIO}
    for name in left_out:
        del env[name]
    for name in PATH_VARIABLES:
        if name in env:
            env[name] = _absolute(env[name])
    defaults = Settings()
    if settings.db_url is None:
        env["CPERSONA_DB_PATH"] = _absolute(str(settings.db_path))
    # The effective values under their canonical names (the aliases EMBEDDING_MODE /
    # EMBEDDING_HTTP_URL may have set them), so the entry does not depend on the aliases.
    if settings.embedding_mode != defaults.embedding_mode:
        env["CPERSONA_EMBEDDING_MODE"] = settings.embedding_mode
    if settings.embedding_mode == "onnx":
        env["CPERSONA_EMBEDDING_MODEL"] = settings.embedding_model
        if Path(settings.models_dir).expanduser() != defaults.models_dir:
            env["CPERSONA_MODELS_DIR"] = _absolute(str(settings.models_dir))
    if settings.embedding_mode == "http" and settings.embedding_url:
        env["CPERSONA_EMBEDDING_URL"] = settings.embedding_url
    return dict(sorted(env.items())), left_out


def server_entry(settings: Settings, environ: Mapping[str, str] | None = None) -> ServerEntry:
    """The entry for this installation and the env in force."""
    command, args = installation_command()
    env, left_out = server_env(settings, environ)
    secrets = [k for k, v in env.items() if holds_credential(k, v)]
    return ServerEntry(command, args, env, left_out, secrets)
