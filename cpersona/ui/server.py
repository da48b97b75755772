"""Starting the browser view: refuse unsafe binds, open ``Memory``, serve with uvicorn."""

from __future__ import annotations

import logging

import uvicorn

from cpersona.config import Settings
from cpersona.memory import Memory
from cpersona.ui.app import build_app
from cpersona.ui.security import Guard, is_loopback, ui_refusal

log = logging.getLogger("cpersona.ui")


def run_ui(settings: Settings, *, read_only: bool = False) -> int:
    """Serve the view on ``settings.ui_host:ui_port`` until interrupted; returns an exit code (2: refused)."""
    refusal = ui_refusal(settings.ui_host, settings.auth_token)
    if refusal is not None:
        log.error("%s", refusal)
        return 2
    if not is_loopback(settings.ui_host):
        log.warning("the browser view is reachable beyond this machine on %s; it needs the token", settings.ui_host)
    guard = Guard(settings.ui_host, settings.ui_port, settings.auth_token)
    with Memory(settings) as memory:
        app = build_app(memory, guard, read_only=read_only)
        host = f"[{settings.ui_host}]" if ":" in settings.ui_host else settings.ui_host
        log.warning("cpersona ui: open http://%s:%d/ in a browser (Ctrl-C stops it)%s", host, settings.ui_port,
                    "; read-only" if read_only else "")
        config = uvicorn.Config(app, host=settings.ui_host, port=settings.ui_port, log_level="warning",
                                access_log=False, lifespan="off")
        uvicorn.Server(config).run()
    return 0
