"""``cpersona ui``: the local browser view of the store (cpersona/ui)."""

from __future__ import annotations

import argparse
from typing import Any

from cpersona.config import Settings


def cmd_ui(args: argparse.Namespace, settings: Settings) -> int:
    """Serve the browser view until Ctrl-C; exit 2 when the bind is refused (beyond loopback, no token)."""
    overrides: dict[str, Any] = {}
    if args.host:
        overrides["ui_host"] = args.host
    if args.port is not None:
        overrides["ui_port"] = args.port
    from cpersona.ui.server import run_ui

    return run_ui(settings.with_overrides(**overrides) if overrides else settings, read_only=args.read_only)


def add_ui_command(sub: Any) -> None:
    """Register ``ui`` on the CLI's subparsers."""
    ui = sub.add_parser("ui", help="browse, search and fix the store in a local web page (127.0.0.1:8403)")
    ui.add_argument(
        "--host",
        help="bind address (default: CPERSONA_UI_HOST or 127.0.0.1; beyond loopback "
        "needs CPERSONA_AUTH_TOKEN)",
    )
    ui.add_argument("--port", type=int, help="port (default: CPERSONA_UI_PORT or 8403)")
    ui.add_argument("--read-only", action="store_true", help="hide and refuse every change")
    ui.set_defaults(func=cmd_ui)
