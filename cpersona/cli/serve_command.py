"""``cpersona serve``: the MCP server over stdio or streamable HTTP, and how it stops.

One Ctrl-C (SIGINT) or SIGTERM stops it: over stdio the event loop's runner cancels the session
(a tool call in flight finishes on its worker thread, or a long one stops at its next batch
boundary, committed), then the Memory is closed; over HTTP uvicorn shuts down the same way. SIGTERM
is turned into that same Ctrl-C path, so a supervisor's stop also closes the database cleanly.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from cpersona import __version__
from cpersona.config import Settings

log = logging.getLogger("cpersona.cli")

#: Seconds a stopping server waits for a database still being opened (Ctrl-C in the first moments).
OPENING_WAIT_ON_STOP = 1.0
#: Exit status of a process stopped by a signal, as shells report it (128 + the signal number).
SIGNAL_EXIT_BASE = 128


def terminal_hint(program: str) -> str:
    """The paragraph `cpersona serve` (stdio) says on stderr when started from a terminal, not by an MCP host."""
    return (
        "cpersona: this is an MCP server: it speaks JSON-RPC on stdin/stdout and is now waiting for an MCP "
        "host (Claude Desktop, Claude Code, Cursor, ...) to talk to it, so typing here does nothing useful. "
        "Register it with your host instead: `cpersona register claude-desktop` (or claude-code, cursor, "
        "mcp-json; `--print` shows the entry) writes this installation's path and the CPERSONA_* settings in "
        f"force into the host's config, or `claude mcp add cpersona -- {program} serve` (README: "
        '"Register with an MCP host"). To see what is stored, run `cpersona ui`; to check the set-up, '
        "`cpersona doctor`. Stop this server with Ctrl-C (or Ctrl-D to close its input)."
    )


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    """Run the MCP server (stdio by default, or streamable HTTP)."""
    overrides: dict[str, Any] = {}
    if args.transport:
        overrides["transport"] = args.transport
    if args.host:
        overrides["http_host"] = args.host
    if args.port is not None:
        overrides["http_port"] = args.port
    if overrides:
        settings = settings.with_overrides(**overrides)
    received: list[int] = []  # the signals that stop this server, in the order they came
    with _ctrl_c_stops_http(received, settings.transport == "streamable-http") as attach:
        return _serve(settings, received, attach)


def _serve(settings: Settings, received: list[int], attach: Callable[[Any], None]) -> int:
    """``cmd_serve`` once the settings are final: ``received`` collects the stopping signals, and
    ``attach`` hands the HTTP server to ``_ctrl_c_stops_http``."""
    from cpersona.server.transport import EXIT_REFUSED, http_refusal, run_http, run_stdio

    listeners = None
    if settings.transport == "streamable-http":
        refusal = http_refusal(settings)
        if refusal is not None:
            print(f"cpersona: {refusal}", file=sys.stderr)
            return EXIT_REFUSED
        from cpersona.http.listen import EXIT_BIND, BindFailed, bind_listeners

        try:  # before anything is opened or announced: a taken port must not show a URL first
            listeners = bind_listeners(settings.http_host, settings.http_port, setting="CPERSONA_HTTP_PORT")
        except BindFailed as exc:
            print(f"cpersona: {exc}", file=sys.stderr)
            return EXIT_BIND

    from cpersona.server.app import PendingMemory

    def open_memory() -> Any:
        # Runs beside the handshake: numpy, the database and the model runtime load here.
        from cpersona.memory import Memory
        from cpersona.server.update_check import UpdateChecker

        memory = Memory(settings, start_background=True, prepare_model=_model_preparation(settings))
        UpdateChecker(settings).start_background()  # daemon thread; start-up never waits for the index
        return memory

    def unusable(exc: BaseException) -> None:
        # Without its database the server cannot do anything: exit 1 with one line, as
        # before the handshake was decoupled from opening (stdout stays clean for MCP).
        print(f"cpersona: {exc}", file=sys.stderr, flush=True)
        os._exit(1)

    pending = PendingMemory(open_memory, on_error=unusable)
    model = settings.embedding_model if settings.embedding_mode == "onnx" else settings.embedding_url or ""
    log.info(
        "cpersona %s serving MCP over %s; database %s; embeddings %s %s (loading in the background)",
        __version__,
        settings.transport,
        "PostgreSQL (CPERSONA_DB_URL)" if settings.db_url else settings.db_path,
        settings.embedding_mode,
        model,
    )
    from cpersona.hooks.serving import start_endpoint

    stopped_by: int | None = None
    hooks = None
    with _sigterm_as_ctrl_c(received):
        try:
            pending.start()
            # Host hooks (cpersona register --hooks) ask this warm process instead of loading a model per prompt.
            hooks = start_endpoint(settings, pending.get)
            if settings.transport == "streamable-http":
                code = run_http(pending, settings, listeners, on_server=attach)
                if received:  # stopped by a signal (recorded, not raised): the Ctrl-C path below
                    raise KeyboardInterrupt
                return code
            if sys.stdin.isatty():  # a person started it; an MCP host always connects a pipe
                print(terminal_hint(os.path.abspath(sys.argv[0])), file=sys.stderr, flush=True)
            run_stdio(pending, settings)
            return 0
        except KeyboardInterrupt:
            stopped_by = received[0] if received else signal.SIGINT
            return SIGNAL_EXIT_BASE + stopped_by
        finally:
            if hooks is not None:
                hooks.close()
            pending.close(timeout=None if stopped_by is None else OPENING_WAIT_ON_STOP)
            if stopped_by is not None:
                print(f"cpersona: stopped ({signal.Signals(stopped_by).name})", file=sys.stderr, flush=True)


def _model_preparation(settings: Settings) -> Callable[[], str | None] | None:
    """The automatic fetch of a missing model, run by Memory's loader thread before its first load.

    The download can take minutes (about 1 GB for jina-v5-nano) and an MCP host
    times out far sooner, so it never runs before the handshake: the loader
    thread runs it, recall says "loading" (keyword-only) meanwhile, and when the
    fetch fails (offline) the MODEL_MISSING fault carries its error beside the
    fetch command. Progress goes to stderr only; stdout belongs to MCP.
    """
    if settings.embedding_mode != "onnx" or not settings.auto_fetch_model:
        return None
    from cpersona.embed.install.fetch import ensure_default_model

    def prepare() -> str | None:
        problem = ensure_default_model(settings, stream=sys.stderr)
        if problem:
            from cpersona.embed.model_hint import model_hint

            steps = model_hint(settings.embedding_model, settings.models_dir).steps
            print(
                f"cpersona: {problem}; serving with keyword search only until a model is installed. "
                "What to do:" + "".join(f"\n  - {step}" for step in steps),
                file=sys.stderr,
                flush=True,
            )
        return problem

    return prepare


@contextmanager
def _ctrl_c_stops_http(received: list[int], http: bool) -> Iterator[Callable[[Any], None]]:
    """For an HTTP server (``http``), from the settings on: Ctrl-C is recorded in ``received`` and asks
    uvicorn to stop; yields the callback that hands run_http's uvicorn server over.

    Python's own Ctrl-C raises KeyboardInterrupt wherever the main thread is. Before uvicorn takes
    SIGINT over, that is inside imports and start-up code, where it can be swallowed (an import lock's
    callback reports it as "Exception ignored" and the server went on serving) or break the logging
    lock that the exit needs. Recorded here and passed to ``should_exit``, the stop takes uvicorn's
    orderly path however early it comes. Over stdio, asyncio's runner handles Ctrl-C itself (it
    cancels the session), so nothing is installed. Installed by the main thread only.
    """
    servers: list[Any] = []

    def on_int(signum: int, frame: Any) -> None:
        received.append(signum)
        for server in servers:
            server.should_exit = True

    def attach(server: Any) -> None:
        servers.append(server)
        if received:  # Ctrl-C came before the server existed
            server.should_exit = True

    if not http:
        yield attach
        return
    try:
        previous = signal.signal(signal.SIGINT, on_int)
    except ValueError:  # not the main thread (an in-process caller): signals are not ours to handle
        yield attach
        return
    try:
        yield attach
    finally:
        signal.signal(signal.SIGINT, previous)


@contextmanager
def _sigterm_as_ctrl_c(received: list[int]) -> Iterator[None]:
    """While serving, SIGTERM takes Ctrl-C's graceful path; each signal received goes into ``received``.

    Python's default for SIGTERM ends the process on the spot: no session teardown, no
    ``Memory.close``. Re-raised as SIGINT, it reaches asyncio's runner (stdio: cancel the session)
    or, after uvicorn re-raises it on its way out, the KeyboardInterrupt handler below.

    A parent may have left SIGINT ignored (a script's background job, ``nohup … &``). Python then
    installs no KeyboardInterrupt for it, so on stdio neither Ctrl-C nor the re-raised SIGTERM did
    anything, while uvicorn (HTTP) stops on SIGINT regardless. While serving, SIGINT is Python's
    KeyboardInterrupt on both transports, as for any server started from a shell.
    """

    def on_term(signum: int, frame: Any) -> None:
        received.append(signum)
        signal.raise_signal(signal.SIGINT)

    try:
        previous = signal.signal(signal.SIGTERM, on_term)
    except ValueError:  # not the main thread (an in-process caller): signals are not ours to handle
        yield
        return
    ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
