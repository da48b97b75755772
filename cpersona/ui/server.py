"""Starting the browser view: refuse unsafe binds, open ``Memory``, serve with uvicorn."""

from __future__ import annotations

import logging
import sys

import uvicorn

from cpersona.acl import AccessList, AclError, load_acl
from cpersona.config import Settings
from cpersona.http.addresses import is_loopback
from cpersona.http.listen import EXIT_BIND, BindFailed, bind_listeners
from cpersona.memory import Memory
from cpersona.ui.app import build_app
from cpersona.ui.security import Guard, ui_refusal

log = logging.getLogger("cpersona.ui")


def run_ui(settings: Settings, *, read_only: bool = False) -> int:
    """Serve the view on ``settings.ui_host:ui_port`` until interrupted; returns an exit code.

    2: refused by the configuration; 4 (``EXIT_BIND``): the port cannot be bound.

    With ``CPERSONA_ACL_FILE`` the file is read now (a malformed file refuses the start, naming
    the line) and every session logs in as one of its clients, on every bind.
    """
    acl: AccessList | None = None
    if settings.acl_file is not None:
        try:
            acl = load_acl(settings.acl_file)
        except AclError as exc:
            log.error("refusing to serve the browser view: %s", exc)
            return 2
    refusal = ui_refusal(settings.ui_host, settings.auth_token, acl=acl is not None)
    if refusal is not None:
        log.error("%s", refusal)
        return 2
    if acl is not None:
        if settings.auth_token is not None:
            log.warning(
                "CPERSONA_AUTH_TOKEN is ignored by the browser view: CPERSONA_ACL_FILE is set, so only "
                "the ACL's client tokens log in"
            )
        log.warning(
            "browser view access by ACL file %s: %d client(s); each sees only what its grants allow",
            acl.path,
            len(acl.clients),
        )
    if not is_loopback(settings.ui_host):
        log.warning(
            "the browser view is reachable beyond this machine on %s; it needs a login", settings.ui_host
        )
    guard = Guard(
        settings.ui_host, settings.ui_port, None if acl is not None else settings.auth_token, acl=acl
    )
    try:  # before the database is opened and the URL announced: a taken port shows no URL
        listeners = bind_listeners(settings.ui_host, settings.ui_port, setting="CPERSONA_UI_PORT")
    except BindFailed as exc:
        log.error("%s", exc)
        return EXIT_BIND
    with Memory(settings) as memory:
        app = build_app(memory, guard, read_only=read_only)
        host = f"[{settings.ui_host}]" if ":" in settings.ui_host else settings.ui_host
        # Said to the person, not logged: no level or logger name in front of the address.
        print(
            f"cpersona ui: open http://{host}:{settings.ui_port}/ in a browser (Ctrl-C stops it)"
            f"{'; read-only' if read_only else ''}",
            file=sys.stderr,
            flush=True,
        )
        config = uvicorn.Config(
            app,
            host=settings.ui_host,
            port=settings.ui_port,
            log_level="warning",
            access_log=False,
            lifespan="off",
        )
        uvicorn.Server(config).run(sockets=listeners)
    return 0
